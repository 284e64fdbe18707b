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

/// What a condition asks of a `Codable` collection's elements: an array's or a set's, or a
/// dictionary's keys.
enum ElementCondition: Sendable {
    /// An element equal to this one, in stored form (as a stored element parses: equal values
    /// have equal stored forms). Nil: a value whose own `encode(to:)` threw, which matches nothing.
    case contains(CompactValue?)
    /// The number of elements compares so with the number.
    case count(CompareOperator, Int)
    /// A dictionary holding this key (nil: one whose `encode(to:)` threw, which matches nothing).
    case containsKey(StoredKey?)
    /// The number of a dictionary's entries compares so with the number.
    case entryCount(CompareOperator, Int)

    /// How a dictionary's key is stored, which its type decides as `Dictionary.encode(to:)` does:
    /// `String`, `Int` and `CodingKeyRepresentable` keys name the entries of a keyed value;
    /// any other key is every other element of a list of key, value, key, value….
    enum StoredKey: Sendable {
        case name(String)
        case pair(CompactValue)

        init?<K: Encodable>(_ key: K) {
            switch key {
            case let s as String: self = .name(s)
            case let i as Int: self = .name(String(i))
            case let k as any CodingKeyRepresentable: self = .name(k.codingKey.stringValue)
            default:
                guard let stored = CompactValueEncoder.storedForm(of: key) else { return nil }
                self = .pair(stored)
            }
        }
    }

    /// Whether the stored value `raw` (a ``CompactValue``) satisfies it; a nil, or a value that
    /// is not the kind of collection asked about, does not.
    func holds(_ raw: UnsafeRawBufferPointer) throws -> Bool {
        let value = try CompactValue.parse(raw)
        func compare(_ count: Int, _ op: CompareOperator, _ n: Int) -> Bool { op.holds(count < n ? -1 : (count == n ? 0 : 1)) }
        switch (self, value) {
        case let (.contains(element), .array(elements)): return element.map(elements.contains) ?? false
        case let (.count(op, n), .array(elements)): return compare(elements.count, op, n)
        case let (.containsKey(.name(key)?), .keyed(entries)):
            // Entries are sorted by their keys' bytes (the parser refuses anything else).
            var low = 0, high = entries.count
            while low < high {
                let mid = (low + high) / 2
                if entries[mid].key.utf8.lexicographicallyPrecedes(key.utf8) { low = mid + 1 } else { high = mid }
            }
            return low < entries.count && entries[low].key == key
        case let (.containsKey(.pair(key)?), .array(elements)):
            return stride(from: 0, to: elements.count - 1, by: 2).contains { elements[$0] == key }
        case let (.entryCount(op, n), .keyed(entries)): return compare(entries.count, op, n)
        case let (.entryCount(op, n), .array(elements)): return compare(elements.count / 2, op, n)
        default: return false
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
    case ids(SortedIds)
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
    func resolvingLinks(binding b: EntityBinding, store: Store, in t: Transaction) throws(StrataError) -> ConditionNode {
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
        case one(QueryValue)
        /// A string: the value of a `.string` condition as it is, of a `.compare` one as bytes
        /// (built only then: a string lookup's new parameter allocates nothing).
        case text(String)
        case two(QueryValue, QueryValue)
        case many(Set<QueryValue>)
    }

    /// This tree with the values of the conditions on `target` replaced; `count` says how many were.
    func replacing(field target: Int, with r: Replacement, count: inout Int) -> ConditionNode {
        switch (self, r) {
        case let (.compare(f, op, _), .one(v)) where f == target:
            count += 1
            return .compare(field: f, op, v)
        case let (.compare(f, op, _), .text(s)) where f == target:
            count += 1
            return .compare(field: f, op, .bytes(Array(s.utf8)))
        case let (.string(f, op, _, cs), .text(s)) where f == target:
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
