/// What reading one WAL found: what the rules across logs (``WALReplay``) decide on.
package struct WALScan {
    /// The highest sequence number seen (the start when none was).
    var lastSequence: UInt64
    /// Batch records read (end-of-log records not counted).
    var records: Int
    /// Whether the log has a torn tail: its valid records end at ``validEnd`` and damage follows.
    var torn: Bool
    /// Where the valid records end.
    var validEnd: Int
    /// Whether the log ends with an end-of-log record.
    var sawEndOfLog: Bool
    /// Whether a valid record carries a durable mark: every earlier log was synced whole.
    var sawDurableMark: Bool

    /// No record, nothing torn: only zeros, if anything.
    var isEmpty: Bool { records == 0 && !torn }
}

/// Where replaying a store's logs stops (SPEC.md §5.2), decided once for recovery and for the
/// verifier: each log gets one verdict. Recovery acts on them (replays, cuts back, removes,
/// refuses to open); the verifier reports them.
///
/// The history recovery can vouch for ends at the first log that is torn, or that ends without
/// an end-of-log record while no later log's durable mark vouches for it (a power cut may have
/// dropped its unsynced tail at a record boundary). Logs after that point held no durable write
/// and are discarded — unless one of them carries a durable mark, which says the log before was
/// synced whole: then its damage is not a torn tail, and the store is corrupt.
enum WALReplay {
    enum Verdict: Equatable {
        /// Replay the log's valid records. `endsHistory`: the vouched history ends in it; it is
        /// cut back to its valid records and later logs are discarded.
        case replay(endsHistory: Bool)
        /// After the end of the history: never durable, dropped.
        case discard
        /// The history ended in this log at `offset`, and the later log `vouchedBy` carries a
        /// durable mark: damage, not a torn tail.
        case corrupt(offset: Int, vouchedBy: UInt64)
    }

    struct Decision {
        var number: UInt64
        var verdict: Verdict
        /// What reading it found; nil for a log not read (discarded).
        var scan: WALScan?
    }

    /// Decides, log after log in increasing number, what replay does with each of `logs`.
    /// `scan(number, start)` reads a log whose records follow sequence `start` (recovery
    /// replays it as it reads); `hasDurableMark(number, start)` asks only whether a later log
    /// carries a durable mark. Stops at the first ``Verdict/corrupt(offset:vouchedBy:)``: the
    /// logs after it are given as discarded.
    static func decide(logs: [UInt64], after start: UInt64,
                       scan: (UInt64, UInt64) throws -> WALScan,
                       hasDurableMark: (UInt64, UInt64) throws -> Bool) throws -> [Decision] {
        var decisions: [Decision] = []
        var last = start
        // The decision in which the vouched history ended.
        var ended: Int?
        for (i, n) in logs.enumerated() {
            if let e = ended {
                if try hasDurableMark(n, last) {
                    decisions[e].verdict = .corrupt(offset: decisions[e].scan!.validEnd, vouchedBy: n)
                    decisions += logs[i...].map { Decision(number: $0, verdict: .discard, scan: nil) }
                    return decisions
                }
                decisions.append(Decision(number: n, verdict: .discard, scan: nil))
                continue
            }
            let s = try scan(n, last)
            last = s.lastSequence
            var endsHistory = s.torn
            if !endsHistory && !s.sawEndOfLog && i + 1 < logs.count {
                var vouched = false
                for later in logs[(i + 1)...] where try hasDurableMark(later, last) {
                    vouched = true
                    break
                }
                endsHistory = !vouched
            }
            if endsHistory { ended = decisions.count }
            decisions.append(Decision(number: n, verdict: .replay(endsHistory: endsHistory), scan: s))
        }
        return decisions
    }

    /// The error recovery raises for a ``Verdict/corrupt(offset:vouchedBy:)`` log.
    static func corruption(directory: String, log: UInt64, offset: Int, vouchedBy later: UInt64) -> StorageError {
        .corruption(file: joinPath(directory, StoreFile.walName(log)), offset: UInt64(offset),
                    reason: "damaged log record, and the later log \(StoreFile.walName(later)) says this one was synced")
    }
}
