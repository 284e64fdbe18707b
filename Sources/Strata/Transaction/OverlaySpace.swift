import StrataStorage
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One key space of a transaction's ``WriteOverlay``: an ordered map from byte keys to the
/// transaction's newest write of each key (a value or a removal), the way Pebble's indexed batch
/// keeps a skip list over its entries. A skip list orders the keys, for iteration merged with the
/// engine's; a hash table finds a key in one probe, for point reads, which are most of the reads
/// a put makes.
///
/// A key once written keeps its node: a later write or a savepoint rollback changes the node's
/// state (``State``) in place, so a rollback never unlinks anything, and undoing a write is
/// restoring the state it replaced (``Undo``).
///
/// Memory is managed by hand (a realloc'd node table, key and value arenas): a bulk put of a
/// million objects makes a million nodes here, and Swift arrays of structs cost uniqueness
/// and exclusivity checks on every access.
final class OverlaySpace {
    enum State: UInt8 {
        /// Not written by the transaction (a node left behind by a rolled-back write): reads
        /// fall through to the engine.
        case absent
        case value
        case removed
    }

    struct Node {
        var keyStart: Int
        var keyCount: Int32
        var height: Int32
        var valueStart: Int
        var valueCount: Int
        var hash: UInt64
        /// The key's first 24 bytes (zero-padded), big-endian: comparing these as integers orders
        /// most keys without touching the key arena (``KeyPrefix``).
        var prefix: KeyPrefix
        /// Index of this node's first `next` pointer in the link table.
        var linkBase: Int32
        var state: State
        /// Whether the key held a value in the engine when the transaction first wrote it (the
        /// caller says; the overlay never reads the engine). Object counts and change sets
        /// compare the final state with it.
        var committedPresent: Bool
    }

    /// A key's first 24 bytes as three big-endian integers, zero-padded: enough to tell apart
    /// object keys (12 bytes), edges (25: they differ in the first 24 unless two edges share
    /// their relation, first object and all but the last byte of the second) and most index
    /// entries. When two keys' prefixes differ, they order the keys: at the first differing byte
    /// either both keys have a byte there, or the shorter key ended and its padding zero is below
    /// the other's (nonzero) byte, the shorter being a prefix of the longer up to there. Equal
    /// prefixes need the bytes.
    struct KeyPrefix {
        var a: UInt64
        var b: UInt64
        var c: UInt64

        static let zero = KeyPrefix(a: 0, b: 0, c: 0)

        init(a: UInt64, b: UInt64, c: UInt64) {
            self.a = a
            self.b = b
            self.c = c
        }

        @inline(__always)
        init(_ key: UnsafeRawBufferPointer) {
            if key.count >= 24 {
                a = UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
                b = UInt64(bigEndian: key.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
                c = UInt64(bigEndian: key.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
            } else {
                var padded: (UInt64, UInt64, UInt64) = (0, 0, 0)
                withUnsafeMutableBytes(of: &padded) { $0.copyMemory(from: key) }
                a = UInt64(bigEndian: padded.0)
                b = UInt64(bigEndian: padded.1)
                c = UInt64(bigEndian: padded.2)
            }
        }

        /// Negative, zero (undecided) or positive.
        @inline(__always)
        func compare(_ other: KeyPrefix) -> Int {
            if a != other.a { return a < other.a ? -1 : 1 }
            if b != other.b { return b < other.b ? -1 : 1 }
            if c != other.c { return c < other.c ? -1 : 1 }
            return 0
        }
    }

    /// What one write replaced, to put it back.
    struct Undo {
        var node: Int32
        var state: State
        var valueStart: Int
        var valueCount: Int
    }

    /// What a point lookup found.
    enum Lookup {
        /// The transaction did not write the key: read the engine.
        case absent
        case removed
        case value(UnsafeRawBufferPointer)
    }

    static let maxHeight = 12
    /// Node 0 is the head: no key, `maxHeight` links.
    private static let head: Int32 = 0

    // An overlay belongs to one transaction, used by one thread at a time, and no method hands
    // out an inout reference to its state: the dynamic exclusivity checks (about a third of a
    // write's time) are skipped.
    @exclusivity(unchecked) private var nodes: UnsafeMutablePointer<Node>
    @exclusivity(unchecked) private var nodeCapacity: Int
    @exclusivity(unchecked) private(set) var nodeCount = 0
    @exclusivity(unchecked) private var links: UnsafeMutablePointer<Int32>
    @exclusivity(unchecked) private var linkCapacity: Int
    @exclusivity(unchecked) private var linkCount = 0
    @exclusivity(unchecked) private var keys: UnsafeMutableRawPointer
    @exclusivity(unchecked) private var keyCapacity: Int
    @exclusivity(unchecked) private var keyBytes = 0
    @exclusivity(unchecked) private var values: UnsafeMutableRawPointer
    @exclusivity(unchecked) private var valueCapacity: Int
    @exclusivity(unchecked) private var valueBytes = 0
    /// Open addressing, linear probing: node index + 1, 0 for empty.
    @exclusivity(unchecked) private var table: UnsafeMutablePointer<Int32>
    @exclusivity(unchecked) private var tableMask: Int
    @exclusivity(unchecked) private var height = 1
    @exclusivity(unchecked) private var rng: UInt64 = 0x9E37_79B9_7F4A_7C15
    /// The last node at each level: an insert past the largest key (ascending ids, a sequential
    /// load) links there without a search.
    @exclusivity(unchecked) private var tails: [Int32] = Array(repeating: 0, count: OverlaySpace.maxHeight)
    /// Nodes whose state is not `.absent`.
    @exclusivity(unchecked) private(set) var liveCount = 0

    init() {
        nodeCapacity = 64
        nodes = .allocate(capacity: nodeCapacity)
        linkCapacity = 256
        links = .allocate(capacity: linkCapacity)
        keyCapacity = 1024
        keys = .allocate(byteCount: keyCapacity, alignment: 8)
        valueCapacity = 4096
        values = .allocate(byteCount: valueCapacity, alignment: 8)
        tableMask = 127
        table = .allocate(capacity: tableMask + 1)
        table.initialize(repeating: 0, count: tableMask + 1)
        nodes.initialize(to: Node(keyStart: 0, keyCount: 0, height: Int32(Self.maxHeight), valueStart: 0, valueCount: 0, hash: 0,
                                  prefix: .zero, linkBase: 0, state: .absent, committedPresent: false))
        links.initialize(repeating: -1, count: Self.maxHeight)
        nodeCount = 1
        linkCount = Self.maxHeight
    }

    deinit {
        nodes.deallocate()
        links.deallocate()
        keys.deallocate()
        values.deallocate()
        table.deallocate()
    }

    var isEmpty: Bool { liveCount == 0 }

    /// At least the bytes a write batch takes for the live entries (every key and value ever
    /// written, plus each entry's kind and length fields).
    var encodedBytesBound: Int { keyBytes + valueBytes + (nodeCount - 1) * 21 }

    // MARK: node access

    @inline(__always)
    func key(of node: Int32) -> UnsafeRawBufferPointer {
        let n = nodes[Int(node)]
        return UnsafeRawBufferPointer(start: keys + n.keyStart, count: Int(n.keyCount))
    }

    @inline(__always)
    func state(of node: Int32) -> State { nodes[Int(node)].state }

    @inline(__always)
    func committedPresent(of node: Int32) -> Bool { nodes[Int(node)].committedPresent }

    /// The value of a node whose state is `.value`. Valid until the next write.
    @inline(__always)
    func value(of node: Int32) -> UnsafeRawBufferPointer {
        let n = nodes[Int(node)]
        return UnsafeRawBufferPointer(start: values + n.valueStart, count: n.valueCount)
    }

    /// Whether `node`'s key orders before `key`, whose prefix is `prefix`.
    @inline(__always)
    private func precedes(_ node: Int32, _ key: UnsafeRawBufferPointer, _ prefix: KeyPrefix) -> Bool {
        let c = nodes[Int(node)].prefix.compare(prefix)
        if c != 0 { return c < 0 }
        return compareBytes(self.key(of: node), key) < 0
    }

    @inline(__always)
    private func next(_ node: Int32, _ level: Int) -> Int32 {
        links[Int(nodes[Int(node)].linkBase) + level]
    }

    @inline(__always)
    private func setNext(_ node: Int32, _ level: Int, _ to: Int32) {
        links[Int(nodes[Int(node)].linkBase) + level] = to
    }

    // MARK: lookups

    /// The node of `key`, if the transaction ever wrote it.
    func find(_ key: UnsafeRawBufferPointer) -> Int32? {
        find(key, hash: BloomFilter.hash(key))
    }

    @inline(__always)
    private func find(_ key: UnsafeRawBufferPointer, hash: UInt64) -> Int32? {
        if nodeCount == 1 { return nil }
        var b = Int(truncatingIfNeeded: hash) & tableMask
        while true {
            let slot = table[b]
            if slot == 0 { return nil }
            let node = slot - 1
            let n = nodes[Int(node)]
            if n.hash == hash && Int(n.keyCount) == key.count
                && (key.count == 0 || memcmp(keys + n.keyStart, key.baseAddress!, key.count) == 0) {
                return node
            }
            b = (b + 1) & tableMask
        }
    }

    /// What the transaction wrote at `key`.
    func lookup(_ key: UnsafeRawBufferPointer) -> Lookup {
        guard let node = find(key) else { return .absent }
        switch state(of: node) {
        case .absent: return .absent
        case .removed: return .removed
        case .value: return .value(value(of: node))
        }
    }

    /// The first node (in key order, whatever its state) whose key is ≥ `key`; -1 when none.
    func seek(_ key: UnsafeRawBufferPointer) -> Int32 {
        let prefix = KeyPrefix(key)
        var x = Self.head
        var level = height - 1
        while true {
            let n = next(x, level)
            if n >= 0 && precedes(n, key, prefix) {
                x = n
            } else if level == 0 {
                return n
            } else {
                level -= 1
            }
        }
    }

    /// The first node in key order; -1 when none.
    func first() -> Int32 { next(Self.head, 0) }

    /// The node after `node` in key order; -1 at the end.
    func successor(_ node: Int32) -> Int32 { next(node, 0) }

    // MARK: writes

    /// Writes `value` (nil: a removal) at `key`; `committedPresent` is recorded if the key is
    /// new to the overlay. Returns the node and what the write replaced.
    @discardableResult
    func write(_ key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?, committedPresent: Bool) -> (node: Int32, undo: Undo) {
        let hash = BloomFilter.hash(key)
        let node = find(key, hash: hash) ?? insert(key, hash: hash, committedPresent: committedPresent)
        let old = nodes[Int(node)]
        let undo = Undo(node: node, state: old.state, valueStart: old.valueStart, valueCount: old.valueCount)
        var start = 0, count = 0
        if let value {
            start = appendValue(value)
            count = value.count
        }
        nodes[Int(node)].state = value == nil ? .removed : .value
        nodes[Int(node)].valueStart = start
        nodes[Int(node)].valueCount = count
        if old.state == .absent { liveCount += 1 }
        return (node, undo)
    }

    /// Puts back what a write replaced.
    func restore(_ undo: Undo) {
        let before = nodes[Int(undo.node)].state
        nodes[Int(undo.node)].state = undo.state
        nodes[Int(undo.node)].valueStart = undo.valueStart
        nodes[Int(undo.node)].valueCount = undo.valueCount
        if before != .absent && undo.state == .absent { liveCount -= 1 }
        if before == .absent && undo.state != .absent { liveCount += 1 }
    }

    private func appendValue(_ value: UnsafeRawBufferPointer) -> Int {
        let start = valueBytes
        Self.append(value, to: &values, capacity: &valueCapacity, used: &valueBytes)
        return start
    }

    /// Appends `bytes` to a hand-managed byte buffer, doubling it as needed.
    private static func append(_ bytes: UnsafeRawBufferPointer, to buffer: inout UnsafeMutableRawPointer, capacity: inout Int,
                               used: inout Int) {
        if used + bytes.count > capacity {
            var grown = capacity * 2
            while grown < used + bytes.count { grown *= 2 }
            let moved = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 8)
            moved.copyMemory(from: buffer, byteCount: used)
            buffer.deallocate()
            buffer = moved
            capacity = grown
        }
        if bytes.count > 0 { (buffer + used).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        used += bytes.count
    }

    private func randomHeight() -> Int {
        rng ^= rng << 13
        rng ^= rng >> 7
        rng ^= rng << 17
        var h = 1
        var r = rng
        while h < Self.maxHeight && r & 3 == 0 {
            h += 1
            r >>= 2
        }
        return h
    }

    private func insert(_ key: UnsafeRawBufferPointer, hash: UInt64, committedPresent: Bool) -> Int32 {
        // Storage for the node, its links and its key.
        if nodeCount == nodeCapacity {
            let grown = UnsafeMutablePointer<Node>.allocate(capacity: nodeCapacity * 2)
            grown.moveInitialize(from: nodes, count: nodeCount)
            nodes.deallocate()
            nodes = grown
            nodeCapacity *= 2
        }
        let h = randomHeight()
        if linkCount + h > linkCapacity {
            let grown = UnsafeMutablePointer<Int32>.allocate(capacity: linkCapacity * 2)
            grown.moveInitialize(from: links, count: linkCount)
            links.deallocate()
            links = grown
            linkCapacity *= 2
        }
        let keyStart = keyBytes
        Self.append(key, to: &keys, capacity: &keyCapacity, used: &keyBytes)
        let node = Int32(nodeCount)
        let prefix = KeyPrefix(key)
        (nodes + nodeCount).initialize(to: Node(keyStart: keyStart, keyCount: Int32(key.count), height: Int32(h), valueStart: 0,
                                                valueCount: 0, hash: hash, prefix: prefix, linkBase: Int32(linkCount), state: .absent,
                                                committedPresent: committedPresent))
        (links + linkCount).initialize(repeating: -1, count: h)
        nodeCount += 1
        linkCount += h

        // Link it: past the largest key without a search, elsewhere by descending the levels.
        if h > height { height = h }
        let last = tails[0]
        if last == Self.head || precedes(last, key, prefix) {
            for level in 0..<h {
                setNext(tails[level], level, node)
                tails[level] = node
            }
        } else {
            var x = Self.head
            var level = height - 1
            while level >= 0 {
                var n = next(x, level)
                while n >= 0 && precedes(n, key, prefix) {
                    x = n
                    n = next(x, level)
                }
                if level < h {
                    setNext(node, level, n)
                    setNext(x, level, node)
                    if n < 0 { tails[level] = node }
                }
                level -= 1
            }
        }

        // Hash it.
        if (nodeCount) * 4 > (tableMask + 1) * 3 { growTable() }
        var b = Int(truncatingIfNeeded: hash) & tableMask
        while table[b] != 0 { b = (b + 1) & tableMask }
        table[b] = node + 1
        return node
    }

    private func growTable() {
        let size = (tableMask + 1) * 2
        table.deallocate()
        table = .allocate(capacity: size)
        table.initialize(repeating: 0, count: size)
        tableMask = size - 1
        for i in 1..<nodeCount {
            var b = Int(truncatingIfNeeded: nodes[i].hash) & tableMask
            while table[b] != 0 { b = (b + 1) & tableMask }
            table[b] = Int32(i) + 1
        }
    }
}

/// Lexicographic order of two byte strings: negative, zero or positive.
@inline(__always)
func compareBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
    let n = min(a.count, b.count)
    if n > 0 {
        let c = memcmp(a.baseAddress!, b.baseAddress!, n)
        if c != 0 { return Int(c) }
    }
    return a.count - b.count
}
