/// Builds one data block in the id-addressed layout (``IdBlockLayout``, SPEC.md §6.1.1). The
/// segment writer offers it each entry of an id key space; an entry it cannot take (another
/// head or key length, a second version of the last key) ends the block.
struct IdBlockBuilder {
    private(set) var values = ByteWriter(capacity: 16 * 1024)
    private var ids: [UInt64] = []
    /// Per entry: trailer, value offset, value size (the entry array, little-endian on output).
    private var entries: [(UInt64, UInt32, UInt32)] = []
    private var head: [UInt8] = []
    private var isSparse = false
    /// Format 5: each entry ends in its checksum (``IdBlockLayout/entryChecksum(userKey:trailer:value:)``).
    private let checked: Bool
    /// Per entry, its checksum (format 5 only).
    private var checksums: [UInt32] = []
    /// Whether every trailer so far is 1 (sequence 0, a value): format 5 then leaves them out.
    private var sequenceZero = true
    /// An encrypted segment of format 6: each value is followed by room for its tag, and sealed
    /// (and its checksum computed over the sealed bytes) when the block is finished, where its
    /// entry's offset, its nonce, is known (``SealedIdValues``).
    private let sealedValues: Bool

    init(checked: Bool = true, sealedValues: Bool = false) {
        self.checked = checked
        self.sealedValues = checked && sealedValues
    }

    var isEmpty: Bool { ids.isEmpty }
    var entryCount: Int { ids.count }

    /// Size of the block if finished now (counting the id array as if it were sparse).
    var estimatedSize: Int {
        values.count + ids.count * ((checked && sequenceZero ? 8 : 16) + (isSparse ? 8 : 0)) + head.count + IdBlockLayout.footerBytes
    }

    /// The first id and the number of entries, and whether ids have gaps: what a format 5 index
    /// entry says of the block (SPEC.md §6.2). REQUIRES: not empty.
    var span: IdBlockSpan {
        IdBlockSpan(firstId: ids[0], count: UInt32(ids.count), isSparse: isSparse, sequenceZero: checked && sequenceZero)
    }

    mutating func reset() {
        values.removeAll()
        ids.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
        checksums.removeAll(keepingCapacity: true)
        sequenceZero = true
        head.removeAll(keepingCapacity: true)
        isSparse = false
    }

    /// Whether an internal key can start an id block: a user key of 8 bytes or more, whose last
    /// eight are its id, no longer than the largest key.
    static func canStart(_ internalKey: UnsafeRawBufferPointer) -> Bool {
        let n = internalKey.count - InternalKey.trailerBytes
        return n >= 8 && n <= StorageLimits.maxKeyBytes
    }

    /// Adds the entry and returns true when it fits this block: same head and key length as the
    /// entries before it, a larger id. A key ``canStart(_:)`` refuses, or a value too large for
    /// a u32 offset, never fits.
    mutating func add(key internalKey: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Bool {
        guard Self.canStart(internalKey) else { return false }
        let user = InternalKey.userKey(internalKey)
        let h = user.count - 8
        let id = UInt64(bigEndian: user.loadUnaligned(fromByteOffset: h, as: UInt64.self))
        guard values.count + value.count + SealedIdValues.tagBytes <= Int(UInt32.max) else { return false }
        if let last = ids.last {
            guard h == head.count, id > last,
                  head.withUnsafeBytes({ UnsafeRawBufferPointer(rebasing: user[0..<h]).bytesEqual($0) }) else { return false }
            if id != last &+ 1 { isSparse = true }
        } else {
            head.append(contentsOf: UnsafeRawBufferPointer(rebasing: user[0..<h]))
        }
        ids.append(id)
        let trailer = InternalKey.trailer(internalKey)
        if checked && !sealedValues { checksums.append(IdBlockLayout.entryChecksum(userKey: user, trailer: trailer, value: value)) }
        if trailer != InternalKey.trailer(sequence: 0, kind: .value) { sequenceZero = false }
        entries.append((trailer, UInt32(values.count), UInt32(value.count + (sealedValues ? SealedIdValues.tagBytes : 0))))
        values.append(value)
        if sealedValues { values.appendZeros(SealedIdValues.tagBytes) }
        return true
    }

    /// Writes entry `i`'s internal key into `out` (replacing its contents).
    func key(_ i: Int, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        out.append(contentsOf: head)
        withUnsafeBytes(of: ids[i].bigEndian) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: entries[i].0.littleEndian) { out.append(contentsOf: $0) }
    }

    /// Appends the id array (sparse blocks), the entries, the head and the footer, and lends
    /// the finished contents to `body`. Call ``reset()`` before adding again.
    /// - Parameter sealing: for a builder of sealed values, the file key's cipher and the file
    ///   offset where the block's contents will start.
    mutating func withFinishedContents<R>(sealing: (context: AEADContext, payloadOffset: UInt64)? = nil,
                                          _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        precondition(!sealedValues || sealing != nil, "a block of sealed values is finished with its file's cipher")
        if sealedValues, let sealing { sealValues(sealing.context, payloadOffset: sealing.payloadOffset) }
        if isSparse { for id in ids { values.appendFixed64(id) } }
        for (i, (trailer, offset, size)) in entries.enumerated() {
            if checked {
                // Format 5: no size (values follow each other), no trailer when all are 1.
                values.appendFixed32(offset)
                values.appendFixed32(checksums[i])
                if !sequenceZero { values.appendFixed64(trailer) }
            } else {
                values.appendFixed64(trailer)
                values.appendFixed32(offset)
                values.appendFixed32(size)
            }
        }
        values.append(head)
        values.appendFixed64(ids[0])
        values.appendFixed32(UInt32(ids.count))
        values.appendFixed32(UInt32(head.count))
        values.appendFixed32((isSparse ? IdBlockLayout.sparseFlag : 0) | (checked ? IdBlockLayout.checkedFlag : 0)
                             | (checked && sequenceZero ? IdBlockLayout.sequenceZeroFlag : 0))
        values.appendFixed32(0)
        return try values.bytes.withUnsafeBytes(body)
    }

    /// Seals each value in place, its nonce the file offset its entry will have, and computes
    /// its checksum over the sealed bytes (what a point read copies and checks).
    private mutating func sealValues(_ context: AEADContext, payloadOffset: UInt64) {
        let entryBytes = sequenceZero ? 8 : 16
        let entriesOffset = values.count + (isSparse ? ids.count * 8 : 0)
        var key: [UInt8] = []
        checksums.removeAll(keepingCapacity: true)
        for i in 0..<entries.count {
            self.key(i, into: &key)
            let (trailer, offset, size) = entries[i]
            let userKey = key.count - InternalKey.trailerBytes
            let entryAt = payloadOffset + UInt64(entriesOffset + i * entryBytes)
            let checksum = key.withUnsafeBytes { k in
                values.bytes.withUnsafeMutableBytes { raw in
                    let value = UnsafeMutableRawBufferPointer(rebasing: raw[Int(offset)..<(Int(offset) + Int(size))])
                    let user = UnsafeRawBufferPointer(rebasing: k[0..<userKey])
                    SealedIdValues.seal(value, userKey: user, trailer: trailer, entryAt: entryAt, context: context)
                    return IdBlockLayout.entryChecksum(userKey: user, trailer: trailer, value: UnsafeRawBufferPointer(value))
                }
            }
            checksums.append(checksum)
        }
    }
}
