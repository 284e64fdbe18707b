// Migrations: a versioned plan that takes stored objects to what the app's types now declare.
import Foundation
import Strata

// Version 1 of the app stored a full name and whole euros.
@Entity(name: "Account")
final class AccountV1 {
    var id: Id = 0
    var name = ""
    var balance = 0
    var status = ""
}

// Version 2 splits the name, keeps cents and makes the status an enum.
enum Status: String { case active, frozen, unknown }

@Entity(name: "Account")
final class Account {
    var id: Id = 0
    var first = ""
    var last = ""
    var balance = 0.0
    var status: Status = .unknown
}

// snippet.hide
let path = FileManager.default.temporaryDirectory.appendingPathComponent("strata-snippet-\(getpid())").path
defer { try? FileManager.default.removeItem(atPath: path) }
do {
    let old = try Store(directoryPath: path)
    let a = AccountV1()
    (a.name, a.balance, a.status) = ("Ada Lovelace", 120, "closed")
    try old.box(for: AccountV1.self).put(a)
    old.close()
}
// snippet.show
var options = StoreOptions()
options.migrations = [
    MigrationStep(version: 1, "split the name") { m in
        try m.addProperty("first", to: "Account", type: .string)
        try m.addProperty("last", to: "Account", type: .string)
        try m.updateObjects(of: "Account") { account in
            guard case let .string(full)? = account["name"] else { return }
            let parts = full.split(separator: " ", maxSplits: 1).map(String.init)
            account["first"] = .string(parts.first ?? "")
            account["last"] = .string(parts.count > 1 ? parts[1] : "")
        }
    },
    MigrationStep(version: 2, "cents and a status enum") { m in
        try m.changeType(of: "balance", in: "Account", to: .double)          // built in: Int → Double
        try m.convertToEnum("status", in: "Account", to: Status.self, fallback: .unknown)
    },
]
options.migrationProgress = { p in print("step \(p.version) \(p.name): \(p.phase)") }
let store = try Store(directoryPath: path, options: options)   // runs steps 1 and 2, once
let ada = try store.box(for: Account.self).all()[0]
print(ada.first, ada.last, ada.balance, ada.status)            // Ada Lovelace 120.0 unknown
// snippet.hide
guard ada.first == "Ada", ada.last == "Lovelace", ada.balance == 120, ada.status == .unknown else { fatalError("Migrations: unexpected result") }
store.close()
