import StrataStorage

/// The fast path of a query that is one equality on a unique index keyed by value (`email ==
/// x`), run outside a transaction: one point read of the index entry, one of the object, no
/// snapshot, no scan machinery.
///
/// The two reads see the latest state, not one snapshot, so the object is checked against the
/// entry: it must still be stored and still hold the value (its index value is recomputed from
/// its bytes). Then the answer is exact at the moment of the object read. When a writer moved
/// the value in between, the caller falls back to the consistent path.
extension Query {
    enum UniqueLookup {
        /// No object holds the value.
        case none
        case found(T)
        /// Not answerable this way (not such a query, or a write moved the value between the
        /// two reads): run the query normally.
        case notApplicable
    }

    func uniqueLookup() throws(StrataError) -> UniqueLookup {
        guard orderings.isEmpty, TransactionContext.current(for: box.store) == nil else { return .notApplicable }
        let field: Int, value: QueryValue
        switch condition {
        // The same values IndexPlan reads through the index (a nil or NaN value is not there).
        case let .compare(f, .equal, v) where !v.isNaN && !v.isNullValue: (field, value) = (f, v)
        case let .string(f, .equal, literal, caseSensitive: true): (field, value) = (f, .bytes(Array(literal.utf8)))
        default: return .notApplicable
        }
        let store = box.store
        let b = try store.binding(for: T.self).get()
        guard let ix = b.indexes, field < b.propertyIds.count, let position = ix.position(ofProperty: b.propertyIds[field]),
              ix.properties[position].keyedByValue else {
            return .notApplicable
        }
        // The entry's key: the index header and the value (an index keyed by value holds no id).
        let entry = ix.properties[position].header + IndexKey.encode(value)
        var result: UniqueLookup = .notApplicable
        do {
            guard let id = try entry.withUnsafeBytes({ k in try store.indexHolder(ofKey: k, in: nil) }) else { return .none }
            try store.withObject(ObjectKey(entityId: b.entityId, id: id), in: nil) { bytes in
                // Still the value's holder? Its index key for this property must be the entry.
                var values = IndexValues()
                try ix.read(bytes, into: &values)
                let header = ix.properties[position].header.count
                let holds = values.withValue(position) { v in
                    v.count == entry.count - header && entry.withUnsafeBytes { UnsafeRawBufferPointer(rebasing: $0[header...]).elementsEqual(v) }
                }
                guard holds else { return }
                result = .found(try b.decode(T.self, id: id, from: bytes, store: store))
            }
        } catch {
            throw StrataError(error)
        }
        return result
    }
}
