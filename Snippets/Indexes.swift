// Indexes: @Index for fast conditions, @Unique for uniqueness and one-read lookups.
import Foundation
import Strata

@Entity
final class User {
    var id: Id = 0
    @Unique var email = ""       // a second user with the same email: put throws, writes nothing
    @Index var age = 0           // ==, <, between, isIn read the index: O(log n + k)
    @Index(caseInsensitive: true) var city = ""      // case-insensitive ==, startsWith read it
    var name = ""
}

@Entity
final class Visit {
    var id: Id = 0
    @Index(with: \Visit.day) var user: ToOne<User> = nil   // composite: user, then day
    var day = 0
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
ada.city = "Berlin"
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
let berliners = try users.query { User.city.isEqual(to: "BERLIN", caseSensitive: false) }.build().count()

let visits = store.box(for: Visit.self)
for day in 1...30 {
    let v = Visit()
    v.user.target = ada
    v.day = day
    try visits.put(v)
}
// One range of the composite index: Ada's visits after day 25.
let lately = try visits.query { Visit.user == ada && Visit.day > 25 }.build().count()
print(thirties.count, byEmail?.age ?? 0, berliners, lately)
// snippet.hide
guard thirties.map(\.id) == [ada.id], byEmail?.id == ada.id, again.id == 0, berliners == 1, lately == 5, try users.count() == 1 else { fatalError("Indexes: unexpected result") }
store.close()
