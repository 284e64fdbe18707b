import CStrataSupport

extension Engine {
    /// How many keys a batched read looks up together: enough to overlap the memory misses of
    /// one key's lookup with those of the others, few enough that their blocks stay in the CPU
    /// cache between the stages.
    static let batchReadGroup = 16

    /// Reads many keys at once: calls `body` once per key of `keys`, in their order, with the
    /// stored value's bytes, or nil when the key is absent. Every key is read from the same
    /// state: the latest committed one, or the one `snapshot` pins. The bytes are valid only
    /// inside `body`.
    ///
    /// The same results as one ``visitValue(forKey:in:snapshot:_:)`` per key, but faster for many
    /// keys: they are looked up in groups, and each group's cached blocks are brought into the
    /// CPU cache together, so that the memory misses of different keys overlap.
    ///
    /// ```swift
    /// var keys = KeyList()
    /// for id in ids { keys.append(key(for: id)) }
    /// try engine.visitValues(forKeys: keys, in: objects) { i, value in
    ///     if let value { decode(ids[i], value) }
    /// }
    /// ```
    public func visitValues(forKeys keys: KeyList, in keySpace: KeySpace, snapshot: Snapshot? = nil,
                            _ body: (_ index: Int, _ value: UnsafeRawBufferPointer?) throws -> Void) throws {
        try checkOpen()
        guard !keys.isEmpty else { return }
        let longest = keys.longestKey
        guard longest <= StorageLimits.maxKeyBytes else {
            throw StorageError.keyTooLarge(size: longest, limit: StorageLimits.maxKeyBytes)
        }
        let (view, sequence) = readState(snapshot)
        defer { view.readerDone() }
        guard let mem = view.memtable(keySpace.id) else { throw StorageError.unknownKeySpace(keySpace.name) }
        let imm = view.immutable(keySpace.id)
        let group = min(Self.batchReadGroup, keys.count)
        let stride = longest + InternalKey.trailerBytes
        // The group's state on the stack, not in five heap arrays: a batched read comes between
        // the decoding of many objects, whose freed memory fills malloc's fast bins, and a
        // request from these sizes then made malloc consolidate them. Moving them here saved
        // 2.6% of the backlink phase's instructions (callgrind, scale 0.1: 20.26 G -> 19.74 G).
        // The two that do not fit there (the value buffers where id block entries read without
        // their blocks are copied, and the pending reads) come from a pool (BatchReadScratch).
        let scratch = Self.batchReadScratch.take()
        defer { Self.batchReadScratch.recycle(scratch) }
        let valueBuffers = UnsafeMutableRawBufferPointer(start: scratch, count: Self.batchSlotBytes * group)
        // PendingRead is trivial (no references counted), so raw memory bound to it needs no
        // deinitialization.
        let pending = UnsafeMutableBufferPointer(
            start: (scratch + Self.pendingReadsOffset).bindMemory(to: PendingRead?.self, capacity: group), count: group)
        pending.initialize(repeating: nil)
        try withUnsafeTemporaryAllocation(byteCount: stride * group, alignment: 8) { lookupBuffers in
            try withUnsafeTemporaryAllocation(of: UnsafeRawBufferPointer?.self, capacity: group) { found in
                try withUnsafeTemporaryAllocation(of: Block?.self, capacity: group) { blocks in
                    try withUnsafeTemporaryAllocation(of: AnyObject?.self, capacity: group) { owners in
                        found.initialize(repeating: nil)
                        blocks.initialize(repeating: nil)
                        owners.initialize(repeating: nil)
                        defer {
                            blocks.deinitialize()
                            owners.deinitialize()
                        }
                        try visitValues(keys, group: group, stride: stride, view: view, sequence: sequence, mem: mem, imm: imm,
                                        keySpaceId: keySpace.id, lookupBuffers: lookupBuffers, valueBuffers: valueBuffers,
                                        found: found, pending: pending,
                                        blocks: blocks, owners: owners, body)
                    }
                }
            }
        }
    }

    /// Where a scratch region's pending reads start: after the value buffers of a whole group.
    private static let pendingReadsOffset: Int = {
        assert(_isPOD(PendingRead?.self), "a pending read in raw scratch memory holds no counted reference")
        let align = MemoryLayout<PendingRead?>.alignment
        return (batchSlotBytes * batchReadGroup + align - 1) / align * align
    }()

    /// The scratch regions of batched reads, shared by every engine of the process.
    private static let batchReadScratch = BatchReadScratch(
        bytes: pendingReadsOffset + MemoryLayout<PendingRead?>.stride * batchReadGroup)

    /// ``visitValues(forKeys:in:snapshot:_:)`` in its group's buffers (`group` slots each).
    private func visitValues(_ keys: KeyList, group: Int, stride: Int, view: ReadView, sequence: UInt64, mem: Memtable,
                             imm: Memtable?, keySpaceId: UInt32, lookupBuffers: UnsafeMutableRawBufferPointer,
                             valueBuffers: UnsafeMutableRawBufferPointer, found: UnsafeMutableBufferPointer<UnsafeRawBufferPointer?>,
                             pending: UnsafeMutableBufferPointer<PendingRead?>, blocks: UnsafeMutableBufferPointer<Block?>,
                             owners: UnsafeMutableBufferPointer<AnyObject?>,
                             _ body: (_ index: Int, _ value: UnsafeRawBufferPointer?) throws -> Void) throws {
        // Reference counting kept to one retain and release per key (its block): the readers
        // stay alive through `view`, whose version holds them, so a pending read refers to its
        // reader unretained; a value's bytes stay valid while `blocks` (segments), `owners`
        // (the rare fallback) or `view` (memtables) holds what they lie in.
        try withExtendedLifetime(view) {
            try keys.bytes.withUnsafeBytes { all in
                var start = 0
                while start < keys.count {
                    let end = min(start + group, keys.count)
                    // Stage 1: the memtables, then the first segment whose filter and index admit the key.
                    for i in start..<end {
                        let slot = i - start
                        found[slot] = nil
                        pending[slot] = nil
                        blocks[slot] = nil
                        owners[slot] = nil
                        let key = keys.key(i, in: all)
                        let hash = BloomFilter.hash(key)
                        if let r = mem.get(key, hash: hash, sequence: sequence) ?? imm?.get(key, hash: hash, sequence: sequence) {
                            if case let .found(v) = r { found[slot] = v }
                            continue
                        }
                        let lookup = Self.lookupKey(key, sequence: sequence, in: lookupBuffers, slot: slot, stride: stride)
                        let valueBuffer = Self.valueBuffer(slot, in: valueBuffers)
                        try view.version.candidates(for: key, in: keySpaceId) { segment in
                            let reader = try segment.reader()
                            // A format 5 id block entry: its place found now and its line
                            // prefetched; copied out in the next stages, without its block.
                            if reader.idFormat == .checked {
                                switch try reader.findIdEntry(InternalKey.userKey(lookup), scratch: valueBuffer) {
                                case let .entry(location):
                                    reader.prefetchIdEntry(location)
                                    pending[slot] = PendingRead(reader: Unmanaged.passUnretained(reader),
                                                                handle: BlockHandle(offset: 0, size: 0), hash: hash, lookup: lookup,
                                                                entry: location)
                                    return true
                                case .absent: return false
                                case .undecided: break
                                }
                            }
                            guard let handle = try reader.blockHandle(lookupKey: lookup, hash: hash) else { return false }
                            reader.prefetchCached(handle)
                            pending[slot] = PendingRead(reader: Unmanaged.passUnretained(reader), handle: handle, hash: hash,
                                                        lookup: lookup, entry: nil)
                            return true
                        }
                    }
                    // Stage 2: the blocks, from the cache (whose entries stage 1 prefetched) or the files.
                    // Keys in the same block as the key before (ids of one object block) take its
                    // block without a second cache probe.
                    var previous = -1
                    for slot in 0..<(end - start) {
                        guard let p = pending[slot] else { continue }
                        if let location = p.entry {
                            // An id block entry: copied now, its value's line prefetched.
                            _ = try p.reader.takeUnretainedValue().copyIdEntry(location, to: Self.entryBuffer(slot, in: valueBuffers))
                            continue
                        }
                        if previous >= 0, let q = pending[previous], q.reader.toOpaque() == p.reader.toOpaque(), q.handle == p.handle,
                           let block = blocks[previous] {
                            block.prefetchForLookup(p.lookup)
                            blocks[slot] = block
                            continue
                        }
                        let block = try p.reader.takeUnretainedValue().dataBlock(p.handle)
                        block.prefetchForLookup(p.lookup)
                        blocks[slot] = block
                        previous = slot
                    }
                    // Stage 3: the searches in the blocks.
                    for i in start..<end {
                        let slot = i - start
                        guard let p = pending[slot] else { continue }
                        let reader = p.reader.takeUnretainedValue()
                        if let location = p.entry {
                            let valueBuffer = Self.valueBuffer(slot, in: valueBuffers)
                            switch try reader.readIdValue(location, entry: Self.entryBuffer(slot, in: valueBuffers), lookupKey: p.lookup,
                                                          into: valueBuffer) {
                            case let .found(count): found[slot] = UnsafeRawBufferPointer(rebasing: valueBuffer[0..<count])
                            case .deleted, .absent: break
                            case .undecided:
                                // A newer version, or a value too large for the buffer: the whole read, by the block path.
                                let buffer = UnsafeMutableRawBufferPointer(rebasing: lookupBuffers[(slot * stride)..<((slot + 1) * stride)])
                                let location = try locateInSegments(keys.key(i, in: all), lookupBuffer: buffer, valueBuffer: valueBuffer,
                                                                    keySpaceId: keySpaceId, view: view, sequence: sequence, hash: p.hash)
                                if let owner = location.owner {
                                    owners[slot] = owner
                                    found[slot] = location.bytes
                                }
                            }
                            continue
                        }
                        guard let block = blocks[slot] else { continue }
                        switch try reader.lookup(p.lookup, in: block) {
                        case let .found(_, offset, count)?:
                            let base = block.contents.baseAddress!
                            found[slot] = UnsafeRawBufferPointer(start: base + offset, count: count)
                            // The caller reads the values after the group's searches: their misses overlap.
                            strata_prefetch(base + offset)
                        case .deleted?:
                            break
                        case nil:
                            // Not in that segment after all (a filter false positive): the deeper
                            // levels, one key at a time.
                            let buffer = UnsafeMutableRawBufferPointer(rebasing: lookupBuffers[(slot * stride)..<((slot + 1) * stride)])
                            let location = try locateInSegments(keys.key(i, in: all), lookupBuffer: buffer,
                                                                valueBuffer: Self.valueBuffer(slot, in: valueBuffers), keySpaceId: keySpaceId,
                                                                view: view, sequence: sequence, hash: p.hash)
                            if let owner = location.owner {
                                owners[slot] = owner
                                found[slot] = location.bytes
                            }
                        }
                    }
                    for i in start..<end { try body(i, found[i - start]) }
                    start = end
                }
            }
        }
    }

    /// Bytes of each key's buffer for a value copied out of an id block entry; a larger value is
    /// read through its block.
    static let batchValueBytes = 512
    /// Each key's buffer: its value, then its id block entry.
    private static let batchSlotBytes = batchValueBytes + 24

    @inline(__always)
    private static func valueBuffer(_ slot: Int, in buffers: UnsafeMutableRawBufferPointer) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: buffers[(slot * batchSlotBytes)..<(slot * batchSlotBytes + batchValueBytes)])
    }

    @inline(__always)
    private static func entryBuffer(_ slot: Int, in buffers: UnsafeMutableRawBufferPointer) -> UnsafeMutableRawPointer {
        buffers.baseAddress! + slot * batchSlotBytes + batchValueBytes
    }

    /// Writes the internal lookup key (user key, seek trailer) for `slot` into `buffers`.
    @inline(__always)
    private static func lookupKey(_ key: UnsafeRawBufferPointer, sequence: UInt64, in buffers: UnsafeMutableRawBufferPointer,
                                  slot: Int, stride: Int) -> UnsafeRawBufferPointer {
        let base = buffers.baseAddress! + slot * stride
        if key.count > 0 { base.copyMemory(from: key.baseAddress!, byteCount: key.count) }
        (base + key.count).storeBytes(of: InternalKey.seekTrailer(sequence: sequence).littleEndian, as: UInt64.self)
        return UnsafeRawBufferPointer(start: base, count: key.count + InternalKey.trailerBytes)
    }
}

/// A key of a batched read between its stages: the segment and block that may hold it. Plain
/// data, copied without reference counting: the reader is kept alive by the read's view.
private struct PendingRead {
    let reader: Unmanaged<SegmentReader>
    let handle: BlockHandle
    let hash: UInt64
    /// The key's internal lookup key, in the read's lookup buffers.
    let lookup: UnsafeRawBufferPointer
    /// A format 5 id block entry read without its block: where it lies (`handle` is unused).
    let entry: IdEntryLocation?
}
