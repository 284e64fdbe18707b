/// Builds one block: entries with prefix-compressed keys and a restart point every
/// `restartInterval` entries, then the restart array (SPEC.md §Segment, block contents).
///
/// entry = shared key bytes (varint) | unshared key bytes (varint) | value length (varint) |
///         unshared key bytes | value
/// block = entries | restart offsets (4 bytes LE each) | restart count (4 bytes LE)
struct BlockBuilder {
    let restartInterval: Int
    private(set) var buffer = ByteWriter(capacity: 16 * 1024)
    private var restarts: [UInt32] = [0]
    private var counter = 0
    /// The last key added is `lastKey[0..<lastKeyCount]`; bytes past it are stale.
    private var lastKey: [UInt8] = []
    private var lastKeyCount = 0
    private(set) var entryCount = 0

    init(restartInterval: Int) {
        self.restartInterval = restartInterval
    }

    var isEmpty: Bool { entryCount == 0 }

    /// Size of the block if finished now.
    var estimatedSize: Int { buffer.count + restarts.count * 4 + 4 }

    mutating func reset() {
        buffer.removeAll()
        restarts.removeAll(keepingCapacity: true)
        restarts.append(0)
        counter = 0
        lastKeyCount = 0
        entryCount = 0
    }

    /// Adds an entry. REQUIRES: `key` sorts after every key added since the last reset.
    mutating func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        var shared = 0
        if counter < restartInterval {
            let n = min(lastKeyCount, key.count)
            shared = lastKey.withUnsafeBytes { $0.sharedPrefixCount(with: key, limit: n) }
        } else {
            restarts.append(UInt32(buffer.count))
            counter = 0
        }
        let suffix = UnsafeRawBufferPointer(rebasing: key[shared...])
        // Compaction and flush add every entry here: the header and the key suffix are put
        // together on the stack and appended once with the value, not in five appends that
        // each check the buffer's capacity and uniqueness (a tenth of a compaction's time).
        let headerCapacity = 30
        let assembled = headerCapacity + suffix.count
        withUnsafeTemporaryAllocation(byteCount: assembled <= 512 ? assembled : headerCapacity, alignment: 1) { stack in
            var n = ByteWriter.storeVarint(UInt64(shared), in: stack, at: 0)
            n = ByteWriter.storeVarint(UInt64(suffix.count), in: stack, at: n)
            n = ByteWriter.storeVarint(UInt64(value.count), in: stack, at: n)
            if assembled <= 512 {
                if suffix.count > 0 { (stack.baseAddress! + n).copyMemory(from: suffix.baseAddress!, byteCount: suffix.count) }
                buffer.append(UnsafeRawBufferPointer(rebasing: stack[0..<(n + suffix.count)]))
            } else {
                buffer.append(UnsafeRawBufferPointer(rebasing: stack[0..<n]))
                buffer.append(suffix)
            }
        }
        buffer.append(value)
        // The last key is kept in a buffer that only grows: the shared part is already there.
        if lastKey.count < key.count { lastKey.append(contentsOf: repeatElement(0, count: key.count - lastKey.count)) }
        if suffix.count > 0 {
            lastKey.withUnsafeMutableBytes { ($0.baseAddress! + shared).copyMemory(from: suffix.baseAddress!, byteCount: suffix.count) }
        }
        lastKeyCount = key.count
        counter += 1
        entryCount += 1
    }

    /// Lends the last key added to `body`.
    func withLastKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try lastKey.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<lastKeyCount])) }
    }

    /// Appends the restart array and returns the finished contents.
    mutating func finish() -> [UInt8] {
        appendRestarts()
        return buffer.bytes
    }

    /// Appends the restart array and lends the finished contents to `body`, without copying
    /// them out (the segment writer's per-block path). Call ``reset()`` before adding again.
    mutating func withFinishedContents<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        appendRestarts()
        return try buffer.bytes.withUnsafeBytes(body)
    }

    private mutating func appendRestarts() {
        for r in restarts { buffer.appendFixed32(r) }
        buffer.appendFixed32(UInt32(restarts.count))
    }
}
