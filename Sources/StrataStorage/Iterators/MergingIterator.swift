/// Merges child iterators into one internal-key order. Children are few (memtables, level-0
/// segments, one per deeper level), so the smallest/largest is found by a linear pass. Switching
/// direction repositions every child around the current key (LevelDB's MergingIterator).
final class MergingIterator: InternalIterator {
    private let children: [any InternalIterator]
    private var current: Int = -1
    private var forward = true

    init(_ children: [any InternalIterator]) { self.children = children }

    var isValid: Bool { current >= 0 && children[current].isValid }
    var key: UnsafeRawBufferPointer { children[current].key }
    var value: UnsafeRawBufferPointer { children[current].value }
    var error: StorageError? {
        for c in children { if let e = c.error { return e } }
        return nil
    }

    private func findSmallest() {
        current = -1
        for (i, c) in children.enumerated() where c.isValid {
            if current < 0 || InternalKey.compare(c.key, children[current].key) < 0 { current = i }
        }
    }

    private func findLargest() {
        current = -1
        for (i, c) in children.enumerated() where c.isValid {
            if current < 0 || InternalKey.compare(c.key, children[current].key) > 0 { current = i }
        }
    }

    func seekToFirst() {
        for c in children { c.seekToFirst() }
        forward = true
        findSmallest()
    }

    func seekToLast() {
        for c in children { c.seekToLast() }
        forward = false
        findLargest()
    }

    func seek(_ target: UnsafeRawBufferPointer) {
        for c in children { c.seek(target) }
        forward = true
        findSmallest()
    }

    func next() {
        guard isValid else { return }
        if !forward {
            // Put every other child just after the current key.
            let k = Array(key)
            k.withUnsafeBytes { kb in
                for (i, c) in children.enumerated() where i != current {
                    c.seek(kb)
                    if c.isValid, InternalKey.compare(kb, c.key) == 0 { c.next() }
                }
            }
            forward = true
        }
        children[current].next()
        findSmallest()
    }

    func prev() {
        guard isValid else { return }
        if forward {
            // Put every other child just before the current key.
            let k = Array(key)
            k.withUnsafeBytes { kb in
                for (i, c) in children.enumerated() where i != current {
                    c.seek(kb)
                    if c.isValid { c.prev() } else { c.seekToLast() }
                }
            }
            forward = false
        }
        children[current].prev()
        findLargest()
    }
}
