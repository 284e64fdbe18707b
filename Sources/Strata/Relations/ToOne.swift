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
    /// The target's id when known without the object (read from the store, or set by id).
    private var storedTargetId: Id = 0
    /// The target, once loaded or assigned.
    private var cached: Target? { didSet { mayHoldTarget = true } }
    /// False while `cached` is certainly nil: decoding then skips clearing it, since assigning
    /// a generic optional costs a runtime metadata lookup on every object read.
    private var mayHoldTarget = false
    private var isResolved = true
    /// Where lazy loads read from: set when the source object is read or put.
    private(set) var store: Store?

    /// An empty relation.
    public init(nilLiteral: ()) {}

    /// A relation to `target` (which may be new: putting the source puts it too).
    public init(target: Target?) {
        cached = target
        mayHoldTarget = true     // observers do not run in an initializer
        storedTargetId = target?.id ?? 0
    }

    /// A relation to the stored object with `targetId`.
    public init(targetId: Id?) {
        storedTargetId = targetId ?? 0
        isResolved = storedTargetId == 0
    }

    /// Out of line: the generic optional's metadata lookup then runs only when there is
    /// something to drop, not on every decode.
    @inline(never)
    private func dropCachedTarget() {
        cached = nil
        mayHoldTarget = false
    }

    /// Sets what a read of the source object found: the target's id, to load lazily.
    func loaded(storedTargetId: Id, store: Store?) {
        self.storedTargetId = storedTargetId
        self.store = store
        if mayHoldTarget { dropCachedTarget() }
        isResolved = storedTargetId == 0
    }

    /// The target's id, readable without loading the target; nil when there is none. An
    /// assigned target that is not stored yet has no id until the source is put.
    public var targetId: Id? {
        get {
            let id = isResolved ? (cached?.id ?? 0) : storedTargetId
            return id == 0 ? nil : id
        }
        set {
            storedTargetId = newValue ?? 0
            cached = nil
            isResolved = storedTargetId == 0
        }
    }

    /// The target object: read from the store on first access (in the calling thread's
    /// transaction, if any), then cached. Nil when there is none, or when it cannot be read;
    /// ``resolveTarget()`` throws the reason instead.
    public var target: Target? {
        get { try? resolveTarget() }
        set {
            cached = newValue
            storedTargetId = newValue?.id ?? 0
            isResolved = true
        }
    }

    /// The target, read from the store if not loaded yet; throws what the read throws.
    @discardableResult
    public func resolveTarget() throws(StrataError) -> Target? {
        if isResolved { return cached }
        guard let store else { throw .invalidRelation(reason: "ToOne<\(Target.self)> is not attached to a store: put or read its source object first") }
        let loaded = try store.box(for: Target.self).get(storedTargetId)
        cached = loaded
        isResolved = true
        if loaded == nil { storedTargetId = 0 }
        return loaded
    }

    /// Whether the target is loaded (or assigned), so that ``target`` does no store read.
    public var isTargetLoaded: Bool { isResolved }

    /// Drops the cached target: the next access reads the store again.
    public func reset() {
        if isResolved, let id = cached?.id, id != 0 { storedTargetId = id }
        if storedTargetId != 0 {
            cached = nil
            isResolved = false
        }
    }

    // MARK: put support

    /// The assigned target, if it was assigned as an object (possibly new).
    var assignedTarget: Target? {
        get { isResolved ? cached : nil }
        set { cached = newValue }
    }

    /// The id to store for this relation.
    var idToStore: Id { targetId ?? 0 }

    func attach(_ store: Store) {
        self.store = store
    }

    /// Called by a prefetch: the target is known without a read.
    func prefetched(_ target: Target?, store: Store) {
        cached = target
        storedTargetId = target?.id ?? 0
        isResolved = true
        self.store = store
    }
}
