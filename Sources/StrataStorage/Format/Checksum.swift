import CStrataSupport

/// CRC-32C helpers. Stored checksums are masked (SPEC.md §Checksums) so that data that embeds
/// its own checksum does not produce a trivially predictable CRC.
package enum Checksum {
    @inline(__always)
    package static func crc32c(_ raw: UnsafeRawBufferPointer, extending crc: UInt32 = 0) -> UInt32 {
        strata_crc32c_extend(crc, raw.baseAddress, raw.count)
    }

    @inline(__always)
    package static func mask(_ crc: UInt32) -> UInt32 {
        ((crc >> 15) | (crc << 17)) &+ FormatConstants.crcMaskDelta
    }

    @inline(__always)
    static func unmask(_ masked: UInt32) -> UInt32 {
        let rot = masked &- FormatConstants.crcMaskDelta
        return (rot >> 17) | (rot << 15)
    }
}
