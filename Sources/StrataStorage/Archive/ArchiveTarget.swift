/// Where a continuous archive is written (``ArchiveOptions``): a flat namespace of named
/// objects, each written once and never changed, so that an object store (S3 and the like) can
/// be one without a change of format. Names are ASCII letters, digits, `-` and `.`.
///
/// ```swift
/// var options = EngineOptions()
/// options.archive = ArchiveOptions(target: DirectoryArchiveTarget(path: "/archive/shop"))
/// ```
public protocol ArchiveTarget: Sendable {
    /// Stores `bytes` under `name`. An object already stored under `name` with the same bytes is
    /// success (a retried put); with other bytes, an error: objects are never replaced.
    func put(_ name: String, _ bytes: [UInt8]) throws
    /// The bytes stored under `name`; throws when there is no such object.
    func get(_ name: String) throws -> [UInt8]
    /// The names of every stored object, in no particular order.
    func list() throws -> [String]
    /// Removes the object `name`; removing one that is not there is success.
    func delete(_ name: String) throws
    /// Removes what puts cut short left behind (a crash between writing an object and naming
    /// it), if the target can hold such things. The archiver calls it once when it starts,
    /// before its first put; the default does nothing (an object store's put is atomic).
    func removeIncompleteObjects() throws
}

extension ArchiveTarget {
    /// Nothing to remove: a target whose puts are atomic (an object store) leaves no partial
    /// objects.
    public func removeIncompleteObjects() throws {}
}

/// An ``ArchiveTarget`` that keeps each object as a file in one directory. A put writes and
/// syncs a temporary file, then renames it to its name (never over an existing file) and syncs
/// the directory: an object is either whole or absent after a crash.
public struct DirectoryArchiveTarget: ArchiveTarget {
    public let path: String
    let fileSystem: any FileSystem
    static let temporaryPrefix = "incoming-"

    public init(path: String, fileSystem: any FileSystem = PosixFileSystem()) {
        self.path = path
        self.fileSystem = fileSystem
    }

    public func put(_ name: String, _ bytes: [UInt8]) throws {
        try Self.checkName(name)
        try fileSystem.createDirectory(path)
        let finalPath = joinPath(path, name)
        if fileSystem.fileExists(finalPath) {
            // Read only when no larger than the new bytes: a larger object differs anyway.
            let existing: [UInt8]?
            do {
                existing = try fileSystem.readWholeFile(finalPath, limit: bytes.count)
            } catch StorageError.corruption {
                existing = nil
            }
            guard existing == bytes else {
                throw StorageError.io(operation: "archive put (an object \(name) with other bytes exists)", path: finalPath, errno: 17)
            }
            return
        }
        let tmp = joinPath(path, Self.temporaryPrefix + name)
        let file = try fileSystem.openWritable(tmp, truncate: true)
        do {
            try bytes.withUnsafeBytes { try file.append($0) }
            try file.sync()
        } catch {
            try? file.close()
            try? fileSystem.removeFile(tmp)
            throw error
        }
        do {
            try file.close()
            try fileSystem.rename(tmp, to: finalPath)
        } catch {
            // Not left behind for a crash-time clean-up to find: the put failed here.
            try? fileSystem.removeFile(tmp)
            throw error
        }
        try fileSystem.syncDirectory(path)
    }

    /// Removes the temporary files of puts a crash cut short (``temporaryPrefix``): the
    /// archiver's first call, when no put of its store is under way (one process has a store
    /// open at a time). A target holds one store's archive unless shared
    /// (``ArchiveOptions/sharesTarget``, SPEC.md §3.3); were another store's put under way, it
    /// would fail at its rename and be retried.
    public func removeIncompleteObjects() throws {
        guard fileSystem.directoryExists(path) else { return }
        for name in try fileSystem.listDirectory(path) where name.hasPrefix(Self.temporaryPrefix) {
            try fileSystem.removeFile(joinPath(path, name))
        }
    }

    public func get(_ name: String) throws -> [UInt8] {
        try Self.checkName(name)
        let p = joinPath(path, name)
        guard fileSystem.fileExists(p) else { throw StorageError.io(operation: "archive get", path: p, errno: 2) }
        return try fileSystem.readWholeFile(p, limit: FormatConstants.archiveObjectMaxBytes)
    }

    public func list() throws -> [String] {
        guard fileSystem.directoryExists(path) else { return [] }
        return try fileSystem.listDirectory(path).filter { !$0.hasPrefix(Self.temporaryPrefix) }
    }

    public func delete(_ name: String) throws {
        try Self.checkName(name)
        try fileSystem.removeFile(joinPath(path, name))
    }

    static func checkName(_ name: String) throws {
        guard !name.isEmpty, name.utf8.count <= 200, !name.hasPrefix("."),
              name.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D || $0 == 0x2E })
        else { throw StorageError.invalidOption(name: "archive object name", reason: "\"\(name)\" is not letters, digits, - and .") }
    }
}
