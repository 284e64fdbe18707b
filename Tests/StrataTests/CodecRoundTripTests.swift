import Foundation
import Strata
import StrataStorage
import Testing

@Suite struct CodecRoundTripTests {
    static let edgeValues: [Everything] = {
        var minimum = Everything()
        minimum.bool = false
        minimum.int = .min
        minimum.int8 = .min
        minimum.int16 = .min
        minimum.int32 = .min
        minimum.int64 = .min
        minimum.float = -.greatestFiniteMagnitude
        minimum.double = -.infinity
        minimum.date = .distantPast
        minimum.priority = .low
        minimum.mood = .happy
        minimum.optionalInt = .min
        minimum.optionalInt8 = .min
        minimum.optionalUInt64 = 0
        minimum.optionalFloat = .nan
        minimum.optionalDouble = -0.0
        minimum.optionalString = ""
        minimum.optionalData = Data()
        minimum.optionalBytes = []
        minimum.optionalMood = nil

        var maximum = Everything()
        maximum.bool = true
        maximum.int = .max
        maximum.int8 = .max
        maximum.int16 = .max
        maximum.int32 = .max
        maximum.int64 = .max
        maximum.uint = .max
        maximum.uint8 = .max
        maximum.uint16 = .max
        maximum.uint32 = .max
        maximum.uint64 = .max
        maximum.float = .nan
        maximum.double = .nan
        maximum.string = "naïve 🧪 \u{0} \n end"
        maximum.date = .distantFuture
        maximum.data = Data((0..<1000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        maximum.bytes = [0, 255, 128]
        maximum.priority = .high
        maximum.mood = .grumpy
        maximum.optionalBool = true
        maximum.optionalInt = .max
        maximum.optionalInt8 = .max
        maximum.optionalUInt64 = .max
        maximum.optionalFloat = .infinity
        maximum.optionalDouble = .ulpOfOne
        maximum.optionalString = String(repeating: "x", count: 70_000)
        maximum.optionalDate = Date(timeIntervalSinceReferenceDate: 123.456789)
        maximum.optionalData = Data([1, 2, 3])
        maximum.optionalBytes = [9]
        maximum.optionalPriority = .high
        maximum.optionalMood = .happy

        var negatives = Everything()
        negatives.int = -1
        negatives.int8 = -1
        negatives.int32 = -64
        negatives.int64 = -65
        negatives.double = .leastNonzeroMagnitude
        negatives.float = -.leastNonzeroMagnitude
        negatives.optionalPriority = .low
        return [Everything(), minimum, maximum, negatives]
    }()

    @Test func everyTypeRoundTripsThroughTheStoreAndAReopen() throws {
        let dir = TemporaryDirectory()
        var stored = Self.edgeValues
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            let box = store.box(for: Everything.self)
            try box.put(&stored)
            for object in stored { #expect(try box.get(object.id) == object) }
            store.close()
        }
        let store = try Store(directoryPath: dir.path, options: .testing())
        let box = store.box(for: Everything.self)
        #expect(try box.all() == stored)
    }

    /// `@Entity` must not make the compiler synthesize a memberwise `==` over the type's own:
    /// generic code (`Optional`, `Array`, `#expect`) would then compare NaN fields as unequal.
    /// Varints of every length, 1 to 10 bytes, each near the start of an object (where the
    /// reader decodes up to 8 bytes from one word) and as its last field (where fewer than 8
    /// bytes remain and it reads byte by byte).
    @Test func integersOfEveryVarintLengthRoundTrip() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let box = store.box(for: Everything.self)
        var values: [UInt64] = [0, 1, .max, .max - 1]
        for bits in stride(from: 7, through: 63, by: 7) {
            values += [(1 << UInt64(bits)) - 1, 1 << UInt64(bits), (1 << UInt64(bits)) + 1]
        }
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<200 { values.append(UInt64.random(in: 0...UInt64.max, using: &rng) >> UInt64.random(in: 0...63, using: &rng)) }
        var objects: [Everything] = []
        for v in values {
            var o = Everything()
            o.uint64 = v
            o.int64 = Int64(bitPattern: v)
            o.int = Int(bitPattern: UInt(v))
            o.optionalUInt64 = v          // among the last fields written
            objects.append(o)
        }
        let ids = try box.put(objects)
        for (id, o) in zip(ids, objects) {
            let read = try #require(try box.get(id))
            #expect(read.uint64 == o.uint64 && read.int64 == o.int64 && read.int == o.int && read.optionalUInt64 == o.optionalUInt64,
                    "varint \(o.uint64)")
        }
    }

    @Test func aHandWrittenEqualityStaysTheEquatableWitness() {
        func genericEqual<T: Equatable>(_ a: T, _ b: T) -> Bool { a == b }
        var object = Everything()
        object.double = .nan
        object.optionalFloat = .nan
        #expect(object == object)
        #expect(genericEqual(object, object))
        #expect(Optional(object) == Optional(object))
        #expect([object] == [object])
    }

    @Test func hugeDataRoundTripsAndOversizedObjectsAreRefused() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let box = store.box(for: Everything.self)
        var big = Everything()
        big.data = Data(repeating: 0xAB, count: 8 << 20)
        try box.put(&big)
        #expect(try box.get(big.id)?.data == big.data)

        var tooBig = Everything()
        tooBig.bytes = [UInt8](repeating: 1, count: 64 << 20)
        #expect {
            try box.put(tooBig)
        } throws: { error in
            guard case let StrataError.objectTooLarge(entity, size, limit)? = error as? StrataError else { return false }
            return entity == "Everything" && size > limit
        }
        // Nothing of the failed transaction is stored, and the failed put did not take an id.
        try store.runInTransaction {
            try box.put(Everything())
            #expect(throws: StrataError.self) { try box.put(tooBig) }
        }
        #expect(try box.count() == 2)
    }

    @Test func manyObjectsAcrossFlushesAndCompaction() throws {
        let dir = TemporaryDirectory()
        let count = 20_000
        do {
            let store = try Store(directoryPath: dir.path, options: .testing(memtableBytes: 32 << 10))
            let notes = store.box(for: Note.self)
            for chunk in stride(from: 0, to: count, by: 1_000) {
                try notes.put((chunk..<(chunk + 1_000)).map { Note(text: "note \($0)") })
            }
            // Rewrite every other object and remove every third, so compaction has work.
            try store.runInTransaction {
                for id in stride(from: Id(2), through: Id(count), by: 2) {
                    try notes.put(Note(id: id, text: "rewritten \(id)"))
                }
                for id in stride(from: Id(3), through: Id(count), by: 3) { try notes.remove(id) }
            }
            let report = try store.compact()
            #expect(report.bytesAfter < report.bytesBefore)
            store.close()
        }
        let store = try Store(directoryPath: dir.path, options: .testing())
        let notes = store.box(for: Note.self)
        let all = try notes.all()
        #expect(all.count == count - count / 3)
        for note in all {
            #expect(note.id % 3 != 0)
            #expect(note.text == (note.id % 2 == 0 ? "rewritten \(note.id)" : "note \(note.id - 1)"))
        }
    }
}

@Suite struct StoredBytesTests {
    /// The worked example of SPEC.md §11.3, byte for byte, read back through the engine.
    @Test func noteIsStoredAsTheSpecSays() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            let notes = store.box(for: Note.self)
            try notes.put([Note(text: "a"), Note(text: "b")])
            try notes.put(Note(text: "hi"))
            store.close()
        }
        let stored = try StoredBytes(directory: dir.path)
        let engine = stored.engine, objects = stored.objects, meta = stored.meta
        defer { engine.close() }
        #expect(try engine.get([0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3], in: objects) == [0x01, 0x0A, 0x02, 0x68, 0x69])
        #expect(try engine.get([1], in: meta) == [5, 0, 0, 0])
        #expect(try engine.get([4, 0, 0, 0, 1], in: meta) == [3, 0, 0, 0, 0, 0, 0, 0])   // 3 notes stored
        #expect(try engine.get([3, 0, 0, 0, 1], in: meta) == [3, 0, 0, 0, 0, 0, 0, 0])
        // Entity record: version 6, no flags, name "Note", last property id 1, one property:
        // id 1, name "text", type 12 (String), flags 0.
        let record: [UInt8] = [6, 0, 4, 0x4E, 0x6F, 0x74, 0x65, 1, 1, 1, 4, 0x74, 0x65, 0x78, 0x74, 12, 0]
        #expect(try engine.get([2, 0, 0, 0, 1], in: meta) == record)
    }
}
