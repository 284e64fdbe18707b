import ArgumentParser
import StrataStorage

/// `strata backup STORE DEST`: a backup of a store no process is writing. Read-only on STORE.
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Write a backup of a store into a directory: a complete store that opens as it is.",
        discussion: """
        Segments are hard-linked when DEST is on the store's file system (--copy copies them, so
        that the backup shares no disk blocks with the store) and copied otherwise. DEST must be
        missing, empty, or hold an earlier backup of the store that nobody opened and changed
        since: then only what is new is copied, and the earlier backup is replaced only once the
        new one is complete. An interrupted backup never leaves something that opens as a
        store. Opens STORE read-only, so it needs no process to be writing it; an app backs up
        its open store with `Store.backup(toDirectoryPath:)`. Shows progress on standard error.

        Examples:
          strata backup /tmp/shop /backups/shop
          strata backup /tmp/shop /mnt/usb/shop --copy --json
        """)

    @OptionGroup var store: StoreArguments

    @Argument(help: "The backup directory.")
    var destination: String

    @Flag(help: "Copy every segment instead of hard-linking it.")
    var copy = false

    func run() throws {
        try reportingFailures(directory: store.directory) {
            try checkStoreDirectory(store.directory)
            var options = EngineOptions()
            options.readOnly = true
            options.createIfMissing = false
            let engine = try Engine.open(directory: store.directory, options: options)
            defer { engine.close() }
            let report = try runWithProgress(label: "backing up", json: store.json, linksFiles: !copy) { options in
                try engine.backup(toDirectoryPath: destination, options: options)
            }
            printReport(report, verb: "backed up", to: destination, json: store.json)
        }
    }
}

/// `strata restore BACKUP DEST`: a store of a backup's state, after checking the backup.
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a backup into an empty directory, after checking every checksum of it.",
        discussion: """
        A damaged backup is reported (exit status 2, naming the file) and nothing is written.
        Segments are copied (--link hard-links them instead). DEST must be missing or empty, or
        hold an interrupted restore. The backup is left as it was.

        Examples:
          strata restore /backups/shop /tmp/shop-restored
          strata restore /backups/shop /tmp/shop-restored --json
        """)

    @Argument(help: "The backup directory (written by `strata backup` or `Store.backup`).")
    var backup: String

    @Argument(help: "The directory to restore into.")
    var destination: String

    @Flag(help: "Hard-link segments instead of copying them.")
    var link = false

    @Flag(help: "Write machine-readable JSON instead of text.")
    var json = false

    func run() throws {
        try reportingFailures(directory: backup) {
            try checkStoreDirectory(backup)
            let report = try runWithProgress(label: "restoring", json: json, linksFiles: link) { options in
                try Engine.restoreBackup(at: backup, toDirectoryPath: destination, options: options)
            }
            printReport(report, verb: "restored", to: destination, json: json)
        }
    }
}

/// Runs a backup or restore with a progress display (unless `json`); a destination that cannot
/// take it becomes one plain line naming it.
private func runWithProgress(label: String, json: Bool, linksFiles: Bool,
                             _ body: (BackupOptions) throws -> BackupReport) throws -> BackupReport {
    let display = json ? nil : ProgressDisplay(label: label)
    var options = BackupOptions()
    options.linksFiles = linksFiles
    options.progress = { p in
        display?.update(done: p.bytesDone, total: p.bytesTotal, seconds: p.seconds)
        return true
    }
    do {
        let report = try body(options)
        display?.finish()
        return report
    } catch let StorageError.destinationInUse(path, reason) {
        display?.finish()
        throw ToolFailure(message: "\(path) cannot be used: \(reason)")
    }
}

private func printReport(_ r: BackupReport, verb: String, to destination: String, json: Bool) {
    if json {
        print(JSONValue.object([
            ("destination", .string(destination)), ("sequence", .uint(r.sequence)), ("segments", .int(Int64(r.segments))),
            ("filesLinked", .int(Int64(r.filesLinked))), ("filesCopied", .int(Int64(r.filesCopied))),
            ("filesReused", .int(Int64(r.filesReused))), ("bytesLinked", .uint(r.bytesLinked)),
            ("bytesCopied", .uint(r.bytesCopied)), ("bytesReused", .uint(r.bytesReused)), ("seconds", .double(r.seconds)),
        ]).text)
    } else {
        print("\(verb) to \(destination) up to sequence \(r.sequence) in \(HumanReadable.seconds(r.seconds))")
        print("\(r.segments) segments: \(r.filesLinked) linked (\(HumanReadable.bytes(r.bytesLinked))), \(r.filesCopied) copied (\(HumanReadable.bytes(r.bytesCopied))), \(r.filesReused) kept from the earlier backup (\(HumanReadable.bytes(r.bytesReused)))")
    }
}
