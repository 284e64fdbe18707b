/// Decodes any `Decodable` value from a ``CompactValue`` (SPEC.md §11.3), the way the rest of
/// the object evolves: a key the stored value lacks (a field added to the type since) reads as
/// nil for an optional and as the zero value of its type otherwise (0, "", false, empty
/// collections, and a nested value whose own fields are all absent). A stored value of the wrong
/// shape is a `DecodingError`, never a trap.
enum CompactValueDecoder {
    static func decode<T: Decodable>(_ type: T.Type, from value: CompactValue) throws -> T {
        try CompactDecoder(value: value, codingPath: []).decodeValue(type)
    }
}

struct CompactDecoder: Decoder {
    /// nil: the key was absent.
    let value: CompactValue?
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func mismatch<T>(_ type: T.Type, _ what: String) -> DecodingError {
        .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "stored \(what) where \(type) was expected"))
    }

    var shape: String {
        switch value {
        case nil: "nothing"
        case .null?: "nil"
        case .bool?: "a Bool"
        case .int?, .uint?: "an integer"
        case .double?: "a Double"
        case .string?: "a String"
        case .array?: "a list"
        case .keyed?: "keyed fields"
        }
    }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        // The scalars directly: no decoder, no container.
        switch type {
        case is String.Type: return try decodeString() as! T
        case is Bool.Type: return try decodeBool() as! T
        case is Int.Type: return try decodeInteger(Int.self) as! T
        case is Int64.Type: return try decodeInteger(Int64.self) as! T
        case is Double.Type: return try decodeDouble() as! T
        default: return try T(from: self)
        }
    }

    func decodeString() throws -> String {
        switch value {
        case nil: return ""
        case let .string(s)?: return s
        default: throw mismatch(String.self, shape)
        }
    }

    func decodeBool() throws -> Bool {
        switch value {
        case nil: return false
        case let .bool(b)?: return b
        default: throw mismatch(Bool.self, shape)
        }
    }

    func decodeInteger<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        let result: I?
        switch value {
        case nil: return 0
        case let .int(v)?: result = I(exactly: v)
        case let .uint(v)?: result = I(exactly: v)
        case let .double(d)?: result = I(exactly: d)
        default: throw mismatch(type, shape)
        }
        guard let result else { throw mismatch(type, "a number out of its range") }
        return result
    }

    func decodeDouble() throws -> Double {
        switch value {
        case nil: return 0
        case let .double(d)?: return d
        case let .int(v)?:
            guard let d = Double(exactly: v) else { throw mismatch(Double.self, "an integer it cannot hold exactly") }
            return d
        case let .uint(v)?:
            guard let d = Double(exactly: v) else { throw mismatch(Double.self, "an integer it cannot hold exactly") }
            return d
        default: throw mismatch(Double.self, shape)
        }
    }

    func decodeFloat() throws -> Float {
        let d = try decodeDouble()
        guard d.isNaN || Double(Float(d)) == d else { throw mismatch(Float.self, "a Double it cannot hold exactly") }
        return Float(d)
    }

    var isNil: Bool {
        if case .null? = value { return true }
        return value == nil
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        switch value {
        case nil: return KeyedDecodingContainer(KeyedContainer<Key>(entries: [:], codingPath: codingPath))
        case let .keyed(entries)?:
            var map: [String: CompactValue] = [:]
            for e in entries { map[e.key] = e.value }
            return KeyedDecodingContainer(KeyedContainer<Key>(entries: map, codingPath: codingPath))
        default: throw mismatch([String: Any].self, shape)
        }
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        switch value {
        case nil: return UnkeyedContainer(elements: [], codingPath: codingPath)
        case let .array(elements)?: return UnkeyedContainer(elements: elements, codingPath: codingPath)
        default: throw mismatch([Any].self, shape)
        }
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValueContainer(decoder: self) }

    struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let entries: [String: CompactValue]
        let codingPath: [any CodingKey]
        var allKeys: [Key] { entries.keys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { entries[key.stringValue] != nil }
        private func decoder(_ key: Key) -> CompactDecoder {
            CompactDecoder(value: entries[key.stringValue], codingPath: codingPath + [key])
        }
        func decodeNil(forKey key: Key) throws -> Bool { decoder(key).isNil }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decoder(key).decodeValue(type) }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decoder(key).decodeBool() }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try decoder(key).decodeString() }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decoder(key).decodeDouble() }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decoder(key).decodeFloat() }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decoder(key).decodeInteger(type) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decoder(key).decodeInteger(type) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decoder(key).decodeInteger(type) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decoder(key).decodeInteger(type) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decoder(key).decodeInteger(type) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decoder(key).decodeInteger(type) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decoder(key).decodeInteger(type) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decoder(key).decodeInteger(type) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decoder(key).decodeInteger(type) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decoder(key).decodeInteger(type) }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            try decoder(key).container(keyedBy: type)
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try decoder(key).unkeyedContainer() }
        func superDecoder() throws -> any Decoder {
            CompactDecoder(value: entries["super"], codingPath: codingPath)
        }
        func superDecoder(forKey key: Key) throws -> any Decoder { decoder(key) }
    }

    struct UnkeyedContainer: UnkeyedDecodingContainer {
        let elements: [CompactValue]
        let codingPath: [any CodingKey]
        var currentIndex = 0
        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        private mutating func next<T>(_ type: T.Type) throws -> CompactDecoder {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(type, .init(codingPath: codingPath, debugDescription: "the stored list ends"))
            }
            defer { currentIndex += 1 }
            return CompactDecoder(value: elements[currentIndex], codingPath: codingPath)
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd else { return false }
            if case .null = elements[currentIndex] {
                currentIndex += 1
                return true
            }
            return false
        }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type).decodeValue(type) }
        mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type).decodeBool() }
        mutating func decode(_ type: String.Type) throws -> String { try next(type).decodeString() }
        mutating func decode(_ type: Double.Type) throws -> Double { try next(type).decodeDouble() }
        mutating func decode(_ type: Float.Type) throws -> Float { try next(type).decodeFloat() }
        mutating func decode(_ type: Int.Type) throws -> Int { try next(type).decodeInteger(type) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type).decodeInteger(type) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type).decodeInteger(type) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type).decodeInteger(type) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            try next([String: Any].self).container(keyedBy: type)
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next([Any].self).unkeyedContainer() }
        mutating func superDecoder() throws -> any Decoder { try next(Any.self) }
    }

    struct SingleValueContainer: SingleValueDecodingContainer {
        let decoder: CompactDecoder
        var codingPath: [any CodingKey] { decoder.codingPath }

        func decodeNil() -> Bool { decoder.isNil }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(type) }
        func decode(_ type: Bool.Type) throws -> Bool { try decoder.decodeBool() }
        func decode(_ type: String.Type) throws -> String { try decoder.decodeString() }
        func decode(_ type: Double.Type) throws -> Double { try decoder.decodeDouble() }
        func decode(_ type: Float.Type) throws -> Float { try decoder.decodeFloat() }
        func decode(_ type: Int.Type) throws -> Int { try decoder.decodeInteger(type) }
        func decode(_ type: Int8.Type) throws -> Int8 { try decoder.decodeInteger(type) }
        func decode(_ type: Int16.Type) throws -> Int16 { try decoder.decodeInteger(type) }
        func decode(_ type: Int32.Type) throws -> Int32 { try decoder.decodeInteger(type) }
        func decode(_ type: Int64.Type) throws -> Int64 { try decoder.decodeInteger(type) }
        func decode(_ type: UInt.Type) throws -> UInt { try decoder.decodeInteger(type) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.decodeInteger(type) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.decodeInteger(type) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.decodeInteger(type) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.decodeInteger(type) }
    }
}
