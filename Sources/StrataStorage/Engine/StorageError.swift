/// Every failure the storage engine reports. Each case carries what a person needs to act on it:
/// the file, the offset, the limit.
///
/// ```swift
/// do { let engine = try Engine.open(directory: path) }
/// catch StorageError.locked(let path) { print("another process uses \(path)") }
/// ```
public enum StorageError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Stored bytes failed a checksum or structural check.
    case corruption(file: String, offset: UInt64, reason: String)
    /// A file does not start or end with Strata's magic number: not a Strata file.
    case badMagic(file: String)
    /// A file or store was written by a format this build does not read.
    case unsupportedFormatVersion(file: String, found: UInt32, supported: UInt32)
    /// Another process, or another open engine in this process, holds the store's lock.
    case locked(path: String)
    /// The disk is full. The write that failed was not applied; the store stays usable.
    case diskFull(path: String)
    /// The directory or a file in it cannot be written.
    case readOnly(path: String)
    /// The directory holds no store and the caller did not ask to create one.
    case notAStore(path: String)
    /// A key is longer than ``StorageLimits/maxKeyBytes``.
    case keyTooLarge(size: Int, limit: Int)
    /// A value is longer than ``StorageLimits/maxValueBytes``.
    case valueTooLarge(size: Int, limit: Int)
    /// A write batch is larger than ``StorageLimits/maxBatchBytes``.
    case batchTooLarge(size: Int, limit: Int)
    /// The key space is not known to this store.
    case unknownKeySpace(String)
    /// A key-space name is empty, too long, or the store has too many key spaces.
    case invalidKeySpaceName(String)
    /// An ``EngineOptions`` value is out of its range.
    case invalidOption(name: String, reason: String)
    /// The engine was closed.
    case closed
    /// Any other operating-system error.
    case io(operation: String, path: String, errno: Int32)
    /// A sync of the write-ahead log failed, so what the log holds on disk is no longer known
    /// (the kernel may have dropped the pages it could not write, and a later sync that succeeds
    /// would not bring them back: PostgreSQL's and RocksDB's "fsync gate"). The engine refuses
    /// writes from then on; reads go on. Reopening replays what reached the disk.
    case writesStopped(reason: String)
    /// A backup's progress callback asked it to stop; what it had written is removed, and an
    /// earlier backup in the same directory is left as it was.
    case cancelled
    /// A backup's destination holds something that is not an unchanged backup made by Strata
    /// (files of another kind, or a backup opened and written to since): it is never replaced.
    case destinationInUse(path: String, reason: String)
    /// A call into the engine or the store from inside one of its callbacks (named), which
    /// runs while the engine waits for it: it would wait for itself (``CallbackScope``).
    case calledFromCallback(String)
    /// The archive target holds the archive of another store (SPEC.md §3.3): this store ships
    /// nothing into it (``Engine/archiveStatus()`` and ``Engine/archiveNow(timeout:)`` report
    /// this), unless ``ArchiveOptions/sharesTarget`` says the target is meant to hold several.
    /// A restore from a target holding several stores names the one it wants
    /// (``ArchiveRestoreOptions/storeId``).
    case archiveOfAnotherStore(storeIds: [UInt64], reason: String)
    /// The store (or a backup, or an archive) is encrypted and was opened with another key
    /// (SPEC.md §14): its key check value does not match. Nothing was written.
    case wrongEncryptionKey(file: String)
    /// The store is encrypted and was opened without a key (``EngineOptions/encryptionKey``).
    /// Nothing was written.
    case encryptionKeyRequired(file: String)
    /// The store is not encrypted and was opened with a key: refused rather than read as
    /// plaintext, so that a store meant to be encrypted is never silently written in the clear.
    /// `strata encrypt` (or ``Engine/changeEncryptionKey(directory:from:to:options:)``)
    /// encrypts it.
    case notEncrypted(file: String)

    /// Whether this says the key does not open the store (none given, another one, or one for
    /// a plaintext store), rather than that something is damaged.
    public var isEncryptionKeyError: Bool {
        switch self {
        case .wrongEncryptionKey, .encryptionKeyRequired, .notEncrypted: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case let .corruption(file, offset, reason): "corruption in \(file) at offset \(offset): \(reason)"
        case let .badMagic(file): "\(file) is not a Strata file (bad magic number)"
        case let .unsupportedFormatVersion(file, found, supported):
            "\(file) has format version \(found); this build reads up to \(supported)"
        case let .locked(path): "store \(path) is locked by another process or another open engine"
        case let .diskFull(path): "disk full while writing \(path)"
        case let .readOnly(path): "\(path) is read-only"
        case let .notAStore(path): "\(path) holds no Strata store"
        case let .keyTooLarge(size, limit): "key of \(size) bytes is over the limit of \(limit)"
        case let .valueTooLarge(size, limit): "value of \(size) bytes is over the limit of \(limit)"
        case let .batchTooLarge(size, limit): "write batch of \(size) bytes is over the limit of \(limit)"
        case let .unknownKeySpace(name): "unknown key space \"\(name)\""
        case let .invalidKeySpaceName(name): "invalid key space name \"\(name)\""
        case let .invalidOption(name, reason): "invalid option \(name): \(reason)"
        case .closed: "the engine is closed"
        case let .io(operation, path, errno): "\(operation) failed for \(path): errno \(errno)"
        case let .writesStopped(reason): "writes are stopped until the store is reopened: \(reason)"
        case .cancelled: "cancelled"
        case let .destinationInUse(path, reason): "\(path) cannot take a backup: \(reason)"
        case let .wrongEncryptionKey(file): "\(file) is encrypted with another key"
        case let .encryptionKeyRequired(file): "\(file) is encrypted: open it with its key"
        case let .notEncrypted(file): "\(file) is not encrypted, but a key was given"
        case let .calledFromCallback(name):
            "called from inside \(name), which the engine waits for: call it from another queue or task instead"
        case let .archiveOfAnotherStore(ids, reason):
            "the archive holds stores \(ids.map { String($0, radix: 16) }.joined(separator: ", ")): \(reason)"
        }
    }
}
