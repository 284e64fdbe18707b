import Foundation
import Strata
import StrataStorage
import StrataTestSupport
import Testing

/// `Store.openReplica`: a store that follows another's archive, its objects, relations and
/// change notifications as on the primary (issue 56).
@Suite struct StoreReplicaTests {
    static func primaryOptions(_ archive: String) -> StoreOptions {
        var options = StoreOptions.testing(memtableBytes: 16 << 10)
        var a = ArchiveOptions(target: DirectoryArchiveTarget(path: archive))
        a.interval = 0.01
        options.archive = a
        return options
    }

    @Test func aReplicaHasThePrimarysGraphAndRefusesWrites() throws {
        let dir = TemporaryDirectory(), archive = TemporaryDirectory(), replicaDir = TemporaryDirectory()
        let primary = try Store(directoryPath: dir.path, options: Self.primaryOptions(archive.path))
        defer { primary.close() }
        let ann = Buyer(name: "Ann")
        try primary.box(for: Purchase.self).put([Purchase(summary: "p1", buyer: ann), Purchase(summary: "p2", buyer: ann)])
        try primary.archiveNow()
        let replica = try Store.openReplica(following: DirectoryArchiveTarget(path: archive.path), directoryPath: replicaDir.path,
                                            options: .testing(), pollInterval: 0.02)
        defer { replica.close() }
        #expect(try replica.box(for: Purchase.self).count() == 2)
        for round in 1...3 {
            try primary.runInTransaction {
                let b = Buyer(name: "b\(round)")
                try primary.box(for: Purchase.self).put((0..<round).map { Purchase(summary: "r\(round)-\($0)", buyer: b) })
            }
            try primary.archiveNow()
            try replica.replicaCatchUp()
            #expect(try replica.box(for: Buyer.self).count() == 1 + round)
            #expect(try replica.box(for: Purchase.self).count() == 2 + round * (round + 1) / 2)
            for b in try replica.box(for: Buyer.self).all() where b.name != "Ann" {
                #expect(b.purchases.count == Int(b.name.dropFirst())!)
            }
        }
        #expect(try replica.verifyGraph().problems.isEmpty)
        #expect(throws: StrataError.self) { try replica.box(for: Buyer.self).put(Buyer(name: "x")) }
        #expect(replica.replicaStatus()?.appliedSequence ?? 0 > 0)
    }

    /// `changes(of:)` on a replica reports what the primary's commits did, as on the primary.
    @Test func changesFireOnTheReplica() async throws {
        let dir = TemporaryDirectory(), archive = TemporaryDirectory(), replicaDir = TemporaryDirectory()
        let primary = try Store(directoryPath: dir.path, options: Self.primaryOptions(archive.path))
        defer { primary.close() }
        try primary.box(for: Buyer.self).put(Buyer(name: "seed"))
        try primary.archiveNow()
        let replica = try Store.openReplica(following: DirectoryArchiveTarget(path: archive.path), directoryPath: replicaDir.path,
                                            options: .testing(), pollInterval: 0.01)
        defer { replica.close() }
        var changes = try replica.changes(of: Buyer.self, Purchase.self).makeAsyncIterator()

        let ann = Buyer(name: "Ann")
        let p = Purchase(summary: "p", buyer: ann)
        try primary.box(for: Purchase.self).put(p)
        try primary.archiveNow()
        var c = try #require(await changes.next())
        #expect(c[Buyer.self].inserted == [ann.id])
        #expect(c[Purchase.self].inserted == [p.id])

        p.summary = "p2"
        try primary.box(for: Purchase.self).put(p)
        try primary.archiveNow()
        c = try #require(await changes.next())
        #expect(c[Purchase.self].updated == [p.id])

        try primary.box(for: Buyer.self).remove(ann.id)
        try primary.archiveNow()
        c = try #require(await changes.next())
        #expect(c[Buyer.self].removed == [ann.id])
        #expect(c[Purchase.self].updated == [p.id])
        try replica.replicaCatchUp()
        let copy = try #require(try replica.box(for: Purchase.self).get(p.id))
        #expect(copy.summary == "p2")
        #expect(copy.buyer.targetId == nil)
        #expect(try replica.box(for: Buyer.self).get(ann.id) == nil)
    }
}
