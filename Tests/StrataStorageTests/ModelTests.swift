import StrataTestSupport
import Testing
@testable import StrataStorage

/// Seeded random operations against the engine and against a plain dictionary, compared after
/// every step through gets, forward and backward scans with bounds, snapshots, flushes and
/// reopen (in the manner of Pebble's metamorphic tests).
@Suite struct ModelTests {
    typealias Model = [String: [String: String]]

    static func sortedKeys(_ m: [String: String], lower: String?, upper: String?) -> [String] {
        m.keys.filter { k in (lower.map { k >= $0 } ?? true) && (upper.map { k < $0 } ?? true) }
            .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    }

    func check(_ e: Engine, _ model: Model, _ spaces: [KeySpace], _ rng: inout SplitMix64, snapshot: Snapshot? = nil, seed: UInt64, note: String = "") throws {
        for ks in spaces {
            let m = model[ks.name] ?? [:]
            let all = Self.sortedKeys(m, lower: nil, upper: nil)
            let got = try e.scan(ks, snapshot: snapshot).map { string($0.key) }
            try #require(got == all, "seed \(seed) \(note) forward scan of \(ks.name): got \(got) expected \(all)")
            // Bounded scans both ways, and point reads of present and absent keys.
            let lower = "k\(rng.below(60))", upper = "k\(rng.below(60))"
            let expected = Self.sortedKeys(m, lower: lower, upper: upper)
            let it = try e.makeIterator(in: ks, lowerBound: bytes(lower), upperBound: bytes(upper), snapshot: snapshot)
            var forward: [String] = []
            try it.seekToFirst()
            while it.isValid { forward.append(String(decoding: it.key, as: UTF8.self)); try it.next() }
            #expect(forward == expected, "seed \(seed) bounded forward \(lower)..<\(upper)")
            var backward: [String] = []
            try it.seekToLast()
            while it.isValid { backward.append(String(decoding: it.key, as: UTF8.self)); try it.previous() }
            #expect(backward == expected.reversed(), "seed \(seed) bounded backward \(lower)..<\(upper)")
            for _ in 0..<5 {
                let k = "k\(rng.below(60))"
                #expect(try e.getString(k, in: ks, snapshot: snapshot) == m[k], "seed \(seed) get \(k)")
            }
            // The keys of one prefix and length, read without the merging iterator.
            let prefix = "k\(rng.below(6))"
            var prefixed: [String] = []
            try e.forEachKey(in: ks, prefix: bytes(prefix), suffixBytes: 1, snapshot: snapshot) { prefixed.append(String(decoding: $0, as: UTF8.self)) }
            #expect(prefixed == all.filter { $0.hasPrefix(prefix) && $0.utf8.count == prefix.utf8.count + 1 },
                    "seed \(seed) \(note) keys of \(prefix)")
            // A batched read of random keys, some absent, some repeated.
            let wanted = (0..<(1 + rng.below(40))).map { _ in "k\(rng.below(60))" }
            var list = KeyList()
            for k in wanted { list.append(bytes(k)) }
            var batched: [String?] = []
            try e.visitValues(forKeys: list, in: ks, snapshot: snapshot) { _, v in batched.append(v.map { String(decoding: $0, as: UTF8.self) }) }
            #expect(batched == wanted.map { m[$0] }, "seed \(seed) batched read of \(wanted)")
            // Direction changes in the middle.
            if !all.isEmpty {
                let start = all[rng.below(all.count)]
                try it.seek(bytes(start))
                let zig = try Self.zigzag(it, steps: 6, rng: &rng)
                let ref = Self.zigzagModel(all.filter { $0 >= lower && $0 < upper }, start: start, decisions: zig.decisions)
                #expect(zig.keys == ref, "seed \(seed) zigzag from \(start)")
            }
        }
    }

    static func zigzag(_ it: EngineIterator, steps: Int, rng: inout SplitMix64) throws -> (keys: [String?], decisions: [Bool]) {
        var keys: [String?] = [it.isValid ? String(decoding: it.key, as: UTF8.self) : nil]
        var decisions: [Bool] = []
        for _ in 0..<steps where it.isValid {
            let fwd = rng.below(2) == 0
            decisions.append(fwd)
            if fwd { try it.next() } else { try it.previous() }
            keys.append(it.isValid ? String(decoding: it.key, as: UTF8.self) : nil)
        }
        return (keys, decisions)
    }

    static func zigzagModel(_ keys: [String], start: String, decisions: [Bool]) -> [String?] {
        guard var i = keys.firstIndex(where: { $0 >= start }) else { return [nil] }
        var out: [String?] = [keys[i]]
        for fwd in decisions {
            i += fwd ? 1 : -1
            if i < 0 || i >= keys.count { out.append(nil); break }
            out.append(keys[i])
        }
        return out
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func randomOperationsMatchModel(seed: UInt64) throws {
        let dir = TemporaryDirectory()
        var rng = SplitMix64(state: seed)
        var options = EngineOptions()
        options.memtableBytes = 1 << 20   // small, so flushes happen on their own too
        options.blockBytes = 256          // many blocks per segment
        var e = try Engine.open(directory: dir.path, options: options)
        var spaces = [e.defaultKeySpace, try e.keySpace(named: "edges")]
        var model: Model = [:]
        var pinned: (Snapshot, Model)?
        var lastAction = ""
        for step in 0..<400 {
            var batch = WriteBatch()
            var next = model
            for _ in 0..<(1 + rng.below(8)) {
                let ks = spaces[rng.below(spaces.count)]
                let k = "k\(rng.below(60))"
                if rng.below(3) == 0 {
                    batch.delete(bytes(k), in: ks)
                    next[ks.name, default: [:]][k] = nil
                } else {
                    let v = "v\(step)-" + String(repeating: "x", count: rng.below(40))
                    batch.put(bytes(k), bytes(v), in: ks)
                    next[ks.name, default: [:]][k] = v
                }
            }
            try e.write(batch)
            model = next
            let action = rng.below(40)
            lastAction = "\(step): action \(action)"
            switch action {
            case 0: try e.flush()
            case 1:
                pinned = nil
                e.close()
                e = try Engine.open(directory: dir.path, options: options)
                spaces = [e.defaultKeySpace, try e.keySpace(named: "edges")]
            case 2: pinned = (try e.snapshot(), model)
            default: break
            }
            try check(e, model, spaces, &rng, seed: seed, note: lastAction)
            if let (snap, old) = pinned { try check(e, old, spaces, &rng, snapshot: snap, seed: seed, note: "snapshot " + lastAction) }
        }
        e.close()
    }
}
