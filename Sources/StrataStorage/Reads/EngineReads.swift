extension Engine {
    /// The value stored under `key` in `keySpace`, or nil. Reads the latest committed state, or
    /// the state pinned by `snapshot`.
    ///
    /// ```swift
    /// if let v = try engine.get(Array("alice".utf8), in: users) { print(v.count) }
    /// ```
    public func get(_ key: [UInt8], in keySpace: KeySpace, snapshot: Snapshot? = nil) throws -> [UInt8]? {
        try key.withUnsafeBytes { k in try withValue(forKey: k, in: keySpace, snapshot: snapshot) { Array($0) } }
    }

    /// Calls `body` with the stored value's bytes, without copying them, and returns its result;
    /// nil when the key is absent. The bytes are valid only inside `body`. Raw bytes, not `[UInt8]`: the point read
    /// of every object get, where a copy per call was measured (``get(_:in:snapshot:)`` copies).
    public func withValue<R>(forKey key: UnsafeRawBufferPointer, in keySpace: KeySpace, snapshot: Snapshot? = nil,
                             _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        // The lookup itself is not generic: an unspecialised generic caller would otherwise ask
        // the runtime for `Optional<R>` and `Result<R, Error>` metadata on every read.
        try withUnsafeTemporaryAllocation(byteCount: Self.pointReadValueBytes, alignment: 8) { valueBuffer in
            let found = try locate(key, in: keySpace, snapshot: snapshot, valueBuffer: valueBuffer)
            guard let owner = found.owner else { return nil }
            defer { SanitizerEdges.release(owner) }
            return try withExtendedLifetime(owner) { try body(found.bytes) }
        }
    }

    /// Calls `body` with the stored value's bytes, without copying them; returns false (and does
    /// not call `body`) when the key is absent. Not generic, so that generic callers pay no
    /// runtime type lookups per read. The bytes are valid only inside `body`.
    public func visitValue(forKey key: UnsafeRawBufferPointer, in keySpace: KeySpace, snapshot: Snapshot? = nil,
                           _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        try withUnsafeTemporaryAllocation(byteCount: Self.pointReadValueBytes, alignment: 8) { valueBuffer in
            let found = try locate(key, in: keySpace, snapshot: snapshot, valueBuffer: valueBuffer)
            guard let owner = found.owner else { return false }
            // A value in a memtable was read through the view that owns it: see `ReadView.readerDone`.
            defer { SanitizerEdges.release(owner) }
            try withExtendedLifetime(owner) { try body(found.bytes) }
            return true
        }
    }

    /// Bytes of the buffer a point read copies an id block entry's value into (on the stack:
    /// larger temporary allocations go to the heap). A larger value is read through its block.
    static let pointReadValueBytes = 1024

    /// Where a read found its value: `bytes` stay valid while `owner` (a memtable view or a
    /// cached block) is alive, or lie in the caller's value buffer (owner: the view). No owner:
    /// the key is absent or deleted.
    struct ValueLocation {
        var owner: AnyObject?
        var bytes: UnsafeRawBufferPointer
        static var absent: ValueLocation { ValueLocation(owner: nil, bytes: UnsafeRawBufferPointer(start: nil, count: 0)) }
    }

    func locate(_ key: UnsafeRawBufferPointer, in keySpace: KeySpace, snapshot: Snapshot?,
                valueBuffer: UnsafeMutableRawBufferPointer) throws -> ValueLocation {
        try checkOpen()
        guard key.count <= StorageLimits.maxKeyBytes else {
            throw StorageError.keyTooLarge(size: key.count, limit: StorageLimits.maxKeyBytes)
        }
        let (view, sequence) = readState(snapshot)
        defer { view.readerDone() }
        guard let mem = view.memtable(keySpace.id) else { throw StorageError.unknownKeySpace(keySpace.name) }
        let hash = BloomFilter.hash(key)
        if let r = mem.get(key, hash: hash, sequence: sequence) {
            if case let .found(v) = r { return ValueLocation(owner: view, bytes: v) }
            return .absent
        }
        if let imm = view.immutable(keySpace.id), let r = imm.get(key, hash: hash, sequence: sequence) {
            if case let .found(v) = r { return ValueLocation(owner: view, bytes: v) }
            return .absent
        }
        let lookupBytes = key.count + InternalKey.trailerBytes
        // Keys are short; the stack buffer covers all but the longest ones.
        let stackCapacity = 256
        if lookupBytes <= stackCapacity {
            return try withUnsafeTemporaryAllocation(byteCount: stackCapacity, alignment: 8) { buf -> ValueLocation in
                try locateInSegments(key, lookupBuffer: buf, valueBuffer: valueBuffer, keySpaceId: keySpace.id, view: view,
                                     sequence: sequence, hash: hash)
            }
        }
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: lookupBytes, alignment: 8)
        defer { buf.deallocate() }
        return try locateInSegments(key, lookupBuffer: buf, valueBuffer: valueBuffer, keySpaceId: keySpace.id, view: view,
                                    sequence: sequence, hash: hash)
    }

    /// The segments' part of a point read. A segment of format 5 first tries to copy the key's
    /// id block entry into `valueBuffer` (``SegmentReader/readIdEntry(lookupKey:into:)``); the
    /// value then lies there, owned by `view`.
    func locateInSegments(_ key: UnsafeRawBufferPointer, lookupBuffer buf: UnsafeMutableRawBufferPointer,
                          valueBuffer: UnsafeMutableRawBufferPointer, keySpaceId: UInt32, view: ReadView, sequence: UInt64,
                          hash: UInt64) throws -> ValueLocation {
        if key.count > 0 { buf.baseAddress!.copyMemory(from: key.baseAddress!, byteCount: key.count) }
        buf.storeBytes(of: InternalKey.seekTrailer(sequence: sequence).littleEndian, toByteOffset: key.count, as: UInt64.self)
        let lookup = UnsafeRawBufferPointer(start: buf.baseAddress, count: key.count + InternalKey.trailerBytes)
        var outcome: SegmentLookup?
        var copied = -1
        try view.version.candidates(for: key, in: keySpaceId) { segment in
            let reader = try segment.reader()
            if reader.idFormat == .checked {
                switch try reader.readIdEntry(lookupKey: lookup, into: valueBuffer) {
                case let .found(count):
                    copied = count
                    return true
                case .deleted:
                    outcome = .deleted
                    return true
                case .absent:
                    return false
                case .undecided:
                    break
                }
            }
            outcome = try reader.get(lookupKey: lookup, hash: hash)
            return outcome != nil
        }
        if copied >= 0 { return ValueLocation(owner: view, bytes: UnsafeRawBufferPointer(rebasing: valueBuffer[0..<copied])) }
        guard case let .found(block, offset, count)? = outcome else { return .absent }
        return ValueLocation(owner: block, bytes: UnsafeRawBufferPointer(rebasing: block.contents[offset..<(offset + count)]))
    }

    /// Whether `key` exists in `keySpace`.
    public func contains(_ key: [UInt8], in keySpace: KeySpace, snapshot: Snapshot? = nil) throws -> Bool {
        try key.withUnsafeBytes { try withValue(forKey: $0, in: keySpace, snapshot: snapshot) { _ in true } } ?? false
    }

    /// An iterator over `keySpace`, limited to `lowerBound ..< upperBound` when given, reading
    /// the latest committed state or `snapshot`. The iterator pins what it reads: later writes,
    /// flushes and compactions do not change what it returns.
    ///
    /// ```swift
    /// let it = try engine.makeIterator(in: users, prefix: Array("a".utf8))
    /// try it.seekToFirst()
    /// while it.isValid { print(it.key, it.value); try it.next() }
    /// ```
    public func makeIterator(in keySpace: KeySpace, lowerBound: [UInt8]? = nil, upperBound: [UInt8]? = nil,
                             snapshot: Snapshot? = nil) throws -> EngineIterator {
        try makeIterator(in: keySpace, lowerBound: lowerBound, upperBound: upperBound, snapshot: snapshot, prefixFilter: nil)
    }

    /// An iterator over the keys of `keySpace` made of `prefix` and `suffixBytes` more bytes.
    /// In a key space listed in ``EngineOptions/prefixFilters`` with that `suffixBytes`, it
    /// skips the segments whose bloom filter rules the prefix out (a lookup by an index value,
    /// the edges of one object); elsewhere it is ``makeIterator(in:prefix:snapshot:)``. It
    /// covers the keys starting with `prefix`, but only those of `prefix.count + suffixBytes`
    /// bytes are sure to be there: keys of other lengths may be skipped with their segment.
    ///
    /// ```swift
    /// let it = try engine.makeIterator(in: edges, prefix: sourcePrefix, suffixBytes: 8)
    /// try it.seekToFirst()
    /// ```
    public func makeIterator(in keySpace: KeySpace, prefix: [UInt8], suffixBytes: Int, snapshot: Snapshot? = nil) throws -> EngineIterator {
        let hash = prefix.withUnsafeBytes { BloomFilter.hash($0) }
        return try makeIterator(in: keySpace, lowerBound: prefix, upperBound: Self.prefixSuccessor(prefix), snapshot: snapshot,
                                prefixFilter: (hash, suffixBytes))
    }

    private func makeIterator(in keySpace: KeySpace, lowerBound: [UInt8]?, upperBound: [UInt8]?, snapshot: Snapshot?,
                              prefixFilter: (hash: UInt64, suffixBytes: Int)?) throws -> EngineIterator {
        try checkOpen()
        let (view, sequence) = readState(snapshot)
        let children = try sources(in: keySpace, view: view, lowerBound: lowerBound, upperBound: upperBound, prefixFilter: prefixFilter)
        return EngineIterator(merged: MergingIterator(children), sequence: sequence, lowerBound: lowerBound,
                              upperBound: upperBound, pinned: view)
    }

    /// The iterators over everything of `keySpace` in `view` that may hold keys of
    /// `lowerBound ..< upperBound`: the memtables, then the segments level by level, skipping
    /// those whose range or prefix filter rules the keys out.
    func sources(in keySpace: KeySpace, view: ReadView, lowerBound: [UInt8]?, upperBound: [UInt8]?,
                 prefixFilter: (hash: UInt64, suffixBytes: Int)?) throws -> [any InternalIterator] {
        guard let mem = view.memtable(keySpace.id) else { throw StorageError.unknownKeySpace(keySpace.name) }
        var children: [any InternalIterator] = [MemtableIterator(mem)]
        if let imm = view.immutable(keySpace.id) { children.append(MemtableIterator(imm)) }
        if let levels = view.version.keySpaces[keySpace.id]?.levels {
            // Only segments that can hold a key of the range: a prefix scan (an index entry, a
            // relation's edges) then seeks in one segment per level, not in every one.
            func mayHold(_ segment: LiveSegment) throws -> Bool {
                try prefixFilter.map { try segment.reader().mayContain(prefixHash: $0.hash, suffixBytes: $0.suffixBytes) } ?? true
            }
            for segment in levels[0] where try segment.overlaps(lowerBound: lowerBound, upperBound: upperBound) && mayHold(segment) {
                children.append(try segment.reader().makeIterator())
            }
            for level in levels.dropFirst() where !level.isEmpty {
                let range = LiveSegment.overlapping(level, lowerBound: lowerBound, upperBound: upperBound)
                switch range.count {
                case 0: break
                case 1: if try mayHold(level[range.lowerBound]) { children.append(try level[range.lowerBound].reader().makeIterator()) }
                default:
                    // A level's segments are sorted and disjoint: so is any subset of them.
                    let kept = try level[range].filter(mayHold)
                    switch kept.count {
                    case 0: break
                    case 1: children.append(try kept[0].reader().makeIterator())
                    default: children.append(LevelIterator(kept))
                    }
                }
            }
        }
        return children
    }

    /// An iterator over the keys of `keySpace` that start with `prefix`.
    public func makeIterator(in keySpace: KeySpace, prefix: [UInt8], snapshot: Snapshot? = nil) throws -> EngineIterator {
        try makeIterator(in: keySpace, lowerBound: prefix, upperBound: Self.prefixSuccessor(prefix), snapshot: snapshot)
    }

    /// The smallest key greater than every key starting with `prefix`, or nil if none exists.
    public static func prefixSuccessor(_ prefix: [UInt8]) -> [UInt8]? {
        var p = prefix
        while let last = p.last {
            if last < 0xFF {
                p[p.count - 1] = last + 1
                return p
            }
            p.removeLast()
        }
        return nil
    }

    /// All entries of a range as pairs, forward or backward, at most `limit` of them.
    public func scan(_ keySpace: KeySpace, lowerBound: [UInt8]? = nil, upperBound: [UInt8]? = nil,
                     reverse: Bool = false, limit: Int = .max, snapshot: Snapshot? = nil) throws -> [(key: [UInt8], value: [UInt8])] {
        let it = try makeIterator(in: keySpace, lowerBound: lowerBound, upperBound: upperBound, snapshot: snapshot)
        var out: [(key: [UInt8], value: [UInt8])] = []
        if reverse { try it.seekToLast() } else { try it.seekToFirst() }
        while it.isValid && out.count < limit {
            out.append((Array(it.key), Array(it.value)))
            if reverse { try it.previous() } else { try it.next() }
        }
        return out
    }
}
