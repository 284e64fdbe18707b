import Foundation
import Strata

/// `strata-objects-bench aggregate`: the sum of one property over every order of the graph
/// workload's 1M orders, as a property query (values read from the stored bytes, no object
/// built) and as `all().reduce` (every order decoded), in one run: issue 25's measurement.
enum AggregateBench {
    static func run(reps: Int, orders: Int) throws {
        let dir = NSTemporaryDirectory() + "strata-aggregate-bench-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let data = GraphData(sizes: { var s = GraphData.Sizes(); s.orders = orders; return s }())
        let graph = try StrataGraph(directory: dir)
        defer { graph.close() }
        try graph.insertCustomers(data)
        try graph.insertOrders(data)
        let box = graph.store.box(for: GOrder.self)
        let expected = data.orderAmount.reduce(0, +)
        let query = try box.query().build()
        var propertyTimes: [Double] = [], reduceTimes: [Double] = [], filteredTimes: [Double] = [], filteredReduceTimes: [Double] = []
        let filtered = try box.query { GOrder.date > 1_700_000_000 + 31_536_000 / 2 }.build()
        let filteredExpected = zip(data.orderDate, data.orderAmount).filter { $0.0 > 1_700_000_000 + 31_536_000 / 2 }.map(\.1).reduce(0, +)
        for _ in 0..<reps {
            var sum: Int64 = 0
            propertyTimes.append(try seconds { sum = try query.property(GOrder.amount).sum() })
            guard sum == expected else { throw NSError(domain: "aggregate", code: 1) }
            reduceTimes.append(try seconds { sum = try box.all().reduce(0) { $0 + $1.amount } })
            guard sum == expected else { throw NSError(domain: "aggregate", code: 2) }
            filteredTimes.append(try seconds { sum = try filtered.property(GOrder.amount).sum() })
            guard sum == filteredExpected else { throw NSError(domain: "aggregate", code: 3) }
            filteredReduceTimes.append(try seconds { sum = try filtered.find().reduce(0) { $0 + $1.amount } })
            guard sum == filteredExpected else { throw NSError(domain: "aggregate", code: 4) }
        }
        let p = median(propertyTimes), r = median(reduceTimes), fp = median(filteredTimes), fr = median(filteredReduceTimes)
        print("aggregate over \(orders) orders, \(reps) repetitions, medians; release build")
        print("| what | property query | decode every object | ratio |")
        print("|---|---:|---:|---:|")
        print(String(format: "| sum(amount), all orders | %.1f ms | %.1f ms (all().reduce) | %.2f× |", p * 1000, r * 1000, r / p))
        print(String(format: "| sum(amount), date in the second half | %.1f ms | %.1f ms (find().reduce) | %.2f× |", fp * 1000, fr * 1000, fr / fp))
    }
}
