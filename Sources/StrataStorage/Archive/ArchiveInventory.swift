/// What an archive holds, store by store and generation by generation
/// (``Engine/archiveInventory(of:)``, `strata archive-status`): read from the object names,
/// the states, and the last log piece of each generation, never the whole log.
public struct ArchiveInventory: Sendable, Equatable {
    public struct Generation: Sendable, Equatable {
        /// Its place among the store's opens (0 in an archive written before store ids).
        public var ordinal: UInt64
        public var id: UInt64
        public var states: Int
        /// The newest state's sequence number (an upper bound of what its segments hold).
        public var newestStateSequence: UInt64
        /// The last commit the archive holds of the generation, and when it was made (seconds
        /// since 1970), from its last log piece; nil when it shipped no commit.
        public var lastCommitSequence: UInt64?
        public var lastCommitTime: Double?
        public var logPieces: Int
        public var wals: Int
    }

    public struct Store: Sendable, Equatable {
        /// The store id (0: an archive written before store ids).
        public var id: UInt64
        /// Oldest first.
        public var generations: [Generation]
        /// Segment objects, and the bytes of those the newest state names.
        public var segments: Int
        public var newestStateSegmentBytes: UInt64
        /// Objects of the store that do not decode (a restore names them).
        public var damagedObjects: [String]
    }

    public var stores: [Store]
    /// Names in the target that are not archive objects (left alone by every archiver).
    public var otherObjects: Int
}

extension Engine {
    /// Reads what `target` holds (``ArchiveInventory``): for each store, its generations in the
    /// order it opened, their states, and the last commit each shipped with its time, from which
    /// an archive's lag is the time since. Only reads.
    ///
    /// ```swift
    /// for store in try Engine.archiveInventory(of: target).stores {
    ///     print(String(store.id, radix: 16), store.generations.last?.lastCommitTime ?? 0)
    /// }
    /// ```
    ///
    /// An encrypted store's archive needs its key (`encryptionKey`): without it this throws
    /// ``StorageError/encryptionKeyRequired(file:)``.
    public static func archiveInventory(of target: any ArchiveTarget, encryptionKey: [UInt8]? = nil) throws -> ArchiveInventory {
        let target = SealingArchiveTarget.wrapping(target, cipher: try encryptionKey.map { try StoreCipher(key: $0) })
        var objects: [(name: String, object: ArchiveObject)] = []
        var other = 0
        for name in try target.list() {
            if let object = ArchiveObject(name: name) { objects.append((name, object)) } else { other += 1 }
        }
        var stores: [ArchiveInventory.Store] = []
        for storeId in Set(objects.map(\.object.store)).sorted() {
            var damaged: [String] = []
            var states: [ArchiveGeneration: [ArchivedState]] = [:]
            var pieces: [ArchiveGeneration: [(wal: UInt64, offset: UInt64, name: String)]] = [:]
            var segments = 0
            for (name, object) in objects where object.store == storeId {
                switch object {
                case .segment: segments += 1
                case let .state(g, _, _):
                    do { states[g, default: []].append(try ArchivedState.decode(try target.get(name), name: name)) } catch {
                        // A key that does not open the archive is the caller's error, not damage.
                        if let e = error as? StorageError, e.isEncryptionKeyError { throw e }
                        damaged.append(name)
                    }
                case let .log(g, wal, offset): pieces[g, default: []].append((wal, offset, name))
                }
            }
            var generations: [ArchiveInventory.Generation] = []
            for g in Set(states.keys).union(pieces.keys) {
                let own = states[g] ?? []
                var lastSequence: UInt64?, lastTime: Double?
                if let last = pieces[g]?.max(by: { ($0.wal, $0.offset) < ($1.wal, $1.offset) }) {
                    if let piece = try? ArchivedLogPiece.decode(try target.get(last.name), name: last.name) {
                        if let t = piece.times.last {
                            lastSequence = t.sequence
                            lastTime = Double(t.micros) / 1e6
                        }
                    } else {
                        damaged.append(last.name)
                    }
                }
                if lastSequence == nil, let newest = own.max(by: { $0.committed.sequence < $1.committed.sequence }), newest.committed.micros > 0 {
                    lastSequence = newest.committed.sequence
                    lastTime = Double(newest.committed.micros) / 1e6
                }
                generations.append(.init(ordinal: g.ordinal, id: g.id, states: own.count,
                                         newestStateSequence: own.map(\.sequence).max() ?? 0,
                                         lastCommitSequence: lastSequence, lastCommitTime: lastTime,
                                         logPieces: pieces[g]?.count ?? 0, wals: Set((pieces[g] ?? []).map(\.wal)).count))
            }
            generations.sort { ($0.ordinal, $0.lastCommitTime ?? 0, $0.id) < ($1.ordinal, $1.lastCommitTime ?? 0, $1.id) }
            let newest = states.values.flatMap { $0 }.max { $1.isNewer(than: $0) }
            stores.append(.init(id: storeId, generations: generations, segments: segments,
                                newestStateSegmentBytes: newest?.segments.reduce(UInt64(0)) { $0 &+ $1.fileSize } ?? 0,
                                damagedObjects: damaged.sorted()))
        }
        return ArchiveInventory(stores: stores, otherObjects: other)
    }
}
