import Foundation
@testable import StrataStorage
import Strata
import StrataTestSupport
import Testing

/// Stores whose objects were flushed in an earlier segment format (3: no id blocks; 4: id blocks
/// whose entries carry no checksum, read through their cached blocks) open and read the same
/// under the current format, objects and relations both ways, and keep doing so once
/// compaction has rewritten them in format 5 (id blocks read an entry at a time).
@Suite struct EarlierSegmentFormatTests {
    static func check(_ store: Store, buyers: [Id], purchases: [Id]) throws {
        let purchaseBox = store.box(for: Purchase.self)
        let buyerBox = store.box(for: Buyer.self)
        for (i, id) in purchases.enumerated() {
            let p = try #require(try purchaseBox.get(id))
            #expect(p.summary == "purchase \(i)")
            #expect(p.buyer.targetId == buyers[i % buyers.count])
        }
        #expect(try purchaseBox.get(purchases).map(\.summary) == purchases.indices.map { "purchase \($0)" })
        for (b, id) in buyers.enumerated() {
            let buyer = try #require(try buyerBox.get(id))
            #expect(buyer.name == "buyer \(b)")
            #expect(buyer.purchases.count == purchases.count / buyers.count)
        }
        #expect(try purchaseBox.get(purchases.last! + 1) == nil)
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    /// The format version in each segment footer of the store at `path` (SPEC.md §6.5).
    static func segmentFormats(_ path: String) throws -> Set<UInt32> {
        var formats: Set<UInt32> = []
        for name in try FileManager.default.contentsOfDirectory(atPath: path) where name.hasSuffix(FormatConstants.segmentSuffix) {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path + "/" + name))
            let at = bytes.count - FormatConstants.segmentFooterBytes + 48
            formats.insert(bytes[at..<(at + 4)].enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) })
        }
        return formats
    }

    @Test(arguments: [3, 4] as [UInt32])
    func objectsOfAnEarlierSegmentFormatKeepReading(format: UInt32) throws {
        let dir = TemporaryDirectory()
        var old = StoreOptions.testing(memtableBytes: 16 << 10)
        old.engine.segmentFormatVersion = format
        var buyers: [Id] = [], purchases: [Id] = []
        do {
            let store = try Store(directoryPath: dir.path, options: old)
            let made = (0..<40).map { Buyer(name: "buyer \($0)") }
            try store.box(for: Buyer.self).put(made)
            buyers = made.map(\.id)
            let orders = (0..<4_000).map { Purchase(summary: "purchase \($0)", buyer: made[$0 % made.count]) }
            try store.box(for: Purchase.self).put(orders)
            purchases = orders.map(\.id)
            // Into segments (of the old format): a close leaves the last writes in the WAL.
            _ = try store.compact()
            store.close()
        }
        let written = try Self.segmentFormats(dir.path)
        #expect(written == [format], "\(written)")
        let store = try Store(directoryPath: dir.path, options: .testing())
        try Self.check(store, buyers: buyers, purchases: purchases)
        _ = try store.compact()
        try Self.check(store, buyers: buyers, purchases: purchases)
        store.close()
        #expect(try Self.segmentFormats(dir.path) == [FormatConstants.segmentFormatVersion])
        #expect(try Engine.verify(directory: dir.path).isClean)
    }
}
