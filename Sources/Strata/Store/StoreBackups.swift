import Foundation
import StrataStorage

/// Backups, continuous archives and restores: the store's files copied or shipped elsewhere
/// (the engine does the work: `Engine.backup(toDirectoryPath:options:)`,
/// `Engine.restoreArchive(from:toDirectoryPath:at:options:)`).
extension Store {
    /// Writes a backup of the store into the directory at `path` while other threads keep
    /// reading and writing: a complete store, which opens with ``init(directoryPath:options:)``
    /// (where it is, or copied anywhere) and holds every transaction committed before the call
    /// and none begun after it returned.
    ///
    /// The store's segments are hard-linked when `path` is on the same file system (set
    /// `BackupOptions.linksFiles` to `false` for copies that share no disk blocks) and copied
    /// otherwise. Backing up again into the same directory copies only what changed since, and
    /// replaces the earlier backup only once the new one is complete: a crash or a cancellation
    /// leaves the earlier backup (or, for a first backup, a directory that does not open as a
    /// store). A directory that holds anything else, or a backup opened and changed since, is
    /// refused with `StorageError.destinationInUse(path:reason:)`.
    ///
    /// ```swift
    /// var options = BackupOptions()
    /// options.progress = { p in print("\(p.bytesDone)/\(p.bytesTotal) bytes"); return true }
    /// let report = try store.backup(toDirectoryPath: "/backups/shop", options: options)
    /// print("backed up to sequence \(report.sequence)")
    /// ```
    @discardableResult
    public func backup(toDirectoryPath path: String, options: BackupOptions = BackupOptions()) throws(StrataError) -> BackupReport {
        try checkOpen()
        do { return try engine.backup(toDirectoryPath: path, options: options) } catch { throw StrataError(error) }
    }

    /// Restores the backup at `backupPath` (written by ``backup(toDirectoryPath:options:)``)
    /// into the missing or empty directory `path`, after checking every checksum of the backup:
    /// a damaged backup throws, naming the file, and writes nothing. Open the result with
    /// ``init(directoryPath:options:)``.
    ///
    /// The backup of an encrypted store needs its key (`encryptionKey`, as
    /// ``StoreOptions/encryptionKey``), and the restored store is encrypted with it.
    ///
    /// ```swift
    /// try Store.restoreBackup(at: "/backups/shop", toDirectoryPath: "/data/shop")
    /// let store = try Store(directoryPath: "/data/shop")
    /// ```
    @discardableResult
    public static func restoreBackup(at backupPath: String, toDirectoryPath path: String,
                                     options: BackupOptions = .restoring, encryptionKey: Data? = nil) throws(StrataError) -> BackupReport {
        do {
            return try Engine.restoreBackup(at: backupPath, toDirectoryPath: path, options: options, encryptionKey: encryptionKey.map { Array($0) })
        } catch { throw StrataError(error) }
    }

    /// How far the store's continuous archive (``StoreOptions/archive``) has come, or nil when
    /// it has none.
    ///
    /// ```swift
    /// if let status = store.archiveStatus(), let error = status.lastError { print("archive failing: \(error)") }
    /// ```
    public func archiveStatus() -> ArchiveStatus? { engine.archiveStatus() }

    /// Ships everything committed so far to the archive now and waits until it is there (an
    /// archive otherwise follows the store on its own, about a second behind).
    ///
    /// ```swift
    /// try store.archiveNow()
    /// ```
    public func archiveNow(timeout: Double = 60) throws(StrataError) {
        try checkOpen()
        do { try engine.archiveNow(timeout: timeout) } catch { throw StrataError(error) }
    }

    /// Rebuilds a store from a continuous archive into the missing or empty directory `path`:
    /// as of the last commit the archive holds (`at: nil`), or the last commit made at or before
    /// a date. The store written is checked before this returns; a damaged archive throws,
    /// naming the object, unless `ArchiveRestoreOptions.stopsAtDamage` asks for the last
    /// commit before the damage.
    ///
    /// ```swift
    /// let archive = DirectoryArchiveTarget(path: "/archive/shop")
    /// let report = try Store.restoreArchive(from: archive, toDirectoryPath: "/data/shop-at-ten",
    ///                                       at: Date(timeIntervalSince1970: 1_796_119_200))
    /// let store = try Store(directoryPath: "/data/shop-at-ten")
    /// ```
    @discardableResult
    public static func restoreArchive(from target: any ArchiveTarget, toDirectoryPath path: String, at date: Date? = nil,
                                      options: ArchiveRestoreOptions = ArchiveRestoreOptions()) throws(StrataError) -> ArchiveRestoreReport {
        let point: StrataStorage.ArchivePoint = date.map { .time(secondsSince1970: $0.timeIntervalSince1970) } ?? .latest
        do { return try Engine.restoreArchive(from: target, toDirectoryPath: path, at: point, options: options) } catch { throw StrataError(error) }
    }

}
