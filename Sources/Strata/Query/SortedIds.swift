/// The ids a resolved relation condition allows: increasing and distinct, as a run reads them.
///
/// Why not `Set<Id>`: a link's ids come from edge keys, which order a target's sources by id
/// already, and a run reads its candidates by increasing id. Hashing them into a set and
/// sorting them back out was a tenth of a link query's instructions (callgrind, the graph
/// benchmark's query-link phase); an array kept in order needs neither, and a candidate's
/// membership is a binary search.
struct SortedIds: Sendable {
    /// Increasing, distinct.
    let ids: [Id]

    /// `ids` in any order, duplicates allowed; sorts only when they are out of order.
    init(_ ids: [Id]) {
        var ids = ids
        Self.normalize(&ids)
        self.ids = ids
    }

    /// The union of id lists, each in any order.
    init(union lists: [[Id]]) {
        if lists.count == 1 {
            self.init(lists[0])
        } else {
            self.init(lists.flatMap { $0 })
        }
    }

    func contains(_ id: Id) -> Bool {
        var low = 0, high = ids.count
        while low < high {
            let mid = low + (high - low) / 2
            if ids[mid] < id { low = mid + 1 } else { high = mid }
        }
        return low < ids.count && ids[low] == id
    }

    /// Sorts and removes duplicates, skipping both when `ids` are in order already (one pass).
    private static func normalize(_ ids: inout [Id]) {
        var i = 1
        while i < ids.count && ids[i - 1] < ids[i] { i += 1 }
        if i < ids.count { ids.sortRemovingDuplicates() }
    }
}

extension Array where Element == Id {
    /// Sorts the ids and keeps one of each, in place. Usable from the inlinable relation
    /// prefetch, which deduplicates its targets the same way.
    @usableFromInline
    mutating func sortRemovingDuplicates() {
        sort()
        var kept = 0
        for j in indices where j == 0 || self[j] != self[kept - 1] {
            self[kept] = self[j]
            kept += 1
        }
        removeLast(count - kept)
    }
}
