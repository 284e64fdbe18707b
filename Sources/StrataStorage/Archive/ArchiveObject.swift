/// The names of an archive's objects (SPEC.md §3.3). A generation is one open of the store:
/// its states and log pieces carry its 16-hex-digit id, so that the history after a crash
/// (which may have lost log bytes already shipped) never mixes with the history before it.
/// Segments are shared by every generation.
enum ArchiveObject: Equatable {
    case segment(number: UInt64)
    case state(generation: UInt64, sequence: UInt64, serial: UInt64)
    case log(generation: UInt64, wal: UInt64, offset: UInt64)

    var name: String {
        switch self {
        case let .segment(n): "seg-" + String(n).leftPadded(to: 12)
        case let .state(g, s, serial): Self.hex(g) + "-state-" + String(s).leftPadded(to: 20) + "-" + String(serial).leftPadded(to: 12)
        case let .log(g, w, o): Self.hex(g) + "-log-" + String(w).leftPadded(to: 12) + "-" + String(o).leftPadded(to: 20)
        }
    }

    static func hex(_ g: UInt64) -> String { String(g, radix: 16).leftPadded(to: 16) }

    /// nil for a name this build does not write (left alone).
    init?(name: String) {
        let parts = name.split(separator: "-", omittingEmptySubsequences: false)
        func decimal(_ s: Substring, width: Int) -> UInt64? {
            guard s.utf8.count == width, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return UInt64(s)
        }
        if parts.count == 2, parts[0] == "seg", let n = decimal(parts[1], width: 12), n <= FormatConstants.maxFileNumber {
            self = .segment(number: n)
            return
        }
        guard parts.count == 4, parts[0].utf8.count == 16, parts[0] == parts[0].lowercased(),
              let g = UInt64(parts[0], radix: 16) else { return nil }
        if parts[1] == "state", let s = decimal(parts[2], width: 20), let serial = decimal(parts[3], width: 12) {
            self = .state(generation: g, sequence: s, serial: serial)
        } else if parts[1] == "log", let w = decimal(parts[2], width: 12), let o = decimal(parts[3], width: 20),
                  w <= FormatConstants.maxFileNumber {
            self = .log(generation: g, wal: w, offset: o)
        } else {
            return nil
        }
    }
}

/// A state of the store's manifest, as archived: the segments (and the archive objects holding
/// them), the log number from which the log pieces replay, the counters and key spaces.
struct ArchivedState: Equatable {
    static let magic: UInt32 = 0x5453_5453 // "STST"
    static let version: UInt32 = 1

    var generation: UInt64
    var serial: UInt64
    /// When it was shipped: microseconds since 1970.
    var micros: Int64
    var formatVersion: UInt32
    var logNumber: UInt64
    var nextFileNumber: UInt64
    /// No write in the segments has a higher sequence number; the logs from `logNumber` on
    /// hold every later write (and none that the segments hold).
    var sequence: UInt64
    var keySpaces: [KeySpace]
    var segments: [SegmentMeta]
    /// The store's last commit when the state was taken, and when: a point a restore "at" a
    /// time may land on (the opening state of a generation has no commit of its own).
    var committed = ArchivedLogPiece.CommitTime(sequence: 0, micros: 0)

    var objectName: String { ArchiveObject.state(generation: generation, sequence: sequence, serial: serial).name }

    func encode() -> [UInt8] {
        var edit = VersionEdit()
        edit.formatVersion = formatVersion
        edit.logNumber = logNumber
        edit.nextFileNumber = nextFileNumber
        edit.lastSequence = sequence
        edit.addedKeySpaces = keySpaces
        edit.addedSegments = segments
        var w = ByteWriter(capacity: 256)
        w.appendFixed32(Self.magic)
        w.appendFixed32(Self.version)
        w.appendFixed64(generation)
        w.appendFixed64(serial)
        w.appendFixed64(UInt64(bitPattern: micros))
        w.appendLengthPrefixed(edit.encode())
        w.appendFixed64(committed.sequence)
        w.appendFixed64(UInt64(bitPattern: committed.micros))
        w.appendFixed32(w.bytes.withUnsafeBytes { Checksum.mask(Checksum.crc32c($0)) })
        return w.bytes
    }

    /// Decodes an archived state; a damaged one throws corruption naming `name`.
    static func decode(_ bytes: [UInt8], name: String) throws -> ArchivedState {
        func damaged(_ reason: String) -> StorageError { .corruption(file: name, offset: 0, reason: reason) }
        guard bytes.count >= 52 else { throw damaged("archived state is too short") }
        return try bytes.withUnsafeBytes { raw throws -> ArchivedState in
            let body = UnsafeRawBufferPointer(rebasing: raw[..<(raw.count - 4)])
            guard Checksum.mask(Checksum.crc32c(body)) == loadFixed32(raw, raw.count - 4) else { throw damaged("archived state checksum mismatch") }
            var r = ByteReader(body)
            guard r.readFixed32() == magic else { throw damaged("not an archived state (bad magic)") }
            guard r.readFixed32() == version else { throw damaged("archived state of an unknown version") }
            guard let generation = r.readFixed64(), let serial = r.readFixed64(), let micros = r.readFixed64(),
                  let editBytes = r.readLengthPrefixed(), let committedSequence = r.readFixed64(),
                  let committedMicros = r.readFixed64(), r.isAtEnd,
                  let edit = VersionEdit.decode(editBytes),
                  let formatVersion = edit.formatVersion, let logNumber = edit.logNumber,
                  let nextFileNumber = edit.nextFileNumber, let sequence = edit.lastSequence
            else { throw damaged("malformed archived state") }
            guard formatVersion <= FormatConstants.storeFormatVersion else {
                throw StorageError.unsupportedFormatVersion(file: name, found: formatVersion, supported: FormatConstants.storeFormatVersion)
            }
            let numbers = [logNumber, nextFileNumber] + edit.addedSegments.map(\.fileNumber)
            guard numbers.allSatisfy({ $0 <= FormatConstants.maxFileNumber }), sequence <= StorageLimits.maxSequence,
                  edit.addedSegments.allSatisfy({ $0.fileNumber < nextFileNumber && $0.fileNumber != logNumber }),
                  logNumber < nextFileNumber else {
                throw damaged("archived state with a number out of range")
            }
            return ArchivedState(generation: generation, serial: serial, micros: Int64(bitPattern: micros), formatVersion: formatVersion,
                                 logNumber: logNumber, nextFileNumber: nextFileNumber, sequence: sequence,
                                 keySpaces: edit.addedKeySpaces, segments: edit.addedSegments,
                                 committed: .init(sequence: committedSequence, micros: Int64(bitPattern: committedMicros)))
        }
    }
}

/// A piece of one WAL, as archived: its bytes from `offset`, and the commit times of the
/// commits that end in it.
struct ArchivedLogPiece: Equatable {
    static let magic: UInt32 = 0x474C_5453 // "STLG"
    static let version: UInt32 = 1

    struct CommitTime: Equatable {
        /// The last sequence number of a commit (or of the last of several in one millisecond).
        var sequence: UInt64
        var micros: Int64
    }

    var generation: UInt64
    var wal: UInt64
    var offset: UInt64
    var times: [CommitTime]
    var bytes: [UInt8]

    var objectName: String { ArchiveObject.log(generation: generation, wal: wal, offset: offset).name }

    func encode() -> [UInt8] {
        var w = ByteWriter(capacity: 48 + times.count * 16 + bytes.count)
        w.appendFixed32(Self.magic)
        w.appendFixed32(Self.version)
        w.appendFixed64(generation)
        w.appendFixed64(wal)
        w.appendFixed64(offset)
        w.appendFixed32(UInt32(times.count))
        for t in times {
            w.appendFixed64(t.sequence)
            w.appendFixed64(UInt64(bitPattern: t.micros))
        }
        w.appendFixed32(UInt32(bytes.count))
        w.append(bytes)
        w.appendFixed32(w.bytes.withUnsafeBytes { Checksum.mask(Checksum.crc32c($0)) })
        return w.bytes
    }

    static func decode(_ bytes: [UInt8], name: String) throws -> ArchivedLogPiece {
        func damaged(_ reason: String) -> StorageError { .corruption(file: name, offset: 0, reason: reason) }
        guard bytes.count >= 44 else { throw damaged("archived log piece is too short") }
        return try bytes.withUnsafeBytes { raw throws -> ArchivedLogPiece in
            let body = UnsafeRawBufferPointer(rebasing: raw[..<(raw.count - 4)])
            guard Checksum.mask(Checksum.crc32c(body)) == loadFixed32(raw, raw.count - 4) else { throw damaged("archived log piece checksum mismatch") }
            var r = ByteReader(body)
            guard r.readFixed32() == magic else { throw damaged("not an archived log piece (bad magic)") }
            guard r.readFixed32() == version else { throw damaged("archived log piece of an unknown version") }
            guard let generation = r.readFixed64(), let wal = r.readFixed64(), let offset = r.readFixed64(),
                  let count = r.readFixed32(), Int(count) <= r.remaining / 16 else { throw damaged("malformed archived log piece") }
            var times: [CommitTime] = []
            times.reserveCapacity(Int(count))
            for _ in 0..<count {
                guard let s = r.readFixed64(), let m = r.readFixed64() else { throw damaged("malformed archived log piece") }
                times.append(CommitTime(sequence: s, micros: Int64(bitPattern: m)))
            }
            guard let n = r.readFixed32(), let data = r.readBytes(Int(n)), r.isAtEnd else { throw damaged("malformed archived log piece") }
            let (end, overflow) = offset.addingReportingOverflow(UInt64(n))
            guard !overflow, end <= 1 << 48, wal <= FormatConstants.maxFileNumber else { throw damaged("archived log piece out of range") }
            return ArchivedLogPiece(generation: generation, wal: wal, offset: offset, times: times, bytes: Array(data))
        }
    }
}
