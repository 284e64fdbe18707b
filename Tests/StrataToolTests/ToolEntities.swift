import Foundation
import Strata

// A small shop and school, like the seed documents', with an index: the known store the tool's
// tests inspect.

@Entity
final class ShopCustomer {
    var id: Id = 0
    @Unique var email = ""
    var name = ""
    @Backlink(\ShopOrder.customer) var orders: ToMany<ShopOrder> = nil

    init(email: String, name: String) {
        self.email = email
        self.name = name
    }
}

@Entity
final class ShopOrder {
    var id: Id = 0
    @Index var amount: Int64 = 0
    var placed = Date(timeIntervalSinceReferenceDate: 0)
    var customer: ToOne<ShopCustomer> = nil

    init(amount: Int64, customer: ShopCustomer?) {
        self.amount = amount
        self.customer = ToOne(target: customer)
    }
}

@Entity
final class Pupil {
    var id: Id = 0
    var name = ""
    var tutors: ToMany<Tutor> = nil

    init(name: String) { self.name = name }
}

@Entity
final class Tutor {
    var id: Id = 0
    var name = ""
    @Backlink(\Pupil.tutors) var pupils: ToMany<Pupil> = nil

    init(name: String) { self.name = name }
}

/// A tree: a category's parent may come later in a dump than the category.
@Entity
final class ShopCategory {
    var id: Id = 0
    var name = ""
    var parent: ToOne<ShopCategory> = nil
    @Backlink(\ShopCategory.parent) var children: ToMany<ShopCategory> = nil

    init(name: String) { self.name = name }
}
