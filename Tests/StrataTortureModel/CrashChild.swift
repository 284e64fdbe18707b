import Foundation
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

    /// Unbuffered, so the parent sees each line the moment it is true.
    public static func emit(_ line: String) {
        let text = line + "\n"
        _ = text.withCString { write(1, $0, strlen($0)) }
    }
}
