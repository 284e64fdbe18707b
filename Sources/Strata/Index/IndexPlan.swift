/// Which index entries can answer a query condition: key ranges of one indexed property whose
/// entries include every object the condition matches. The condition is still evaluated on
/// each candidate object, so ranges may be generous, never narrow.
struct IndexPlan {
    /// Key ranges of one index's entries, lower bound inclusive, upper exclusive (nil: to the
    /// end of the key space).
    struct Range {
        var lower: [UInt8]
        var upper: [UInt8]?
        /// The range holds the entries of one value exactly (`lower` is the key without its
        /// id), which lets the engine's prefix filters skip segments, and makes a lookup in an
        /// index keyed by value one point read.
        var value: Bool
        /// The index is unique and keyed by value: the id is the entry's value.
        var keyedByValue: Bool
    }

    var ranges: [Range]
    /// Objects named by id (a resolved relation condition), besides the ranges' entries.
    var ids: [Id] = []

    /// A plan for `node` on an entity with these built indexes; nil when the condition needs a
    /// scan (no indexed property or relation condition, `!=`, `endsWith`, case-insensitive
    /// strings, `||` with such a branch).
    static func make(_ node: ConditionNode, binding b: EntityBinding) -> IndexPlan? {
        switch node {
        case let .ids(allowed):
            return IndexPlan(ranges: [], ids: allowed.ids)
        case let .and(nodes):
            // One branch narrows enough. A relation condition's objects come first (usually
            // few, and reading an index range on top would cost more than evaluating the
            // condition on them), then a composite index that several branches narrow together,
            // then exact matches, then ranges.
            let plans = nodes.compactMap { make($0, binding: b) }
            if let named = plans.filter({ $0.ranges.isEmpty }).min(by: { $0.ids.count < $1.ids.count }) { return named }
            if let composite = compositePlan(nodes, binding: b) { return composite }
            return plans.min { $0.isPointLookup && !$1.isPointLookup }
        case let .or(nodes):
            var plan = IndexPlan(ranges: [])
            for n in nodes {
                guard let p = make(n, binding: b) else { return nil }
                plan.ranges += p.ranges
                plan.ids += p.ids
            }
            return plan
        default:
            guard let f = node.singleField, let ix = b.indexes, f < b.propertyIds.count,
                  let i = ix.position(ofProperty: b.propertyIds[f]) else { return nil }
            let x = ix.properties[i]
            return ranges(node, x, header: x.header, composite: !x.with.isEmpty).map { IndexPlan(ranges: $0) }
        }
    }

    /// Ranges of index `x` whose entries include every object `node` (a condition on one field)
    /// matches, under `h`: the index's header, and for a later component of a composite index
    /// the earlier components' values. In a composite index the entries of one value hold
    /// more after it, so a value is a range, never a point read.
    private static func ranges(_ node: ConditionNode, _ x: EntityIndexes.Indexed, header h: [UInt8], composite: Bool) -> [Range]? {
        func point(_ v: QueryValue) -> Range {
            let p = h + IndexKey.encode(v, for: x)
            return Range(lower: p, upper: IndexKey.successor(p), value: !composite, keyedByValue: x.keyedByValue)
        }
        func range(_ lower: [UInt8], _ upper: [UInt8]?) -> Range {
            Range(lower: lower, upper: upper, value: false, keyedByValue: x.keyedByValue)
        }
        switch node {
        case let .compare(_, op, v):
            guard !v.isNaN, !v.isNullValue else { return nil }
            // A case-insensitive index orders lowercased strings: it answers equality only (the
            // lowercased literal's entries hold every string equal to it, and more).
            if x.caseInsensitive { return op == .equal ? [point(v)] : nil }
            // Each operator builds only the bounds it uses: a re-run equality lookup replans on
            // every new parameter value.
            let value = { h + IndexKey.encode(v) }
            let typeStart = { h + [IndexKey.encode(v)[0]] }
            switch op {
            case .equal: return [point(v)]
            case .notEqual: return nil
            case .less: return [range(typeStart(), value())]
            case .lessOrEqual: return [range(typeStart(), IndexKey.successor(value()))]
            case .greater:
                let bound = value()
                return [range(IndexKey.successor(bound) ?? bound, IndexKey.successor(typeStart()))]
            case .greaterOrEqual: return [range(value(), IndexKey.successor(typeStart()))]
            }
        case let .between(_, lo, hi):
            guard !x.caseInsensitive, !lo.isNaN, !hi.isNaN, !lo.isNullValue, !hi.isNullValue else { return nil }
            return [range(h + IndexKey.encode(lo), IndexKey.successor(h + IndexKey.encode(hi)))]
        case let .isIn(_, values):
            guard !values.contains(where: \.isNaN) else { return nil }
            return values.sorted().map { point($0) }
        case .isNil(_, true):
            return [point(.null)]
        case let .string(_, op, literal, caseSensitive):
            guard caseSensitive || x.caseInsensitive else { return nil }
            switch op {
            case .equal: return [point(.bytes(Array(literal.utf8)))]
            case .startsWith:
                // In a case-insensitive index, only a case-insensitive prefix: lowercasing a whole
                // string is not lowercasing its prefix (a final sigma), so a case-sensitive
                // prefix may match strings whose entries do not start with the folded prefix.
                if x.caseInsensitive && caseSensitive { return nil }
                let folded = x.caseInsensitive ? literal.lowercased() : literal
                let p = h + IndexKey.encodePrefix(Array(folded.utf8))
                return [range(p, IndexKey.successor(p))]
            case .notEqual, .endsWith, .contains: return nil
            }
        default:
            return nil
        }
    }

    /// The plan of a composite index that the branches of an `&&` narrow on two or more
    /// components: equalities on its first components, then at most one range on the next.
    /// Among several such indexes, the one most components narrow.
    private static func compositePlan(_ nodes: [ConditionNode], binding b: EntityBinding) -> IndexPlan? {
        guard let ix = b.indexes else { return nil }
        var best: (matched: Int, plan: IndexPlan)?
        for x in ix.properties where !x.with.isEmpty {
            var header = x.header
            var matched = 0
            var tail: [Range]?
            for propertyId in [x.propertyId] + x.with {
                guard let f = b.propertyIds.firstIndex(of: propertyId) else { break }
                if let v = nodes.lazy.compactMap({ $0.equalityValue(on: f) }).first {
                    header += IndexKey.encode(v)
                    matched += 1
                    continue
                }
                if let r = nodes.lazy.compactMap({ $0.singleField == f ? ranges($0, x, header: header, composite: true) : nil }).first {
                    tail = r
                    matched += 1
                }
                break
            }
            guard matched >= 2, matched > (best?.matched ?? 0) else { continue }
            let plan = IndexPlan(ranges: tail ?? [Range(lower: header, upper: IndexKey.successor(header), value: false, keyedByValue: false)])
            best = (matched, plan)
        }
        return best?.plan
    }

    private var isPointLookup: Bool {
        ranges.allSatisfy { r in r.upper.map { IndexKey.successor(r.lower) == $0 } ?? false }
    }

    /// The ids of the objects the plan's entries name, as `t` sees the store (a write
    /// transaction's own entries included), increasing and distinct.
    func candidates(store: Store, binding b: EntityBinding, in t: Transaction) throws(StrataError) -> [Id] {
        var ids: [Id] = []
        for r in ranges {
            ids += r.value
                ? try t.indexedIds(ofValue: r.lower, keyedByValue: r.keyedByValue)
                : try t.indexedIds(from: r.lower, to: r.upper, keyedByValue: r.keyedByValue)
        }
        ids += self.ids
        // One value's entries come by increasing id already (the id ends the key): an equality
        // lookup skips the sort.
        if zip(ids, ids.dropFirst()).contains(where: { $0 >= $1 }) {
            ids = Array(Set(ids)).sorted()
        }
        return ids
    }
}

extension ConditionNode {
    /// The one field a leaf condition reads (nil for others).
    var singleField: Int? {
        switch self {
        case let .compare(f, _, _), let .between(f, _, _), let .isIn(f, _), let .isNil(f, _), let .string(f, _, _, _): f
        default: nil
        }
    }

    /// The value a leaf condition fixes field `f` to, as the index encodes it (nil: it does not
    /// fix one, or it is on another field).
    func equalityValue(on f: Int) -> QueryValue? {
        switch self {
        case let .compare(g, .equal, v) where g == f && !v.isNaN: v
        case let .string(g, .equal, literal, caseSensitive: true) where g == f: .bytes(Array(literal.utf8))
        case let .isNil(g, true) where g == f: .null
        default: nil
        }
    }
}

extension QueryValue {
    var isNaN: Bool { if case let .double(d) = self { d.isNaN } else { false } }
}
