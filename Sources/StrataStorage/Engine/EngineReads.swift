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
    /// nil when the key is absent. The bytes are valid only inside `body`.
    public func withValue<R>(forKey key: UnsafeRawBufferPointer, in keySpace: KeySpace, snapshot: Snapshot? = nil,
                             _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        try checkOpen()
        guard key.count <= StorageLimits.maxKeyBytes else {
            throw StorageError.keyTooLarge(size: key.count, limit: StorageLimits.maxKeyBytes)
        }
        let (view, sequence) = readState(snapshot)
        guard let mem = view.memtables[keySpace.id] else { throw StorageError.unknownKeySpace(keySpace.name) }
        let hash = BloomFilter.hash(key)
        if let r = mem.get(key, hash: hash, sequence: sequence) {
            if case let .found(v) = r { return try withExtendedLifetime(view) { try body(v) } }
            return nil
        }
        if let imm = view.immutables?[keySpace.id], let r = imm.get(key, hash: hash, sequence: sequence) {
            if case let .found(v) = r { return try withExtendedLifetime(view) { try body(v) } }
            return nil
        }
        return try withUnsafeTemporaryAllocation(byteCount: key.count + InternalKey.trailerBytes, alignment: 8) { buf in
            if key.count > 0 { buf.baseAddress!.copyMemory(from: key.baseAddress!, byteCount: key.count) }
            buf.storeBytes(of: InternalKey.seekTrailer(sequence: sequence).littleEndian, toByteOffset: key.count, as: UInt64.self)
            let lookup = UnsafeRawBufferPointer(buf)
            var outcome: SegmentLookup?
            try view.version.candidates(for: key, in: keySpace.id) { segment in
                outcome = try segment.reader.get(lookupKey: lookup, hash: hash)
                return outcome != nil
            }
            switch outcome {
            case let .found(block, offset, count)?:
                return try withExtendedLifetime(block) {
                    try body(UnsafeRawBufferPointer(rebasing: block.contents[offset..<(offset + count)]))
                }
            case .deleted?, nil:
                return nil
            }
        }
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
        try checkOpen()
        let (view, sequence) = readState(snapshot)
        guard let mem = view.memtables[keySpace.id] else { throw StorageError.unknownKeySpace(keySpace.name) }
        var children: [any InternalIterator] = [MemtableIterator(mem)]
        if let imm = view.immutables?[keySpace.id] { children.append(MemtableIterator(imm)) }
        if let levels = view.version.keySpaces[keySpace.id]?.levels {
            for segment in levels[0] { children.append(segment.reader.makeIterator()) }
            for level in levels.dropFirst() where !level.isEmpty { children.append(LevelIterator(level)) }
        }
        return EngineIterator(merged: MergingIterator(children), sequence: sequence, lowerBound: lowerBound,
                              upperBound: upperBound, pinned: view)
    }

    /// An iterator over the keys of `keySpace` that start with `prefix`.
    public func makeIterator(in keySpace: KeySpace, prefix: [UInt8], snapshot: Snapshot? = nil) throws -> EngineIterator {
        try makeIterator(in: keySpace, lowerBound: prefix, upperBound: Self.prefixSuccessor(prefix), snapshot: snapshot)
    }

    /// The smallest key greater than every key starting with `prefix`, or nil if none exists.
    static func prefixSuccessor(_ prefix: [UInt8]) -> [UInt8]? {
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
