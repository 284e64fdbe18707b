import Foundation
@testable import Strata
import StrataTestSupport
import Testing

@Entity
final class Wallet {
    var id: Id = 0
    @Unique var key = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
    var site = URL(string: "https://example.com")!
    @Index var balance: Decimal = 0
    var otherKey: UUID? = nil
    var homepage: URL? = nil
    var limit: Decimal? = nil
}

/// UUID, URL and Decimal properties (SPEC.md §11.3): stored natively, compared, ordered and
/// indexed as their values are, and refused with a typed error when their bytes are damaged.
@Suite struct FoundationValueTests {
    static let decimals: [Decimal] = [
        "0", "1", "-1", "1.5", "1.50", "-123.45", "0.001", "1e100", "-1e100", "1e-100", "7e127",
        "12345678901234567890123456789012345678", "340282366920938463463374607431768211455",
        "-340282366920938463463374607431768211455", "0.1", "0.25", "-0.25", "99999.99999",
    ].map { Decimal(string: $0)! }

    @Test func valuesRoundTripThroughAStore() throws {
        let dir = TemporaryDirectory()
        var ids: [Id] = []
        let urls = ["https://example.com/ü?q=1&r=%20#frag", "file:///tmp/a%20b", "mailto:ada@example.com", "relative/path"]
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            defer { store.close() }
            let box = store.box(for: Wallet.self)
            for (i, d) in Self.decimals.enumerated() {
                let a = Wallet()
                a.key = UUID()
                a.balance = d
                a.site = URL(string: urls[i % urls.count])!
                if i % 2 == 0 {
                    a.otherKey = a.key
                    a.homepage = a.site
                    a.limit = -d
                }
                ids.append(try box.put(a))
            }
            let nan = Wallet()
            nan.key = UUID()
            nan.balance = .nan
            ids.append(try box.put(nan))
        }
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let box = store.box(for: Wallet.self)
        for (i, d) in Self.decimals.enumerated() {
            let a = try #require(try box.get(ids[i]))
            #expect(a.balance == d, "\(d)")
            #expect(a.site == URL(string: urls[i % urls.count])!)
            if i % 2 == 0 {
                #expect(a.otherKey == a.key && a.homepage == a.site && a.limit == -d)
            } else {
                #expect(a.otherKey == nil && a.homepage == nil && a.limit == nil)
            }
        }
        #expect(try box.get(ids.last!)?.balance.isNaN == true)
    }

    @Test func decimalsOrderAndCompareAsNumbers() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let box = store.box(for: Wallet.self)
        var r = SplitMix64(state: 5)
        var values = Self.decimals
        for _ in 0..<300 {
            let mantissa = Decimal(Int64(r.below(2_000_001)) - 1_000_000)
            values.append(Decimal(sign: mantissa < 0 ? .minus : .plus, exponent: r.below(13) - 6, significand: mantissa.magnitude))
        }
        for v in values {
            let a = Wallet()
            a.key = UUID()
            a.balance = v
            try box.put(a)
        }
        let ordered = try box.query().ordered(by: Wallet.balance).build().find().map(\.balance)
        #expect(ordered == values.sorted())
        let descending = try box.query().ordered(by: Wallet.balance, .descending).build().find().map(\.balance)
        #expect(descending == values.sorted(by: >))
        for pivot in values.prefix(40) {
            #expect(Set(try box.query { Wallet.balance > pivot }.build().findIds()).count == values.filter { $0 > pivot }.count)
            #expect(try box.query { Wallet.balance == pivot }.build().count() == values.filter { $0 == pivot }.count)
            #expect(try box.query { Wallet.balance.between(pivot, pivot + 10) }.build().count()
                    == values.filter { $0 >= pivot && $0 <= pivot + 10 }.count)
        }
        #expect(try box.query { Wallet.balance.isIn([1.5, -123.45]) }.build().count() == values.filter { $0 == 1.5 || $0 == -123.45 }.count)
        let property = try box.query().build().property(Wallet.balance)
        #expect(try property.min() == values.min() && property.max() == values.max())
    }

    @Test func aUUIDIsAUniqueKeyAndAnIndexLookup() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let box = store.box(for: Wallet.self)
        let keys = (0..<50).map { _ in UUID() }
        for k in keys {
            let a = Wallet()
            a.key = k
            try box.put(a)
        }
        for k in keys.shuffled().prefix(10) {
            #expect(try box.query { Wallet.key == k }.build().findUnique()?.key == k)
        }
        let duplicate = Wallet()
        duplicate.key = keys[7]
        #expect {
            try box.put(duplicate)
        } throws: { error in
            guard case let .uniqueViolation(_, property, value, _)? = error as? StrataError else { return false }
            return property == "key" && value == keys[7].uuidString
        }
        let sorted = try box.query().ordered(by: Wallet.key).build().find().map(\.key)
        let bytewise = keys.sorted { a, b in withUnsafeBytes(of: a.uuid) { x in withUnsafeBytes(of: b.uuid) { y in x.lexicographicallyPrecedes(y) } } }
        #expect(sorted == bytewise)
        #expect(try box.query { Wallet.key.isIn(Array(keys.prefix(3))) }.build().count() == 3)
    }

    @Test func storedObjectsShowTheValuesAndPutThemBack() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let box = store.box(for: Wallet.self)
        let a = Wallet()
        a.key = UUID()
        a.balance = Decimal(string: "-12.5")!
        a.homepage = URL(string: "https://strata.example/x")
        let id = try box.put(a)
        var seen: [StoredObject] = []
        try store.storedObjects(of: "Wallet") { seen.append($0); return true }
        let values = Dictionary(uniqueKeysWithValues: try #require(seen.first).values.map { ($0.name, $0.value) })
        #expect(values["key"] == .uuid(a.key))
        #expect(values["balance"] == .decimal(Decimal(string: "-12.5")!))
        #expect(values["homepage"] == .url(URL(string: "https://strata.example/x")!))
        #expect(values["limit"] == .null)
        // Text is accepted for each (what `strata load` reads from a dump).
        try store.putStoredObjects([StoredObject(id: id, values: [("key", .string(a.key.uuidString)), ("balance", .string("7.25")),
                                                                 ("site", .string("https://b.example"))])], of: "Wallet")
        let again = try #require(try box.get(id))
        #expect(again.key == a.key && again.balance == Decimal(string: "7.25")! && again.site.absoluteString == "https://b.example")
        #expect(throws: StrataError.self) {
            try store.putStoredObjects([StoredObject(id: id, values: [("key", .string("not a uuid"))])], of: "Wallet")
        }
    }

    /// Every byte string either decodes to the decimal it encodes (and encodes back to itself)
    /// or is a typed error: no trap on crafted bytes.
    @Test func craftedDecimalBytesAreTypedErrors() throws {
        for d in Self.decimals {
            let bytes = OrderedDecimal.encode(d)
            #expect(try bytes.withUnsafeBytes { try OrderedDecimal.decode($0) } == d)
        }
        let bad: [[UInt8]] = [[], [0x01], [0x80, 0x00], [0xC0, 0x80, 0x01, 0x02], [0xC0, 0x80, 0x01, 0x0C, 0x00],
                              [0xC0, 0x80, 0x01, 0x01, 0x00], [0xC0, 0x80, 0x01, 0x02, 0x01, 0x00],
                              [0xC0, 0x80, 0x01] + [UInt8](repeating: 0x0A, count: 40) + [0x00],
                              [0xC0, 0x00, 0x00, 0x02, 0x00], [0x00, 0x00]]
        for b in bad {
            #expect(throws: CodecFailure.self, "\(b)") { try b.withUnsafeBytes { try OrderedDecimal.decode($0) } }
        }
        var r = SplitMix64(state: 9)
        var decoded = 0
        for _ in 0..<20_000 {
            var b = [UInt8](repeating: 0, count: r.below(12))
            for i in b.indices { b[i] = UInt8(truncatingIfNeeded: r.next()) }
            if r.below(2) == 0, !b.isEmpty { b[0] = [0x40, 0xC0][r.below(2)] }
            if let d = try? b.withUnsafeBytes({ try OrderedDecimal.decode($0) }) {
                decoded += 1
                #expect(OrderedDecimal.encode(d) == b || d.isNaN, "\(b) decodes to \(d)")
            }
        }
        #expect(decoded > 0)
    }
}
