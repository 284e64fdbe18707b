#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Turns an index value encoding back into text for error messages (`"ada@example.com"`, `42`).
enum IndexValueText {
    static func describe(_ encoded: [UInt8], type: PropertyType) -> String {
        guard let tag = encoded.first else { return "?" }
        func word() -> UInt64 { encoded.dropFirst().prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        switch tag {
        case IndexKey.Tag.null: return "nil"
        case IndexKey.Tag.int: return String(Int64(bitPattern: word() ^ (1 << 63)))
        case IndexKey.Tag.uint:
            return type == .bool ? String(word() != 0) : String(word())
        case IndexKey.Tag.double:
            let bits = word()
            let value = Double(bitPattern: bits & (1 << 63) != 0 ? bits & ~(1 << 63) : ~bits)
            return type == .float ? String(Float(value)) : String(value)
        case IndexKey.Tag.bytes:
            var raw: [UInt8] = []
            var i = 1
            while i < encoded.count {
                let b = encoded[i]
                if b == 0 {
                    if i + 1 < encoded.count, encoded[i + 1] == 0xFF { raw.append(0); i += 2; continue }
                    break
                }
                raw.append(b)
                i += 1
            }
            switch type {
            case .string, .url:
                let s = String(decoding: raw, as: UTF8.self)
                return "\"" + (s.count > 80 ? s.prefix(80) + "…" : s) + "\""
            case .uuid:
                if let u = try? raw.withUnsafeBytes({ try UUID.fromStored($0) }) { return u.uuidString }
            case .decimal:
                if let d = try? raw.withUnsafeBytes({ try OrderedDecimal.decode($0) }) { return d.description }
            case .codable:
                if let v = try? raw.withUnsafeBytes({ try CompactValue.parse($0) }) {
                    let s = text(v)
                    return s.count > 80 ? s.prefix(80) + "…" : s
                }
            default:
                break
            }
            return "\(raw.count) bytes"
        default: return "?"
        }
    }

    /// A `Codable` value in JSON's notation: `{"street": "Main 1", "zip": 10001}`.
    private static func text(_ value: CompactValue) -> String {
        switch value {
        case .null: "null"
        case let .bool(b): String(b)
        case let .int(v): String(v)
        case let .uint(v): String(v)
        case let .double(v): String(v)
        case let .string(s): "\"" + s + "\""
        case let .array(elements): "[" + elements.map(text).joined(separator: ", ") + "]"
        case let .keyed(entries): "{" + entries.map { "\"\($0.key)\": " + text($0.value) }.joined(separator: ", ") + "}"
        }
    }
}
