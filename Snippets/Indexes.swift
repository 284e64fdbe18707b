// Indexes: @Index for fast conditions, @Unique for uniqueness and one-read lookups.
import Foundation
import Strata

@Entity
final class User {
    var id: Id = 0
    @Unique var email = ""       // a second user with the same email: put throws, writes nothing
    @Index var age = 0           // ==, <, between, isIn read the index: O(log n + k)
    var name = ""
}

// snippet.hide
let path = FileManager.default.temporaryDirectory.appendingPathComponent("strata-snippet-\(getpid())").path
defer { try? FileManager.default.removeItem(atPath: path) }
// snippet.show
let store = try Store(directoryPath: path)
let users = store.box(for: User.self)
let ada = User()
ada.email = "ada@example.com"
ada.age = 36
try users.put(ada)

let again = User()
again.email = "ada@example.com"
do {
    try users.put(again)
} catch {
    // `put` throws StrataError, which says which object holds the value.
    if case let .uniqueViolation(entity, property, _, existing) = error {
        print("\(entity).\(property) already held by \(existing)")
    }
}

let thirties = try users.query { User.age.between(30, 39) }.build().find()
let byEmail = try users.query { User.email == "ada@example.com" }.build().findUnique()   // two point reads
print(thirties.count, byEmail?.age ?? 0)
// snippet.hide
guard thirties.map(\.id) == [ada.id], byEmail?.id == ada.id, again.id == 0, try users.count() == 1 else { fatalError("Indexes: unexpected result") }
store.close()
