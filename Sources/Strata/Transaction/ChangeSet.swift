/// What one committed write transaction changed: per entity the ids it inserted, updated and
/// removed (objects whose to-one a removal cleared count as updated), and per relation the
/// objects whose side of it changed. Made from the transaction's ``WriteOverlay`` at commit, so
/// it reflects the final states only: an object inserted and removed in one transaction is in
/// neither list, and nothing of a rolled-back savepoint appears.
struct ChangeSet: Sendable, Equatable {
    struct EntityChanges: Sendable, Equatable {
        /// Increasing ids.
        var inserted: [Id] = []
        var updated: [Id] = []
        var removed: [Id] = []

        var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && removed.isEmpty }
    }

    /// A relation, by the entity that declares it and its property id.
    struct Relation: Hashable, Sendable {
        var entityId: UInt32
        var propertyId: UInt32
    }

    /// By entity id.
    var entities: [UInt32: EntityChanges] = [:]
    /// For each relation that changed, the source objects whose side of it changed.
    var relations: [Relation: Set<Id>] = [:]
    /// For each relation that changed, the targets that gained or lost a source (their
    /// backlinks changed).
    var relationTargets: [Relation: Set<Id>] = [:]

    var isEmpty: Bool { entities.isEmpty && relations.isEmpty }
}
