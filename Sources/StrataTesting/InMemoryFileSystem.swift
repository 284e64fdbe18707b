import StrataStorage
import Synchronization

/// A file system in memory that remembers what was synced, so tests can simulate a power cut, in
/// the manner of LevelDB's fault_injection_test. I/O errors come from wrapping it in a
/// ``FaultInjectingFileSystem``.
///
/// ```swift
/// let fs = InMemoryFileSystem()
/// var engine = try Engine.open(directory: "/db", options: .init(fileSystem: fs))
/// // ... writes ...
/// fs.simulateCrash(.dropUnsynced)          // power cut: unsynced bytes and entries vanish
/// engine = try Engine.open(directory: "/db", options: .init(fileSystem: fs))
/// ```
public final class InMemoryFileSystem: FileSystem, Sendable {
    /// What survives a simulated crash.
    public enum CrashPolicy: Sendable, Equatable {
        /// The process died but the kernel did not: everything written survives.
        case keepEverything
        /// Power cut: only synced bytes survive, and only directory entries that were synced.
        case dropUnsynced
        /// Power cut where the unsynced tail of each file survives up to a random length.
        case keepRandomPrefixOfUnsynced(seed: UInt64)
        /// Power cut where the unsynced tail of each file is replaced by garbage of its length.
        case garbageUnsyncedTail(seed: UInt64)
        /// Power cut where the disk wrote any subset of the unsynced pages, not a prefix: the
        /// kernel writes dirty pages back in no particular order. Each `pageBytes` page of a
        /// file's unsynced part survives or not at random; one that did not reads as zeros (an
        /// unwritten extent) or, with `garbage`, as whatever the disk held before. The file's
        /// length is anything from its synced length to its written one.
        case keepRandomUnsyncedPages(seed: UInt64, pageBytes: Int, garbage: Bool)
        /// Power cut where file contents survive whole but files whose directory entry was never
        /// synced (and renames not followed by a directory sync) vanish.
        case dropUnsyncedDirectoryEntries
    }

    struct FileData {
        var bytes: [UInt8] = []
        var syncedBytes: [UInt8] = []
        /// Byte ranges whose writeback failed (a sync that failed): Linux marks those pages
        /// clean, so they never reach the disk, and a later sync reports success without them.
        /// The process still reads them from the page cache; a power cut takes them.
        var lost: [Range<Int>] = []

        /// `bytes` as the disk could ever hold them: the lost ranges keep what was synced
        /// before (zeros past it, an unwritten extent).
        var writable: [UInt8] {
            guard !lost.isEmpty else { return bytes }
            var out = bytes
            for r in lost {
                for i in r where i < out.count { out[i] = i < syncedBytes.count ? syncedBytes[i] : 0 }
            }
            return out
        }

        /// A successful sync: everything written is durable, except what a failed one lost.
        mutating func sync() {
            syncedBytes = writable
        }

        /// A failed sync: what it should have written is lost (see `lost`).
        mutating func failSync() {
            var same = 0
            let n = min(bytes.count, syncedBytes.count)
            while same < n && bytes[same] == syncedBytes[same] { same += 1 }
            if same < bytes.count { lost.append(same..<bytes.count) }
        }

        /// Cuts the file back to `count` bytes.
        mutating func truncate(to count: Int) {
            bytes = Array(bytes.prefix(count))
            lost = lost.compactMap { r in r.lowerBound < count ? r.lowerBound..<min(r.upperBound, count) : nil }
        }
    }

    struct State {
        var files: [Int: FileData] = [:]
        var names: [String: Int] = [:]
        var durableNames: [String: Int] = [:]
        var directories: Set<String> = ["/"]
        /// Lock holders per path: -1 for an exclusive holder, else the number of shared ones.
        var locks: [String: Int] = [:]
        var nextFileId = 1
        var generation = 0
    }

    let state = LockedValue(State())

    /// Everything the file system holds at one moment (files, synced and not, names, locks),
    /// to return to with ``restore(_:)``: a test that runs many cases from one starting state.
    ///
    /// ```swift
    /// let start = fs.image()
    /// for cut in offsets { fs.restore(start); /* damage, open, check */ }
    /// ```
    public struct Image {
        fileprivate let state: State
    }

    /// A copy of what the file system holds now.
    public func image() -> Image { Image(state: state.withLock { $0 }) }

    /// Puts back what the file system held when `image` was taken.
    public func restore(_ image: Image) { state.withLock { $0 = image.state } }

    /// See ``init(logReserveBytes:)``.
    let logReserveBytes: Int

    /// - Parameter logReserveBytes: when above 0, logs (``openLog(_:)``) are written as the
    ///   mapped WAL of `PosixFileSystem` writes them on Linux: space is reserved ahead in steps
    ///   of this many zero bytes and appends fill it in place, so that a power cut meets a file
    ///   rewritten since its last sync (zeros turned into records), whose pages reach the disk
    ///   in any order. `close()` cuts the reserved zeros off.
    public init(logReserveBytes: Int = 0) {
        self.logReserveBytes = max(0, logReserveBytes)
    }

    public func openLog(_ path: String) throws -> any WritableFile {
        let file = try openWritable(path, truncate: true)
        guard logReserveBytes > 0, let plain = file as? InMemoryWritableFile else { return file }
        return InMemoryReservingLogFile(plain, step: logReserveBytes)
    }

    /// Simulates a crash: open files and locks of the old "process" become unusable, and each
    /// file keeps what `policy` says survives.
    public func simulateCrash(_ policy: CrashPolicy) {
        state.withLock { s in
            var rng: UInt64 = 0
            switch policy {
            case let .keepRandomPrefixOfUnsynced(seed), let .garbageUnsyncedTail(seed), let .keepRandomUnsyncedPages(seed, _, _):
                rng = seed | 1
            default: break
            }
            func next() -> UInt64 {
                rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17
                return rng
            }
            if policy != .keepEverything { s.names = s.durableNames }
            for id in Set(s.names.values) {
                guard var f = s.files[id] else { continue }
                // What a failed sync lost never reached the disk: not even a random page of it.
                if policy != .keepEverything { f.bytes = f.writable }
                f.lost = []
                let synced = f.syncedBytes
                let isAppendOnly = f.bytes.count >= synced.count && f.bytes.starts(with: synced)
                switch policy {
                case .keepEverything:
                    break
                case .dropUnsynced:
                    f.bytes = synced
                case .dropUnsyncedDirectoryEntries:
                    break
                case .keepRandomPrefixOfUnsynced:
                    if isAppendOnly {
                        let extra = f.bytes.count - synced.count
                        let keep = extra == 0 ? 0 : Int(next() % UInt64(extra + 1))
                        f.bytes = Array(f.bytes.prefix(synced.count + keep))
                    } else {
                        f.bytes = synced
                    }
                case let .keepRandomUnsyncedPages(_, pageBytes, garbage):
                    if isAppendOnly {
                        let extra = f.bytes.count - synced.count
                        let length = synced.count + (extra == 0 ? 0 : Int(next() % UInt64(extra + 1)))
                        var page = synced.count / pageBytes * pageBytes
                        while page < length {
                            let end = min(page + pageBytes, length)
                            if next() % 2 == 0 {
                                // This page never reached the disk: what was synced of it stays.
                                for i in max(page, synced.count)..<end { f.bytes[i] = garbage ? UInt8(truncatingIfNeeded: next()) : 0 }
                            }
                            page += pageBytes
                        }
                        f.bytes = Array(f.bytes.prefix(length))
                    } else {
                        // Rewritten since its last sync (a log cut back, a mapped log's reserved
                        // zeros filled in): each page holds its synced or its new content, and
                        // the length is either one.
                        let length = next() % 2 == 0 ? synced.count : f.bytes.count
                        var mixed = [UInt8](repeating: 0, count: length)
                        var page = 0
                        while page < length {
                            let end = min(page + pageBytes, length)
                            let takeNew = next() % 2 == 0
                            for i in page..<end {
                                if takeNew {
                                    mixed[i] = i < f.bytes.count ? f.bytes[i] : 0
                                } else {
                                    mixed[i] = i < synced.count ? synced[i] : (garbage ? UInt8(truncatingIfNeeded: next()) : 0)
                                }
                            }
                            page += pageBytes
                        }
                        f.bytes = mixed
                    }
                case .garbageUnsyncedTail:
                    if isAppendOnly {
                        for i in synced.count..<f.bytes.count { f.bytes[i] = UInt8(truncatingIfNeeded: next()) }
                    } else {
                        f.bytes = synced
                    }
                }
                f.syncedBytes = f.bytes
                s.files[id] = f
            }
            s.durableNames = s.names
            s.files = s.files.filter { Set(s.names.values).contains($0.key) }
            s.locks.removeAll()
            s.generation += 1
        }
    }

    /// The current bytes of a file, for tests that damage files on purpose.
    public func contents(of path: String) -> [UInt8]? {
        state.withLock { s in s.names[path].flatMap { s.files[$0]?.bytes } }
    }

    /// Replaces a file's bytes (synced), for tests that damage files on purpose.
    public func setContents(of path: String, to bytes: [UInt8]) {
        state.withLock { s in
            let id = s.names[path] ?? { let id = s.nextFileId; s.nextFileId += 1; return id }()
            s.files[id] = FileData(bytes: bytes, syncedBytes: bytes)
            s.names[path] = id
            s.durableNames[path] = id
        }
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let p = String(path[..<slash])
        return p.isEmpty ? "/" : p
    }

    public func createDirectory(_ path: String) throws {
        state.withLock { s in
            var prefix = ""
            for part in path.split(separator: "/") {
                prefix += "/" + part
                s.directories.insert(prefix)
            }
        }
    }

    public func fileExists(_ path: String) -> Bool { state.withLock { $0.names[path] != nil } }

    public func directoryExists(_ path: String) -> Bool {
        let p = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        return state.withLock { $0.directories.contains(p) }
    }

    public func listDirectory(_ path: String) throws -> [String] {
        let dir = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        return try state.withLock { s in
            guard s.directories.contains(dir) else { throw StorageError.io(operation: "opendir", path: path, errno: 2) }
            return s.names.keys.filter { Self.parent(of: $0) == dir }.map { String($0.dropFirst(dir == "/" ? 1 : dir.count + 1)) }
        }
    }

    public func openWritable(_ path: String, truncate: Bool) throws -> any WritableFile {
        try state.withLock { s in
            guard s.directories.contains(Self.parent(of: path)) else {
                throw StorageError.io(operation: "open", path: path, errno: 2)
            }
            let id: Int
            if let existing = s.names[path] {
                id = existing
                if truncate { s.files[id]!.bytes = [] }
            } else {
                id = s.nextFileId
                s.nextFileId += 1
                s.files[id] = FileData()
                s.names[path] = id
            }
            return InMemoryWritableFile(fs: self, id: id, path: path, generation: s.generation, size: UInt64(s.files[id]!.bytes.count))
        }
    }

    public func openReadable(_ path: String) throws -> any ReadableFile {
        try state.withLock { s in
            guard let id = s.names[path], let f = s.files[id] else {
                throw StorageError.io(operation: "open", path: path, errno: 2)
            }
            // A reader sees the bytes as of open; writers only append to files nobody reads.
            return InMemoryReadableFile(bytes: f.bytes)
        }
    }

    public func removeFile(_ path: String) throws {
        state.withLock { s in
            s.names[path] = nil
        }
    }

    public func rename(_ from: String, to: String) throws {
        try state.withLock { s in
            guard let id = s.names[from] else { throw StorageError.io(operation: "rename", path: from, errno: 2) }
            s.names[from] = nil
            s.names[to] = id
        }
    }

    /// A second name for the file at `from`, as a hard link is: both names reach the same bytes,
    /// and each name's directory entry is durable once its directory is synced.
    public func linkFile(_ from: String, to: String) throws {
        try state.withLock { s in
            guard let id = s.names[from] else { throw StorageError.io(operation: "link", path: from, errno: 2) }
            guard s.names[to] == nil else { throw StorageError.io(operation: "link", path: to, errno: 17) }
            s.names[to] = id
        }
    }

    public func syncDirectory(_ path: String) throws {
        state.withLock { s in
            let dir = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
            for (name, _) in s.durableNames where Self.parent(of: name) == dir && s.names[name] == nil {
                s.durableNames[name] = nil
            }
            for (name, id) in s.names where Self.parent(of: name) == dir {
                s.durableNames[name] = id
            }
        }
    }

    public func lockFile(_ path: String, shared: Bool) throws -> any FileLock {
        try state.withLock { s in
            let holders = s.locks[path] ?? 0
            if holders < 0 || (!shared && holders > 0) { throw StorageError.locked(path: path) }
            if shared && s.names[path] == nil { throw StorageError.io(operation: "open", path: path, errno: 2) }
            s.locks[path] = shared ? holders + 1 : -1
            if s.names[path] == nil {
                let id = s.nextFileId
                s.nextFileId += 1
                s.files[id] = FileData()
                s.names[path] = id
            }
            return InMemoryFileLock(fs: self, path: path, generation: s.generation)
        }
    }

    fileprivate func withFile<R>(_ id: Int, generation: Int, path: String,
                                 _ body: (inout FileData, inout State) throws -> R) throws -> R {
        try state.withLock { s in
            guard s.generation == generation, s.files[id] != nil else {
                throw StorageError.io(operation: "write", path: path, errno: 9) // EBADF: crashed
            }
            var f = s.files[id]!
            defer { s.files[id] = f }
            return try body(&f, &s)
        }
    }
}

final class InMemoryWritableFile: WritableFile {
    let fs: InMemoryFileSystem
    let id: Int
    let path: String
    let generation: Int
    private(set) var size: UInt64

    init(fs: InMemoryFileSystem, id: Int, path: String, generation: Int, size: UInt64) {
        self.fs = fs
        self.id = id
        self.path = path
        self.generation = generation
        self.size = size
    }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        try fs.withFile(id, generation: generation, path: path) { f, _ in f.bytes.append(contentsOf: bytes) }
        size += UInt64(bytes.count)
    }

    func sync() throws {
        try fs.withFile(id, generation: generation, path: path) { f, _ in f.sync() }
    }

    /// A sync that failed: what it should have written is lost to a power cut, even after a
    /// later successful sync (see `FileData.lost`).
    func failSync() {
        _ = try? fs.withFile(id, generation: generation, path: path) { f, _ in f.failSync() }
    }

    func truncate(to newSize: UInt64) throws {
        try fs.withFile(id, generation: generation, path: path) { f, _ in f.truncate(to: Int(newSize)) }
        size = newSize
    }

    /// Writes `bytes` at `offset`, over what is there (a mapped log's reserved zeros).
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws {
        try fs.withFile(id, generation: generation, path: path) { f, _ in
            if f.bytes.count < offset + bytes.count { f.bytes += [UInt8](repeating: 0, count: offset + bytes.count - f.bytes.count) }
            f.bytes.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
        }
    }

    /// Appends `count` zero bytes (space reserved ahead of a mapped log's appends).
    func reserve(_ count: Int) throws {
        try fs.withFile(id, generation: generation, path: path) { f, _ in f.bytes += [UInt8](repeating: 0, count: count) }
    }

    func close() throws {}
}

/// A log written as `PosixMappedLogFile` writes the WAL on Linux, for crash tests: space is
/// reserved in zero-filled steps and appends write into it in place; `size` is what was
/// appended, the file's length what was reserved, until `close()` cuts the zeros off.
/// Truncating zeroes the bytes taken back, as the mapped log does.
final class InMemoryReservingLogFile: WritableFile {
    private let file: InMemoryWritableFile
    private let step: Int
    private(set) var size: UInt64 = 0
    private var reserved = 0

    init(_ file: InMemoryWritableFile, step: Int) {
        self.file = file
        self.step = step
    }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        let end = Int(size) + bytes.count
        if end > reserved {
            let target = (end + step - 1) / step * step
            try file.reserve(target - reserved)
            reserved = target
        }
        try file.write(bytes, at: Int(size))
        size = UInt64(end)
    }

    func sync() throws { try file.sync() }

    func failSync() { file.failSync() }

    func truncate(to newSize: UInt64) throws {
        guard newSize < size else { return }
        let zeros = [UInt8](repeating: 0, count: Int(size - newSize))
        try zeros.withUnsafeBytes { try file.write($0, at: Int(newSize)) }
        size = newSize
    }

    func close() throws {
        // ftruncate to the appended size: not durable until a sync, like any other change.
        try file.truncate(to: size)
    }
}

final class InMemoryReadableFile: ReadableFile {
    let bytes: [UInt8]
    var size: UInt64 { UInt64(bytes.count) }

    init(bytes: [UInt8]) { self.bytes = bytes }

    func read(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard offset < UInt64(bytes.count) else { return 0 }
        let start = Int(offset)
        let n = min(buffer.count, bytes.count - start)
        bytes.withUnsafeBytes { src in
            buffer.baseAddress!.copyMemory(from: src.baseAddress! + start, byteCount: n)
        }
        return n
    }

    func close() {}
}

final class InMemoryFileLock: FileLock {
    let fs: InMemoryFileSystem
    let path: String
    let generation: Int
    private let released = Atomic<Bool>(false)

    init(fs: InMemoryFileSystem, path: String, generation: Int) {
        self.fs = fs
        self.path = path
        self.generation = generation
    }

    deinit { release() }

    func release() {
        guard released.exchange(true, ordering: .relaxed) == false else { return }
        fs.state.withLock { s in
            guard s.generation == generation, let holders = s.locks[path] else { return }
            s.locks[path] = holders > 1 ? holders - 1 : nil
        }
    }
}
