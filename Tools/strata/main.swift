#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "demo":
        try DemoCommand.run(directory: arguments.count > 1 ? arguments[1] : "strata-demo-store")
    default:
        print("usage: strata demo [DIR]")
        exit(arguments.isEmpty ? 0 : 2)
    }
} catch {
    let message = "strata: \(error)\n"
    _ = message.withCString { write(2, $0, strlen($0)) }
    exit(1)
}
