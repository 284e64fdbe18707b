import Foundation

/// How the text output writes sizes, keys and rates.
enum HumanReadable {
    static func bytes(_ n: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(n)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(n) B" : String(format: "%.1f %@", value, units[unit])
    }

    static func bytes(_ n: Int) -> String { bytes(UInt64(max(0, n))) }

    /// A key as text when it is printable ASCII, else as hex; long keys are cut.
    static func key(_ key: [UInt8]) -> String {
        let limit = 24
        let shown = key.prefix(limit)
        let more = key.count > limit ? "…" : ""
        if !shown.isEmpty, shown.allSatisfy({ (0x20..<0x7F).contains($0) }) {
            return "\"" + String(decoding: shown, as: UTF8.self) + "\"" + more
        }
        return "0x" + shown.map { String(format: "%02x", $0) }.joined() + more
    }

    static func hex(_ key: [UInt8]) -> String { key.map { String(format: "%02x", $0) }.joined() }

    static func seconds(_ s: Double) -> String {
        if s < 1 { return String(format: "%.0f ms", s * 1000) }
        if s < 120 { return String(format: "%.1f s", s) }
        return String(format: "%d min %02d s", Int(s) / 60, Int(s) % 60)
    }

    static func ratio(_ r: Double) -> String { String(format: "%.2f", r) }
}
