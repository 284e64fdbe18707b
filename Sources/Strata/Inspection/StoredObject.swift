import Foundation
import StrataStorage

/// A stored value read without the entity's Swift type (``Store/storedObjects(of:from:limit:_:)``).
public enum StoredValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    /// `Float` and `Double` properties.
    case double(Double)
    case string(String)
    case date(Date)
    case bytes([UInt8])
    case uuid(UUID)
    case url(URL)
    case decimal(Decimal)
    /// Any other `Codable` value, in its stored form.
    case codable(CompactValue)
    /// A `ToOne`: the target's id, or nil.
    case toOne(Id?)
    /// A standalone `ToMany`: the target ids in the relation's order.
    case toMany([Id])
}

/// One object read without its Swift type: its id and each live property's value.
///
/// ```swift
/// try store.storedObjects(of: "Order", limit: 10) { o in print(o.id, o.values) }
/// ```
public struct StoredObject: Sendable, Equatable {
    public var id: Id
    /// In the order of ``StoredEntity/properties``.
    public var values: [(name: String, value: StoredValue)]

    /// An object to put with ``Store/putStoredObjects(_:of:)``.
    public init(id: Id, values: [(name: String, value: StoredValue)]) {
        self.id = id
        self.values = values
    }

    public static func == (a: StoredObject, b: StoredObject) -> Bool {
        a.id == b.id && a.values.elementsEqual(b.values) { $0.name == $1.name && $0.value == $1.value }
    }
}

/// One edge of a relation (``Store/storedEdges(of:_:)``).
public struct StoredEdge: Sendable, Equatable {
    public var source: Id
    public var target: Id
    /// For a standalone `ToMany`: the target's position in the source's list.
    public var position: Int?
}

/// Decodes an object's fields from its bytes and the catalog record alone.
package struct StoredObjectDecoder {
    let record: EntityRecord
    /// Live stored (non-to-many) properties, in record order.
    let fields: [EntityRecord.Property]
    let fieldMap: [Int32]

    package init(_ record: EntityRecord) {
        self.record = record
        fields = record.properties.filter { !$0.isRemoved && $0.type != .toMany }
        var map = [Int32](repeating: -1, count: Int(record.lastPropertyId) + 1)
        for (i, p) in fields.enumerated() { map[Int(p.id)] = Int32(i) }
        fieldMap = map
    }

    /// The value of each field in `fields` order; absent fields read as nil. Throws when the
    /// bytes do not decode or a field's wire type disagrees with its property's type.
    package func decode(_ bytes: UnsafeRawBufferPointer) throws -> [StoredValue] {
        var out = [StoredValue](repeating: .null, count: fields.count)
        try fieldMap.withUnsafeBufferPointer { map in
            var reader = try ObjectReader(bytes: bytes, fieldMap: map)
            while let i = try reader.nextField() {
                out[i] = try Self.value(fields[i].type, try FieldView.read(fields[i].type, from: &reader))
            }
        }
        for (i, p) in fields.enumerated() where p.type == .toOne {
            if case .null = out[i] { out[i] = .toOne(nil) }
        }
        return out
    }

    private static func value(_ type: PropertyType, _ v: FieldView) throws -> StoredValue {
        switch (type, v) {
        case (_, .null): return type == .toOne ? .toOne(nil) : .null
        case let (.bool, .uint(x)): return .bool(x != 0)
        case let (.toOne, .uint(x)): return .toOne(x == 0 ? nil : x)
        case let (_, .uint(x)): return .uint(x)
        case let (_, .int(x)): return .int(x)
        case let (.date, .double(x)): return .date(Date(timeIntervalSinceReferenceDate: x))
        case let (_, .double(x)): return .double(x)
        case let (.string, .bytes(b)):
            guard let s = String(validating: b, as: UTF8.self) else { throw CodecFailure("string field is not valid UTF-8") }
            return .string(s)
        case let (.uuid, .bytes(b)): return .uuid(try UUID.fromStored(b))
        case let (.url, .bytes(b)): return .url(try URL.fromStored(b))
        case let (.decimal, .bytes(b)): return .decimal(try OrderedDecimal.decode(b))
        case let (.codable, .bytes(b)): return .codable(try CompactValue.parse(b))
        case let (_, .bytes(b)): return .bytes(Array(b))
        }
    }
}

extension Store {
    /// Reads objects of the entity named `entity` without its Swift type, in id order from
    /// `from`, at most `limit` of them, from one consistent snapshot. To-many values come from
    /// the edge key space. Throws ``StrataError/unknownEntity(_:)`` for a name the store does not
    /// hold and ``StrataError/corruptObject(entity:id:reason:)`` for an object that does not
    /// decode. Return false from `body` to stop early.
    ///
    /// ```swift
    /// try store.storedObjects(of: "Customer", limit: 5) { o in print(o); return true }
    /// ```
    public func storedObjects(of entity: String, from: Id = 1, limit: Int? = nil,
                              _ body: (StoredObject) throws -> Bool) throws {
        try checkOpen()
        guard let record = record(named: entity) else { throw StrataError.unknownEntity(entity) }
        let decoder = StoredObjectDecoder(record)
        try withReadTransaction { t in
            let prefix = ObjectKey.prefix(entityId: record.entityId)
            var lower = prefix
            IndexKey.appendBigEndian(from, to: &lower)
            var n = 0
            // Through the transaction: inside a write transaction, what it wrote and removed
            // so far counts too.
            try t.forEachEntry(in: .objects, from: lower, to: Engine.prefixSuccessor(prefix)) { key, value in
                guard limit.map({ n < $0 }) ?? true else { return false }
                let id = ObjectKey.id(fromKey: key)
                let values: [StoredValue]
                do { values = try decoder.decode(value) } catch {
                    throw StrataError.corruptObject(entity: entity, id: id, reason: "\(error)")
                }
                var object = StoredObject(id: id, values: [])
                var next = 0
                for p in record.properties where !p.isRemoved {
                    if p.type == .toMany {
                        object.values.append((p.name, .toMany(try t.toManyList(entityId: record.entityId, propertyId: p.id, source: id))))
                    } else {
                        object.values.append((p.name, values[next]))
                        next += 1
                    }
                }
                n += 1
                return try body(object)
            }
        }
    }

    /// Every edge of the relation `entity.property` (a `ToOne` or a standalone `ToMany`), from
    /// one consistent snapshot: a to-one's edges by target then source, a to-many's by source
    /// then position. Throws ``StrataError/unknownRelation(entity:property:)`` when the store has
    /// no such relation.
    ///
    /// ```swift
    /// try store.storedEdges(of: "Order.customer") { e in print(e.source, "→", e.target); return true }
    /// ```
    public func storedEdges(of relation: String, _ body: (StoredEdge) throws -> Bool) throws {
        try checkOpen()
        let parts = relation.split(separator: ".", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { throw StrataError.unknownRelation(entity: relation, property: "") }
        guard let record = record(named: parts[0]) else { throw StrataError.unknownEntity(parts[0]) }
        guard let property = record.properties.first(where: { !$0.isRemoved && $0.name == parts[1] && $0.type.isRelation }) else {
            throw StrataError.unknownRelation(entity: parts[0], property: parts[1])
        }
        let kind: EdgeKey.Kind = property.type == .toOne ? .toOneBacklink : .toManyList
        let prefix = EdgeKey.relationPrefix(kind: kind, entityId: record.entityId, propertyId: property.id)
        try withReadTransaction { t in
            try t.forEachEntry(in: .edges, from: prefix, to: Engine.prefixSuccessor(prefix)) { k, value in
                guard let key = EdgeKey(bytes: k) else { throw StrataError.corruptRelation(reason: "malformed edge key in \(relation)") }
                if kind == .toOneBacklink {
                    return try body(StoredEdge(source: key.b, target: key.a, position: nil))
                }
                for (i, target) in try EdgeList.decode(Array(value)).enumerated() {
                    guard try body(StoredEdge(source: key.a, target: target, position: i)) else { return false }
                }
                return true
            }
        }
    }
}
