import ArgumentParser
import Strata
import StrataStorage

/// `strata inspect DIR`: what the store holds, read-only.
struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show what a store holds: formats, key spaces and levels, entities and schema.",
        discussion: """
        Per key space: segments per level (count, bytes, key range). Memtable and WAL sizes.
        Entity types with object counts and schema (properties, indexes, relations with their
        edge counts). Write amplification over the store's life and space amplification (a
        full read of the segments). Opens the store read-only.

        Examples:
          strata inspect /tmp/shop
          strata inspect /tmp/shop --json | jq '.entities[].name'
        """)

    @OptionGroup var store: StoreArguments

    func run() throws {
        try reportingFailures(directory: store.directory, json: store.json) {
            try checkStoreDirectory(store.directory)
            let report = try Self.inspect(store.directory, key: try store.encryptionKey())
            print(store.json ? report.text : Self.render(report))
        }
    }

    static func inspect(_ directory: String, key: [UInt8]?) throws -> JSONValue {
        let engine = try openEngineReadOnly(directory, key: key)
        let stats = engine.statistics()
        let segments = engine.segments()
        let spaceAmp = try engine.spaceAmplification()
        let storeFormat = engine.formatVersion
        let storeId = engine.storeId
        let keySpaces: [JSONValue] = engine.keySpaces.map { ks in
            let mine = segments.filter { $0.keySpace == ks.name }
            let levels: [JSONValue] = Set(mine.map(\.level)).sorted().map { level in
                let inLevel = mine.filter { $0.level == level }
                let smallest = inLevel.map(\.smallestKey).min { $0.lexicographicallyPrecedes($1) } ?? []
                let largest = inLevel.map(\.largestKey).max { $0.lexicographicallyPrecedes($1) } ?? []
                return .object([
                    ("level", .int(Int64(level))), ("segments", .int(Int64(inLevel.count))),
                    // Entry counts come from segment properties, which a crafted store may set
                    // near 2^64: the sums saturate instead of trapping.
                    ("bytes", .uint(inLevel.reduce(UInt64(0)) { $0.addingReportingOverflow($1.bytes).overflow ? .max : $0 + $1.bytes })),
                    ("entries", .uint(inLevel.reduce(UInt64(0)) { $0.addingReportingOverflow($1.entries).overflow ? .max : $0 + $1.entries })),
                    ("smallestKey", .string(HumanReadable.hex(smallest))), ("largestKey", .string(HumanReadable.hex(largest))),
                    ("files", .array(inLevel.map { .string($0.fileName) })),
                ])
            }
            return .object([("name", .string(ks.name)), ("id", .uint(UInt64(ks.id))), ("levels", .array(levels))])
        }
        engine.close()

        var fields: [(String, JSONValue)] = [
            ("directory", .string(directory)),
            ("storeFormat", .uint(UInt64(storeFormat))),
            // 0: a store an older build made, not yet opened writable.
            ("storeId", .string(String(storeId, radix: 16))),
        ]
        var entities: [JSONValue]?
        if let objects = try openObjectStore(directory, key: key) {
            defer { objects.close() }
            fields.append(("objectFormat", .uint(UInt64(objects.formatVersion))))
            entities = try objects.storedEntities().map { e in
                .object([
                    ("name", .string(e.name)), ("id", .uint(UInt64(e.id))), ("embedded", .bool(e.isEmbedded)),
                    ("objects", .uint(e.objectCount)),
                    ("properties", .array(e.properties.map { p in
                        var f: [(String, JSONValue)] = [("name", .string(p.name)), ("id", .uint(UInt64(p.id))), ("type", .string(p.type))]
                        if p.index != .none { f.append(("index", .string(p.index == .unique ? "unique" : p.index == .caseInsensitive ? "index, case-insensitive" : "index"))) }
                        if let target = p.relationTarget { f.append(("target", .string(target))) }
                        if let edges = p.edgeCount { f.append(("edges", .int(Int64(edges)))) }
                        return .object(f)
                    })),
                ])
            }
        }
        fields += [
            ("keySpaces", .array(keySpaces)),
            ("memtableBytes", .int(Int64(stats.memtableBytes))),
            ("walBytes", .uint(stats.walFileBytes)),
            ("liveSegmentBytes", .uint(stats.liveSegmentBytes)),
            ("writeAmplification", .double(stats.lifetime.writeAmplification)),
            ("spaceAmplification", .double(spaceAmp)),
        ]
        if let entities { fields.append(("entities", .array(entities))) }
        return .object(fields)
    }

    /// The text form of the report `inspect` builds.
    static func render(_ report: JSONValue) -> String {
        guard case let .object(fields) = report else { return report.text }
        let f = Dictionary(fields, uniquingKeysWith: { a, _ in a })
        var lines: [String] = []
        let objectFormat = f["objectFormat"].map { ", object format \($0.text)" } ?? " (key spaces only, no objects)"
        lines.append("Store \(f["directory"]?.plain ?? "")")
        lines.append("  format: store \(f["storeFormat"]?.text ?? "?")\(objectFormat); store id \(f["storeId"]?.plain ?? "?")")
        lines.append("  on disk: segments \(HumanReadable.bytes(f["liveSegmentBytes"]?.number ?? 0)), WAL \(HumanReadable.bytes(f["walBytes"]?.number ?? 0)); memtable in memory after replay \(HumanReadable.bytes(f["memtableBytes"]?.number ?? 0))")
        lines.append("  write amplification (store lifetime) \(HumanReadable.ratio(f["writeAmplification"]?.double ?? 0)), space amplification \(HumanReadable.ratio(f["spaceAmplification"]?.double ?? 0))")
        lines.append("")
        lines.append("Key spaces")
        for ks in f["keySpaces"]?.items ?? [] {
            let k = ks.fields
            let levels = k["levels"]?.items ?? []
            lines.append("  \(k["name"]?.plain ?? "?") (id \(k["id"]?.text ?? "?"))\(levels.isEmpty ? ": no segments" : "")")
            for level in levels {
                let l = level.fields
                let smallest = HumanReadable.key(l["smallestKey"]?.hexBytes ?? [])
                let largest = HumanReadable.key(l["largestKey"]?.hexBytes ?? [])
                lines.append("    L\(l["level"]?.text ?? "?"): \(l["segments"]?.text ?? "0") segments, \(HumanReadable.bytes(l["bytes"]?.number ?? 0)), \(l["entries"]?.text ?? "0") entries, keys \(smallest) … \(largest)")
            }
        }
        if let entities = f["entities"]?.items {
            lines.append("")
            lines.append("Entities")
            if entities.isEmpty { lines.append("  none") }
            for entity in entities {
                let e = entity.fields
                let embedded = e["embedded"]?.text == "true" ? ", embedded" : ""
                lines.append("  \(e["name"]?.plain ?? "?") (id \(e["id"]?.text ?? "?")\(embedded)): \(e["objects"]?.text ?? "0") objects")
                for property in e["properties"]?.items ?? [] {
                    let p = property.fields
                    var line = "    \(p["name"]?.plain ?? "?"): \(p["type"]?.plain ?? "?")"
                    if let index = p["index"]?.plain { line += " @\(index == "unique" ? "Unique" : "Index")" }
                    if let edges = p["edges"]?.text { line += ", \(edges) edges" }
                    lines.append(line)
                }
            }
        }
        return lines.joined(separator: "\n")
    }
}

/// Reading back the report a command built, for its text form.
extension JSONValue {
    var fields: [String: JSONValue] {
        if case let .object(f) = self { return Dictionary(f, uniquingKeysWith: { a, _ in a }) }
        return [:]
    }

    var items: [JSONValue]? {
        if case let .array(a) = self { return a }
        return nil
    }

    /// A string without quotes.
    var plain: String? {
        if case let .string(s) = self { return s }
        return nil
    }

    var number: UInt64 {
        switch self {
        case let .uint(v): v
        case let .int(v): UInt64(max(0, v))
        case let .double(v): v.isFinite && v > 0 ? UInt64(v) : 0
        default: 0
        }
    }

    var double: Double {
        switch self {
        case let .uint(v): Double(v)
        case let .int(v): Double(v)
        case let .double(v): v
        default: 0
        }
    }

    /// The bytes of a hex string.
    var hexBytes: [UInt8] {
        guard let s = plain else { return [] }
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex, let j = s.index(i, offsetBy: 2, limitedBy: s.endIndex), let b = UInt8(s[i..<j], radix: 16) {
            out.append(b)
            i = j
        }
        return out
    }
}
