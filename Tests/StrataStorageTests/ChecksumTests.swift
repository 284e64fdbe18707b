import StrataTestSupport
import Testing
@testable import StrataStorage

/// CRC-32C: the hardware path runs three interleaved chains on long inputs and joins them with
/// shift tables; every length, alignment and split must give the textbook value.
@Suite struct ChecksumTests {
    /// Bit-at-a-time CRC-32C, the definition itself.
    static func reference(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            c ^= UInt32(b)
            for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
        }
        return ~c
    }

    @Test func knownValues() {
        #expect(Array("123456789".utf8).withUnsafeBytes { Checksum.crc32c($0) } == 0xE306_9283)
        #expect([UInt8](repeating: 0, count: 32).withUnsafeBytes { Checksum.crc32c($0) } == 0x8A91_36AA)
    }

    @Test func everyLengthAlignmentAndSplitMatchesTheDefinition() {
        var rng = SplitMix64(state: 3)
        let data = (0..<(3 * 8192 * 2 + 5_000)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        // Lengths around the stretch sizes (3 x 256, 3 x 8192) and a spread of others.
        var lengths = [0, 1, 7, 8, 9, 767, 768, 769, 1_536, 4_096, 24_575, 24_576, 24_577, 49_152, data.count - 3]
        for _ in 0..<40 { lengths.append(Int(rng.next() % UInt64(data.count - 8))) }
        for length in lengths {
            for offset in [0, 1, 3] where offset + length <= data.count {
                let slice = data[offset..<(offset + length)]
                let expected = Self.reference(slice)
                let whole = slice.withUnsafeBytes { Checksum.crc32c($0) }
                #expect(whole == expected, "length \(length) at offset \(offset)")
                let cut = length / 3
                let extended = slice.withUnsafeBytes { raw in
                    Checksum.crc32c(UnsafeRawBufferPointer(rebasing: raw[cut...]),
                                    extending: Checksum.crc32c(UnsafeRawBufferPointer(rebasing: raw[..<cut])))
                }
                #expect(extended == expected, "length \(length) split at \(cut)")
            }
        }
    }
}
