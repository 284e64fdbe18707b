import Foundation
import Strata
@_exported import StrataTestSupport

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
