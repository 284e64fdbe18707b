import Foundation

/// A fresh directory path under the system temp dir, removed when the value is dropped.
public final class TemporaryDirectory {
    public let path: String

    public init(_ name: String = "strata-test") {
        path = NSTemporaryDirectory() + "\(name)-\(UUID().uuidString)"
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
