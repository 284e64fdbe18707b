/// Keeps an observer's reads at least `minimumInterval` apart: the one rule the async sequence,
/// the callback subscription and `LiveResults` share (see ``QueryObservation``). Commits that
/// land while it holds a read back merge into that read.
struct ReadThrottle: Sendable {
    let minimumInterval: Duration
    private var lastRead = ContinuousClock.now

    init(minimumInterval: Duration) {
        self.minimumInterval = minimumInterval
    }

    /// Notes a read starting now.
    mutating func reading() { lastRead = .now }

    /// When the next read may run, or nil when it may run now.
    var due: ContinuousClock.Instant? {
        let due = lastRead + minimumInterval
        return due > .now ? due : nil
    }

    /// How long until the next read may run, or nil when it may run now.
    var delay: Duration? { due.map { ContinuousClock.now.duration(to: $0) } }
}
