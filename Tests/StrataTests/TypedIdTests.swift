import Foundation
import Strata
import StrataTestSupport
import Testing

@Entity final class TypedCustomer {
    var id: EntityId<TypedCustomer> = 0
    var name = ""
    @Backlink(\TypedOrder.customer) var orders: ToMany<TypedOrder> = nil
    init(name: String = "") { self.name = name }
}

@Entity struct TypedOrder {
    var id: EntityId<Self> = 0
    var amount: Int64 = 0
    var customer: ToOne<TypedCustomer> = nil
}

// One stored entity, declared with a plain id in one session and a typed one in the next.
@Entity(name: "Ledger") final class PlainLedger {
    var id: Id = 0
    var note = ""
}

@Entity(name: "Ledger") final class TypedLedger {
    var id: EntityId<TypedLedger> = 0
    var note = ""
}

/// Typed ids (issue 55): `EntityId<T>` beside `Id`, taken by boxes, to-ones and conditions.
@Suite struct TypedIdTests {
    @Test func typedIdsWorkWhereIdsDo() throws {
        let dir = TemporaryDirectory()
        var store = try Store(directoryPath: dir.path)
        let customers = store.box(for: TypedCustomer.self), orders = store.box(for: TypedOrder.self)
        let ada = TypedCustomer(name: "Ada"), grace = TypedCustomer(name: "Grace")
        try customers.put([ada, grace])
        #expect(ada.id == EntityId(1) && grace.id == 2)
        var order = TypedOrder(amount: 42)
        order.customer = ToOne(targetId: ada.id)
        try orders.put(&order)
        #expect(order.id.rawValue == 1)
        #expect(try orders.get(order.id)?.customer.targetEntityId == ada.id)
        #expect(try customers.get(ada.id)?.orders.map(\.id) == [order.id])
        #expect(try customers.contains(grace.id))
        #expect(try customers.get([grace.id, ada.id]).map(\.name) == ["Grace", "Ada"])
        // Conditions on a to-one take the target's typed id.
        #expect(try orders.query { TypedOrder.customer == ada.id }.build().count() == 1)
        #expect(try orders.query { TypedOrder.customer != ada.id }.build().count() == 0)
        #expect(try orders.query { TypedOrder.customer.isIn([grace.id]) }.build().count() == 0)
        // Setting the target by typed id; a literal still means an Id.
        let edited = try #require(try orders.get(order.id))
        edited.customer.targetEntityId = grace.id
        try orders.put(edited)
        #expect(try orders.get(1)?.customer.targetId == grace.id.rawValue)
        store.close()
        store = try Store(directoryPath: dir.path)
        defer { store.close() }
        #expect(try store.box(for: TypedOrder.self).get(order.id)?.customer.targetEntityId == grace.id)
        #expect(try store.box(for: TypedCustomer.self).remove(ada.id))
        #expect(try store.box(for: TypedCustomer.self).remove([grace.id]) == 1)
        #expect(try store.box(for: TypedOrder.self).get(order.id)?.customer.targetId == nil)
        // Codable as the bare number, as an Id.
        let json = try JSONEncoder().encode([order.id])
        #expect(String(decoding: json, as: UTF8.self) == "[1]")
        #expect(try JSONDecoder().decode([EntityId<TypedOrder>].self, from: json) == [order.id])
    }

    /// Stored the same either way: a type switches from `Id` to `EntityId` and keeps its objects.
    @Test func switchingToATypedIdKeepsTheStoredObjects() throws {
        let dir = TemporaryDirectory()
        var store = try Store(directoryPath: dir.path)
        let plain = PlainLedger()
        plain.note = "opening balance"
        try store.box(for: PlainLedger.self).put(plain)
        store.close()
        store = try Store(directoryPath: dir.path)
        defer { store.close() }
        let typed = store.box(for: TypedLedger.self)
        #expect(try typed.get(EntityId<TypedLedger>(plain.id))?.note == "opening balance")
        let next = TypedLedger()
        try typed.put(next)
        #expect(next.id.rawValue == plain.id + 1)
    }
}
