import StrataStorage
import StrataProbes

/// What the fuzzers (`Fuzz/`) and the corpus replay test feed arbitrary bytes to: one decoder of
/// a file format each. Every input must end in a result or a typed error, never a crash, a
/// hang or a sanitizer report. Underscored: a tool for tests and fuzzers (Strata's own, or an
/// app's that wants to fuzz the formats it ships), not API an app calls at run time.
///
/// ```swift
/// import StrataTesting
/// for target in _FuzzTarget.allCases { bytes.withUnsafeBytes { target.run($0) } }
/// ```
public enum _FuzzTarget: String, CaseIterable, Sendable {
    /// A WAL: log framing (checksums, torn tails, mid-log damage) and write-batch decoding.
    case wal
    /// A whole segment file: footer, index, filter and properties blocks, then every data block
    /// and a few point lookups.
    case segment
    /// One block's contents (restart array, prefix-compressed entries), iterated and searched.
    case block
    /// The 64-byte segment footer.
    case footer
    /// A manifest: log framing and version-edit decoding.
    case manifest
    /// A WAL with its checksums made right after mutation (the first byte picks one record to
    /// leave damaged, or none), replayed into memtables the way an open does: batch decoding,
    /// durable marks, torn tails and mid-log damage behind valid checksums.
    case walChecked
    /// A manifest with its checksums made right, replayed by a read-only open behind a valid
    /// `CURRENT`: version edits applied, numbers range-checked, segments looked for.
    case manifestChecked
    /// A segment with its footer and block checksums made right: index, filter, properties and
    /// data blocks decoded behind valid checksums.
    case segmentChecked
    /// A whole store directory (an archive of named files), checksums made right: directory listing,
    /// `CURRENT`, manifest replay, WAL replay, segments, verify, and a writable open.
    case store

    /// The `store` target's input for the store in `directory` of `fileSystem` (its files with
    /// names the archive's table knows), to seed the fuzzer's corpus with real stores.
    public static func storeArchive(of fileSystem: InMemoryFileSystem, directory: String) throws -> [UInt8] {
        let files = try fileSystem.listDirectory(directory).sorted().compactMap { name in
            fileSystem.contents(of: joinPath(directory, name)).map { (name: name, bytes: $0) }
        }
        return DecoderProbe.storeArchive(files)
    }

    /// Runs one input through the target's decoders, in a fresh in-memory file system when it
    /// needs files.
    public func run(_ data: UnsafeRawBufferPointer) {
        switch self {
        case .wal: DecoderProbe.wal(data)
        case .manifest: DecoderProbe.manifest(data)
        case .walChecked: DecoderProbe.walChecked(data, in: InMemoryFileSystem())
        case .manifestChecked: DecoderProbe.manifestChecked(data, in: InMemoryFileSystem())
        case .segmentChecked: DecoderProbe.segmentChecked(data, in: InMemoryFileSystem())
        case .store: DecoderProbe.store(data, in: InMemoryFileSystem())
        case .footer: DecoderProbe.footer(data)
        case .block: DecoderProbe.block(data)
        case .segment: DecoderProbe.segment(data, in: InMemoryFileSystem())
        }
    }
}
