import Foundation
import Strata
import StrataStorage
import StrataTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The kill test (RELIABILITY.md §1): a child process runs the graph workload through the public
/// object API and reports each acknowledged transaction; the parent kills it with SIGKILL at a
/// random moment (every other cycle just after a flush or compaction began) and then checks that
/// the store opens, verifies clean, holds every acknowledged transaction and no half of one.
public enum KillTest {
    public struct Report: Sendable {
        public var cycles = 0
        /// Kills that landed while the child had a flush or compaction running.
        public var killsDuringBackgroundWork = 0
        public var acknowledgedTransactions: Int64 = 0
        /// One line per cycle that failed a check.
        public var failures: [String] = []
    }

    /// Runs `cycles` kill cycles with the `strata-torture` executable at `binary`. Stores live
    /// under `directory`, a fresh one every `cyclesPerStore` cycles (so that each check stays
    /// small while stores still grow through several flushes and compactions).
    public static func run(cycles: Int, directory: String, seed: UInt64, binary: String, cyclesPerStore: Int = 10,
                           progress: (Int, Report) -> Void = { _, _ in }) throws -> Report {
        var report = Report()
        var rng = SplitMix64(state: seed)
        for cycle in 0..<cycles {
            let store = "\(directory)/store-\(cycle / cyclesPerStore)"
            let waitForBackgroundWork = cycle % 2 == 0
            let deadline = 0.02 + Double(rng.below(300)) / 1000
            let outcome = try runCycle(binary: binary, store: store, seed: seed, waitForBackgroundWork: waitForBackgroundWork,
                                       deadline: deadline)
            report.cycles += 1
            if outcome.duringBackgroundWork { report.killsDuringBackgroundWork += 1 }
            report.acknowledgedTransactions += outcome.acknowledgedInCycle
            for problem in try check(store: store, seed: seed, lastAcknowledged: outcome.lastAcknowledged) {
                report.failures.append("cycle \(cycle) (\(store), seed \(seed)): \(problem)")
            }
            progress(cycle, report)
        }
        return report
    }

    struct Outcome {
        var lastAcknowledged: Int64
        var acknowledgedInCycle: Int64
        var duringBackgroundWork: Bool
    }

    /// Starts the child, reads its reports, kills it, and drains what it wrote.
    static func runCycle(binary: String, store: String, seed: UInt64, waitForBackgroundWork: Bool,
                         deadline: Double) throws -> Outcome {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: binary)
        child.arguments = ["graph", store, String(seed)]
        let pipe = Pipe()
        child.standardOutput = pipe
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        child.environment = environment
        try child.run()
        let fd = pipe.fileHandleForReading.fileDescriptor
        var text = ""
        var first: Int64?, last: Int64 = 0
        var background = 0
        var killedInBackground = false
        let start = Date()
        var killed = false
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 10)
            if ready > 0 {
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 { break }   // EOF: the child ended (killed, or it failed)
                text += String(decoding: buffer[0..<n], as: UTF8.self)
                while let newline = text.firstIndex(of: "\n") {
                    let line = text[..<newline]
                    text.removeSubrange(...newline)
                    if line.hasPrefix("ack "), let n = Int64(line.dropFirst(4)) {
                        last = n
                        if first == nil { first = n }
                    } else if line.hasPrefix("start "), let n = Int64(line.dropFirst(6)) {
                        last = n
                    } else if line == "bg+" {
                        background += 1
                        if waitForBackgroundWork && !killed && first != nil {
                            kill(child.processIdentifier, SIGKILL)
                            killed = true
                            killedInBackground = true
                        }
                    } else if line == "bg-" {
                        background -= 1
                    }
                }
            }
            let elapsed = Date().timeIntervalSince(start)
            // Without background work in sight within 5 s, kill anyway.
            if !killed && ((!waitForBackgroundWork && elapsed >= deadline && first != nil) || elapsed >= 5) {
                kill(child.processIdentifier, SIGKILL)
                killed = true
                killedInBackground = background > 0
            }
        }
        child.waitUntilExit()
        return Outcome(lastAcknowledged: last, acknowledgedInCycle: first.map { last - $0 + 1 } ?? 0,
                       duringBackgroundWork: killedInBackground)
    }

    /// After a kill: the files verify, the store opens, its graph verifies, and it equals the
    /// model after a prefix of the workload that holds every acknowledged transaction.
    public static func check(store path: String, seed: UInt64, lastAcknowledged: Int64) throws -> [String] {
        var problems: [String] = []
        do {
            let files = try Engine.verify(directory: path, encryptionKey: GraphStoreDriver.encryptionKey)
            problems += files.problems.map { "verify: \($0)" }
        } catch {
            problems.append("verify failed: \(error)")
        }
        let store: Store
        do { store = try GraphStoreDriver.open(path) } catch { return problems + ["store does not open: \(error)"] }
        defer { store.close() }
        let committed = try GraphStoreDriver.lastTransaction(store)
        if committed < lastAcknowledged { problems.append("transaction \(lastAcknowledged) was acknowledged, the store holds up to \(committed)") }
        if committed > lastAcknowledged + 1 { problems.append("the store holds \(committed), beyond the one in flight after \(lastAcknowledged)") }
        problems += try GraphStoreDriver.differences(store, GraphModel.replayed(committed, seed: seed)).map { "after \(committed): \($0)" }
        problems += try store.verifyGraph().problems.map { "graph: \($0)" }
        return problems
    }

    /// The child's side: opens the store, resumes the workload after its last committed
    /// transaction, and reports "ack N" after each commit and "bg+"/"bg-" around background work,
    /// each with one unbuffered write so that a kill never leaves a half line.
    public static func runChild(store path: String, seed: UInt64, transactions: Int64 = .max) throws {
        let store = try GraphStoreDriver.open(path) { event in
            switch event {
            case .flushBegan, .compactionBegan: emit("bg+")
            case .flushEnded, .compactionEnded: emit("bg-")
            case .archiveUnfinished: break   // the workload has no archive
            }
        }
        var model = GraphModel.replayed(try GraphStoreDriver.lastTransaction(store), seed: seed)
        emit("start \(model.last)")
        var number = model.last
        while number < transactions {
            number += 1
            try GraphStoreDriver.runTransaction(number, seed: seed, store: store, model: &model)
            emit("ack \(number)")
        }
        store.close()
    }

    static func emit(_ line: String) {
        let text = line + "\n"
        _ = text.withCString { write(1, $0, strlen($0)) }
    }
}
