import StrataStorage

extension Store {
    /// Opens a read replica of the store whose continuous archive `target` holds (its
    /// `StoreOptions.archive` target: a directory, or S3 through `StrataS3`): the first time,
    /// the archive's latest commit is restored into `directoryPath`; then the replica applies
    /// the commits the primary ships, every `pollInterval` seconds, as whole transactions in
    /// order, and `changes(of:)`, query observation and ``LiveResults`` fire as they would on
    /// the primary. Writes are refused (`StorageError.readOnly`); ``replicaStatus()`` reports
    /// how far it has come. Reopened, a replica goes on where it stopped. The replica knows the
    /// entities the primary had registered when it was opened.
    ///
    /// ```swift
    /// let replica = try Store.openReplica(following: DirectoryArchiveTarget(path: "/archive/shop"),
    ///                                     directoryPath: "/replicas/shop")
    /// for try await change in try replica.changes(of: Order.self) { print(change) }
    /// ```
    public static func openReplica(following target: any ArchiveTarget, directoryPath: String,
                                   options: StoreOptions = StoreOptions(), pollInterval: Double = 1) throws(StrataError) -> Store {
        var engineOptions = engineOptions(for: options)
        engineOptions.readOnly = false
        engineOptions.keySpaces = []
        engineOptions.archive = nil
        let engine: Engine
        do {
            engine = try Engine.openReplica(following: target, directoryPath: directoryPath, options: engineOptions, pollInterval: pollInterval)
        } catch {
            throw StrataError(error)
        }
        var storeOptions = options
        storeOptions.readOnly = true
        let store = try Store(engine: engine, directoryPath: directoryPath, options: storeOptions)
        engine.setReplicaObserver(priorValuesIn: [store.objects.id]) { [weak store] operations in store?.publishReplicated(operations) }
        return store
    }

    /// How far a replica has come; nil for a store that is not one.
    ///
    /// ```swift
    /// print(replica.replicaStatus()?.appliedSequence ?? 0)
    /// ```
    public func replicaStatus() -> ReplicaStatus? { engine.replicaStatus() }

    /// Makes a replica look at the archive now and waits until it has applied what it found.
    public func replicaCatchUp(timeout: Double = 60) throws(StrataError) {
        do { try engine.replicaCatchUp(timeout: timeout) } catch { throw StrataError(error) }
    }

    /// A batch the replica applied, as the change set a commit of it on the primary published.
    func publishReplicated(_ operations: [ReplicatedOperation]) {
        // An entity the primary registered since: its record joins the catalog, so that its
        // objects are named in change sets and its box binds.
        if operations.contains(where: { $0.keySpaceId == meta.id }),
           let (loaded, _, _) = try? FormatUpgrade.openCatalog(engine: engine, meta: meta, objects: objects, readOnly: true,
                                                               durability: durability) {
            catalog.withLock { c in
                for (name, record) in loaded.records where c.records[name] == nil { c.records[name] = record }
                for (entity, id) in loaded.lastIds { c.lastIds[entity] = max(c.lastIds[entity] ?? 0, id) }
            }
        }
        var changes = ChangeSet()
        var byEntity: [UInt32: ChangeSet.EntityChanges] = [:]
        for op in operations {
            if op.keySpaceId == objects.id, op.key.count == ObjectFormat.objectKeyBytes {
                op.key.withUnsafeBytes { key in
                    let entity = ObjectKey.entityId(fromKey: key), id = ObjectKey.id(fromKey: key)
                    switch (op.existed ?? false, op.isDeletion) {
                    case (false, false): byEntity[entity, default: .init()].inserted.append(id)
                    case (true, false): byEntity[entity, default: .init()].updated.append(id)
                    case (true, true): byEntity[entity, default: .init()].removed.append(id)
                    case (false, true): break
                    }
                }
            } else if let edges, op.keySpaceId == edges.id, let key = op.key.withUnsafeBytes({ EdgeKey(bytes: $0) }) {
                let relation = ChangeSet.Relation(entityId: key.entityId, propertyId: key.propertyId)
                changes.relations[relation, default: []].insert(key.kind == .toManyList ? key.a : key.b)
                if key.kind != .toManyList { changes.relationTargets[relation, default: []].insert(key.a) }
            }
        }
        for (entity, var c) in byEntity {
            c.inserted.sort()
            c.updated.sort()
            c.removed.sort()
            changes.entities[entity] = c
        }
        guard !changes.isEmpty else { return }
        // Numbered in apply order (one follower applies at a time), as commits are.
        if let sequence = writeLock.withLock({ changeHub.reserve() }) { changeHub.publish(sequence, changes) }
    }
}
