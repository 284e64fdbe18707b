// The one home of every number that reaches disk or bounds input. SPEC.md describes each; the
// section named beside a constant is where. Values marked "never renumber" are frozen: a reader
// of an older store depends on them.

/// Limits and on-disk constants of the storage engine.
public enum StorageLimits {
    /// Largest user key, in bytes (SPEC.md §Limits).
    public static let maxKeyBytes = 16 * 1024
    /// Largest value, in bytes (SPEC.md §Limits).
    public static let maxValueBytes = 64 * 1024 * 1024
    /// Largest encoded write batch, in bytes. One batch is one WAL record (SPEC.md §WAL).
    public static let maxBatchBytes = 512 * 1024 * 1024
    /// Most key spaces one store can hold.
    public static let maxKeySpaces = 1024
    /// Longest key-space name, in UTF-8 bytes.
    public static let maxKeySpaceNameBytes = 255
    /// Largest sequence number: sequence numbers share a 64-bit word with an 8-bit kind.
    public static let maxSequence: UInt64 = (1 << 56) - 1
}

package enum FormatConstants {
    /// Store format version, written in the manifest (SPEC.md §Manifest). A store written by a
    /// newer version is refused.
    /// Version 2 added the durable marks of WAL records (§5.1); version 1 stores still open (and
    /// are upgraded by their first writable open). Version 3 added the store id, segment uids
    /// and the archive's WAL owners (§7.1); version 2 stores get an id at their first writable
    /// open.
    static let storeFormatVersion: UInt32 = 3
    /// Segment format version, in every segment footer (SPEC.md §Segment). Version 2 added the
    /// properties block's filter prefix field; version 3 keeps each key's filter probes in one
    /// 64-byte line; version 4 adds id-addressed data blocks (§6.1.1); version 5 gives each of
    /// their entries a checksum, stores them raw and describes each in its index entry, so that
    /// a point read copies one entry out of the file (§6.1.1, §6.2); version 6 does the same in
    /// an encrypted segment, whose id blocks' values are then sealed one by one (§14.3), and is
    /// laid out as version 5 in a plaintext one. Versions 1–5 are still read.
    static let segmentFormatVersion: UInt32 = 6
    /// Last eight bytes of every segment: "STRATSEG" read as a little-endian UInt64.
    static let segmentMagic: UInt64 = 0x4745_5354_4152_5453
    /// Bytes in the fixed segment footer.
    package static let segmentFooterBytes = 64
    /// The most bytes read of the small files read whole: `CURRENT` (about 30 bytes), `STATS`
    /// and the backup marker (under 1 KiB). Anything larger is damage, refused before it is read.
    static let smallFileMaxBytes = 64 << 10
    /// The most bytes of a manifest `verify` reads whole: one that has outgrown its live state
    /// is rewritten (SPEC.md §8), so even a store of a million segments stays far below.
    static let manifestMaxBytes = 1 << 30
    /// The most bytes of one object a directory archive target reads back (a segment, a log
    /// piece, a state): far above any segment or log the engine writes, far below what a
    /// crafted sparse file could claim.
    static let archiveObjectMaxBytes = 4 << 30
    /// Bytes in a block trailer: compression type (1) + masked CRC32C (4).
    static let blockTrailerBytes = 5
    /// Bytes in a log record header: masked CRC32C (4) + payload length (4).
    package static let logRecordHeaderBytes = 8
    /// Set in a WAL record's length field when its payload starts with a durable mark (SPEC.md
    /// §5.1): the offset before which the log was synced when the record was appended.
    package static let logRecordMarkFlag: UInt32 = 1 << 31
    /// Bytes of a durable mark.
    package static let logRecordMarkBytes = 8
    /// Added to the rotated CRC so that a checksum stored next to the data it covers does not
    /// checksum to a fixed value (LevelDB's masking, SPEC.md §Checksums).
    static let crcMaskDelta: UInt32 = 0xA282_EAD8

    // File names (SPEC.md §Files).
    package static let currentFileName = "CURRENT"
    static let lockFileName = "LOCK"
    static let manifestPrefix = "MANIFEST-"
    static let walSuffix = ".wal"
    static let segmentSuffix = ".seg"
    static let tempSuffix = ".tmp"
    /// The largest file number the engine gives or accepts (in a file name or a manifest):
    /// far beyond any real store, and small enough that no arithmetic on it overflows.
    static let maxFileNumber: UInt64 = 1 << 56
    package static let statsFileName = "STATS"
    /// Version of the `STATS` file (SPEC.md §3.1).
    static let statsFormatVersion: UInt32 = 1
}

/// How a block's payload is stored (SPEC.md §Segment). Never renumber.
package enum BlockCompression: UInt8 {
    case none = 0
    case lz4 = 1
}

/// The kind of an entry, in the low byte of its trailer (SPEC.md §Key encoding). Never renumber.
@usableFromInline
enum EntryKind: UInt8, Sendable {
    case deletion = 0
    case value = 1
}
