/// Evaluates a condition on stored objects of one entity, reading only the fields it needs,
/// in place: no object is built and no field is copied. One matcher per query run; it reuses
/// its field table from object to object.
final class ObjectMatcher {
    let binding: EntityBinding
    let store: Store
    /// The transaction of the run under way (a built query reuses its matcher from run to run).
    var transaction: Transaction
    /// The declared positions ``field(_:)`` may be asked for.
    let fieldsNeeded: Set<Int>
    private let types: [PropertyType]
    private let needed: [Bool]
    /// Per declared field: the value of the object last loaded (or the type's default).
    private let fields: UnsafeMutableBufferPointer<FieldView>
    private let defaults: UnsafeMutableBufferPointer<FieldView>
    /// Owns the bytes the default views point into.
    private let defaultEncoding: DefaultEncoding
    private let backlinks: [BacklinkSchema]

    /// `fieldsNeeded`: declared positions the caller reads through ``field(_:)``.
    init<T: Entity>(_ type: T.Type, binding: EntityBinding, store: Store, transaction: Transaction, fieldsNeeded: Set<Int>) throws {
        self.binding = binding
        self.store = store
        self.transaction = transaction
        self.fieldsNeeded = fieldsNeeded
        let schema = T._strataSchema
        types = schema.properties.map { $0.type }
        backlinks = schema.backlinks
        needed = types.indices.map { fieldsNeeded.contains($0) }
        fields = .allocate(capacity: max(1, types.count))
        fields.initialize(repeating: .null)
        defaults = .allocate(capacity: max(1, types.count))
        defaults.initialize(repeating: .null)
        // A field the stored bytes lack (a property added later) has the value `init()` gives it.
        defaultEncoding = try binding.defaultObject(T.self)
        try read(UnsafeRawBufferPointer(defaultEncoding.bytes), into: defaults)
    }

    deinit {
        fields.deallocate()
        defaults.deallocate()
    }

    private func read(_ bytes: UnsafeRawBufferPointer, into table: UnsafeMutableBufferPointer<FieldView>) throws {
        try binding.fieldMap.withUnsafeBufferPointer { map in
            var reader = try ObjectReader(bytes: bytes, fieldMap: map)
            while let f = try reader.nextField() {
                if needed[f] { table[f] = try FieldView.read(types[f], from: &reader) } else { try reader.skip(reader.wire) }
            }
        }
    }

    /// Reads the needed fields of one stored object; they stay valid while `bytes` do.
    func load(_ bytes: UnsafeRawBufferPointer, id: Id) throws(StrataError) {
        for i in types.indices where needed[i] { fields[i] = defaults[i] }
        try StrataError.decoding(entity: binding.name, id: id) { try read(bytes, into: fields) }
    }

    func field(_ i: Int) -> FieldView { fields[i] }

    /// Whether the object last loaded (with `id`) satisfies `node`.
    func matches(_ node: ConditionNode, id: Id) throws(StrataError) -> Bool {
        switch node {
        case .all:
            return true
        case let .compare(f, op, value):
            let v = fields[f]
            if v.isNull, !value.isNullValue { return op == .notEqual }
            return op.holds(v.compare(to: value))
        case let .between(f, lo, hi):
            let v = fields[f]
            return !v.isNull && v.compare(to: lo) >= 0 && v.compare(to: hi) <= 0
        case let .isIn(f, values):
            return values.contains(fields[f].owned)
        case let .isNil(f, wantNil):
            return fields[f].isNull == wantNil
        case let .string(f, op, literal, caseSensitive):
            guard case let .bytes(raw) = fields[f] else { return op == .notEqual }
            return Self.compareString(raw, op, literal, caseSensitive: caseSensitive)
        case let .elements(f, condition):
            guard case let .bytes(raw) = fields[f] else { return false }
            do { return try condition.holds(raw) } catch {
                throw .corruptObject(entity: binding.name, id: id, reason: "\(error)")
            }
        case let .relationCount(slot, op, n):
            let count = try relationCount(slot, id: id)
            return op.holds(count < n ? -1 : (count == n ? 0 : 1))
        case let .ids(allowed):
            return allowed.contains(id)
        case .link:
            // Every run resolves its links to ids before it matches (QueryRun.scan).
            throw .invalidQuery(reason: "a relation condition was evaluated before it was resolved")
        case let .and(nodes):
            for n in nodes where !(try matches(n, id: id)) { return false }
            return true
        case let .or(nodes):
            for n in nodes where try matches(n, id: id) { return true }
            return false
        }
    }

    private static func compareString(_ raw: UnsafeRawBufferPointer, _ op: StringOperator, _ literal: String,
                                      caseSensitive: Bool) -> Bool {
        if !caseSensitive {
            // Both sides lowercased, then compared bytewise as case-sensitive strings are: the
            // same folding a case-insensitive index keeps, so an index answer and a scan agree.
            var s = String(decoding: raw, as: UTF8.self).lowercased()
            return s.withUTF8 { s in compareString(UnsafeRawBufferPointer(s), op, literal.lowercased(), caseSensitive: true) }
        }
        var literal = literal
        return literal.withUTF8 { l in
            let l = UnsafeRawBufferPointer(l)
            switch op {
            case .equal: return raw.elementsEqual(l)
            case .notEqual: return !raw.elementsEqual(l)
            case .startsWith: return raw.count >= l.count && raw.prefix(l.count).elementsEqual(l)
            case .endsWith: return raw.count >= l.count && raw.suffix(l.count).elementsEqual(l)
            case .contains:
                if l.isEmpty { return true }
                guard raw.count >= l.count else { return false }
                for start in 0...(raw.count - l.count) where raw[start] == l[0] {
                    if raw[start..<(start + l.count)].elementsEqual(l) { return true }
                }
                return false
            }
        }
    }

    /// Element count of a to-many or backlink of the object with `id`, from the edges.
    func relationCount(_ slot: PropertySlot, id: Id) throws(StrataError) -> Int {
        try relatedIds(slot, id: id).count
    }

    /// Ids of the elements of a to-many or backlink of the object with `id`, from the edges.
    func relatedIds(_ slot: PropertySlot, id: Id) throws(StrataError) -> [Id] {
        switch slot {
        case let .field(f):
            return try transaction.toManyList(entityId: binding.entityId, propertyId: binding.propertyIds[f], source: id)
        case let .backlink(b):
            return try transaction.backlinkSources(backlinks[b], of: id)
        }
    }
}

extension QueryValue {
    var isNullValue: Bool { if case .null = self { true } else { false } }
}
