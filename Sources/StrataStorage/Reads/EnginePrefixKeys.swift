extension Engine {
    /// Calls `body` with each live key of `keySpace` that is `prefix` followed by `suffixBytes`
    /// more bytes (1 to 8), in key order, as of the latest committed state or `snapshot`: the
    /// keys of that length ``makeIterator(in:prefix:suffixBytes:snapshot:)`` would show, without
    /// their values and without the merging iterator (the edges of one object).
    ///
    /// Each source (memtables, segments whose range and prefix filter admit the prefix) is read
    /// to the end of the prefix on its own, keeping each key's suffix as an integer; the
    /// versions are then sorted and resolved once, instead of comparing every source's current
    /// key at every step (the merge's per-step work was most of such a short scan).
    ///
    /// ```swift
    /// try engine.forEachKey(in: edges, prefix: ownerPrefix, suffixBytes: 8) { key in ids.append(decode(key)) }
    /// ```
    public func forEachKey(in keySpace: KeySpace, prefix: [UInt8], suffixBytes: Int, snapshot: Snapshot? = nil,
                           _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        try checkOpen()
        guard (1...8).contains(suffixBytes) else {
            throw StorageError.invalidOption(name: "suffixBytes", reason: "\(suffixBytes) is not between 1 and 8")
        }
        guard prefix.count + suffixBytes <= StorageLimits.maxKeyBytes else {
            throw StorageError.keyTooLarge(size: prefix.count + suffixBytes, limit: StorageLimits.maxKeyBytes)
        }
        let (view, sequence) = readState(snapshot)
        let hash = prefix.withUnsafeBytes { BloomFilter.hash($0) }
        let children = try sources(in: keySpace, view: view, lowerBound: prefix, upperBound: Self.prefixSuccessor(prefix),
                                   prefixFilter: (hash, suffixBytes))
        let keyBytes = prefix.count + suffixBytes
        // Every version of every key of that length: (suffix as a big-endian integer, so that
        // integers order as the keys do; trailer). On the stack up to 128 of them (an object's
        // edges, mostly; see ``PrefixKeyVersionStack``), on the heap beyond.
        var room = PrefixKeyVersionStack()
        try room.withBuffer { stack in
            var versions = PrefixKeyVersions(stack: stack)
            // Sorted as collected, most often: see below.
            var inOrder = true
            var seekKey = prefix
            withUnsafeBytes(of: InternalKey.seekTrailer(sequence: StorageLimits.maxSequence).littleEndian) { seekKey.append(contentsOf: $0) }
            try withExtendedLifetime(view) {
                try prefix.withUnsafeBytes { p in
                    // Oldest source first (the deepest level, up to the memtable). Each source's
                    // keys come in order, and keys made of increasing ids (an object's edges to
                    // objects added over time) are older the smaller they are: read in this
                    // order, the versions are usually sorted already and the sort below is
                    // skipped (it was a twentieth of a backlink read, sorting runs that arrived
                    // newest first).
                    for child in children.reversed() {
                        seekKey.withUnsafeBytes { child.seek($0) }
                        while child.isValid {
                            let internalKey = child.key
                            let userKey = InternalKey.userKey(internalKey)
                            guard userKey.count >= p.count, UnsafeRawBufferPointer(rebasing: userKey[0..<p.count]).bytesEqual(p) else { break }
                            if userKey.count == keyBytes {
                                var suffix: UInt64 = 0
                                if suffixBytes == 8 {
                                    suffix = UInt64(bigEndian: userKey.loadUnaligned(fromByteOffset: p.count, as: UInt64.self))
                                } else {
                                    for i in p.count..<keyBytes { suffix = suffix << 8 | UInt64(userKey[i]) }
                                }
                                let v = PrefixKeyVersion(suffix: suffix, trailer: InternalKey.trailer(internalKey))
                                if inOrder, let last = versions.last { inOrder = last.precedes(v) }
                                versions.append(v)
                            }
                            child.next()
                        }
                        if let e = child.error { throw e }
                    }
                }
            }
            try versions.withBuffer { all in
                // Key order, newest version first (the internal key order).
                if !inOrder {
                    var unsorted = all   // the same memory
                    unsorted.sort { $0.precedes($1) }
                }
                try withUnsafeTemporaryAllocation(byteCount: keyBytes, alignment: 8) { key in
                    prefix.withUnsafeBytes { key.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: prefix.count) }
                    var i = 0
                    while i < all.count {
                        let suffix = all[i].suffix
                        // The newest version visible at `sequence`, then past every version of the key.
                        var visible: UInt64?
                        while i < all.count && all[i].suffix == suffix {
                            if visible == nil && all[i].trailer >> 8 <= sequence { visible = all[i].trailer }
                            i += 1
                        }
                        guard let t = visible, t & 0xFF != UInt64(EntryKind.deletion.rawValue) else { continue }
                        for j in 0..<suffixBytes {
                            key[prefix.count + j] = UInt8(truncatingIfNeeded: suffix >> UInt64(8 * (suffixBytes - 1 - j)))
                        }
                        try body(UnsafeRawBufferPointer(key))
                    }
                }
            }
        }
    }
}

