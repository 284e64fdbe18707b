#if os(Linux)
import CStrataSupport
import Glibc

/// A log file (the WAL) appended through a shared mapping of space reserved ahead, so that an
/// append is a copy into the page cache rather than a `write(2)` per record: that system call
/// was 71% of a single-writer put. The copy is as safe as `write(2)` against a process crash
/// (the pages belong to the kernel's page cache, not to the process) and `fdatasync` makes it
/// durable the same way.
///
/// Space is reserved with `posix_fallocate` in steps of ``reserveBytes`` before a byte is copied
/// into it, so a full disk fails the reservation with a typed error instead of a `SIGBUS` on a
/// store into an unbacked page. Until ``close()`` cuts the file back to its appended size, the
/// file ends in zero bytes, which a log reader takes as its end (SPEC.md §5.2).
///
/// No append can end the process with a bus error: a store into the mapping that the kernel
/// cannot back (another process truncated the file, a copy-on-write file system ran out of
/// space the reservation did not cover, a media error) is a guarded copy that fails with a typed
/// error instead. The file is then *broken*: every later append and ``truncate(to:)`` throws, so
/// the engine stops writes until the store is reopened (SPEC.md §5.3), since nobody can say what
/// the log holds any more. A window that `MADV_POPULATE_WRITE` cannot fault in is never stored
/// into; appends then go through `pwrite`.
///
/// Linux only: ``PosixFileSystem/openLog(_:)`` uses `write(2)` elsewhere.
final class PosixMappedLogFile: WritableFile {
    /// Space reserved, and mapped, at a time. A multiple of every page size in use.
    static let reserveBytes: UInt64 = 1 << 20
    /// Appends from this size on go through `pwrite`: for them a system call costs less than
    /// the page faults of a copy into fresh pages of the mapping.
    static let directWriteBytes = 16 * 1024

    private let fd: Int32
    private let path: String
    private(set) var size: UInt64 = 0
    /// The file's length on disk: appended bytes, then reserved zero bytes.
    private var reserved: UInt64 = 0
    /// Highest offset an append may have written: what ``truncate(to:)`` must zero again.
    private var touched: UInt64 = 0
    /// The mapping of `[windowStart, windowStart + reserveBytes)`, the step holding `size`;
    /// nil before the first append or if mapping failed (appends then use `pwrite`).
    private var window: UnsafeMutableRawPointer?
    private var windowStart: UInt64 = 0
    /// The step whose first small appends went out with `pwrite`, and how many did: the next
    /// one after ``pwritesBeforeMapping`` maps it.
    private var pwriteStep: UInt64 = .max
    private var pwritesInStep = 0
    /// Small appends a step takes with `pwrite` before it is mapped: two, the most a store
    /// opened and closed without writes appends to its new log (an encrypted log's header, then
    /// the end-of-log record).
    static let pwritesBeforeMapping = 2
    private var mappingFailed = false
    /// Set when a store into the mapping faulted: what the file holds is unknown.
    private var broken: StorageError?
    private var isClosed = false

    /// Creates or empties the file at `path`.
    init(path: String, mode: mode_t = 0o600) throws {
        let (fd, _) = try PosixFileSystem.openRegularFile(path, O_RDWR | O_CREAT | O_TRUNC, mode: mode)
        self.fd = fd
        self.path = path
    }

    deinit {
        unmapWindow()
        if !isClosed { _ = systemClose(fd) }
    }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        if let broken { throw broken }
        guard !bytes.isEmpty else { return }
        let end = size + UInt64(bytes.count)
        if let window, size >= windowStart, end <= windowStart + Self.reserveBytes {
            try copy(bytes, into: window, end: end)
            return
        }
        try appendOutsideWindow(bytes, end: end)
    }

    @inline(__always)
    private func copy(_ bytes: UnsafeRawBufferPointer, into window: UnsafeMutableRawPointer, end: UInt64) throws {
        touched = max(touched, end)
        guard strata_guarded_copy(window + Int(size - windowStart), bytes.baseAddress!, bytes.count) == 0 else {
            let error = StorageError.io(operation: "write (mapped; the file shrank or the disk failed)", path: path, errno: EIO)
            broken = error
            unmapWindow()
            mappingFailed = true
            throw error
        }
        size = end
    }

    /// An append that does not fit the mapped step: reserves what it needs, then moves the
    /// window to the step that holds it, or, for a large append or one that crosses a step's
    /// end, writes it with `pwrite` (the page cache is shared with the mapping).
    private func appendOutsideWindow(_ bytes: UnsafeRawBufferPointer, end: UInt64) throws {
        let step = Self.reserveBytes
        if end > reserved {
            let target = (end + step - 1) / step * step
            // posix_fallocate returns the error number instead of setting errno.
            let r = posix_fallocate(fd, off_t(reserved), off_t(target - reserved))
            if r != 0 { throw posixError("fallocate", path, r) }
            reserved = target
        }
        if bytes.count < Self.directWriteBytes, size / step == (end - 1) / step {
            // A step is mapped at its third small append: the first two go out with `pwrite`,
            // so that a log that takes a record or two and closes (the end-of-log record of a
            // store opened and closed without writes, after the header when it is encrypted)
            // does not fault in a whole step. That was 8% of a plaintext open and close
            // (Benchmarks/RESULTS.md), and 2 of an encrypted close's 3–5 ms when the header
            // already took the one `pwrite` (2026-12-07). A stream of appends pays two
            // `pwrite`s a step.
            if pwriteStep != size / step {
                pwriteStep = size / step
                pwritesInStep = 0
            }
            if pwritesInStep >= Self.pwritesBeforeMapping {
                moveWindow(to: size / step * step)
                if let window {
                    try copy(bytes, into: window, end: end)
                    return
                }
            } else {
                pwritesInStep += 1
            }
        }
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(size) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                let e = posixError("pwrite", path)
                touched = max(touched, size + UInt64(done))
                throw e
            }
            done += n
        }
        size = end
        touched = max(touched, end)
    }

    private func moveWindow(to start: UInt64) {
        if window != nil && start == windowStart { return }
        unmapWindow()
        guard !mappingFailed, start + Self.reserveBytes <= reserved else { return }
        guard let p = mmap(nil, Int(Self.reserveBytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(start)),
              p != MAP_FAILED else {
            mappingFailed = true
            return
        }
        // Faults the step in writable in one call, instead of a fault every 4 KiB of log. It
        // fails, instead of raising SIGBUS, where a page cannot be backed: such a window is not
        // used. EINVAL is a kernel before 5.14, which only lacks the call.
        if madvise(p, Int(Self.reserveBytes), MADV_POPULATE_WRITE) != 0, errno != EINVAL {
            munmap(p, Int(Self.reserveBytes))
            mappingFailed = true
            return
        }
        window = p
        windowStart = start
    }

    private func unmapWindow() {
        if let window { munmap(window, Int(Self.reserveBytes)) }
        window = nil
    }

    func sync() throws {
        if let broken { throw broken }
        // Covers the pages stored through the mapping: they share the file's page cache.
        let r = fdatasync(fd)
        if r != 0 { throw posixError("fdatasync", path) }
    }

    /// Takes back appends after `newSize` by zeroing them, so that the reserved space still
    /// reads as the end of the log.
    func truncate(to requested: UInt64) throws {
        if let broken { throw broken }
        let newSize = min(requested, size)
        var offset = newSize
        let zeros = [UInt8](repeating: 0, count: 64 * 1024)
        while offset < touched {
            let n = zeros.withUnsafeBytes { z in
                pwrite(fd, z.baseAddress!, Int(min(UInt64(z.count), touched - offset)), off_t(offset))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw posixError("pwrite", path)
            }
            offset += UInt64(n)
        }
        size = newSize
        touched = newSize
    }

    /// Cuts the reserved zero bytes off and closes the file.
    func close() throws {
        guard !isClosed else { return }
        isClosed = true
        unmapWindow()
        let cut = ftruncate(fd, off_t(size)) == 0 ? nil : posixError("ftruncate", path)
        if systemClose(fd) != 0 { throw posixError("close", path) }
        if let cut { throw cut }
    }
}
#endif
