// Relations: a to-one with its backlink, a to-many with its backlink, what removal does, and a
// delete rule.
import Foundation
import Strata

@Entity
final class Customer {
    var id: Id = 0
    var name = ""
    @Backlink(\Order.customer) var orders: ToMany<Order> = nil     // every order naming this customer
}

@Entity
final class Order {
    var id: Id = 0
    var amount = 0
    var customer: ToOne<Customer> = nil
}

@Entity
final class Student {
    var id: Id = 0
    var name = ""
    var teachers: ToMany<Teacher> = nil
}

@Entity
final class Teacher {
    var id: Id = 0
    var name = ""
    @DeleteRule(.deny) @Backlink(\Student.teachers) var students: ToMany<Student> = nil   // no removal while taught
}

// snippet.hide
let path = FileManager.default.temporaryDirectory.appendingPathComponent("strata-snippet-\(getpid())").path
defer { try? FileManager.default.removeItem(atPath: path) }
// snippet.show
let store = try Store(directoryPath: path)
let customers = store.box(for: Customer.self), orders = store.box(for: Order.self)

let joe = Customer()
joe.name = "Joe"
let order = Order()
order.amount = 42
order.customer.target = joe
try orders.put(order)                          // puts the new customer too, in one transaction

let sameJoe = try customers.get(joe.id)!
print(sameJoe.orders.map(\.amount))           // the backlink: [42]

// To-many: change the list, then write only the changes.
let students = store.box(for: Student.self)
let ann = Student(), mr = Teacher()
ann.name = "Ann"
mr.name = "Mr. Smith"
try students.put(ann)
ann.teachers.append(mr)                        // a new teacher is put with the change
try ann.teachers.applyToDb()
print(try store.box(for: Teacher.self).get(mr.id)!.students.map(\.name))   // ["Ann"]

// Removing the customer keeps its orders and clears their to-one: nothing dangles.
try customers.remove(joe)
print(try orders.get(order.id)!.customer.target == nil)                     // true

// A delete rule: a teacher who still has students is not removed, and nothing is written.
do {
    try store.box(for: Teacher.self).remove(mr)
} catch {
    print(error)   // Teacher with id 1 cannot be removed: Teacher.students still reaches 1 object (its delete rule is .deny)
}
// snippet.hide
guard try store.box(for: Teacher.self).count() == 1 else { fatalError("Relations: the deny rule did not hold") }
guard try orders.get(order.id)!.customer.targetId == nil, try orders.count() == 1,
      try store.box(for: Teacher.self).get(mr.id)!.students.map(\.id) == [ann.id] else { fatalError("Relations: unexpected result") }
store.close()
