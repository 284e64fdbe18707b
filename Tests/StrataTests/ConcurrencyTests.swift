import Foundation
import Strata
import StrataStorage
import Testing

@Suite struct ConcurrencyTests {
    /// Readers on several threads while one writer commits transactions that each keep an
    /// invariant (every note of a batch has the same text, and batches are whole): a reader must
    /// never see half a transaction. Run under TSan too (`swift test --sanitize=thread`).
    @Test func readersSeeWholeTransactionsWhileAWriterWrites() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing(memtableBytes: 32 << 10))
        let notes = store.box(for: Note.self)
        let batchSize = 20
        let rounds = 60
        let failures = LockedValue<[String]>([])
        let writerDone = LockedValue(false)

        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            do {
                for round in 0..<rounds {
                    try store.runInTransaction {
                        if round > 0 {
                            // Rewrite the previous batch and add a new one, atomically.
                            let previous = try notes.all()
                            for var n in previous { n.text = "round \(round)"; try notes.put(&n) }
                        }
                        try notes.put((0..<batchSize).map { _ in Note(text: "round \(round)") })
                    }
                }
            } catch {
                failures.withLock { $0.append("writer: \(error)") }
            }
            writerDone.withLock { $0 = true }
        }
        for reader in 0..<3 {
            DispatchQueue.global().async(group: group) {
                var reads = 0
                while !writerDone.withLock({ $0 }) || reads == 0 {
                    do {
                        let (count, texts) = try store.runInReadOnlyTransaction {
                            (try notes.count(), Set(try notes.all().map(\.text)))
                        }
                        if count % batchSize != 0 || texts.count > 1 {
                            failures.withLock { $0.append("reader \(reader) saw \(count) notes with texts \(texts)") }
                        }
                        if let first = try notes.get(1), !first.text.hasPrefix("round") {
                            failures.withLock { $0.append("reader \(reader) read \(first.text)") }
                        }
                    } catch {
                        failures.withLock { $0.append("reader \(reader): \(error)") }
                    }
                    reads += 1
                }
            }
        }
        group.wait()
        #expect(failures.withLock { $0 } == [])
        #expect(try notes.count() == batchSize * rounds)
        #expect(Set(try notes.all().map(\.text)) == ["round \(rounds - 1)"])
    }

    /// Writers on several threads: transactions are serialised, none is lost, ids are unique.
    @Test func concurrentWritersAreSerialised() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let notes = store.box(for: Note.self)
        let ids = LockedValue<[Id]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for i in 0..<50 {
                if let id = try? notes.put(Note(text: "\(worker)-\(i)")) { ids.withLock { $0.append(id) } }
            }
        }
        let all = ids.withLock { $0 }
        #expect(all.count == 200 && Set(all).count == 200)
        #expect(try notes.count() == 200)
    }
}
