/// One version of a key a prefix scan found: its suffix as a big-endian integer, its trailer.
struct PrefixKeyVersion {
    var suffix: UInt64
    var trailer: UInt64

    /// Internal key order: by key, newest version first.
    @inline(__always) func precedes(_ other: PrefixKeyVersion) -> Bool {
        suffix != other.suffix ? suffix < other.suffix : trailer > other.trailer
    }
}

/// Room for 128 versions in a local variable, so on the stack. `withUnsafeTemporaryAllocation`
/// of these 2 KiB went to the heap here (past 1 KiB it asks the runtime whether the stack has
/// room, and the answer on Linux was no): a large-bin request, which made malloc consolidate the
/// small chunks the objects of the read before had freed, 2.5% of the backlink phase's
/// instructions in `malloc_consolidate` alone (callgrind, scale 0.1).
struct PrefixKeyVersionStack {
    private var storage: (SIMD64<UInt64>, SIMD64<UInt64>, SIMD64<UInt64>, SIMD64<UInt64>) = (.zero, .zero, .zero, .zero)

    init() {}

    /// Calls `body` with the room as a buffer of 128 versions.
    mutating func withBuffer<R>(_ body: (UnsafeMutableBufferPointer<PrefixKeyVersion>) throws -> R) rethrows -> R {
        try withUnsafeMutableBytes(of: &storage) { raw in try body(raw.bindMemory(to: PrefixKeyVersion.self)) }
    }
}

/// The versions a prefix scan collects: in a stack buffer while they fit, then on the heap.
struct PrefixKeyVersions {
    private let stack: UnsafeMutableBufferPointer<PrefixKeyVersion>
    private var count = 0
    private var heap: [PrefixKeyVersion]?

    init(stack: UnsafeMutableBufferPointer<PrefixKeyVersion>) { self.stack = stack }

    var last: PrefixKeyVersion? {
        if let heap { return heap.last }
        return count == 0 ? nil : stack[count - 1]
    }

    mutating func append(_ v: PrefixKeyVersion) {
        if heap != nil {
            heap!.append(v)
        } else if count < stack.count {
            (stack.baseAddress! + count).initialize(to: v)
            count += 1
        } else {
            var spilled = Array(stack[0..<count])
            spilled.reserveCapacity(count * 4)
            spilled.append(v)
            heap = spilled
        }
    }

    /// Calls `body` with every version collected, in one buffer it may reorder.
    mutating func withBuffer<R>(_ body: (UnsafeMutableBufferPointer<PrefixKeyVersion>) throws -> R) rethrows -> R {
        if heap != nil { return try heap!.withUnsafeMutableBufferPointer { try body($0) } }
        return try body(UnsafeMutableBufferPointer(rebasing: stack[0..<count]))
    }
}
