import Foundation
import Strata

/// The demo's model: customers and their orders (linked by id until relations arrive), and
/// notes as a struct entity.
@Entity
final class Customer {
    var id: Id = 0
    var name = ""
    var email: String? = nil
    var since = Date(timeIntervalSince1970: 0)

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
    var customerId: Id = 0
    var status = OrderStatus.open

    init(summary: String, amount: Int64, customerId: Id) {
        self.summary = summary
        self.amount = amount
        self.customerId = customerId
    }
}

@Entity
struct Note {
    var id: Id = 0
    var text = ""
}
