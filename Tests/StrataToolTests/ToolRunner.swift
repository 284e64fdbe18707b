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
}

enum ToolRunner {
    static var binary: String? { builtExecutable(named: "strata") }

    /// Runs `strata ARGS`, output going to files (no pipe can fill up and stall the child).
    static func run(_ arguments: [String], environment extra: [String: String] = [:]) throws -> ToolRun {
        let binary = try #require(binary, "the strata executable was not built next to the tests")
        let outPath = NSTemporaryDirectory() + "strata-out-\(UUID().uuidString)"
        let errPath = outPath + ".err"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        defer {
            try? FileManager.default.removeItem(atPath: outPath)
            try? FileManager.default.removeItem(atPath: errPath)
        }
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
        process.waitUntilExit()
        return ToolRun(status: process.terminationStatus,
                       stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
                       stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }
}
