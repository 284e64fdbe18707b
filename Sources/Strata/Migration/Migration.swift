import Foundation
import StrataStorage

/// What a ``MigrationStep`` works with: the stored objects of each entity as values by property
/// name (``StoredObject``), and the stored schema, which a step may change: a property's type,
/// a new property. Everything a step does is one transaction with the record of its version.
/// An entity the store does not hold has nothing to migrate: each call on it does nothing.
///
/// ```swift
/// MigrationStep(version: 3, "split the name") { m in
///     try m.addProperty("first", to: "Person", type: .string)
///     try m.addProperty("last", to: "Person", type: .string)
///     try m.updateObjects(of: "Person") { person in
///         guard case let .string(full)? = person["name"] else { return }
///         let parts = full.split(separator: " ", maxSplits: 1).map(String.init)
///         person["first"] = .string(parts.first ?? "")
///         person["last"] = .string(parts.count > 1 ? parts[1] : "")
///     }
/// }
/// ```
public final class Migration {
    /// The step's version and name.
    public let version: Int
    public let name: String
    /// Objects the step rewrote so far.
    public private(set) var objectsWritten = 0

    let store: Store
    let transaction: Transaction
    /// Records the step changed, by entity name: persisted with the step's commit.
    private(set) var changedRecords: [String: EntityRecord] = [:]

    init(step: MigrationStep, store: Store, transaction: Transaction) {
        version = step.version
        name = step.name
        self.store = store
        self.transaction = transaction
    }

    private func record(_ entity: String) -> EntityRecord? {
        changedRecords[entity] ?? store.record(named: entity)
    }

    private func invalid(_ entity: String, _ property: String, _ reason: String) -> StrataError {
        .invalidValue(entity: entity, id: 0, property: property, reason: reason)
    }

    /// Calls `body` with each stored object of `entity` (in id order) and writes back those it
    /// changed. Values are by property name (`object["name"]`); a property the object never
    /// stored reads as nil. Setting a property the schema lacks throws: add it first.
    public func updateObjects(of entity: String, _ body: (inout StoredObject) throws -> Void) throws {
        guard let record = record(entity) else { return }
        var changed: [StoredObject] = []
        for var object in try objects(of: record) {
            let before = object
            try body(&object)
            if object != before { changed.append(object) }
        }
        try write(changed, of: record)
    }

    /// Adds a property to `entity`'s stored schema (a value type, not a relation), so that a
    /// step can fill it before the app's type, which declares it, binds. Nothing is written to
    /// the objects: they read it as nil (or the type's default) until given a value. Adding a
    /// property that exists with the same type does nothing.
    public func addProperty(_ property: String, to entity: String, type: PropertyType, optional: Bool = false) throws {
        guard var record = record(entity) else { return }
        guard !type.isRelation else { throw invalid(entity, property, "a migration adds value properties; relations come with the type") }
        if let existing = record.properties.first(where: { !$0.isRemoved && $0.name == property }) {
            guard existing.type == type else { throw invalid(entity, property, "already stored as \(existing.typeDescription)") }
            return
        }
        guard record.lastPropertyId < ObjectFormat.maxPropertyId else { throw invalid(entity, property, "no property id is left") }
        record.lastPropertyId += 1
        record.properties.append(EntityRecord.Property(id: record.lastPropertyId, name: property, type: type, isOptional: optional,
                                                       isRemoved: false))
        changedRecords[entity] = record
    }

    /// Changes the stored type of `property` of `entity` to `type` (and its optionality, when
    /// given), converting the value of every stored object: with `convert` when given, else
    /// by the built-in conversions (integers and floating point either way, numbers and
    /// booleans to strings, strings to numbers and booleans). A value that does not convert
    /// fails the step. An indexed property or a relation cannot change type in a migration
    /// (drop its index in one version, change its type in the next).
    public func changeType(of property: String, in entity: String, to type: PropertyType, optional: Bool? = nil,
                           _ convert: ((StoredValue) throws -> StoredValue)? = nil) throws {
        guard var record = record(entity) else { return }
        guard let index = record.properties.firstIndex(where: { !$0.isRemoved && $0.name == property }) else {
            throw invalid(entity, property, "\(entity) stores no such property")
        }
        let old = record.properties[index]
        guard !old.type.isRelation, !type.isRelation else { throw invalid(entity, property, "a relation cannot change type") }
        guard old.index == .none, !record.properties.contains(where: { $0.indexWith.contains(old.id) }) else {
            throw invalid(entity, property, "an indexed property cannot change type: drop its index in one version first")
        }
        let objects = try objects(of: record)
        record.properties[index].type = type
        if let optional { record.properties[index].isOptional = optional }
        changedRecords[entity] = record
        var converted: [StoredObject] = []
        for var object in objects {
            guard let value = object[property] else { continue }
            do {
                object[property] = try convert.map { try $0(value) } ?? ValueConversion.convert(value, to: type)
            } catch {
                throw StrataError.invalidValue(entity: entity, id: object.id, property: property, reason: "\(error)")
            }
            converted.append(object)
        }
        try write(converted, of: record)
    }

    /// Makes `property` of `entity` hold raw values of `E`: each stored value is converted to
    /// `E.RawValue` (as ``changeType(of:in:to:optional:_:)`` converts), and one that is no case
    /// of `E` becomes `fallback`. The property's stored type becomes the raw value's.
    ///
    /// ```swift
    /// try m.convertToEnum("status", in: "Order", to: Status.self, fallback: .unknown)
    /// ```
    public func convertToEnum<E: RawRepresentable>(_ property: String, in entity: String, to: E.Type, fallback: E) throws
        where E.RawValue: PersistableValue {
        let type = E.RawValue._strataPropertyType
        try changeType(of: property, in: entity, to: type) { value in
            let raw = (try? ValueConversion.convert(value, to: type)) ?? .null
            let known = Self.rawValue(raw, as: E.RawValue.self).flatMap(E.init(rawValue:)) != nil
            return known ? raw : ValueConversion.stored(fallback.rawValue)
        }
    }

    private static func rawValue<R>(_ value: StoredValue, as: R.Type) -> R? {
        switch value {
        case let .string(s): return s as? R
        case let .bool(b): return b as? R
        case let .double(d): return (d as? R) ?? (Float(d) as? R)
        case let .int(x):
            if let r = x as? R { return r }
            return (R.self as? any BinaryInteger.Type).flatMap { $0.init(exactly: x) as? R }
        case let .uint(x):
            if let r = x as? R { return r }
            return (R.self as? any BinaryInteger.Type).flatMap { $0.init(exactly: x) as? R }
        default: return nil
        }
    }

    /// Every stored object of the entity as the transaction sees it, decoded with `record`.
    private func objects(of record: EntityRecord) throws -> [StoredObject] {
        let decoder = StoredObjectDecoder(record)
        let prefix = ObjectKey.prefix(entityId: record.entityId)
        var out: [StoredObject] = []
        try transaction.forEachEntry(in: .objects, from: prefix, to: Engine.prefixSuccessor(prefix)) { key, value in
            let id = ObjectKey.id(fromKey: key)
            let values: [StoredValue]
            do { values = try decoder.decode(value) } catch {
                throw StrataError.corruptObject(entity: record.name, id: id, reason: "\(error)")
            }
            out.append(StoredObject(id: id, values: zip(decoder.fields, values).map { ($0.name, $1) }))
            return true
        }
        return out
    }

    /// Writes objects with `record`'s schema; absent values stay absent.
    private func write(_ objects: [StoredObject], of record: EntityRecord) throws {
        var loader = StoredObjectLoader(store: store, record: record, transaction: transaction)
        for var object in objects {
            object.values.removeAll { name, value in
                value == .null && record.properties.first { $0.name == name && !$0.isRemoved }?.isOptional == false
            }
            try loader.put(object)
            objectsWritten += 1
        }
    }
}

extension StoredObject {
    /// The value of property `name`; nil when the object does not hold it. Setting nil removes
    /// it (the property reads as its default).
    public subscript(name: String) -> StoredValue? {
        get {
            guard let value = values.first(where: { $0.name == name })?.value, value != .null else { return nil }
            return value
        }
        set {
            if let i = values.firstIndex(where: { $0.name == name }) {
                if let newValue { values[i].value = newValue } else { values.remove(at: i) }
            } else if let newValue {
                values.append((name, newValue))
            }
        }
    }
}
