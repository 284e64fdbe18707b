import StrataStorage

/// The scans queries and links run.
enum QueryRun {
    /// What a built query keeps between its runs, so that a lookup re-run with new parameter
    /// values does not plan and allocate again (a tenth of an indexed equality lookup each).
    final class Reuse {
        /// Whether `plan` is the plan of the query's current condition.
        var planMade = false
        var plan: IndexPlan?
        var matcher: ObjectMatcher?
        /// The fields a run reads for a given `fieldsNeeded`: the condition's own fields stay
        /// the same when parameters change.
        var fields: (needed: Set<Int>, all: Set<Int>)?
        /// The unique fast path's index key and its holder check's encoding, kept so that a
        /// lookup re-run with a new value allocates neither.
        var uniqueKey: [UInt8] = []
        var uniqueScratch: [UInt8] = []
    }

    /// Calls `body` for each object of `R` matching `condition` (among `candidates` when
    /// given), by increasing id, with the matcher holding its `fieldsNeeded`; then `bytes`
    /// with the object's stored bytes, which ends the scan by returning false.
    static func scan<R: Entity>(_ type: R.Type, condition: ConditionNode, fieldsNeeded: Set<Int>, candidates: Set<Id>? = nil,
                                store: Store, binding: EntityBinding? = nil, in t: Transaction, reuse: Reuse? = nil,
                                _ body: (Id, ObjectMatcher) throws(StrataError) -> Void = { _, _ in },
                                bytes: ((Id, UnsafeRawBufferPointer) throws(StrataError) -> Bool)? = nil) throws(StrataError) {
        let b: EntityBinding
        if let binding { b = binding } else { b = try store.binding(for: R.self).get() }
        // A link's objects depend on the snapshot: resolve them to ids for this run, and plan
        // the run afresh (the ids are part of the plan).
        let linked = condition.hasLinks
        let condition = linked ? try condition.resolvingLinks(binding: b, store: store, in: t) : condition
        var sortedCandidates = candidates?.sorted()
        if candidates == nil {
            let plan: IndexPlan?
            if let reuse, reuse.planMade, !linked {
                plan = reuse.plan
            } else {
                plan = IndexPlan.make(condition, binding: b)
                if !linked {
                    reuse?.plan = plan
                    reuse?.planMade = true
                }
            }
            if let plan { sortedCandidates = try plan.candidates(store: store, binding: b, in: t) }
        }
        try StrataError.decoding(entity: b.name, id: 0) {
            let fields: Set<Int>
            if let cached = reuse?.fields, cached.needed == fieldsNeeded {
                fields = cached.all
            } else {
                fields = condition.fields.union(fieldsNeeded)
                reuse?.fields = (fieldsNeeded, fields)
            }
            let m: ObjectMatcher
            if let cached = reuse?.matcher, cached.fieldsNeeded == fields, cached.binding === b {
                m = cached
                m.transaction = t
            } else {
                m = try ObjectMatcher(R.self, binding: b, store: store, transaction: t, fieldsNeeded: fields)
                reuse?.matcher = m
            }
            defer { m.transaction = store.latest }   // no transaction outlives its run through the cache
            /// False when `bytes` ends the scan.
            func visit(_ id: Id, _ raw: UnsafeRawBufferPointer) throws(StrataError) -> Bool {
                try m.load(raw, id: id)
                guard try m.matches(condition, id: id) else { return true }
                try body(id, m)
                return try bytes?(id, raw) ?? true
            }
            if let sortedCandidates {
                try t.forEachObject(sortedCandidates, binding: b) { id, raw in try visit(id, raw) }
            } else {
                try t.forEachObject(entityId: b.entityId) { id, raw in try visit(id, raw) }
            }
        }
    }

    /// Runs a caller's visitor, whose errors are any error, inside a scan that throws
    /// `StrataError`: a `StrataError` passes as it is, anything else aborts with its text.
    static func call<A>(_ body: (A) throws -> Bool, _ value: A) throws(StrataError) -> Bool {
        do { return try body(value) } catch let e as StrataError { throw e } catch {
            throw .transactionAborted(reason: "\(error)")
        }
    }

    static func matchingIds<R: Entity>(of type: R.Type, condition: ConditionNode, store: Store, in t: Transaction) throws(StrataError) -> [Id] {
        var ids: [Id] = []
        try scan(R.self, condition: condition, fieldsNeeded: [], store: store, in: t) { id, _ in ids.append(id) }
        return ids
    }

    /// The objects whose relation (`entityId`, `propertyId`) points at one of `targets`: one
    /// prefix scan of the relation's mirror edges (`kind`) per target. One target's sources
    /// come by increasing id (the source ends the edge key), so one target needs no sort.
    static func sources(pointingAt targets: [Id], kind: EdgeKey.Kind, entityId: UInt32, propertyId: UInt32,
                        store: Store, in t: Transaction) throws(StrataError) -> SortedIds {
        var lists: [[Id]] = []
        lists.reserveCapacity(targets.count)
        for target in targets {
            let prefix = EdgeKey(kind: kind, entityId: entityId, propertyId: propertyId, a: target, b: 0)
            lists.append(try t.edgeSources(sharingPrefixWith: prefix))
        }
        return SortedIds(union: lists)
    }

    /// The value of one property of each stored object of `R` among `ids`.
    static func fieldValues<R: Entity>(of type: R.Type, ids: Set<Id>, slot: PropertySlot, store: Store,
                                       in t: Transaction) throws(StrataError) -> [Id: QueryValue] {
        guard case let .field(f) = slot, R._strataSchema.properties[f].type != .toMany else {
            throw .invalidQuery(reason: "a query orders by stored properties and to-one relations only")
        }
        var values: [Id: QueryValue] = [:]
        try scan(R.self, condition: .all, fieldsNeeded: [f], candidates: ids, store: store, in: t) { id, m in
            values[id] = m.field(f).owned
        }
        return values
    }
}
