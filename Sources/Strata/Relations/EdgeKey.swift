/// A key of the edges key space (SPEC.md §Relations): 25 bytes,
/// `kind · entity (u32 BE) · property (u32 BE) · a (u64 BE) · b (u64 BE)`.
/// Big-endian fields make every "edges of one relation from one object" a contiguous prefix.
struct EdgeKey: Hashable, Sendable {
    /// Raw values reach disk: never renumber.
    enum Kind: UInt8, Sendable {
        /// A `ToOne` seen from its target: a = target id, b = source id; empty value.
        case toOneBacklink = 1
        /// A standalone `ToMany`'s ordered target list: a = source id, b = 0; value = the ids.
        case toManyList = 2
        /// A standalone `ToMany` seen from a target: a = target id, b = source id; empty value.
        case toManyBacklink = 3
    }

    static let byteCount = 25
    /// Bytes of the prefix shared by all edges with the same kind, relation and `a`.
    static let prefixByteCount = 17

    var kind: Kind
    /// The entity that declares the relation.
    var entityId: UInt32
    /// The relation's property id in that entity.
    var propertyId: UInt32
    var a: Id
    var b: Id

    var bytes: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(Self.byteCount)
        out.append(kind.rawValue)
        withUnsafeBytes(of: entityId.bigEndian) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: propertyId.bigEndian) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: a.bigEndian) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: b.bigEndian) { out.append(contentsOf: $0) }
        return out
    }

    var prefixBytes: [UInt8] { Array(bytes.prefix(Self.prefixByteCount)) }

    /// The prefix of every edge of one relation in one kind: `kind · entity · property`.
    static func relationPrefix(kind: Kind, entityId: UInt32, propertyId: UInt32) -> [UInt8] {
        var prefix: [UInt8] = [kind.rawValue]
        withUnsafeBytes(of: entityId.bigEndian) { prefix.append(contentsOf: $0) }
        withUnsafeBytes(of: propertyId.bigEndian) { prefix.append(contentsOf: $0) }
        return prefix
    }

    /// Parses a stored key; nil if it is not an edge key.
    init?(bytes raw: UnsafeRawBufferPointer) {
        guard raw.count == Self.byteCount, let kind = Kind(rawValue: raw[0]) else { return nil }
        func u32(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 << 8 | UInt32(raw[at + $1]) } }
        func u64(_ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 << 8 | UInt64(raw[at + $1]) } }
        self.init(kind: kind, entityId: u32(1), propertyId: u32(5), a: u64(9), b: u64(17))
    }

    init(kind: Kind, entityId: UInt32, propertyId: UInt32, a: Id, b: Id) {
        self.kind = kind
        self.entityId = entityId
        self.propertyId = propertyId
        self.a = a
        self.b = b
    }
}

/// The value of a `toManyList` edge: the target ids in the relation's order, as u64 LE.
enum EdgeList {
    static func encode(_ ids: [Id]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(ids.count * 8)
        for id in ids { withUnsafeBytes(of: id.littleEndian) { out.append(contentsOf: $0) } }
        return out
    }

    static func decode(_ raw: [UInt8]) throws(StrataError) -> [Id] {
        guard raw.count % 8 == 0 else { throw .corruptRelation(reason: "to-many list of \(raw.count) bytes") }
        return raw.withUnsafeBytes { b in (0..<(raw.count / 8)).map { Id(littleEndian: b.loadUnaligned(fromByteOffset: $0 * 8, as: Id.self)) } }
    }
}
