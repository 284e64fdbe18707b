import BenchSupport

/// db_bench's workloads, defined once and run identically on every engine.
enum Workload: String, CaseIterable {
    case fillseq, fillseqBatch = "fillseq-batch1000", fillrandom, fillrandomBatch = "fillrandom-batch1000"
    case overwrite, readrandom, readseq, fillsync, fillsync8 = "fillsync-8threads"
    /// Random load of all N keys, then a full compaction; reports the size on disk.
    case compacted = "compacted-size"

    var isRead: Bool { self == .readrandom || self == .readseq }
}

/// Keys (16 bytes, zero-padded decimal index) and values (100 bytes: 50 random bytes, then the
/// same 50 again, so half-compressible), precomputed so generation is not timed.
final class DataSet {
    static let keyBytes = 16
    static let valueBytes = 100
    static let valuePool = 10_000

    let count: Int
    let keys: [UInt8]
    let values: [UInt8]

    init(count: Int) {
        self.count = count
        var k = [UInt8](repeating: UInt8(ascii: "0"), count: count * Self.keyBytes)
        for i in 0..<count {
            var n = i
            var p = (i + 1) * Self.keyBytes - 1
            while n > 0 {
                k[p] = UInt8(ascii: "0") + UInt8(n % 10)
                n /= 10
                p -= 1
            }
        }
        keys = k
        var rng = SplitMix64(state: 7)
        var v = [UInt8](repeating: 0, count: Self.valuePool * Self.valueBytes)
        for i in 0..<Self.valuePool {
            for j in 0..<50 {
                let b = UInt8(truncatingIfNeeded: rng.next())
                v[i * 100 + j] = b
                v[i * 100 + 50 + j] = b
            }
        }
        values = v
    }

    /// A fixed-seed permutation of 0..<count.
    func permutation(seed: UInt64) -> [Int] {
        var order = Array(0..<count)
        var rng = SplitMix64(state: seed)
        for i in stride(from: count - 1, to: 0, by: -1) {
            let j = Int(rng.next() % UInt64(i + 1))
            order.swapAt(i, j)
        }
        return order
    }

    @inline(__always)
    func withKey<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try keys.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[(i * Self.keyBytes)..<((i + 1) * Self.keyBytes)])) }
    }

    @inline(__always)
    func withValue<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let slot = i % Self.valuePool
        return try values.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[(slot * Self.valueBytes)..<((slot + 1) * Self.valueBytes)])) }
    }
}

/// What every engine under test offers the workloads.
protocol BenchEngine: AnyObject {
    static var name: String { get }
    init(directory: String) throws
    /// Appends to the pending batch; `commit` writes it.
    func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
    func commit(sync: Bool) throws
    func get(key: UnsafeRawBufferPointer) throws -> Bool
    /// One forward scan; returns the number of entries and bytes seen.
    func scanAll() throws -> (entries: Int, bytes: Int)
    /// Full compaction, when the engine has one.
    func compactAll() throws
    func close()
    /// One put on its own, safe to call from several threads at once.
    func putConcurrently(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, sync: Bool) throws
}
