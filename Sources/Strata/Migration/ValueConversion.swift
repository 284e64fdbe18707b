import Foundation

/// The conversions a migration applies when a property changes type without a closure of the
/// app's (``Migration/changeType(of:in:to:optional:_:)``): between integers and floating point,
/// from numbers and booleans to strings, from strings to numbers and booleans. Anything else
/// needs the app's own conversion.
enum ValueConversion {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func convert(_ value: StoredValue, to type: PropertyType) throws -> StoredValue {
        if case .null = value { return .null }
        switch type {
        case .string:
            switch value {
            case let .string(s): return .string(s)
            case let .int(x): return .string(String(x))
            case let .uint(x): return .string(String(x))
            case let .double(x): return .string(x.rounded() == x && abs(x) < 1e15 ? String(Int64(x)) : String(x))
            case let .bool(b): return .string(b ? "true" : "false")
            case let .decimal(d): return .string(d.description)
            case let .uuid(u): return .string(u.uuidString)
            case let .url(u): return .string(u.absoluteString)
            default: break
            }
        case .int8, .int16, .int32, .int64, .uint8, .uint16, .uint32, .uint64:
            switch value {
            case .int, .uint: return value   // the range is checked when the value is written
            case let .bool(b): return .int(b ? 1 : 0)
            case let .double(x):
                // Toward zero, as Swift's Int(_:) does; never a NaN or an infinity.
                guard x.isFinite, let v = Int64(exactly: x.rounded(.towardZero)) else {
                    throw Failure(description: "\(x) is not a whole number in range")
                }
                return .int(v)
            case let .string(s):
                let text = s.trimmingCharacters(in: .whitespaces)
                if let v = Int64(text) { return .int(v) }
                if let v = UInt64(text) { return .uint(v) }
                throw Failure(description: "\"\(s)\" is not an integer")
            case let .decimal(d):
                guard let v = Int64(exactly: NSDecimalNumber(decimal: d).doubleValue.rounded(.towardZero)) else {
                    throw Failure(description: "\(d) is not an integer in range")
                }
                return .int(v)
            default: break
            }
        case .float, .double:
            switch value {
            case let .double(x): return .double(x)
            case let .int(x): return .double(Double(x))
            case let .uint(x): return .double(Double(x))
            case let .bool(b): return .double(b ? 1 : 0)
            case let .decimal(d): return .double(NSDecimalNumber(decimal: d).doubleValue)
            case let .string(s):
                guard let v = Double(s.trimmingCharacters(in: .whitespaces)) else { throw Failure(description: "\"\(s)\" is not a number") }
                return .double(v)
            default: break
            }
        case .bool:
            switch value {
            case let .bool(b): return .bool(b)
            case let .int(x) where x == 0 || x == 1: return .bool(x == 1)
            case let .uint(x) where x <= 1: return .bool(x == 1)
            case let .string(s) where ["true", "false"].contains(s.lowercased()): return .bool(s.lowercased() == "true")
            default: break
            }
        case .decimal:
            switch value {
            case let .decimal(d): return .decimal(d)
            case let .int(x): return .decimal(Decimal(x))
            case let .uint(x): return .decimal(Decimal(x))
            case let .string(s):
                guard let d = Decimal(string: s.trimmingCharacters(in: .whitespaces)) else { throw Failure(description: "\"\(s)\" is not a number") }
                return .decimal(d)
            default: break
            }
        default:
            break
        }
        throw Failure(description: "no built-in conversion of \(value) to \(type): give the step a conversion of its own")
    }

    /// The stored form of a raw value (an enum's), by its dynamic type.
    static func stored(_ raw: Any) -> StoredValue {
        switch raw {
        case let s as String: .string(s)
        case let b as Bool: .bool(b)
        case let d as Double: .double(d)
        case let f as Float: .double(Double(f))
        case let u as UInt64: .uint(u)
        case let i as any BinaryInteger: .int(Int64(i))
        default: .null
        }
    }
}
