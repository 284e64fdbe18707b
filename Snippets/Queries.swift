// Queries: conditions, orderings, pages, parameters, relation conditions, property queries.
import Foundation
import Strata

@Entity
final class Region {
    var id: Id = 0
    var name = ""
}

@Entity
final class Customer {
    var id: Id = 0
    var name = ""
    var region: ToOne<Region> = nil
    @Backlink(\Order.customer) var orders: ToMany<Order> = nil
}

@Entity
final class Order {
    var id: Id = 0
    @Index var amount = 0
    var summary = ""
    var customer: ToOne<Customer> = nil
}

// snippet.hide
let path = FileManager.default.temporaryDirectory.appendingPathComponent("strata-snippet-\(getpid())").path
defer { try? FileManager.default.removeItem(atPath: path) }
let store = try Store(directoryPath: path)
let orders = store.box(for: Order.self), customers = store.box(for: Customer.self)
let europe = Region(); europe.name = "Europe"
var placed: [Order] = []
for i in 0..<40 {
    let c = Customer(); c.name = "c\(i % 4)"
    if i % 2 == 0 { c.region.target = europe }
    let o = Order(); o.amount = i * 50; o.summary = "order-\(i)"; o.customer.target = c
    placed.append(o)
}
try orders.put(placed)
// snippet.show
// Conditions combine with && and ||; an @Index property is read through its index.
let big = try orders.query { Order.amount > 1_000 && Order.summary.startsWith("order-3") }
    .ordered(by: Order.amount, .descending)
    .build()
let firstPage = try big.find(offset: 0, limit: 10)
try big.setParameter(Order.amount, to: 1_500)      // run again with a new value, no rebuild
let fewer = try big.count()

// Relation conditions nest and combine with ||: orders → customer → region.
let european = try orders.query {
    Order.customer.matches { Customer.region.matches { Region.name == "Europe" } } || Order.amount == 0
}.build().findIds()
let busiest = try customers.query().ordered(by: Customer.orders.count, .descending).build().findFirst()

// Property queries read one stored field, without building objects.
let total = try orders.query().build().property(Order.amount).sum()
let names = try customers.query().build().property(Customer.name).distinct().findValues()
print(firstPage.count, fewer, european.count, busiest?.name ?? "-", total, names.sorted())
// snippet.hide
guard firstPage.map(\.amount) == [1_950, 1_900, 1_850, 1_800, 1_750, 1_700, 1_650, 1_600, 1_550, 1_500],
      fewer == 9, european.count == 20, total == (0..<40).reduce(0, { $0 + $1 * 50 }), names.sorted() == ["c0", "c1", "c2", "c3"]
else { fatalError("Queries: unexpected result") }
store.close()
