/// A growable byte buffer in memory it owns, whose contents can be handed out as an
/// `UnsafeRawBufferPointer` that stays valid until the buffer is next changed (what an
/// iterator's `key` and `value` promise). Arrays cannot promise that for a pointer taken out of
/// `withUnsafeBytes`.
final class OwnedBytes {
    private var base: UnsafeMutableRawPointer
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int = 64) {
        self.capacity = max(16, capacity)
        base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 8)
    }

    deinit { base.deallocate() }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }
    var isEmpty: Bool { count == 0 }

    func removeAll() { count = 0 }

    func set(_ raw: UnsafeRawBufferPointer) {
        if raw.count > capacity {
            base.deallocate()
            capacity = max(raw.count, capacity * 2)
            base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        }
        if raw.count > 0 { base.copyMemory(from: raw.baseAddress!, byteCount: raw.count) }
        count = raw.count
    }
}
