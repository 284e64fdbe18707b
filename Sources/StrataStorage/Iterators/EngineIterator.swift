/// Iterates the user keys of one key space in order, forward or backward, as of one sequence
/// number: for each key it shows the newest version visible at that sequence and hides deleted
/// keys. Moves throw when they meet damaged data.
///
/// ```swift
/// let it = try engine.makeIterator(in: ks, lowerBound: Array("a".utf8), upperBound: Array("m".utf8))
/// try it.seekToLast()
/// while it.isValid { print(String(decoding: it.key, as: UTF8.self)); try it.previous() }
/// ```
/// Not thread-safe: use one iterator from one thread at a time.
public final class EngineIterator {
    private enum Direction { case forward, reverse }

    private let iter: MergingIterator
    private let sequence: UInt64
    private let lowerBound: [UInt8]?
    private let upperBound: [UInt8]?
    private let pinned: ReadView
    // Iterator and arena state belongs to one thread at a time: `@exclusivity(unchecked)` spares
    // the runtime checks on every step.
    @exclusivity(unchecked) private var direction = Direction.forward
    @exclusivity(unchecked) private var valid = false
    /// Forward: the key being skipped. Reverse: the current entry's key.
    private let savedKey = OwnedBytes()
    private let savedValue = OwnedBytes(capacity: 256)
    @exclusivity(unchecked) private var seekBuffer: [UInt8] = []

    init(merged: MergingIterator, sequence: UInt64, lowerBound: [UInt8]?, upperBound: [UInt8]?, pinned: ReadView) {
        iter = merged
        self.sequence = sequence
        self.lowerBound = lowerBound
        self.upperBound = upperBound
        self.pinned = pinned
    }

    /// Whether the iterator is at an entry.
    public var isValid: Bool { valid }

    /// The current key. Valid until the iterator moves. Raw bytes, not `[UInt8]`: every scan and query step reads
    /// it, and a copy per entry was measured.
    public var key: UnsafeRawBufferPointer {
        precondition(valid, "EngineIterator.key read while not valid")
        if direction == .forward { return InternalKey.userKey(iter.key) }
        return savedKey.bytes
    }

    /// The current value. Valid until the iterator moves.
    public var value: UnsafeRawBufferPointer {
        precondition(valid, "EngineIterator.value read while not valid")
        if direction == .forward { return iter.value }
        return savedValue.bytes
    }

    private func check() throws {
        if let e = iter.error {
            valid = false
            throw e
        }
    }

    @inline(__always) private func beyondUpper(_ userKey: UnsafeRawBufferPointer) -> Bool {
        guard let upperBound else { return false }
        return upperBound.withUnsafeBytes { InternalKey.compareUserKeys(userKey, $0) >= 0 }
    }

    @inline(__always) private func belowLower(_ userKey: UnsafeRawBufferPointer) -> Bool {
        guard let lowerBound else { return false }
        return lowerBound.withUnsafeBytes { InternalKey.compareUserKeys(userKey, $0) < 0 }
    }

    private func seekInternal(_ userKey: [UInt8], sequence: UInt64) {
        seekBuffer.removeAll()
        seekBuffer.append(contentsOf: userKey)
        withUnsafeBytes(of: InternalKey.seekTrailer(sequence: sequence).littleEndian) { seekBuffer.append(contentsOf: $0) }
        seekBuffer.withUnsafeBytes { iter.seek($0) }
    }

    /// Moves to the first key (at or after the lower bound).
    public func seekToFirst() throws {
        direction = .forward
        savedValue.removeAll()
        if let lowerBound { seekInternal(lowerBound, sequence: sequence) } else { iter.seekToFirst() }
        findNextUserEntry(skipping: false)
        try check()
    }

    /// Moves to the last key (before the upper bound).
    public func seekToLast() throws {
        direction = .reverse
        savedValue.removeAll()
        if let upperBound {
            seekInternal(upperBound, sequence: StorageLimits.maxSequence)
            if iter.isValid { iter.prev() } else { iter.seekToLast() }
        } else {
            iter.seekToLast()
        }
        findPrevUserEntry()
        try check()
    }

    /// Moves to the first key at or after `target` (clamped to the bounds).
    public func seek(_ target: [UInt8]) throws {
        direction = .forward
        savedValue.removeAll()
        var t = target
        if let lowerBound, belowLowerArray(t, lowerBound) { t = lowerBound }
        seekInternal(t, sequence: sequence)
        findNextUserEntry(skipping: false)
        try check()
    }

    private func belowLowerArray(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { x in b.withUnsafeBytes { y in InternalKey.compareUserKeys(x, y) < 0 } }
    }

    /// Moves to the next key.
    public func next() throws {
        guard valid else { return }
        if direction == .reverse {
            direction = .forward
            // iter is just before the entries of the current key (savedKey): step into them.
            if iter.isValid { iter.next() } else { iter.seekToFirst() }
            guard iter.isValid else {
                valid = false
                savedKey.removeAll()
                try check()
                return
            }
        } else {
            savedKey.set(InternalKey.userKey(iter.key))
            iter.next()
            guard iter.isValid else {
                valid = false
                savedKey.removeAll()
                try check()
                return
            }
        }
        findNextUserEntry(skipping: true)
        try check()
    }

    /// Moves to the previous key.
    public func previous() throws {
        guard valid else { return }
        if direction == .forward {
            // Step back over every entry of the current key.
            savedKey.set(InternalKey.userKey(iter.key))
            while true {
                iter.prev()
                guard iter.isValid else {
                    valid = false
                    savedKey.removeAll()
                    savedValue.removeAll()
                    try check()
                    return
                }
                let less = InternalKey.compareUserKeys(InternalKey.userKey(iter.key), savedKey.bytes) < 0
                if less { break }
            }
            direction = .reverse
        }
        findPrevUserEntry()
        try check()
    }

    /// Forward: from the current internal entry, the first visible, live user entry.
    /// When `skipping`, entries with user key <= savedKey are hidden (older versions).
    private func findNextUserEntry(skipping initialSkipping: Bool) {
        var skipping = initialSkipping
        while iter.isValid {
            let ik = iter.key
            let trailer = InternalKey.trailer(ik)
            if trailer >> 8 <= sequence {
                let userKey = InternalKey.userKey(ik)
                if trailer & 0xFF == UInt64(EntryKind.deletion.rawValue) {
                    savedKey.set(userKey)
                    skipping = true
                } else if skipping && InternalKey.compareUserKeys(userKey, savedKey.bytes) <= 0 {
                    // An older version of a key already returned or deleted.
                } else {
                    if beyondUpper(userKey) { break }
                    valid = true
                    savedKey.removeAll()
                    return
                }
            }
            iter.next()
        }
        valid = false
        savedKey.removeAll()
    }

    /// Reverse: collects the newest visible version of the user key before the current
    /// position into savedKey/savedValue.
    private func findPrevUserEntry() {
        var kind = EntryKind.deletion
        while iter.isValid {
            let ik = iter.key
            let trailer = InternalKey.trailer(ik)
            let userKey = InternalKey.userKey(ik)
            if trailer >> 8 <= sequence {
                let differs = InternalKey.compareUserKeys(userKey, savedKey.bytes) < 0
                if kind != .deletion && differs { break }
                if belowLower(userKey) { break }
                kind = trailer & 0xFF == UInt64(EntryKind.deletion.rawValue) ? .deletion : .value
                if kind == .deletion {
                    savedKey.removeAll()
                    savedValue.removeAll()
                } else {
                    savedKey.set(userKey)
                    savedValue.set(iter.value)
                }
            }
            iter.prev()
        }
        if kind == .deletion {
            valid = false
            savedKey.removeAll()
            savedValue.removeAll()
            direction = .forward
        } else {
            valid = true
        }
    }

    /// Keeps the pinned view alive for as long as the iterator lives.
    deinit { withExtendedLifetime(pinned) {} }
}
