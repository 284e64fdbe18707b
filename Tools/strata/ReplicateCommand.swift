import ArgumentParser
import Dispatch
import Foundation
import Strata
import StrataStorage

/// `strata replicate SOURCE DIR`: keeps a read replica of the store an archive holds
/// (SPEC.md §3.4) in DIR, until interrupted, caught up (`--once`) or at a sequence.
struct ReplicateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replicate",
        abstract: "Keep a read replica that follows a store's continuous archive.",
        discussion: """
        SOURCE is an archive directory or s3://bucket/prefix (the endpoint from --endpoint or
        AWS_ENDPOINT_URL, the keys from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY). The first
        run restores the archive's latest commit into DIR; every run then applies the commits the
        primary ships, whole transactions in order, and DIR goes on where it stopped at the next
        run. A line reports progress as it is made (at most every --report-every seconds).
        Ctrl-C or SIGTERM closes the replica cleanly (exit 0). A replica that cannot go on (a
        gap or damage in the archive, a primary that lost commits the replica applied) exits 2
        with the reason, or, with --rebuild, starts over from the archive's latest state.

        Examples:
          strata replicate s3://backups/shop /srv/shop-replica --endpoint http://127.0.0.1:7480
          strata replicate /archive/shop /tmp/shop-copy --once
          strata replicate /archive/shop /tmp/shop-copy --until-sequence 120000 --json
        """)

    @Argument(help: "The archive: a directory or s3://bucket/prefix.")
    var source: String

    @Argument(help: "The replica's directory (created and restored at the first run).")
    var directory: String

    @Option(help: "The S3 endpoint for an s3:// SOURCE (default: AWS_ENDPOINT_URL, else AWS's for AWS_REGION).")
    var endpoint: String?

    @Option(help: "The store to follow (its id in hex) when the archive holds several.")
    var store: String?

    @Option(name: .customLong("poll-interval"), help: "Seconds between looks at the archive.")
    var pollInterval: Double = 1

    @Option(name: .customLong("report-every"), help: "Seconds at least between two progress lines.")
    var reportEvery: Double = 5

    @Flag(help: "Apply what the archive holds now, then stop.")
    var once = false

    @Option(name: .customLong("until-sequence"), help: "Stop once every commit up to this sequence number is applied.")
    var untilSequence: UInt64?

    @Flag(help: "When the replica cannot go on, remove it and restore the archive's latest state again.")
    var rebuild = false

    @Flag(help: "Write one JSON object a line instead of text.")
    var json = false

    @Option(name: .customLong("key-file"),
            help: "A file holding the encrypted store's 32-byte key (raw, or 64 hex digits). Never give a key on the command line.")
    var keyFile: String?

    func validate() throws {
        guard pollInterval.isFinite, pollInterval > 0, pollInterval <= 3600 else { throw ValidationError("--poll-interval must be in (0, 3600] seconds") }
        guard reportEvery.isFinite, reportEvery >= 0 else { throw ValidationError("--report-every must be 0 or more seconds") }
        if once && untilSequence != nil { throw ValidationError("give --once or --until-sequence, not both") }
        if let store, UInt64(store, radix: 16) == nil { throw ValidationError("--store \(store) is not a store id (hexadecimal)") }
    }

    func run() throws {
        try reportingFailures(directory: directory, json: json) {
            let target = try ArchiveSource.target(source, endpoint: endpoint)
            // Signals become a semaphore the loop below waits on, so that the replica is
            // closed by the thread that opened it, never from a signal handler.
            let interrupted = DispatchSemaphore(value: 0)
            let signals = [SIGINT, SIGTERM].map { number in
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { interrupted.signal() }
                source.resume()
                return source
            }
            defer { signals.forEach { $0.cancel() } }
            var replica = try open(target)
            defer { replica.close() }
            var reported: UInt64?
            var lastReport = -Double.infinity
            func report(_ status: ReplicaStatus, event: String, force: Bool = false) {
                let now = ProcessInfo.processInfo.systemUptime
                guard force || (status.appliedSequence != reported && now - lastReport >= reportEvery) else { return }
                reported = status.appliedSequence
                lastReport = now
                // Written at once, not buffered: whoever watches the replica reads each line
                // as it is made, also from a pipe or a file.
                FileHandle.standardOutput.write(Data((line(status, event: event) + "\n").utf8))
            }
            if let status = replica.replicaStatus() { report(status, event: "opened", force: true) }
            func startOver(_ status: ReplicaStatus, reason: String) throws {
                guard rebuild else { throw ToolFailure(message: "the replica in \(directory) stopped following: \(reason). Run again with --rebuild to start it over from the archive") }
                report(status, event: "rebuilding", force: true)
                replica.close()
                try removeReplica()
                replica = try open(target)
                if let status = replica.replicaStatus() { report(status, event: "rebuilt", force: true) }
            }
            if once {
                let timeout = max(60, pollInterval * 4)
                do {
                    try replica.replicaCatchUp(timeout: timeout)
                } catch {
                    guard let status = replica.replicaStatus(), let reason = status.stoppedBecause else { throw error }
                    try startOver(status, reason: reason)
                    try replica.replicaCatchUp(timeout: timeout)
                }
                if let status = replica.replicaStatus() { report(status, event: "caught up", force: true) }
                return
            }
            while true {
                let tick = min(pollInterval, 0.25)
                if interrupted.wait(timeout: .now() + tick) == .success {
                    if let status = replica.replicaStatus() { report(status, event: "interrupted", force: true) }
                    return
                }
                guard let status = replica.replicaStatus() else { return }
                if let reason = status.stoppedBecause {
                    try startOver(status, reason: reason)
                    continue
                }
                if let untilSequence, status.appliedSequence >= untilSequence {
                    report(status, event: "reached", force: true)
                    return
                }
                report(status, event: "applied")
            }
        }
    }

    private func open(_ target: any ArchiveTarget) throws -> Engine {
        do {
            let key = try keyFile.map(KeyFile.read)
            let storeId = store.flatMap { UInt64($0, radix: 16) }
            var options = EngineOptions()
            options.encryptionKey = key
            let engine = try Engine.openReplica(following: target, directoryPath: directory, options: options,
                                                pollInterval: pollInterval, storeId: storeId)
            // A replica of a store of objects runs with the options its object layer opens a
            // store with, as `strata compact` does: they are not stored, and without them the
            // segments the replica flushes and compacts itself would lose the id layout of its
            // objects and the filters of its edges and indexes. What a store of objects is
            // becomes known once the replica's directory holds one (the first run restores it
            // above); reopened at once, before its follower has applied enough to flush.
            var storeOptions = StoreOptions()
            storeOptions.engine.encryptionKey = key
            var objectOptions = Store.engineOptions(for: storeOptions)
            guard objectOptions.keySpaces.allSatisfy({ engine.existingKeySpace(named: $0) != nil }) else { return engine }
            engine.close()
            objectOptions.keySpaces = []   // a replica's key spaces are the primary's
            return try Engine.openReplica(following: target, directoryPath: directory, options: objectOptions,
                                          pollInterval: pollInterval, storeId: storeId)
        } catch StorageError.notAStore(let path) {
            throw ToolFailure(message: "cannot follow \(source): \(path)")
        } catch let StorageError.archiveOfAnotherStore(ids, reason) {
            throw ToolFailure(message: "\(source): \(reason) (stores \(ids.map { String($0, radix: 16) }.joined(separator: ", "))): name one with --store")
        }
    }

    /// Removes a replica that stopped, and only one: a directory with the replica's position
    /// file in it (never a primary's store given by mistake).
    private func removeReplica() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory)
        guard files.contains("REPLICA") else { throw ToolFailure(message: "\(directory) is not a replica: not removing it") }
        for name in files { try FileManager.default.removeItem(atPath: (directory as NSString).appendingPathComponent(name)) }
    }

    private func line(_ s: ReplicaStatus, event: String) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let time = s.lastAppliedCommitTime.map { formatter.string(from: Date(timeIntervalSince1970: $0)) }
        if json {
            return JSONValue.object([
                ("event", .string(event)), ("appliedSequence", .uint(s.appliedSequence)),
                ("generation", .uint(s.generationOrdinal)), ("lastCommitTime", time.map { .string($0) } ?? .null),
                ("lagSeconds", s.lastApplyLag.map { .double($0) } ?? .null), ("rounds", .int(Int64(s.rounds))),
                ("lastError", s.lastError.map { .string($0) } ?? .null), ("stoppedBecause", s.stoppedBecause.map { .string($0) } ?? .null),
            ]).text
        }
        var text = "\(event): sequence \(s.appliedSequence) of generation \(s.generationOrdinal)"
        if let time { text += ", committed \(time)" }
        if let lag = s.lastApplyLag { text += ", applied \(HumanReadable.seconds(lag)) later" }
        if let error = s.lastError { text += " (last look at the archive failed: \(error))" }
        if let reason = s.stoppedBecause { text += " (stopped: \(reason))" }
        return text
    }
}
