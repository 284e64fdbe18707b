import Strata

// The graph the crash and model tests drive: ObjectBox's customers and orders (a ToOne with its
// backlink), students and teachers (a ToMany with its backlink), and a ledger object that
// records the number of the last committed transaction.

@Entity
public final class TCustomer {
    public var id: Id = 0
    public var name = ""
    @Backlink(\TOrder.customer) public var orders: ToMany<TOrder> = nil
}

@Entity
public final class TOrder {
    public var id: Id = 0
    @Index public var seq: Int64 = 0
    public var customer: ToOne<TCustomer> = nil
}

@Entity
public final class TStudent {
    public var id: Id = 0
    public var name = ""
    public var teachers: ToMany<TTeacher> = nil
}

@Entity
public final class TTeacher {
    public var id: Id = 0
    public var name = ""
    @Backlink(\TStudent.teachers) public var students: ToMany<TStudent> = nil
}

@Entity
public final class TLedger {
    public var id: Id = 0
    /// The number of the last committed workload transaction.
    public var last: Int64 = 0
}

/// A tree node whose parent may be new too: new nodes in a cycle are put whole.
@Entity
public final class TNode {
    public var id: Id = 0
    public var name = ""
    public var parent: ToOne<TNode> = nil
    @Backlink(\TNode.parent) public var children: ToMany<TNode> = nil
}

// A customer whose orders go with her (a cascade): the crash tests of a removal that spans
// thousands of objects in one transaction.

@Entity
public final class CascadeCustomer {
    public var id: Id = 0
    public var name = ""
    @DeleteRule(.cascade) @Backlink(\CascadeOrder.customer) public var orders: ToMany<CascadeOrder> = nil
    public init() {}
}

@Entity
public final class CascadeOrder {
    public var id: Id = 0
    @Index public var amount: Int64 = 0
    public var customer: ToOne<CascadeCustomer> = nil
    public init() {}
}

// An account whose balance a migration step turns from whole euros to a Double: the crash
// tests of a step that spans thousands of objects in one transaction.

@Entity(name: "MigratingAccount")
public final class MigratingAccount {
    public var id: Id = 0
    public var balance: Int64 = 0
    public init() {}
}
