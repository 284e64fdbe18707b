import Foundation
import Strata

/// A fresh directory under the system temp dir, removed when the value is dropped.
final class TemporaryDirectory {
    let path: String

    init(_ name: String = "strata-objects") {
        path = NSTemporaryDirectory() + "\(name)-\(UUID().uuidString)"
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

extension StoreOptions {
    /// Small engine sizes so that flushes and compactions happen with little data; no fsync,
    /// which the engine's own tests cover.
    static func testing(memtableBytes: Int = 64 << 10) -> StoreOptions {
        var o = StoreOptions()
        o.durability = .none
        o.engine.memtableBytes = memtableBytes
        o.engine.targetSegmentBytes = 64 << 10
        return o
    }
}

/// A test-local error for rollback tests.
struct Boom: Error, Equatable {}
