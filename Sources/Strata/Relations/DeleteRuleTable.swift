/// The delete rules other than `.nullify` that the app's entity types declare (`@DeleteRule`),
/// by entity name: learned from each type the store binds and, through its relations' and
/// backlinks' types, from every type those reach, so that a cascade follows the rules of
/// entities this session never opened a box for. Rules are declarations of the code, not
/// stored (SPEC.md §12).
struct DeleteRuleTable: Sendable {
    struct Rule: Sendable {
        enum Path: Sendable {
            /// A `ToOne` or standalone `ToMany` of the entity, by property name.
            case forward(property: String)
            /// A backlink: the objects of `source` whose relation `property` points here.
            case backlink(source: String, property: String)
        }
        /// "Customer.orders", for messages.
        var relation: String
        var rule: DeleteRule
        var path: Path
    }

    private(set) var rules: [String: [Rule]] = [:]
    private var learned: Set<String> = []

    var isEmpty: Bool { rules.isEmpty }

    /// Adds the rules of `type` and of every entity type its relations reach.
    mutating func learn(_ type: any Entity.Type) {
        var pending: [any Entity.Type] = [type]
        while let next = pending.popLast() {
            let schema = next._strataSchema
            guard learned.insert(schema.name).inserted else { continue }
            for p in schema.properties where p.type.isRelation {
                if p.deleteRule != .nullify {
                    rules[schema.name, default: []].append(Rule(relation: "\(schema.name).\(p.name)", rule: p.deleteRule,
                                                                path: .forward(property: p.name)))
                }
                if let target = p.targetType { pending.append(target.type) }
            }
            for b in schema.backlinks {
                if b.deleteRule != .nullify {
                    rules[schema.name, default: []].append(Rule(relation: "\(schema.name).\(b.name)", rule: b.deleteRule,
                                                                path: .backlink(source: b.source, property: b.sourceProperty)))
                }
                pending.append(b.sourceType.type)
            }
        }
    }
}
