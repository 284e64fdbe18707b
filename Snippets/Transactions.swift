// Transactions: atomic groups of writes, savepoints, rollbacks that restore objects, async.
import Foundation
import Strata

@Entity
final class Account {
    var id: Id = 0
    var owner = ""
    var balance = 0
}

struct Refused: Error {}

// snippet.hide
let path = FileManager.default.temporaryDirectory.appendingPathComponent("strata-snippet-\(getpid())").path
defer { try? FileManager.default.removeItem(atPath: path) }
// snippet.show
let store = try Store(directoryPath: path)
let accounts = store.box(for: Account.self)
let a = Account(), b = Account()
a.owner = "a"; a.balance = 100
b.owner = "b"
try accounts.put([a, b])

// Everything in the closure commits together, or not at all.
try store.runInTransaction {
    a.balance -= 30
    b.balance += 30
    try accounts.put([a, b])
    // A nested transaction is a savepoint: its throw undoes it alone.
    do {
        try store.runInTransaction {
            let c = Account()
            c.owner = "c"
            try accounts.put(c)
            throw Refused()
        }
    } catch is Refused {}
}
print(try accounts.count())                          // 2: the savepoint's account is gone

// A rolled-back put gives a new object's id back (0), so a retry writes it again.
let d = Account()
d.owner = "d"
do {
    try store.runInTransaction {
        try accounts.put(d)
        throw Refused()
    }
} catch is Refused {}
print(d.id)                                          // 0

// From async code: the transaction, its fsync included, runs off the caller's thread.
let n = try await store.read { tx in try tx.box(for: Account.self).count() }
// snippet.hide
guard try accounts.count() == 2, d.id == 0, n == 2, try accounts.get(b.id)?.balance == 30 else { fatalError("Transactions: unexpected result") }
store.close()
