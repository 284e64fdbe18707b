/// How ``Engine/backup(toDirectoryPath:options:)`` writes a backup.
///
/// ```swift
/// var options = BackupOptions()
/// options.progress = { p in print("\(p.bytesDone) of \(p.bytesTotal) bytes"); return true }
/// let report = try engine.backup(toDirectoryPath: "/backups/shop", options: options)
/// ```
public struct BackupOptions: Sendable {
    /// Whether segments may be hard-linked instead of copied when the destination is on the
    /// store's file system (the default). A link costs no space and no time, and is safe because
    /// a segment never changes once written; but a link shares the disk blocks with the store,
    /// so a backup meant to survive a damaged disk sector must be copied (`false`).
    public var linksFiles = true
    /// Called on the calling thread after each file and about every MiB copied. Return `false`
    /// to cancel: the backup then throws ``StorageError/cancelled``, removes what it wrote and
    /// leaves an earlier backup in the destination as it was.
    public var progress: (@Sendable (BackupProgress) -> Bool)?

    public init() {}

    /// The default of a restore: every file copied, so that the restored store shares no disk
    /// block, mode or owner with the backup it came from. Set ``linksFiles`` to link instead.
    ///
    /// ```swift
    /// var options = BackupOptions.restoring
    /// options.linksFiles = true   // same file system, and the backup is kept read-only
    /// try Engine.restoreBackup(at: "/backups/shop", toDirectoryPath: "/data/shop", options: options)
    /// ```
    public static var restoring: BackupOptions {
        var o = BackupOptions()
        o.linksFiles = false
        return o
    }
}

/// How far a backup has come. Bytes count what is linked or copied; files already in the
/// destination from an earlier backup are not counted.
public struct BackupProgress: Sendable, Equatable {
    public var filesDone: Int
    public var filesTotal: Int
    public var bytesDone: UInt64
    public var bytesTotal: UInt64
    /// Seconds since the backup started.
    public var seconds: Double
}

/// What a backup wrote.
public struct BackupReport: Sendable, Equatable {
    /// The backup holds every write up to and including this sequence number, and none after it.
    public var sequence: UInt64
    /// Segments in the backup.
    public var segments: Int
    /// Files hard-linked, copied, and kept from an earlier backup in the same directory.
    public var filesLinked: Int
    public var filesCopied: Int
    public var filesReused: Int
    /// Bytes of the files linked, copied and kept.
    public var bytesLinked: UInt64
    public var bytesCopied: UInt64
    public var bytesReused: UInt64
    public var seconds: Double
}
