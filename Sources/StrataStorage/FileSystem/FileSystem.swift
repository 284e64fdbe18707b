/// Every byte the engine reads or writes goes through this protocol, so that tests can swap in a
/// file system that loses unsynced data, tears writes or fails the Nth operation
/// (``InMemoryFileSystem``), the way LevelDB's `Env` and Pebble's `vfs` do.
///
/// ```swift
/// let fs = InMemoryFileSystem()
/// let engine = try Engine.open(directory: "/db", options: .init(fileSystem: fs))
/// ```
public protocol FileSystem: Sendable {
    /// Creates the directory and its parents; succeeds if it exists. Each directory it creates
    /// is durable in its parent when it returns (a power cut cannot take a store's directory
    /// after its first durable write).
    func createDirectory(_ path: String) throws
    func fileExists(_ path: String) -> Bool
    func directoryExists(_ path: String) -> Bool
    /// Names (not paths) of the entries in a directory.
    func listDirectory(_ path: String) throws -> [String]
    /// Opens a file for appending; creates it, or truncates it when `truncate` is true.
    func openWritable(_ path: String, truncate: Bool) throws -> any WritableFile
    /// Creates, or empties, a log that only this process appends to (a WAL). A file system may
    /// reserve space ahead of the appends and write through a shared mapping of it, so that an
    /// append is a copy into the page cache instead of a system call; until the file is closed,
    /// it then ends in zero bytes after the last append (SPEC.md §5.2). The default is
    /// ``openWritable(_:truncate:)`` with `truncate: true`.
    func openLog(_ path: String) throws -> any WritableFile
    func openReadable(_ path: String) throws -> any ReadableFile
    /// Opens a file that the store never writes, truncates or replaces while it is open (a
    /// segment), for many small random reads. A file system may serve these reads from memory
    /// it maps instead of a system call per read, but a read must still throw, never fault, if
    /// someone else truncates the file (SPEC.md §6.6); the default is ``openReadable(_:)``.
    func openImmutable(_ path: String) throws -> any ReadableFile
    func removeFile(_ path: String) throws
    /// Atomically replaces `to` with `from`.
    func rename(_ from: String, to: String) throws
    /// Makes `to` a second name of the file `from` (a hard link), for a backup of immutable
    /// files on the same file system. Throws when the file system cannot (another device, no
    /// hard links); the caller then copies. The default always throws.
    func linkFile(_ from: String, to: String) throws
    /// Makes the directory's entries (creations, renames, removals) durable.
    func syncDirectory(_ path: String) throws
    /// Takes a lock on `path`, held until the returned lock is released: exclusive for a
    /// writer (creating the file if needed), shared for read-only openers (the file must exist).
    /// Fails with ``StorageError/locked(path:)`` when a conflicting holder has it, in this
    /// process or another.
    func lockFile(_ path: String, shared: Bool) throws -> any FileLock
    /// Takes from the store directory `path` and from the store files `names` in it any
    /// permission the file system would not give them today (a store created by a build that
    /// made 0644 files keeps them readable by anyone until this runs, at a writable open). A
    /// file system without permissions does nothing.
    func restrictPermissions(ofStoreDirectory path: String, files names: [String])
}

/// A file opened for appending.
public protocol WritableFile: AnyObject {
    /// Bytes in the file, including those not yet synced.
    var size: UInt64 { get }
    func append(_ bytes: UnsafeRawBufferPointer) throws
    /// Makes every appended byte durable (fdatasync).
    func sync() throws
    /// Cuts the file back to `size` bytes; used to take back a failed append.
    func truncate(to size: UInt64) throws
    func close() throws
}

/// A file opened for positional reads. Safe to use from several threads at once.
public protocol ReadableFile: AnyObject, Sendable {
    var size: UInt64 { get }
    /// Reads up to `buffer.count` bytes at `offset`; returns how many were read (fewer only at
    /// the end of the file).
    func read(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// Like ``read(at:into:)``, for bytes that will not be read again soon (compaction input):
    /// a file that maps its contents reads these without mapping them into the process, so that
    /// a compaction streaming through a whole level does not grow the resident memory.
    func readOnce(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    func close()
}

/// A held lock; `release()` gives it up (also done when the lock is deallocated).
public protocol FileLock: AnyObject, Sendable {
    func release()
}

extension FileSystem {
    public func openLog(_ path: String) throws -> any WritableFile { try openWritable(path, truncate: true) }

    public func openImmutable(_ path: String) throws -> any ReadableFile { try openReadable(path) }

    public func restrictPermissions(ofStoreDirectory path: String, files names: [String]) {}

    public func linkFile(_ from: String, to: String) throws {
        throw StorageError.io(operation: "link", path: from, errno: 95 /* EOPNOTSUPP */)
    }

    /// Reads a whole file into memory, when it is no larger than `limit`: what its format
    /// allows. The size is checked before anything is allocated, so that a damaged or crafted
    /// file (a sparse `STATS` of 200 GB) is an error, not an allocation that kills the process.
    func readWholeFile(_ path: String, limit: Int) throws -> [UInt8] {
        let file = try openReadable(path)
        defer { file.close() }
        guard file.size <= UInt64(limit) else {
            throw StorageError.corruption(file: path, offset: 0,
                                          reason: "\(file.size) bytes, more than the \(limit) its format allows")
        }
        let size = Int(file.size)
        var bytes = [UInt8](repeating: 0, count: size)
        var done = 0
        try bytes.withUnsafeMutableBytes { raw in
            while done < size {
                let n = try file.read(at: UInt64(done), into: UnsafeMutableRawBufferPointer(rebasing: raw[done...]))
                if n == 0 { break }
                done += n
            }
        }
        if done < size { bytes.removeSubrange(done...) }
        return bytes
    }
}

extension ReadableFile {
    public func readOnce(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try read(at: offset, into: buffer)
    }

    /// Fills `buffer` from `offset`, or throws corruption naming the file when it ends first.
    /// `once`: read with ``readOnce(at:into:)``.
    func readExactly(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer, path: String, once: Bool = false) throws {
        var done = 0
        while done < buffer.count {
            let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[done...])
            let n = try once ? readOnce(at: offset + UInt64(done), into: rest) : read(at: offset + UInt64(done), into: rest)
            if n == 0 {
                throw StorageError.corruption(file: path, offset: offset, reason: "block extends past the end of the file")
            }
            done += n
        }
    }
}

/// Joins a directory and a file name.
@inline(__always)
package func joinPath(_ directory: String, _ name: String) -> String {
    directory.hasSuffix("/") ? directory + name : directory + "/" + name
}
