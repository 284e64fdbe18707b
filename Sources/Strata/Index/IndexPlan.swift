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
        func index(_ field: Int) -> EntityIndexes.Indexed? {
            guard let ix = b.indexes, field < b.propertyIds.count, let i = ix.position(ofProperty: b.propertyIds[field]) else { return nil }
            return ix.properties[i]
        }
        func point(_ x: EntityIndexes.Indexed, _ v: QueryValue) -> Range {
            let p = x.header + IndexKey.encode(v, for: x)
            return Range(lower: p, upper: IndexKey.successor(p), value: true, keyedByValue: x.keyedByValue)
        }
        func range(_ x: EntityIndexes.Indexed, _ lower: [UInt8], _ upper: [UInt8]?) -> Range {
            Range(lower: lower, upper: upper, value: false, keyedByValue: x.keyedByValue)
        }
        switch node {
        case let .compare(f, op, v):
            guard let x = index(f), !v.isNaN, !v.isNullValue else { return nil }
            // A case-insensitive index orders lowercased strings: it answers equality only (the
            // lowercased literal's entries hold every string equal to it, and more).
            if x.caseInsensitive { return op == .equal ? IndexPlan(ranges: [point(x, v)]) : nil }
            let h = x.header
            // Each operator builds only the bounds it uses: a re-run equality lookup replans on
            // every new parameter value.
            let value = { h + IndexKey.encode(v) }
            let typeStart = { h + [IndexKey.encode(v)[0]] }
            switch op {
            case .equal: return IndexPlan(ranges: [point(x, v)])
            case .notEqual: return nil
            case .less: return IndexPlan(ranges: [range(x, typeStart(), value())])
            case .lessOrEqual: return IndexPlan(ranges: [range(x, typeStart(), IndexKey.successor(value()))])
            case .greater:
                let bound = value()
                return IndexPlan(ranges: [range(x, IndexKey.successor(bound) ?? bound, IndexKey.successor(typeStart()))])
            case .greaterOrEqual: return IndexPlan(ranges: [range(x, value(), IndexKey.successor(typeStart()))])
            }
        case let .between(f, lo, hi):
            guard let x = index(f), !x.caseInsensitive, !lo.isNaN, !hi.isNaN, !lo.isNullValue, !hi.isNullValue else { return nil }
            return IndexPlan(ranges: [range(x, x.header + IndexKey.encode(lo), IndexKey.successor(x.header + IndexKey.encode(hi)))])
        case let .isIn(f, values):
            guard let x = index(f), !values.contains(where: \.isNaN) else { return nil }
            return IndexPlan(ranges: values.sorted().map { point(x, $0) })
        case let .isNil(f, true):
            guard let x = index(f) else { return nil }
            return IndexPlan(ranges: [point(x, .null)])
        case let .string(f, op, literal, caseSensitive):
            guard let x = index(f), caseSensitive || x.caseInsensitive else { return nil }
            switch op {
            case .equal: return IndexPlan(ranges: [point(x, .bytes(Array(literal.utf8)))])
            case .startsWith:
                // In a case-insensitive index, only a case-insensitive prefix: lowercasing a whole
                // string is not lowercasing its prefix (a final sigma), so a case-sensitive
                // prefix may match strings whose entries do not start with the folded prefix.
                if x.caseInsensitive && caseSensitive { return nil }
                let folded = x.caseInsensitive ? literal.lowercased() : literal
                let p = x.header + IndexKey.encodePrefix(Array(folded.utf8))
                return IndexPlan(ranges: [range(x, p, IndexKey.successor(p))])
            case .notEqual, .endsWith, .contains: return nil
            }
        case let .ids(allowed):
            return IndexPlan(ranges: [], ids: allowed.sorted())
        case let .and(nodes):
            // One branch narrows enough. A relation condition's objects come first (usually
            // few, and reading an index range on top would cost more than evaluating the
            // condition on them), then exact matches, then ranges.
            let plans = nodes.compactMap { make($0, binding: b) }
            if let named = plans.filter({ $0.ranges.isEmpty }).min(by: { $0.ids.count < $1.ids.count }) { return named }
            return plans.min { $0.isPointLookup && !$1.isPointLookup }
        case let .or(nodes):
            var plan = IndexPlan(ranges: [])
            for n in nodes {
                guard let p = make(n, binding: b) else { return nil }
                plan.ranges += p.ranges
                plan.ids += p.ids
            }
            return plan
        case .all, .isNil, .relationCount, .link:
            return nil
        }
    }

    private var isPointLookup: Bool {
        ranges.allSatisfy { r in r.upper.map { IndexKey.successor(r.lower) == $0 } ?? false }
    }

    /// The ids of the objects the plan's entries name, as `t` sees the store (a write
    /// transaction's own entries included), increasing and distinct.
    func candidates(store: Store, binding b: EntityBinding, in t: Transaction?) throws(StrataError) -> [Id] {
        var ids: [Id] = []
        for r in ranges {
            ids += r.value
                ? try store.indexedIds(ofValue: r.lower, keyedByValue: r.keyedByValue, in: t)
                : try store.indexedIds(from: r.lower, to: r.upper, keyedByValue: r.keyedByValue, in: t)
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

extension QueryValue {
    var isNaN: Bool { if case let .double(d) = self { d.isNaN } else { false } }
}
