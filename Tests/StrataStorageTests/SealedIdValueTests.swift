import Foundation
import Testing
import Synchronization
@testable import StrataStorage
import StrataTesting
import StrataProbes

/// An encrypted segment of format 6 seals each value of its id blocks alone (SPEC.md §14.3):
/// a point read copies and opens one object, not its block, and still refuses any changed,
/// moved or swapped byte; segments of format 5 (id blocks sealed whole) keep reading.
@Suite struct SealedIdValueTests {
    static let dir = "/db"
    static let key = [UInt8](repeating: 0x5A, count: 32)

    static func options(_ fs: any FileSystem, format: UInt32 = FormatConstants.segmentFormatVersion, blockBytes: Int = 512) -> EngineOptions {
        var o = EngineOptions.testing(fs, memtableBytes: 16 << 10, blockBytes: blockBytes, targetSegmentBytes: 16 << 10)
        o.keySpaces = ["objects"]
        o.idKeySpaces = ["objects"]
        o.encryptionKey = key
        o.segmentFormatVersion = format
        return o
    }

    static func contents(_ path: String, _ fs: any FileSystem) throws -> [UInt8] {
        let file = try fs.openReadable(path)
        defer { file.close() }
        var bytes = [UInt8](repeating: 0, count: Int(file.size))
        try bytes.withUnsafeMutableBytes { try file.readExactly(at: 0, into: $0, path: path) }
        return bytes
    }

    /// Overwrites the file at `path` with `bytes`.
    static func replace(_ path: String, with bytes: [UInt8], in fs: any FileSystem) throws {
        try fs.removeFile(path)
        try DecoderProbe.write(bytes, to: path, in: fs)
    }

    /// An id block of sealed values as stored: a copy of its contents (freed with it), their
    /// file offset, and the layout decoded over the copy.
    final class StoredIdBlock {
        let payload: Int
        let layout: IdBlockLayout
        private let bytes: UnsafeMutableRawBufferPointer

        init?(file: [UInt8], payload: Int, size: Int) {
            guard size > 0 else { return nil }
            let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
            file.withUnsafeBytes { bytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[payload..<(payload + size)])) }
            guard case let .success(layout) = IdBlockLayout.decode(UnsafeRawBufferPointer(bytes), checked: true, sealedValues: true) else {
                bytes.deallocate()
                return nil
            }
            self.payload = payload
            self.layout = layout
            self.bytes = bytes
        }

        deinit { bytes.deallocate() }
    }

    /// The id blocks of sealed values of the segment at `path`, whose bytes are `file`.
    static func storedIdBlocks(_ path: String, _ file: [UInt8], _ fs: any FileSystem) throws -> [StoredIdBlock] {
        let reader = try SegmentReader.open(fileSystem: fs, path: path, fileNumber: 1, cache: BlockCache(capacityBytes: 1 << 20),
                                            stats: StatisticsCounters(), cipher: try StoreCipher(key: key))
        var out: [StoredIdBlock] = []
        for i in 0..<(try reader.indexEntryCount()) {
            let h = try reader.blockHandle(atIndexEntry: i)
            guard file[Int(h.offset) + Int(h.size) + FileSealer.overhead] == SegmentReader.sealedValuesBlockType,
                  let block = StoredIdBlock(file: file, payload: Int(h.offset) + FileSealer.nonceBytes, size: Int(h.size)) else { continue }
            out.append(block)
        }
        return out
    }

    /// Reads `model`'s ids 0…310 of head 1 one at a time and batched (`snapshot` given:
    /// through it), each as `model` has it.
    static func expectReads(_ e: Engine, _ model: [[UInt8]: [UInt8]], snapshot: Snapshot? = nil) throws {
        let objects = try e.keySpace(named: "objects")
        for id in UInt64(0)...310 {
            #expect(try e.get(IdBlockTests.idKey(1, id), in: objects, snapshot: snapshot) == model[IdBlockTests.idKey(1, id)], "id \(id)")
        }
        var keys = KeyList()
        for id in UInt64(0)...310 { keys.append(IdBlockTests.idKey(1, id)) }
        try e.visitValues(forKeys: keys, in: objects, snapshot: snapshot) { i, value in
            #expect(value.map(Array.init) == model[IdBlockTests.idKey(1, UInt64(i))], "batched id \(i)")
        }
    }

    /// A point read opens the one object it copies out of the file, without the block cache,
    /// until its block has been read ``IdBlockReads/threshold`` times; the block is then opened
    /// whole and kept (taking from the engine's budget of opened blocks), and later reads of any
    /// of its objects read them there. Neither uses the block cache.
    @Test(arguments: [false, true])
    func pointReadsOpenOneObjectUntilItsBlockIsReadOften(mapped: Bool) throws {
        let temporary = TemporaryDirectory()
        let fs: any FileSystem = mapped ? PosixFileSystem() : InMemoryFileSystem()
        let dir = mapped ? temporary.path + "/db" : Self.dir
        let e = try Engine.open(directory: dir, options: Self.options(fs))
        let model = try IdBlockTests.fourRoundsOfPutsAndRemovals(e)
        e.close()
        // Every segment's id blocks are blocks of sealed values.
        var sealedBlocks = 0
        for name in try fs.listDirectory(dir) where name.hasSuffix(".seg") {
            let path = dir + "/" + name
            let file = try Self.contents(path, fs)
            sealedBlocks += try Self.storedIdBlocks(path, file, fs).count
        }
        #expect(sealedBlocks > 4)
        let reopened = try Engine.open(directory: dir, options: Self.options(fs))
        let objects = try reopened.keySpace(named: "objects")
        let key = IdBlockTests.idKey(1, 3)
        // Reads below the threshold: one value opened each, nothing kept.
        for _ in 1..<Int(IdBlockReads.threshold) { #expect(try reopened.get(key, in: objects) == model[key]) }
        #expect(reopened.cache.opened.usedBytes == 0)
        // The read that reaches it opens the block whole and keeps it.
        #expect(try reopened.get(key, in: objects) == model[key])
        let kept = reopened.cache.opened.usedBytes
        #expect(kept > 0)
        // The statistics show it: one block, its bytes.
        #expect(reopened.statistics().openedIdBlocks == 1)
        #expect(reopened.statistics().openedIdBlockBytes == kept)
        // Every object, through blocks opened or not, one at a time and batched, again and
        // again: answers unchanged, more blocks opened, the block cache never used.
        for _ in 0..<Int(IdBlockReads.threshold) { try IdBlockTests.expectPointReadsSkipTheBlockCache(reopened, model) }
        #expect(reopened.cache.opened.usedBytes > kept)
        // A scan reads the blocks whole, opening every value.
        #expect(try reopened.scan(objects).count == model.count)
        reopened.close()
        #expect(try Engine.verify(directory: dir, fileSystem: fs, encryptionKey: Self.key).isClean)
    }

    /// The budget of opened blocks spent, blocks read often keep their single reads, and every
    /// answer stays; the budget comes back when the segments holding opened blocks go.
    @Test func aSpentBudgetLeavesReadsSingleAndCompactionGivesItBack() throws {
        let fs = InMemoryFileSystem()
        let e = try Engine.open(directory: Self.dir, options: Self.options(fs))
        let model = try IdBlockTests.fourRoundsOfPutsAndRemovals(e)
        e.close()
        var small = Self.options(fs)
        // A budget of half the cache: room for about three 512-byte blocks.
        small.blockCacheBytes = 5_000
        let reopened = try Engine.open(directory: Self.dir, options: small)
        defer { reopened.close() }
        for _ in 0..<(Int(IdBlockReads.threshold) + 2) { try Self.expectReads(reopened, model) }
        let budget = reopened.cache.opened
        #expect(budget.usedBytes > 0 && budget.usedBytes <= budget.limit)
        // New segments: the old ones' opened blocks go with them.
        let objects = try reopened.keySpace(named: "objects")
        var batch = WriteBatch()
        batch.put(IdBlockTests.idKey(1, 1), Array("rewritten".utf8), in: objects)
        try reopened.write(batch)
        try reopened.flush()
        _ = try reopened.compact()
        var updated = model
        updated[IdBlockTests.idKey(1, 1)] = Array("rewritten".utf8)
        try Self.expectReads(reopened, updated)
        #expect(budget.usedBytes == 0)
        #expect(reopened.statistics().openedIdBlocks == 0)
    }

    /// Threads reading the same blocks at once: each block is opened and kept once whatever
    /// the races (the budget charged once per block kept), and every answer is the model's.
    /// Run under ThreadSanitizer by `scripts/reliability.sh --only=tsan`.
    @Test func concurrentReadsKeepEachOpenedBlockOnce() throws {
        let fs = InMemoryFileSystem()
        let e = try Engine.open(directory: Self.dir, options: Self.options(fs))
        let model = try IdBlockTests.fourRoundsOfPutsAndRemovals(e)
        e.close()
        let reopened = try Engine.open(directory: Self.dir, options: Self.options(fs))
        defer { reopened.close() }
        let objects = try reopened.keySpace(named: "objects")
        let wrong = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for round in 0..<(2 * Int(IdBlockReads.threshold)) {
                for k in 0...310 {
                    let id = UInt64((k * 7 + thread * 13 + round) % 311)
                    let key = IdBlockTests.idKey(1, id)
                    if (try? reopened.get(key, in: objects)) != model[key] { wrong.add(1, ordering: .relaxed) }
                }
            }
        }
        #expect(wrong.load(ordering: .relaxed) == 0)
        // Every id block of the live segments read that often was kept once: the budget holds
        // exactly their charges.
        var charges = 0, kept = 0
        for segment in reopened.manifestLock.withLock({ reopened.versions.current }).allSegments {
            let reader = try segment.reader()
            guard let table = try reader.indexBlock()._withUnsafeGuaranteedRef({ reader.indexSummary.idBlocks(of: $0) }),
                  table.takeUnretainedValue().reads != nil else { continue }
            for i in 0..<(try reader.indexEntryCount()) where IdBlockReads.opened(table.takeUnretainedValue().entryAddress(i)) != nil {
                kept += 1
                charges += try reader.dataBlock(try reader.blockHandle(atIndexEntry: i), fillCache: false).charge
            }
        }
        #expect(kept > 0)
        #expect(reopened.cache.opened.usedBytes == charges)
        #expect(reopened.statistics().openedIdBlocks == kept)
        #expect(reopened.statistics().openedIdBlockBytes == charges)
        try Self.expectReads(reopened, model)
    }

    /// A block opened whole that holds a version newer than a snapshot's read leaves that read
    /// to the block path, which finds the older version: a snapshot reads what it read before,
    /// however often its blocks are read.
    @Test func aSnapshotReadsItsVersionsThroughOpenedBlocks() throws {
        let fs = InMemoryFileSystem()
        let e = try Engine.open(directory: Self.dir, options: Self.options(fs))
        defer { e.close() }
        let ks = try e.keySpace(named: "objects")
        func write(_ round: Int) throws -> [[UInt8]: [UInt8]] {
            var batch = WriteBatch()
            var model: [[UInt8]: [UInt8]] = [:]
            for id in UInt64(1)...300 {
                let v = Array("object \(id) version \(round) ".utf8) + [UInt8](repeating: UInt8(id & 0x7F), count: Int(id % 40))
                batch.put(IdBlockTests.idKey(1, id), v, in: ks)
                model[IdBlockTests.idKey(1, id)] = v
            }
            try e.write(batch)
            try e.flush()
            return model
        }
        // Two segments: the newer one's blocks, opened by the latest reads, hold versions
        // newer than the snapshot's reads, which find theirs in the older segment.
        let old = try write(1)
        let snapshot = try e.snapshot()
        let new = try write(2)
        for _ in 0..<4 {
            try Self.expectReads(e, new)
            try Self.expectReads(e, old, snapshot: snapshot)
        }
        #expect(e.cache.opened.usedBytes > 0)
    }

    /// A changed byte of a sealed value whose entry checksum was made to match (so only the tag
    /// can tell), and two values of one length swapped with their checksums fixed (each then
    /// opens under the other's nonce): every such read is corruption, the others still read, and
    /// `verify` names the block. A changed byte of an entry's checksum alone changes no point
    /// read's answer (the value's tag stands for the checksum there, and it still opens the
    /// right value), while the block read whole fails its tag and `verify` reports it.
    @Test(arguments: [false, true])
    func aChangedOrSwappedValueFailsItsTagOnItsRead(mapped: Bool) throws {
        let temporary = TemporaryDirectory()
        let fs: any FileSystem = mapped ? PosixFileSystem() : InMemoryFileSystem()
        let dir = mapped ? temporary.path + "/db" : Self.dir
        // One block of 20 entries.
        func options() -> EngineOptions { Self.options(fs, blockBytes: 4096) }
        let e = try Engine.open(directory: dir, options: options())
        let ks = try e.keySpace(named: "objects")
        var batch = WriteBatch()
        for id in UInt64(1)...20 { batch.put(IdBlockTests.idKey(3, id), Array("value-\(id % 10)".utf8), in: ks) }
        try e.write(batch)
        try e.flush()
        e.close()
        let name = try #require(try fs.listDirectory(dir).first { $0.hasSuffix(".seg") })
        let path = dir + "/" + name
        let original = try Self.contents(path, fs)
        #expect(!EncryptionTests.contains(original, Array("value-7".utf8)))
        let block = try #require(try Self.storedIdBlocks(path, original, fs).first)
        // `layout` reads the block's copy: kept alive to the end.
        defer { withExtendedLifetime(block) {} }
        let payload = block.payload, layout = block.layout
        #expect(layout.firstId == 1 && layout.count == 20)

        /// Writes entry `i`'s checksum for the stored bytes in `file`.
        func fixChecksum(_ file: inout [UInt8], entry i: Int) {
            let v = layout.storedValue(i)
            let user = IdBlockTests.idKey(3, layout.id(i))
            let crc = user.withUnsafeBytes { u in
                file.withUnsafeBytes {
                    IdBlockLayout.entryChecksum(userKey: u, trailer: layout.trailer(i),
                                                value: UnsafeRawBufferPointer(rebasing: $0[(payload + v.offset)..<(payload + v.offset + v.count)]))
                }
            }
            let at = payload + layout.entriesOffset + i * layout.entryStride + 4
            withUnsafeBytes(of: crc.littleEndian) { for k in 0..<4 { file[at + k] = $0[k] } }
        }
        var changed = original
        changed[payload + layout.storedValue(6).offset + 2] ^= 0x01
        fixChecksum(&changed, entry: 6)
        var swapped = original
        let a = layout.storedValue(6), b = layout.storedValue(16)
        #expect(a.count == b.count)
        for k in 0..<a.count { swapped.swapAt(payload + a.offset + k, payload + b.offset + k) }
        fixChecksum(&swapped, entry: 6)
        fixChecksum(&swapped, entry: 16)
        var checksumOnly = original
        checksumOnly[payload + layout.entriesOffset + 6 * layout.entryStride + 4] ^= 0x01

        for (damaged, broken) in [(changed, [UInt64(7)]), (swapped, [UInt64(7), 17]), (checksumOnly, [])] {
            try Self.replace(path, with: damaged, in: fs)
            let reopened = try Engine.open(directory: dir, options: options())
            let objects = try reopened.keySpace(named: "objects")
            // Three rounds: 60 reads of the block, past the point where it is read whole
            // (``IdBlockReads/threshold``), where it fails its block tag and is refused: its
            // reads stay single ones and answer as before.
            for _ in 0..<3 {
                for id in UInt64(1)...20 {
                    if broken.contains(id) {
                        #expect(throws: StorageError.self) { _ = try reopened.get(IdBlockTests.idKey(3, id), in: objects) }
                    } else {
                        #expect(try reopened.get(IdBlockTests.idKey(3, id), in: objects) == Array("value-\(id % 10)".utf8))
                    }
                }
            }
            #expect(reopened.cache.opened.usedBytes == 0, "a damaged block is never kept")
            // Read whole, the block fails its own tag.
            #expect(throws: StorageError.self) { _ = try reopened.scan(objects) }
            reopened.close()
            let report = try Engine.verify(directory: dir, fileSystem: fs, encryptionKey: Self.key)
            #expect(!report.isClean)
        }
        try Self.replace(path, with: original, in: fs)
        let healthy = try Engine.open(directory: dir, options: options())
        #expect(try healthy.scan(try healthy.keySpace(named: "objects")).count == 20)
        // The healthy block, read as often, is kept.
        for _ in 0..<3 {
            for id in UInt64(1)...20 {
                #expect(try healthy.get(IdBlockTests.idKey(3, id), in: try healthy.keySpace(named: "objects")) == Array("value-\(id % 10)".utf8))
            }
        }
        #expect(healthy.cache.opened.usedBytes > 0)
        healthy.close()
    }

    /// A store encrypted with format 5 (id blocks sealed whole, no spans) reads on, and a
    /// compaction rewrites it in format 6.
    @Test func anEncryptedStoreOfFormat5ReadsOnAndIsRewrittenInFormat6() throws {
        let fs = InMemoryFileSystem()
        let e = try Engine.open(directory: Self.dir, options: Self.options(fs, format: 5))
        let model = try IdBlockTests.fourRoundsOfPutsAndRemovals(e)
        e.close()
        func formats() throws -> Set<UInt32> {
            var out: Set<UInt32> = []
            for name in try fs.listDirectory(Self.dir) where name.hasSuffix(".seg") {
                let file = try Self.contents(Self.dir + "/" + name, fs)
                out.insert(file.withUnsafeBytes { loadFixed32($0, file.count - 64 + 48) })
            }
            return out
        }
        let written = try formats()
        let reopened = try Engine.open(directory: Self.dir, options: Self.options(fs))
        defer { reopened.close() }
        let objects = try reopened.keySpace(named: "objects")
        func check() throws {
            for id in UInt64(0)...310 {
                #expect(try reopened.get(IdBlockTests.idKey(1, id), in: objects) == model[IdBlockTests.idKey(1, id)], "id \(id)")
            }
            #expect(try reopened.scan(objects).count == model.count)
        }
        try check()
        _ = try reopened.compact()
        try check()
        #expect(try formats() == [FormatConstants.segmentFormatVersion])
        #expect(written == [5], "the old store's segments: \(written)")
    }
}
