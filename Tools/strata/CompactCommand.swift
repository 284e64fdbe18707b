import ArgumentParser
import Strata
import StrataStorage

/// `strata compact DIR [--keyspace NAME]`: a full compaction, with progress.
struct CompactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Compact the whole store (or one key space) and report the sizes before and after.",
        discussion: """
        Merges every segment into the deepest level: overwritten versions and removed objects
        leave the disk. Shows progress (bytes merged / total, rate, ETA) on standard error: a bar
        on a terminal, a line per tenth otherwise. Needs the store to itself (no other process
        may have it open).

        Examples:
          strata compact /tmp/shop
          strata compact /tmp/shop --keyspace objects
          strata compact /tmp/shop --json
        """)

    @OptionGroup var store: StoreArguments

    @Option(name: .customLong("keyspace"), help: "Compact only this key space (see `strata inspect`).")
    var keySpace: String?

    func run() throws {
        try reportingFailures(directory: store.directory, json: store.json) {
            try checkStoreDirectory(store.directory)
            let key = try store.encryptionKey()
            var options = EngineOptions()
            // A store of objects is compacted with the options its object layer opens it with:
            // they are not stored, and without them the merged segments would lose the id layout
            // of its objects and the filters of its edges and indexes.
            if let objects = try openObjectStore(store.directory, key: key) {
                objects.close()
                var storeOptions = StoreOptions()
                storeOptions.engine.encryptionKey = key
                options = Store.engineOptions(for: storeOptions)
            }
            options.createIfMissing = false
            options.encryptionKey = key
            let engine = try Engine.open(directory: store.directory, options: options)
            defer { engine.close() }
            var target: KeySpace?
            if let keySpace {
                guard let ks = engine.existingKeySpace(named: keySpace) else {
                    throw ToolFailure(message: "\(store.directory) has no key space \"\(keySpace)\"; it has: \(engine.keySpaces.map(\.name).joined(separator: ", "))")
                }
                target = ks
            }
            let display = store.json ? nil : ProgressDisplay(label: "compacting")
            let report = try engine.compact(keySpace: target) { p in
                display?.update(done: p.bytesDone, total: p.bytesTotal, seconds: p.seconds)
            }
            display?.finish()
            if store.json {
                print(JSONValue.object([
                    ("keySpace", keySpace.map { .string($0) } ?? .null),
                    ("bytesBefore", .uint(report.bytesBefore)), ("bytesAfter", .uint(report.bytesAfter)),
                    ("segmentsBefore", .int(Int64(report.segmentsBefore))), ("segmentsAfter", .int(Int64(report.segmentsAfter))),
                    ("seconds", .double(report.seconds)),
                ]).text)
            } else {
                print("compacted \(keySpace.map { "key space \($0)" } ?? "all key spaces") in \(HumanReadable.seconds(report.seconds))")
                print("before: \(HumanReadable.bytes(report.bytesBefore)) in \(report.segmentsBefore) segments")
                print("after:  \(HumanReadable.bytes(report.bytesAfter)) in \(report.segmentsAfter) segments")
            }
        }
    }
}
