import Synchronization

/// The entity bindings a store has made, found without the catalog lock.
///
/// Why: every `store.box(for:)` asks for its type's binding, and a to-one relation's first
/// read makes a box; behind the catalog lock and a dictionary of `ObjectIdentifier`s that was
/// about 450 instructions a call (a lock, a hash, a probe), a twentieth of a forward lookup's
/// whole cost. A made binding never changes for the store's session (``Catalog/bindings``), so
/// it is published here once, and a read is a short scan of atomic words.
///
/// Slots are filled in order, each once: the binding's address first, then, with release
/// ordering, the type's identity. A reader that sees the identity (acquire) sees the address.
/// The table holds a reference to each binding it publishes until it goes away with the store.
/// A store with more entity types than slots finds the rest through the catalog.
final class BindingTable: Sendable {
    /// One published binding: the type's identity (0 while empty) and the binding's address.
    private final class Slot: Sendable {
        let type = Atomic<UInt>(0)
        let binding = Atomic<UInt>(0)
    }

    private let slots: [Slot]
    /// Slots filled; written under the catalog lock only.
    private let filled = Atomic<Int>(0)

    /// - Parameter capacity: the entity types published; more are left to the catalog (32: an
    ///   app with more types than that pays the lock for the rest).
    init(capacity: Int = 32) { slots = (0..<max(0, capacity)).map { _ in Slot() } }

    deinit {
        for slot in slots {
            let address = slot.binding.load(ordering: .relaxed)
            if address != 0 { Unmanaged<EntityBinding>.fromOpaque(UnsafeRawPointer(bitPattern: address)!).release() }
        }
    }

    /// The binding published for `type`, if any.
    @inline(__always)
    func binding(for type: ObjectIdentifier) -> EntityBinding? {
        let key = UInt(bitPattern: type)
        for slot in slots {
            let found = slot.type.load(ordering: .acquiring)
            if found == key {
                let address = slot.binding.load(ordering: .relaxed)
                return Unmanaged<EntityBinding>.fromOpaque(UnsafeRawPointer(bitPattern: address)!).takeUnretainedValue()
            }
            if found == 0 { return nil }
        }
        return nil
    }

    /// Publishes a binding made for `type`. REQUIRES: the caller holds the catalog lock, and
    /// `type` is not published yet.
    func publish(_ binding: EntityBinding, for type: ObjectIdentifier) {
        let n = filled.load(ordering: .relaxed)
        guard n < slots.count else { return }
        slots[n].binding.store(UInt(bitPattern: Unmanaged.passRetained(binding).toOpaque()), ordering: .relaxed)
        slots[n].type.store(UInt(bitPattern: type), ordering: .releasing)
        filled.store(n + 1, ordering: .relaxed)
    }
}
