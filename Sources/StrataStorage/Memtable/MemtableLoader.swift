/// Fills a memtable that no reader sees yet (recovery's replay) with a search-free build: each
/// entry's node is written to the arena as it comes (``Memtable/makeNode(key:value:sequence:kind:)``),
/// and ``finish()`` sorts the nodes and links them in order (``Memtable/linkInOrder(_:)``).
///
/// Why: a log's records each hold their keys in order, but a later record's keys fall among an
/// earlier one's (an update of objects written before, edges beside them), so every insert of
/// the replay searched the skip list, walking among the earlier record's nodes: about a third
/// of the inserts' instructions (writing the nodes and their filter bits is the rest, and
/// stays). Sorting costs a comparison per node for each merge pass, on nodes read in the order
/// they lie in the arena, and there are as many passes as the log has interleaved runs (log₂ of
/// them): few, for the logs a store leaves.
///
/// `@unchecked Sendable`: the replay hands each key space's loader to its own thread, one thread
/// at a time per loader; a loader itself takes no lock.
package final class MemtableLoader: @unchecked Sendable {
    package let memtable: Memtable
    /// The nodes written, in arrival order until ``finish()``.
    /// `@exclusivity(unchecked)`: the runtime's check on every append was a tenth of the load.
    @exclusivity(unchecked) private var nodes: [UnsafeMutableRawPointer] = []

    package init(_ memtable: Memtable) { self.memtable = memtable }

    var isEmpty: Bool { nodes.isEmpty }

    /// Writes an entry's node; it becomes visible at ``finish()``.
    func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, sequence: UInt64, kind: EntryKind) {
        nodes.append(memtable.makeNode(key: key, value: value, sequence: sequence, kind: kind))
    }

    /// Sorts the nodes written into internal-key order and links them. Entries with the same
    /// internal key (a crafted log may repeat a sequence number) keep their arrival order.
    func finish() {
        guard !nodes.isEmpty else { return }
        nodes.withUnsafeMutableBufferPointer { buffer in
            Self.sort(buffer)
            memtable.linkInOrder(UnsafeBufferPointer(buffer))
        }
        nodes = []
    }

    @inline(__always) private static func precedes(_ a: UnsafeMutableRawPointer, _ b: UnsafeMutableRawPointer) -> Bool {
        Memtable.compare(a, Memtable.userKey(b), Memtable.trailer(b)) < 0
    }

    /// A stable natural merge sort: the runs already in order are found first, then merged in
    /// pairs until one is left. Nodes already in order (a log of one record, or of records
    /// that each follow the one before) cost one comparison each.
    private static func sort(_ nodes: UnsafeMutableBufferPointer<UnsafeMutableRawPointer>) {
        let count = nodes.count
        // Run starts, and the end as the last boundary.
        var bounds = [0]
        for i in 1..<max(count, 1) where precedes(nodes[i], nodes[i - 1]) { bounds.append(i) }
        bounds.append(count)
        if bounds.count == 2 { return }
        let scratch = UnsafeMutableBufferPointer<UnsafeMutableRawPointer>.allocate(capacity: count)
        defer { scratch.deallocate() }
        var source = nodes, target = scratch
        while bounds.count > 2 {
            var merged = [0]
            var r = 0
            while r + 1 < bounds.count {
                let lo = bounds[r], mid = bounds[r + 1]
                let hi = r + 2 < bounds.count ? bounds[r + 2] : mid
                merge(source, lo, mid, hi, into: target)
                merged.append(hi)
                r += 2
            }
            bounds = merged
            swap(&source, &target)
        }
        if source.baseAddress != nodes.baseAddress {
            _ = nodes.update(fromContentsOf: source)
        }
    }

    /// Merges `source[lo..<mid]` and `source[mid..<hi]` into `target[lo..<hi]`, the left run's
    /// node first on a tie.
    private static func merge(_ source: UnsafeMutableBufferPointer<UnsafeMutableRawPointer>, _ lo: Int, _ mid: Int, _ hi: Int,
                              into target: UnsafeMutableBufferPointer<UnsafeMutableRawPointer>) {
        var i = lo, j = mid, k = lo
        while i < mid && j < hi {
            if precedes(source[j], source[i]) {
                target[k] = source[j]; j += 1
            } else {
                target[k] = source[i]; i += 1
            }
            k += 1
        }
        while i < mid { target[k] = source[i]; i += 1; k += 1 }
        while j < hi { target[k] = source[j]; j += 1; k += 1 }
    }
}
