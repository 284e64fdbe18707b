/// Appends checksummed records to a log file: the framing shared by the write-ahead log and the
/// manifest (SPEC.md §Log framing).
///
/// Record = masked CRC32C (4, LE) | payload length (4, LE) | payload. The CRC covers the length
/// field and the payload, so a damaged length is caught like damaged data.
final class LogWriter {
    let file: any WritableFile
    let path: String
    private var scratch = ByteWriter(capacity: 64 * 1024)

    init(file: any WritableFile, path: String) {
        self.file = file
        self.path = path
    }

    var size: UInt64 { file.size }

    /// Frames `payload` into `out` (no I/O), so several records can go out in one write.
    static func frame(_ payload: UnsafeRawBufferPointer, into out: inout ByteWriter) {
        frame(payloadBytes: payload.count, into: &out) { $0.append(payload) }
    }

    /// Frames a WAL record whose payload is `sequence` (u64) followed by the batch encoding,
    /// without building the payload separately (SPEC.md §WAL payload).
    static func frameBatch(sequence: UInt64, batch: [UInt8], into out: inout ByteWriter) {
        frame(payloadBytes: 8 + batch.count, into: &out) {
            $0.appendFixed64(sequence)
            $0.append(batch)
        }
    }

    /// Writes the header, lets `writePayload` append exactly `payloadBytes` bytes, then fills
    /// in the CRC over length and payload.
    private static func frame(payloadBytes: Int, into out: inout ByteWriter, _ writePayload: (inout ByteWriter) -> Void) {
        let start = out.count
        out.appendFixed32(0)
        out.appendFixed32(UInt32(payloadBytes))
        writePayload(&out)
        precondition(out.count == start + FormatConstants.logRecordHeaderBytes + payloadBytes, "payload length mismatch")
        let crc = out.bytes.withUnsafeBytes { raw in
            Checksum.crc32c(UnsafeRawBufferPointer(rebasing: raw[(start + 4)...]))
        }
        out.setFixed32(Checksum.mask(crc), at: start)
    }

    /// Appends one record. On failure the file is cut back to where it was, so a failed append
    /// never leaves half a record in front of later ones.
    func addRecord(_ payload: UnsafeRawBufferPointer) throws {
        scratch.removeAll()
        Self.frame(payload, into: &scratch)
        try appendFramed(scratch.bytes)
    }

    /// Appends bytes already framed with `frame(_:into:)`; cuts back on failure.
    func appendFramed(_ bytes: [UInt8]) throws {
        let before = file.size
        do {
            try bytes.withUnsafeBytes { try file.append($0) }
        } catch {
            try? file.truncate(to: before)
            throw error
        }
    }

    func sync() throws { try file.sync() }
    func close() throws { try file.close() }
}
