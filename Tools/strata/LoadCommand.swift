import ArgumentParser
import Foundation
import Strata

/// `strata load DIR ENTITY FILE`: the JSON Lines of `strata dump` put back into a store.
struct LoadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Put the objects of one entity from JSON Lines (as `strata dump` writes them) into a store.",
        discussion: """
        Each line is one object: its id and stored properties, in the form `strata dump` writes
        (a ToOne as the target's id or null, a ToMany as the list of target ids, dates as ISO
        8601, bytes as base64, NaN and infinities as strings). Objects keep their ids: a new id
        is inserted, a stored one replaced. The store must already hold the entity (opened once
        by the app), and every line is checked before anything is written: an unknown property,
        a wrong type, a number out of range, a target that is not stored, an id given twice
        names the line. Objects are
        put in transactions of --batch lines, with progress on standard error; relations to
        another entity need that entity's objects loaded first (load Customer before Order),
        relations within the entity are set once all its objects are in. `strata dump` of the
        loaded store gives the same lines. Needs the store to itself (no other process may have
        it open).

        Examples:
          strata dump /tmp/shop Customer > customers.jsonl
          strata load /tmp/shop-copy Customer customers.jsonl
          strata load /tmp/shop-copy Order orders.jsonl --batch 5000 --json
        """)

    @OptionGroup var store: StoreArguments

    @Argument(help: "The entity the lines hold (see `strata inspect`).")
    var entity: String

    @Argument(help: "The JSON Lines file.")
    var file: String

    @Option(help: "Objects per transaction.")
    var batch = 1000

    func validate() throws {
        if batch < 1 { throw ValidationError("--batch must be 1 or more") }
    }

    func run() throws {
        try reportingFailures(directory: store.directory, json: store.json) {
            try checkStoreDirectory(store.directory)
            guard FileManager.default.fileExists(atPath: file) else { throw ToolFailure(message: "no such file: \(file)") }
            var options = StoreOptions()
            options.engine.encryptionKey = try store.encryptionKey()
            let objects = try Store(directoryPath: store.directory, options: options)
            defer { objects.close() }
            guard let schema = try objects.storedEntities().first(where: { $0.name == entity }) else {
                throw ToolFailure(message: "\(store.directory) has no entity \"\(entity)\"; entities: \(try objects.storedEntities().map(\.name).joined(separator: ", "))")
            }
            let parser = DumpLineParser(entity: schema)
            let start = Date()
            let size = UInt64((try FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.uint64Value ?? 0)
            let selfRelations = Set(schema.properties.filter { $0.relationTarget == entity }.map(\.name))
            let passes = selfRelations.isEmpty ? 1 : 2
            // Every line is read and checked before the first write: its JSON, then the put
            // itself in transactions that are rolled back (types, ranges, UUIDs, decimals,
            // targets of other entities, unique values), ids given twice, and the targets of
            // relations within the entity (in the file, or stored).
            var lineOfId: [UInt64: Int] = [:]
            var selfTargets: [(line: Int, id: UInt64)] = []
            var checking: [(line: Int, object: StoredObject)] = []
            func checkBatch() throws {
                guard !checking.isEmpty else { return }
                do {
                    try objects.checkStoredObjects(checking.map(\.object), of: entity)
                } catch {
                    // The line that fails alone, when one does (values only a batch's other
                    // lines conflict with are named by the store's error).
                    for (line, object) in checking {
                        do { try objects.checkStoredObjects([object], of: entity) } catch {
                            throw ToolFailure(message: "line \(line): \(ToolFailure(error, directory: store.directory).message)")
                        }
                    }
                    throw error
                }
                checking.removeAll(keepingCapacity: true)
            }
            try forEachLine { number, line in
                var object = try parser.parse(line, number: number)
                if let first = lineOfId.updateValue(number, forKey: object.id) {
                    throw ToolFailure(message: "line \(number): id \(object.id) again (first on line \(first))")
                }
                for (name, value) in object.values where selfRelations.contains(name) {
                    switch value {
                    case let .toOne(target?), let .uint(target): selfTargets.append((number, target))
                    case let .int(target) where target > 0: selfTargets.append((number, UInt64(target)))
                    case let .toMany(targets): selfTargets += targets.map { (number, $0) }
                    default: break
                    }
                }
                // Relations within the entity are checked below, as the first pass writes them.
                if passes == 2 { object.values.removeAll { selfRelations.contains($0.name) } }
                checking.append((number, object))
                if checking.count >= batch { try checkBatch() }
            }
            try checkBatch()
            for (line, target) in selfTargets where lineOfId[target] == nil {
                var stored = false
                try objects.storedObjects(of: entity, from: target, limit: 1) { stored = $0.id == target; return false }
                guard stored else {
                    throw ToolFailure(message: "line \(line): \(entity) with id \(target) is neither in the file nor in the store")
                }
            }
            let lines = lineOfId.count
            let display = store.json ? nil : ProgressDisplay(label: "loading")
            var done: UInt64 = 0
            for pass in 1...passes {
                var pending: [StoredObject] = []
                func flush() throws {
                    guard !pending.isEmpty else { return }
                    try objects.putStoredObjects(pending, of: entity)
                    pending.removeAll(keepingCapacity: true)
                }
                try forEachLine { number, line in
                    var object = try parser.parse(line, number: number)
                    if pass == 1 && passes == 2 {
                        // Relations within the entity may name objects later in the file:
                        // set in the second pass, once every object is in.
                        object.values.removeAll { selfRelations.contains($0.name) }
                    }
                    pending.append(object)
                    done += UInt64(line.utf8.count + 1)
                    if pending.count >= batch {
                        try flush()
                        display?.update(done: done, total: size * UInt64(passes), seconds: Date().timeIntervalSince(start))
                    }
                }
                try flush()
            }
            display?.update(done: size * UInt64(passes), total: size * UInt64(passes), seconds: Date().timeIntervalSince(start))
            display?.finish()
            let seconds = Date().timeIntervalSince(start)
            if store.json {
                print(JSONValue.object([("entity", .string(entity)), ("objects", .int(Int64(lines))), ("seconds", .double(seconds))]).text)
            } else {
                print("loaded \(lines) \(entity) objects from \(file) in \(HumanReadable.seconds(seconds))")
            }
        }
    }

    /// The longest line a dump can hold: an object at the engine's value limit (64 MiB), its
    /// bytes base64-encoded and its strings JSON-escaped, with room to spare. A longer line is no
    /// dump line, and is refused before it is held in memory whole.
    static let maxLineBytes = 512 << 20

    /// Calls `body` with each non-empty line of the file and its number (from 1), reading the
    /// file in pieces (a dump can be gigabytes). Each byte is searched for a newline once, and
    /// only an unfinished line is carried from one piece to the next, so a long line costs its
    /// length, not its length squared.
    private func forEachLine(_ body: (Int, String) throws -> Void) throws {
        guard let handle = FileHandle(forReadingAtPath: file) else { throw ToolFailure(message: "cannot read \(file)") }
        defer { try? handle.close() }
        var buffer = [UInt8]()
        var searched = 0   // bytes of `buffer` already known to hold no newline
        var number = 0
        func emit(_ bytes: ArraySlice<UInt8>) throws {
            number += 1
            guard !bytes.isEmpty else { return }
            guard let line = String(validating: bytes, as: UTF8.self) else {
                throw ToolFailure(message: "\(file):\(number): not UTF-8")
            }
            try body(number, line)
        }
        while true {
            let chunk = handle.readData(ofLength: 1 << 20)
            if chunk.isEmpty { break }
            buffer.append(contentsOf: chunk)
            var start = 0
            while let newline = buffer[max(start, searched)...].firstIndex(of: 0x0A) {
                try emit(buffer[start..<newline])
                start = newline + 1
            }
            if start > 0 { buffer.removeFirst(start) }
            searched = buffer.count
            guard buffer.count <= Self.maxLineBytes else {
                throw ToolFailure(message: "\(file):\(number + 1): a line longer than \(Self.maxLineBytes >> 20) MiB is not a dump line")
            }
        }
        if !buffer.isEmpty { try emit(buffer[...]) }
    }
}

/// Reads one line of `strata dump` output as a ``StoredObject`` of a known entity, with each
/// value read as its stored type (integers exactly, up to `UInt64.max`).
struct DumpLineParser: Sendable {
    enum Kind: Sendable { case bool, signed, unsigned, real, string, date, bytes, decimal, codable, toOne, toMany }

    let entity: String
    let kinds: [String: Kind]
    let order: [String]

    init(entity: StoredEntity) {
        self.entity = entity.name
        var kinds: [String: Kind] = [:]
        for p in entity.properties {
            let base = p.type.hasSuffix("?") ? String(p.type.dropLast()) : p.type
            kinds[p.name] = switch base {
            case "Bool": .bool
            case "Int8", "Int16", "Int32", "Int64": .signed
            case "UInt8", "UInt16", "UInt32", "UInt64": .unsigned
            case "Float", "Double": .real
            // Written as strings; the store parses them for the property's type.
            case "String", "UUID", "URL": .string
            case "Decimal": .decimal
            case "Codable": .codable
            case "Date": .date
            case _ where base.hasPrefix("ToOne"): .toOne
            case _ where base.hasPrefix("ToMany"): .toMany
            default: .bytes
            }
        }
        self.kinds = kinds
        order = entity.properties.map(\.name)
    }

    func parse(_ line: String, number: Int) throws -> StoredObject {
        let decoder = JSONDecoder()
        decoder.userInfo[Line.parserKey] = self
        do {
            let parsed = try decoder.decode(Line.self, from: Data(line.utf8))
            let values = order.compactMap { name in parsed.values[name].map { (name, $0) } }
            return StoredObject(id: parsed.id, values: values)
        } catch let failure as ToolFailure {
            throw ToolFailure(message: "line \(number): \(failure.message)")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context),
                let DecodingError.dataCorrupted(context) {
            let key = context.codingPath.first?.stringValue
            throw ToolFailure(message: "line \(number)\(key.map { ": \($0)" } ?? ""): \(context.debugDescription)")
        } catch let DecodingError.keyNotFound(key, _) {
            throw ToolFailure(message: "line \(number): no \"\(key.stringValue)\"")
        }
    }

    /// One decoded line.
    private struct Line: Decodable {
        static let parserKey = CodingUserInfoKey(rawValue: "strata.dumpLineParser")!
        var id: UInt64
        var values: [String: StoredValue] = [:]

        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: Decoder) throws {
            let parser = decoder.userInfo[Self.parserKey] as! DumpLineParser
            let c = try decoder.container(keyedBy: Key.self)
            id = try c.decode(UInt64.self, forKey: Key(stringValue: "id"))
            guard id != 0 else { throw ToolFailure(message: "id 0 is never a stored id") }
            for key in c.allKeys where key.stringValue != "id" {
                guard let kind = parser.kinds[key.stringValue] else {
                    throw ToolFailure(message: "\(parser.entity) has no property \"\(key.stringValue)\"")
                }
                if try c.decodeNil(forKey: key) {
                    values[key.stringValue] = kind == .toOne ? .toOne(nil) : .null
                    continue
                }
                values[key.stringValue] = try Self.value(kind, c, key)
            }
        }

        private static func value(_ kind: Kind, _ c: KeyedDecodingContainer<Key>, _ key: Key) throws -> StoredValue {
            switch kind {
            case .bool: return .bool(try c.decode(Bool.self, forKey: key))
            case .signed: return .int(try c.decode(Int64.self, forKey: key))
            case .unsigned: return .uint(try c.decode(UInt64.self, forKey: key))
            case .real:
                if let d = try? c.decode(Double.self, forKey: key) { return .double(d) }
                switch try c.decode(String.self, forKey: key) {
                case "NaN": return .double(.nan)
                case "Infinity": return .double(.infinity)
                case "-Infinity": return .double(-.infinity)
                case let other: throw ToolFailure(message: "\(key.stringValue): \"\(other)\" is not a number")
                }
            case .string: return .string(try c.decode(String.self, forKey: key))
            case .decimal:
                // Dump writes a string; a JSON number is taken as its text, not as a Double.
                if let text = try? c.decode(String.self, forKey: key) { return .string(text) }
                return .decimal(try c.decode(Decimal.self, forKey: key))
            case .date:
                let text = try c.decode(String.self, forKey: key)
                guard let date = DumpCommand.parseDate(text) else {
                    throw ToolFailure(message: "\(key.stringValue): \"\(text)\" is not an ISO 8601 date")
                }
                return .date(date)
            case .bytes:
                let text = try c.decode(String.self, forKey: key)
                guard let data = Data(base64Encoded: text) else { throw ToolFailure(message: "\(key.stringValue): not base64") }
                return .bytes(Array(data))
            case .codable: return .codable(try c.decode(JSONCompactValue.self, forKey: key).value)
            case .toOne: return .toOne(try c.decode(UInt64.self, forKey: key))
            case .toMany: return .toMany(try c.decode([UInt64].self, forKey: key))
            }
        }
    }
}

/// Any JSON value, read as a Codable property's stored form (what `dump` writes for one):
/// whole numbers as integers, others as doubles, objects as keyed values.
struct JSONCompactValue: Decodable {
    let value: CompactValue

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { value = .null }
        else if let b = try? c.decode(Bool.self) { value = .bool(b) }
        else if let i = try? c.decode(Int64.self) { value = .int(i) }
        else if let u = try? c.decode(UInt64.self) { value = .uint(u) }
        else if let d = try? c.decode(Double.self) { value = .double(d) }
        else if let s = try? c.decode(String.self) { value = .string(s) }
        else if let a = try? c.decode([JSONCompactValue].self) { value = .array(a.map(\.value)) }
        else {
            let o = try c.decode([String: JSONCompactValue].self)
            value = .keyed(o.map { ($0.key, $0.value.value) }.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) })
        }
    }
}
