/// A to-one relation: a smart proxy to one target object, stored as the target's id in the
/// source object. The target is read lazily on first access of ``target``, then cached.
///
/// ```swift
/// @Entity final class Order {
///     var id: Id = 0
///     var customer: ToOne<Customer> = nil
/// }
/// order.customer.target = customer
/// try orders.put(order)                    // puts the customer too if it is new
/// let name = order.customer.target?.name
/// order.customer = nil                     // or .target = nil, or .targetId = nil; then put
/// ```
///
/// Setting a relation never stores anything by itself: put the source object. Removing a
/// relation never removes either object.
public final class ToOne<Target: Entity>: ExpressibleByNilLiteral {
    // Visible to inlinable code, so that a lazy load is specialised in the caller: unspecialised
    // generic code asks the runtime for `Optional<Target>`'s metadata on every use of `cached`.
    // Unchecked exclusivity: every access from another module would otherwise be checked at
    // run time, and no access to these holds them across a call.
    /// The target's id when known without the object (read from the store, or set by id).
    @usableFromInline @exclusivity(unchecked) var storedTargetId: Id = 0
    /// The target, once loaded or assigned, held type-erased: the object itself when the
    /// entity is a class, else a ``ToOneTargetBox``. A stored `Target?` made the class's field
    /// layout depend on `Target`, and its release on every object read destroyed it through
    /// the runtime's value witnesses (about 1,000 instructions an object); an `AnyObject?` is
    /// one release, and clearing it costs nothing when it is already nil.
    @usableFromInline @exclusivity(unchecked) var cachedStorage: AnyObject?

    /// The target, once loaded or assigned.
    @usableFromInline var cached: Target? {
        @inlinable @inline(__always) get {
            guard let object = cachedStorage else { return nil }
            // Folded at compile time in specialised code: entities are classes or structs.
            if Target.self is AnyObject.Type { return unsafeBitCast(object, to: Target.self) }
            return unsafeDowncast(object, to: ToOneTargetBox<Target>.self).value
        }
        @inlinable @inline(__always) set {
            guard let newValue else {
                cachedStorage = nil
                return
            }
            if Target.self is AnyObject.Type {
                cachedStorage = unsafeBitCast(newValue, to: AnyObject.self)
            } else {
                cachedStorage = ToOneTargetBox(newValue)
            }
        }
    }
    @usableFromInline @exclusivity(unchecked) var isResolved = true
    /// Where lazy loads read from: set when the source object is read or put (settable from
    /// inlinable code, for a prefetch specialised in the caller).
    @usableFromInline @exclusivity(unchecked) var store: Store?
    /// Whether the relation holds the user's assignment rather than what the store holds (it was
    /// set, and no committed put has stored it since). A put of a stale copy whose target was
    /// removed meanwhile clears an unassigned relation, and refuses an assigned one.
    @usableFromInline @exclusivity(unchecked) private(set) var isAssigned = false
    /// Why the last read of ``target`` failed: the property cannot throw, so a target that
    /// could not be read (a damaged object, a closed store) reads as nil and says why here;
    /// nil once a read works. ``resolveTarget()`` throws the error instead.
    ///
    /// ```swift
    /// if order.customer.target == nil, let error = order.customer.loadError { print(error) }
    /// ```
    public var loadError: StrataError? { loadFailure?.error }
    /// Boxed: one word in every `ToOne` (an inline `StrataError?` took several).
    @usableFromInline @exclusivity(unchecked) var loadFailure: LoadFailure?

    /// An empty relation.
    public init(nilLiteral: ()) {}

    /// A relation to `target` (which may be new: putting the source puts it too).
    public init(target: Target?) {
        cached = target
        storedTargetId = target?._strataId ?? 0
        isAssigned = target != nil
    }

    /// A relation to the stored object with `targetId`.
    public init(targetId: Id?) {
        storedTargetId = targetId ?? 0
        isResolved = storedTargetId == 0
        isAssigned = storedTargetId != 0
    }

    /// Sets what a read of the source object found: the target's id, to load lazily.
    func loaded(storedTargetId: Id, store: Store?) {
        self.storedTargetId = storedTargetId
        self.store = store
        cachedStorage = nil
        isResolved = storedTargetId == 0
        isAssigned = false
    }

    /// The target's id, readable without loading the target; nil when there is none. An
    /// assigned target that is not stored yet has no id until the source is put.
    public var targetId: Id? {
        @inlinable get {
            let id = isResolved ? (cached?._strataId ?? 0) : storedTargetId
            return id == 0 ? nil : id
        }
        set {
            storedTargetId = newValue ?? 0
            cachedStorage = nil
            isResolved = storedTargetId == 0
            isAssigned = true
        }
    }

    /// The target object: read from the store on first access (in the calling thread's
    /// transaction, if any), then cached. Nil when there is none, or when it cannot be read;
    /// ``resolveTarget()`` throws the reason instead.
    public var target: Target? {
        @inlinable get {
            do { return try resolveTarget() } catch {
                loadFailure = LoadFailure(error)
                return nil
            }
        }
        set {
            cached = newValue
            storedTargetId = newValue?._strataId ?? 0
            isResolved = true
            isAssigned = true
        }
    }

    /// The target, read from the store if not loaded yet; throws what the read throws.
    @inlinable @discardableResult
    public func resolveTarget() throws(StrataError) -> Target? {
        if isResolved { return cached }
        guard let store else { throw notAttached() }
        let loaded = try store.box(for: Target.self).get(storedTargetId)
        if loadFailure != nil { loadFailure = nil }
        cached = loaded
        isResolved = true
        if loaded == nil { storedTargetId = 0 }
        return loaded
    }

    @usableFromInline
    func notAttached() -> StrataError {
        .invalidRelation(reason: "ToOne<\(Target.self)> is not attached to a store: put or read its source object first")
    }

    /// Whether the target is loaded (or assigned), so that ``target`` does no store read.
    public var isTargetLoaded: Bool { isResolved }

    /// Drops the cached target: the next access reads the store again.
    public func reset() {
        if isResolved, let id = cached?._strataId, id != 0 { storedTargetId = id }
        if storedTargetId != 0 {
            cachedStorage = nil
            isResolved = false
        }
    }

    // MARK: put support

    /// The assigned target, if it was assigned as an object (possibly new).
    var assignedTarget: Target? {
        get { isResolved ? cached : nil }
        set {
            cached = newValue
        }
    }

    /// The id to store for this relation.
    var idToStore: Id { targetId ?? 0 }

    func attach(_ store: Store) {
        self.store = store
    }

    /// Called by a prefetch: the target is known without a read.
    @inlinable
    func prefetched(_ target: Target?, store: Store) {
        cached = target
        storedTargetId = target?._strataId ?? 0
        isResolved = true
        // Usually already this store: an assignment would retain it and release it again.
        if self.store !== store { self.store = store }
    }

    /// A put stored the assignment: it is what the store holds now (until a rollback).
    func settle(in t: Transaction) {
        guard isAssigned else { return }
        isAssigned = false
        t.logUndo(.relation(self))
    }

    /// The target was removed since this relation was read (a stale copy): the relation reads
    /// as empty, as the store holds it. A rollback brings back what it was.
    func clearRemovedTarget(in t: Transaction) {
        let (id, target, resolved) = (storedTargetId, cachedStorage, isResolved)
        t.logUndo(.restore { [self] in
            storedTargetId = id
            cachedStorage = target
            isResolved = resolved
        })
        storedTargetId = 0
        cachedStorage = nil
        isResolved = true
    }

    /// Replaces the assigned target by `target` (a new one's copy with its id, for a struct),
    /// with the old one brought back by a rollback.
    func replaceAssignedTarget(_ target: Target, in t: Transaction) {
        let previous = cachedStorage
        t.logUndo(.restore { [self] in cachedStorage = previous })
        cached = target
    }
}

/// Holds a ``ToOne``'s target when the entity is a struct.
@usableFromInline
final class ToOneTargetBox<Target> {
    @usableFromInline let value: Target
    @inlinable init(_ value: Target) { self.value = value }
}

extension ToOne: RelationPutUndo {
    func undoPut() { isAssigned = true }
}

/// A relation's failed lazy load (``ToOne/loadError``), boxed to keep the relation small.
@usableFromInline
final class LoadFailure {
    @usableFromInline let error: StrataError
    @usableFromInline init(_ error: StrataError) { self.error = error }
}
