/// One valid record of a log, as ``LogReader`` hands it over.
package struct LogRecord {
    /// The payload, without the durable mark. Valid until the reader's window moves on (see
    /// ``LogReader/beforeWindowMoves``).
    package var payload: UnsafeRawBufferPointer
    /// Offset of the record's header in the file.
    package var offset: Int
    /// Offset just past the record.
    var end: Int
    /// The durable mark of a WAL record that carries one (SPEC.md §5.1): every byte of this log
    /// before it, and every earlier log, was synced when the record was appended.
    var durableMark: UInt64?

    /// A WAL record with an empty payload (after its durable mark, if any): the writer moved on
    /// to the next log, or closed this one, here (SPEC.md §5.1).
    var isEndOfLog: Bool { payload.isEmpty }
}

/// Reads the records of a log file written by ``LogWriter`` (SPEC.md §5.2), through a window of
/// bounded size: memory stays at the window (4 MiB) or the largest record, whichever is more,
/// whatever the size of the log.
///
/// A record that fails its checksum or runs past the end of the file at offset X is either the
/// log's clean end (zero bytes to the end: space reserved ahead of the appends), a *torn tail*,
/// or damage. It is damage, ``StorageError/corruption(file:offset:reason:)``, only when a valid
/// record after X carries a durable mark past X: the bytes at X were then synced, and nothing a
/// crash or a power cut does to unsynced pages explains them. Otherwise what lies from X on was
/// never known to be durable, a power cut may have kept any subset of its pages, and reading
/// stops there: dropping it loses no write that was acknowledged as durable.
package final class LogReader {
    let file: any ReadableFile
    let path: String
    /// Whether records may carry durable marks (the WAL; never the manifest).
    let allowsMarks: Bool
    /// Records claiming a longer payload are invalid: the bound of the window's growth.
    let maxRecordBytes: Int
    /// Extra check that a candidate record found after damage is real (e.g. its sequence
    /// number follows on), so that garbage rarely passes for a record. It sees the first
    /// ``plausibleHeadBytes`` bytes of the candidate's payload (fewer when the payload is
    /// shorter) and the payload's claimed length, before the candidate's checksum is computed:
    /// a checksum costs the claimed length, and garbage claims lengths of up to the record
    /// limit at every byte offset (a 64 MB log with a damaged region took hours to open when
    /// every candidate was checksummed).
    let plausible: (_ payloadHead: UnsafeRawBufferPointer, _ payloadCount: Int) -> Bool
    static let plausibleHeadBytes = 16
    /// Called before the window moves on: payloads handed over earlier are about to go stale.
    /// A reader that keeps pointers into payloads (replay, to insert in bulk) uses them here.
    var beforeWindowMoves: (() throws -> Void)?

    static let defaultWindowBytes = 4 << 20

    /// How the log's records are protected (SPEC.md §14.2).
    package enum Encryption {
        /// Plaintext records with CRCs. A log that starts with an encryption header is refused
        /// with ``StorageError/encryptionKeyRequired(file:)``.
        case none
        /// A whole encrypted file: its header first, then sealed records.
        case file(StoreCipher)
        /// Sealed records of a file whose header is elsewhere (an archived piece of a WAL that
        /// does not start at offset 0).
        case records(FileSealer)
    }
    let encryption: Encryption
    /// The sealer of the records, once the header is read.
    private(set) var sealer: FileSealer?

    private var window: UnsafeMutableRawBufferPointer
    private var windowStart = 0
    private var windowCount = 0
    private let fileSize: Int

    init(file: any ReadableFile, path: String, allowsMarks: Bool, maxRecordBytes: Int = Int(Int32.max),
         windowBytes: Int = LogReader.defaultWindowBytes, encryption: Encryption = .none,
         plausible: @escaping (_ payloadHead: UnsafeRawBufferPointer, _ payloadCount: Int) -> Bool = { _, _ in true }) {
        self.encryption = encryption
        self.file = file
        self.path = path
        self.allowsMarks = allowsMarks
        self.maxRecordBytes = maxRecordBytes
        self.plausible = plausible
        fileSize = Int(clamping: file.size)
        window = .allocate(byteCount: max(1, min(windowBytes, fileSize)), alignment: 8)
    }

    /// A reader over bytes in memory (fuzzing, tests).
    package convenience init(bytes: [UInt8], path: String, allowsMarks: Bool, encryption: Encryption = .none,
                     plausible: @escaping (_ payloadHead: UnsafeRawBufferPointer, _ payloadCount: Int) -> Bool = { _, _ in true }) {
        self.init(file: MemoryReadableFile(bytes), path: path, allowsMarks: allowsMarks, encryption: encryption, plausible: plausible)
    }

    /// Where a sealed record is opened before its tag is known to match (grown as needed).
    private var openScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 0, alignment: 8)

    deinit {
        window.deallocate()
        openScratch.deallocate()
    }

    /// Result of reading the whole log.
    package struct Outcome {
        /// Offset just past the last valid record.
        var validEnd: Int
        /// Whether a torn tail was dropped after `validEnd`.
        var droppedTornTail: Bool
        /// Whether any valid record, before or after a torn point, carries a durable mark: the
        /// log was synced at some point, and so was every earlier log (SPEC.md §8).
        var sawDurableMark: Bool
        /// Whether the valid records end with an end-of-log record: the writer moved on to the
        /// next log, and nothing of this one is missing.
        var sawEndOfLog = false
    }

    /// Calls `body` with each valid record in order, up to the log's end or a torn tail.
    package func forEachRecord(_ body: (LogRecord) throws -> Void) throws -> Outcome {
        var offset = 0
        switch try readHeader() {
        case let .recordsFrom(start): offset = start
        case let .noRecords(torn): return Outcome(validEnd: 0, droppedTornTail: torn, sawDurableMark: false)
        }
        var sawMark = false
        var ended = false
        var unlimited = Int.max
        while offset < fileSize {
            if let record = try record(at: offset, budget: &unlimited) {
                if record.durableMark != nil { sawMark = true }
                ended = record.isEndOfLog
                try body(record)
                offset = record.end
                continue
            }
            if try zerosToEnd(from: offset) {
                return Outcome(validEnd: offset, droppedTornTail: false, sawDurableMark: sawMark, sawEndOfLog: ended)
            }
            // Damage at `offset`: a torn tail unless a later record proves these bytes durable.
            // Only a durable mark can prove it: a log without marks (the manifest) ends here.
            guard allowsMarks else { return Outcome(validEnd: offset, droppedTornTail: true, sawDurableMark: sawMark) }
            // Only a record that carries a durable mark can prove the damage, so only those
            // are looked for: a candidate whose header has the mark flag and whose mark (the
            // log's synced length when it was appended) lies between the log's start and its
            // own offset, checked before its checksum. Unmarked candidates cost nothing more
            // than the look at their header: a torn record's own payload (thousands of objects
            // alike) held so many plausible unmarked candidates that checksumming them spent
            // the whole budget, and a power cut made a store that did not open.
            var probe = offset + 1
            // What checksumming candidates may cost in all: crafted bytes (a 16-byte pattern
            // that makes every 16th offset a plausible marked record claiming a megabyte) would
            // cost a megabyte per 16 bytes of log. Real damage stays far below it.
            var budget = Self.probeBudget(remaining: fileSize - offset)
            while probe + headerBytes + FormatConstants.logRecordMarkBytes <= fileSize {
                guard let later = try markedRecord(at: probe, budget: &budget, damageAt: offset) else {
                    probe += 1
                    continue
                }
                let mark = later.durableMark ?? 0
                sawMark = true
                if mark > UInt64(offset) {
                    throw StorageError.corruption(
                        file: path, offset: UInt64(offset),
                        reason: "damaged log record in bytes that were synced (the record at \(probe) says the log was durable up to \(mark))")
                }
                probe = later.end
            }
            return Outcome(validEnd: offset, droppedTornTail: true, sawDurableMark: sawMark)
        }
        return Outcome(validEnd: offset, droppedTornTail: false, sawDurableMark: sawMark, sawEndOfLog: ended)
    }

    private enum HeaderReading {
        case recordsFrom(Int)
        /// A log of an encrypted store whose header is incomplete: created, then cut short by a
        /// crash before its first record could be durable. `torn`: some bytes were there.
        case noRecords(torn: Bool)
    }

    /// Reads the encryption header, if the log has one, and says where its records start.
    private func readHeader() throws -> HeaderReading {
        switch encryption {
        case let .records(s):
            sealer = s
            return .recordsFrom(0)
        case .none:
            if let head = try bytes(at: 0, count: 8), EncryptionHeader.startsWithMagic(head) {
                throw StorageError.encryptionKeyRequired(file: path)
            }
            return .recordsFrom(0)
        case let .file(cipher):
            let headBytes = min(fileSize, EncryptionHeader.bytes)
            guard headBytes > 0, let head = try bytes(at: 0, count: headBytes) else { return .noRecords(torn: false) }
            // A header cut short: the log was created just before a crash, and no record can
            // follow it (its first sync would have made the header whole).
            if headBytes < EncryptionHeader.bytes { return .noRecords(torn: true) }
            guard allowsMarks else {
                // The manifest is the first file an open reads: a header that does not match is
                // a wrong key (told from damage by the caller).
                if case let .sealed(s) = try EncryptionHeader.read(head, cipher: cipher, path: path) { sealer = s }
                return .recordsFrom(EncryptionHeader.bytes)
            }
            do {
                if case let .sealed(s) = try EncryptionHeader.read(head, cipher: cipher, path: path, keyChecked: true) { sealer = s }
                return .recordsFrom(EncryptionHeader.bytes)
            } catch StorageError.corruption {
                // A WAL whose header does not open under the key that opened the manifest: either
                // its header never reached the disk (zeros, or whatever the disk held: a power cut
                // before the log's first sync), and then no record of it was durable either, or
                // the header was damaged after it was synced. Only a durable mark can tell, and
                // marks are stored in the clear (SPEC.md §14.2): a record that says this log was
                // synced past its header proves damage. Otherwise the log is torn at 0.
                if let (offset, mark) = try markPastHeader() {
                    throw StorageError.corruption(
                        file: path, offset: 0,
                        reason: "encryption header damaged in bytes that were synced (the record at \(offset) says the log was durable up to \(mark))")
                }
                return .noRecords(torn: !(try zerosToEnd(from: 0)))
            }
        }
    }

    /// In a WAL whose header cannot be read, the first offset that holds what is shaped like a
    /// marked record whose mark says the log was synced past the header (a mark from 64 to its
    /// own offset, a length that fits), and that mark. Unauthenticated (the records cannot be
    /// opened without the header): garbage passes for one with a chance of about 2^-40 per
    /// offset; crafted bytes can pass, and make the store refuse to open, never open wrong.
    private func markPastHeader() throws -> (Int, UInt64)? {
        var probe = EncryptionHeader.bytes
        let markBytes = FormatConstants.logRecordMarkBytes
        while probe + 4 + markBytes + FileSealer.overhead <= fileSize {
            if let head = try bytes(at: probe, count: 4 + markBytes) {
                let field = loadFixed32(head, 0)
                let length = Int(field & ~FormatConstants.logRecordMarkFlag)
                let mark = loadFixed64(head, 4)
                if field & FormatConstants.logRecordMarkFlag != 0, length >= markBytes, length <= maxRecordBytes,
                   length <= fileSize - probe - 4 - FileSealer.overhead,
                   mark >= UInt64(EncryptionHeader.bytes), mark <= UInt64(probe) {
                    return (probe, mark)
                }
            }
            probe += 1
        }
        return nil
    }

    /// The well-formed record at `offset` that carries a durable mark no greater than its own
    /// offset (a mark is the log's synced length when the record was appended), whose payload
    /// ``plausible`` accepts; nil otherwise. The cost of checksumming it is taken from `budget`:
    /// once spent, the damage at `damageAt` cannot be judged, and is corruption.
    private func markedRecord(at offset: Int, budget: inout Int, damageAt: Int) throws -> LogRecord? {
        let header = headerBytes, markBytes = FormatConstants.logRecordMarkBytes
        guard let head = try bytes(at: offset, count: header + markBytes) else { return nil }
        let lengthField = loadFixed32(head, header - 4)
        guard lengthField & FormatConstants.logRecordMarkFlag != 0 else { return nil }
        let mark = loadFixed64(head, header)
        guard mark >= 1, mark <= UInt64(offset) else { return nil }
        return try record(at: offset, checkingPlausibility: true, budget: &budget, damageAt: damageAt)
    }

    /// The checksum bytes a search past damage at an offset may spend, with `remaining` bytes
    /// from there to the end: eight times those bytes, and 64 MiB.
    static func probeBudget(remaining: Int) -> Int { min(max(0, remaining), Int.max / 16) * 8 + (64 << 20) }

    /// The well-formed record at `offset`, or nil; with `checkingPlausibility`, nil also when
    /// ``plausible`` rejects its start (checked before its checksum), whose cost is taken from
    /// `budget`: once spent, the damage at `damageAt` cannot be judged, and is corruption.
    /// A record's header: `crc | length` in plaintext, `length` alone when sealed (the tag
    /// follows the body instead, SPEC.md §14.2).
    private var headerBytes: Int { sealer == nil ? FormatConstants.logRecordHeaderBytes : 4 }

    private func record(at offset: Int, checkingPlausibility: Bool = false, budget: inout Int, damageAt: Int = 0) throws -> LogRecord? {
        if let sealer { return try sealedRecord(at: offset, sealer: sealer, checkingPlausibility: checkingPlausibility, budget: &budget, damageAt: damageAt) }
        let header = FormatConstants.logRecordHeaderBytes
        guard let head = try bytes(at: offset, count: header) else { return nil }
        let storedCRC = loadFixed32(head, 0)
        let lengthField = loadFixed32(head, 4)
        let marked = lengthField & FormatConstants.logRecordMarkFlag != 0
        if marked && !allowsMarks { return nil }
        let length = Int(lengthField & ~FormatConstants.logRecordMarkFlag)
        let markBytes = marked ? FormatConstants.logRecordMarkBytes : 0
        guard length >= markBytes, length <= maxRecordBytes, length <= fileSize - offset - header else { return nil }
        if checkingPlausibility {
            let payloadCount = length - markBytes
            let headCount = min(payloadCount, Self.plausibleHeadBytes)
            guard let start = try bytes(at: offset + header + markBytes, count: headCount),
                  plausible(start, payloadCount) else { return nil }
            budget -= header + length
            guard budget >= 0 else {
                throw StorageError.corruption(file: path, offset: UInt64(damageAt),
                                              reason: "damaged log record followed by more candidate records than a crash leaves (crafted bytes?)")
            }
        }
        guard let whole = try bytes(at: offset, count: header + length) else { return nil }
        let covered = UnsafeRawBufferPointer(rebasing: whole[4...])
        guard Checksum.unmask(storedCRC) == Checksum.crc32c(covered) else { return nil }
        let payload = UnsafeRawBufferPointer(rebasing: whole[(header + markBytes)...])
        return LogRecord(payload: payload, offset: offset, end: offset + header + length, durableMark: marked ? loadFixed64(whole, header) : nil)
    }

    /// The sealed record at `offset` (`length | [mark] | nonce | ciphertext | tag`), opened in
    /// place in the window so that its payload stays valid as long as a plaintext one would;
    /// nil when it is not whole or its tag does not match. Plausibility can only be judged after
    /// opening, so a search past damage pays for the opening from its budget.
    private func sealedRecord(at offset: Int, sealer: FileSealer, checkingPlausibility: Bool, budget: inout Int, damageAt: Int) throws -> LogRecord? {
        guard let head = try bytes(at: offset, count: 4) else { return nil }
        let lengthField = loadFixed32(head, 0)
        let marked = lengthField & FormatConstants.logRecordMarkFlag != 0
        if marked && !allowsMarks { return nil }
        let length = Int(lengthField & ~FormatConstants.logRecordMarkFlag)
        let markBytes = marked ? FormatConstants.logRecordMarkBytes : 0
        let overhead = FileSealer.overhead
        guard length >= markBytes, length <= maxRecordBytes, fileSize - offset - 4 >= overhead,
              length <= fileSize - offset - 4 - overhead else { return nil }
        let total = 4 + length + overhead
        if checkingPlausibility {
            budget -= total
            guard budget >= 0 else {
                throw StorageError.corruption(file: path, offset: UInt64(damageAt),
                                              reason: "damaged log record followed by more candidate records than a crash leaves (crafted bytes?)")
            }
        }
        guard let whole = try bytes(at: offset, count: total) else { return nil }
        let aad = UnsafeRawBufferPointer(rebasing: whole[0..<(4 + markBytes)])
        let sealed = UnsafeRawBufferPointer(rebasing: whole[(4 + markBytes)...])
        let payloadCount = length - markBytes
        // Opened into scratch and copied over its ciphertext only when the tag matches: the
        // window keeps it until it moves. A unit that fails must leave the window's bytes as
        // the file has them, since a search past damage reads records that start inside it.
        if openScratch.count < payloadCount {
            openScratch.deallocate()
            openScratch = .allocate(byteCount: max(payloadCount, 2 * openScratch.count), alignment: 8)
        }
        let scratch = UnsafeMutableRawBufferPointer(rebasing: openScratch[0..<payloadCount])
        guard sealer.open(sealed, aad: aad, into: scratch) else { return nil }
        let bodyStart = 4 + markBytes + FileSealer.nonceBytes
        let out = UnsafeMutableRawBufferPointer(mutating: UnsafeRawBufferPointer(rebasing: whole[bodyStart..<(bodyStart + payloadCount)]))
        if payloadCount > 0 { out.copyMemory(from: UnsafeRawBufferPointer(scratch)) }
        let payload = UnsafeRawBufferPointer(out)
        if checkingPlausibility {
            guard plausible(UnsafeRawBufferPointer(rebasing: payload[..<min(payloadCount, Self.plausibleHeadBytes)]), payloadCount) else { return nil }
        }
        return LogRecord(payload: payload, offset: offset, end: offset + total, durableMark: marked ? loadFixed64(whole, 4) : nil)
    }

    /// Whether every byte from `offset` to the end of the file is zero.
    private func zerosToEnd(from offset: Int) throws -> Bool {
        var at = offset
        while at < fileSize {
            let n = min(window.count, fileSize - at)
            guard let chunk = try bytes(at: at, count: n) else { return false }
            if !chunk.allSatisfy({ $0 == 0 }) { return false }
            at += n
        }
        return true
    }

    /// `count` bytes at `offset`, from the window, which moves (and grows, up to the largest
    /// record) to hold them; nil when the file ends first.
    private func bytes(at offset: Int, count: Int) throws -> UnsafeRawBufferPointer? {
        guard count <= fileSize - offset else { return nil }
        if offset >= windowStart, count <= windowStart + windowCount - offset {
            return UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(window)[(offset - windowStart)..<(offset - windowStart + count)])
        }
        try beforeWindowMoves?()
        if count > window.count {
            window.deallocate()
            window = .allocate(byteCount: count, alignment: 8)
        }
        let n = min(window.count, fileSize - offset)
        var done = 0
        while done < n {
            let got = try file.read(at: UInt64(offset + done), into: UnsafeMutableRawBufferPointer(rebasing: window[done..<n]))
            if got == 0 { break }
            done += got
        }
        windowStart = offset
        windowCount = done
        guard count <= done else { return nil }
        return UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(window)[0..<count])
    }
}

/// Bytes in memory as a ``ReadableFile``.
final class MemoryReadableFile: ReadableFile, @unchecked Sendable {
    // @unchecked Sendable: the bytes are constant after init.
    private let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    var size: UInt64 { UInt64(bytes.count) }
    func read(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard offset < UInt64(bytes.count) else { return 0 }
        let n = min(buffer.count, bytes.count - Int(offset))
        bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + Int(offset), byteCount: n) }
        return n
    }
    func close() {}
}
