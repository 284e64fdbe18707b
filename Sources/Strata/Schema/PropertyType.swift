/// How a property's values are stored. Raw values reach disk (SPEC.md §Object codec): never
/// renumber. `Int` and `UInt` are stored as their 64-bit forms; `Data` and `[UInt8]` share
/// `bytes`; an enum is stored as its raw value's type.
public enum PropertyType: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case bool = 1
    case int8 = 2
    case int16 = 3
    case int32 = 4
    case int64 = 5
    case uint8 = 6
    case uint16 = 7
    case uint32 = 8
    case uint64 = 9
    case float = 10
    case double = 11
    case string = 12
    case date = 13
    case bytes = 14
    /// A `ToOne`: the target's id (a varint), or null.
    case toOne = 15
    /// A standalone `ToMany`: nothing in the object; its edges live in the edges key space.
    case toMany = 16
    /// A `UUID`: its 16 bytes, in the order `uuid` gives them.
    case uuid = 17
    /// A `URL`: its absolute string, UTF-8.
    case url = 18
    /// A `Decimal`: an exact, order-preserving encoding (`OrderedDecimal`), so that stored
    /// bytes compare as the numbers do.
    case decimal = 19
    /// Any other `Codable` value (a struct, an array, a set, a dictionary): its
    /// ``CompactValue`` (SPEC.md §11.3).
    case codable = 20

    public var description: String {
        switch self {
        case .bool: "Bool"
        case .int8: "Int8"
        case .int16: "Int16"
        case .int32: "Int32"
        case .int64: "Int64"
        case .uint8: "UInt8"
        case .uint16: "UInt16"
        case .uint32: "UInt32"
        case .uint64: "UInt64"
        case .float: "Float"
        case .double: "Double"
        case .string: "String"
        case .date: "Date"
        case .bytes: "bytes"
        case .toOne: "ToOne"
        case .toMany: "ToMany"
        case .uuid: "UUID"
        case .url: "URL"
        case .decimal: "Decimal"
        case .codable: "Codable"
        }
    }
}

extension PropertyType {
    /// Whether the property is a relation (its schema names a target entity).
    package var isRelation: Bool { self == .toOne || self == .toMany }
}
