import Foundation
import StrataTestSupport
import Testing

/// Runs the `strata` executable SwiftPM built next to the test bundle.
struct ToolRun {
    var status: Int32
    var stdout: String
    var stderr: String

    var json: Any? { try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) }
    var jsonObject: [String: Any] { json as? [String: Any] ?? [:] }
    /// Standard output as JSON Lines (`--json` of `replicate` and `dump`).
    var jsonLines: [[String: Any]] {
        stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }
}

enum ToolRunner {
    static var binary: String? { builtExecutable(named: "strata") }

    /// Runs `strata ARGS` to its end.
    static func run(_ arguments: [String], environment extra: [String: String] = [:]) throws -> ToolRun {
        let running = try start(arguments, environment: extra)
        return running.wait()
    }

    /// Starts `strata ARGS`, output going to files (no pipe can fill up and stall the child).
    static func start(_ arguments: [String], environment extra: [String: String] = [:]) throws -> RunningTool {
        let binary = try #require(binary, "the strata executable was not built next to the tests")
        let outPath = NSTemporaryDirectory() + "strata-out-\(UUID().uuidString)"
        let errPath = outPath + ".err"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment.merge(extra) { _, new in new }
        process.environment = environment
        try process.run()
        return RunningTool(process: process, outPath: outPath, errPath: errPath)
    }
}

/// A `strata` process the test goes on beside (`replicate`), its output in files.
struct RunningTool {
    let process: Process
    let outPath: String
    let errPath: String

    /// What it has written to standard output so far.
    var stdout: String { (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "" }

    /// Waits up to `timeout` seconds for standard output to hold a line that `matches`.
    func waitForLine(timeout: Double = 60, where matches: ([String: Any]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline && process.isRunning {
            if ToolRun(status: 0, stdout: stdout, stderr: "").jsonLines.contains(where: matches) { return true }
            usleep(20_000)
        }
        return ToolRun(status: 0, stdout: stdout, stderr: "").jsonLines.contains(where: matches)
    }

    /// Sends SIGTERM, as a service manager does.
    func terminate() { process.terminate() }

    /// Waits for the process to end; removes its output files.
    func wait() -> ToolRun {
        process.waitUntilExit()
        defer {
            try? FileManager.default.removeItem(atPath: outPath)
            try? FileManager.default.removeItem(atPath: errPath)
        }
        return ToolRun(status: process.terminationStatus, stdout: stdout,
                       stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }
}
