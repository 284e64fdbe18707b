import StrataStorage

/// Index entries are written with the object, into the transaction's overlay: every write of an
/// indexed object replaces the entries of its values as the transaction saw them by those of its
/// new values. Since each write starts from the transaction's own view, the overlay's entries are
/// exact at every moment: unique checks and queries inside the transaction read them merged over
/// the engine's, and the commit writes them with the objects.
extension Transaction {
    /// Replaces object `id`'s entries for `old` values (nil: it had none, a new object) by those
    /// for `new` (nil: it has none, a removal). Only the properties whose value changed move.
    func updateIndexEntries(_ ix: EntityIndexes, id: Id, old: [[UInt8]]?, new: [[UInt8]]?) throws(StrataError) {
        guard let overlay else { throw .readOnly }
        for i in ix.properties.indices where old?[i] != new?[i] {
            if let v = old?[i] { overlay.write(.indexes, key: ix.key(i, value: v, id: id), value: nil) }
            if let v = new?[i] { overlay.write(.indexes, key: ix.key(i, value: v, id: id), value: ix.entryValue(i, id: id)) }
        }
    }

    /// Throws when `values` (the indexed values of object `id`, about to be written) hold a value
    /// too large to index, or a `@Unique` value another object holds as this transaction sees
    /// the store. `old`: the values the object held (nil for a new object); an unchanged unique
    /// value needs no check.
    func checkIndexedValues(_ values: [[UInt8]], old: [[UInt8]]?, id: Id, indexes ix: EntityIndexes) throws(StrataError) {
        for (i, p) in ix.properties.enumerated() {
            try ix.checkSize(i, value: values[i])
            guard p.isUnique, old?[i] != values[i] else { continue }
            for holder in try store.indexedIds(ofValue: p.header + values[i], keyedByValue: p.keyedByValue, in: self) where holder != id {
                throw .uniqueViolation(entity: ix.entityName, property: p.name, value: IndexValueText.describe(values[i], type: p.type),
                                       existing: holder)
            }
        }
    }
}

extension EntityIndexes {
    /// ``values(of:)`` with decoding failures named after the object.
    func values(of bytes: UnsafeRawBufferPointer, id: Id) throws(StrataError) -> [[UInt8]] {
        do { return try values(of: bytes) } catch let failure as CodecFailure {
            throw .corruptObject(entity: entityName, id: id, reason: failure.reason)
        } catch {
            throw .corruptObject(entity: entityName, id: id, reason: "\(error)")
        }
    }

    /// ``values(of:id:)`` of an object's bytes held in an array.
    func values(of bytes: [UInt8], id: Id) throws(StrataError) -> [[UInt8]] {
        do { return try bytes.withUnsafeBytes { raw in try values(of: raw, id: id) } } catch let e as StrataError {
            throw e
        } catch {
            throw StrataError(error)
        }
    }
}
