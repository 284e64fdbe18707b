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

        Example:
          strata demo /tmp/strata-demo
        """)

    @Argument(help: "Where to create the demo store (emptied first if it holds an earlier demo).")
    var directory = "strata-demo-store"

    func run() throws {
        try reportingFailures(directory: directory) { try Self.run(directory: directory) }
    }

    static func run(directory: String) throws {
        print("Strata demo in \(directory)")
        do {
            let store = try Store(directoryPath: directory)
            try clear(store)
            let customers = store.box(for: Customer.self)
            let orders = store.box(for: Order.self)

            print("\n1:N: customers and orders (ToOne with a backlink)")
            let ada = Customer(name: "Ada", email: "ada@example.com")
            let grace = Customer(name: "Grace")
            let orderIds = try orders.put([
                Order(summary: "Analytical engine parts", amount: 1_200, customer: ada),
                Order(summary: "Compiler manual", amount: 45, customer: grace),
                Order(summary: "Punch cards", amount: 80, customer: ada),
            ])
            print("put 3 orders; their new customers were put with them: Ada id \(ada.id), Grace id \(grace.id)")
            guard let order = try orders.get(orderIds[0]), let adaRead = try customers.get(ada.id) else { throw DemoError.missing }
            print("order \(order.id) → customer (to-one, loaded lazily): \(order.customer.target?.name ?? "none")")
            print("Ada → orders (backlink, one prefix scan): \(adaRead.orders.map(\.summary))")

            print("\nN:M: students and teachers (ToMany with a backlink)")
            let lovelace = Teacher(name: "Prof. Lovelace"), hopper = Teacher(name: "Prof. Hopper")
            let students = [Student(name: "Alan"), Student(name: "Barbara"), Student(name: "Edsger")]
            students[0].teachers.append(contentsOf: [lovelace, hopper])
            students[1].teachers.append(hopper)
            students[2].teachers.append(lovelace)
            try store.box(for: Student.self).put(students)
            for s in try store.box(for: Student.self).all() { print("\(s.name) → teachers: \(s.teachers.map(\.name))") }
            for t in try store.box(for: Teacher.self).all() { print("\(t.name) → students: \(t.students.map(\.name))") }

            print("\nA tree (ToOne to itself, children as its backlink)")
            let root = TreeNode(name: "root")
            let docs = TreeNode(name: "docs", parent: root)
            try store.box(for: TreeNode.self).put([TreeNode(name: "src", parent: root), TreeNode(name: "README", parent: docs)])
            guard let storedRoot = try store.box(for: TreeNode.self).get(root.id) else { throw DemoError.missing }
            try printTree(storedRoot, indent: "")

            print("\nRemovals clear references and keep targets")
            try customers.remove(ada.id)
            let orphaned = try orders.all().filter { $0.customer.targetId == nil }.map(\.summary)
            print("removed Ada: her orders remain (\(try orders.count()) orders), now without customer: \(orphaned)")
            try store.box(for: Teacher.self).remove(hopper.id)
            let alan = try store.box(for: Student.self).get(students[0].id)
            print("removed Prof. Hopper: Alan's teachers are now \(alan?.teachers.map(\.name) ?? [])")
            try store.box(for: TreeNode.self).remove(docs.id)
            print("removed docs: README's parent is now \(try store.box(for: TreeNode.self).all().first { $0.name == "README" }?.parent.target?.name ?? "nil")")

            let attempt = Customer(name: "Never stored")
            do {
                try store.runInTransaction {
                    try orders.put(Order(summary: "Lost order", amount: 1, customer: attempt))
                    throw DemoError.changedMyMind
                }
            } catch DemoError.changedMyMind {
                print("a transaction that threw stored nothing: \(try customers.count()) customer(s), "
                      + "\(try orders.count()) orders; the rolled-back customer's id is back to \(attempt.id)")
            }
            var note = Note(text: "structs get their id through put(&note)")
            try store.box(for: Note.self).put(&note)
            store.close()
        }

        print("\nclosed the store; reopening")
        let store = try Store(directoryPath: directory)
        defer { store.close() }
        try store.runInReadOnlyTransaction {
            for customer in try store.box(for: Customer.self).all() {
                print("customer \(customer.id) \(customer.name): orders \(customer.orders.map(\.summary))")
            }
            for order in try store.box(for: Order.self).all() {
                print("order \(order.id) \(order.summary) (\(order.amount), \(order.status.rawValue)) → \(order.customer.target?.name ?? "no customer")")
            }
            for t in try store.box(for: Teacher.self).all() { print("\(t.name) → students: \(t.students.map(\.name))") }
            for note in try store.box(for: Note.self).all() { print("note \(note.id): \(note.text)") }
        }
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

    private static func printTree(_ node: TreeNode, indent: String) throws {
        print("\(indent)\(node.name)")
        for child in node.children { try printTree(child, indent: indent + "  ") }
    }

    enum DemoError: Error { case changedMyMind, missing }
}
