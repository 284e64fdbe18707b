/// Keys for a batched read (``Engine/visitValues(forKeys:in:snapshot:_:)``), stored back to back
/// in one buffer, so that building a list of many keys allocates nothing per key.
///
/// ```swift
/// var keys = KeyList()
/// for name in ["alice", "bob"] { keys.append(Array(name.utf8)) }
/// try engine.visitValues(forKeys: keys, in: users) { i, value in print(i, value?.count ?? 0) }
/// ```
public struct KeyList: Sendable {
    private(set) var bytes: [UInt8] = []
    /// Where each key ends in `bytes`.
    private(set) var ends: [Int] = []

    public init() {}

    /// An empty list with room for `count` keys of about `keyBytes` bytes each.
    public init(reservingCapacity count: Int, keyBytes: Int) {
        bytes.reserveCapacity(count * keyBytes)
        ends.reserveCapacity(count)
    }

    /// How many keys the list holds.
    public var count: Int { ends.count }

    public var isEmpty: Bool { ends.isEmpty }

    /// Adds a key at the end. Raw bytes, not `[UInt8]`: a batched get builds its keys in a reused buffer.
    public mutating func append(_ key: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: key)
        ends.append(bytes.count)
    }

    /// Adds a key at the end.
    public mutating func append(_ key: [UInt8]) {
        key.withUnsafeBytes { append($0) }
    }

    /// Empties the list, keeping its memory for the next batch.
    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
    }

    /// The longest key's length.
    var longestKey: Int {
        var longest = 0, start = 0
        for end in ends {
            longest = max(longest, end - start)
            start = end
        }
        return longest
    }

    /// Key `i` within `all`, this list's `bytes`.
    @inline(__always) func key(_ i: Int, in all: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let start = i == 0 ? 0 : ends[i - 1]
        return UnsafeRawBufferPointer(rebasing: all[start..<ends[i]])
    }
}
