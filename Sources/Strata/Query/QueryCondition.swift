/// A condition on objects of `Owner`, built from property descriptors and combined with `&&`,
/// `||` and parentheses.
///
/// ```swift
/// let expensive = try orders.query { Order.amount >= 1_000 && (Order.summary.startsWith("a") || Order.customer.isNil()) }.build()
/// ```
public struct QueryCondition<Owner: Entity>: Sendable {
    let node: ConditionNode

    public static func && (a: QueryCondition, b: QueryCondition) -> QueryCondition {
        QueryCondition(node: .and([a.node, b.node]))
    }

    public static func || (a: QueryCondition, b: QueryCondition) -> QueryCondition {
        QueryCondition(node: .or([a.node, b.node]))
    }
}

/// How a compared value relates to the stored one.
enum CompareOperator: Sendable {
    case equal, notEqual, less, lessOrEqual, greater, greaterOrEqual

    func holds(_ c: Int) -> Bool {
        switch self {
        case .equal: c == 0
        case .notEqual: c != 0
        case .less: c < 0
        case .lessOrEqual: c <= 0
        case .greater: c > 0
        case .greaterOrEqual: c >= 0
        }
    }
}

enum StringOperator: Sendable {
    case equal, notEqual, startsWith, endsWith, contains
}

/// What a condition asks of a `Codable` array's or set's elements.
enum ElementCondition: Sendable {
    /// An element equal to this one, in stored form (as a stored element parses: equal values
    /// have equal stored forms). Nil: a value whose own `encode(to:)` threw, which matches nothing.
    case contains(CompactValue?)
    /// The number of elements compares so with the number.
    case count(CompareOperator, Int)

    /// Whether the stored value `raw` (a ``CompactValue``) satisfies it; a nil or a value that is
    /// no list does not.
    func holds(_ raw: UnsafeRawBufferPointer) throws -> Bool {
        guard case let .array(elements) = try CompactValue.parse(raw) else { return false }
        switch self {
        case let .contains(element): return element.map(elements.contains) ?? false
        case let .count(op, n): return op.holds(elements.count < n ? -1 : (elements.count == n ? 0 : 1))
        }
    }
}

/// The condition tree a query evaluates on stored bytes.
indirect enum ConditionNode: Sendable {
    case all
    case compare(field: Int, CompareOperator, QueryValue)
    case between(field: Int, QueryValue, QueryValue)
    case isIn(field: Int, Set<QueryValue>)
    case isNil(field: Int, Bool)
    case string(field: Int, StringOperator, String, caseSensitive: Bool)
    /// The number of elements of a standalone to-many or a backlink.
    case relationCount(PropertySlot, CompareOperator, Int)
    /// A condition on the elements of a `Codable` array or set property.
    case elements(field: Int, ElementCondition)
    /// Objects whose relation leads to objects matching a condition on another entity
    /// (``Property/matches(_:)``, ``Property/any(_:)``): resolved to ``ids(_:)`` when a run
    /// starts, since the answer depends on the snapshot.
    case link(QueryLink)
    /// The objects with these ids (a resolved link).
    case ids(Set<Id>)
    case and([ConditionNode])
    case or([ConditionNode])

    /// The stored fields the condition reads.
    var fields: Set<Int> {
        switch self {
        case .all, .relationCount, .link, .ids: []
        case let .compare(f, _, _), let .between(f, _, _), let .isIn(f, _), let .isNil(f, _), let .string(f, _, _, _),
             let .elements(f, _): [f]
        case let .and(nodes), let .or(nodes): nodes.reduce(into: Set<Int>()) { $0.formUnion($1.fields) }
        }
    }

    /// Whether the tree holds a link, whose objects each run finds anew.
    var hasLinks: Bool {
        switch self {
        case .link: true
        case let .and(nodes), let .or(nodes): nodes.contains { $0.hasLinks }
        default: false
        }
    }

    /// The other entities the tree's links read, nested links included: commits to them can
    /// change the results.
    var linkedEntities: Set<String> {
        switch self {
        case let .link(l): l.entities
        case let .and(nodes), let .or(nodes): nodes.reduce(into: Set<String>()) { $0.formUnion($1.linkedEntities) }
        default: []
        }
    }

    /// This tree with every link replaced by the ids of the objects it allows, as `t` sees the
    /// store (nested links resolve inside the link's own run).
    func resolvingLinks(binding b: EntityBinding, store: Store, in t: Transaction?) throws(StrataError) -> ConditionNode {
        switch self {
        case let .link(l): return .ids(try l.candidates(b, store, t))
        case let .and(nodes):
            var out: [ConditionNode] = []
            for n in nodes { out.append(try n.resolvingLinks(binding: b, store: store, in: t)) }
            return .and(out)
        case let .or(nodes):
            var out: [ConditionNode] = []
            for n in nodes { out.append(try n.resolvingLinks(binding: b, store: store, in: t)) }
            return .or(out)
        default: return self
        }
    }

    /// New values for the conditions on one property (query parameters).
    enum Replacement {
        case one(QueryValue, String?)
        case two(QueryValue, QueryValue)
        case many(Set<QueryValue>)
    }

    /// This tree with the values of the conditions on `target` replaced; `count` says how many were.
    func replacing(field target: Int, with r: Replacement, count: inout Int) -> ConditionNode {
        switch (self, r) {
        case let (.compare(f, op, _), .one(v, _)) where f == target:
            count += 1
            return .compare(field: f, op, v)
        case let (.string(f, op, _, cs), .one(_, s?)) where f == target:
            count += 1
            return .string(field: f, op, s, caseSensitive: cs)
        case let (.between(f, _, _), .two(a, b)) where f == target:
            count += 1
            return .between(field: f, a, b)
        case let (.isIn(f, _), .many(values)) where f == target:
            count += 1
            return .isIn(field: f, values)
        case let (.and(nodes), _): return .and(nodes.map { $0.replacing(field: target, with: r, count: &count) })
        case let (.or(nodes), _): return .or(nodes.map { $0.replacing(field: target, with: r, count: &count) })
        default: return self
        }
    }
}
