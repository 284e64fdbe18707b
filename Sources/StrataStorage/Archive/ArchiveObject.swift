/// One open of a store, as its archive names it (SPEC.md §3.3): the store's id, the open's
/// place among the store's generations in the archive (its ordinal, one above the highest the
/// archive held when it started shipping: the order of generations never depends on a clock),
/// and a random id that keeps two opens that took the same ordinal apart. An archive written
/// before store ids (format 1) has store 0 and ordinal 0.
struct ArchiveGeneration: Hashable, Comparable {
    var store: UInt64
    var ordinal: UInt64
    var id: UInt64

    static func < (a: Self, b: Self) -> Bool { (a.store, a.ordinal, a.id) < (b.store, b.ordinal, b.id) }

    /// The name's prefix: `SSSSSSSSSSSSSSSS-OOOOOOOOOOOO-GGGGGGGGGGGGGGGG`, or the bare
    /// generation for a format-1 archive.
    var prefix: String {
        store == 0 ? ArchiveObject.hex(id) : ArchiveObject.hex(store) + "-" + String(ordinal).leftPadded(to: 12) + "-" + ArchiveObject.hex(id)
    }
}

/// The names of an archive's objects (SPEC.md §3.3). Every name starts with the store's id, so
/// that two stores never name an object alike; a generation's states and log pieces carry the
/// generation, so that the history after a crash (which may have lost log bytes already
/// shipped) never mixes with the history before it; a segment carries its uid, so that two
/// copies of a store that go on writing never ship different bytes under one name. Segments are
/// shared by the store's generations. Format-1 names (no store, segments by number alone) are
/// still read.
enum ArchiveObject: Equatable {
    case segment(store: UInt64, number: UInt64, uid: UInt64)
    case state(ArchiveGeneration, sequence: UInt64, serial: UInt64)
    case log(ArchiveGeneration, wal: UInt64, offset: UInt64)

    var name: String {
        switch self {
        case let .segment(store, n, uid):
            store == 0 ? "seg-" + String(n).leftPadded(to: 12)
                : Self.hex(store) + "-seg-" + String(n).leftPadded(to: 12) + "-" + Self.hex(uid)
        case let .state(g, s, serial): g.prefix + "-state-" + String(s).leftPadded(to: 20) + "-" + String(serial).leftPadded(to: 12)
        case let .log(g, w, o): g.prefix + "-log-" + String(w).leftPadded(to: 12) + "-" + String(o).leftPadded(to: 20)
        }
    }

    /// The store an object belongs to (0: a format-1 archive's).
    var store: UInt64 {
        switch self {
        case let .segment(store, _, _): store
        case let .state(g, _, _), let .log(g, _, _): g.store
        }
    }

    static func hex(_ g: UInt64) -> String { String(g, radix: 16).leftPadded(to: 16) }

    /// The name of segment `meta` of store `store` (its uid, or for a segment an older build
    /// wrote, one derived from the store and the segment's record: copies of a store made after
    /// the store got its id share such segments byte for byte; copies made before have other ids).
    static func segment(store: UInt64, meta: SegmentMeta) -> ArchiveObject {
        guard store != 0 else { return .segment(store: 0, number: meta.fileNumber, uid: 0) }
        return .segment(store: store, number: meta.fileNumber, uid: meta.uid != 0 ? meta.uid : derivedUid(store: store, meta: meta))
    }

    private static func derivedUid(store: UInt64, meta: SegmentMeta) -> UInt64 {
        // FNV-1a over the store id and the record: stable across builds (Hasher is seeded).
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ bytes: some Sequence<UInt8>) { for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 } }
        func mix64(_ v: UInt64) { mix((0..<8).map { UInt8(truncatingIfNeeded: v >> ($0 * 8)) }) }
        for v in [store, UInt64(meta.keySpaceId), meta.fileNumber, meta.fileSize, meta.minSequence, meta.maxSequence, meta.entryCount] { mix64(v) }
        mix(meta.smallest)
        mix(meta.largest)
        return h == 0 ? 1 : h
    }

    /// nil for a name this build does not write (left alone).
    init?(name: String) {
        let parts = name.split(separator: "-", omittingEmptySubsequences: false)
        func decimal(_ s: Substring, width: Int) -> UInt64? {
            guard s.utf8.count == width, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return UInt64(s)
        }
        func hex(_ s: Substring) -> UInt64? {
            guard s.utf8.count == 16, s.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else { return nil }
            return UInt64(s, radix: 16)
        }
        switch parts.count {
        case 2:
            guard parts[0] == "seg", let n = decimal(parts[1], width: 12), n <= FormatConstants.maxFileNumber else { return nil }
            self = .segment(store: 0, number: n, uid: 0)
        case 4 where parts[1] == "seg":
            guard let store = hex(parts[0]), store != 0, let n = decimal(parts[2], width: 12), n <= FormatConstants.maxFileNumber,
                  let uid = hex(parts[3]), uid != 0 else { return nil }
            self = .segment(store: store, number: n, uid: uid)
        case 4:
            guard let g = hex(parts[0]) else { return nil }
            self.init(generation: ArchiveGeneration(store: 0, ordinal: 0, id: g), kind: parts[1], parts[2], parts[3], decimal)
        case 6:
            guard let store = hex(parts[0]), store != 0, let ordinal = decimal(parts[1], width: 12), let g = hex(parts[2]) else { return nil }
            self.init(generation: ArchiveGeneration(store: store, ordinal: ordinal, id: g), kind: parts[3], parts[4], parts[5], decimal)
        default:
            return nil
        }
    }

    private init?(generation g: ArchiveGeneration, kind: Substring, _ a: Substring, _ b: Substring,
                  _ decimal: (Substring, Int) -> UInt64?) {
        if kind == "state", let s = decimal(a, 20), let serial = decimal(b, 12) {
            self = .state(g, sequence: s, serial: serial)
        } else if kind == "log", let w = decimal(a, 12), let o = decimal(b, 20), w <= FormatConstants.maxFileNumber {
            self = .log(g, wal: w, offset: o)
        } else {
            return nil
        }
    }
}

/// A state of the store's manifest, as archived: the segments (and the archive objects holding
/// them), the log number from which the log pieces replay, the counters and key spaces.
struct ArchivedState: Equatable {
    static let magic: UInt32 = 0x5453_5453 // "STST"
    /// Version 2 added the store id and the generation's ordinal.
    static let version: UInt32 = 2

    var generation: ArchiveGeneration
    var serial: UInt64
    /// When it was shipped: microseconds since 1970 (for retention by age only; states are
    /// ordered by generation, sequence and serial).
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

    var objectName: String { ArchiveObject.state(generation, sequence: sequence, serial: serial).name }

    /// Newer first: by generation ordinal, then sequence, then serial (never by a clock).
    func isNewer(than other: ArchivedState) -> Bool {
        (generation.ordinal, sequence, serial, generation.id) > (other.generation.ordinal, other.sequence, other.serial, other.generation.id)
    }

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
        w.appendFixed64(generation.store)
        w.appendFixed64(generation.ordinal)
        w.appendFixed64(generation.id)
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
        try refuseSealed(bytes, name: name)
        guard bytes.count >= 52 else { throw damaged("archived state is too short") }
        return try bytes.withUnsafeBytes { raw throws -> ArchivedState in
            let body = UnsafeRawBufferPointer(rebasing: raw[..<(raw.count - 4)])
            guard Checksum.mask(Checksum.crc32c(body)) == loadFixed32(raw, raw.count - 4) else { throw damaged("archived state checksum mismatch") }
            var r = ByteReader(body)
            guard r.readFixed32() == magic else { throw damaged("not an archived state (bad magic)") }
            let version = r.readFixed32()
            guard version == 1 || version == Self.version else { throw damaged("archived state of an unknown version") }
            var store: UInt64 = 0, ordinal: UInt64 = 0
            if version == 2 {
                guard let s = r.readFixed64(), s != 0, let o = r.readFixed64() else { throw damaged("malformed archived state") }
                (store, ordinal) = (s, o)
            }
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
            return ArchivedState(generation: ArchiveGeneration(store: store, ordinal: ordinal, id: generation), serial: serial,
                                 micros: Int64(bitPattern: micros), formatVersion: formatVersion,
                                 logNumber: logNumber, nextFileNumber: nextFileNumber, sequence: sequence,
                                 keySpaces: edit.addedKeySpaces, segments: edit.addedSegments,
                                 committed: .init(sequence: committedSequence, micros: Int64(bitPattern: committedMicros)))
        }
    }
}

/// An object an encrypted store sealed (SPEC.md §14.5), read without its key: a typed error,
/// not damage.
private func refuseSealed(_ bytes: [UInt8], name: String) throws {
    if bytes.withUnsafeBytes({ EncryptionHeader.startsWithMagic($0) }) { throw StorageError.encryptionKeyRequired(file: name) }
}

/// A piece of one WAL, as archived: its bytes from `offset`, the commit times of the commits
/// that end in it, and the generation's WAL before it (so that a restore notices a whole WAL
/// missing between two it holds: WAL numbers skip the numbers segments and manifests take).
struct ArchivedLogPiece: Equatable {
    static let magic: UInt32 = 0x474C_5453 // "STLG"
    /// Version 2 added the store id, the generation's ordinal and the previous WAL.
    static let version: UInt32 = 2

    struct CommitTime: Equatable {
        /// The last sequence number of a commit (or of the last of several in one millisecond).
        var sequence: UInt64
        var micros: Int64
    }

    var generation: ArchiveGeneration
    var wal: UInt64
    /// The number of the generation's WAL before this one, 0 for the WAL its opening state's
    /// log number names; nil in a format-1 piece.
    var previous: UInt64?
    var offset: UInt64
    var times: [CommitTime]
    var bytes: [UInt8]

    var objectName: String { ArchiveObject.log(generation, wal: wal, offset: offset).name }

    func encode() -> [UInt8] {
        var w = ByteWriter(capacity: 72 + times.count * 16 + bytes.count)
        w.appendFixed32(Self.magic)
        w.appendFixed32(Self.version)
        w.appendFixed64(generation.store)
        w.appendFixed64(generation.ordinal)
        w.appendFixed64(generation.id)
        w.appendFixed64(wal)
        w.appendFixed64(previous ?? 0)
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
        try refuseSealed(bytes, name: name)
        guard bytes.count >= 44 else { throw damaged("archived log piece is too short") }
        return try bytes.withUnsafeBytes { raw throws -> ArchivedLogPiece in
            let body = UnsafeRawBufferPointer(rebasing: raw[..<(raw.count - 4)])
            guard Checksum.mask(Checksum.crc32c(body)) == loadFixed32(raw, raw.count - 4) else { throw damaged("archived log piece checksum mismatch") }
            var r = ByteReader(body)
            guard r.readFixed32() == magic else { throw damaged("not an archived log piece (bad magic)") }
            let version = r.readFixed32()
            guard version == 1 || version == Self.version else { throw damaged("archived log piece of an unknown version") }
            var store: UInt64 = 0, ordinal: UInt64 = 0
            if version == 2 {
                guard let s = r.readFixed64(), s != 0, let o = r.readFixed64() else { throw damaged("malformed archived log piece") }
                (store, ordinal) = (s, o)
            }
            guard let generation = r.readFixed64(), let wal = r.readFixed64() else { throw damaged("malformed archived log piece") }
            var previous: UInt64?
            if version == 2 {
                guard let p = r.readFixed64(), p < wal || p == 0 else { throw damaged("malformed archived log piece") }
                previous = p
            }
            guard let offset = r.readFixed64(), let count = r.readFixed32(), Int(count) <= r.remaining / 16 else {
                throw damaged("malformed archived log piece")
            }
            var times: [CommitTime] = []
            times.reserveCapacity(Int(count))
            for _ in 0..<count {
                guard let s = r.readFixed64(), let m = r.readFixed64() else { throw damaged("malformed archived log piece") }
                times.append(CommitTime(sequence: s, micros: Int64(bitPattern: m)))
            }
            guard let n = r.readFixed32(), let data = r.readBytes(Int(n)), r.isAtEnd else { throw damaged("malformed archived log piece") }
            let (end, overflow) = offset.addingReportingOverflow(UInt64(n))
            guard !overflow, end <= 1 << 48, wal <= FormatConstants.maxFileNumber else { throw damaged("archived log piece out of range") }
            return ArchivedLogPiece(generation: ArchiveGeneration(store: store, ordinal: ordinal, id: generation), wal: wal,
                                    previous: previous, offset: offset, times: times, bytes: Array(data))
        }
    }
}
