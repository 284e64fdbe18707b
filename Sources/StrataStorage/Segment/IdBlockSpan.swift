/// What a format 5 index entry says of the id block it points to, after the block's handle
/// (SPEC.md §6.2): its first id, its number of entries, and whether its ids have gaps. With the
/// index key's id (the block's last), a point read finds a key's entry in the file by
/// arithmetic, without reading the block (``IdEntryReader``).
///
/// ```
/// span  = flags (varint) | first id (varint) | entries (varint)
/// flags = 1 | 2 if sparse | 4 if every trailer is 1 (8-byte entries)
/// ```
struct IdBlockSpan: Equatable, Sendable {
    var firstId: UInt64
    var count: UInt32
    var isSparse: Bool
    /// Every trailer is 1 (sequence 0, a value): the entries leave it out.
    var sequenceZero: Bool

    /// Bytes of each of the block's entries (``IdBlockLayout/EntryShape``).
    var entryBytes: Int { sequenceZero ? 8 : 16 }

    func encode(into w: inout ByteWriter) {
        w.appendVarint(1 | (isSparse ? 2 : 0) | (sequenceZero ? 4 : 0))
        w.appendVarint(firstId)
        w.appendVarint(UInt64(count))
    }

    /// The span after a handle in an index value. `.some(nil)`: none (a restart-layout block);
    /// nil: malformed.
    static func decode(_ r: inout ByteReader) -> IdBlockSpan?? {
        if r.isAtEnd { return .some(nil) }
        guard let flags = r.readVarint(), flags & 1 == 1, flags <= 7, let first = r.readVarint(),
              let count = r.readVarint(), count >= 1, count <= UInt64(UInt32.max), r.isAtEnd else { return nil }
        return IdBlockSpan(firstId: first, count: UInt32(count), isSparse: flags & 2 != 0, sequenceZero: flags & 4 != 0)
    }
}
