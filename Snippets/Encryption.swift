// Encryption at rest: a store, its backups and its archive unreadable without the key.
import Foundation
import Strata

@Entity
final class Patient {
    var id: Id = 0
    var name = ""
    var diagnosis = ""
}

// snippet.hide
let path = FileManager.default.temporaryDirectory.appendingPathComponent("strata-snippet-\(getpid())").path
defer { try? FileManager.default.removeItem(atPath: path) }
func randomKey() -> Data {
    var rng = SystemRandomNumberGenerator()
    return Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) })
}
// snippet.show
// 32 bytes, kept by the app (the keychain, a key service): Strata never writes it down.
let key = randomKey()
do {
    let store = try Store(directoryPath: path, options: StoreOptions(encryptionKey: key))
    let patient = Patient()
    (patient.name, patient.diagnosis) = ("Ada Lovelace", "Hay fever")
    try store.box(for: Patient.self).put(patient)
    store.close()
}

// Without the key, or with another one, the store does not open, and nothing is written.
func refusal(_ options: StoreOptions) -> String {
    do {
        try Store(directoryPath: path, options: options).close()
        return "opened"
    } catch {
        return "\(error)"   // StrataError.encryptionKeyRequired, StrataError.wrongEncryptionKey
    }
}
print(refusal(StoreOptions()))                            // the store is encrypted: open it with its key …
print(refusal(StoreOptions(encryptionKey: randomKey())))  // the store is encrypted with another key

// Rotating the key rewrites every file; a crash at any moment leaves the old key or the new.
let newKey = randomKey()
try Store.changeEncryptionKey(directoryPath: path, from: key, to: newKey)
let store = try Store(directoryPath: path, options: StoreOptions(encryptionKey: newKey))
print(try store.box(for: Patient.self).all().map(\.name))   // ["Ada Lovelace"]
store.close()
