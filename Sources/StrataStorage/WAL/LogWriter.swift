/// Appends checksummed records to a log file: the framing shared by the write-ahead log and the
/// manifest (SPEC.md §5).
///
/// Record = masked CRC32C (4, LE) | length (4, LE) | payload. The CRC covers the length field
/// and the payload, so a damaged length is caught like damaged data. A WAL record whose length
/// field has ``FormatConstants/logRecordMarkFlag`` set starts its payload with a durable mark
/// (§5.1), which lets recovery tell a torn tail from damage after a power cut.
final class LogWriter {
    let file: any WritableFile
    let path: String
    private var scratch = ByteWriter(capacity: 64 * 1024)
    /// Every byte before this offset was synced by ``sync()``.
    private(set) var durableOffset: UInt64 = 0
    /// Whether the next WAL record must carry a durable mark: this log or an earlier one was
    /// synced since the last mark was appended. Still set when the writer moves on to a new
    /// log, it means no record was appended since: every data record of this log and of every
    /// earlier one is durable, and the new log's first record may say so.
    private(set) var markPending = false
    /// Whether a record framed since the last append carries the pending mark.
    private var markFramed = false

    /// Batches from this size on are appended from the caller's buffer, header and payload
    /// separately, instead of being copied into the framing buffer: a batch of hundreds of
    /// megabytes must not exist twice in memory (SPEC.md §5.1).
    static let directAppendBytes = 1 << 20

    /// Seals each record when the store is encrypted (SPEC.md §14.2); nil for plaintext.
    let sealer: FileSealer?

    init(file: any WritableFile, path: String, sealer: FileSealer? = nil) {
        self.file = file
        self.path = path
        self.sealer = sealer
    }

    /// A writer of a new, empty log: an encrypted one starts with its header (SPEC.md §14.1),
    /// which carries the file's salt. Not synced.
    static func create(file: any WritableFile, path: String, cipher: StoreCipher?) throws -> LogWriter {
        let sealer = cipher?.newFile()
        if let sealer {
            do { try sealer.header.withUnsafeBytes { try file.append($0) } } catch {
                try? file.close()
                throw error
            }
        }
        return LogWriter(file: file, path: path, sealer: sealer)
    }

    /// A writer that appends to an existing log, cut back to `validEnd` first when it is
    /// longer: an encrypted log keeps its header and salt (records are sealed with random nonces,
    /// so appending after a cut never repeats a nonce), unless the header itself is incomplete
    /// (a crash right after the log was created), which is then written afresh.
    static func reopen(_ path: String, validEnd: Int, fileSystem fs: any FileSystem, cipher: StoreCipher?) throws -> LogWriter {
        var sealer: FileSealer?
        var end = UInt64(validEnd)
        if let cipher {
            let readable = try fs.openReadable(path)
            defer { readable.close() }
            if readable.size >= UInt64(EncryptionHeader.bytes), validEnd >= EncryptionHeader.bytes,
               case let .sealed(s) = try EncryptionHeader.read(file: readable, cipher: cipher, path: path) {
                sealer = s
            } else {
                end = 0
            }
        }
        let file = try fs.openWritable(path, truncate: false)
        do {
            if file.size != end { try file.truncate(to: end) }
            if let cipher, end == 0 {
                let fresh = cipher.newFile()
                try fresh.header.withUnsafeBytes { try file.append($0) }
                sealer = fresh
            }
        } catch {
            try? file.close()
            throw error
        }
        return LogWriter(file: file, path: path, sealer: sealer)
    }

    var size: UInt64 { file.size }

    /// Frames `payload` as a plaintext record (tests craft logs with it).
    static func frame(_ payload: UnsafeRawBufferPointer, into out: inout ByteWriter) {
        let start = out.count
        out.appendFixed32(0)
        out.appendFixed32(UInt32(payload.count))
        out.append(payload)
        let crc = out.bytes.withUnsafeBytes { Checksum.crc32c(UnsafeRawBufferPointer(rebasing: $0[(start + 4)...])) }
        out.setFixed32(Checksum.mask(crc), at: start)
    }

    /// Frames `payload` into `out` (no I/O), so several records can go out in one write.
    func frame(_ payload: UnsafeRawBufferPointer, into out: inout ByteWriter) {
        frame(mark: nil, bodyBytes: payload.count, into: &out) { $0.append(payload) }
    }

    /// Frames a WAL record whose payload is `sequence` (u64) followed by the batch encoding,
    /// without building the payload separately (SPEC.md §5.1); the first record framed after
    /// a sync carries the durable mark.
    func frameBatch(sequence: UInt64, batch: [UInt8], into out: inout ByteWriter) {
        frame(mark: takeMark(), bodyBytes: WALRecord.payloadBytes(batchBytes: batch.count), into: &out) {
            WALRecord.appendHeader(firstSequence: sequence, to: &$0)
            $0.append(batch)
        }
    }

    /// Appends one WAL record for a large batch straight from `batch`'s storage: the header
    /// (and mark and sequence) from a small buffer, then the batch, one CRC over both. Cut back
    /// on failure, like ``appendFramed(_:)``.
    func appendBatch(sequence: UInt64, batch: [UInt8]) throws {
        if sealer != nil {
            // Sealing needs the whole record in one buffer: an encrypted log frames it as a
            // small one (a large batch costs one more copy of itself while it is sealed).
            var framed = ByteWriter(capacity: batch.count + 64)
            frameBatch(sequence: sequence, batch: batch, into: &framed)
            try appendFramed(framed.bytes)
            return
        }
        let mark = takeMark()
        let markBytes = mark == nil ? 0 : FormatConstants.logRecordMarkBytes
        var head = ByteWriter(capacity: 32)
        head.appendFixed32(0)
        head.appendFixed32(UInt32(markBytes + WALRecord.payloadBytes(batchBytes: batch.count)) | (mark == nil ? 0 : FormatConstants.logRecordMarkFlag))
        if let mark { head.appendFixed64(mark) }
        WALRecord.appendHeader(firstSequence: sequence, to: &head)
        let crc = head.bytes.withUnsafeBytes { h in
            batch.withUnsafeBytes { b in Checksum.crc32c(b, extending: Checksum.crc32c(UnsafeRawBufferPointer(rebasing: h[4...]))) }
        }
        head.setFixed32(Checksum.mask(crc), at: 0)
        let before = file.size
        do {
            try head.bytes.withUnsafeBytes { try file.append($0) }
            try batch.withUnsafeBytes { try file.append($0) }
        } catch {
            markFramed = false
            try? file.truncate(to: before)
            throw error
        }
        recordAppended()
    }

    /// The mark the next record carries, if one is pending and none is framed yet.
    private func takeMark() -> UInt64? {
        guard markPending, !markFramed else { return nil }
        markFramed = true
        return durableOffset
    }

    private func recordAppended() {
        if markFramed { markPending = false }
        markFramed = false
    }

    /// Appends the end-of-log record, a record with an empty payload (SPEC.md §5.1): the writer
    /// moves on to the next log, or closes this one. Recovery replays the next log only after a
    /// log that ends so (or when a later log's durable mark vouches for this one): a log whose
    /// unsynced tail a power cut dropped at a record boundary looks whole, and replaying the
    /// next one would leave a hole. It carries the pending durable mark, if any, so that the
    /// last durable records of a log closed after a sync are vouched for too.
    func appendEndOfLog() throws {
        scratch.removeAll()
        frame(mark: takeMark(), bodyBytes: 0, into: &scratch) { _ in }
        try appendFramed(scratch.bytes)
    }

    /// Notes that every earlier log was synced (at a WAL rotation): the next record says so.
    func noteEarlierLogsDurable() { markPending = true }

    /// Frames one record into `out`: the header, the durable mark if any, and the body that
    /// `writeBody` appends (exactly `bodyBytes` bytes). A plaintext record is
    /// `crc | length | [mark] | body`, the CRC over everything after it; a sealed one is
    /// `length | [mark] | nonce | ciphertext of body | tag`, the length and the mark
    /// authenticated with the body (SPEC.md §14.2). The length counts the mark and the body.
    private func frame(mark: UInt64?, bodyBytes: Int, into out: inout ByteWriter, _ writeBody: (inout ByteWriter) -> Void) {
        let markBytes = mark == nil ? 0 : FormatConstants.logRecordMarkBytes
        let lengthField = UInt32(markBytes + bodyBytes) | (mark == nil ? 0 : FormatConstants.logRecordMarkFlag)
        let start = out.count
        if let sealer {
            out.appendFixed32(lengthField)
            if let mark { out.appendFixed64(mark) }
            // The body is written in place and sealed there: no copy of it, no allocation.
            sealer.seal(into: &out, aad: start..<out.count, writeBody)
            precondition(out.count == start + 4 + markBytes + FileSealer.overhead + bodyBytes, "payload length mismatch")
            return
        }
        out.appendFixed32(0)
        out.appendFixed32(lengthField)
        if let mark { out.appendFixed64(mark) }
        writeBody(&out)
        precondition(out.count == start + FormatConstants.logRecordHeaderBytes + markBytes + bodyBytes, "payload length mismatch")
        let crc = out.bytes.withUnsafeBytes { raw in
            Checksum.crc32c(UnsafeRawBufferPointer(rebasing: raw[(start + 4)...]))
        }
        out.setFixed32(Checksum.mask(crc), at: start)
    }

    /// Appends one record. On failure the file is cut back to where it was, so a failed append
    /// never leaves half a record in front of later ones.
    func addRecord(_ payload: UnsafeRawBufferPointer) throws {
        scratch.removeAll()
        frame(payload, into: &scratch)
        try appendFramed(scratch.bytes)
    }

    /// Appends bytes already framed with `frame(_:into:)` or ``frameBatch(sequence:batch:into:)``;
    /// cuts back on failure.
    func appendFramed(_ bytes: [UInt8]) throws {
        let before = file.size
        do {
            try bytes.withUnsafeBytes { try file.append($0) }
        } catch {
            markFramed = false
            do { try file.truncate(to: before) } catch { endIsUnknown = true }
            throw error
        }
        recordAppended()
    }

    /// Set when a failed append could not be cut back: part of a record may end the file, and
    /// nothing may be appended after it (a reader stops at the partial record).
    private(set) var endIsUnknown = false

    /// Makes every appended byte durable; the next WAL record carries the new durable offset.
    func sync() throws {
        let size = file.size
        try file.sync()
        if size > durableOffset {
            durableOffset = size
            markPending = true
        }
    }

    func close() throws { try file.close() }
}
