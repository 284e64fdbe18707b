import Foundation
import Strata
import Testing

/// Seeded random graph edits (puts with relations, to-many edits, removals on both sides)
/// against an in-memory graph, compared after every transaction and after reopens: no dangling
/// id, no half relation, backlinks always the exact reverse of the forward side.
@Suite struct GraphModelTests {
    struct Model {
        var buyers: Set<Id> = []
        var purchases: [Id: Id?] = [:]       // purchase → buyer
        var teachers: Set<Id> = []
        var students: [Id: [Id]] = [:]       // student → teachers, in order
    }

    @Test(arguments: [11, 12, 13])
    func randomGraphEditsMatchTheModel(seed: UInt64) throws {
        let dir = TemporaryDirectory()
        var rng = SplitMix64(state: seed)
        var model = Model()
        var store = try Store(directoryPath: dir.path, options: .testing(memtableBytes: 16 << 10))

        for round in 0..<30 {
            var next = model
            let rollback = rng.below(6) == 0
            let buyers = store.box(for: Buyer.self), purchases = store.box(for: Purchase.self)
            let teachers = store.box(for: Teacher.self), students = store.box(for: Student.self)
            do {
                try store.runInTransaction {
                    for _ in 0..<(5 + rng.below(30)) {
                        switch rng.below(8) {
                        case 0:
                            let b = Buyer(name: "b")
                            try buyers.put(b)
                            next.buyers.insert(b.id)
                        case 1:
                            // A purchase with an existing buyer, a new one, or none.
                            let p = Purchase(summary: "p")
                            switch rng.below(3) {
                            case 0: if let b = next.buyers.randomElement(using: &rng) { p.buyer.targetId = b }
                            case 1: p.buyer.target = Buyer(name: "new")
                            default: break
                            }
                            try purchases.put(p)
                            if let b = p.buyer.targetId { next.buyers.insert(b) }
                            next.purchases[p.id] = p.buyer.targetId
                        case 2:
                            // Move a purchase to another buyer, or clear it.
                            if let pid = next.purchases.keys.randomElement(using: &rng), let p = try purchases.get(pid) {
                                p.buyer.targetId = rng.below(3) == 0 ? nil : next.buyers.randomElement(using: &rng)
                                try purchases.put(p)
                                next.purchases[pid] = p.buyer.targetId
                            }
                        case 3:
                            if let b = next.buyers.randomElement(using: &rng) {
                                try buyers.remove(b)
                                next.buyers.remove(b)
                                for (p, owner) in next.purchases where owner == b { next.purchases[p] = .some(nil) }
                            }
                        case 4:
                            let t = Teacher(name: "t")
                            try teachers.put(t)
                            next.teachers.insert(t.id)
                        case 5:
                            let s = Student(name: "s")
                            for t in next.teachers.shuffled(using: &rng).prefix(rng.below(4)) {
                                s.teachers.append(try #require(try teachers.get(t)))
                            }
                            try students.put(s)
                            next.students[s.id] = s.teachers.map(\.id)
                        case 6:
                            // Edit a student's teachers, or a teacher's students (the backlink).
                            if rng.below(2) == 0, let sid = next.students.keys.randomElement(using: &rng), let s = try students.get(sid) {
                                if !s.teachers.isEmpty && rng.below(2) == 0 { s.teachers.remove(at: rng.below(s.teachers.count)) }
                                if let t = next.teachers.randomElement(using: &rng), !s.teachers.contains(where: { $0.id == t }) {
                                    s.teachers.append(try #require(try teachers.get(t)))
                                }
                                try s.teachers.applyToDb()
                                next.students[sid] = s.teachers.map(\.id)
                            } else if let tid = next.teachers.randomElement(using: &rng), let t = try teachers.get(tid),
                                      let sid = next.students.keys.randomElement(using: &rng) {
                                if let i = t.students.firstIndex(where: { $0.id == sid }) {
                                    t.students.remove(at: i)
                                    next.students[sid]?.removeAll { $0 == tid }
                                } else {
                                    t.students.append(try #require(try students.get(sid)))
                                    next.students[sid]?.append(tid)
                                }
                                try t.students.applyToDb()
                            }
                        default:
                            if rng.below(2) == 0, let t = next.teachers.randomElement(using: &rng) {
                                try teachers.remove(t)
                                next.teachers.remove(t)
                                for s in next.students.keys { next.students[s]?.removeAll { $0 == t } }
                            } else if let s = next.students.keys.randomElement(using: &rng) {
                                try students.remove(s)
                                next.students[s] = nil
                            }
                        }
                    }
                    if rollback { throw Boom() }
                }
            } catch is Boom {}
            if !rollback { model = next }
            try check(store, model, "seed \(seed) round \(round)")
            if round % 10 == 9 {
                store.close()
                store = try Store(directoryPath: dir.path, options: .testing(memtableBytes: 16 << 10))
                try check(store, model, "seed \(seed) after reopen in round \(round)")
            }
        }
    }

    private func check(_ store: Store, _ model: Model, _ context: String) throws {
        try store.runInReadOnlyTransaction {
            let buyers = try store.box(for: Buyer.self).all()
            #expect(Set(buyers.map(\.id)) == model.buyers, "\(context)")
            let purchases = try store.box(for: Purchase.self).all()
            #expect(Dictionary(uniqueKeysWithValues: purchases.map { ($0.id, $0.buyer.targetId) }) == model.purchases, "\(context)")
            for b in buyers {
                let expected = Set(model.purchases.filter { $0.value == b.id }.keys)
                #expect(Set(b.purchases.map(\.id)) == expected, "\(context): backlink of buyer \(b.id)")
            }
            let teachers = try store.box(for: Teacher.self).all()
            #expect(Set(teachers.map(\.id)) == model.teachers, "\(context)")
            let students = try store.box(for: Student.self).all()
            #expect(Dictionary(uniqueKeysWithValues: students.map { ($0.id, $0.teachers.map(\.id)) }) == model.students, "\(context)")
            for t in teachers {
                let expected = Set(model.students.filter { $0.value.contains(t.id) }.keys)
                #expect(Set(t.students.map(\.id)) == expected, "\(context): backlink of teacher \(t.id)")
            }
        }
    }
}
