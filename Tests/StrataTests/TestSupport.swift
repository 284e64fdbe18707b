import Foundation
import Strata
import StrataStorage
import Testing
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

/// A store's key spaces opened read-only at the engine level: what the tests that compare
/// stored bytes with SPEC.md read. Close `engine` when done.
struct StoredBytes {
    let engine: Engine
    let objects: KeySpace
    let indexes: KeySpace?
    let meta: KeySpace

    init(directory: String) throws {
        var options = EngineOptions()
        options.readOnly = true
        engine = try Engine.open(directory: directory, options: options)
        objects = try #require(engine.existingKeySpace(named: "objects") as KeySpace?)
        indexes = engine.existingKeySpace(named: "indexes")
        meta = try #require(engine.existingKeySpace(named: "meta") as KeySpace?)
    }
}
