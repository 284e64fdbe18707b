import CStrataSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The sorted in-memory table of one key space: a skip list in an ``Arena``, ordered by internal
/// key (SPEC.md §Key encoding). One writer at a time (the engine's commit leader) inserts; any
/// number of readers read at the same time without locks, because a node is fully written before
/// a release store links it in, and readers follow links with acquire loads (LevelDB's protocol).
///
/// Node layout (8-byte aligned): internal key length u32 | value length u32 | height u8, padding
/// to 16 | `height` next pointers | internal key (user key + 8-byte trailer) | value bytes.
package final class Memtable: @unchecked Sendable {
    // @unchecked Sendable: one writer at a time (the commit leader, or the replay) inserts; readers
    // follow links loaded with acquire ordering and never see a node before it is complete.
    static let maxHeight = 12
    static let nodeHeaderBytes = 16

    let keySpaceId: UInt32
    private let arena = Arena()
    private let head: UnsafeMutableRawPointer
    private let currentHeight = Atomic<Int>(1)
    // Writer-only state; `@exclusivity(unchecked)` because only the single writer touches it and
    // the runtime checks cost measurably on every insert.
    @exclusivity(unchecked) private var rng: UInt64 = 0x2545_F491_4F6C_DD1D
    /// Entries inserted; written by the writer only.
    @exclusivity(unchecked) package private(set) var entryCount = 0
    @exclusivity(unchecked) private(set) var maxSequence: UInt64 = 0
    /// The node inserted last, and its predecessors at every level (itself below its height):
    /// an insert that lands right after it (ascending keys: object ids, WAL replay, sequential
    /// loads) takes these as its predecessors without searching.
    @exclusivity(unchecked) private var lastInserted: UnsafeMutableRawPointer?
    private let hints: UnsafeMutablePointer<UnsafeMutableRawPointer>

    /// A blocked bloom filter over the user keys (one 64-bit word per key, 6 bits in it), so
    /// that a point read of a key this memtable does not hold usually skips the skip list.
    /// The writer sets the bits before it links the node and publishes the sequence number, so
    /// a reader that can see an entry also sees its bits.
    private let bloomWords: UnsafeMutablePointer<UInt64>
    private let bloomMask: UInt64

    /// - Parameter expectedBytes: the memtable size limit, to size the filter (about 1 bit per
    ///   16 bytes of data).
    package init(keySpaceId: UInt32, expectedBytes: Int = 4 << 20) {
        self.keySpaceId = keySpaceId
        var words = 1024
        while words < expectedBytes / 1024 && words < 1 << 20 { words <<= 1 }
        bloomWords = .allocate(capacity: words)
        bloomWords.initialize(repeating: 0, count: words)
        bloomMask = UInt64(words - 1)
        head = arena.allocate(Self.nodeHeaderBytes + Self.maxHeight * 8)
        head.storeBytes(of: UInt32(InternalKey.trailerBytes), as: UInt32.self)
        head.storeBytes(of: 0, toByteOffset: 4, as: UInt32.self)
        head.storeBytes(of: UInt8(Self.maxHeight), toByteOffset: 8, as: UInt8.self)
        for i in 0..<Self.maxHeight { Self.nextSlot(head, i).pointee = nil }
        hints = .allocate(capacity: Self.maxHeight)
        hints.initialize(repeating: head, count: Self.maxHeight)
    }

    deinit {
        // The readers' edges (`ReadView.readerDone`, `MemtableIterator`'s deinit) meet here,
        // before the arena's chunks go back to the pool for another memtable.
        SanitizerEdges.acquire(self)
        bloomWords.deallocate()
        hints.deallocate()
    }

    @inline(__always) private static func bloomBits(_ hash: UInt64) -> UInt64 {
        var bits: UInt64 = 0
        var h = hash >> 20
        for _ in 0..<6 {
            bits |= 1 << (h & 63)
            h >>= 6
        }
        return bits
    }

    /// Whether the memtable may hold a key with this hash (``BloomFilter/hash(_:)``).
    @inline(__always) func mayContain(hash: UInt64) -> Bool {
        let bits = Self.bloomBits(hash)
        return strata_load_relaxed_u64(bloomWords + Int(hash & bloomMask)) & bits == bits
    }

    var approximateBytes: Int { arena.usage.load(ordering: .relaxed) }
    var isEmpty: Bool { entryCount == 0 }

    // MARK: Node access

    @inline(__always) static func nextSlot(_ node: UnsafeMutableRawPointer, _ level: Int) -> UnsafeMutablePointer<UnsafeMutableRawPointer?> {
        (node + nodeHeaderBytes + level * 8).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    }

    @inline(__always) package static func next(_ node: UnsafeMutableRawPointer, _ level: Int) -> UnsafeMutableRawPointer? {
        strata_load_acquire_ptr(nextSlot(node, level))
    }

    @inline(__always) static func height(_ node: UnsafeMutableRawPointer) -> Int {
        Int(node.load(fromByteOffset: 8, as: UInt8.self))
    }

    /// The node's internal key: user key followed by the trailer.
    @inline(__always) static func internalKey(_ node: UnsafeMutableRawPointer) -> UnsafeRawBufferPointer {
        let keyLen = Int(node.load(as: UInt32.self))
        return UnsafeRawBufferPointer(start: node + nodeHeaderBytes + height(node) * 8, count: keyLen)
    }

    @inline(__always) package static func trailer(_ node: UnsafeMutableRawPointer) -> UInt64 {
        InternalKey.trailer(internalKey(node))
    }

    @inline(__always) package static func userKey(_ node: UnsafeMutableRawPointer) -> UnsafeRawBufferPointer {
        let ik = internalKey(node)
        return UnsafeRawBufferPointer(start: ik.baseAddress, count: ik.count - InternalKey.trailerBytes)
    }

    @inline(__always) static func value(_ node: UnsafeMutableRawPointer) -> UnsafeRawBufferPointer {
        let keyLen = Int(node.load(as: UInt32.self))
        let valueLen = Int(node.load(fromByteOffset: 4, as: UInt32.self))
        return UnsafeRawBufferPointer(start: node + nodeHeaderBytes + height(node) * 8 + keyLen, count: valueLen)
    }

    /// Compares a node with (userKey, trailer) in internal-key order.
    @inline(__always) package static func compare(_ node: UnsafeMutableRawPointer, _ key: UnsafeRawBufferPointer, _ trailer: UInt64) -> Int {
        let r = InternalKey.compareUserKeys(userKey(node), key)
        if r != 0 { return r }
        let t = Self.trailer(node)
        return t > trailer ? -1 : (t < trailer ? 1 : 0)
    }

    // MARK: Writing (single writer)

    private func randomHeight() -> Int {
        var h = 1
        while h < Self.maxHeight {
            rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17
            if rng & 3 != 0 { break }
            h += 1
        }
        return h
    }

    /// Inserts an entry. REQUIRES: the caller is the only writer.
    func insert(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, sequence: UInt64, kind: EntryKind) {
        link(makeNode(key: key, value: value, sequence: sequence, kind: kind))
    }

    /// Writes an entry's node into the arena, with a random height and its next pointers nil,
    /// and sets its filter bits, without linking it: ``link(_:)`` or ``linkInOrder(_:)`` makes it
    /// visible. REQUIRES: the caller is the only writer.
    func makeNode(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, sequence: UInt64,
                  kind: EntryKind) -> UnsafeMutableRawPointer {
        let hash = BloomFilter.hash(key)
        let trailer = InternalKey.trailer(sequence: sequence, kind: kind)
        let h = randomHeight()
        let ikLen = key.count + InternalKey.trailerBytes
        let node = arena.allocate(Self.nodeHeaderBytes + h * 8 + ikLen + value.count)
        node.storeBytes(of: UInt32(ikLen), as: UInt32.self)
        node.storeBytes(of: UInt32(value.count), toByteOffset: 4, as: UInt32.self)
        node.storeBytes(of: UInt8(h), toByteOffset: 8, as: UInt8.self)
        for i in 0..<h { Self.nextSlot(node, i).pointee = nil }
        let data = node + Self.nodeHeaderBytes + h * 8
        if key.count > 0 { data.copyMemory(from: key.baseAddress!, byteCount: key.count) }
        (data + key.count).storeBytes(of: trailer.littleEndian, as: UInt64.self)
        if value.count > 0 { (data + ikLen).copyMemory(from: value.baseAddress!, byteCount: value.count) }
        strata_or_single_writer_u64(bloomWords + Int(hash & bloomMask), Self.bloomBits(hash))
        entryCount += 1
        maxSequence = max(maxSequence, sequence)
        return node
    }

    /// Links a node ``makeNode(key:value:sequence:kind:)`` wrote into the list, after a search
    /// for its place. REQUIRES: the caller is the only writer.
    func link(_ node: UnsafeMutableRawPointer) {
        let key = Self.userKey(node)
        let trailer = Self.trailer(node)
        var prev = (UnsafeMutableRawPointer?.none, UnsafeMutableRawPointer?.none, UnsafeMutableRawPointer?.none,
                    UnsafeMutableRawPointer?.none, UnsafeMutableRawPointer?.none, UnsafeMutableRawPointer?.none,
                    UnsafeMutableRawPointer?.none, UnsafeMutableRawPointer?.none, UnsafeMutableRawPointer?.none,
                    UnsafeMutableRawPointer?.none, UnsafeMutableRawPointer?.none, UnsafeMutableRawPointer?.none)
        withUnsafeMutableBytes(of: &prev) { prevRaw in
            let prevs = prevRaw.bindMemory(to: UnsafeMutableRawPointer?.self)
            if let last = lastInserted, Self.compare(last, key, trailer) < 0 {
                // A finger search from the last insert (a batch arrives in key order per key
                // space, so its keys come in increasing order, each a few nodes past the one
                // before). `hints[i]` is the last node of level i at or before `last`, so before
                // this key. From the lowest level whose next node after its hint is not before
                // the key, upward, the hints are the nodes before the key: nothing lies between
                // at that level, hence at any level above. Below it, walk right from there
                // (a few nodes per level: none of them is tall enough to reach the level above).
                let top = currentHeight.load(ordering: .relaxed)
                var level = 0
                while level < top, let n = Self.next(hints[level], level), Self.compare(n, key, trailer) < 0 { level += 1 }
                for i in level..<Self.maxHeight { prevs[i] = hints[i] }
                var x = level < top ? hints[level] : head
                var l = level - 1
                while l >= 0 {
                    while let n = Self.next(x, l), Self.compare(n, key, trailer) < 0 { x = n }
                    prevs[l] = x
                    l -= 1
                }
            } else {
                _ = descend(to: key, trailer) { level, node in prevs[level] = node }
            }
            let h = Self.height(node)
            let cur = currentHeight.load(ordering: .relaxed)
            if h > cur {
                for i in cur..<h { prevs[i] = head }
                // Readers that see the new height before the links find nil at the new levels
                // from head and simply drop down: safe with a relaxed store.
                currentHeight.store(h, ordering: .relaxed)
            }
            for i in 0..<h {
                let p = prevs[i]!
                strata_store_relaxed_ptr(Self.nextSlot(node, i), strata_load_relaxed_ptr(Self.nextSlot(p, i)))
                strata_store_release_ptr(Self.nextSlot(p, i), node)
            }
            for i in 0..<Self.maxHeight { hints[i] = i < h ? node : (prevs[i] ?? head) }
            lastInserted = node
        }
    }

    /// Links nodes ``makeNode(key:value:sequence:kind:)`` wrote, given in internal-key order
    /// (``MemtableLoader`` sorts them), into an empty list: each goes at the end of every level
    /// it reaches, without a search or a comparison. Into a list that is not empty they are
    /// linked one by one (``link(_:)``). REQUIRES: the caller is the only writer.
    func linkInOrder(_ nodes: UnsafeBufferPointer<UnsafeMutableRawPointer>) {
        guard Self.next(head, 0) == nil else {
            for node in nodes { link(node) }
            return
        }
        guard let lastNode = nodes.last else { return }
        var tallest = currentHeight.load(ordering: .relaxed)
        // `hints[i]` is the last node linked at level i so far (head at first): exactly the
        // finger `link` keeps once the last node is the list's last.
        for node in nodes {
            let h = Self.height(node)
            tallest = max(tallest, h)
            for i in 0..<h {
                strata_store_release_ptr(Self.nextSlot(hints[i], i), node)
                hints[i] = node
            }
        }
        currentHeight.store(tallest, ordering: .relaxed)
        lastInserted = lastNode
    }

    // MARK: Reading (any thread)

    /// First node at or after (key, trailer), or nil.
    func seek(_ key: UnsafeRawBufferPointer, trailer: UInt64) -> UnsafeMutableRawPointer? {
        var x = head
        var level = currentHeight.load(ordering: .relaxed) - 1
        while true {
            let n = Self.next(x, level)
            if let n, Self.compare(n, key, trailer) < 0 {
                x = n
            } else {
                if level == 0 { return n }
                level -= 1
            }
        }
    }

    /// Last node before (key, trailer), or nil.
    func seekBefore(_ key: UnsafeRawBufferPointer, trailer: UInt64) -> UnsafeMutableRawPointer? {
        let x = descend(to: key, trailer) { _, _ in }
        return x == head ? nil : x
    }

    /// Walks down from the top level to the last node before (key, trailer) (head when none),
    /// telling `atLevel` the last node before it on each level.
    @inline(__always)
    private func descend(to key: UnsafeRawBufferPointer, _ trailer: UInt64,
                         _ atLevel: (Int, UnsafeMutableRawPointer) -> Void) -> UnsafeMutableRawPointer {
        var x = head
        var level = currentHeight.load(ordering: .relaxed) - 1
        while true {
            if let n = Self.next(x, level), Self.compare(n, key, trailer) < 0 {
                x = n
            } else {
                atLevel(level, x)
                if level == 0 { return x }
                level -= 1
            }
        }
    }

    package func first() -> UnsafeMutableRawPointer? { Self.next(head, 0) }

    func last() -> UnsafeMutableRawPointer? {
        var x = head
        var level = currentHeight.load(ordering: .relaxed) - 1
        while true {
            if let n = Self.next(x, level) {
                x = n
            } else {
                if level == 0 { return x == head ? nil : x }
                level -= 1
            }
        }
    }

    /// The newest version of `key` visible at `sequence`: `.found(value)`, `.deleted`, or nil when
    /// this memtable has no visible version.
    func get(_ key: UnsafeRawBufferPointer, hash: UInt64, sequence: UInt64) -> LookupResult? {
        guard mayContain(hash: hash), let n = seek(key, trailer: InternalKey.seekTrailer(sequence: sequence)),
              Self.userKey(n).bytesEqual(key) else { return nil }
        let t = Self.trailer(n)
        return (t & 0xFF) == UInt64(EntryKind.value.rawValue) ? .found(Self.value(n)) : .deleted
    }
}

/// Outcome of a point lookup in one layer of the tree. `found` points into memory that the
/// layer keeps alive while the caller holds it.
enum LookupResult {
    case found(UnsafeRawBufferPointer)
    case deleted
}
