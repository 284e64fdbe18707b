// Backups: a complete copy of a store while it runs, incremental, restored after a check;
// a continuous archive, restored as of any moment.
import Foundation
import Strata

@Entity
final class Invoice {
    var id: Id = 0
    var number = ""
    var total = 0
}

// snippet.hide
let root = FileManager.default.temporaryDirectory.appendingPathComponent("strata-snippet-backups-\(getpid())").path
defer { try? FileManager.default.removeItem(atPath: root) }
let path = root + "/books", backupPath = root + "/backup", restoredPath = root + "/restored"
let archivePath = root + "/archive", pastPath = root + "/past"
// snippet.show
let store = try Store(directoryPath: path)
let invoices = store.box(for: Invoice.self)
for n in 1...100 {
    let invoice = Invoice()
    invoice.number = "INV-\(n)"
    invoice.total = n * 10
    try invoices.put(invoice)
}

// Other threads may keep writing: the backup holds every transaction committed before the call.
var options = BackupOptions()
options.progress = { p in
    print("\(p.filesDone)/\(p.filesTotal) files, \(p.bytesDone)/\(p.bytesTotal) bytes")
    return true        // false cancels: the backup directory is left as it was
}
let first = try store.backup(toDirectoryPath: backupPath, options: options)

// Later backups into the same directory copy only the new segments.
let late = Invoice()
late.number = "INV-101"
try invoices.put(late)
let second = try store.backup(toDirectoryPath: backupPath)
print("sequence \(first.sequence) → \(second.sequence), \(second.filesReused) files kept")
store.close()

// Restoring checks every checksum of the backup first, then writes a plain store.
try Store.restoreBackup(at: backupPath, toDirectoryPath: restoredPath)
let restored = try Store(directoryPath: restoredPath)
let count = try restored.box(for: Invoice.self).count()
print("restored \(count) invoices")

// A continuous archive: the log shipped about every second, in the background.
var archived = StoreOptions()
archived.archive = ArchiveOptions(target: DirectoryArchiveTarget(path: archivePath))
let books = try Store(directoryPath: path, options: archived)
let before = Date()
let mistake = try books.box(for: Invoice.self).removeAll()     // oops
try books.archiveNow()                                        // or wait a second
books.close()
// The store as it was just before the mistake.
try Store.restoreArchive(from: DirectoryArchiveTarget(path: archivePath), toDirectoryPath: pastPath, at: before)
let past = try Store(directoryPath: pastPath)
print("removed \(mistake); the archive still has \(try past.box(for: Invoice.self).count())")
// snippet.hide
guard count == 101, second.sequence > first.sequence, try past.box(for: Invoice.self).count() == 101 else { fatalError("Backups: unexpected result") }
restored.close()
past.close()
