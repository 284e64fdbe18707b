/// Runs one ``CompactionJob``: merges its inputs and writes the surviving entries into new
/// segments, cut at about ``CompactionPolicy/targetSegmentBytes`` on user-key boundaries (so all
/// versions of a key stay in one segment).
///
/// Dropped: a version hidden by a newer version of the same key that every reader can see
/// (sequence ≤ `oldestReadable`), and a tombstone every reader can see when no deeper level can
/// hold the key (LevelDB's rules).
///
/// Zeroed: the sequence of a value every reader can see when no deeper level can hold its key
/// (RocksDB's rule). No reader needs it any more, and a constant trailer compresses away: about
/// 7 bytes per entry of a fully compacted store.
struct Compactor {
    let job: CompactionJob
    let version: Version
    let oldestReadable: UInt64
    let layout: SegmentLayout
    let targetSegmentBytes: UInt64
    let fileSystem: any FileSystem
    let directory: String
    let newFileNumber: () -> UInt64
    let stats: StatisticsCounters
    /// The store's cipher when it is encrypted: outputs are sealed.
    let cipher: StoreCipher?
    /// Checked every ``cancellationCheckInterval`` entries: true once the engine is closing,
    /// which then need not wait for a long merge (its outputs never become live).
    let isCancelled: () -> Bool
    /// 256 entries are 0.2–0.3 ms of merging in an encrypted store, where every block is opened
    /// and sealed again; 4,096 were about 4 ms, most of a reopen whose close met the compaction
    /// the open had begun (measured 2026-12-07). The check is one atomic load. What a close still
    /// waits for: the first read of every input (1–3 ms), and one output's sync when it comes
    /// once the merge is done (``unsynced``).
    static let cancellationCheckInterval = 256

    /// Paths of files written so far (for cleanup when the job fails).
    private(set) var written: [String] = []
    /// Outputs written whole, still open and not synced: they are synced together once the
    /// merge is done, before the job's manifest record names them. A close that stops the job
    /// thus waits for no sync (one took 171 ms on the build machine, and a close met one in
    /// most reopens of the graph benchmark's encrypted store), and the outputs it throws away
    /// are removed before they are written back.
    private var unsynced: [any WritableFile] = []

    init(job: CompactionJob, version: Version, oldestReadable: UInt64, layout: SegmentLayout, targetSegmentBytes: UInt64,
         fileSystem: any FileSystem,
         directory: String, stats: StatisticsCounters, cipher: StoreCipher?, isCancelled: @escaping () -> Bool = { false },
         newFileNumber: @escaping () -> UInt64) {
        self.cipher = cipher
        self.isCancelled = isCancelled
        self.job = job
        self.version = version
        self.oldestReadable = oldestReadable
        self.layout = layout
        self.targetSegmentBytes = targetSegmentBytes
        self.fileSystem = fileSystem
        self.directory = directory
        self.stats = stats
        self.newFileNumber = newFileNumber
    }

    /// Answers "may a level below the output level hold this key?" for keys asked in
    /// ascending order, with one cursor per deeper level (their segments are sorted and do not
    /// overlap): amortized O(levels) per key instead of a walk over every deeper segment.
    private struct DeeperLevels {
        private let levels: [[LiveSegment]]
        private var cursors: [Int]

        init(version: Version, keySpaceId: UInt32, outputLevel: Int) {
            let all = version.keySpaces[keySpaceId]?.levels ?? []
            levels = outputLevel + 1 < all.count ? all[(outputLevel + 1)...].filter { !$0.isEmpty } : []
            cursors = Array(repeating: 0, count: levels.count)
        }

        mutating func mayHold(_ userKey: UnsafeRawBufferPointer) -> Bool {
            for l in levels.indices {
                let segments = levels[l]
                var i = cursors[l]
                while i < segments.count, segments[i].endsBefore(userKey) { i += 1 }
                cursors[l] = i
                if i < segments.count, segments[i].covers(userKey) { return true }
            }
            return false
        }
    }

    mutating func run(meter: inout CompactionMeter) throws -> [SegmentMeta] {
        // Opening the inputs reads each one's footer and index (and derives its key when the
        // store is encrypted): a dozen of them take milliseconds, which a close need not wait for.
        var inputs: [any InternalIterator] = []
        inputs.reserveCapacity(job.allInputs.count)
        for segment in job.allInputs {
            if isCancelled() { throw StorageError.closed }
            inputs.append(try segment.reader().makeIterator(fillCache: false))
        }
        let merged = MergingIterator(inputs)
        merged.seekToFirst()
        var outputs: [SegmentMeta] = []
        var writer: SegmentWriter?
        var writerNumber: UInt64 = 0
        var currentKey: [UInt8] = []
        var hasCurrent = false
        var lastSequenceForKey = UInt64.max
        var deeper = DeeperLevels(version: version, keySpaceId: job.keySpaceId, outputLevel: job.outputLevel)
        var isBottommost = false
        /// The key being written with its sequence zeroed.
        var zeroed: [UInt8] = []
        var visited = 0

        func finish(_ w: SegmentWriter, _ number: UInt64) throws {
            let props = try w.finishUnsynced()
            unsynced.append(w.file)
            stats.segmentBytesWritten.add(w.fileSize, ordering: .relaxed)
            outputs.append(SegmentMeta(keySpaceId: job.keySpaceId, level: job.outputLevel, fileNumber: number,
                                       fileSize: w.fileSize, smallest: props.smallestKey, largest: props.largestKey,
                                       minSequence: props.minSequence, maxSequence: props.maxSequence,
                                       entryCount: props.entryCount, uid: SegmentMeta.newUid()))
        }

        do {
            while merged.isValid {
                visited += 1
                if visited % Self.cancellationCheckInterval == 0, isCancelled() { throw StorageError.closed }
                let ik = merged.key
                let userKey = InternalKey.userKey(ik)
                let trailer = InternalKey.trailer(ik)
                let sequence = trailer >> 8
                meter.add(userKey.count + merged.value.count)
                let isNewKey = !hasCurrent || !currentKey.withUnsafeBytes { $0.bytesEqual(userKey) }
                if isNewKey {
                    if let w = writer, w.fileSize >= targetSegmentBytes {
                        try finish(w, writerNumber)
                        writer = nil
                    }
                    currentKey.removeAll(keepingCapacity: true)
                    currentKey.append(contentsOf: userKey)
                    hasCurrent = true
                    lastSequenceForKey = .max
                    isBottommost = !deeper.mayHold(userKey)
                }
                let isDeletion = trailer & 0xFF == UInt64(EntryKind.deletion.rawValue)
                var drop = false
                if lastSequenceForKey <= oldestReadable {
                    drop = true   // a newer version of this key is visible to every reader
                } else if isDeletion, sequence <= oldestReadable, isBottommost {
                    drop = true   // nothing older remains for this tombstone to hide
                }
                lastSequenceForKey = sequence
                if !drop {
                    if writer == nil {
                        writerNumber = newFileNumber()
                        let path = joinPath(directory, StoreFile.segmentName(writerNumber))
                        written.append(path)
                        writer = SegmentWriter(file: try fileSystem.openWritable(path, truncate: true), path: path,
                                               keySpaceId: job.keySpaceId, layout: layout, cipher: cipher)
                    }
                    if sequence > 0, sequence <= oldestReadable, isBottommost, !isDeletion {
                        // The oldest version kept (older ones were dropped just above): every
                        // reader sees it, so its sequence tells nothing.
                        zeroed.removeAll(keepingCapacity: true)
                        zeroed.append(contentsOf: userKey)
                        withUnsafeBytes(of: InternalKey.trailer(sequence: 0, kind: .value).littleEndian) { zeroed.append(contentsOf: $0) }
                        try zeroed.withUnsafeBytes { try writer!.add(internalKey: $0, value: merged.value) }
                    } else {
                        try writer!.add(internalKey: ik, value: merged.value)
                    }
                }
                merged.next()
            }
            if let e = merged.error { throw e }
            if let w = writer {
                try finish(w, writerNumber)
                writer = nil
            }
            while let file = unsynced.first {
                if isCancelled() { throw StorageError.closed }
                try file.sync()
                unsynced.removeFirst()
                try file.close()
            }
        } catch {
            writer?.abandon()
            for file in unsynced { try? file.close() }
            unsynced = []
            throw error
        }
        return outputs
    }
}
