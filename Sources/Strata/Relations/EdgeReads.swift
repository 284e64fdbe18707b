import StrataStorage

/// Relations read as a transaction sees them (``TransactionReads`` does the reading; the writes
/// are ``EdgeMaintenance``'s).
extension Transaction {
    /// The ids of the sources a backlink of `owner` shows: one prefix scan of its relation's edges.
    func backlinkSources(_ schema: BacklinkSchema, of owner: Id) throws(StrataError) -> [Id] {
        let (kind, entityId, propertyId) = try schema.storedRelation(in: store)
        return try edgeSources(sharingPrefixWith: EdgeKey(kind: kind, entityId: entityId, propertyId: propertyId, a: owner, b: 0))
    }

    /// The ordered target ids of a standalone to-many.
    func toManyList(entityId: UInt32, propertyId: UInt32, source: Id) throws(StrataError) -> [Id] {
        let key = EdgeKey(kind: .toManyList, entityId: entityId, propertyId: propertyId, a: source, b: 0)
        // The list of a source that got its id in this transaction is in the overlay or nowhere.
        let isNew = isNewInTransaction(entityId: entityId, id: source)
        guard let raw = try edgeValue(key, engineHoldsNone: isNew) else { return [] }
        return try EdgeList.decode(raw)
    }
}
