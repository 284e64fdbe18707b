import Foundation

/// One step of a store's migration plan (``StoreOptions/migrations``): the version the store
/// has after it, and what it does to the stored objects, by entity and property name (the
/// Swift types of the old schema may no longer exist).
///
/// A store records the version of the last step it ran. At open, every step above it runs
/// once, in version order, each in a write transaction of its own that also records its
/// version: a crash in a step leaves the store at the version before it, and the next open runs
/// the step again. A step that throws leaves the store at the previous version and the open
/// fails with ``StrataError/migrationFailed(version:name:reason:)``. Then the app's types bind
/// as usual: a property whose stored type no step changed is still refused with
/// ``StrataError/schemaMismatch(entity:property:stored:declared:)``.
///
/// ```swift
/// var options = StoreOptions()
/// options.migrations = [
///     MigrationStep(version: 1, "amount in cents") { m in
///         try m.changeType(of: "amount", in: "Order", to: .int64) { old in
///             guard case let .double(euros) = old else { return old }
///             return .int(Int64((euros * 100).rounded()))
///         }
///     },
///     MigrationStep(version: 2, "status as an enum") { m in
///         try m.convertToEnum("status", in: "Order", to: Status.self, fallback: .unknown)
///     },
/// ]
/// let store = try Store(directoryPath: path, options: options)
/// ```
public struct MigrationStep: Sendable {
    /// The store's version after this step; versions start at 1 (a store that never migrated
    /// is at 0) and increase along the plan.
    public var version: Int
    /// What the step is, for progress and errors.
    public var name: String
    let body: @Sendable (Migration) throws -> Void

    public init(version: Int, _ name: String = "", _ body: @escaping @Sendable (Migration) throws -> Void) {
        self.version = version
        self.name = name
        self.body = body
    }
}

/// A migration step starting or done (``StoreOptions/migrationProgress``).
public struct MigrationProgress: Sendable, Equatable {
    public enum Phase: Sendable, Equatable {
        case started
        /// Committed: the store is at this step's version.
        case finished
    }
    public var version: Int
    public var name: String
    public var phase: Phase
    /// Objects the step rewrote so far (at `finished`: in all).
    public var objectsWritten: Int
    /// Seconds since the step started.
    public var seconds: Double
}
