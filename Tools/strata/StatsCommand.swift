import ArgumentParser
import StrataStorage

/// `strata stats DIR`: the engine's counters over the store's life, and its shape. Read-only.
struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Show the engine's counters over the store's life, and the shape of its tree.",
        discussion: """
        Counters are kept across sessions in the store's STATS file, rewritten at each clean
        close (a session that crashed adds nothing). Opens the store read-only.

        Examples:
          strata stats /tmp/shop
          strata stats /tmp/shop --json
        """)

    @OptionGroup var store: StoreArguments

    func run() throws {
        try reportingFailures(directory: store.directory, json: store.json) {
            try checkStoreDirectory(store.directory)
            let engine = try openEngineReadOnly(store.directory, key: try store.encryptionKey())
            defer { engine.close() }
            let s = engine.statistics()
            let life = s.lifetime
            if store.json {
                var counters: [(String, JSONValue)] = EngineCounters.fields.map { ($0.name, .uint(life[keyPath: $0.keyPath])) }
                counters.append(("bytesWrittenToDisk", .uint(life.bytesWrittenToDisk)))
                counters.append(("writeAmplification", .double(life.writeAmplification)))
                let spaces: [JSONValue] = s.keySpaces.map { k in
                    .object([("name", .string(k.name)), ("segmentsPerLevel", .array(k.segmentsPerLevel.map { .int(Int64($0)) })),
                             ("bytesPerLevel", .array(k.bytesPerLevel.map { .uint($0) })), ("entries", .uint(k.segmentEntries))])
                }
                print(JSONValue.object([
                    ("lifetime", .object(counters)), ("keySpaces", .array(spaces)),
                    ("liveSegmentBytes", .uint(s.liveSegmentBytes)), ("walBytes", .uint(s.walFileBytes)),
                    ("memtableBytes", .int(Int64(s.memtableBytes))),
                ]).text)
                return
            }
            print("Engine counters over the store's life (\(store.directory))")
            for f in EngineCounters.fields {
                let v = life[keyPath: f.keyPath]
                let isBytes = f.name.contains("Bytes") || f.name == "bytesRead"
                let shown = isBytes ? "\(v) (\(HumanReadable.bytes(v)))" : "\(v)"
                print("  \(f.name): \(shown)")
            }
            print("  bytesWrittenToDisk: \(life.bytesWrittenToDisk) (\(HumanReadable.bytes(life.bytesWrittenToDisk)))")
            print("  writeAmplification: \(HumanReadable.ratio(life.writeAmplification))")
            print("Shape")
            for k in s.keySpaces {
                let levels = k.segmentsPerLevel.enumerated().filter { $0.element > 0 }
                    .map { "L\($0.offset) \($0.element) (\(HumanReadable.bytes(k.bytesPerLevel[$0.offset])))" }
                print("  \(k.name): \(levels.isEmpty ? "no segments" : levels.joined(separator: ", ")), \(k.segmentEntries) entries")
            }
            print("  WAL \(HumanReadable.bytes(s.walFileBytes)), segments \(HumanReadable.bytes(s.liveSegmentBytes))")
        }
    }
}
