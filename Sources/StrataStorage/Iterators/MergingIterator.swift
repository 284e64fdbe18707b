/// Merges child iterators into one internal-key order. The children's current keys are cached
/// here, and a tournament tree over them (a loser tree: each inner node keeps the child that
/// lost the match played there) names the child that comes first in the direction of travel.
/// A step moves that one child and replays its path to the root: one key comparison per tree
/// level, about log2(n), where a linear pass compares n - 1 keys and a binary heap up to twice
/// log2(n). A scan right after random writes merges a dozen overlapping level-0 segments whose
/// keys interleave, and a compaction merges every input segment. Switching direction
/// repositions every child around the current key (LevelDB's MergingIterator).
final class MergingIterator: InternalIterator {
    /// Owns the children.
    private let owned: ContiguousArray<any InternalIterator>
    /// The same children by concrete type and unretained: every step calls into one, through
    /// an existential with a retain and release around each call (atomic operations, three
    /// pairs an entry) and a witness-table dispatch. `owned` keeps them alive.
    private let children: UnsafeMutablePointer<Child>
    private let count: Int

    /// A child, unretained, by its concrete type, so that a call is direct.
    private enum Child {
        case memtable(Unmanaged<MemtableIterator>)
        case segment(Unmanaged<SegmentIterator>)
        case level(Unmanaged<LevelIterator>)
        case other(Unmanaged<AnyObject>)

        init(_ iterator: any InternalIterator) {
            switch iterator {
            case let m as MemtableIterator: self = .memtable(.passUnretained(m))
            case let s as SegmentIterator: self = .segment(.passUnretained(s))
            case let l as LevelIterator: self = .level(.passUnretained(l))
            default: self = .other(.passUnretained(iterator))
            }
        }

        /// Moves the child one entry forward or backward.
        @inline(__always) func step(forward: Bool) {
            switch self {
            case let .memtable(u): u._withUnsafeGuaranteedRef { forward ? $0.next() : $0.prev() }
            case let .segment(u): u._withUnsafeGuaranteedRef { forward ? $0.next() : $0.prev() }
            case let .level(u): u._withUnsafeGuaranteedRef { forward ? $0.next() : $0.prev() }
            case .other:
                let e = existential
                if forward { e.next() } else { e.prev() }
            }
        }

        /// The key when valid, else an empty buffer.
        @inline(__always) var keyIfValid: UnsafeRawBufferPointer {
            switch self {
            case let .memtable(u): return u._withUnsafeGuaranteedRef { $0.isValid ? $0.key : UnsafeRawBufferPointer(start: nil, count: 0) }
            case let .segment(u): return u._withUnsafeGuaranteedRef { $0.isValid ? $0.key : UnsafeRawBufferPointer(start: nil, count: 0) }
            case let .level(u): return u._withUnsafeGuaranteedRef { $0.isValid ? $0.key : UnsafeRawBufferPointer(start: nil, count: 0) }
            case .other:
                let e = existential
                return e.isValid ? e.key : UnsafeRawBufferPointer(start: nil, count: 0)
            }
        }

        @inline(__always) var value: UnsafeRawBufferPointer {
            switch self {
            case let .memtable(u): u._withUnsafeGuaranteedRef { $0.value }
            case let .segment(u): u._withUnsafeGuaranteedRef { $0.value }
            case let .level(u): u._withUnsafeGuaranteedRef { $0.value }
            case .other: existential.value
            }
        }

        /// The child as an existential, retained: for the rare calls (errors, other types).
        var existential: any InternalIterator {
            switch self {
            case let .memtable(u): u.takeUnretainedValue()
            case let .segment(u): u.takeUnretainedValue()
            case let .level(u): u.takeUnretainedValue()
            case let .other(u): u.takeUnretainedValue() as! any InternalIterator
            }
        }
    }
    /// Current key of each child; empty when that child is not valid (an internal key is never
    /// empty). Raw memory: the comparisons read it on every step, without bounds checks or
    /// reference counting.
    private let keys: UnsafeMutablePointer<UnsafeRawBufferPointer>
    /// The loser tree in heap layout: leaf `i` (child `i`) sits at node `count + i`, node `j`'s
    /// children are `2j` and `2j + 1`, and `losers[j]` (1 ≤ j < count) is the child that lost at
    /// node `j`. Reused by every rebuild.
    private let losers: UnsafeMutablePointer<Int>
    /// Winner of each subtree, only while building.
    private let winners: UnsafeMutablePointer<Int>
    // Iterator state belongs to one thread at a time: `@exclusivity(unchecked)` spares the
    // runtime checks on every step.
    /// The overall winner: the child whose key comes first (it may be invalid: then all are).
    @exclusivity(unchecked) private var winner = 0
    @exclusivity(unchecked) private var current: Int = -1
    @exclusivity(unchecked) private var forward = true

    init(_ children: [any InternalIterator]) {
        owned = ContiguousArray(children)
        count = children.count
        self.children = .allocate(capacity: max(1, count))
        for (i, c) in children.enumerated() { (self.children + i).initialize(to: Child(c)) }
        keys = .allocate(capacity: max(1, count))
        keys.initialize(repeating: UnsafeRawBufferPointer(start: nil, count: 0), count: max(1, count))
        losers = .allocate(capacity: max(1, count))
        losers.initialize(repeating: 0, count: max(1, count))
        winners = .allocate(capacity: max(2, 2 * count))
        winners.initialize(repeating: 0, count: max(2, 2 * count))
    }

    deinit {
        children.deinitialize(count: count)
        children.deallocate()
        keys.deallocate()
        losers.deallocate()
        winners.deallocate()
    }

    var isValid: Bool { current >= 0 }
    var key: UnsafeRawBufferPointer { keys[current] }
    var value: UnsafeRawBufferPointer { children[current].value }
    /// The first error of any child. Once set the merge stops: going on without the failed
    /// child would silently skip its entries.
    @exclusivity(unchecked) private(set) var error: StorageError?

    @inline(__always) private func refresh(_ i: Int) {
        let k = children[i].keyIfValid
        keys[i] = k
        // A child only reports an error when it stops, so this check runs rarely.
        if k.count == 0, error == nil, let e = owned[i].error { error = e }
    }

    /// Whether child `a` comes before child `b` in the direction of travel. An invalid child
    /// comes after every valid one; ties (equal keys, which no two sources should hold, or two
    /// invalid children) go to the lower index.
    @inline(__always) private func before(_ a: Int, _ b: Int) -> Bool {
        let ka = keys[a], kb = keys[b]
        if ka.count == 0 || kb.count == 0 { return kb.count == 0 && (ka.count != 0 || a < b) }
        let c = InternalKey.compare(ka, kb)
        return (forward ? c < 0 : c > 0) || (c == 0 && a < b)
    }

    /// Refreshes every child's key and plays the whole tournament for the current direction.
    private func rebuild() {
        for i in 0..<count { refresh(i) }
        guard count > 1 else {
            winner = 0
            settle()
            return
        }
        for i in 0..<count { winners[count + i] = i }
        var node = count - 1
        while node >= 1 {
            let a = winners[2 * node], b = winners[2 * node + 1]
            if before(a, b) {
                winners[node] = a
                losers[node] = b
            } else {
                winners[node] = b
                losers[node] = a
            }
            node -= 1
        }
        winner = winners[1]
        settle()
    }

    /// After the winning child moved: its new key plays the matches on its path to the root.
    @inline(__always) private func winnerMoved() {
        let moved = winner
        refresh(moved)
        var w = moved
        var node = (count + moved) >> 1
        while node >= 1 {
            let l = losers[node]
            if before(l, w) {
                losers[node] = w
                w = l
            }
            node >>= 1
        }
        winner = w
        settle()
    }

    /// Points `current` at the winner; -1 when no child is valid or one failed.
    @inline(__always) private func settle() {
        current = (error == nil && count > 0 && keys[winner].count > 0) ? winner : -1
    }

    func seekToFirst() {
        for c in owned { c.seekToFirst() }
        forward = true
        rebuild()
    }

    func seekToLast() {
        for c in owned { c.seekToLast() }
        forward = false
        rebuild()
    }

    func seek(_ target: UnsafeRawBufferPointer) {
        for c in owned { c.seek(target) }
        forward = true
        rebuild()
    }

    func next() {
        guard current >= 0 else { return }
        if !forward {
            // Put every other child just after the current key.
            let k = Array(key)
            k.withUnsafeBytes { kb in
                for (i, c) in owned.enumerated() where i != current {
                    c.seek(kb)
                    if c.isValid, InternalKey.compare(kb, c.key) == 0 { c.next() }
                }
            }
            forward = true
            // The current child steps too; then every child is past the key, in the new order.
            children[current].step(forward: true)
            rebuild()
            return
        }
        children[current].step(forward: true)
        winnerMoved()
    }

    func prev() {
        guard current >= 0 else { return }
        if forward {
            // Put every other child just before the current key.
            let k = Array(key)
            k.withUnsafeBytes { kb in
                for (i, c) in owned.enumerated() where i != current {
                    c.seek(kb)
                    if c.isValid { c.prev() } else { c.seekToLast() }
                }
            }
            forward = false
            // The current child steps too; then every child is before the key, in the new order.
            children[current].step(forward: false)
            rebuild()
            return
        }
        children[current].step(forward: false)
        winnerMoved()
    }
}
