/// Marks collections whose Codable form lists elements in no fixed order: their stored
/// elements are sorted by their bytes, so that equal sets store equal bytes.
protocol _StrataUnorderedElements {}
/// Marks dictionaries whose Codable form is an unkeyed list of key, value, key, value… (keys
/// other than String and Int): their pairs are sorted by the key's bytes.
protocol _StrataUnorderedPairs {}

extension Set: _StrataUnorderedElements {}
extension Dictionary: _StrataUnorderedPairs {}

/// Encodes any `Encodable` value into a ``CompactValue`` (SPEC.md §11.3): the storage of a
/// `Codable` property.
enum CompactValueEncoder {
    static func encode<T: Encodable>(_ value: T) throws -> CompactValue {
        let node = EncodingNode()
        try node.encode(value, codingPath: [])
        return try node.finish()
    }

    /// `value` in the form a stored one has when it is read back (encoded, then parsed from
    /// its bytes: a Float widened, an integer's sign as stored), to compare with stored
    /// elements and keys; nil when the value's own `encode(to:)` throws.
    static func storedForm<T: Encodable>(of value: T) -> CompactValue? {
        (try? encode(value).encoded()).flatMap { bytes in try? bytes.withUnsafeBytes { try CompactValue.parse($0) } }
    }
}

/// A value being encoded; containers fill it in after they are handed out, hence a class.
final class EncodingNode {
    enum Kind {
        case unset
        case value(CompactValue)
        case array([EncodingNode])
        case keyed([String: EncodingNode])
    }

    var kind = Kind.unset
    var sortsElements = false
    var sortsPairs = false

    func encode<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws {
        // The scalars directly: no encoder, no container.
        switch value {
        case let v as String: kind = .value(.string(v))
        case let v as Bool: kind = .value(.bool(v))
        case let v as Int: kind = .value(.int(Int64(v)))
        case let v as Int64: kind = .value(.int(v))
        case let v as Double: kind = .value(.double(v))
        default:
            try value.encode(to: CompactEncoder(node: self, codingPath: codingPath))
            if value is _StrataUnorderedElements { sortsElements = true }
            if value is _StrataUnorderedPairs { sortsPairs = true }
        }
    }

    func finish() throws -> CompactValue {
        switch kind {
        case .unset: return .keyed([])
        case let .value(v): return v
        case let .array(nodes):
            var elements = try nodes.map { try $0.finish() }
            if sortsElements {
                elements = try elements.map { (try $0.encoded(), $0) }.sorted { $0.0.lexicographicallyPrecedes($1.0) }.map(\.1)
            } else if sortsPairs, elements.count % 2 == 0 {
                var pairs: [([UInt8], CompactValue, CompactValue)] = []
                for i in stride(from: 0, to: elements.count, by: 2) { pairs.append((try elements[i].encoded(), elements[i], elements[i + 1])) }
                pairs.sort { $0.0.lexicographicallyPrecedes($1.0) }
                elements = pairs.flatMap { [$0.1, $0.2] }
            }
            return .array(elements)
        case let .keyed(entries):
            return .keyed(try entries.map { ($0.key, try $0.value.finish()) }.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) })
        }
    }

    func keyedChildren() -> [String: EncodingNode] {
        if case let .keyed(entries) = kind { return entries }
        return [:]
    }
}

struct CompactEncoder: Encoder {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .keyed = node.kind {} else { node.kind = .keyed([:]) }
        return KeyedEncodingContainer(KeyedContainer<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = node.kind {} else { node.kind = .array([]) }
        return UnkeyedContainer(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueContainer(node: node, codingPath: codingPath)
    }

    struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let node: EncodingNode
        let codingPath: [any CodingKey]

        private func child(_ key: Key) -> EncodingNode {
            var entries = node.keyedChildren()
            let child = EncodingNode()
            entries[key.stringValue] = child
            node.kind = .keyed(entries)
            return child
        }

        mutating func encodeNil(forKey key: Key) throws { child(key).kind = .value(.null) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            try child(key).encode(value, codingPath: codingPath + [key])
        }
        mutating func encode(_ value: Bool, forKey key: Key) throws { child(key).kind = .value(.bool(value)) }
        mutating func encode(_ value: String, forKey key: Key) throws { child(key).kind = .value(.string(value)) }
        mutating func encode(_ value: Double, forKey key: Key) throws { child(key).kind = .value(.double(value)) }
        mutating func encode(_ value: Float, forKey key: Key) throws { child(key).kind = .value(.double(Double(value))) }
        mutating func encode(_ value: Int, forKey key: Key) throws { child(key).kind = .value(.int(Int64(value))) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { child(key).kind = .value(.int(value)) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { child(key).kind = .value(.uint(value)) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { child(key).kind = .value(.uint(UInt64(value))) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            CompactEncoder(node: child(key), codingPath: codingPath + [key]).container(keyedBy: keyType)
        }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            CompactEncoder(node: child(key), codingPath: codingPath + [key]).unkeyedContainer()
        }
        mutating func superEncoder() -> any Encoder {
            CompactEncoder(node: child(Key(stringValue: "super")!), codingPath: codingPath)
        }
        mutating func superEncoder(forKey key: Key) -> any Encoder { CompactEncoder(node: child(key), codingPath: codingPath + [key]) }
    }

    struct UnkeyedContainer: UnkeyedEncodingContainer {
        let node: EncodingNode
        let codingPath: [any CodingKey]
        var count: Int {
            if case let .array(nodes) = node.kind { return nodes.count }
            return 0
        }

        private func append() -> EncodingNode {
            var nodes: [EncodingNode] = []
            if case let .array(existing) = node.kind { nodes = existing }
            let child = EncodingNode()
            nodes.append(child)
            node.kind = .array(nodes)
            return child
        }

        mutating func encodeNil() throws { append().kind = .value(.null) }
        mutating func encode<T: Encodable>(_ value: T) throws { try append().encode(value, codingPath: codingPath) }
        mutating func encode(_ value: Bool) throws { append().kind = .value(.bool(value)) }
        mutating func encode(_ value: String) throws { append().kind = .value(.string(value)) }
        mutating func encode(_ value: Double) throws { append().kind = .value(.double(value)) }
        mutating func encode(_ value: Float) throws { append().kind = .value(.double(Double(value))) }
        mutating func encode(_ value: Int) throws { append().kind = .value(.int(Int64(value))) }
        mutating func encode(_ value: Int64) throws { append().kind = .value(.int(value)) }
        mutating func encode(_ value: UInt8) throws { append().kind = .value(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt64) throws { append().kind = .value(.uint(value)) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            CompactEncoder(node: append(), codingPath: codingPath).container(keyedBy: keyType)
        }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            CompactEncoder(node: append(), codingPath: codingPath).unkeyedContainer()
        }
        mutating func superEncoder() -> any Encoder { CompactEncoder(node: append(), codingPath: codingPath) }
    }

    struct SingleValueContainer: SingleValueEncodingContainer {
        let node: EncodingNode
        let codingPath: [any CodingKey]

        mutating func encodeNil() throws { node.kind = .value(.null) }
        mutating func encode<T: Encodable>(_ value: T) throws { try node.encode(value, codingPath: codingPath) }
        mutating func encode(_ value: Bool) throws { node.kind = .value(.bool(value)) }
        mutating func encode(_ value: String) throws { node.kind = .value(.string(value)) }
        mutating func encode(_ value: Double) throws { node.kind = .value(.double(value)) }
        mutating func encode(_ value: Float) throws { node.kind = .value(.double(Double(value))) }
        mutating func encode(_ value: Int) throws { node.kind = .value(.int(Int64(value))) }
        mutating func encode(_ value: Int8) throws { node.kind = .value(.int(Int64(value))) }
        mutating func encode(_ value: Int16) throws { node.kind = .value(.int(Int64(value))) }
        mutating func encode(_ value: Int32) throws { node.kind = .value(.int(Int64(value))) }
        mutating func encode(_ value: Int64) throws { node.kind = .value(.int(value)) }
        mutating func encode(_ value: UInt) throws { node.kind = .value(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt8) throws { node.kind = .value(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt16) throws { node.kind = .value(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt32) throws { node.kind = .value(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt64) throws { node.kind = .value(.uint(value)) }
    }
}
