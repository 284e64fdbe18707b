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
            default:
                break
            }
            return "\(raw.count) bytes"
        default: return "?"
        }
    }
}
