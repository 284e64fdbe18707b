/// Iterates one level ≥ 1 of a key space: its segments are sorted and do not overlap, so they
/// are walked one after another, opening only the segment under the cursor. Keeps a merging
/// iterator down to one child per level (LevelDB's concatenating iterator).
final class LevelIterator: InternalIterator {
    private let segments: [LiveSegment]
    // Iterator and arena state belongs to one thread at a time: `@exclusivity(unchecked)` spares
    // the runtime checks on every step.
    @exclusivity(unchecked) private var index = 0
    @exclusivity(unchecked) private var current: SegmentIterator?
    @exclusivity(unchecked) private var failure: StorageError?

    init(_ segments: [LiveSegment]) { self.segments = segments }

    var isValid: Bool { current?.isValid ?? false }
    var key: UnsafeRawBufferPointer { current!.key }
    var value: UnsafeRawBufferPointer { current!.value }
    var error: StorageError? { failure ?? current?.error }

    private func open(_ i: Int) {
        if let e = current?.error { failure = failure ?? e }
        index = i
        current = nil
        guard i >= 0 && i < segments.count else { return }
        do {
            current = try segments[i].reader().makeIterator()
        } catch {
            // A segment that does not open (damaged, swapped, gone) ends the iteration with its error.
            failure = failure ?? error
        }
    }

    private func skipForward() {
        while let c = current, !c.isValid, c.error == nil, index + 1 < segments.count {
            open(index + 1)
            current?.seekToFirst()
        }
    }

    private func skipBackward() {
        while let c = current, !c.isValid, c.error == nil, index > 0 {
            open(index - 1)
            current?.seekToLast()
        }
    }

    func seekToFirst() {
        guard !segments.isEmpty else { return }
        open(0)
        current?.seekToFirst()
        skipForward()
    }

    func seekToLast() {
        guard !segments.isEmpty else { return }
        open(segments.count - 1)
        current?.seekToLast()
        skipBackward()
    }

    func seek(_ target: UnsafeRawBufferPointer) {
        // First segment whose largest key is >= target.
        var lo = 0, hi = segments.count
        while lo < hi {
            let mid = (lo + hi) / 2
            let below = segments[mid].meta.largest.withUnsafeBytes { InternalKey.compare($0, target) < 0 }
            if below { lo = mid + 1 } else { hi = mid }
        }
        guard lo < segments.count else {
            current = nil
            return
        }
        open(lo)
        current?.seek(target)
        skipForward()
    }

    func next() {
        guard let c = current, c.isValid else { return }
        c.next()
        skipForward()
    }

    func prev() {
        guard let c = current, c.isValid else { return }
        c.prev()
        skipBackward()
    }
}
