import StrataStorage

/// Index entries are written with the object, into the transaction's overlay: every write of an
/// indexed object replaces the entries of its values as the transaction saw them by those of its
/// new values. Since each write starts from the transaction's own view, the overlay's entries are
/// exact at every moment: unique checks and queries inside the transaction read them merged over
/// the engine's, and the commit writes them with the objects.
extension Transaction {
    /// Replaces object `id`'s entries for `old` values (nil: it had none, a new object) by those
    /// for `new` (nil: it has none, a removal). Only the properties whose value changed move.
    func updateIndexEntries(_ ix: EntityIndexes, id: Id, old: IndexValues?, new: IndexValues?) throws(StrataError) {
        guard let overlay else { throw .readOnly }
        for i in ix.properties.indices {
            if let old, let new, old.valueEquals(i, new) { continue }
            if let old {
                old.withValue(i) { ix.setKey(&keyScratch, i, value: $0, id: id) }
                keyScratch.withUnsafeBytes { overlay.write(.indexes, key: $0, value: nil) }
            }
            if let new {
                new.withValue(i) { ix.setKey(&keyScratch, i, value: $0, id: id) }
                keyScratch.withUnsafeBytes { k in ix.withEntryValue(i, id: id) { overlay.write(.indexes, key: k, value: $0) } }
            }
        }
    }

    /// Throws when `values` (the indexed values of object `id`, about to be written) hold a value
    /// too large to index, or a `@Unique` value another object holds as this transaction sees
    /// the store. `old`: the values the object held (nil for a new object); an unchanged unique
    /// value needs no check.
    func checkIndexedValues(_ values: IndexValues, old: IndexValues?, id: Id, indexes ix: EntityIndexes) throws(StrataError) {
        for i in ix.properties.indices {
            try ix.checkSize(i, valueBytes: values.size(i))
            guard ix.properties[i].isUnique else { continue }
            if let old, old.valueEquals(i, values) { continue }
            let holder: Id?
            if ix.properties[i].keyedByValue {
                values.withValue(i) { ix.setKey(&keyScratch, i, value: $0, id: id) }
                do { holder = try keyScratch.withUnsafeBytes { try indexHolder(ofKey: $0) } } catch { throw StrataError(error) }
            } else {
                var entry = ix.properties[i].header
                values.withValue(i) { entry.append(contentsOf: $0) }
                holder = try indexedIds(ofValue: entry, keyedByValue: false).first { $0 != id }
            }
            if let holder, holder != id {
                let p = ix.properties[i]
                throw .uniqueViolation(entity: ix.entityName, property: p.name,
                                       value: IndexValueText.describe(values.array(i), type: p.type), existing: holder)
            }
        }
    }

    /// ``EntityIndexes/read(_:into:)`` of the object `id`'s bytes into a buffer from the
    /// transaction's pool (give it back with ``recycle(_:)``), decoding failures named after
    /// the object.
    func indexValues(of bytes: UnsafeRawBufferPointer, id: Id, indexes ix: EntityIndexes) throws(StrataError) -> IndexValues {
        var values = indexValuePool.popLast() ?? IndexValues()
        do { try ix.read(bytes, into: &values) } catch let failure as CodecFailure {
            throw .corruptObject(entity: ix.entityName, id: id, reason: failure.reason)
        } catch {
            throw .corruptObject(entity: ix.entityName, id: id, reason: "\(error)")
        }
        return values
    }

    /// ``indexValues(of:id:indexes:)`` of bytes held in an array.
    func indexValues(of bytes: [UInt8], id: Id, indexes ix: EntityIndexes) throws(StrataError) -> IndexValues {
        do { return try bytes.withUnsafeBytes { try indexValues(of: $0, id: id, indexes: ix) } } catch { throw StrataError(error) }
    }

    /// Returns a buffer of ``indexValues(of:id:indexes:)`` to the pool.
    func recycle(_ values: consuming IndexValues?) {
        if let values, indexValuePool.count < 8 { indexValuePool.append(values) }
    }
}
