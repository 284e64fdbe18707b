import Foundation
import Strata
import Testing

/// A batched get of ids close together is read by one scan of their key range: it must return
/// exactly what a get per id returns, whatever lies in the range (objects never stored, removed
/// ones, updates in the memtable over older versions in segments) and whatever snapshot reads it.
@Suite struct DenseReadTests {
    @Test func aDenseBatchedGetReturnsWhatSingleGetsReturn() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let notes = store.box(for: Note.self)
        // Small memtables: these writes end up over several flushed segments and the memtable.
        let put = (0..<3_000).map { Note(text: "note \($0) " + String(repeating: "x", count: $0 % 40)) }
        try notes.put(put)
        try notes.remove(Array(stride(from: Id(7), through: 3_000, by: 7)))
        for id in stride(from: Id(5), through: 3_000, by: 11) where id % 7 != 0 {
            var n = try #require(try notes.get(id))
            n.text = "updated \(id)"
            try notes.put(n)
        }
        func singly(_ ids: [Id]) throws -> [String] { try ids.compactMap { try notes.get($0)?.text } }
        let cases: [[Id]] = [
            Array(1...3_000),                                   // everything, with the removed ones
            Array(100...160),                                   // a run
            Array(stride(from: Id(1), through: 2_000, by: 2)),  // every other id
            Array(2_990...3_100),                               // past the last stored id
            Array(1...20) + Array(25...40),                     // a gap
            Array(stride(from: Id(7), through: 700, by: 7)) + [701],   // almost all removed
        ]
        for ids in cases {
            #expect(try notes.get(ids).map(\.text) == (try singly(ids)), "\(ids.first!)…\(ids.last!), \(ids.count) ids")
            #expect(try notes.getDictionary(ids).mapValues(\.text) == Dictionary(uniqueKeysWithValues: try ids.compactMap { id in try notes.get(id).map { (id, $0.text) } }))
        }
    }

    @Test func aDenseBatchedGetInAReadTransactionSeesItsSnapshot() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let notes = store.box(for: Note.self)
        try notes.put((0..<500).map { Note(text: "v1 \($0)") })
        let ids = Array(Id(1)...500)
        try store.runInReadOnlyTransaction {
            // A writer on another thread changes and removes objects of the range meanwhile.
            let writer = Thread {
                try! notes.put((1...250).map { Note(id: Id($0), text: "v2 \($0)") })
                try! notes.remove(Array(Id(251)...300))
            }
            writer.start()
            while !writer.isFinished { usleep(1_000) }
            let seen = try notes.get(ids).map(\.text)
            #expect(seen == (0..<500).map { "v1 \($0)" })
        }
        let after = try notes.get(ids)
        #expect(after.count == 450)
        #expect(after.first?.text == "v2 1")
    }
}
