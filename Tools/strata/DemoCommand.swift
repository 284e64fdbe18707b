import ArgumentParser
import Foundation
import Strata

/// `strata demo [DIR]`: builds the seed documents' example graphs (customers and orders,
/// students and teachers, a tree) in a fresh store, traverses them both ways, removes objects
/// (references are cleared, targets kept), rolls a transaction back, then reopens the store and
/// shows that everything survived.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Build the seed documents' example graphs in a fresh store, traverse and reopen it.",
        discussion: """
        Customers and orders (a ToOne with its backlink), students and teachers (a ToMany with its
        backlink), a tree (a ToOne to itself); removals that clear references and keep targets; a
        rolled-back transaction; then the store is closed, reopened and read back.

        With --json, one object: the steps' lines, and what the reopened store holds.

        Examples:
          strata demo /tmp/strata-demo
          strata demo /tmp/strata-demo --json
        """)

    @Argument(help: "Where to create the demo store (emptied first if it holds an earlier demo).")
    var directory = "strata-demo-store"

    @Flag(help: "Write machine-readable JSON instead of text.")
    var json = false

    @Option(name: .customLong("key-file"),
            help: "Encrypt the demo store with the 32-byte key in this file (raw, or 64 hex digits).")
    var keyFile: String?

    func run() throws {
        try reportingFailures(directory: directory, json: json) {
            let out = DemoOutput(printing: !json)
            let reopened = try Self.run(directory: directory, key: try keyFile.map(KeyFile.read), out: out)
            if json {
                print(JSONValue.object([
                    ("directory", .string(directory)),
                    ("steps", .array(out.lines.map { .string($0) })),
                    ("reopened", .object(reopened.map { ($0.entity, .int(Int64($0.count))) })),
                ]).text)
            }
        }
    }

    /// The demo's narrative: printed as it goes, or kept for the JSON answer.
    final class DemoOutput {
        let printing: Bool
        private(set) var lines: [String] = []
        init(printing: Bool) { self.printing = printing }
        func say(_ line: String) {
            if printing { print(line) } else { lines.append(line.trimmingCharacters(in: .newlines)) }
        }
    }

    /// Runs the demo; returns how many objects of each entity the reopened store holds.
    @discardableResult
    static func run(directory: String, key: [UInt8]?, out: DemoOutput) throws -> [(entity: String, count: Int)] {
        var options = StoreOptions()
        options.engine.encryptionKey = key
        out.say("Strata demo in \(directory)")
        do {
            let store = try Store(directoryPath: directory, options: options)
            try clear(store)
            let customers = store.box(for: Customer.self)
            let orders = store.box(for: Order.self)

            out.say("\n1:N: customers and orders (ToOne with a backlink)")
            let ada = Customer(name: "Ada", email: "ada@example.com")
            let grace = Customer(name: "Grace")
            let orderIds = try orders.put([
                Order(summary: "Analytical engine parts", amount: 1_200, customer: ada),
                Order(summary: "Compiler manual", amount: 45, customer: grace),
                Order(summary: "Punch cards", amount: 80, customer: ada),
            ])
            out.say("put 3 orders; their new customers were put with them: Ada id \(ada.id), Grace id \(grace.id)")
            guard let order = try orders.get(orderIds[0]), let adaRead = try customers.get(ada.id) else { throw DemoError.missing }
            out.say("order \(order.id) → customer (to-one, loaded lazily): \(order.customer.target?.name ?? "none")")
            out.say("Ada → orders (backlink, one prefix scan): \(adaRead.orders.map(\.summary))")

            out.say("\nN:M: students and teachers (ToMany with a backlink)")
            let lovelace = Teacher(name: "Prof. Lovelace"), hopper = Teacher(name: "Prof. Hopper")
            let students = [Student(name: "Alan"), Student(name: "Barbara"), Student(name: "Edsger")]
            students[0].teachers.append(contentsOf: [lovelace, hopper])
            students[1].teachers.append(hopper)
            students[2].teachers.append(lovelace)
            try store.box(for: Student.self).put(students)
            for s in try store.box(for: Student.self).all() { out.say("\(s.name) → teachers: \(s.teachers.map(\.name))") }
            for t in try store.box(for: Teacher.self).all() { out.say("\(t.name) → students: \(t.students.map(\.name))") }

            out.say("\nA tree (ToOne to itself, children as its backlink)")
            let root = TreeNode(name: "root")
            let docs = TreeNode(name: "docs", parent: root)
            try store.box(for: TreeNode.self).put([TreeNode(name: "src", parent: root), TreeNode(name: "README", parent: docs)])
            guard let storedRoot = try store.box(for: TreeNode.self).get(root.id) else { throw DemoError.missing }
            try printTree(storedRoot, indent: "", out: out)

            out.say("\nRemovals clear references and keep targets")
            try customers.remove(ada.id)
            let orphaned = try orders.all().filter { $0.customer.targetId == nil }.map(\.summary)
            out.say("removed Ada: her orders remain (\(try orders.count()) orders), now without customer: \(orphaned)")
            try store.box(for: Teacher.self).remove(hopper.id)
            let alan = try store.box(for: Student.self).get(students[0].id)
            out.say("removed Prof. Hopper: Alan's teachers are now \(alan?.teachers.map(\.name) ?? [])")
            try store.box(for: TreeNode.self).remove(docs.id)
            out.say("removed docs: README's parent is now \(try store.box(for: TreeNode.self).all().first { $0.name == "README" }?.parent.target?.name ?? "nil")")

            let attempt = Customer(name: "Never stored")
            do {
                try store.runInTransaction {
                    try orders.put(Order(summary: "Lost order", amount: 1, customer: attempt))
                    throw DemoError.changedMyMind
                }
            } catch DemoError.changedMyMind {
                out.say("a transaction that threw stored nothing: \(try customers.count()) customer(s), "
                      + "\(try orders.count()) orders; the rolled-back customer's id is back to \(attempt.id)")
            }
            var note = Note(text: "structs get their id through put(&note)")
            try store.box(for: Note.self).put(&note)
            store.close()
        }

        out.say("\nclosed the store; reopening")
        let store = try Store(directoryPath: directory, options: options)
        defer { store.close() }
        try store.runInReadOnlyTransaction {
            for customer in try store.box(for: Customer.self).all() {
                out.say("customer \(customer.id) \(customer.name): orders \(customer.orders.map(\.summary))")
            }
            for order in try store.box(for: Order.self).all() {
                out.say("order \(order.id) \(order.summary) (\(order.amount), \(order.status.rawValue)) → \(order.customer.target?.name ?? "no customer")")
            }
            for t in try store.box(for: Teacher.self).all() { out.say("\(t.name) → students: \(t.students.map(\.name))") }
            for note in try store.box(for: Note.self).all() { out.say("note \(note.id): \(note.text)") }
        }
        return [("Customer", try store.box(for: Customer.self).count()), ("Order", try store.box(for: Order.self).count()),
                ("Student", try store.box(for: Student.self).count()), ("Teacher", try store.box(for: Teacher.self).count()),
                ("TreeNode", try store.box(for: TreeNode.self).count()), ("Note", try store.box(for: Note.self).count())]
    }

    /// Starts from an empty store when the directory holds an earlier demo.
    private static func clear(_ store: Store) throws {
        try store.runInTransaction {
            try store.box(for: Order.self).removeAll()
            try store.box(for: Customer.self).removeAll()
            try store.box(for: Student.self).removeAll()
            try store.box(for: Teacher.self).removeAll()
            try store.box(for: TreeNode.self).removeAll()
            try store.box(for: Note.self).removeAll()
        }
    }

    private static func printTree(_ node: TreeNode, indent: String, out: DemoOutput) throws {
        out.say("\(indent)\(node.name)")
        for child in node.children { try printTree(child, indent: indent + "  ", out: out) }
    }

    enum DemoError: Error { case changedMyMind, missing }
}
