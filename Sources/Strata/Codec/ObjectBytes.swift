/// Field-level access to encoded objects without their Swift type: what inverse maintenance
/// needs to read or clear a to-one in objects of any entity. Throws `CodecFailure`.
enum ObjectBytes {
    /// The to-one targets stored in `bytes` for the given property ids (absent or null: none).
    static func toOneTargets(in bytes: UnsafeRawBufferPointer, propertyIds: [UInt32]) throws -> [UInt32: Id] {
        guard !propertyIds.isEmpty else { return [:] }
        var out: [UInt32: Id] = [:]
        try forEachField(in: bytes) { id, wire, reader in
            if wire == .varint && propertyIds.contains(id) {
                out[id] = try reader.readVarint()
            } else {
                try reader.skip(wire)
            }
        }
        return out
    }

    /// `bytes` with property `propertyId` set to null (a cleared to-one); other fields unchanged.
    static func clearingField(_ propertyId: UInt32, in bytes: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = [ObjectFormat.codecVersion]
        out.reserveCapacity(bytes.count + 2)
        try bytes.withUnsafeBytes { raw in
            try forEachField(in: raw) { id, wire, reader in
                let start = reader.position
                try reader.skip(wire)
                if id != propertyId {
                    appendTag(id, wire, to: &out)
                    out.append(contentsOf: raw[start..<reader.position])
                }
            }
        }
        appendTag(propertyId, .null, to: &out)
        return out
    }

    /// Calls `body` with each field's property id and wire type; `body` must consume the payload.
    private static func forEachField(in bytes: UnsafeRawBufferPointer,
                                     _ body: (UInt32, WireType, inout ObjectReader) throws -> Void) throws {
        try [Int32]().withUnsafeBufferPointer { empty in
            var reader = try ObjectReader(bytes: bytes, fieldMap: empty)
            while reader.position < reader.end {
                let tag = try reader.readVarint()
                guard let wire = WireType(rawValue: UInt8(tag & 7)) else { throw CodecFailure("unknown wire type \(tag & 7)") }
                try body(UInt32(truncatingIfNeeded: tag >> 3), wire, &reader)
            }
        }
    }

    private static func appendTag(_ id: UInt32, _ wire: WireType, to out: inout [UInt8]) {
        var v = UInt64(id) << 3 | UInt64(wire.rawValue)
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }
}
