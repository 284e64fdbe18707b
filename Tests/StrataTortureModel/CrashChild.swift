import Foundation
import StrataTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `strata-torture` child that does one long piece of work (a cascade, a migration step)
/// between a "working" and a "done" line, and the parent's side: run it, and kill it at a
/// chosen moment of that work.
public enum CrashChild {
    public struct Outcome {
        /// How long the work took, when the child got to "done".
        public var workSeconds: Double?
        /// The kill landed after "working" and before "done".
        public var killedDuringWork = false
    }

    /// Runs `strata-torture ARGUMENTS`; with `killAfter`, SIGKILLs it that many seconds after
    /// it printed "working".
    public static func run(binary: String, arguments: [String], killAfter: Double?) throws -> Outcome {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: binary)
        child.arguments = arguments
        let pipe = Pipe()
        child.standardOutput = pipe
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        child.environment = environment
        try child.run()
        let fd = pipe.fileHandleForReading.fileDescriptor
        var text = "", outcome = Outcome()
        var workingAt: Date?
        var buffer = [UInt8](repeating: 0, count: 256)
        var killed = false
        while true {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, 1) > 0 {
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 { break }
                text += String(decoding: buffer[0..<n], as: UTF8.self)
                if workingAt == nil && text.contains("working") { workingAt = Date() }
                if let workingAt, text.contains("done"), outcome.workSeconds == nil {
                    outcome.workSeconds = Date().timeIntervalSince(workingAt)
                }
            }
            if let killAfter, !killed, let workingAt, Date().timeIntervalSince(workingAt) >= killAfter {
                outcome.killedDuringWork = !text.contains("done")
                kill(child.processIdentifier, SIGKILL)
                killed = true
            }
        }
        child.waitUntilExit()
        return outcome
    }

    /// What a check after a kill found: the work whole (`true`), not begun (`false`), or a problem.
    public struct CheckFailure: Error, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    public struct Report: Sendable {
        public var cycles = 0
        /// Kills that landed after "working" and before "done".
        public var killsDuringWork = 0
        /// Stores the checks found with the work whole, and without it.
        public var afterWork = 0
        public var beforeWork = 0
        public var failures: [String] = []
    }

    /// Kills a child `cycles` times, each in a fresh store under `directory`, at a random moment
    /// between its "working" and a little past how long the work took in one uncut run first;
    /// then `check`s the store, and runs `after` on it (the next open, say).
    public static func killTest(cycles: Int, directory: String, seed: UInt64, binary: String,
                                arguments: (String) -> [String], check: (String) throws -> Result<Bool, CheckFailure>,
                                after: (String) throws -> Void = { _ in }) throws -> Report {
        var report = Report()
        var rng = SplitMix64(state: seed)
        let timing = try run(binary: binary, arguments: arguments(directory + "/timing"), killAfter: nil)
        let work = max(0.005, timing.workSeconds ?? 0.2)
        for cycle in 0..<cycles {
            let path = "\(directory)/store-\(cycle)"
            let delay = work * 1.2 * Double(rng.next() % 1_000) / 1_000
            let outcome = try run(binary: binary, arguments: arguments(path), killAfter: delay)
            report.cycles += 1
            if outcome.killedDuringWork { report.killsDuringWork += 1 }
            switch try check(path) {
            case .success(true): report.afterWork += 1
            case .success(false): report.beforeWork += 1
            case let .failure(problem): report.failures.append("cycle \(cycle) (killed \(delay) s into the work): \(problem)")
            }
            do { try after(path) } catch { report.failures.append("cycle \(cycle): \(error)") }
            try? FileManager.default.removeItem(atPath: path)
        }
        return report
    }

    /// Unbuffered, so the parent sees each line the moment it is true.
    public static func emit(_ line: String) {
        let text = line + "\n"
        _ = text.withCString { write(1, $0, strlen($0)) }
    }
}
