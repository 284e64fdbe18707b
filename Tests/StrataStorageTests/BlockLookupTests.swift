import Testing
@testable import StrataStorage
import StrataTestSupport

/// A point lookup in a restart-layout block (`Block.dataLookup`) against a sorted model: the
/// first entry at or after the target's internal key, whether its user key is the target's,
/// whether it is a deletion, and its value. The keys come from a four-letter alphabet, of every
/// length up to 12, with several versions each, so that blocks are full of shared prefixes, of
/// user keys that are prefixes of others, and of versions newer than the read: the cases where
/// the lookup's scan stops comparing bytes the shared prefix decides, or hands over to the scan
/// that rebuilds each key.
@Suite struct BlockLookupTests {
    struct Entry {
        var userKey: [UInt8]
        var trailer: UInt64
        var value: [UInt8]
        var key: [UInt8] { userKey + withUnsafeBytes(of: trailer.littleEndian) { Array($0) } }
    }

    static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a.withUnsafeBytes { x in b.withUnsafeBytes { y in InternalKey.compare(x, y) } }
    }

    static func userKey(_ rng: inout SplitMix64, maxCount: Int) -> [UInt8] {
        let alphabet: [UInt8] = [0x00, 0x01, 0x61, 0xFF]
        return (0..<Int(rng.next() % UInt64(maxCount + 1))).map { _ in alphabet[Int(rng.next() % 4)] }
    }

    @Test(arguments: [1, 2, 3, 16])
    func everyLookupFindsWhatTheSortedEntriesHold(restartInterval: Int) throws {
        var rng = SplitMix64(state: UInt64(restartInterval))
        for round in 0..<150 {
            // Distinct user keys, each with one to three versions (newest first).
            var keys = Set<[UInt8]>()
            for _ in 0..<(1 + Int(rng.next() % 60)) { keys.insert(Self.userKey(&rng, maxCount: 12)) }
            var entries: [Entry] = []
            for key in keys {
                var sequences = Set<UInt64>()
                for _ in 0..<(1 + Int(rng.next() % 3)) { sequences.insert(1 + rng.next() % 40) }
                for s in sequences {
                    let kind: EntryKind = rng.next() % 4 == 0 ? .deletion : .value
                    entries.append(Entry(userKey: key, trailer: InternalKey.trailer(sequence: s, kind: kind),
                                         value: kind == .deletion ? [] : Array("v\(round)-\(s)-\(key.count)".utf8)))
                }
            }
            entries.sort { Self.compare($0.key, $1.key) < 0 }
            var builder = BlockBuilder(restartInterval: restartInterval)
            for e in entries {
                e.key.withUnsafeBytes { k in e.value.withUnsafeBytes { v in builder.add(key: k, value: v) } }
            }
            let block = try IdBlockTests.decode(builder.finish(), idFormat: .none)
            for _ in 0..<120 {
                // Half the targets are stored user keys, the rest any key of the alphabet.
                let user = rng.next() % 2 == 0 ? entries[Int(rng.next() % UInt64(entries.count))].userKey
                    : Self.userKey(&rng, maxCount: 13)
                let target = user + withUnsafeBytes(of: InternalKey.seekTrailer(sequence: rng.next() % 45).littleEndian) { Array($0) }
                let expected = entries.first { Self.compare($0.key, target) >= 0 }
                let found = target.withUnsafeBytes { block.dataLookup($0) }
                switch (found, expected) {
                case (.notFound, nil):
                    break
                case let (.entry(matches, deletion, offset, count), e?):
                    #expect(matches == (e.userKey == user), "target \(target): matches")
                    if matches {
                        #expect(deletion == (e.trailer & 0xFF == UInt64(EntryKind.deletion.rawValue)), "target \(target): kind")
                        #expect(Array(block.contents[offset..<(offset + count)]) == e.value, "target \(target): value")
                    }
                default:
                    Issue.record("round \(round), target \(target): \(found), expected \(String(describing: expected?.key))")
                }
            }
        }
    }
}
