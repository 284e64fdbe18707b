import Foundation

/// The flat CRUD workload of graph-workload.md ("the shape of ObjectBox's own Swift
/// benchmark"): F flat objects (id, a 20-character String, an Int64, a Double, a Bool); each
/// phase is one transaction: put all; get all by id, reading every field; update all (change the
/// Int64, put again); remove all.
enum FlatCrudPhase: String, CaseIterable {
    case put = "put-all"
    case get = "get-all"
    case update = "update-all"
    case remove = "remove-all"
}

/// One system under test, driven through the same four phases.
protocol FlatCrudSystem {
    static var name: String { get }
    init(directory: String) throws
    /// Inserts `count` objects built by `FlatValues`; returns their ids in order.
    mutating func putAll(count: Int) throws -> [Int64]
    /// Reads every object by id; returns a checksum over every field.
    func getAll(ids: [Int64]) throws -> Int64
    /// Adds 1 to every object's Int64 and writes it back.
    mutating func updateAll() throws
    /// Removes every object by id; returns how many were removed.
    func removeAll(ids: [Int64]) throws -> Int
    func close()
}

/// The values of object `i`, the same for every system.
enum FlatValues {
    static func text(_ i: Int) -> String {
        let s = String(i)
        return "flat-" + String(repeating: "0", count: 15 - s.count) + s   // 20 characters
    }
    static func number(_ i: Int) -> Int64 { Int64(i) * 3 }
    static func value(_ i: Int) -> Double { Double(i) / 7 }
    static func flag(_ i: Int) -> Bool { i % 2 == 0 }

    /// What a get-all over freshly put objects sums to, so every system can be checked.
    static func checksum(count: Int) -> Int64 {
        (0..<count).reduce(Int64(0)) { $0 &+ fieldSum(text: text($1), number: number($1), value: value($1), flag: flag($1)) }
    }

    static func fieldSum(text: String, number: Int64, value: Double, flag: Bool) -> Int64 {
        Int64(text.utf8.count) &+ number &+ Int64(value) &+ (flag ? 1 : 0)
    }
}
