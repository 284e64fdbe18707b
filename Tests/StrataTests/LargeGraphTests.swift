import Foundation
import Strata
import Testing

@Suite struct LargeGraphTests {
    /// A million N:M edges: 100,000 students with 10 teachers each, across flushes and
    /// compactions; every backlink is the exact reverse; removing a teacher clears 10% of the
    /// students' lists and nothing else; all of it survives a reopen.
    @Test func aMillionEdges() throws {
        let dir = TemporaryDirectory()
        let studentCount = 100_000, teacherCount = 100, perStudent = 10
        do {
            let store = try Store(directoryPath: dir.path, options: .testing(memtableBytes: 1 << 20))
            let teachers = (0..<teacherCount).map { Teacher(name: "t\($0)") }
            try store.box(for: Teacher.self).put(teachers)
            let students = store.box(for: Student.self)
            for chunk in stride(from: 0, to: studentCount, by: 10_000) {
                try students.put((chunk..<(chunk + 10_000)).map { i in
                    let s = Student(name: "s\(i)")
                    for k in 0..<perStudent { s.teachers.append(teachers[(i + k * 7) % teacherCount]) }
                    return s
                })
            }
            let all = try store.box(for: Teacher.self).all()
            try store.box(for: Teacher.self).prefetch(\.students, for: all)
            #expect(all.reduce(0) { $0 + $1.students.count } == studentCount * perStudent)
            #expect(all.allSatisfy { $0.students.count == studentCount * perStudent / teacherCount })
            try store.box(for: Teacher.self).remove(teachers[0].id)
            store.close()
        }
        let store = try Store(directoryPath: dir.path, options: .testing())
        let students = try store.box(for: Student.self).get((1...Id(100)).map { $0 + Id(teacherCount) })
        for (i, s) in students.enumerated() {
            let expected = (0..<perStudent).map { (i + $0 * 7) % teacherCount }.filter { $0 != 0 }.map { "t\($0)" }
            #expect(s.teachers.map(\.name) == expected)
        }
        #expect(try store.box(for: Student.self).count() == studentCount)
        #expect(try store.box(for: Teacher.self).count() == teacherCount - 1)
    }
}
