/// The `REPLICA` file of a replica's directory (SPEC.md §3.4): which store and generation of
/// the archive it follows and how far into that generation's logs it has read. The applied
/// sequence is the engine's own (its last commit); this file only saves reading the
/// generation's logs again from their start after a reopen, and is trusted only when it names
/// the sequence the engine recovered.
struct ReplicaPosition: Equatable {
    static let fileName = "REPLICA"
    static let magic: UInt64 = 0x314C_5052_5452_5453 // "STRTRPL1", little-endian
    static let version: UInt32 = 1
    static let encodedBytes = 8 + 4 + 8 * 3 + 8 + 8 + 1 + 8 + 4

    var generation: ArchiveGeneration
    /// The WAL being read, and the bytes of it read so far (a piece boundary: whole commits);
    /// WAL 0 before the first.
    var wal: UInt64
    var offset: UInt64
    /// Whether that WAL's end-of-log record was read: the next one may start.
    var walEnded: Bool
    /// The last sequence number applied when the position was saved.
    var applied: UInt64

    func encode() -> [UInt8] {
        var w = ByteWriter(capacity: Self.encodedBytes)
        w.appendFixed64(Self.magic)
        w.appendFixed32(Self.version)
        w.appendFixed64(generation.store)
        w.appendFixed64(generation.ordinal)
        w.appendFixed64(generation.id)
        w.appendFixed64(wal)
        w.appendFixed64(offset)
        w.append([walEnded ? 1 : 0])
        w.appendFixed64(applied)
        w.appendFixed32(w.bytes.withUnsafeBytes { Checksum.mask(Checksum.crc32c($0)) })
        return w.bytes
    }

    /// nil when `bytes` is not a position this build wrote (size, magic, version, CRC, ranges).
    static func decode(_ bytes: [UInt8]) -> ReplicaPosition? {
        guard bytes.count == encodedBytes else { return nil }
        return bytes.withUnsafeBytes { raw -> ReplicaPosition? in
            var r = ByteReader(raw)
            guard r.readFixed64() == magic, r.readFixed32() == version,
                  let store = r.readFixed64(), let ordinal = r.readFixed64(), let id = r.readFixed64(),
                  let wal = r.readFixed64(), let offset = r.readFixed64(), let ended = r.readBytes(1),
                  let applied = r.readFixed64(), let crc = r.readFixed32(),
                  Checksum.mask(Checksum.crc32c(UnsafeRawBufferPointer(rebasing: raw[..<(encodedBytes - 4)]))) == crc,
                  wal <= FormatConstants.maxFileNumber, offset <= 1 << 48, ended[0] <= 1, applied <= StorageLimits.maxSequence
            else { return nil }
            return ReplicaPosition(generation: ArchiveGeneration(store: store, ordinal: ordinal, id: id), wal: wal, offset: offset,
                                   walEnded: ended[0] == 1, applied: applied)
        }
    }

    /// Replaces the file: `REPLICA.tmp` written and synced, renamed over, the directory synced.
    func write(in directory: String, fileSystem: any FileSystem) throws {
        try fileSystem.replaceFile(at: joinPath(directory, Self.fileName), with: encode())
        try fileSystem.syncDirectory(directory)
    }

    static func read(in directory: String, fileSystem: any FileSystem) -> ReplicaPosition? {
        let path = joinPath(directory, fileName)
        guard fileSystem.fileExists(path), let bytes = try? fileSystem.readWholeFile(path, limit: encodedBytes) else { return nil }
        return decode(bytes)
    }
}
