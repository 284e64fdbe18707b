import Testing
@testable import StrataStorage

@Suite struct EngineBasicsTests {
    @Test func putGetFlushReopen() throws {
        let dir = TemporaryDirectory()
        do {
            let e = try Engine.open(directory: dir.path)
            let ks = e.defaultKeySpace
            try e.put("a", "1", in: ks)
            try e.put("b", "2", in: ks)
            try e.flush()
            #expect(e.statistics().keySpaces[0].segmentsPerLevel[0] == 1)
            #expect(try e.getString("a", in: ks) == "1")
            try e.put("c", "3", in: ks)
            e.close()
        }
        let e = try Engine.open(directory: dir.path)
        defer { e.close() }
        let ks = e.defaultKeySpace
        #expect(try e.keys(ks) == ["a", "b", "c"])
        #expect(try e.getString("b", in: ks) == "2")
    }
}
