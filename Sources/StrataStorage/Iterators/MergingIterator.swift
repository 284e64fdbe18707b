/// Merges child iterators into one internal-key order. Children are few (memtables, level-0
/// segments, one per deeper level), so the smallest/largest is found by a linear pass over the
/// children's current keys, cached here so that a step calls into the one child that moved
/// only. Switching direction repositions every child around the current key (LevelDB's
/// MergingIterator).
final class MergingIterator: InternalIterator {
    private let children: ContiguousArray<any InternalIterator>
    /// Current key of each child; empty when that child is not valid (an internal key is never
    /// empty).
    // Iterator and arena state belongs to one thread at a time: `@exclusivity(unchecked)` spares
    // the runtime checks on every step.
    @exclusivity(unchecked) private var keys: ContiguousArray<UnsafeRawBufferPointer>
    @exclusivity(unchecked) private var current: Int = -1
    @exclusivity(unchecked) private var forward = true

    init(_ children: [any InternalIterator]) {
        self.children = ContiguousArray(children)
        keys = ContiguousArray(repeating: UnsafeRawBufferPointer(start: nil, count: 0), count: children.count)
    }

    var isValid: Bool { current >= 0 }
    var key: UnsafeRawBufferPointer { keys[current] }
    var value: UnsafeRawBufferPointer { children[current].value }
    /// The first error of any child. Once set the merge stops: going on without the failed
    /// child would silently skip its entries.
    @exclusivity(unchecked) private(set) var error: StorageError?

    @inline(__always) private func refresh(_ i: Int) {
        let c = children[i]
        if c.isValid {
            keys[i] = c.key
        } else {
            keys[i] = UnsafeRawBufferPointer(start: nil, count: 0)
            // A child only reports an error when it stops, so this check runs rarely.
            if error == nil, let e = c.error { error = e }
        }
    }

    private func refreshAll() {
        for i in children.indices { refresh(i) }
    }

    private func findSmallest() { current = findExtreme(sign: 1) }
    private func findLargest() { current = findExtreme(sign: -1) }

    /// The valid child whose key is smallest (`sign` 1) or largest (`sign` -1); -1 when none is
    /// valid or a child failed.
    @inline(__always) private func findExtreme(sign: Int) -> Int {
        if error != nil { return -1 }
        var best = -1
        keys.withUnsafeBufferPointer { ks in
            for i in 0..<ks.count where ks[i].count > 0 {
                if best < 0 || InternalKey.compare(ks[i], ks[best]) * sign < 0 { best = i }
            }
        }
        return best
    }

    func seekToFirst() {
        for c in children { c.seekToFirst() }
        refreshAll()
        forward = true
        findSmallest()
    }

    func seekToLast() {
        for c in children { c.seekToLast() }
        refreshAll()
        forward = false
        findLargest()
    }

    func seek(_ target: UnsafeRawBufferPointer) {
        for c in children { c.seek(target) }
        refreshAll()
        forward = true
        findSmallest()
    }

    func next() {
        guard current >= 0 else { return }
        if !forward {
            // Put every other child just after the current key.
            let k = Array(key)
            k.withUnsafeBytes { kb in
                for (i, c) in children.enumerated() where i != current {
                    c.seek(kb)
                    if c.isValid, InternalKey.compare(kb, c.key) == 0 { c.next() }
                }
            }
            refreshAll()
            forward = true
        }
        children[current].next()
        refresh(current)
        findSmallest()
    }

    func prev() {
        guard current >= 0 else { return }
        if forward {
            // Put every other child just before the current key.
            let k = Array(key)
            k.withUnsafeBytes { kb in
                for (i, c) in children.enumerated() where i != current {
                    c.seek(kb)
                    if c.isValid { c.prev() } else { c.seekToLast() }
                }
            }
            refreshAll()
            forward = false
        }
        children[current].prev()
        refresh(current)
        findLargest()
    }
}
