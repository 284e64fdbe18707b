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
    private(set) var lastKey: [UInt8] = []
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
        lastKey.removeAll(keepingCapacity: true)
        entryCount = 0
    }

    /// Adds an entry. REQUIRES: `key` sorts after every key added since the last reset.
    mutating func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        var shared = 0
        if counter < restartInterval {
            let n = min(lastKey.count, key.count)
            lastKey.withUnsafeBytes { last in
                while shared < n && last[shared] == key[shared] { shared += 1 }
            }
        } else {
            restarts.append(UInt32(buffer.count))
            counter = 0
        }
        buffer.appendVarint(UInt64(shared))
        buffer.appendVarint(UInt64(key.count - shared))
        buffer.appendVarint(UInt64(value.count))
        buffer.append(UnsafeRawBufferPointer(rebasing: key[shared...]))
        buffer.append(value)
        lastKey.removeSubrange(shared...)
        lastKey.append(contentsOf: UnsafeRawBufferPointer(rebasing: key[shared...]))
        counter += 1
        entryCount += 1
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
