import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin that hosts Strata's macros.
@main
struct StrataMacrosPlugin: CompilerPlugin {
    let providingMacros: [Macro.Type] = [
        EntityMacro.self,
        PropertyMarkerMacro.self,
        DescriptorMacro.self,
    ]
}

#if FUZZING
/// The fuzz build (Fuzz/, scripts/fuzz.sh) passes `-sanitize=fuzzer` to every target, and so
/// links libFuzzer into this plugin too, which then needs the entry point. It is never called:
/// the plugin keeps its own `main`.
@_cdecl("LLVMFuzzerTestOneInput")
public func pluginFuzzEntryPoint(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 { 0 }
#endif
