/// Reads the records of a log file written by ``LogWriter`` (SPEC.md §Log framing, §Recovery).
///
/// A record that fails its checksum or runs past the end of the file is a *torn tail* when no
/// valid record starts anywhere after it: a crash in the middle of an append. Reading stops there
/// and reports where the valid prefix ends. If a valid record does follow, the damage is in the
/// middle of the log and reading fails with ``StorageError/corruption(file:offset:reason:)``:
/// silently skipping it would lose acknowledged writes. Zero bytes from a record boundary to the
/// end of the file are not damage: they are space reserved ahead of the appends.
struct LogReader {
    let bytes: [UInt8]
    let path: String
    /// Optional extra check that a candidate record after damage is real (e.g. its sequence
    /// number follows on), to make a false "mid-log corruption" verdict from garbage unlikely.
    let plausible: (UnsafeRawBufferPointer) -> Bool

    init(bytes: [UInt8], path: String, plausible: @escaping (UnsafeRawBufferPointer) -> Bool = { _ in true }) {
        self.bytes = bytes
        self.path = path
        self.plausible = plausible
    }

    /// Result of reading the whole log.
    struct Outcome {
        /// Offset just past the last valid record.
        var validEnd: Int
        /// Whether a torn tail was dropped after `validEnd`.
        var droppedTornTail: Bool
    }

    /// Calls `body` with each valid record's payload in order.
    func forEachRecord(_ body: (UnsafeRawBufferPointer, _ offset: Int) throws -> Void) throws -> Outcome {
        try bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                if let payload = Self.record(in: raw, at: offset) {
                    try body(payload, offset)
                    offset += FormatConstants.logRecordHeaderBytes + payload.count
                    continue
                }
                // Zero bytes to the end: space the writer reserved and never reached
                // (PosixMappedLogFile), the log's clean end rather than damage.
                if UnsafeRawBufferPointer(rebasing: raw[offset...]).allSatisfy({ $0 == 0 }) {
                    return Outcome(validEnd: offset, droppedTornTail: false)
                }
                // Damage at `offset`: torn tail or mid-log corruption?
                var probe = offset + 1
                while probe + FormatConstants.logRecordHeaderBytes <= raw.count {
                    if let later = Self.record(in: raw, at: probe), plausible(later) {
                        throw StorageError.corruption(
                            file: path, offset: UInt64(offset),
                            reason: "damaged log record followed by valid records (valid record at \(probe))")
                    }
                    probe += 1
                }
                return Outcome(validEnd: offset, droppedTornTail: true)
            }
            return Outcome(validEnd: offset, droppedTornTail: false)
        }
    }

    /// The payload of a well-formed record at `offset`, or nil.
    static func record(in raw: UnsafeRawBufferPointer, at offset: Int) -> UnsafeRawBufferPointer? {
        let header = FormatConstants.logRecordHeaderBytes
        guard raw.count - offset >= header else { return nil }
        let storedCRC = loadFixed32(raw, offset)
        let length = Int(loadFixed32(raw, offset + 4))
        guard length <= raw.count - offset - header else { return nil }
        let covered = UnsafeRawBufferPointer(rebasing: raw[(offset + 4)..<(offset + header + length)])
        guard Checksum.unmask(storedCRC) == Checksum.crc32c(covered) else { return nil }
        return UnsafeRawBufferPointer(rebasing: raw[(offset + header)..<(offset + header + length)])
    }
}
