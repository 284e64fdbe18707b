/// The `BACKUP` file of a backup directory (SPEC.md §3.2): which manifest the backup wrote, so
/// that a later backup into the same directory can tell an unchanged backup (whose files it may
/// reuse and replace) from a store that was opened and written to since (which it never
/// touches). Written before the files of a backup into an empty directory, so that an
/// interrupted one is known as such; rewritten before `CURRENT` moves to a new manifest, naming
/// the previous manifest too, so that a crash between the two steps leaves a directory the next
/// backup still accepts.
struct BackupMarker: Equatable {
    /// A manifest the backup wrote: its number and the masked CRC-32C of its bytes.
    struct Manifest: Equatable {
        var number: UInt64
        var checksum: UInt32
    }

    static let fileName = "BACKUP"
    static let magic: UInt64 = 0x3150_5542_5452_5453 // "STRTBUP1", little-endian
    static let version: UInt32 = 1
    static let encodedBytes = 8 + 4 + 2 * (8 + 4) + 8 + 4

    /// Whether a file named `name` may be in a directory nothing was written to yet: its lock,
    /// or the marker a first backup was writing when it was interrupted.
    static func isLeftOfAnEmptyDestination(_ name: String) -> Bool {
        name == FormatConstants.lockFileName || name == fileName + FormatConstants.tempSuffix
    }

    /// nil while the first backup into the directory is being written.
    var current: Manifest?
    var previous: Manifest?
    var sequence: UInt64

    func encode() -> [UInt8] {
        var w = ByteWriter(capacity: Self.encodedBytes)
        w.appendFixed64(Self.magic)
        w.appendFixed32(Self.version)
        for m in [current, previous] {
            w.appendFixed64(m?.number ?? 0)
            w.appendFixed32(m?.checksum ?? 0)
        }
        w.appendFixed64(sequence)
        let crc = w.bytes.withUnsafeBytes { Checksum.mask(Checksum.crc32c($0)) }
        w.appendFixed32(crc)
        return w.bytes
    }

    /// nil when `bytes` is not a marker this build wrote (wrong size, magic, version or CRC).
    static func decode(_ bytes: [UInt8]) -> BackupMarker? {
        guard bytes.count == encodedBytes else { return nil }
        return bytes.withUnsafeBytes { raw -> BackupMarker? in
            var r = ByteReader(raw)
            guard r.readFixed64() == magic, r.readFixed32() == version,
                  let n1 = r.readFixed64(), let c1 = r.readFixed32(),
                  let n2 = r.readFixed64(), let c2 = r.readFixed32(),
                  let sequence = r.readFixed64(), let crc = r.readFixed32(),
                  Checksum.mask(Checksum.crc32c(UnsafeRawBufferPointer(rebasing: raw[..<(encodedBytes - 4)]))) == crc
            else { return nil }
            // Manifest numbers are file numbers: in range, and 0 is never one.
            guard n1 <= FormatConstants.maxFileNumber, n2 <= FormatConstants.maxFileNumber else { return nil }
            return BackupMarker(current: n1 == 0 ? nil : Manifest(number: n1, checksum: c1),
                                previous: n2 == 0 ? nil : Manifest(number: n2, checksum: c2),
                                sequence: sequence)
        }
    }

    /// Replaces the directory's marker: writes and syncs `BACKUP.tmp`, renames it over `BACKUP`.
    /// The caller syncs the directory.
    func write(in directory: String, fileSystem: any FileSystem) throws {
        try fileSystem.replaceFile(at: joinPath(directory, Self.fileName), with: encode())
    }

    /// The masked CRC-32C of a whole file, read in pieces (a manifest reused across opens can
    /// reach megabytes, and a crafted one anything).
    static func checksum(ofFile path: String, fileSystem: any FileSystem) throws -> UInt32 {
        let file = try fileSystem.openReadable(path)
        defer { file.close() }
        var crc: UInt32 = 0
        var offset: UInt64 = 0
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = try buffer.withUnsafeMutableBytes { try file.readOnce(at: offset, into: $0) }
            if n == 0 { break }
            crc = buffer.withUnsafeBytes { Checksum.crc32c(UnsafeRawBufferPointer(rebasing: $0[..<n]), extending: crc) }
            offset += UInt64(n)
        }
        return Checksum.mask(crc)
    }
}
