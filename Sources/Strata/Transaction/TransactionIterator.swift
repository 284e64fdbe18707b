import StrataStorage

/// Iterates a key range as a write transaction sees it: its overlay space merged over an engine
/// iterator of the same range, in key order. An overlay value replaces the engine's at the same
/// key; an overlay removal hides it. The one merge of the object layer: every ordered read
/// inside a transaction (scans, edge and index prefixes, verification) goes through it.
///
/// Keys and values are valid until the iterator moves or the transaction writes.
final class TransactionIterator {
    private let space: OverlaySpace?
    private let engine: EngineIterator
    private let lower: [UInt8]?
    private let upper: [UInt8]?
    /// The next overlay node to consider (-1: none left in range).
    private var node: Int32 = -1
    private enum Current { case none, engine, overlay }
    private var current = Current.none

    /// `engine` must be bounded to `lower..<upper` (nil: unbounded) already.
    init(space: OverlaySpace?, over engine: EngineIterator, lower: [UInt8]?, upper: [UInt8]?) {
        self.space = space.flatMap { $0.isEmpty ? nil : $0 }
        self.engine = engine
        self.lower = lower
        self.upper = upper
    }

    var isValid: Bool { current != .none }

    var key: UnsafeRawBufferPointer { current == .engine ? engine.key : space!.key(of: node) }

    var value: UnsafeRawBufferPointer { current == .engine ? engine.value : space!.value(of: node) }

    func seekToFirst() throws {
        try engine.seekToFirst()
        if let space { node = lower.map { l in l.withUnsafeBytes { space.seek($0) } } ?? space.first() }
        try settle()
    }

    func next() throws {
        switch current {
        case .none: return
        case .engine: try engine.next()
        case .overlay: node = space!.successor(node)
        }
        try settle()
    }

    /// Chooses the entry at the smaller key of the two sources, skipping what the overlay hides.
    private func settle() throws {
        guard let space else {
            current = engine.isValid ? .engine : .none
            return
        }
        while true {
            while node >= 0 && space.state(of: node) == .absent { node = space.successor(node) }
            if node >= 0, let upper, upper.withUnsafeBytes({ compareBytes(space.key(of: node), $0) >= 0 }) { node = -1 }
            guard node >= 0 else {
                current = engine.isValid ? .engine : .none
                return
            }
            let order = engine.isValid ? compareBytes(engine.key, space.key(of: node)) : 1
            if order < 0 {
                current = .engine
                return
            }
            if order == 0 { try engine.next() }   // the overlay's entry replaces the engine's
            if space.state(of: node) == .value {
                current = .overlay
                return
            }
            node = space.successor(node)          // a removal: nothing at this key
        }
    }
}
