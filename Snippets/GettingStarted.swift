// Getting started: declare an entity, open a store, put, get, query, close.
import Foundation
import Strata

@Entity
final class Customer {
    var id: Id = 0              // 0 until the first put gives it an id
    var name = ""
    var email: String? = nil
}

// snippet.hide
let path = FileManager.default.temporaryDirectory.appendingPathComponent("strata-snippet-\(getpid())").path
defer { try? FileManager.default.removeItem(atPath: path) }
// snippet.show
let store = try Store(directoryPath: path)            // creates the directory if missing
let customers = store.box(for: Customer.self)

let ada = Customer()
ada.name = "Ada"
let id = try customers.put(ada)                       // ada.id == id now

ada.email = "ada@example.com"
try customers.put(ada)                                // the same id: an update

let found = try customers.get(id)                     // a fresh object, or nil
let named = try customers.query { Customer.name.startsWith("A") }.build().find()
print(found?.email ?? "-", named.count, try customers.count())

store.close()
// snippet.hide
guard found?.email == "ada@example.com", named.map(\.id) == [id] else { fatalError("GettingStarted: unexpected result") }
