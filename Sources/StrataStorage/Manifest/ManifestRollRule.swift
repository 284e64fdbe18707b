/// When a manifest is rewritten as a snapshot of the live state (SPEC.md §8): once its history
/// (every flush's and compaction's edit) is over `liveMultiple` times that state and over
/// `minimumBytes`, so that what an open replays stays in proportion to the store, not to its
/// age (RocksDB's `max_manifest_file_size`, made relative to the store).
struct ManifestRollRule: Sendable {
    var minimumBytes: UInt64 = 32 << 10
    /// At least 1.
    var liveMultiple: UInt64 = 4
}
