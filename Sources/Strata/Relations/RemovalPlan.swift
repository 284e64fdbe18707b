import StrataStorage

/// What a removal removes under the delete rules (``DeleteRule``), worked out before anything
/// is written: the objects asked for, then, transitively, what `.cascade` relations reach
/// (each object once, so cycles and shared targets end); then every `.deny` relation of every
/// object in the plan must reach only objects the plan removes too, or the removal is refused.
struct RemovalPlan {
    /// The objects `cascade` reaches, beyond those asked for, in the order found.
    private(set) var cascaded: [(entity: String, id: Id)] = []

    init(removing ids: [Id], of entity: String, rules: DeleteRuleTable, transaction t: Transaction) throws(StrataError) {
        var planned: Set<Key> = Set(ids.map { Key(entity: entity, id: $0) })
        var pending: [Key] = ids.map { Key(entity: entity, id: $0) }
        while let next = pending.popLast() {
            for rule in rules.rules[next.entity] ?? [] where rule.rule == .cascade {
                for related in try Self.related(next, by: rule, transaction: t) where planned.insert(related).inserted {
                    pending.append(related)
                    cascaded.append((related.entity, related.id))
                }
            }
        }
        // In plan order, so that the error names the same object every time.
        for object in ids.map({ Key(entity: entity, id: $0) }) + cascaded.map({ Key(entity: $0.entity, id: $0.id) }) {
            for rule in rules.rules[object.entity] ?? [] where rule.rule == .deny {
                let remaining = try Self.related(object, by: rule, transaction: t).filter { !planned.contains($0) }
                if !remaining.isEmpty {
                    throw .deleteDenied(entity: object.entity, id: object.id, relation: rule.relation, count: remaining.count)
                }
            }
        }
    }

    private struct Key: Hashable {
        var entity: String
        var id: Id
    }

    /// The objects `rule`'s relation of `object` reaches, as the transaction sees them.
    private static func related(_ object: Key, by rule: DeleteRuleTable.Rule, transaction t: Transaction) throws(StrataError) -> [Key] {
        let store = t.store
        guard let record = store.record(named: object.entity) else { return [] }
        switch rule.path {
        case let .forward(name):
            guard let property = record.properties.first(where: { $0.name == name && !$0.isRemoved }),
                  let target = property.target else { return [] }
            if property.type == .toOne {
                guard let bytes = try t.objectBytes(ObjectKey(entityId: record.entityId, id: object.id)) else { return [] }
                let targets = try StrataError.decoding(entity: object.entity, id: object.id) {
                    try bytes.withUnsafeBytes { try ObjectBytes.toOneTargets(in: $0, propertyIds: [property.id]) }
                }
                guard let id = targets[property.id], id != 0 else { return [] }
                return [Key(entity: target, id: id)]
            }
            return try t.toManyList(entityId: record.entityId, propertyId: property.id, source: object.id).map { Key(entity: target, id: $0) }
        case let .backlink(sourceName, propertyName):
            guard let source = store.record(named: sourceName),
                  let property = source.properties.first(where: { $0.name == propertyName && !$0.isRemoved && $0.type.isRelation }) else { return [] }
            let kind: EdgeKey.Kind = property.type == .toOne ? .toOneBacklink : .toManyBacklink
            let prefix = EdgeKey(kind: kind, entityId: source.entityId, propertyId: property.id, a: object.id, b: 0)
            return try t.edgeSources(sharingPrefixWith: prefix).map { Key(entity: sourceName, id: $0) }
        }
    }
}
