/// What changed in the objects of one entity, by id: the unit of change observation.
///
/// The four sets are disjoint. An object inserted and then removed before anyone looked is in
/// none of them; one inserted and then updated is only in `inserted`.
///
/// ```swift
/// for await changes in try store.changes(of: Customer.self) {
///     let c = changes[Customer.self]
///     print("new:", c.inserted, "edited:", c.updated, "gone:", c.removed)
/// }
/// ```
public struct EntityChanges: Sendable, Equatable {
    /// Objects stored for the first time.
    public internal(set) var inserted: Set<Id> = []
    /// Objects whose stored fields were written again (a removal that cleared one of their
    /// to-ones counts too).
    public internal(set) var updated: Set<Id> = []
    /// Objects removed.
    public internal(set) var removed: Set<Id> = []
    /// Objects not in the three sets above whose relations changed: a to-many edited through
    /// `applyToDb()`, or a backlink that gained or lost a source.
    public internal(set) var relationsChanged: Set<Id> = []

    /// Changes naming these ids (a value to compare with, in an app's tests).
    public init(inserted: Set<Id> = [], updated: Set<Id> = [], removed: Set<Id> = [], relationsChanged: Set<Id> = []) {
        self.inserted = inserted
        self.updated = updated
        self.removed = removed
        self.relationsChanged = relationsChanged
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && removed.isEmpty && relationsChanged.isEmpty }

    /// Every id concerned.
    public var all: Set<Id> { inserted.union(updated).union(removed).union(relationsChanged) }

    /// Folds in the changes of a later commit: the net effect of both.
    mutating func merge(_ later: EntityChanges) {
        let vanished = inserted.intersection(later.removed)   // born and gone in between
        inserted = inserted.union(later.inserted).subtracting(later.removed)
        removed = removed.union(later.removed.subtracting(vanished))
        updated = updated.union(later.updated).subtracting(inserted).subtracting(removed).subtracting(vanished)
        relationsChanged = relationsChanged.union(later.relationsChanged)
            .subtracting(inserted).subtracting(removed).subtracting(updated).subtracting(vanished)
    }

    /// Restores the disjointness rule after ids were added.
    mutating func normalize() {
        updated.subtract(inserted)
        updated.subtract(removed)
        relationsChanged.subtract(inserted)
        relationsChanged.subtract(removed)
        relationsChanged.subtract(updated)
    }
}

/// The changes of one or more commits, by entity name: what change observers receive.
///
/// Several commits that happened while an observer was busy arrive as one value (their net
/// effect, ``commits`` says how many), so a slow observer never falls behind by more than one.
public struct StoreChanges: Sendable, Equatable {
    /// By entity name (``Entity`` types' names, as ``Store/storedEntities()`` lists them).
    public internal(set) var entities: [String: EntityChanges] = [:]
    /// How many commits these changes sum up.
    public internal(set) var commits = 0

    public init() {}

    /// The changes of `type`'s objects (empty when it was not touched).
    public subscript<T: Entity>(_ type: T.Type) -> EntityChanges {
        entities[T._strataSchema.name] ?? EntityChanges()
    }

    public var isEmpty: Bool { entities.values.allSatisfy(\.isEmpty) }

    /// Whether any of `names` changed.
    func touches(_ names: Set<String>) -> Bool {
        names.contains { entities[$0].map { !$0.isEmpty } ?? false }
    }

    /// Only the entities in `names`.
    func restricted(to names: Set<String>) -> StoreChanges {
        var out = StoreChanges()
        out.commits = commits
        for (name, c) in entities where names.contains(name) && !c.isEmpty { out.entities[name] = c }
        return out
    }

    mutating func merge(_ later: StoreChanges) {
        for (name, c) in later.entities { entities[name, default: EntityChanges()].merge(c) }
        commits += later.commits
    }

    /// A commit's change set, with entity ids resolved to names through the catalog.
    init(_ set: ChangeSet, records: [UInt32: EntityRecord]) {
        commits = 1
        func name(_ entityId: UInt32) -> String { records[entityId]?.name ?? "entity #\(entityId)" }
        for (entityId, c) in set.entities {
            var e = EntityChanges()
            e.inserted = Set(c.inserted)
            e.updated = Set(c.updated)
            e.removed = Set(c.removed)
            entities[name(entityId)] = e
        }
        for (relation, sources) in set.relations {
            entities[name(relation.entityId), default: EntityChanges()].relationsChanged.formUnion(sources)
        }
        for (relation, targets) in set.relationTargets {
            let p = records[relation.entityId]?.properties.first { $0.id == relation.propertyId }
            guard let target = p?.target else { continue }
            entities[target, default: EntityChanges()].relationsChanged.formUnion(targets)
        }
        for name in entities.keys { entities[name]?.normalize() }
    }
}
