import StrataStorage

/// The object layer's constants that reach disk, in one place (SPEC.md §Objects). Never renumber.
enum ObjectFormat {
    /// Version of the object layer's layout (catalog, keys, codec), stored under
    /// ``MetaKey/format``. A store with a higher version is refused. Version 2 added the object
    /// counts, version 3 the secondary indexes, version 4 unique indexes keyed by value (one
    /// entry per value, holding the id), version 5 case-insensitive indexes (entity record
    /// version 6); older stores are upgraded at their first writable open.
    static let version: UInt32 = 5
    /// First byte of every encoded object.
    static let codecVersion: UInt8 = 1
    /// First byte of every persisted entity record in the catalog. Version 2 added the target
    /// entity of relation properties, version 3 the entity flags, version 4 the index flags and
    /// default index values, version 5 the keyed-by-value flag of unique indexes, version 6 the
    /// case-insensitive flag of indexes; older records are still read.
    static let entityRecordVersion: UInt8 = 6
    /// Key space holding the objects: key = entity id (u32 BE) + object id (u64 BE).
    static let objectsKeySpace = "objects"
    /// Key space holding the catalog: format version, entity records, id counters.
    static let metaKeySpace = "meta"
    /// Key space holding relation edges (SPEC.md §Relations).
    static let edgesKeySpace = "edges"
    /// Key space holding the secondary indexes (SPEC.md §Indexes).
    static let indexesKeySpace = "indexes"
    /// Bytes in an object key.
    static let objectKeyBytes = 12
    /// Largest encoded object: the engine's value limit.
    static let maxObjectBytes = StorageLimits.maxValueBytes
    /// Largest property id; tags hold `id << 3 | wire` in a varint.
    static let maxPropertyId: UInt32 = 1 << 28
}

/// First byte of each key in the meta key space. Never renumber.
enum MetaKey: UInt8 {
    /// `[0x01]` → object format version, u32 LE.
    case format = 1
    /// `[0x02] + entity id (u32 BE)` → entity record.
    case entity = 2
    /// `[0x03] + entity id (u32 BE)` → the last object id assigned, u64 LE.
    case lastId = 3
    /// `[0x04] + entity id (u32 BE)` → how many objects of the entity are stored, u64 LE.
    case count = 4
    /// `[0x05]` → the version of the last migration step the store ran (``MigrationStep``),
    /// u64 LE; absent: 0.
    case schemaVersion = 5

    func key(entity: UInt32? = nil) -> [UInt8] {
        var k: [UInt8] = [rawValue]
        if let entity { withUnsafeBytes(of: entity.bigEndian) { k.append(contentsOf: $0) } }
        return k
    }
}
