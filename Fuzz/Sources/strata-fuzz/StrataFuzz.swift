import Strata
import StrataStorage
import StrataTesting
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One decoder, chosen by name on the command line.
enum Target {
    case storage(_FuzzTarget)
    case object(_ObjectFuzzTarget)

    init?(_ name: String) {
        if let t = _FuzzTarget(rawValue: name) { self = .storage(t) } else if let t = _ObjectFuzzTarget(rawValue: name) { self = .object(t) } else { return nil }
    }

    static var names: [String] { _FuzzTarget.allCases.map(\.rawValue) + _ObjectFuzzTarget.allCases.map(\.rawValue) }

    /// False when an invariant broke.
    func run(_ data: UnsafeRawBufferPointer) -> Bool {
        switch self {
        case let .storage(t): t.run(data); return true
        case let .object(t): return t.run(data)
        }
    }
}

nonisolated(unsafe) var selected: Target?

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let target = selected else { return 0 }
    if !target.run(UnsafeRawBufferPointer(start: data, count: size)) { abort() }
    return 0
}

#if FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<Int32>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32
#endif

@main
struct StrataFuzz {
    static func main() {
        var args = CommandLine.arguments
        let target: Target
        if args.count >= 2, let named = Target(args[1]) {
            target = named
            // libFuzzer re-runs itself (-merge, -jobs) with the options only: the children find
            // the target here.
            setenv("STRATA_FUZZ_TARGET", args[1], 1)
            args.remove(at: 1)
        } else if let env = getenv("STRATA_FUZZ_TARGET"), let named = Target(String(cString: env)) {
            target = named
        } else {
            print("usage: strata-fuzz TARGET [libFuzzer options] [CORPUS DIR…]   targets: \(Target.names.joined(separator: ", "))")
            exit(2)
        }
        selected = target
        #if FUZZING
        var argc = Int32(args.count)
        var cStrings: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        cStrings.withUnsafeMutableBufferPointer { buffer in
            var argv = buffer.baseAddress
            exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput))
        }
        #else
        // Without the fuzzer: replay the files given (a crash reproducer, a corpus).
        for path in args.dropFirst() {
            guard let f = fopen(path, "rb") else { continue }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let n = fread(&chunk, 1, chunk.count, f)
                if n <= 0 { break }
                bytes += chunk[0..<n]
            }
            fclose(f)
            let ok = bytes.withUnsafeBytes { target.run($0) }
            print("\(path): \(ok ? "ok" : "INVARIANT BROKEN")")
        }
        #endif
    }
}
