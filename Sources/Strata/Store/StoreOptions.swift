import Foundation
import StrataStorage

/// How commits reach the disk: `.sync` (each transaction is durable when it returns),
/// `.groupCommit` (durable, with concurrent commits sharing one sync) or `.none` (survives a
/// process crash, not a power cut).
public typealias Durability = StrataStorage.Durability

/// Tuning of the storage engine under a store.
public typealias EngineOptions = StrataStorage.EngineOptions

/// A flush or compaction of the engine under a store (`EngineOptions.eventListener`).
public typealias EngineEvent = StrataStorage.EngineEvent

/// How a ``Store`` opens.
///
/// ```swift
/// var options = StoreOptions()
/// options.durability = .none           // bulk import: fast, not power-cut safe
/// let store = try Store(directoryPath: path, options: options)
/// ```
public struct StoreOptions: Sendable {
    /// Durability of every transaction. Default `.sync`: a transaction that returned is on disk.
    public var durability: Durability = .sync
    /// Open without writing anything (inspection tools). Writes throw ``StrataError/readOnly``;
    /// read-only openers share a store, and exclude a writer.
    public var readOnly = false
    /// Engine tuning (memtable and cache sizes, compression, file system). Its durability,
    /// read-only flag and key spaces are set from the store's.
    public var engine = EngineOptions()
    /// Permission bits of the files the store creates: `0o600` (the owner alone) by default,
    /// so that no other local user can read the app's data. For the default file system
    /// (`PosixFileSystem`); a custom `EngineOptions.fileSystem` decides its own.
    ///
    /// ```swift
    /// var options = StoreOptions()
    /// options.fileMode = 0o640          // the group may read the files too
    /// options.directoryMode = 0o750
    /// ```
    public var fileMode: Int {
        get { (engine.fileSystem as? PosixFileSystem)?.fileMode ?? 0o600 }
        set {
            guard var fs = engine.fileSystem as? PosixFileSystem else { return }
            fs.fileMode = newValue & 0o7777
            engine.fileSystem = fs
        }
    }

    /// Permission bits of the directories the store creates: `0o700` by default.
    public var directoryMode: Int {
        get { (engine.fileSystem as? PosixFileSystem)?.directoryMode ?? 0o700 }
        set {
            guard var fs = engine.fileSystem as? PosixFileSystem else { return }
            fs.directoryMode = newValue & 0o7777
            engine.fileSystem = fs
        }
    }

    /// A continuous archive of the store, for point-in-time restore with
    /// ``Store/restoreArchive(from:toDirectoryPath:at:options:)`` (the same as `engine.archive`).
    ///
    /// ```swift
    /// var options = StoreOptions()
    /// options.archive = ArchiveOptions(target: DirectoryArchiveTarget(path: "/archive/shop"))
    /// let store = try Store(directoryPath: "/data/shop", options: options)
    /// ```
    public var archive: ArchiveOptions? {
        get { engine.archive }
        set { engine.archive = newValue }
    }
    /// Encrypts the store at rest with AES-256-GCM (the same as `engine.encryptionKey`): 32
    /// bytes, kept by the app (the keychain, a key service), never written by Strata. Every
    /// file of the store, of its backups and of its archive is unreadable without it. Opening an
    /// encrypted store without it throws ``StrataError/encryptionKeyRequired``, with another
    /// key ``StrataError/wrongEncryptionKey``, and a plaintext store opened with a key throws
    /// ``StrataError/storeNotEncrypted``; none of them writes anything.
    ///
    /// ```swift
    /// let store = try Store(directoryPath: path, options: StoreOptions(encryptionKey: key))
    /// ```
    public var encryptionKey: Data? {
        get { engine.encryptionKey.map { Data($0) } }
        set { engine.encryptionKey = newValue.map { Array($0) } }
    }
    /// Called while the store builds or drops a secondary index: when a type gains or loses
    /// `@Index`/`@Unique` on an existing store, at the first ``Store/box(for:)`` of that type.
    /// Called from that thread, after each chunk of objects, and once at the end. A store
    /// call from inside it throws `StorageError.calledFromCallback` (wrapped in
    /// ``StrataError/storage(_:)``): the build holds the store's locks.
    ///
    /// ```swift
    /// options.indexProgress = { p in print("\(p.entity).\(p.property): \(p.done)/\(p.total)") }
    /// ```
    public var indexProgress: (@Sendable (IndexProgress) -> Void)?
    /// The migration plan: steps that the store runs once each, in version order, at open,
    /// before any type binds (``MigrationStep``). Empty: the store's schema only evolves (new
    /// properties, removed ones, renames).
    public var migrations: [MigrationStep] = []
    /// Called as each migration step starts and finishes, on the opening thread.
    public var migrationProgress: (@Sendable (MigrationProgress) -> Void)?

    public init() {}

    /// Options for an encrypted store (``encryptionKey``), the rest at their defaults.
    public init(encryptionKey: Data) {
        self.encryptionKey = encryptionKey
    }
}

/// How far an index build or drop has come (``StoreOptions/indexProgress``).
public struct IndexProgress: Sendable, Equatable {
    public enum Phase: Sendable, Equatable {
        /// Reading every object of the entity and writing its index entries; for `@Unique`,
        /// checking on the way that no value is held twice.
        case building
        /// Deleting the entries of an index no longer declared.
        case dropping
    }

    public var entity: String
    public var property: String
    public var phase: Phase
    /// Objects (building) or entries (dropping) handled so far.
    public var done: Int
    /// Objects to read when building (the entity's count); 0 when not known in advance.
    public var total: Int
}

/// Sizes and time of a full compaction (``Store/compact()``).
public typealias CompactionReport = StrataStorage.CompactionReport

/// How ``Store/backup(toDirectoryPath:options:)`` writes: links or copies, progress, cancellation.
public typealias BackupOptions = StrataStorage.BackupOptions

/// What ``Store/backup(toDirectoryPath:options:)`` wrote.
public typealias BackupReport = StrataStorage.BackupReport

/// How far a backup has come, passed to `BackupOptions.progress`.
public typealias BackupProgress = StrataStorage.BackupProgress

/// A continuous archive for point-in-time restore (``StoreOptions/archive``).
public typealias ArchiveOptions = StrataStorage.ArchiveOptions
/// Where an archive is written: a directory (``DirectoryArchiveTarget``), or your own backend.
public typealias ArchiveTarget = StrataStorage.ArchiveTarget
/// An archive kept as files in one directory.
public typealias DirectoryArchiveTarget = StrataStorage.DirectoryArchiveTarget
/// How far back an archive keeps the store's history.
public typealias ArchiveRetention = StrataStorage.ArchiveRetention
/// How far the archive has come (``Store/archiveStatus()``).
public typealias ArchiveStatus = StrataStorage.ArchiveStatus
/// How a restore from an archive treats damage.
public typealias ArchiveRestoreOptions = StrataStorage.ArchiveRestoreOptions
/// What a restore from an archive rebuilt.
public typealias ArchiveRestoreReport = StrataStorage.ArchiveRestoreReport
