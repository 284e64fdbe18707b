/// The `STATS` file (SPEC.md §3.1): the store's lifetime counters, rewritten at each clean
/// close so that tools can report write amplification and activity over the store's whole life,
/// not only since the last open. Advisory: a store without it, or with a damaged one, opens with
/// the counters started afresh (and `verify` reports the damage).
enum StatsFile {
    static func path(in directory: String) -> String { joinPath(directory, FormatConstants.statsFileName) }

    static func encode(_ counters: EngineCounters) -> [UInt8] {
        var w = ByteWriter(capacity: 16 + 8 * EngineCounters.fields.count)
        w.appendFixed32(FormatConstants.statsFormatVersion)
        w.appendFixed32(UInt32(EngineCounters.fields.count))
        for f in EngineCounters.fields { w.appendFixed64(counters[keyPath: f.keyPath]) }
        let crc = w.bytes.withUnsafeBytes { Checksum.mask(Checksum.crc32c($0)) }
        w.appendFixed32(crc)
        return w.bytes
    }

    static func decode(_ bytes: [UInt8], path: String) throws -> EngineCounters {
        try bytes.withUnsafeBytes { raw in
            guard raw.count >= 12 else {
                throw StorageError.corruption(file: path, offset: 0, reason: "STATS file of \(raw.count) bytes is too short")
            }
            let n = Int(loadFixed32(raw, 4))
            guard n <= 1 << 16, raw.count == 8 + 8 * n + 4 else {
                throw StorageError.corruption(file: path, offset: 4, reason: "STATS file length does not match its \(n) counters")
            }
            let stored = Checksum.unmask(loadFixed32(raw, raw.count - 4))
            guard stored == Checksum.crc32c(UnsafeRawBufferPointer(rebasing: raw[0..<(raw.count - 4)])) else {
                throw StorageError.corruption(file: path, offset: UInt64(raw.count - 4), reason: "STATS checksum mismatch")
            }
            let version = loadFixed32(raw, 0)
            guard version <= FormatConstants.statsFormatVersion else {
                throw StorageError.unsupportedFormatVersion(file: path, found: version, supported: FormatConstants.statsFormatVersion)
            }
            var counters = EngineCounters()
            for (i, f) in EngineCounters.fields.enumerated() where i < n {
                counters[keyPath: f.keyPath] = loadFixed64(raw, 8 + 8 * i)
            }
            return counters
        }
    }

    /// The counters stored in `directory`, or zeros when there is no `STATS` file.
    static func read(directory: String, fileSystem: any FileSystem, cipher: StoreCipher?) throws -> EngineCounters {
        let p = path(in: directory)
        guard fileSystem.fileExists(p) else { return EngineCounters() }
        return try decode(try fileSystem.readWholeFile(p, limit: FormatConstants.smallFileMaxBytes), path: p, cipher: cipher)
    }

    /// The counters of a file that is sealed whole when the store is encrypted (SPEC.md §14.4).
    static func decode(_ bytes: [UInt8], path: String, cipher: StoreCipher?) throws -> EngineCounters {
        guard let cipher else { return try decode(bytes, path: path) }
        return try decode(try SealedFile.open(bytes, cipher: cipher, label: sealLabel, path: path), path: path)
    }

    /// What a sealed `STATS` authenticates besides its bytes.
    static let sealLabel = "strata STATS"


    /// Replaces the file through a temporary and a rename, so a crash leaves the old or the new
    /// file, never half of one. Not synced: losing the latest counters to a power cut is fine.
    static func write(_ counters: EngineCounters, directory: String, fileSystem: any FileSystem, cipher: StoreCipher?) throws {
        let p = path(in: directory)
        let tmp = p + FormatConstants.tempSuffix
        let file = try fileSystem.openWritable(tmp, truncate: true)
        do {
            let bytes = cipher.map { SealedFile.seal(encode(counters), cipher: $0, label: sealLabel) } ?? encode(counters)
            try bytes.withUnsafeBytes { try file.append($0) }
            try file.close()
            try fileSystem.rename(tmp, to: p)
        } catch {
            try? fileSystem.removeFile(tmp)
            throw error
        }
    }
}
