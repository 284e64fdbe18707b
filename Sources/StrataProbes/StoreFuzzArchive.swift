import StrataStorage

/// A whole store directory as one fuzzer input, for the `store` fuzz target: what recovery meets
/// when it lists a directory, recognises the store's files among others, follows `CURRENT`,
/// replays the manifest and the WALs and opens the segments.
///
/// ```
/// archive = entry*
/// entry   = tag (u8) | number (u8) | length (u16 LE) | contents
/// ```
/// The tag, modulo the table's size plus 3, picks a name from a fixed table that mixes the
/// store's own names with near misses (`0000042.wal`, `18446744073709551615.wal`) and foreign
/// files, or a WAL, segment or manifest with the entry's number. Before the store is opened,
/// the checksums of `CURRENT`, `STATS`, manifests, WALs and segments are made right (``ChecksumFixup``),
/// so the mutations reach the decoders behind them.
package enum StoreFuzzArchive {
    static let names = [
        "CURRENT", "STATS", "LOCK", "CURRENT.tmp", "000008.seg.tmp", "0000042.wal", "18446744073709551615.wal",
        "+00009.seg", "notes.txt", "MANIFEST-1",
    ]

    static func name(tag: UInt8, number: UInt8) -> String {
        let pick = Int(tag) % (names.count + 3)
        if pick < names.count { return names[pick] }
        let n = UInt64(number)
        switch pick - names.count {
        case 0: return StoreFile.walName(n)
        case 1: return StoreFile.segmentName(n)
        default: return StoreFile.manifestName(n)
        }
    }

    static func decode(_ data: UnsafeRawBufferPointer) -> [(name: String, bytes: [UInt8])] {
        var files: [(name: String, bytes: [UInt8])] = []
        var at = 0
        while data.count - at >= 4 {
            let length = min(Int(data[at + 2]) | Int(data[at + 3]) << 8, data.count - at - 4)
            files.append((name(tag: data[at], number: data[at + 1]), Array(data[(at + 4)..<(at + 4 + length)])))
            at += 4 + length
        }
        return files
    }

    static func encode(_ files: [(name: String, bytes: [UInt8])]) -> [UInt8] {
        var out: [UInt8] = []
        for (name, bytes) in files where bytes.count <= Int(UInt16.max) {
            var tag: Int, number: UInt64 = 0
            switch StoreFile.parse(name) {
            case let .wal(n)?: tag = names.count; number = n
            case let .segment(n)?: tag = names.count + 1; number = n
            case let .manifest(n)?: tag = names.count + 2; number = n
            default:
                guard let index = names.firstIndex(of: name) else { continue }
                tag = index
            }
            guard number < 256 else { continue }
            out += [UInt8(tag), UInt8(number), UInt8(bytes.count & 0xFF), UInt8(bytes.count >> 8)]
            out += bytes
        }
        return out
    }

    /// Writes the files (checksums fixed) to `/db` in the empty `fs`, then verifies, opens
    /// read-only and reads everything (and the lifetime counters), opens writable, writes,
    /// flushes and reopens. Every step
    /// must end in a value or a typed error.
    static func run(_ data: UnsafeRawBufferPointer, in fs: any FileSystem) {
        guard (try? fs.createDirectory("/db")) != nil else { return }
        for (name, original) in decode(data) {
            var bytes = original
            switch StoreFile.parse(name) {
            case .manifest?:
                ChecksumFixup.fixLog(&bytes, allowsMarks: false, leave: nil)
            case .wal?:
                ChecksumFixup.fixLog(&bytes, allowsMarks: true, leave: nil)
            case .segment?:
                ChecksumFixup.fixSegment(&bytes)
            default:
                if name == FormatConstants.statsFileName { ChecksumFixup.fixStats(&bytes) }
                if name == FormatConstants.currentFileName, bytes.count == 1 {
                    // One byte: a well-formed CURRENT naming that manifest number (which may not exist).
                    bytes = VersionSet.currentContents(manifestNumber: UInt64(bytes[0]))
                }
            }
            // A name repeated in the archive: the last entry wins, as a rewrite would.
            guard (try? DecoderProbe.write(bytes, to: "/db/" + name, in: fs)) != nil else { return }
        }
        _ = try? Engine.verify(directory: "/db", fileSystem: fs)
        var options = EngineOptions()
        options.fileSystem = fs
        options.createIfMissing = false
        options.readOnly = true
        if let engine = try? Engine.open(directory: "/db", options: options) {
            for ks in engine.keySpaces { _ = try? engine.scan(ks) }
            // The lifetime counters come from the archive's STATS file, if any.
            let life = engine.statistics().lifetime
            _ = life.bytesWrittenToDisk &+ UInt64(life.writeAmplification.isFinite ? 1 : 0)
            engine.close()
        }
        options.readOnly = false
        if let engine = try? Engine.open(directory: "/db", options: options) {
            var batch = WriteBatch()
            batch.put(Array("fuzz".utf8), Array("value".utf8), in: engine.defaultKeySpace)
            try? engine.write(batch, durability: .sync)
            try? engine.flush()
            try? engine.waitForBackgroundWork()
            engine.close()
            if let again = try? Engine.open(directory: "/db", options: options) {
                _ = try? again.get(Array("fuzz".utf8), in: again.defaultKeySpace)
                again.close()
            }
        }
    }
}
