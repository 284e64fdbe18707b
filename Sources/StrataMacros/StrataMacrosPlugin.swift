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
