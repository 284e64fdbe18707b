/// The index encodings of one object's indexed properties (``EntityIndexes/properties`` order),
/// in one byte buffer. A put computes them for every indexed object it writes, and its old
/// values for every update: one buffer, reused through the transaction's pool, instead of an
/// array per value and per object.
struct IndexValues {
    private var bytes: [UInt8] = []
    private var starts: [Int] = []
    private var ends: [Int] = []

    /// Empties it for `count` values, keeping its storage.
    mutating func reset(count: Int) {
        bytes.removeAll(keepingCapacity: true)
        if starts.count == count {
            // `ends` is only read for values set since: `starts` alone says which are.
            starts.withUnsafeMutableBufferPointer { $0.update(repeating: -1) }
        } else {
            starts = Array(repeating: -1, count: count)
            ends = Array(repeating: -1, count: count)
        }
    }

    /// Whether value `i` has been set since the last reset.
    func isSet(_ i: Int) -> Bool { starts[i] >= 0 }

    /// Sets value `i` to what `encode` appends to the buffer.
    mutating func set(_ i: Int, _ encode: (inout [UInt8]) -> Void) {
        starts[i] = bytes.count
        encode(&bytes)
        ends[i] = bytes.count
    }

    /// The byte count of value `i`.
    func size(_ i: Int) -> Int { ends[i] - starts[i] }

    /// Calls `body` with value `i`'s bytes.
    func withValue<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes { all in try body(UnsafeRawBufferPointer(rebasing: all[starts[i]..<ends[i]])) }
    }

    /// Whether value `i` equals `other`'s value `i`.
    func valueEquals(_ i: Int, _ other: IndexValues) -> Bool {
        guard size(i) == other.size(i) else { return false }
        return withValue(i) { a in other.withValue(i) { b in compareBytes(a, b) == 0 } }
    }

    /// Value `i` as an array (cold paths: error messages, index builds, verification).
    func array(_ i: Int) -> [UInt8] { Array(bytes[starts[i]..<ends[i]]) }
}
