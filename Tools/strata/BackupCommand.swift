import ArgumentParser
import Foundation
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
        try reportingFailures(directory: store.directory, json: store.json) {
            try checkStoreDirectory(store.directory)
            var options = EngineOptions()
            options.readOnly = true
            options.createIfMissing = false
            options.encryptionKey = try store.encryptionKey()
            let engine = try Engine.open(directory: store.directory, options: options)
            defer { engine.close() }
            let report = try runWithProgress(label: "backing up", json: store.json, linksFiles: !copy) { options in
                try engine.backup(toDirectoryPath: destination, options: options)
            }
            printReport(report, verb: "backed up", to: destination, json: store.json)
        }
    }
}

/// `strata restore SOURCE DEST`: a store of a backup's state, or of an archive's state at a
/// commit, after checking it.
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a backup, or an archive at a point in time, into an empty directory.",
        discussion: """
        SOURCE is a backup directory (from `strata backup` or `Store.backup`) or a continuous
        archive: a directory (`DirectoryArchiveTarget`) or s3://bucket/prefix (`S3ArchiveTarget`;
        the endpoint from --endpoint or AWS_ENDPOINT_URL, the keys from AWS_ACCESS_KEY_ID and
        AWS_SECRET_ACCESS_KEY). An archive holding several stores needs --store ID. A backup is
        checked (every checksum) before anything is written; segments are copied (--link
        hard-links them). An archive is restored as of its last commit, the last commit at or
        before --sequence N, or the last commit made at or before --at TIME (ISO 8601, e.g.
        2026-12-01T10:00:00Z), and the store written is checked. A damaged or incomplete source
        is reported (exit status 2, naming the file) unless --stop-at-damage asks for the last
        commit before the damage. DEST must be missing or empty, or hold an interrupted restore.
        SOURCE is only read.

        Examples:
          strata restore /backups/shop /tmp/shop-restored
          strata restore /archive/shop /tmp/shop-at-ten --at 2026-12-01T10:00:00Z
          strata restore /archive/shop /tmp/shop-before --sequence 120000 --json
          strata restore s3://backups/shop /tmp/shop-latest --endpoint http://127.0.0.1:7480
        """)

    @Argument(help: "The backup or archive directory.")
    var source: String

    @Argument(help: "The directory to restore into.")
    var destination: String

    @Option(help: "Restore an archive as of the last commit with at most this sequence number.")
    var sequence: UInt64?

    @Option(help: "Restore an archive as of the last commit made at or before this ISO 8601 time.")
    var at: String?

    @Flag(name: .customLong("stop-at-damage"), help: "Restore an archive up to the last commit before damage instead of failing.")
    var stopAtDamage = false

    @Option(help: "The store to restore (its id in hex, as inspect shows it) when the archive holds several.")
    var store: String?

    @Option(help: "The S3 endpoint for an s3:// SOURCE (default: AWS_ENDPOINT_URL, else AWS's for AWS_REGION).")
    var endpoint: String?

    @Flag(help: "Hard-link a backup's segments instead of copying them.")
    var link = false

    @Option(name: .customLong("key-file"),
            help: "A file holding the encrypted store's 32-byte key (raw, or 64 hex digits). Never give a key on the command line.")
    var keyFile: String?

    @Flag(help: "Write machine-readable JSON instead of text.")
    var json = false

    func validate() throws {
        if sequence != nil && at != nil { throw ValidationError("give --sequence or --at, not both") }
        if let at, Self.parseTime(at) == nil { throw ValidationError("--at \(at) is not an ISO 8601 time such as 2026-12-01T10:00:00Z") }
        if let store, UInt64(store, radix: 16) == nil { throw ValidationError("--store \(store) is not a store id (hexadecimal)") }
    }

    static func parseTime(_ text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text) ?? plain.date(from: text)
    }

    func run() throws {
        try reportingFailures(directory: source, json: json) {
            let key = try keyFile.map(KeyFile.read)
            var isDirectory: ObjCBool = false
            let s3 = ArchiveSource.isS3(source)
            guard s3 || (FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory) && isDirectory.boolValue) else {
                throw ToolFailure(message: "no such directory: \(source)")
            }
            if !s3 && FileManager.default.fileExists(atPath: (source as NSString).appendingPathComponent("CURRENT")) {
                if sequence != nil || at != nil || stopAtDamage || store != nil {
                    throw ToolFailure(message: "\(source) is a backup, which holds one state: --sequence, --at, --stop-at-damage and --store apply to archives")
                }
                let report = try runWithProgress(label: "restoring", json: json, linksFiles: link) { options in
                    try Engine.restoreBackup(at: source, toDirectoryPath: destination, options: options, encryptionKey: key)
                }
                printReport(report, verb: "restored", to: destination, json: json)
                return
            }
            let point: ArchivePoint = if let sequence { .sequence(sequence) }
                else if let at, let date = Self.parseTime(at) { .time(secondsSince1970: date.timeIntervalSince1970) }
                else { .latest }
            var options = ArchiveRestoreOptions()
            options.encryptionKey = key
            options.stopsAtDamage = stopAtDamage
            options.storeId = store.flatMap { UInt64($0, radix: 16) }
            let report: ArchiveRestoreReport
            do {
                report = try Engine.restoreArchive(from: try ArchiveSource.target(source, endpoint: endpoint), toDirectoryPath: destination,
                                                   at: point, options: options)
            } catch StorageError.notAStore {
                throw ToolFailure(message: "\(source) is neither a backup (no CURRENT file) nor an archive (no state in it)")
            } catch let StorageError.destinationInUse(path, reason) {
                throw ToolFailure(message: "\(path) cannot be used: \(reason)")
            } catch let StorageError.invalidOption(_, reason) {
                throw ToolFailure(message: "\(source): \(reason)")
            } catch let StorageError.archiveOfAnotherStore(ids, _) {
                throw ToolFailure(message: "\(source) holds the archives of stores \(ids.map { String($0, radix: 16) }.joined(separator: ", ")): name one with --store")
            }
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let time = report.commitTime.map { formatter.string(from: Date(timeIntervalSince1970: $0)) }
            if json {
                print(JSONValue.object([
                    ("destination", .string(destination)), ("sequence", .uint(report.sequence)),
                    ("commitTime", time.map { .string($0) } ?? .null), ("generation", .string(String(report.generation, radix: 16))),
                    ("segments", .int(Int64(report.segments))), ("logBytes", .uint(report.logBytes)),
                    ("stoppedAt", report.stoppedAt.map { .string($0) } ?? .null), ("seconds", .double(report.seconds)),
                ]).text)
            } else {
                print("restored to \(destination) up to sequence \(report.sequence)\(time.map { " (committed \($0))" } ?? "") in \(HumanReadable.seconds(report.seconds))")
                print("\(report.segments) segments, \(HumanReadable.bytes(report.logBytes)) of log replayed")
                if let stopped = report.stoppedAt { print("stopped before damage at \(stopped)") }
            }
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
