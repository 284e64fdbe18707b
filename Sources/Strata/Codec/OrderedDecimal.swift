#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How a `Decimal` is stored (SPEC.md §11.3): exactly, and so that stored bytes compare as the
/// numbers do. Queries, orderings and indexes then compare decimals bytewise, like strings.
///
/// A value `±0.d₁d₂…dₙ × 10^a` (digits without leading or trailing zeros) is stored as
///
/// ```
/// NaN       00
/// negative  40 | ~(a as i16 BE, sign bit flipped) | ~(d₁+1) … ~(dₙ+1) | FF
/// zero      80
/// positive  C0 | (a as i16 BE, sign bit flipped)  |  (d₁+1) …  (dₙ+1) | 00
/// ```
///
/// A larger `a` is a larger magnitude; at equal `a` the digits compare left to right, and the
/// terminator (below every digit) makes 1.2 sort before 1.25. Negative values store the same
/// bytes inverted, so that their order reverses. One value has one encoding: 1.50 and 1.5 are
/// equal and store equal bytes.
enum OrderedDecimal {
    static let nanMarker: UInt8 = 0x00
    static let negativeMarker: UInt8 = 0x40
    static let zeroMarker: UInt8 = 0x80
    static let positiveMarker: UInt8 = 0xC0
    /// Digits a `Decimal`'s mantissa (128 bits) may have.
    static let maxDigits = 39

    /// The stored bytes of `value`.
    static func encode(_ value: Decimal) -> [UInt8] {
        if value.isNaN { return [nanMarker] }
        if value.isZero { return [zeroMarker] }
        // The significand's digits (an integer, exponent 0), without its trailing zeros.
        var digits = Array(value.significand.magnitude.description.utf8).map { $0 &- UInt8(ascii: "0") }
        var exponent = value.exponent
        while digits.count > 1, digits.last == 0 {
            digits.removeLast()
            exponent += 1
        }
        let adjusted = exponent + digits.count
        let negative = value.sign == .minus
        var out: [UInt8] = [negative ? negativeMarker : positiveMarker]
        out.reserveCapacity(digits.count + 4)
        let e = UInt16(bitPattern: Int16(clamping: adjusted)) ^ 0x8000
        let flip: UInt8 = negative ? 0xFF : 0
        out.append(UInt8(e >> 8) ^ flip)
        out.append(UInt8(e & 0xFF) ^ flip)
        for d in digits { out.append((d + 1) ^ flip) }
        out.append(flip)
        return out
    }

    /// The value stored in `bytes`, or why they are no decimal.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> Decimal {
        guard let marker = bytes.first else { throw CodecFailure("an empty Decimal") }
        switch marker {
        case nanMarker:
            guard bytes.count == 1 else { throw CodecFailure("a Decimal NaN with trailing bytes") }
            return .nan
        case zeroMarker:
            guard bytes.count == 1 else { throw CodecFailure("a Decimal zero with trailing bytes") }
            return 0
        case negativeMarker, positiveMarker:
            break
        default:
            throw CodecFailure("a Decimal with marker \(marker)")
        }
        let flip: UInt8 = marker == negativeMarker ? 0xFF : 0
        // Marker, two exponent bytes, at least one digit, the terminator.
        guard bytes.count >= 5, bytes.count <= maxDigits + 4, bytes[bytes.count - 1] ^ flip == 0 else {
            throw CodecFailure("a Decimal of \(bytes.count) bytes")
        }
        let adjusted = Int(Int16(bitPattern: (UInt16(bytes[1] ^ flip) << 8 | UInt16(bytes[2] ^ flip)) ^ 0x8000))
        var digits: [UInt8] = []
        digits.reserveCapacity(bytes.count - 4)
        for i in 3..<(bytes.count - 1) {
            let d = bytes[i] ^ flip
            guard d >= 1, d <= 10 else { throw CodecFailure("a Decimal digit byte \(bytes[i])") }
            digits.append(d - 1)
        }
        guard digits.first != 0, digits.last != 0 else { throw CodecFailure("a Decimal with leading or trailing zeros") }
        var exponent = adjusted - digits.count
        var mantissa: UInt128 = 0
        for d in digits {
            let (times10, o1) = mantissa.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt128(d))
            guard !o1, !o2 else { throw CodecFailure("a Decimal of more digits than it holds") }
            mantissa = sum
        }
        // A Decimal's exponent is -128…127; a larger one is carried as zeros in the significand.
        while exponent > 127 {
            let (times10, overflow) = mantissa.multipliedReportingOverflow(by: 10)
            guard !overflow else { throw CodecFailure("a Decimal exponent of \(exponent)") }
            mantissa = times10
            exponent -= 1
        }
        guard exponent >= -128 else { throw CodecFailure("a Decimal exponent of \(exponent)") }
        // Exact: every integer below 2^128 is a Decimal.
        let twoTo64 = Decimal(UInt64.max) + 1
        let significand = Decimal(UInt64(mantissa >> 64)) * twoTo64 + Decimal(UInt64(truncatingIfNeeded: mantissa))
        return Decimal(sign: marker == negativeMarker ? .minus : .plus, exponent: exponent, significand: significand)
    }
}
