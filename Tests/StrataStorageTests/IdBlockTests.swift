import Foundation
import Testing
@testable import StrataStorage
import StrataTesting
import StrataProbes

/// Id-addressed data blocks (SPEC.md §6.1.1): a key space listed in `EngineOptions.idKeySpaces`
/// stores runs of keys that share a head and end in a big-endian id in blocks found by
/// arithmetic on the id. Every read must give what the restart layout gives, for dense and
/// sparse ids, several heads, keys of other shapes, deletions and versions kept by snapshots.
@Suite struct IdBlockTests {
    static let dir = "/db"

    static func idKey(_ head: UInt32, _ id: UInt64) -> [UInt8] {
        withUnsafeBytes(of: head.bigEndian) { Array($0) } + withUnsafeBytes(of: id.bigEndian) { Array($0) }
    }

    static func options(_ fs: InMemoryFileSystem, idBlocks: Bool, format: UInt32 = FormatConstants.segmentFormatVersion) -> EngineOptions {
        var o = EngineOptions.testing(fs, memtableBytes: 16 << 10, blockBytes: 512, targetSegmentBytes: 16 << 10)
        o.keySpaces = ["objects"]
        if idBlocks { o.idKeySpaces = ["objects"] }
        o.segmentFormatVersion = format
        return o
    }

    /// The entry shapes of the id blocks of every segment of the store at `dir`.
    static func entryShapes(_ fs: InMemoryFileSystem) throws -> Set<IdBlockLayout.EntryShape> {
        var shapes: Set<IdBlockLayout.EntryShape> = []
        for name in try fs.listDirectory(dir) where name.hasSuffix(".seg") {
            let reader = try SegmentReader.open(fileSystem: fs, path: dir + "/" + name, fileNumber: 1,
                                                cache: BlockCache(capacityBytes: 1 << 20), stats: StatisticsCounters(), cipher: nil)
            for i in 0..<(try reader.indexEntryCount()) {
                let block = try reader.dataBlock(try reader.blockHandle(atIndexEntry: i), fillCache: false)
                if let layout = block.idLayout { shapes.insert(layout.shape) }
            }
        }
        return shapes
    }

    /// The data blocks of every live segment of the store at `dir`: (id blocks, other blocks).
    static func blockLayouts(_ fs: InMemoryFileSystem) throws -> (id: Int, restart: Int) {
        var id = 0, restart = 0
        for name in try fs.listDirectory(dir) where name.hasSuffix(".seg") {
            let reader = try SegmentReader.open(fileSystem: fs, path: dir + "/" + name, fileNumber: 1,
                                                cache: BlockCache(capacityBytes: 1 << 20), stats: StatisticsCounters(), cipher: nil)
            for i in 0..<(try reader.indexEntryCount()) {
                let block = try reader.dataBlock(try reader.blockHandle(atIndexEntry: i), fillCache: false)
                if block.idLayout != nil { id += 1 } else { restart += 1 }
            }
        }
        return (id, restart)
    }

    /// A random workload over three heads (dense runs, gaps, removals, overwrites) and a few keys
    /// of other lengths, applied to an engine and a model; returns the model and a snapshot's model.
    static func workload(_ e: Engine, seed: UInt64) throws -> (model: [[UInt8]: [UInt8]], snapshot: Snapshot, atSnapshot: [[UInt8]: [UInt8]]) {
        let ks = try e.keySpace(named: "objects")
        var rng = SplitMix64(state: seed)
        var model: [[UInt8]: [UInt8]] = [:]
        var snapshot: Snapshot?
        var atSnapshot: [[UInt8]: [UInt8]] = [:]
        for round in 0..<12 {
            var batch = WriteBatch()
            for head in UInt32(1)...3 {
                for _ in 0..<60 {
                    let id = rng.next() % 400 + (head == 2 ? UInt64.max - 500 : 1)
                    let k = idKey(head, id)
                    if rng.next() % 5 == 0 {
                        batch.delete(k, in: ks)
                        model[k] = nil
                    } else {
                        let v = Array("v\(round)-\(head)-\(id)-".utf8) + [UInt8](repeating: UInt8(id & 0xFF), count: Int(rng.next() % 40))
                        batch.put(k, v, in: ks)
                        model[k] = v
                    }
                }
            }
            // Keys of other shapes among them: shorter than an id, longer, with the same head.
            let odd: [[UInt8]] = [Array("x".utf8), idKey(2, 7) + [1, 2], [0, 0, 0, 2, 9], idKey(4, 1) + Array("tail".utf8)]
            let k = odd[round % odd.count]
            batch.put(k, Array("odd\(round)".utf8), in: ks)
            model[k] = Array("odd\(round)".utf8)
            try e.write(batch)
            if round == 5 {
                snapshot = try e.snapshot()
                atSnapshot = model
            }
            if round % 4 == 3 { try e.flush() }
        }
        try e.flush()
        return (model, snapshot!, atSnapshot)
    }

    /// Every read path against the model: point reads of present and absent keys, a batched read,
    /// a forward and a backward scan, and seeks between keys.
    static func check(_ e: Engine, _ model: [[UInt8]: [UInt8]], snapshot: Snapshot? = nil) throws {
        let ks = try e.keySpace(named: "objects")
        for (k, v) in model { #expect(try e.get(k, in: ks, snapshot: snapshot) == v) }
        var probes: [[UInt8]] = []
        for head in UInt32(0)...4 {
            for id in [0, 1, 2, 399, 400, 401, 402, UInt64.max - 500, UInt64.max - 99, UInt64.max - 100, UInt64.max] {
                probes.append(idKey(head, id))
            }
        }
        probes += [[], [0], idKey(2, 7) + [1], idKey(2, 7) + [1, 2, 3], [0xFF, 0xFF]]
        for k in probes { #expect(try e.get(k, in: ks, snapshot: snapshot) == model[k], "\(k)") }
        let all = model.keys.sorted { $0.lexicographicallyPrecedes($1) } + probes
        var keys = KeyList()
        for k in all { keys.append(k) }
        try e.visitValues(forKeys: keys, in: ks, snapshot: snapshot) { i, value in
            #expect(value.map(Array.init) == model[all[i]])
        }
        let sorted = model.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        let forward = try e.scan(ks, snapshot: snapshot)
        #expect(forward.map(\.key) == sorted.map(\.key))
        #expect(forward.map(\.value) == sorted.map(\.value))
        #expect(try e.scan(ks, reverse: true, snapshot: snapshot).map(\.key) == sorted.reversed().map(\.key))
        for p in probes {
            let expected = sorted.first { !$0.key.lexicographicallyPrecedes(p) }?.key
            #expect(try e.scan(ks, lowerBound: p, limit: 1, snapshot: snapshot).first?.key == expected)
            let before = sorted.last { $0.key.lexicographicallyPrecedes(p) }?.key
            #expect(try e.scan(ks, upperBound: p, reverse: true, limit: 1, snapshot: snapshot).first?.key == before)
        }
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func readsGiveWhatTheRestartLayoutGives(seed: UInt64) throws {
        let fs = InMemoryFileSystem()
        let e = try Engine.open(directory: Self.dir, options: Self.options(fs, idBlocks: true))
        let (model, snapshot, atSnapshot) = try Self.workload(e, seed: seed)
        try Self.check(e, model)
        try Self.check(e, atSnapshot, snapshot: snapshot)
        snapshot.release()
        _ = try e.compact()
        try Self.check(e, model)
        e.close()
        // Id blocks were written, and ordinary ones for the keys of other shapes. (Counted
        // closed: a background compaction's output is not whole while it is written.)
        let layouts = try Self.blockLayouts(fs)
        #expect(layouts.id > 10)
        #expect(layouts.restart > 0)
        let reopened = try Engine.open(directory: Self.dir, options: Self.options(fs, idBlocks: true))
        try Self.check(reopened, model)
        reopened.close()
        // The same store read by an engine that does not list the key space reads the same.
        let plain = try Engine.open(directory: Self.dir, options: Self.options(fs, idBlocks: false))
        try Self.check(plain, model)
        plain.close()
    }

    /// Stores written in every earlier segment format open and read the same with id blocks
    /// turned on (format 4's id blocks without entry checksums among them); their compaction
    /// then writes the current format, with checked id blocks read one entry at a time.
    @Test(arguments: [1, 2, 3, 4] as [UInt32])
    func segmentsOfEarlierFormatsKeepReading(format: UInt32) throws {
        let fs = InMemoryFileSystem()
        let old = try Engine.open(directory: Self.dir, options: Self.options(fs, idBlocks: true, format: format))
        let (model, snapshot, atSnapshot) = try Self.workload(old, seed: 9)
        try Self.check(old, atSnapshot, snapshot: snapshot)
        snapshot.release()
        old.close()
        #expect(try Self.blockLayouts(fs).id == (format < 4 ? 0 : Self.blockLayouts(fs).id))
        if format == 4 { #expect(try Self.blockLayouts(fs).id > 0) }
        let e = try Engine.open(directory: Self.dir, options: Self.options(fs, idBlocks: true))
        try Self.check(e, model)
        _ = try e.compact()
        try Self.check(e, model)
        e.close()
        #expect(try Self.blockLayouts(fs).id > 0)
    }

    /// A valid id block, built by the writer's builder: `count` entries from id 100 (every third
    /// missing when sparse).
    static func builtBlock(count: Int, sparse: Bool, head: [UInt8] = [0, 0, 0, 7]) -> [UInt8] {
        var b = IdBlockBuilder()
        for i in 0..<count {
            let id = UInt64(100 + (sparse ? i * 3 : i))
            let key = head + withUnsafeBytes(of: id.bigEndian) { Array($0) } + withUnsafeBytes(of: InternalKey.trailer(sequence: UInt64(i + 1), kind: .value).littleEndian) { Array($0) }
            let added = key.withUnsafeBytes { k in Array("value \(i)".utf8).withUnsafeBytes { v in b.add(key: k, value: v) } }
            #expect(added)
        }
        return b.withFinishedContents { Array($0) }
    }

    static func decode(_ bytes: [UInt8], idFormat: IdBlockFormat = .checked) throws -> Block {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 8)
        bytes.withUnsafeBytes { if !$0.isEmpty { storage.copyMemory(from: $0) } }
        return try Block(taking: storage, contentsCount: bytes.count, file: "b", offset: 0, idFormat: idFormat)
    }

    /// The fuzzers' seeds for the id layout of format 5 (`block`: a dense and a sparse block;
    /// `segment`: a segment of an id key space), written to Tests/FuzzCorpus with
    /// `STRATA_WRITE_ID_SEEDS=1` and replayed through their targets here either way (the
    /// corpus keeps format 4's seeds, `id-block-dense` and the others, beside them).
    @Test func idSeedsRunThroughTheFuzzTargets() throws {
        let fs = InMemoryFileSystem()
        let e = try Engine.open(directory: Self.dir, options: Self.options(fs, idBlocks: true))
        let ks = try e.keySpace(named: "objects")
        var batch = WriteBatch()
        for id in [1, 2, 3, 5, 8, 13, 21, 34] as [UInt64] { batch.put(Self.idKey(1, id), Array("o\(id)".utf8), in: ks) }
        for id in UInt64(1)...40 { batch.put(Self.idKey(2, id), Array("p\(id)".utf8), in: ks) }
        try e.write(batch)
        try e.flush()
        e.close()
        let segment = try #require(try fs.listDirectory(Self.dir).first { $0.hasSuffix(".seg") }.flatMap { fs.contents(of: Self.dir + "/" + $0) })
        let seeds: [(String, String, [UInt8])] = [
            ("block", "id5-block-dense", Self.builtBlock(count: 12, sparse: false)),
            ("block", "id5-block-sparse", Self.builtBlock(count: 12, sparse: true)),
            ("segment", "id5-segment", segment),
        ]
        for (target, name, bytes) in seeds {
            bytes.withUnsafeBytes { _FuzzTarget(rawValue: target)!.run($0) }
            if ProcessInfo.processInfo.environment["STRATA_WRITE_ID_SEEDS"] == "1" {
                let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                    .appendingPathComponent("FuzzCorpus/\(target)")
                try Data(bytes).write(to: dir.appendingPathComponent(name))
            }
        }
    }

    /// Dense and sparse blocks, with heads of 0, 4, 8 and 12 bytes (a head of at most 8 bytes is
    /// compared as a word kept in the block object, a longer one in the block): every entry is
    /// found, not before its sequence, and keys of another head or length are not.
    @Test func aBuiltBlockDecodesAndFindsEveryEntry() throws {
        let heads: [[UInt8]] = [[], [0, 0, 0, 7], Array("tenant/7".utf8), Array("tenant/0042/".utf8)]
        for sparse in [false, true] {
            for head in heads {
                let block = try Self.decode(Self.builtBlock(count: 50, sparse: sparse, head: head))
                let layout = try #require(block.idLayout)
                #expect(layout.isSparse == sparse && layout.headCount == head.count)
                func lookup(_ head: [UInt8], _ id: UInt64, _ sequence: UInt64) -> Block.Lookup {
                    let target = head + withUnsafeBytes(of: id.bigEndian) { Array($0) }
                        + withUnsafeBytes(of: InternalKey.seekTrailer(sequence: sequence).littleEndian) { Array($0) }
                    return target.withUnsafeBytes { block.dataLookup($0) }
                }
                for i in 0..<50 {
                    let id = UInt64(100 + (sparse ? i * 3 : i))
                    let r = lookup(head, id, 1000)
                    guard case let .entry(true, false, offset, count) = r else { Issue.record("id \(id): \(r)"); continue }
                    #expect(Array(block.contents[offset..<(offset + count)]) == Array("value \(i)".utf8))
                    // A read below the entry's sequence does not see it.
                    if case .entry = lookup(head, id, UInt64(i)) { Issue.record("id \(id) seen before its sequence") }
                    // Another head of the same length, or a longer or shorter key, is not in the block.
                    if !head.isEmpty {
                        var other = head
                        other[other.count - 1] &+= 1
                        if case .entry = lookup(other, id, 1000) { Issue.record("head \(other) matched \(head)") }
                        other = head
                        other[0] &+= 1
                        if case .entry = lookup(other, id, 1000) { Issue.record("head \(other) matched \(head)") }
                        if case .entry = lookup(Array(head.dropLast()), id, 1000) { Issue.record("a shorter key matched") }
                    }
                    if case .entry = lookup(head + [0], id, 1000) { Issue.record("a longer key matched") }
                }
            }
        }
    }

    /// Each field of the footer and the entries damaged in turn: a typed corruption error at
    /// decode, never a trap or an out-of-range read; and an id block in a segment of an earlier
    /// format (which has no such layout) is damage too.
    @Test func damagedFieldsAreCorruption() throws {
        let good = Self.builtBlock(count: 20, sparse: true)
        let n = good.count
        func set32(_ b: inout [UInt8], _ at: Int, _ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { for i in 0..<4 { b[at + i] = $0[i] } } }
        func set64(_ b: inout [UInt8], _ at: Int, _ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { for i in 0..<8 { b[at + i] = $0[i] } } }
        let footer = n - IdBlockLayout.footerBytes
        // Entries of 16 bytes (value offset, checksum, trailer): the built block's trailers vary.
        let entries = footer - 4 - 20 * 16
        let damaged: [(String, ([UInt8]) -> [UInt8])] = [
            ("count 0", { var b = $0; set32(&b, footer + 8, 0); return b }),
            ("count huge", { var b = $0; set32(&b, footer + 8, .max); return b }),
            ("head huge", { var b = $0; set32(&b, footer + 12, .max); return b }),
            ("flags", { var b = $0; set32(&b, footer + 16, 8 | IdBlockLayout.checkedFlag); return b }),
            ("first id", { var b = $0; set64(&b, footer, 1); return b }),
            ("ids out of order", { var b = $0; set64(&b, entries - 8, 0); return b }),
            ("value offset", { var b = $0; set32(&b, entries + 16, .max); return b }),
            ("value offsets decreasing", { var b = $0; set32(&b, entries, 30); return b }),
            ("dense id range", { var b = $0; set32(&b, footer + 16, IdBlockLayout.checkedFlag); set64(&b, footer, .max - 3); return b }),
            ("checked flag missing", { var b = $0; set32(&b, footer + 16, IdBlockLayout.sparseFlag); return b }),
            ("too short", { Array($0.suffix(20)) }),
        ]
        for (name, damage) in damaged {
            #expect(throws: StorageError.self, "\(name)") { _ = try Self.decode(damage(good)) }
        }
        #expect(throws: StorageError.self) { _ = try Self.decode(good, idFormat: .none) }
        // A format 5 block is not a format 4 one (its entries are longer), nor the other way round.
        #expect(throws: StorageError.self) { _ = try Self.decode(good, idFormat: .plain) }
        var plain = IdBlockBuilder(checked: false)
        for id in UInt64(1)...5 {
            let key = [0, 0, 0, 1] + withUnsafeBytes(of: id.bigEndian) { Array($0) } + withUnsafeBytes(of: InternalKey.trailer(sequence: id, kind: .value).littleEndian) { Array($0) }
            _ = key.withUnsafeBytes { k in [UInt8(id)].withUnsafeBytes { v in plain.add(key: k, value: v) } }
        }
        let plainBytes = plain.withFinishedContents { Array($0) }
        #expect(try Self.decode(plainBytes, idFormat: .plain).idLayout?.count == 5)
        #expect(throws: StorageError.self) { _ = try Self.decode(plainBytes, idFormat: .checked) }
        // An entry's checksum covers its key, trailer and value: each changed byte of them fails it.
        // (The layout points into its block: the block stays alive while it is used.)
        let goodBlock = try Self.decode(good)
        withExtendedLifetime(goodBlock) { #expect(goodBlock.idLayout?.firstDamagedEntry() == nil) }
        for at in [0, 3, entries + 1, entries + 16] {
            var b = good
            b[at] ^= 0x01
            if let block = try? Self.decode(b) {
                withExtendedLifetime(block) { #expect(block.idLayout?.firstDamagedEntry() != nil, "byte \(at)") }
            }
        }
        // Every single-byte change decodes or fails typed; what decodes reads without a trap.
        for i in 0..<n {
            var b = good
            b[i] ^= 0x5A
            b.withUnsafeBytes { _FuzzTarget.block.run($0) }
        }
    }

    /// Format 5 point reads copy one entry out of the segment file: after a reopen, reading
    /// every object touches no data block through the block cache, and gives what the model says
    /// (present, removed, absent ids; a batched read too).
    @Test func pointReadsOfCheckedIdBlocksSkipTheBlockCache() throws {
        let fs = InMemoryFileSystem()
        let e = try Engine.open(directory: Self.dir, options: Self.options(fs, idBlocks: true))
        let model = try Self.fourRoundsOfPutsAndRemovals(e)
        e.close()
        // The bottom level's oldest versions have sequence 0: their blocks' entries leave the
        // trailer out (8 bytes an entry).
        #expect(try Self.entryShapes(fs).contains(.checkedSequenceZero))
        let reopened = try Engine.open(directory: Self.dir, options: Self.options(fs, idBlocks: true))
        defer { reopened.close() }
        try Self.expectPointReadsSkipTheBlockCache(reopened, model)
    }

    /// Four rounds of puts (values of 20 to 70 bytes) and removals of ids 1…300 of head 1 in
    /// "objects", each flushed, then a compaction; returns what the key space holds.
    static func fourRoundsOfPutsAndRemovals(_ e: Engine) throws -> [[UInt8]: [UInt8]] {
        let ks = try e.keySpace(named: "objects")
        var model: [[UInt8]: [UInt8]] = [:]
        for round in 0..<4 {
            var batch = WriteBatch()
            for id in UInt64(1)...300 where (id + UInt64(round)) % 7 != 0 {
                let v = Array("object \(id) round \(round) ".utf8) + [UInt8](repeating: UInt8(id & 0x7F), count: Int(id % 50))
                batch.put(idKey(1, id), v, in: ks)
                model[idKey(1, id)] = v
            }
            for id in stride(from: UInt64(5), through: 300, by: 11) {
                batch.delete(idKey(1, id), in: ks)
                model[idKey(1, id)] = nil
            }
            try e.write(batch)
            try e.flush()
        }
        _ = try e.compact()
        return model
    }

    /// Reads ids 0…310 of head 1 in "objects" one at a time and batched, each as `model` has
    /// it, and expects neither to touch the block cache: a point read of an id block of format 5
    /// or later copies the entry and its value out of the file.
    static func expectPointReadsSkipTheBlockCache(_ e: Engine, _ model: [[UInt8]: [UInt8]]) throws {
        let objects = try e.keySpace(named: "objects")
        let before = e.statistics().sinceOpen
        for id in UInt64(0)...310 {
            #expect(try e.get(idKey(1, id), in: objects) == model[idKey(1, id)], "id \(id)")
        }
        var keys = KeyList()
        for id in UInt64(0)...310 { keys.append(idKey(1, id)) }
        try e.visitValues(forKeys: keys, in: objects) { i, value in
            #expect(value.map(Array.init) == model[idKey(1, UInt64(i))], "batched id \(i)")
        }
        let after = e.statistics().sinceOpen
        #expect(after.blockCacheMisses == before.blockCacheMisses)
        #expect(after.blockCacheHits == before.blockCacheHits)
        #expect(after.bytesRead > before.bytesRead)
    }

    /// A changed byte in an id block entry or its value is caught by the entry's own checksum on
    /// the read that copies it, also when the block's checksum was made to match (so that only
    /// the entry's can tell), and `verify` names it.
    @Test(arguments: [false, true])
    func aDamagedEntryIsCorruptionOnItsRead(mapped: Bool) throws {
        // In memory (entries read through the file's reads) and on disk (copied out of the
        // segment's mapping).
        let temporary = TemporaryDirectory()
        let fs: any FileSystem = mapped ? PosixFileSystem() : InMemoryFileSystem()
        let dir = mapped ? temporary.path + "/db" : Self.dir
        func options() -> EngineOptions {
            var o = EngineOptions.testing(fs, memtableBytes: 16 << 10, blockBytes: 512, targetSegmentBytes: 16 << 10)
            o.keySpaces = ["objects"]
            o.idKeySpaces = ["objects"]
            return o
        }
        func contents(_ path: String) throws -> [UInt8] {
            let file = try fs.openReadable(path)
            defer { file.close() }
            var bytes = [UInt8](repeating: 0, count: Int(file.size))
            try bytes.withUnsafeMutableBytes { try file.readExactly(at: 0, into: $0, path: path) }
            return bytes
        }
        let e = try Engine.open(directory: dir, options: options())
        let ks = try e.keySpace(named: "objects")
        var batch = WriteBatch()
        for id in UInt64(1)...20 { batch.put(Self.idKey(3, id), Array("value-\(id)".utf8), in: ks) }
        try e.write(batch)
        try e.flush()
        e.close()
        let name = try #require(try fs.listDirectory(dir).first { $0.hasSuffix(".seg") })
        let path = dir + "/" + name
        let original = try contents(path)
        // Where id 7's value lies: the only occurrence of its bytes.
        let needle = Array("value-7".utf8)
        let at = try #require((0...(original.count - needle.count)).first { Array(original[$0..<($0 + needle.count)]) == needle })
        for fixBlockChecksum in [false, true] {
            var damaged = original
            damaged[at + 3] ^= 0x20
            if fixBlockChecksum { ChecksumFixup.fixSegment(&damaged) }
            try fs.removeFile(path)
            try DecoderProbe.write(damaged, to: path, in: fs)
            let reopened = try Engine.open(directory: dir, options: options())
            let objects = try reopened.keySpace(named: "objects")
            #expect(throws: StorageError.self) { _ = try reopened.get(Self.idKey(3, 7), in: objects) }
            // The other entries still read.
            #expect(try reopened.get(Self.idKey(3, 8), in: objects) == Array("value-8".utf8))
            reopened.close()
            let report = try Engine.verify(directory: dir, fileSystem: fs)
            #expect(!report.isClean)
        }
        try fs.removeFile(path)
        try DecoderProbe.write(original, to: path, in: fs)
    }
}
