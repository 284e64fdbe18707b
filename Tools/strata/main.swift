import StrataStorage

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `strata demo [DIR]`: writes to a fresh store, closes it, reopens it and shows what survived.
/// The object-layer demo replaces this once the object layer exists.
func runDemo(directory: String) throws {
    if let existing = try? Engine.open(directory: directory, options: { var o = EngineOptions(); o.createIfMissing = false; return o }()) {
        // Start from an empty store: delete everything a previous run left.
        let spaces = existing.keySpaces
        var batch = WriteBatch()
        for ks in spaces {
            for (k, _) in try existing.scan(ks) { batch.delete(k, in: ks) }
        }
        try existing.write(batch, durability: .sync)
        existing.close()
    }

    print("Strata storage engine demo in \(directory)")
    var engine = try Engine.open(directory: directory)
    let objects = try engine.keySpace(named: "objects")
    let edges = try engine.keySpace(named: "edges")

    // One batch across two key spaces: both parts commit together or not at all.
    var batch = WriteBatch()
    let customers = ["Ada", "Grace", "Linus", "Barbara"]
    for (i, name) in customers.enumerated() {
        batch.put(Array("customer/\(i + 1)".utf8), Array(name.utf8), in: objects)
    }
    for order in 1...6 {
        let customer = (order % customers.count) + 1
        batch.put(Array("order/\(order)".utf8), Array("order \(order) for customer \(customer)".utf8), in: objects)
        batch.put(Array("customer/\(customer)/order/\(order)".utf8), [], in: edges)
    }
    try engine.write(batch, durability: .sync)
    print("wrote \(batch.count) entries in one atomic batch across 'objects' and 'edges'")

    // Half the data goes to a segment file; the rest stays in the WAL and memtable.
    try engine.flush()
    var more = WriteBatch()
    more.delete(Array("order/6".utf8), in: objects)
    more.delete(Array("customer/3/order/6".utf8), in: edges)
    more.put(Array("customer/4".utf8), Array("Barbara Liskov".utf8), in: objects)
    try engine.write(more, durability: .sync)
    let snapshotSequence = engine.latestSequence
    engine.close()
    print("closed the store at sequence \(snapshotSequence); reopening")

    engine = try Engine.open(directory: directory)
    defer { engine.close() }
    let stats = engine.statistics()
    for ks in engine.keySpaces {
        let rows = try engine.scan(ks)
        let segments = stats.keySpaces.first { $0.id == ks.id }?.segmentsPerLevel.reduce(0, +) ?? 0
        print("key space '\(ks.name)': \(rows.count) keys, \(segments) segment(s) on disk")
        for (k, v) in rows {
            let value = v.isEmpty ? "" : " = \(String(decoding: v, as: UTF8.self))"
            print("  \(String(decoding: k, as: UTF8.self))\(value)")
        }
    }
    let edgeSpace = try engine.keySpace(named: "edges")
    let ofCustomer1 = try engine.scan(edgeSpace, lowerBound: Array("customer/1/".utf8), upperBound: Array("customer/10".utf8))
    print("prefix scan 'customer/1/' in 'edges': \(ofCustomer1.map { String(decoding: $0.key, as: UTF8.self) })")
    let newestFirst = try engine.scan(try engine.keySpace(named: "objects"), reverse: true, limit: 3)
    print("last three objects, backwards: \(newestFirst.map { String(decoding: $0.key, as: UTF8.self) })")
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "demo":
        try runDemo(directory: arguments.count > 1 ? arguments[1] : "strata-demo-store")
    default:
        print("usage: strata demo [DIR]")
        exit(arguments.isEmpty ? 0 : 2)
    }
} catch {
    let message = "strata: \(error)\n"
    _ = message.withCString { write(2, $0, strlen($0)) }
    exit(1)
}
