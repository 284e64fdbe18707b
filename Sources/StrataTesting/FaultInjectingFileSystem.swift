import StrataStorage
/// A file system that fails chosen operations of the one it wraps, in the manner of Pebble's
/// errorfs and LevelDB's fault_injection_test: "the Nth write fails with ENOSPC, after writing
/// 3 of its bytes", "every sync fails from now on", "the machine stops at the 40th operation".
/// It wraps any file system: ``InMemoryFileSystem`` (whose ``InMemoryFileSystem/simulateCrash(_:)``
/// then plays the power cut) or the real one.
///
/// ```swift
/// let memory = InMemoryFileSystem()
/// let fs = FaultInjectingFileSystem(wrapping: memory)
/// var engine = try Engine.open(directory: "/db", options: .init(fileSystem: fs))
/// fs.injectFault(.init(afterOperations: 3, error: .diskFull(path: "injected")))
/// // ... writes fail from the 4th operation on ...
/// memory.simulateCrash(.dropUnsynced)
/// ```
public final class FaultInjectingFileSystem: FileSystem, Sendable {
    /// Which operations a fault may hit.
    public enum Operation: Sendable, Hashable, CaseIterable {
        /// Opening a file to write, append to or read.
        case open
        /// An append, or a truncation.
        case write
        case sync
        case rename
        case remove
        case syncDirectory
        /// A hard link (a backup's segments, ``FileSystem/linkFile(_:to:)``).
        case link
        /// A read of a file opened with `openReadable` or `openImmutable`. Faulted only when a
        /// fault names it: the default set is every operation that changes something.
        case read

        /// Every operation that changes a file or a directory (not ``read``).
        public static let changing: Set<Operation> = [.open, .write, .sync, .rename, .remove, .syncDirectory, .link]
    }

    /// Fails the operation after `afterOperations` matching operations have succeeded. A failed
    /// write may first write a prefix of its bytes (`tornBytes`), as a real disk can.
    public struct Fault: Sendable {
        public var afterOperations: Int
        public var operations: Set<Operation>
        public var error: StorageError
        public var tornBytes: Int
        /// When false the fault fires once; when true every later matching operation fails too.
        public var sticky: Bool
        /// When not sticky: how many matching operations in a row fail before the fault clears
        /// (2: an append fails, then the truncation that would take it back).
        public var times: Int
        /// When true, once the fault fires every later operation of any kind fails: the
        /// "machine" stopped there (crash-point tests then simulate the crash on the wrapped
        /// file system).
        public var haltsEverything: Bool

        public init(afterOperations: Int, operations: Set<Operation> = Operation.changing,
                    error: StorageError, tornBytes: Int = 0, sticky: Bool = false, haltsEverything: Bool = false, times: Int = 1) {
            self.times = max(1, times)
            self.afterOperations = afterOperations
            self.operations = operations
            self.error = error
            self.tornBytes = tornBytes
            self.sticky = sticky
            self.haltsEverything = haltsEverything
        }
    }

    private struct State {
        var fault: Fault?
        /// Matching operations that succeeded since the fault was armed.
        var matched = 0
        var operations = 0
        var reads = 0
        /// Times the armed fault fired.
        var fired = 0
        /// A `haltsEverything` fault fired: the machine stopped, nothing failed on its own.
        var halted = false
    }

    /// The file system faults are injected into.
    public let wrapped: any FileSystem
    private let state = LockedValue(State())

    public init(wrapping fileSystem: any FileSystem) {
        wrapped = fileSystem
    }

    /// Number of operations (of the kinds in ``Operation``, reads apart) performed so far, to
    /// script "fail the Nth operation".
    public var operationCount: Int { state.withLock { $0.operations } }

    /// Number of reads performed so far, to script "fail the Nth read".
    public var readCount: Int { state.withLock { $0.reads } }

    /// Operations the armed fault matched and let through so far.
    public var matchedOperationCount: Int { state.withLock { $0.matched } }

    /// Arms a fault; replaces any earlier one (nil disarms).
    public func injectFault(_ fault: Fault?) {
        state.withLock {
            $0.fault = fault
            $0.matched = 0
            $0.fired = 0
            $0.halted = false
        }
    }

    /// Counts an operation; returns the fault that fails it, if one fires.
    private func fire(_ op: Operation) -> Fault? {
        state.withLock { s in
            if op == .read { s.reads += 1 } else { s.operations += 1 }
            guard let fault = s.fault, fault.operations.contains(op) else { return nil }
            guard s.matched >= fault.afterOperations else {
                s.matched += 1
                return nil
            }
            if fault.haltsEverything {
                s.halted = true
                s.fault = Fault(afterOperations: 0, operations: Set(Operation.allCases), error: fault.error, sticky: true)
            } else if !fault.sticky {
                s.fired += 1
                if s.fired >= fault.times { s.fault = nil }
            }
            return fault
        }
    }

    fileprivate func check(_ op: Operation) throws(StorageError) {
        if let fault = fire(op) { throw fault.error }
    }

    /// Whether a `haltsEverything` fault stopped the machine: its failures are a power cut,
    /// not a disk that failed a writeback.
    fileprivate var isHalted: Bool { state.withLock { $0.halted } }

    // MARK: FileSystem

    public func createDirectory(_ path: String) throws { try wrapped.createDirectory(path) }
    public func fileExists(_ path: String) -> Bool { wrapped.fileExists(path) }
    public func directoryExists(_ path: String) -> Bool { wrapped.directoryExists(path) }
    public func listDirectory(_ path: String) throws -> [String] { try wrapped.listDirectory(path) }

    public func openWritable(_ path: String, truncate: Bool) throws -> any WritableFile {
        try check(.open)
        return FaultInjectingWritableFile(try wrapped.openWritable(path, truncate: truncate), fs: self)
    }

    public func openLog(_ path: String) throws -> any WritableFile {
        try check(.open)
        return FaultInjectingWritableFile(try wrapped.openLog(path), fs: self)
    }

    public func openReadable(_ path: String) throws -> any ReadableFile {
        try check(.open)
        return FaultInjectingReadableFile(try wrapped.openReadable(path), fs: self)
    }

    public func openImmutable(_ path: String) throws -> any ReadableFile {
        try check(.open)
        return FaultInjectingReadableFile(try wrapped.openImmutable(path), fs: self)
    }

    public func removeFile(_ path: String) throws {
        try check(.remove)
        try wrapped.removeFile(path)
    }

    public func rename(_ from: String, to: String) throws {
        try check(.rename)
        try wrapped.rename(from, to: to)
    }

    public func linkFile(_ from: String, to: String) throws {
        try check(.link)
        try wrapped.linkFile(from, to: to)
    }

    public func syncDirectory(_ path: String) throws {
        try check(.syncDirectory)
        try wrapped.syncDirectory(path)
    }

    public func lockFile(_ path: String, shared: Bool) throws -> any FileLock { try wrapped.lockFile(path, shared: shared) }
    public func restrictPermissions(ofStoreDirectory path: String, files names: [String]) {
        wrapped.restrictPermissions(ofStoreDirectory: path, files: names)
    }

    /// An append that a fault fails, after writing the fault's torn prefix.
    fileprivate func append(_ bytes: UnsafeRawBufferPointer, to file: any WritableFile) throws {
        guard let fault = fire(.write) else { return try file.append(bytes) }
        let torn = min(fault.tornBytes, bytes.count)
        if torn > 0 { try? file.append(UnsafeRawBufferPointer(rebasing: bytes[0..<torn])) }
        throw fault.error
    }
}

/// A file of a ``FaultInjectingFileSystem``: its appends, syncs and truncations may fail.
final class FaultInjectingWritableFile: WritableFile {
    private let file: any WritableFile
    private let fs: FaultInjectingFileSystem

    init(_ file: any WritableFile, fs: FaultInjectingFileSystem) {
        self.file = file
        self.fs = fs
    }

    var size: UInt64 { file.size }

    func append(_ bytes: UnsafeRawBufferPointer) throws { try fs.append(bytes, to: file) }

    func sync() throws {
        do {
            try fs.check(.sync)
        } catch {
            // Linux after a failed writeback: the pages it could not write are marked clean,
            // so they never reach the disk and a later sync succeeds without them. The crash
            // model drops them at the next power cut. (A halted machine failed nothing: the
            // power cut decides what its unsynced pages become.)
            switch fs.isHalted ? nil : file {
            case let f as InMemoryWritableFile: f.failSync()
            case let f as InMemoryReservingLogFile: f.failSync()
            default: break
            }
            throw error
        }
        try file.sync()
    }

    func truncate(to size: UInt64) throws {
        try fs.check(.write)
        try file.truncate(to: size)
    }

    func close() throws { try file.close() }
}

/// A file of a ``FaultInjectingFileSystem`` opened for reading: its reads may fail (a media
/// error, a file system that went away).
final class FaultInjectingReadableFile: ReadableFile {
    private let file: any ReadableFile
    private let fs: FaultInjectingFileSystem

    init(_ file: any ReadableFile, fs: FaultInjectingFileSystem) {
        self.file = file
        self.fs = fs
    }

    var size: UInt64 { file.size }

    func read(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try fs.check(.read)
        return try file.read(at: offset, into: buffer)
    }

    func readOnce(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try fs.check(.read)
        return try file.readOnce(at: offset, into: buffer)
    }

    func close() { file.close() }
}
