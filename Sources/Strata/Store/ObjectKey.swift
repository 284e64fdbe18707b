/// Where an object lives in the objects key space: entity id (u32 big-endian) then object id
/// (u64 big-endian), so one entity's objects are contiguous and sorted by id (SPEC.md §Objects).
struct ObjectKey: Hashable, Sendable {
    var entityId: UInt32
    var id: Id

    /// Calls `body` with the 12 key bytes, built on the stack.
    @inline(__always)
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var raw = (entityId.bigEndian, UInt32(truncatingIfNeeded: id >> 32).bigEndian, UInt32(truncatingIfNeeded: id).bigEndian)
        return try withUnsafeBytes(of: &raw) { try body($0) }
    }

    /// The 4-byte prefix shared by every object of `entityId`.
    static func prefix(entityId: UInt32) -> [UInt8] {
        withUnsafeBytes(of: entityId.bigEndian) { Array($0) }
    }

    /// Reads an object id from a full key of the objects key space.
    static func id(fromKey key: UnsafeRawBufferPointer) -> Id {
        var id: Id = 0
        for i in 4..<ObjectFormat.objectKeyBytes { id = id << 8 | Id(key[i]) }
        return id
    }

    /// Reads the entity id from a key of the objects key space.
    static func entityId(fromKey key: UnsafeRawBufferPointer) -> UInt32 {
        var id: UInt32 = 0
        for i in 0..<4 { id = id << 8 | UInt32(key[i]) }
        return id
    }
}
