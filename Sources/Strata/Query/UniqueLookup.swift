import StrataStorage

/// The fast path of a query that is one equality on a unique index keyed by value (`email ==
/// x`), run outside a transaction: one point read of the index entry, one of the object, no
/// snapshot, no scan machinery.
///
/// The two reads see the latest state, not one snapshot, so the object is checked against the
/// entry: it must still be stored and still hold the value (its index value is recomputed from
/// its bytes). Then the answer is exact at the moment of the object read. When a writer moved
/// the value in between, the caller falls back to the consistent path.
///
/// Not generic in what it returns: it hands the holder's bytes to the caller, which decodes
/// them (``Query/findFirst()`` does so in the caller's specialised code). A result type nested
/// in `Query<T>`, or an `Optional<T>` built here, costs a runtime metadata lookup on every call,
/// a twentieth of the whole lookup.
extension Query {
    /// Runs the fast path when it applies. Calls `found` at most once, with the holder's binding,
    /// id and stored bytes, and returns true when it answered (a holder found, or none); false
    /// when the query is not of that form or a writer moved the value between the two reads:
    /// run it normally.
    @usableFromInline
    func visitUniqueMatch(_ found: (EntityBinding, Id, UnsafeRawBufferPointer) throws -> Void) throws(StrataError) -> Bool {
        guard orderings.isEmpty else { return false }
        let store = self.store
        guard TransactionContext.current(for: store) == nil else { return false }
        let b = try binding()
        guard let ix = b.indexes else { return false }
        // The entry's key: the index header and the value (an index keyed by value holds no id),
        // built in the query's buffer. The same values IndexPlan reads through the index (a nil
        // or NaN value is not there).
        var key = reuse.uniqueKey
        reuse.uniqueKey = []   // unique, so appends do not copy
        defer { reuse.uniqueKey = key }
        key.removeAll(keepingCapacity: true)
        let field: Int
        switch condition {
        case let .compare(f, .equal, v) where !v.isNaN && !v.isNullValue:
            guard let position = Self.keyedPosition(f, b, ix) else { return false }
            field = position
            key.append(contentsOf: ix.properties[position].header)
            IndexKey.encode(v, into: &key)
        case let .string(f, .equal, literal, caseSensitive: true):
            guard let position = Self.keyedPosition(f, b, ix) else { return false }
            field = position
            key.append(contentsOf: ix.properties[position].header)
            var text = literal
            text.withUTF8 { IndexKey.encode(FieldView.bytes(UnsafeRawBufferPointer($0)), into: &key) }
        default:
            return false
        }
        var scratch = reuse.uniqueScratch
        reuse.uniqueScratch = []
        defer { reuse.uniqueScratch = scratch }
        var answered = true
        try StrataError.decoding(entity: b.name, id: 0) {
            try key.withUnsafeBytes { k throws in
                guard let id = try store.latest.indexHolder(ofKey: k) else { return }
                let stored = try store.latest.withObject(ObjectKey(entityId: b.entityId, id: id)) { bytes in
                    // Still the value's holder? Its index value for this property must be the entry's.
                    let value = UnsafeRawBufferPointer(rebasing: k[IndexKey.headerBytes...])
                    guard try ix.holds(bytes, position: field, value: value, scratch: &scratch) else {
                        answered = false
                        return
                    }
                    try found(b, id, bytes)
                }
                // The entry named an object removed since: a writer is between its two writes.
                if !stored { answered = false }
            }
        }
        return answered
    }

    /// The position among `ix`'s indexes of the index led by field `f`, when it is keyed by value.
    private static func keyedPosition(_ f: Int, _ b: EntityBinding, _ ix: EntityIndexes) -> Int? {
        guard f < b.propertyIds.count, let position = ix.position(ofProperty: b.propertyIds[f]),
              ix.properties[position].keyedByValue else { return nil }
        return position
    }
}
