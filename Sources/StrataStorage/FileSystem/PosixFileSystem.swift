#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CStrataSupport
import Dispatch
import Synchronization

#if canImport(Glibc)
/// `close(2)`, under a name the file classes' own `close()` does not shadow.
let systemClose = Glibc.close
private let systemRename = Glibc.rename
#elseif canImport(Darwin)
let systemClose = Darwin.close
private let systemRename = Darwin.rename
#endif

/// Makes what was written to `fd` durable: `fdatasync` (data and the size) or `fsync` on
/// Linux. On Apple platforms `fsync` only hands the data to the drive, whose cache can still
/// lose it in a power cut; `F_FULLFSYNC` asks the drive to flush it, as SQLite's
/// `fullfsync` does. A file system without it (some network ones) gets `fsync`.
func syncToStableStorage(_ fd: Int32, dataOnly: Bool) -> Int32 {
    #if canImport(Darwin)
    if fcntl(fd, F_FULLFSYNC) == 0 { return 0 }
    return fsync(fd)
    #else
    return dataOnly ? fdatasync(fd) : fsync(fd)
    #endif
}

/// The real file system, through POSIX calls. Appends go straight to the kernel, with `write(2)`
/// or, for a log, a copy into a shared mapping (no user-space buffer), so a process crash never
/// loses an acknowledged write.
public struct PosixFileSystem: FileSystem {
    /// Whether segment files are mapped for their block reads (SPEC.md §6.6) or read with
    /// `pread` into the block cache. Mapped by default; without mappings, the segment pages a
    /// process has read are not counted in its resident memory, and no read can fault.
    ///
    /// ```swift
    /// var options = StoreOptions()
    /// options.engine.fileSystem = PosixFileSystem(mapsSegments: false)
    /// ```
    public var mapsSegments: Bool
    /// Permission bits of the files the store creates: owner read and write only by default,
    /// so that no other local user can read an app's data (the process's umask still applies).
    public var fileMode: Int
    /// Permission bits of the directories the store creates (the store's and its parents').
    public var directoryMode: Int

    public init(mapsSegments: Bool = true, fileMode: Int = 0o600, directoryMode: Int = 0o700) {
        self.mapsSegments = mapsSegments
        self.fileMode = fileMode & 0o7777
        self.directoryMode = directoryMode & 0o7777
    }

    public func createDirectory(_ path: String) throws {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/") {
            let parent = prefix.isEmpty ? "." : prefix
            prefix += part
            if mkdir(prefix, mode_t(directoryMode)) == 0 {
                // The new entry lives in the parent's directory data: synced like a file's.
                try syncDirectory(parent)
            } else if errno != EEXIST {
                throw posixError("mkdir", prefix)
            }
            prefix += "/"
        }
    }

    public func fileExists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }

    public func directoryExists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    public func listDirectory(_ path: String) throws -> [String] {
        guard let dir = opendir(path) else { throw posixError("opendir", path) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    public func openWritable(_ path: String, truncate: Bool) throws -> any WritableFile {
        let (fd, size) = try Self.openRegularFile(path, O_WRONLY | O_CREAT | (truncate ? O_TRUNC : O_APPEND), mode: mode_t(fileMode))
        return PosixWritableFile(fd: fd, path: path, size: size)
    }

    /// Opens `path` with `flags`, only if it is (or is created as) a regular file; returns the
    /// descriptor and the file's size. Every file of a store is opened here.
    /// - O_NONBLOCK: a FIFO or device planted under a store file's name (`STATS.tmp`, `LOCK`,
    ///   `CURRENT.tmp`, a backup's or an archive's temporary) must fail the open, not hang it:
    ///   a FIFO's open blocks until the other end comes. Cleared once the file is known to be
    ///   regular (where it means nothing anyway).
    /// - O_NOFOLLOW: a symlink planted where the store reads or writes must not make it read or
    ///   overwrite someone else's file.
    static func openRegularFile(_ path: String, _ flags: Int32, mode: mode_t = 0o600) throws -> (fd: Int32, size: UInt64) {
        let fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, mode)
        guard fd >= 0 else { throw posixError("open", path) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let e = posixError("fstat", path)
            _ = systemClose(fd)
            throw e
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            _ = systemClose(fd)
            throw StorageError.io(operation: "open (not a regular file)", path: path, errno: EINVAL)
        }
        let status = fcntl(fd, F_GETFL)
        guard status >= 0, fcntl(fd, F_SETFL, status & ~O_NONBLOCK) == 0 else {
            let e = posixError("fcntl", path)
            _ = systemClose(fd)
            throw e
        }
        return (fd, UInt64(st.st_size))
    }

    /// On Linux, appends through a mapping of space reserved ahead (``PosixMappedLogFile``).
    /// Elsewhere with `write(2)`: Darwin has no `posix_fallocate`, and a store into a mapped
    /// page that the disk cannot back would end the process with SIGBUS.
    public func openLog(_ path: String) throws -> any WritableFile {
        #if os(Linux)
        try PosixMappedLogFile(path: path, mode: mode_t(fileMode))
        #else
        try openWritable(path, truncate: true)
        #endif
    }

    public func openReadable(_ path: String) throws -> any ReadableFile {
        let (fd, size) = try Self.openRegularFile(path, O_RDONLY)
        return PosixReadableFile(fd: fd, path: path, size: size)
    }

    /// Maps the file: a block read is then a copy from the page cache, without the `pread`
    /// system call (a quarter of a random point read's time when the block cache misses).
    /// Falls back to `pread` when the mapping fails.
    public func openImmutable(_ path: String) throws -> any ReadableFile {
        let file = try openReadable(path) as! PosixReadableFile
        if mapsSegments { file.map() }
        return file
    }

    public func removeFile(_ path: String) throws {
        if unlink(path) != 0, errno != ENOENT { throw posixError("unlink", path) }
    }

    public func rename(_ from: String, to: String) throws {
        if systemRename(from, to) != 0 { throw posixError("rename", from) }
    }

    public func linkFile(_ from: String, to: String) throws {
        if link(from, to) != 0 { throw posixError("link", to) }
    }

    public func syncDirectory(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw posixError("open", path) }
        defer { _ = systemClose(fd) }
        if syncToStableStorage(fd, dataOnly: false) != 0 { throw posixError("fsync", path) }
    }

    /// Only takes bits away (mode ∧ ``fileMode``, ∧ ``directoryMode`` for the directory), and
    /// only from regular files and the directory itself, never through a symlink. Best effort:
    /// a file that cannot be changed (another owner) is left as it is.
    public func restrictPermissions(ofStoreDirectory path: String, files names: [String]) {
        func restrict(_ p: String, kind: mode_t, allowed: Int) {
            var st = stat()
            guard lstat(p, &st) == 0, (st.st_mode & S_IFMT) == kind else { return }
            let current = Int(st.st_mode) & 0o7777
            if current & ~allowed != 0 { _ = chmod(p, mode_t(current & allowed)) }
        }
        restrict(path, kind: S_IFDIR, allowed: directoryMode)
        for name in names { restrict(joinPath(path, name), kind: S_IFREG, allowed: fileMode) }
    }

    public func lockFile(_ path: String, shared: Bool) throws -> any FileLock {
        // LOCK is a regular file in the store directory, never followed out of it.
        let (fd, _) = try Self.openRegularFile(path, shared ? O_RDONLY : O_RDWR | O_CREAT, mode: mode_t(fileMode))
        // flock locks belong to the open file description, so a second open in this same
        // process conflicts too, not only another process (unlike fcntl locks).
        if flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0 {
            let e = errno
            _ = systemClose(fd)
            if e == EWOULDBLOCK { throw StorageError.locked(path: path) }
            throw posixError("flock", path, e)
        }
        return PosixFileLock(fd: fd)
    }
}

/// Maps an errno to the engine's typed errors.
func posixError(_ operation: String, _ path: String, _ code: Int32 = errno) -> StorageError {
    switch code {
    // EFBIG: the file-size limit (RLIMIT_FSIZE) is reached, a full disk as far as this
    // process can tell (SIGXFSZ must be ignored for write to return it).
    case ENOSPC, EDQUOT, EFBIG: .diskFull(path: path)
    case EROFS, EACCES, EPERM: .readOnly(path: path)
    default: .io(operation: operation, path: path, errno: code)
    }
}

final class PosixWritableFile: WritableFile {
    private let fd: Int32
    private let path: String
    private(set) var size: UInt64
    private var isClosed = false

    init(fd: Int32, path: String, size: UInt64) {
        self.fd = fd
        self.path = path
        self.size = size
    }

    deinit { if !isClosed { _ = systemClose(fd) } }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                let e = posixError("write", path)
                size += UInt64(done)
                throw e
            }
            done += n
        }
        size += UInt64(done)
    }

    func sync() throws {
        if syncToStableStorage(fd, dataOnly: true) != 0 { throw posixError("fdatasync", path) }
    }

    func truncate(to newSize: UInt64) throws {
        if ftruncate(fd, off_t(newSize)) != 0 { throw posixError("ftruncate", path) }
        size = newSize
    }

    func close() throws {
        guard !isClosed else { return }
        isClosed = true
        if systemClose(fd) != 0 { throw posixError("close", path) }
    }
}

final class PosixReadableFile: ReadableFile {
    private let fd: Int32
    private let path: String
    let size: UInt64
    private let isClosed = Atomic<Bool>(false)
    /// The whole file mapped read-only (``PosixFileSystem/openImmutable(_:)``), or nil. Set once,
    /// before the file is shared; unmapped at deinit, when no reader can be using it.
    nonisolated(unsafe) private var mapping: UnsafeRawBufferPointer?

    init(fd: Int32, path: String, size: UInt64) {
        self.fd = fd
        self.path = path
        self.size = size
    }

    deinit {
        close()
        // Unmapped on a background thread: tearing down the page tables of segments whose pages
        // were read is paid by whichever thread drops the last reference (a closing store: about
        // 3 ms for the object-graph benchmark's 66 MB, 16% of its close and reopen; a reader
        // that releases a compacted-away version). The range stays reserved until then, so
        // nothing else can be mapped over it, and no reader is left to touch it.
        if let mapping {
            let address = UInt(bitPattern: mapping.baseAddress), count = mapping.count
            DispatchQueue.global(qos: .utility).async {
                munmap(UnsafeMutableRawPointer(bitPattern: address), count)
            }
        }
    }

    /// The mapping, for readers that copy out of it themselves (with a guarded copy).
    var mappedBytes: UnsafeRawBufferPointer? { mapping }

    func map() {
        guard mapping == nil, size > 0, size <= UInt64(Int.max),
              let p = mmap(nil, Int(size), PROT_READ, MAP_SHARED, fd, 0), p != MAP_FAILED else { return }
        mapping = UnsafeRawBufferPointer(start: p, count: Int(size))
    }

    /// From the mapping when there is one, through a guarded copy: if another process truncated
    /// the file, or the disk fails the page, the copy's bus error becomes an I/O error here
    /// instead of the end of the process.
    func read(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if let mapping {
            guard offset < UInt64(mapping.count) else { return 0 }
            let n = min(buffer.count, mapping.count - Int(offset))
            if n > 0, strata_guarded_copy(buffer.baseAddress!, mapping.baseAddress! + Int(offset), n) != 0 {
                throw StorageError.io(operation: "read (mapped; the file shrank or the disk failed)", path: path, errno: EIO)
            }
            return n
        }
        return try readOnce(at: offset, into: buffer)
    }

    func readOnce(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let n = pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
            if n >= 0 { return n }
            if errno != EINTR { throw posixError("pread", path) }
        }
    }

    func close() {
        if isClosed.exchange(true, ordering: .relaxed) == false { _ = systemClose(fd) }
    }
}

final class PosixFileLock: FileLock {
    private let fd: Int32
    private let released = Atomic<Bool>(false)

    init(fd: Int32) { self.fd = fd }
    deinit { release() }

    func release() {
        if released.exchange(true, ordering: .relaxed) == false {
            flock(fd, LOCK_UN)
            _ = systemClose(fd)
        }
    }
}
