import Foundation
import Strata

@Entity
final class FlatObject {
    var id: Id = 0
    var text = ""
    var number: Int64 = 0
    var value = 0.0
    var flag = false
}

struct StrataFlat: FlatCrudSystem {
    static let name = "strata"
    let store: Store
    var objects: [FlatObject] = []

    init(directory: String) throws {
        store = try Store(directoryPath: directory, options: BenchDurability.current.strataOptions)
    }

    mutating func putAll(count: Int) throws -> [Int64] {
        objects = (0..<count).map { i in
            let o = FlatObject()
            o.text = FlatValues.text(i)
            o.number = FlatValues.number(i)
            o.value = FlatValues.value(i)
            o.flag = FlatValues.flag(i)
            return o
        }
        return try store.box(for: FlatObject.self).put(objects).map { Int64($0) }
    }

    func getAll(ids: [Int64]) throws -> Int64 {
        let box = store.box(for: FlatObject.self)
        return try store.runInReadOnlyTransaction {
            var sum: Int64 = 0
            for id in ids {
                guard let o = try box.get(Id(id)) else { continue }
                sum &+= FlatValues.fieldSum(text: o.text, number: o.number, value: o.value, flag: o.flag)
            }
            return sum
        }
    }

    mutating func updateAll() throws {
        for o in objects { o.number += 1 }
        try store.box(for: FlatObject.self).put(objects)
    }

    func removeAll(ids: [Int64]) throws -> Int {
        try store.box(for: FlatObject.self).remove(ids.map { Id($0) })
    }

    func close() { store.close() }
}
