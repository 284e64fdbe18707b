/// A to-many relation: a lazily loaded, cached, ordered collection of related objects with
/// change tracking. Either standalone (its own edges, N:M, insertion order kept) or a
/// `@Backlink` view of another entity's `ToOne` (1:N) or standalone `ToMany` (N:M).
///
/// ```swift
/// student.teachers.append(teacher)          // new teachers are put by applyToDb()
/// student.teachers.remove(at: 0)
/// try student.teachers.applyToDb()           // writes only the changes
/// for s in teacher.students { … }            // backlink: one prefix scan
/// customer.orders.replace([newOrder, oldOrder]); try customer.orders.applyToDb()
/// ```
///
/// Resolved on first access, then cached: later changes made elsewhere are not seen until
/// ``reset()``. Removing objects from a to-many never removes the objects. Modifying a
/// backlink of a `ToOne` rewrites that `ToOne` in the objects added or removed, and puts them.
public final class ToMany<Element: Entity>: RandomAccessCollection, RangeReplaceableCollection,
    ExpressibleByNilLiteral, ExpressibleByArrayLiteral {
    private(set) var role = ToManyRole.unattached
    private(set) var store: Store?
    private(set) var ownerId: Id = 0
    // Visible to the inlinable collection accessors, so that iterating is specialised in the
    // caller: unspecialised, each element access copied `items` through runtime metadata
    // lookups. Unchecked exclusivity: accesses from other modules would be checked at run time.
    @usableFromInline @exclusivity(unchecked) var items: [Element] = []
    @usableFromInline @exclusivity(unchecked) var isLoaded = true
    /// Ids as last read from or written to the store: what `applyToDb` compares against.
    private var baseline: [Id] = []
    /// Whether `baseline` is what the relation was read as (false for a relation never read
    /// or stored: its elements then replace whatever the store holds).
    private var baselineKnown = false
    private(set) var hasChanges = false
    /// Why the last lazy load failed: the collection's accessors cannot throw, so a relation
    /// whose elements could not be read (a damaged object, a closed store) reads as empty and
    /// says why here; nil once a load works. ``load()`` throws the error instead, and
    /// ``applyToDb()`` refuses to write changes made over a load that failed.
    ///
    /// ```swift
    /// for t in student.teachers { print(t.name) }
    /// if let error = student.teachers.loadError { print("teachers not read: \(error)") }
    /// ```
    public var loadError: StrataError? { loadFailure?.error }
    /// Boxed: one word in every `ToMany` (an inline `StrataError?` made every release of one
    /// destroy it through the runtime).
    private var loadFailure: LoadFailure?

    public required init() {}
    public init(nilLiteral: ()) {}
    public required init(arrayLiteral elements: Element...) {
        items = elements
        hasChanges = !elements.isEmpty
    }

    // MARK: Collection

    public typealias Index = Int
    public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { loaded.count }
    @inlinable public subscript(position: Int) -> Element { loaded[position] }
    /// Iterates the loaded elements themselves, not through this collection's indices.
    @inlinable public func makeIterator() -> IndexingIterator<[Element]> { loaded.makeIterator() }

    @inlinable var loaded: [Element] {
        if !isLoaded { loadLazily() }
        return items
    }

    /// A load for an accessor that cannot throw: the failure goes to ``loadError``.
    @usableFromInline func loadLazily() {
        do { try load() } catch { loadFailure = LoadFailure(error) }
    }

    public func replaceSubrange<C: Collection>(_ subrange: Range<Int>, with newElements: C) where C.Element == Element {
        if !isLoaded { loadLazily() }
        items.replaceSubrange(subrange, with: newElements)
        hasChanges = true
    }

    // Class methods (not the protocol's `mutating` ones), so that a to-many held by a `let`
    // struct or class can be edited, as ObjectBox's examples do.

    public func append(_ element: Element) { replaceSubrange(endIndex..<endIndex, with: CollectionOfOne(element)) }
    public func append<S: Sequence>(contentsOf elements: S) where S.Element == Element {
        replaceSubrange(endIndex..<endIndex, with: Array(elements))
    }
    public func insert(_ element: Element, at i: Int) { replaceSubrange(i..<i, with: CollectionOfOne(element)) }
    @discardableResult
    public func remove(at i: Int) -> Element {
        let e = self[i]
        replaceSubrange(i..<(i + 1), with: EmptyCollection())
        return e
    }
    public func removeAll(where shouldRemove: (Element) throws -> Bool) rethrows {
        let kept = try loaded.filter { !(try shouldRemove($0)) }
        replaceSubrange(startIndex..<endIndex, with: kept)
    }
    public func removeAll() { replaceSubrange(startIndex..<endIndex, with: EmptyCollection()) }

    /// Replaces every element (pass `[]` to clear the relation).
    public func replace<S: Sequence>(_ elements: S) where S.Element == Element {
        replaceSubrange(startIndex..<endIndex, with: Array(elements))
    }

    // MARK: store

    /// Reads the relation from the store now (it is otherwise read on first access); throws
    /// what the read throws.
    public func load() throws(StrataError) {
        guard let store else {
            isLoaded = true
            return
        }
        // The ids and their objects from one state: the running transaction, or one snapshot.
        let loaded: (ids: [Id], items: [Element])? = try store.read(consistent: true) { t in
            guard let ids = try storedIds(store: store, in: t) else { return nil }
            return (ids, try t.objects(Element.self, ids, binding: try store.binding(for: Element.self).get()))
        }
        guard let loaded else {
            isLoaded = true
            return
        }
        items = loaded.items
        if loadFailure != nil { loadFailure = nil }
        // Every id found (the usual case): the ids are the baseline, in order, without reading
        // each element's id back through its conformance.
        baseline = items.count == loaded.ids.count ? loaded.ids : items.map { $0._strataId }
        baselineKnown = true
        isLoaded = true
        hasChanges = false
    }

    /// Drops the cache and any unapplied change: the next access reads the store again.
    public func reset() {
        guard store != nil else { return }
        loadFailure = nil
        items = []
        baseline = []
        baselineKnown = false
        isLoaded = false
        hasChanges = false
    }

    /// Whether the elements are in memory, so that iterating does no store read.
    public var isResolved: Bool { isLoaded }

    /// Writes the changes made since the relation was read (or last applied) in one
    /// transaction, putting new objects first. Only the changes are written, against what the
    /// store holds now: elements added and removed here are added and removed there, an element
    /// removed from the store meanwhile is not brought back (adding one that is not stored throws
    /// ``StrataError/objectNotFound(entity:id:)``), and elements others added meanwhile stay (and
    /// appear here). If the enclosing transaction rolls back, the changes are unsaved again.
    public func applyToDb() throws(StrataError) {
        // Changes made over a failed load would replace elements never seen.
        if let loadError, !isLoaded { throw loadError }
        guard let store, ownerId != 0 else {
            throw .invalidRelation(reason: "ToMany<\(Element.self)> has no stored owner: put the object holding it first")
        }
        try store.write { t in try apply(in: t, store: store) }
    }

    /// The ids the store holds for this relation; nil when unattached.
    private func storedIds(store: Store, in t: Transaction) throws(StrataError) -> [Id]? {
        switch role {
        case .unattached:
            return nil
        case let .standalone(entityId, propertyId):
            return try t.toManyList(entityId: entityId, propertyId: propertyId, source: ownerId)
        case let .backlink(owner, index):
            return try t.backlinkSources(owner.backlinks[index], of: ownerId)
        }
    }

    func attachStandalone(store: Store, entityId: UInt32, propertyId: UInt32, ownerId: Id) {
        let wasUnattached = self.store == nil
        self.store = store
        self.ownerId = ownerId
        role = .standalone(entityId: entityId, propertyId: propertyId)
        // Unattached, `items` only changes along with `hasChanges`: no changes means no items.
        if wasUnattached && !hasChanges { isLoaded = false }
    }

    /// Attaches this to-many as the `index`th backlink of `owner`'s entity.
    func attachBacklink(store: Store, owner: EntityBinding, index: Int, ownerId: Id) {
        let wasUnattached = self.store == nil
        self.store = store
        self.ownerId = ownerId
        role = .backlink(owner, index: index)
        // Unattached, `items` only changes along with `hasChanges`: no changes means no items.
        if wasUnattached && !hasChanges { isLoaded = false }
    }

    /// Everything a put or an apply may change, to be put back by a rollback.
    private func savedState() -> () -> Void {
        let (role, store, ownerId, items, isLoaded) = (self.role, self.store, self.ownerId, self.items, self.isLoaded)
        let (baseline, baselineKnown, hasChanges) = (self.baseline, self.baselineKnown, self.hasChanges)
        return { [self] in
            self.role = role
            self.store = store
            self.ownerId = ownerId
            self.items = items
            self.isLoaded = isLoaded
            self.baseline = baseline
            self.baselineKnown = baselineKnown
            self.hasChanges = hasChanges
        }
    }

    /// Before a put attaches this relation to its owner: a rollback detaches it again (an owner
    /// whose id is taken back must not keep a relation naming that id). Nothing to log when the
    /// attachment does not change, or when `apply` will log the whole state.
    func logAttachment(in t: Transaction) {
        if hasChanges { return }
        if case .unattached = role {
            // A new owner's empty relation (unattached and unchanged, it holds no items):
            // detaching it is all a rollback needs.
            if store == nil && !baselineKnown {
                t.logUndo(.relation(self))
                return
            }
        } else if self.store != nil, ownerId != 0 {
            return
        }
        t.logUndo(.restore(savedState()))
    }

    /// A loaded standalone to-many whose elements may have been edited in place: if they are
    /// embedded, the owner's put (or ``applyToDb()``) writes those that changed, as it writes an
    /// embedded to-one target.
    var mayHoldEditedElements: Bool {
        guard isLoaded, !items.isEmpty, case .standalone = role else { return false }
        return true
    }

    /// Puts each element that was stored in the list (`stored`) and whose encoding now differs
    /// from the stored bytes: an embedded object edited through its parent. Unchanged ones are
    /// not rewritten (no write, no change notification).
    private func writeEditedElements(in t: Transaction, element: EntityBinding, stored: [Id]) throws(StrataError) {
        let listed = Set(stored)
        var encoded: [UInt8] = []
        for i in items.indices where items[i]._strataId != 0 && listed.contains(items[i]._strataId) {
            encoded.removeAll(keepingCapacity: true)
            try element.encode(items[i], into: &encoded)
            if try t.objectBytes(ObjectKey(entityId: element.entityId, id: items[i]._strataId)) != encoded {
                try t.put(&items[i], binding: element)
            }
        }
    }

    /// The ids the relation should hold: `mine` (the elements, new ones put) applied to
    /// `current` (what the store holds now) as changes against `baseline` (what it was read
    /// as; nil: never read, so `mine` replaces `current`). Returns the ids in order and those
    /// the result adds to `current`, which must exist.
    static func reconcile(mine: [Id], baseline: [Id]?, current: [Id]) -> (result: [Id], extra: [Id]) {
        guard let baseline else { return (mine, []) }
        let base = Set(baseline), now = Set(current), kept = Set(mine)
        // Mine, less what left the store's list meanwhile (removed objects never come back),
        // then what others added meanwhile.
        let result = mine.filter { now.contains($0) || !base.contains($0) }
        let extra = current.filter { !base.contains($0) && !kept.contains($0) }
        return (result + extra, extra)
    }

    /// Writes pending changes inside `t`: new elements are put, then the edges follow
    /// (``EdgeMaintenance``).
    func apply(in t: Transaction, store: Store) throws(StrataError) {
        guard hasChanges else {
            // The list is as stored; embedded elements edited in place are still written.
            guard mayHoldEditedElements else { return }
            let element = try store.binding(for: Element.self).get()
            if element.isEmbedded { try writeEditedElements(in: t, element: element, stored: try storedIds(store: store, in: t) ?? []) }
            return
        }
        t.logUndo(.restore(savedState()))
        let element = try store.binding(for: Element.self).get()
        let rules = t.edgeRules
        // The relation as the store holds it now.
        let current = try storedIds(store: store, in: t) ?? []
        let known: [Id]? = baselineKnown ? baseline : nil
        var result: [Id]
        var extra: [Id]
        switch role {
        case .unattached:
            return
        case let .standalone(entityId, propertyId):
            for i in items.indices where items[i]._strataId == 0 { try t.put(&items[i], binding: element) }
            (result, extra) = Self.reconcile(mine: items.map { $0._strataId }, baseline: known, current: current)
            for id in Set(result).subtracting(current) {
                try rules.checkNewTarget(entity: Element._strataEntityName, entityId: element.entityId, id: id,
                                         isEmbedded: element.isEmbedded, owner: (entityId, ownerId))
            }
            try rules.setToManyList(entityId: entityId, propertyId: propertyId, owner: ownerId, from: current, to: result,
                                    embeddedTarget: element.isEmbedded ? Element._strataEntityName : nil)
            if element.isEmbedded { try writeEditedElements(in: t, element: element, stored: current) }
        case let .backlink(owner, index):
            let schema = owner.backlinks[index]
            let (kind, entityId, propertyId) = try schema.storedRelation(in: store)
            guard entityId != 0 || items.isEmpty else {
                throw .unknownRelation(entity: schema.source, property: schema.sourceProperty)
            }
            let field = Element._strataSchema.properties.firstIndex { $0.name == schema.sourceProperty }
            guard let field else { throw .unknownRelation(entity: schema.source, property: schema.sourceProperty) }
            let then = Set(current)
            // Changes are judged against what the relation was read as (what the store holds,
            // for one never read); only sources still in the relation are taken out of it.
            let base = known.map(Set.init) ?? then
            let removed = base.subtracting(items.map { $0._strataId }).intersection(then)
            var added = Set<Id>()
            if kind == .toOneBacklink {
                // Rewrite the ToOne of every object added or removed, and put it (a stale element
                // removed from the store meanwhile fails its put: it is not brought back).
                for i in items.indices where items[i]._strataId == 0 || !base.contains(items[i]._strataId) {
                    try RelationVisitor.assignToOne(of: &items[i], field: field, to: ownerId, store: store)
                    try t.put(&items[i], binding: element)
                    added.insert(items[i]._strataId)
                }
                for id in removed.sorted() {
                    guard var source = try Self.decoded(t.object(Element.self, id, binding: element)) else { continue }
                    try RelationVisitor.assignToOne(of: &source, field: field, to: nil, store: store)
                    try t.put(&source, binding: element)
                }
            } else {
                // Edit the sources' own to-many lists.
                for i in items.indices where items[i]._strataId == 0 { try t.put(&items[i], binding: element) }
                for item in items where !base.contains(item._strataId) && !then.contains(item._strataId) {
                    guard try t.isStoredOrBeingPut(ObjectKey(entityId: element.entityId, id: item._strataId)) else {
                        throw .objectNotFound(entity: Element._strataEntityName, id: item._strataId)
                    }
                    added.insert(item._strataId)
                }
                for source in added.sorted() {
                    try rules.addToList(entityId: entityId, propertyId: propertyId, source: source, target: ownerId)
                }
                for source in removed.sorted() {
                    try rules.removeFromList(entityId: entityId, propertyId: propertyId, source: source, target: ownerId)
                }
            }
            let kept = then.subtracting(removed).union(added)
            result = items.map { $0._strataId }.filter { kept.contains($0) }
            let mine = Set(result)
            extra = current.filter { !base.contains($0) && kept.contains($0) && !mine.contains($0) }
            result += extra
        }
        // The elements follow the ids: those that left the relation meanwhile go, those others
        // added come in.
        let resultSet = Set(result)
        if items.contains(where: { !resultSet.contains($0._strataId) }) { items.removeAll { !resultSet.contains($0._strataId) } }
        if !extra.isEmpty { items += try Self.decoded(t.objects(Element.self, extra, binding: element)) }
        baseline = items.map { $0._strataId }
        baselineKnown = true
        hasChanges = false
        isLoaded = true
    }

    /// A read's result, its untyped error made a ``StrataError``.
    private static func decoded<R>(_ read: @autoclosure () throws -> R) throws(StrataError) -> R {
        do { return try read() } catch { throw StrataError(error) }
    }

    /// The ids a prefetch should load; nil when the relation is not attached to a store.
    func storedIdsForPrefetch(in t: Transaction) throws(StrataError) -> [Id]? {
        guard let store, !hasChanges else { return nil }
        return try storedIds(store: store, in: t)
    }

    /// Called by a prefetch: the elements are known without a read.
    func prefetched(_ elements: [Element]) {
        items = elements
        baseline = elements.map { $0._strataId }
        baselineKnown = true
        isLoaded = true
        hasChanges = false
    }
}

extension ToMany: RelationPutUndo {
    /// Undoes a put's attachment of a new owner's empty relation.
    func undoPut() {
        role = .unattached
        store = nil
        ownerId = 0
        items = []
        isLoaded = true
        baseline = []
        baselineKnown = false
        hasChanges = false
    }
}

extension BacklinkSchema {
    /// The stored relation this backlink reads: its edge kind, entity and property ids.
    func storedRelation(in store: Store) throws(StrataError) -> (EdgeKey.Kind, UInt32, UInt32) {
        guard let record = store.record(named: source),
              let property = record.properties.first(where: { !$0.isRemoved && $0.name == sourceProperty }),
              property.type.isRelation else {
            // The source entity was never stored: no edges can exist yet.
            if store.record(named: source) == nil { return (.toOneBacklink, 0, 0) }
            throw .unknownRelation(entity: source, property: sourceProperty)
        }
        return (property.type == .toOne ? .toOneBacklink : .toManyBacklink, record.entityId, property.id)
    }
}

/// What a ``ToMany`` stands for in the store. Not nested in the generic class: a nested enum
/// is generic too, and setting it from unspecialised code (every decoded object attaches its
/// to-manys) asked the runtime for its metadata each time.
enum ToManyRole {
    /// Not read from or put to a store yet.
    case unattached
    /// A standalone to-many of the owner's entity.
    case standalone(entityId: UInt32, propertyId: UInt32)
    /// The `index`th backlink of `owner`'s entity. By reference, not as a copy of the schema:
    /// every decoded object attaches its backlinks, and a copy retains three strings.
    case backlink(EntityBinding, index: Int)
}
