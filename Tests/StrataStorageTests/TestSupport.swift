import Foundation
import StrataStorage
@_exported import StrataTestSupport

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
func string(_ b: [UInt8]) -> String { String(decoding: b, as: UTF8.self) }

/// Zero-padded decimal key, like db_bench's.
func key(_ i: Int, width: Int = 8) -> [UInt8] {
    let s = String(i)
    return bytes(String(repeating: "0", count: max(0, width - s.count)) + s)
}

extension Engine {
    func put(_ k: String, _ v: String, in ks: KeySpace, durability: Durability? = nil) throws {
        var b = WriteBatch()
        b.put(bytes(k), bytes(v), in: ks)
        try write(b, durability: durability)
    }

    func delete(_ k: String, in ks: KeySpace) throws {
        var b = WriteBatch()
        b.delete(bytes(k), in: ks)
        try write(b)
    }

    func getString(_ k: String, in ks: KeySpace, snapshot: Snapshot? = nil) throws -> String? {
        try get(bytes(k), in: ks, snapshot: snapshot).map(string)
    }

    func keys(_ ks: KeySpace, reverse: Bool = false, lower: String? = nil, upper: String? = nil) throws -> [String] {
        try scan(ks, lowerBound: lower.map(bytes), upperBound: upper.map(bytes), reverse: reverse).map { string($0.key) }
    }
}

extension EngineOptions {
    /// Options for tests: an optional file system (in memory, or faults over one) and small sizes, so flushes,
    /// many blocks and compactions happen with little data.
    static func testing(_ fs: (any FileSystem)? = nil, memtableBytes: Int? = nil, blockBytes: Int? = nil,
                        targetSegmentBytes: Int? = nil) -> EngineOptions {
        var o = EngineOptions()
        if let fs { o.fileSystem = fs }
        if let memtableBytes { o.memtableBytes = memtableBytes }
        if let blockBytes { o.blockBytes = blockBytes }
        if let targetSegmentBytes { o.targetSegmentBytes = targetSegmentBytes }
        return o
    }
}
