import ArgumentParser
import Foundation
import Strata

/// `strata dump DIR ENTITY` and `strata dump DIR --edges RELATION`: JSON Lines. Read-only.
struct DumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Write objects, or the edges of one relation, as JSON Lines.",
        discussion: """
        One object per line: its id and every stored property; a ToOne as the target's id (or
        null), a ToMany as the list of target ids in its order. Dates are ISO 8601 strings (to
        the millisecond),
        bytes base64, NaN and infinities the strings "NaN", "Infinity", "-Infinity". With
        --edges, one line per edge: {"source":…,"target":…} (and "position" for a ToMany).
        Opens the store read-only. The output is JSON Lines whether or not --json is given;
        `strata load` reads it back.

        Examples:
          strata dump /tmp/shop Customer
          strata dump /tmp/shop Order --id 42
          strata dump /tmp/shop Order --limit 10
          strata dump /tmp/shop --edges Student.teachers
        """)

    @OptionGroup var store: StoreArguments

    @Argument(help: "The entity to dump (see `strata inspect`).")
    var entity: String?

    @Option(help: "Only the object with this id.")
    var id: UInt64?

    @Option(help: "At most this many objects.")
    var limit: Int?

    @Option(help: "Dump the edges of this relation instead, written Entity.property.")
    var edges: String?

    func validate() throws {
        if (entity == nil) == (edges == nil) { throw ValidationError("give either an ENTITY or --edges RELATION") }
        if edges != nil && (id != nil || limit != nil) { throw ValidationError("--id and --limit apply to objects, not --edges") }
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
        if id == 0 { throw ValidationError("--id must be 1 or more: 0 is never a stored id") }
    }

    func run() throws {
        try reportingFailures(directory: store.directory, json: store.json) {
            try checkStoreDirectory(store.directory)
            guard let objects = try openObjectStore(store.directory, key: try store.encryptionKey()) else {
                throw ToolFailure(message: "\(store.directory) holds no objects: it is a key-value store without the object layer")
            }
            defer { objects.close() }
            var out = OutputBuffer()
            if let edges {
                do {
                    try objects.storedEdges(of: edges) { e in
                        var f: [(String, JSONValue)] = [("source", .uint(e.source)), ("target", .uint(e.target))]
                        if let p = e.position { f.append(("position", .int(Int64(p)))) }
                        out.line(JSONValue.object(f).text)
                        return true
                    }
                } catch StrataError.unknownRelation, StrataError.unknownEntity {
                    throw ToolFailure(message: "\(store.directory) has no relation \"\(edges)\"; relations: \(try relations(objects).joined(separator: ", "))")
                }
            } else if let entity {
                var found = false
                do {
                    try objects.storedObjects(of: entity, from: id ?? 1, limit: id != nil ? 1 : limit) { o in
                        if let id, o.id != id { return false }
                        found = true
                        out.line(Self.json(o).text)
                        return true
                    }
                } catch StrataError.unknownEntity {
                    throw ToolFailure(message: "\(store.directory) has no entity \"\(entity)\"; entities: \(try objects.storedEntities().map(\.name).joined(separator: ", "))")
                }
                if let id, !found { throw ToolFailure(message: "\(entity) \(id) is not stored in \(store.directory)") }
            }
            out.flush()
        }
    }

    private func relations(_ store: Strata.Store) throws -> [String] {
        try store.storedEntities().flatMap { e in e.properties.filter { $0.relationTarget != nil }.map { "\(e.name).\($0.name)" } }
    }

    static func json(_ o: StoredObject) -> JSONValue {
        var fields: [(String, JSONValue)] = [("id", .uint(o.id))]
        for (name, value) in o.values { fields.append((name, json(value))) }
        return .object(fields)
    }

    static func json(_ v: StoredValue) -> JSONValue {
        switch v {
        case .null: .null
        case let .bool(b): .bool(b)
        case let .int(i): .int(i)
        case let .uint(u): .uint(u)
        case let .double(d): .double(d)
        case let .string(s): .string(s)
        case let .date(d): .string(formatDate(d))
        case let .bytes(b): .string(Data(b).base64EncodedString())
        case let .uuid(u): .string(u.uuidString)
        case let .url(u): .string(u.absoluteString)
        // A string keeps every digit: a JSON number read as a Double would round.
        case let .decimal(d): .string(d.description)
        case let .codable(c): json(c)
        case let .toOne(id): id.map { .uint($0) } ?? .null
        case let .toMany(ids): .array(ids.map { .uint($0) })
        }
    }
}

extension DumpCommand {
    /// A Codable property's stored value as the JSON it reads like (keys in stored order).
    static func json(_ c: CompactValue) -> JSONValue {
        switch c {
        case .null: .null
        case let .bool(b): .bool(b)
        case let .int(i): .int(i)
        case let .uint(u): .uint(u)
        case let .double(d): .double(d)
        case let .string(s): .string(s)
        case let .array(elements): .array(elements.map(json))
        case let .keyed(entries): .object(entries.map { ($0.key, json($0.value)) })
        }
    }

    /// ISO 8601, with milliseconds when the date has a fraction of a second (what `load` reads
    /// back; finer fractions round to the millisecond).
    static func formatDate(_ d: Date) -> String {
        let whole = d.timeIntervalSince1970.rounded(.down) == d.timeIntervalSince1970
        if whole { return d.formatted(.iso8601) }
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: d)
    }

    static func parseDate(_ text: String) -> Date? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: text) ?? ISO8601DateFormatter().date(from: text)
    }
}

/// Buffers output lines and writes them in large chunks (a dump can be millions of lines).
struct OutputBuffer {
    private var buffer = ""

    mutating func line(_ s: String) {
        buffer += s
        buffer += "\n"
        if buffer.utf8.count >= 1 << 16 { flush() }
    }

    mutating func flush() {
        guard !buffer.isEmpty else { return }
        FileHandle.standardOutput.write(Data(buffer.utf8))
        buffer = ""
    }
}
