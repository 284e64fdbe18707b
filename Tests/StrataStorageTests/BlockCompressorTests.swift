import CLZ4
import Testing
@testable import StrataStorage
import StrataTestSupport

/// One compression state serves a whole segment (`BlockCompressor`): every block it writes must
/// still decompress alone, with nothing of the blocks before it, since a read decompresses one
/// block. Blocks that repeat earlier ones are where a compressor keeping history would refer back.
@Suite struct BlockCompressorTests {
    static func decompress(_ compressed: [UInt8], count: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        let n = compressed.withUnsafeBytes { src in
            out.withUnsafeMutableBytes { dst in
                LZ4_decompress_safe(src.baseAddress!.assumingMemoryBound(to: CChar.self),
                                    dst.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(src.count), Int32(count))
            }
        }
        return Int(n) == count ? out : nil
    }

    @Test func everyBlockDecompressesAloneWhenBlocksRepeat() {
        let compressor = BlockCompressor()
        var rng = SplitMix64(state: 7)
        // A few distinct blocks, then each again: the repeats compress about as well as the
        // first time (a reference to the earlier copy would take a few dozen bytes).
        var distinct: [[UInt8]] = []
        for b in 0..<4 {
            var block: [UInt8] = []
            for i in 0..<(4096 + b * 333) {
                let noise = rng.next()
                block.append(UInt8(truncatingIfNeeded: noise % 7 == 0 ? noise >> 8 : UInt64(i / 5 + b)))
            }
            distinct.append(block)
        }
        var firstSizes: [Int] = []
        for (round, block) in (distinct + distinct + distinct.reversed()).enumerated() {
            let bound = Int(LZ4_compressBound(Int32(block.count)))
            var out = [UInt8](repeating: 0, count: bound)
            let n = block.withUnsafeBytes { src in out.withUnsafeMutableBytes { compressor.compress(src, into: $0) } }
            #expect(n > 0 && n < block.count)
            #expect(Self.decompress(Array(out[0..<n]), count: block.count) == block, "block \(round)")
            if round < distinct.count { firstSizes.append(n) } else {
                #expect(n > firstSizes[distinct.firstIndex(of: block)!] / 2, "block \(round) used an earlier block")
            }
        }
        // Too small a destination is 0, not an overflow.
        let block = distinct[0]
        var small = [UInt8](repeating: 0, count: 16)
        #expect(block.withUnsafeBytes { src in small.withUnsafeMutableBytes { compressor.compress(src, into: $0) } } == 0)
        let empty: [UInt8] = []
        #expect(empty.withUnsafeBytes { src in small.withUnsafeMutableBytes { compressor.compress(src, into: $0) } } == 0)
    }
}
