import StrataStorage

/// Makes the store's indexes match what a type declares, when the store first binds the type:
/// builds the indexes of properties that gained `@Index`/`@Unique` or changed between them, and
/// those of an older layout (one pass over the entity's objects, which also checks uniqueness),
/// and drops the entries of indexes no longer declared. Runs with the store's write lock held,
/// so no write interleaves.
///
/// Entries are written in chunks before the entity record that lists the index: a crash in
/// between leaves the index unlisted, and the next build first clears what it finds.
enum IndexBuilder {
    private static let chunk = 16_384

    /// Updates `record`'s index flags and defaults to those `schema` declares, writing and
    /// deleting index entries as needed. `encodedDefault` is the encoding of a fresh `init()`
    /// object: the values objects stored without a field read as.
    static func reconcile(_ record: inout EntityRecord, schema: EntitySchema, propertyIds: [UInt32],
                          encodedDefault: [UInt8], store: Store) throws(StrataError) {
        var wanted = record
        for i in wanted.properties.indices {
            wanted.properties[i].index = .none
            wanted.properties[i].uniqueKeyedByValue = false
            wanted.properties[i].indexWith = []
        }
        for (declared, id) in zip(schema.properties, propertyIds) where declared.index != .none {
            if declared.index == .caseInsensitive && declared.type != .string {
                throw .invalidIndex(entity: record.name, property: declared.name,
                                    reason: "a case-insensitive index needs a String, not \(declared.type)")
            }
            guard let i = wanted.properties.firstIndex(where: { $0.id == id }) else { continue }
            wanted.properties[i].index = declared.index
            wanted.properties[i].uniqueKeyedByValue = declared.index == .unique
            if !declared.indexWith.isEmpty {
                guard declared.index == .index, declared.type != .toMany, declared.indexWith.count <= EntityRecord.maxComponents else {
                    throw .invalidIndex(entity: record.name, property: declared.name,
                                        reason: "a composite index is a plain @Index of a stored value or to-one, with at most \(EntityRecord.maxComponents) more properties")
                }
                for name in declared.indexWith {
                    guard let k = schema.properties.firstIndex(where: { $0.name == name }), name != declared.name,
                          schema.properties[k].type != .toMany else {
                        throw .invalidIndex(entity: record.name, property: declared.name,
                                            reason: "its composite index names \(name), which is not another stored property or to-one")
                    }
                    wanted.properties[i].indexWith.append(propertyIds[k])
                }
            } else if declared.type.isRelation {
                throw .invalidIndex(entity: record.name, property: declared.name, reason: "a relation is indexed only as the first property of a composite index")
            }
        }
        // Defaults: the index encodings of a fresh object's values.
        if let ix = EntityIndexes(wanted) {
            let defaults: [[UInt8]]
            do { defaults = try encodedDefault.withUnsafeBytes { try ix.values(of: $0) } } catch {
                throw .corruptObject(entity: record.name, id: 0, reason: "the default object does not encode: \(error)")
            }
            for (p, value) in zip(ix.properties, defaults) {
                if let i = wanted.properties.firstIndex(where: { $0.id == p.propertyId }) { wanted.properties[i].indexDefault = value }
            }
        }
        guard wanted != record else { return }
        if store.isReadOnly || store.indexSpace == nil {
            // Nothing can be written: queries use only the indexes already built.
            return
        }
        var toBuild: [EntityRecord.Property] = []
        var toDrop: [EntityRecord.Property] = []
        for (old, new) in zip(record.properties, wanted.properties) {
            // Between `@Index` and `@Unique` the layout changes (one entry per object or per
            // value), as it does for a unique index of record version 4.
            let rebuilt = old.index != .none && new.index != .none
                && (old.indexDefault != new.indexDefault || old.index != new.index || old.uniqueKeyedByValue != new.uniqueKeyedByValue
                    || old.indexWith != new.indexWith)
            if old.index != .none && new.index == .none { toDrop.append(old) }
            if new.index != .none && (old.index == .none || rebuilt) { toBuild.append(new) }
        }
        // Builds first, so that a refused unique index leaves every index not rebuilt as it
        // was. (A rebuild clears its old entries: a refused one is no longer listed.)
        if !toBuild.isEmpty {
            do {
                try build(wanted, toBuild, store: store)
            } catch {
                if case .uniqueViolation = error {
                    for built in toBuild { try drop(wanted, built, store: store) }
                    for i in record.properties.indices where toBuild.contains(where: { $0.id == record.properties[i].id }) {
                        record.properties[i].index = .none
                        record.properties[i].indexDefault = []
                        record.properties[i].uniqueKeyedByValue = false
                    }
                }
                throw error
            }
        }
        for p in toDrop { try drop(record, p, store: store) }
        record = wanted
    }

    private static func report(_ store: Store, _ record: EntityRecord, _ p: EntityRecord.Property, _ phase: IndexProgress.Phase,
                               done: Int, total: Int) {
        guard let progress = store.indexProgress else { return }
        let value = IndexProgress(entity: record.name, property: p.name, phase: phase, done: done, total: total)
        // Marked as a callback: a store call from inside it is refused (the catalog and write
        // locks are this thread's until the build ends).
        CallbackScope.run("the store's indexProgress") { progress(value) }
    }

    /// The entries of a build or drop, written every `chunk` objects so that neither holds one
    /// huge batch; `objectDone` reports progress after each chunk written.
    private struct ChunkedWriter {
        let store: Store
        var batch = WriteBatch()
        private var pending = 0

        init(store: Store) { self.store = store }

        mutating func objectDone(_ chunkWritten: () -> Void) throws(StrataError) {
            pending += 1
            guard pending == chunk else { return }
            try write()
            chunkWritten()
        }

        mutating func finish() throws(StrataError) {
            if pending > 0 { try write() }
        }

        private mutating func write() throws(StrataError) {
            do { try store.engine.write(batch, durability: store.durability) } catch { throw StrataError(error) }
            batch = WriteBatch()
            pending = 0
        }
    }

    /// Deletes every entry of one property's index.
    private static func drop(_ record: EntityRecord, _ p: EntityRecord.Property, store: Store) throws(StrataError) {
        guard let space = store.indexSpace else { return }
        var done = 0
        do {
            let it = try store.engine.makeIterator(in: space, prefix: IndexKey.header(entityId: record.entityId, propertyId: p.id))
            try it.seekToFirst()
            var writer = ChunkedWriter(store: store)
            while it.isValid {
                writer.batch.delete(Array(it.key), in: space)
                done += 1
                try writer.objectDone { report(store, record, p, .dropping, done: done, total: 0) }
                try it.next()
            }
            try writer.finish()
        } catch {
            throw StrataError(error)
        }
        report(store, record, p, .dropping, done: done, total: done)
    }

    /// Writes the entries of `properties` for every stored object of the entity. Throws
    /// ``StrataError/uniqueViolation(entity:property:value:existing:)`` when a second object
    /// holds a value of a unique one (entries keyed by value would silently keep only one).
    private static func build(_ record: EntityRecord, _ properties: [EntityRecord.Property], store: Store) throws(StrataError) {
        guard let space = store.indexSpace, let all = EntityIndexes(record) else { return }
        // Leftovers of a build a crash interrupted.
        for p in properties { try drop(record, p, store: store) }
        let positions = properties.compactMap { all.position(ofProperty: $0.id) }
        /// The entries of unique indexes in the chunk not written yet, with the object holding
        /// each: those of earlier chunks are read back from the engine instead, so that memory
        /// stays bounded by the chunk.
        var unwritten: [[UInt8]: Id] = [:]
        let total = Int(try store.latest.storedCount(entityId: record.entityId))
        var done = 0
        do {
            let it = try store.engine.makeIterator(in: store.objects, prefix: ObjectKey.prefix(entityId: record.entityId))
            try it.seekToFirst()
            var writer = ChunkedWriter(store: store)
            while it.isValid {
                let id = ObjectKey.id(fromKey: it.key)
                let values: [[UInt8]]
                do { values = try all.values(of: it.value) } catch let failure as CodecFailure {
                    throw StrataError.corruptObject(entity: record.name, id: id, reason: failure.reason)
                }
                for i in positions {
                    try all.checkSize(i, value: values[i])
                    let key = all.key(i, value: values[i], id: id)
                    if all.properties[i].keyedByValue {
                        // This build deleted the index's old entries first: an entry found is
                        // one it wrote, for an object holding the same value.
                        let written = try store.latest.indexedIds(ofValue: key, keyedByValue: true)
                        if let first = unwritten[key] ?? written.first {
                            throw StrataError.uniqueViolation(entity: record.name, property: all.properties[i].name,
                                                              value: IndexValueText.describe(values[i], type: all.properties[i].type),
                                                              existing: first)
                        }
                        unwritten[key] = id
                    }
                    writer.batch.put(key, all.entryValue(i, id: id), in: space)
                }
                done += 1
                try writer.objectDone {
                    unwritten.removeAll(keepingCapacity: true)
                    for p in properties { report(store, record, p, .building, done: done, total: total) }
                }
                try it.next()
            }
            try writer.finish()
        } catch {
            throw StrataError(error)
        }
        for p in properties { report(store, record, p, .building, done: done, total: total) }
    }
}
