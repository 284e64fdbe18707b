import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Shows a long job's progress on standard error: a bar redrawn in place on a terminal, plain
/// lines (one per tenth) when the output goes to a file or a pipe.
final class ProgressDisplay: @unchecked Sendable {
    // Unchecked: a job calls its progress callback on the thread that runs the command.
    private let label: String
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private var lastTenth = -1
    private var lastDraw = 0.0

    init(label: String) { self.label = label }

    func update(done: UInt64, total: UInt64, seconds: Double) {
        let fraction = total == 0 ? 1 : min(1, Double(done) / Double(total))
        let rate = seconds > 0 ? Double(done) / seconds : 0
        let eta = rate > 0 && total > done ? Double(total - done) / rate : 0
        let figures = "\(HumanReadable.bytes(done)) / \(HumanReadable.bytes(total)), \(HumanReadable.bytes(UInt64(rate)))/s, ETA \(HumanReadable.seconds(eta))"
        if isTerminal {
            guard seconds - lastDraw >= 0.1 || done >= total else { return }
            lastDraw = seconds
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            write("\r[\(bar)] \(String(format: "%5.1f", fraction * 100))%  \(figures)\u{1B}[K")
        } else {
            let tenth = Int(fraction * 10)
            guard tenth > lastTenth else { return }
            lastTenth = tenth
            write("\(label): \(tenth * 10)%  \(figures)\n")
        }
    }

    func finish() {
        if isTerminal { write("\n") }
    }

    private func write(_ s: String) {
        FileHandle.standardError.write(Data(s.utf8))
    }
}
