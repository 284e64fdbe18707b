import Foundation
import Strata

/// `strata demo [DIR]`: stores entities, shows transactions (one commits, one rolls back),
/// closes the store, reopens it and shows that the data survived.
enum DemoCommand {
    static func run(directory: String) throws {
        print("Strata demo in \(directory)")
        do {
            let store = try Store(directoryPath: directory)
            let customers = store.box(for: Customer.self)
            let orders = store.box(for: Order.self)
            let notes = store.box(for: Note.self)
            // Start from an empty store when the directory holds an earlier demo.
            try store.runInTransaction {
                try orders.removeAll()
                try customers.removeAll()
                try notes.removeAll()
            }

            let ada = Customer(name: "Ada", email: "ada@example.com")
            let grace = Customer(name: "Grace")
            try customers.put([ada, grace])
            print("put 2 customers: Ada got id \(ada.id), Grace id \(grace.id)")

            try store.runInTransaction {
                try orders.put(Order(summary: "Analytical engine parts", amount: 1_200, customerId: ada.id))
                try orders.put(Order(summary: "Compiler manual", amount: 45, customerId: grace.id))
                try orders.put(Order(summary: "Punch cards", amount: 80, customerId: ada.id))
            }
            print("one transaction put 3 orders")

            var note = Note(text: "structs get their id through put(&note)")
            try notes.put(&note)
            print("note id \(note.id): \(note.text)")

            let attempt = Customer(name: "Never stored")
            do {
                try store.runInTransaction {
                    try customers.put(attempt)
                    try orders.put(Order(summary: "Lost order", amount: 1, customerId: attempt.id))
                    throw DemoError.changedMyMind
                }
            } catch DemoError.changedMyMind {
                print("a transaction that threw stored nothing: \(try customers.count()) customers, "
                      + "\(try orders.count()) orders; the rolled-back object's id is back to \(attempt.id)")
            }

            grace.email = "grace@example.com"
            try customers.put(grace)
            let shipped = try orders.all().filter { $0.customerId == ada.id }
            for order in shipped { order.status = .shipped }
            try orders.put(shipped)
            print("updated Grace's email and shipped Ada's \(shipped.count) orders")
            store.close()
        }

        print("closed the store; reopening")
        let store = try Store(directoryPath: directory)
        defer { store.close() }
        try store.runInReadOnlyTransaction {
            let orders = try store.box(for: Order.self).all()
            for customer in try store.box(for: Customer.self).all() {
                print("customer \(customer.id): \(customer.name) <\(customer.email ?? "no email")>")
                for order in orders where order.customerId == customer.id {
                    print("  order \(order.id): \(order.summary), \(order.amount), \(order.status.rawValue)")
                }
            }
            for note in try store.box(for: Note.self).all() { print("note \(note.id): \(note.text)") }
        }
    }

    enum DemoError: Error { case changedMyMind }
}
