/// Values by key space id, for lookups on every point read: key space ids are small and dense
/// (given in order from 0), so a lookup indexes an array instead of hashing the id into a
/// dictionary. Ids past the array's bound (never given in practice) fall back to the dictionary.
struct KeySpaceTable<Value> {
    private let dense: [Value?]
    private let rest: [UInt32: Value]

    init(_ values: [UInt32: Value]) {
        let count = Int(min(values.keys.max().map { $0 + 1 } ?? 0, 4_096))
        var dense = [Value?](repeating: nil, count: count)
        var rest: [UInt32: Value] = [:]
        for (id, value) in values {
            if Int(id) < count { dense[Int(id)] = value } else { rest[id] = value }
        }
        self.dense = dense
        self.rest = rest
    }

    @inline(__always)
    subscript(_ id: UInt32) -> Value? {
        Int(id) < dense.count ? dense[Int(id)] : rest[id]
    }
}

extension KeySpaceTable: Sendable where Value: Sendable {}
