import Foundation
import Testing
@testable import StrataStorage
import StrataTesting

/// RELIABILITY.md §4: seeded damage to every kind of file of a store (bit flips, garbage,
/// truncation, appended garbage, a missing or swapped segment, CURRENT naming nothing). For damage
/// to live data: `Engine.verify` reports it, and an open either refuses the store or every read
/// returns the right value or throws; never a wrong answer, never a crash. For a damaged WAL tail
/// (what a crash leaves): the store opens with a prefix of the logged batches.
@Suite struct CorruptionCampaignTests {
    struct Baseline {
        var files: [String: [UInt8]]
        var expected: [String: String]
        /// Keys written one batch each into the WAL, in order ("w-0000", …).
        var walKeys: [String]
        /// The newest WAL and where its last record starts: damage from there on is what a
        /// crash in the middle of the last append leaves, indistinguishable from a torn write.
        var newestWal: String
        /// Start offsets of the newest WAL's records.
        var recordStarts: [Int]
    }

    /// - Parameter idBlocks: whether "k" is an id key space, whose segments hold its
    ///   `key-NNNNN` keys (a head "k" and an 8-byte id) in id blocks (SPEC.md §6.1.1).
    static func makeBaseline(idBlocks: Bool, key: [UInt8]? = nil) throws -> Baseline {
        let fs = InMemoryFileSystem()
        var options = EngineOptions.testing(fs, memtableBytes: 16 << 10, blockBytes: 512, targetSegmentBytes: 64 << 10)
        options.encryptionKey = key
        if idBlocks { options.idKeySpaces = ["k"] }
        let e = try Engine.open(directory: "/db", options: options)
        let ks = try e.keySpace(named: "k")
        var expected: [String: String] = [:]
        for round in 0..<3 {
            for chunk in stride(from: 0, to: 3_000, by: 50) {
                var b = WriteBatch()
                for i in chunk..<(chunk + 50) where (i + round) % 7 != 0 {
                    let k = String(format: "key-%05d", i), v = "value-\(round)-\(i)"
                    b.put(bytes(k), bytes(v), in: ks)
                    expected[k] = v
                }
                if round == 2 {
                    for i in chunk..<(chunk + 50) where i % 11 == 0 {
                        b.delete(bytes(String(format: "key-%05d", i)), in: ks)
                        expected[String(format: "key-%05d", i)] = nil
                    }
                }
                try e.write(b)
            }
        }
        try e.flush()
        try e.waitForBackgroundWork()
        var walKeys: [String] = []
        for i in 0..<40 {
            let k = String(format: "w-%04d", i)
            // Synced: each record's durable mark then vouches for the records before it, so damage
            // to any but the last is told from a torn tail (SPEC.md §5.2).
            try e.put(k, "logged-\(i)", in: ks, durability: .sync)
            walKeys.append(k)
            expected[k] = "logged-\(i)"
        }
        e.close()
        var files: [String: [UInt8]] = [:]
        for name in try fs.listDirectory("/db") { files[name] = fs.contents(of: "/db/" + name) }
        let newestWal = try #require(files.keys.filter { $0.hasSuffix(".wal") }.max())
        let wal = files[newestWal]!
        // An encrypted WAL: a 64-byte header, then `length | [mark] | nonce | body | tag`
        // records (SPEC.md §14.2); a plaintext one: `crc | length | payload` (§5).
        var offset = key == nil ? 0 : EncryptionHeader.bytes
        let (lengthAt, overhead) = key == nil ? (4, 8) : (0, 4 + FileSealer.overhead)
        var starts: [Int] = []
        while offset + 8 <= wal.count {
            starts.append(offset)
            // The length field's top bit flags a durable mark (SPEC.md §5.1), not length.
            offset += overhead + (wal[(offset + lengthAt)..<(offset + lengthAt + 4)].reversed().reduce(0) { $0 << 8 | Int($1) } & 0x7FFF_FFFF)
        }
        return Baseline(files: files, expected: expected, walKeys: walKeys, newestWal: newestWal, recordStarts: starts)
    }

    enum Damage: CaseIterable { case bitFlips, garbage, truncate, appendGarbage, missing, swap, currentToNothing }

    struct Tally {
        var cases = 0, liveDamage = 0, verifyDetected = 0, openRefused = 0, readErrors = 0
        var tailCases = 0, statsCases = 0
        var wrongAnswers: [String] = []
        var undetected: [String] = []
    }

    /// Reads every key: a wrong value, or a key lost without an error, is a wrong answer.
    static func readBack(_ e: Engine, _ baseline: Baseline, allowWalPrefix: Bool) throws -> String? {
        guard let ks = e.existingKeySpace(named: "k") else { return "key space lost" }
        var seen: [String: String] = [:]
        for (k, v) in try e.scan(ks) { seen[string(k)] = string(v) }
        for (k, v) in seen where baseline.expected[k] != v { return "\(k) read as \(v), expected \(baseline.expected[k] ?? "absent")" }
        let walPresent = baseline.walKeys.map { seen[$0] != nil }
        if let firstMissing = walPresent.firstIndex(of: false), walPresent[firstMissing...].contains(true) {
            return "hole in the logged batches at \(baseline.walKeys[firstMissing])"
        }
        for (k, v) in baseline.expected where seen[k] != v {
            if allowWalPrefix && k.hasPrefix("w-") { continue }
            return "\(k) missing"
        }
        for k in baseline.expected.keys.sorted().prefix(50) {
            if let v = try e.get(bytes(k), in: ks).map(string), v != baseline.expected[k] { return "get \(k) = \(v)" }
        }
        return nil
    }

    static func runCampaign(cases: Int, seed: UInt64, idBlocks: Bool, key: [UInt8]? = nil) throws -> Tally {
        let baseline = try makeBaseline(idBlocks: idBlocks, key: key)
        let names = baseline.files.keys.sorted()
        let segments = names.filter { $0.hasSuffix(".seg") }
        let targets = names.filter { $0 != "LOCK" }
        var rng = SplitMix64(state: seed)
        var tally = Tally()
        for n in 0..<cases {
            let fs = InMemoryFileSystem()
            try fs.createDirectory("/db")
            for (name, bytes) in baseline.files { fs.setContents(of: "/db/" + name, to: bytes) }
            let file = targets[n % targets.count]
            var damage = Damage.allCases[Int(rng.next() % UInt64(Damage.allCases.count))]
            if (damage == .swap || damage == .missing) && !file.hasSuffix(".seg") { damage = .bitFlips }
            // Background compaction may leave a single segment: then there is nothing to swap with.
            if damage == .swap && segments.count < 2 { damage = .bitFlips }
            if damage == .currentToNothing && file != "CURRENT" { damage = .garbage }
            var bytes = baseline.files[file]!
            let path = "/db/" + file
            let label = "case \(n): \(damage) in \(file)"
            // Damage a crash can leave (appended garbage after a log's last record, damage to the
            // newest WAL's last records) counts as a torn tail, not as damage to live data.
            var firstDamaged = Int.max
            var isWalTail = false
            switch damage {
            case .bitFlips:
                for _ in 0..<(1 + rng.next() % 3) where !bytes.isEmpty {
                    let at = Int(rng.next() % UInt64(bytes.count))
                    bytes[at] ^= UInt8(1 << (rng.next() % 8))
                    firstDamaged = min(firstDamaged, at)
                }
            case .garbage:
                guard !bytes.isEmpty else { break }
                let at = Int(rng.next() % UInt64(bytes.count))
                firstDamaged = at
                for i in at..<min(bytes.count, at + 1 + Int(rng.next() % 64)) { bytes[i] = UInt8(truncatingIfNeeded: rng.next()) }
            case .truncate:
                bytes = Array(bytes.prefix(Int(rng.next() % UInt64(max(1, bytes.count)))))
                isWalTail = file.hasSuffix(".wal")
            case .appendGarbage:
                bytes += (0..<(1 + rng.next() % 100)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                isWalTail = file.hasSuffix(".wal") || file.hasPrefix("MANIFEST-")
            case .missing:
                break
            case .swap:
                let other = segments.filter { $0 != file }[Int(rng.next() % UInt64(segments.count - 1))]
                bytes = baseline.files[other]!
            case .currentToNothing:
                bytes = VersionSet.currentContents(manifestNumber: 999_999)
            }
            // Damage to the newest WAL whose damaged records are its last ones (no intact record
            // after the first damaged one) is what a crash leaves in an unsynced tail.
            if file == baseline.newestWal && firstDamaged != .max {
                let original = baseline.files[file]!
                let damagedRecords = Set(zip(bytes, original).enumerated().filter { $0.element.0 != $0.element.1 }.map { changed in
                    baseline.recordStarts.lastIndex { $0 <= changed.offset } ?? 0
                })
                if let first = damagedRecords.min(), damagedRecords == Set(first..<baseline.recordStarts.count) { isWalTail = true }
            }
            if damage == .missing { try fs.removeFile(path) } else { fs.setContents(of: path, to: bytes) }
            if bytes == baseline.files[file]! && damage != .missing { continue }   // the damage changed nothing
            tally.cases += 1
            let isStats = file == "STATS"
            if isWalTail { tally.tailCases += 1 } else if isStats { tally.statsCases += 1 } else { tally.liveDamage += 1 }

            let detected = (try? Engine.verify(directory: "/db", fileSystem: fs, encryptionKey: key)).map { !$0.problems.isEmpty } ?? true
            if !isWalTail && !isStats {
                if detected { tally.verifyDetected += 1 } else { tally.undetected.append(label) }
            }
            if isStats && !detected { tally.undetected.append(label) }
            var options = EngineOptions.testing(fs)
            options.encryptionKey = key
            options.readOnly = true
            let engine: Engine
            do {
                engine = try Engine.open(directory: "/db", options: options)
            } catch {
                if isWalTail || isStats { tally.wrongAnswers.append("\(label): refused to open: \(error)") }
                tally.openRefused += 1
                continue
            }
            defer { engine.close() }
            do {
                if let wrong = try readBack(engine, baseline, allowWalPrefix: isWalTail) { tally.wrongAnswers.append("\(label): \(wrong)") }
            } catch {
                if isWalTail || isStats { tally.wrongAnswers.append("\(label): read failed: \(error)") }
                tally.readErrors += 1
            }
        }
        return tally
    }

    /// Run once with the restart layout only and once with id blocks for the main key space;
    /// `STRATA_CORRUPTION_CASES` cases each (1,000 in the suite).
    @Test(arguments: [false, true])
    func seededDamageToEveryFileIsDetectedAndNeverAnsweredWrong(idBlocks: Bool) throws {
        let cases = Int(ProcessInfo.processInfo.environment["STRATA_CORRUPTION_CASES"] ?? "") ?? 1_000
        let tally = try Self.runCampaign(cases: cases, seed: idBlocks ? 0x1DB10C : 0xC0FFEE, idBlocks: idBlocks)
        print("corruption campaign\(idBlocks ? " (id blocks)" : ""): \(tally.cases) cases, \(tally.liveDamage) damaging live data (verify detected \(tally.verifyDetected), open refused \(tally.openRefused), reads failed \(tally.readErrors)), \(tally.tailCases) WAL-tail cases, \(tally.statsCases) STATS cases, \(tally.wrongAnswers.count) wrong answers, \(tally.undetected.count) undetected")
        #expect(tally.wrongAnswers.isEmpty, "\(tally.wrongAnswers.prefix(10))")
        #expect(tally.undetected.isEmpty, "\(tally.undetected.prefix(10))")
        #expect(tally.cases >= cases * 9 / 10)
    }

    /// The campaign on an encrypted store (issue 57): every sealed unit's tag stands where a
    /// CRC stood, so every changed byte must still be detected and never answered wrong.
    @Test func seededDamageToEveryFileOfAnEncryptedStoreIsDetectedAndNeverAnsweredWrong() throws {
        let cases = Int(ProcessInfo.processInfo.environment["STRATA_CORRUPTION_CASES"] ?? "") ?? 1_000
        let tally = try Self.runCampaign(cases: cases, seed: 0xE7C2, idBlocks: true, key: (0..<32).map { UInt8(255 - $0) })
        print("corruption campaign (encrypted): \(tally.cases) cases, \(tally.liveDamage) damaging live data (verify detected \(tally.verifyDetected), open refused \(tally.openRefused), reads failed \(tally.readErrors)), \(tally.tailCases) WAL-tail cases, \(tally.statsCases) STATS cases, \(tally.wrongAnswers.count) wrong answers, \(tally.undetected.count) undetected")
        #expect(tally.wrongAnswers.isEmpty, "\(tally.wrongAnswers.prefix(10))")
        #expect(tally.undetected.isEmpty, "\(tally.undetected.prefix(10))")
        #expect(tally.cases >= cases * 9 / 10)
    }
}
