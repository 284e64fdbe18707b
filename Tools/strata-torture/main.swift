import StrataStorage

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Helper process for the reliability tests: it does to a store what another process would, so
/// the tests can observe locking and crashes from the outside.
///
///   strata-torture hold DIR     open the store, print "ready", keep it open until stdin closes
///   strata-torture write DIR N  write N durable batches, printing each sequence once it is acknowledged
///   strata-torture read DIR     open read-only and print "keys N" for the default key space
func fail(_ message: String) -> Never {
    let line = "strata-torture: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(1)
}

let args = Array(CommandLine.arguments.dropFirst())
guard args.count >= 2 else { fail("usage: strata-torture hold DIR | write DIR N") }
/// Unbuffered, so the parent sees each line the moment it is true.
func emit(_ line: String) {
    let text = line + "\n"
    _ = text.withCString { write(1, $0, strlen($0)) }
}

do {
    var options = EngineOptions()
    options.readOnly = args[0] == "read"
    let engine = try Engine.open(directory: args[1], options: options)
    switch args[0] {
    case "read":
        emit("keys \(try engine.scan(engine.defaultKeySpace).count)")
        engine.close()
    case "hold":
        emit("ready")
        var byte: UInt8 = 0
        while read(0, &byte, 1) > 0 {}
        engine.close()
    case "write":
        let n = Int(args.count > 2 ? args[2] : "") ?? 1000
        let ks = engine.defaultKeySpace
        for i in 0..<n {
            var batch = WriteBatch()
            batch.put(Array("key-\(i)".utf8), Array("value-\(i)".utf8), in: ks)
            try engine.write(batch, durability: .sync)
            emit("ack \(i)")
        }
        engine.close()
    default:
        fail("unknown command \(args[0])")
    }
} catch {
    fail("\(error)")
}
