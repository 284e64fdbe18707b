import Foundation
import BenchSupport
import Strata

/// The two calls ARCHITECTURE.md draws, one at a time, for callgrind (`profile.sh put-new-related`
/// and `profile.sh get`): a put of an order whose customer is new (each its own transaction, so
/// the count includes finding the transaction, the relation visit, the commit) and a get by id.
struct PutGetProfile {
    let store: Store
    let count: Int

    /// Each order's customer is new: the put writes both objects and the backlink's edge.
    @inline(never)   // a frame of its own: profile.sh counts inside it
    func putNewRelated() throws {
        let orders = store.box(for: GOrder.self)
        for i in 0..<count {
            let customer = GCustomer()
            customer.name = GraphData.customerName(i)
            customer.email = GraphData.customerEmail(i)
            let order = GOrder()
            order.summary = "order \(i)"
            order.amount = Int64(i)
            order.customer.target = customer
            try orders.put(order)
        }
    }

    /// Gets every order once, in a shuffled order, and reads a property.
    @inline(never)   // a frame of its own: profile.sh counts inside it
    func getOne(_ ids: [Id]) throws -> Int64 {
        let orders = store.box(for: GOrder.self)
        var sum: Int64 = 0
        for id in ids {
            guard let order = try orders.get(id) else { continue }
            sum += order.amount
        }
        return sum
    }
}

/// `strata-objects-bench put-get-child DIR N`: N puts with a new related object, then N gets.
func runPutGetProfile(directory: String, count: Int) throws {
    let store = try Store(directoryPath: directory, options: BenchDurability.current.strataOptions)
    defer { store.close() }
    let profile = PutGetProfile(store: store, count: count)
    try profile.putNewRelated()
    var random = SplitMix64(state: 11)
    let ids = (1...count).map { _ in Id(random.next() % UInt64(count) + 1) }
    let sum = try profile.getOne(ids)
    print("{\"operations\":{\"put-new-related\":\(count),\"get\":\(count)},\"checksum\":\(sum)}")
}
