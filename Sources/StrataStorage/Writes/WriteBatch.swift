/// A group of puts and deletes, across any key spaces, that commits atomically: after a crash
/// either all of it is there or none of it (SPEC.md §WAL, batch encoding).
///
/// ```swift
/// var batch = WriteBatch()
/// batch.put(Array("k1".utf8), Array("v1".utf8), in: objects)
/// batch.delete(Array("e7".utf8), in: edges)
/// try engine.write(batch)
/// ```
public struct WriteBatch: Sendable {
    /// count (4, LE) followed by the operations; see SPEC.md §WAL.
    @usableFromInline var rep: [UInt8]
    @usableFromInline var operationCount: Int = 0
    /// Key and value bytes, for the "user bytes written" statistic.
    @usableFromInline var userBytes: Int = 0
    @usableFromInline var limitError: StorageError?
    /// Highest key-space id used, so the engine can reject handles it does not know.
    @usableFromInline var maxKeySpaceId: UInt32 = 0

    public init() {
        rep = [0, 0, 0, 0]
    }

    /// Number of puts and deletes in the batch.
    public var count: Int { operationCount }
    public var isEmpty: Bool { operationCount == 0 }
    /// Encoded size in bytes.
    public var byteCount: Int { rep.count }

    /// Removes every operation, keeping the allocated capacity.
    public mutating func removeAll() {
        rep.removeAll(keepingCapacity: true)
        rep.append(contentsOf: [0, 0, 0, 0])
        operationCount = 0
        userBytes = 0
        limitError = nil
        maxKeySpaceId = 0
    }

    /// Adds a put of `value` under `key` in `keySpace`. Raw bytes, not `[UInt8]`: a commit encodes every object,
    /// edge and index entry from its own buffers (the `[UInt8]` overload below copies nothing
    /// more).
    @inlinable
    public mutating func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, in keySpace: KeySpace) {
        if key.count > StorageLimits.maxKeyBytes {
            limitError = limitError ?? .keyTooLarge(size: key.count, limit: StorageLimits.maxKeyBytes)
            return
        }
        if value.count > StorageLimits.maxValueBytes {
            limitError = limitError ?? .valueTooLarge(size: value.count, limit: StorageLimits.maxValueBytes)
            return
        }
        maxKeySpaceId = max(maxKeySpaceId, keySpace.id)
        appendEntry(.value, keySpaceId: keySpace.id, key: key, value: value)
        userBytes += key.count + value.count
    }

    /// Adds a delete of `key` in `keySpace` (a tombstone; deleting an absent key is not an error).
    @inlinable
    public mutating func delete(_ key: UnsafeRawBufferPointer, in keySpace: KeySpace) {
        if key.count > StorageLimits.maxKeyBytes {
            limitError = limitError ?? .keyTooLarge(size: key.count, limit: StorageLimits.maxKeyBytes)
            return
        }
        maxKeySpaceId = max(maxKeySpaceId, keySpace.id)
        appendEntry(.deletion, keySpaceId: keySpace.id, key: key, value: nil)
        userBytes += key.count
    }

    @inlinable
    public mutating func put(_ key: [UInt8], _ value: [UInt8], in keySpace: KeySpace) {
        key.withUnsafeBytes { k in value.withUnsafeBytes { v in put(k, v, in: keySpace) } }
    }

    @inlinable
    public mutating func delete(_ key: [UInt8], in keySpace: KeySpace) {
        key.withUnsafeBytes { delete($0, in: keySpace) }
    }

    /// Appends one operation: kind, key space, length-prefixed key, and for a put the
    /// length-prefixed value, and updates the count in place.
    @inlinable
    mutating func appendEntry(_ kind: EntryKind, keySpaceId: UInt32, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?) {
        // The whole entry is assembled on the stack and appended once when it is small (most
        // are): each append pays capacity and uniqueness checks, a memcpy does not.
        let size = 32 + key.count + (value?.count ?? 0)
        withUnsafeTemporaryAllocation(byteCount: size <= 512 ? size : 32, alignment: 1) { buffer in
            buffer[0] = kind.rawValue
            var n = ByteWriter.storeVarint(UInt64(keySpaceId), in: buffer, at: 1)
            n = ByteWriter.storeVarint(UInt64(key.count), in: buffer, at: n)
            guard size <= 512 else {
                rep.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                rep.append(contentsOf: key)
                if let value {
                    n = ByteWriter.storeVarint(UInt64(value.count), in: buffer, at: 0)
                    rep.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                    rep.append(contentsOf: value)
                }
                return
            }
            if key.count > 0 { (buffer.baseAddress! + n).copyMemory(from: key.baseAddress!, byteCount: key.count) }
            n += key.count
            if let value {
                n = ByteWriter.storeVarint(UInt64(value.count), in: buffer, at: n)
                if value.count > 0 { (buffer.baseAddress! + n).copyMemory(from: value.baseAddress!, byteCount: value.count) }
                n += value.count
            }
            rep.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
        operationCount += 1
        storeCount()
    }

    /// Reserves room for `bytes` more bytes of operations (a caller that knows its batch's size
    /// saves the regrowth copies).
    public mutating func reserveCapacity(_ bytes: Int) {
        rep.reserveCapacity(rep.count + bytes)
    }

    /// Keeps the leading count of `rep` current, so `rep` is always a complete encoding.
    @inlinable
    mutating func storeCount() {
        let c = UInt32(truncatingIfNeeded: operationCount).littleEndian
        rep.withUnsafeMutableBytes { $0.storeBytes(of: c, as: UInt32.self) }
    }
}

/// One decoded operation of a batch, pointing into the batch's bytes.
package struct BatchOperation {
    var kind: EntryKind
    var keySpaceId: UInt32
    package var key: UnsafeRawBufferPointer
    package var value: UnsafeRawBufferPointer
}

enum BatchDecoder {
    /// Walks an encoded batch (count + operations). Returns nil if it is malformed.
    static func forEach(_ rep: UnsafeRawBufferPointer, _ body: (BatchOperation) throws -> Void) throws -> Bool {
        var r = ByteReader(rep)
        guard let count = r.readFixed32() else { return false }
        for _ in 0..<count {
            guard let kindByte = r.readByte(), let kind = EntryKind(rawValue: kindByte),
                  let ks = r.readVarint(), ks <= UInt64(UInt32.max),
                  let key = r.readLengthPrefixed(limit: StorageLimits.maxKeyBytes)
            else { return false }
            var value = UnsafeRawBufferPointer(start: nil, count: 0)
            if kind == .value {
                guard let v = r.readLengthPrefixed(limit: StorageLimits.maxValueBytes) else { return false }
                value = v
            }
            try body(BatchOperation(kind: kind, keySpaceId: UInt32(ks), key: key, value: value))
        }
        return r.isAtEnd
    }
}
