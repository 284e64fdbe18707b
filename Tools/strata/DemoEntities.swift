import Foundation
import Strata

// The demo's model: the seed documents' examples (ObjectBox's Customer/Order, Student/Teacher
// and TreeNode), and a struct entity.

@Entity
final class Customer {
    var id: Id = 0
    var name = ""
    var email: String? = nil
    @Backlink(\Order.customer) var orders: ToMany<Order> = nil

    init(name: String, email: String? = nil) {
        self.name = name
        self.email = email
    }
}

enum OrderStatus: String {
    case open, shipped
}

@Entity
final class Order {
    var id: Id = 0
    var summary = ""
    var amount: Int64 = 0
    var status = OrderStatus.open
    var customer: ToOne<Customer> = nil

    init(summary: String, amount: Int64, customer: Customer? = nil) {
        self.summary = summary
        self.amount = amount
        self.customer = ToOne(target: customer)
    }
}

@Entity
final class Student {
    var id: Id = 0
    var name = ""
    var teachers: ToMany<Teacher> = nil

    init(name: String) { self.name = name }
}

@Entity
final class Teacher {
    var id: Id = 0
    var name = ""
    @Backlink(\Student.teachers) var students: ToMany<Student> = nil

    init(name: String) { self.name = name }
}

@Entity
final class TreeNode {
    var id: Id = 0
    var name = ""
    var parent: ToOne<TreeNode> = nil
    @Backlink(\TreeNode.parent) var children: ToMany<TreeNode> = nil

    init(name: String, parent: TreeNode? = nil) {
        self.name = name
        self.parent = ToOne(target: parent)
    }
}

@Entity
struct Note {
    var id: Id = 0
    var text = ""
}
