import Foundation

/// The path of an executable of this package that SwiftPM built next to the test bundle
/// (`strata`, `strata-torture`), or nil when it was not built.
public func builtExecutable(named name: String) -> String? {
    var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<3 {
        let candidate = dir.appendingPathComponent(name).path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        dir = dir.deletingLastPathComponent()
    }
    return nil
}
