import StrataStorage

/// Opening a store's catalog and upgrading an older object format (SPEC.md §11, §13): version 1
/// kept no object counts (counted once by a scan), version 2 had no indexes key space, version 3
/// kept unique indexes one entry per object (rebuilt keyed by value at the first writable binding
/// of their type). A store written by a newer build is refused.
enum FormatUpgrade {
    /// Reads the catalog of the store whose engine is open, upgrading a writable store of an
    /// older object format to this build's (SPEC.md §11). Returns the catalog, whether it holds
    /// object counts, and the format version the session works with.
    static func openCatalog(engine: Engine, meta: KeySpace, objects: KeySpace, readOnly: Bool,
                            durability: Durability) throws -> (Catalog, countsMaintained: Bool, formatVersion: UInt32) {
        var catalog = Catalog()
        let formatKey = MetaKey.format.key()
        var found = ObjectFormat.version
        if let raw = try engine.get(formatKey, in: meta) {
            guard raw.count == 4 else { throw StrataError.corruptCatalog(reason: "format record has \(raw.count) bytes") }
            found = raw.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
            guard found <= ObjectFormat.version else {
                throw StrataError.unsupportedFormatVersion(found: found, supported: ObjectFormat.version)
            }
        } else if !readOnly {
            var batch = WriteBatch()
            withUnsafeBytes(of: ObjectFormat.version.littleEndian) { v in
                formatKey.withUnsafeBytes { batch.put($0, v, in: meta) }
            }
            try engine.write(batch, durability: durability)
        }
        for (key, value) in try engine.scan(meta) {
            guard key.count == 5, let kind = MetaKey(rawValue: key[0]) else { continue }
            let entityId = key[1...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            switch kind {
            case .entity:
                // Ids are given from 1 and the next one is this plus 1: 0 and 2^32 - 1 are
                // never written (a crafted key must not overflow the next id).
                guard entityId >= 1, entityId < UInt32.max else {
                    throw StrataError.corruptCatalog(reason: "entity id \(entityId) is out of range")
                }
                guard let record = EntityRecord(entityId: entityId, bytes: value) else {
                    throw StrataError.corruptCatalog(reason: "entity record \(entityId) does not parse")
                }
                catalog.records[record.name] = record
                catalog.nextEntityId = max(catalog.nextEntityId, entityId + 1)
            case .lastId:
                guard value.count == 8 else { throw StrataError.corruptCatalog(reason: "id counter of entity \(entityId)") }
                catalog.lastIds[entityId] = value.withUnsafeBytes { Id(littleEndian: $0.loadUnaligned(as: Id.self)) }
            case .format, .count, .schemaVersion:
                continue
            }
        }
        if found < 2 {
            // Version 1 kept no object counts: count once, by scanning, and record them.
            guard !readOnly else { return (catalog, false, found) }
            var batch = WriteBatch()
            for record in catalog.records.values {
                let it = try engine.makeIterator(in: objects, prefix: ObjectKey.prefix(entityId: record.entityId))
                try it.seekToFirst()
                var n: UInt64 = 0
                while it.isValid {
                    n += 1
                    try it.next()
                }
                batch.put(MetaKey.count.key(entity: record.entityId), withUnsafeBytes(of: n.littleEndian) { Array($0) }, in: meta)
            }
            batch.put(formatKey, withUnsafeBytes(of: ObjectFormat.version.littleEndian) { Array($0) }, in: meta)
            try engine.write(batch, durability: durability)
        } else if found < ObjectFormat.version && !readOnly {
            // Version 2 → 3 adds the indexes key space, opened above; nothing else changes. Version
            // 3 → 4 keys unique indexes by value: each entity's are rebuilt when a writable
            // session first binds its type (IndexBuilder), and read as they are until then. Version
            // 4 → 5 only allows entity records of version 6 (case-insensitive indexes).
            var batch = WriteBatch()
            batch.put(formatKey, withUnsafeBytes(of: ObjectFormat.version.littleEndian) { Array($0) }, in: meta)
            try engine.write(batch, durability: durability)
        }
        for record in catalog.records.values {
            if let ix = EntityIndexes(record) { catalog.indexes[record.entityId] = ix }
        }
        return (catalog, true, readOnly ? found : ObjectFormat.version)
    }
}
