/// The payload of one WAL record (SPEC.md §5.1): the first sequence number of the batch (u64
/// LE), then the batch as ``WriteBatch`` encodes it: its operation count (u32 LE) and the
/// operations, which take the sequence numbers from the first on. The one type that writes and
/// reads that layout: the log writer frames it, recovery, the verifier, the archive's restore
/// and the fuzz probes parse it. The record's own framing (checksum, length, durable mark) is
/// ``LogWriter`` and ``LogReader``'s.
package struct WALRecord {
    /// The sequence number and the operation count.
    static let headerBytes = 12

    /// The sequence number of the first operation.
    let firstSequence: UInt64
    /// How many operations the batch holds, each with its own sequence number.
    let operationCount: UInt32
    /// The batch's encoding: the count and the operations.
    let batch: UnsafeRawBufferPointer

    /// Parses a record's payload. Numbers from disk are checked before any arithmetic: a record
    /// too short, or whose sequence numbers run past ``StorageLimits/maxSequence``, is
    /// corruption at `offset` of `path`.
    package init(parsing payload: UnsafeRawBufferPointer, path: String, offset: Int) throws {
        guard payload.count >= Self.headerBytes else {
            throw StorageError.corruption(file: path, offset: UInt64(offset), reason: "WAL record too short")
        }
        let first = loadFixed64(payload, 0), count = loadFixed32(payload, 8)
        guard first <= StorageLimits.maxSequence else {
            throw StorageError.corruption(file: path, offset: UInt64(offset), reason: "WAL record with sequence \(first) past the limit")
        }
        // The last operation's sequence, first + count - 1, must stay below the limit.
        guard UInt64(count) <= StorageLimits.maxSequence - first else {
            throw StorageError.corruption(file: path, offset: UInt64(offset), reason: "WAL record runs past the last sequence number")
        }
        firstSequence = first
        operationCount = count
        batch = UnsafeRawBufferPointer(rebasing: payload[8...])
    }

    /// The sequence number of the last operation; nil for a batch of none.
    var lastSequence: UInt64? { operationCount == 0 ? nil : firstSequence + UInt64(operationCount) - 1 }

    /// Calls `body` with each operation, in order; a batch that does not decode exactly is
    /// corruption at `offset` of `path`.
    package func forEachOperation(path: String, offset: Int, _ body: (BatchOperation) throws -> Void) throws {
        guard try BatchDecoder.forEach(batch, body) else {
            throw StorageError.corruption(file: path, offset: UInt64(offset), reason: "malformed write batch")
        }
    }

    /// Writes a record's payload ahead of `batch`: its first sequence number (the batch starts
    /// with its count).
    static func appendHeader(firstSequence: UInt64, to out: inout ByteWriter) {
        out.appendFixed64(firstSequence)
    }

    /// The payload's size for a batch of `batchBytes`.
    static func payloadBytes(batchBytes: Int) -> Int { 8 + batchBytes }

    /// Whether a record found after damage looks like a batch that follows sequence `start`
    /// (SPEC.md §5.2): an end-of-log record, or a batch (sequence, operation count, operations
    /// of at least 3 bytes each, the first starting with its kind) whose sequence is past
    /// `start`. Random bytes pass about once in a million offsets; the checksum decides the rest.
    static func isPlausible(payloadHead head: UnsafeRawBufferPointer, payloadCount: Int, after start: UInt64) -> Bool {
        if payloadCount == 0 { return true }
        guard payloadCount >= headerBytes, head.count >= headerBytes, loadFixed64(head, 0) > start else { return false }
        let operations = Int(loadFixed32(head, 8))
        guard operations <= (payloadCount - headerBytes) / 3 else { return false }
        return operations == 0 || (head.count > headerBytes && EntryKind(rawValue: head[headerBytes]) != nil)
    }

    /// Records of a WAL longer than this are not records (the batch limit, its sequence number
    /// and a durable mark, with room to spare): the bound of a log reader's memory.
    static let maxBytes = StorageLimits.maxBatchBytes + 1024
}
