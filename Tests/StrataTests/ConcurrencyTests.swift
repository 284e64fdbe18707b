import Foundation
import Strata
import StrataStorage
import StrataTestSupport
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

    /// Reads outside any transaction all run in the store's one latest transaction, shared by
    /// every thread: single gets, batched gets, unique lookups and counts on several threads
    /// while a writer rewrites every object, round after round. Each object is written whole
    /// (`name` is always `v` and its `age`), so a read must never see one half-written, a lookup
    /// by a value that never changes must always find its holder, and the count never moves.
    /// Run under TSan too.
    @Test func readsOutsideAnyTransactionShareTheLatestTransaction() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing(memtableBytes: 32 << 10))
        let accounts = store.box(for: Account.self)
        let n = 200
        let ids = try accounts.put((0..<n).map { Account(email: "a\($0)@x", age: 0, name: "v0") })
        let failures = LockedValue<[String]>([])
        let writerDone = LockedValue(false)
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            do {
                for round in 1...40 {
                    try store.runInTransaction {
                        for a in try accounts.get(ids) {
                            a.age = round
                            a.name = "v\(round)"
                            try accounts.put(a)
                        }
                    }
                }
            } catch {
                failures.withLock { $0.append("writer: \(error)") }
            }
            writerDone.withLock { $0 = true }
        }
        for reader in 0..<3 {
            DispatchQueue.global().async(group: group) {
                var rng = SplitMix64(state: UInt64(reader))
                var reads = 0
                do {
                    let byEmail = try accounts.query { Account.email == "" }.build()
                    while !writerDone.withLock({ $0 }) || reads == 0 {
                        let i = rng.below(n)
                        if let a = try accounts.get(ids[i]), a.name != "v\(a.age)" {
                            failures.withLock { $0.append("reader \(reader): get saw \(a.name) with age \(a.age)") }
                        }
                        for a in try accounts.get(Array(ids[i...].prefix(17))) where a.name != "v\(a.age)" {
                            failures.withLock { $0.append("reader \(reader): batched get saw \(a.name) with age \(a.age)") }
                        }
                        try byEmail.setParameter(Account.email, to: "a\(i)@x")
                        let found = try byEmail.findFirst()
                        if found?.id != ids[i] || found.map({ $0.name != "v\($0.age)" }) == true {
                            failures.withLock { $0.append("reader \(reader): lookup of a\(i)@x found \(String(describing: found?.id))") }
                        }
                        let count = try accounts.count()
                        if count != n { failures.withLock { $0.append("reader \(reader): count \(count)") } }
                        reads += 1
                    }
                } catch {
                    failures.withLock { $0.append("reader \(reader): \(error)") }
                }
            }
        }
        group.wait()
        #expect(failures.withLock { $0 } == [])
        #expect(try accounts.get(ids).allSatisfy { $0.age == 40 && $0.name == "v40" })
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
