/// A digest of an index key prefix (a property's header and an encoded value): the key under
/// which a write transaction remembers which objects it gave a `@Unique` value. A digest, not the
/// bytes, so that remembering and checking a value builds no array: a collision only adds a
/// candidate, and every candidate is read again and its value compared before it counts.
enum IndexValueDigest {
    static func of(header: [UInt8], value: [UInt8]) -> Int {
        var hasher = Hasher()
        // Whole buffers in one call each: `[UInt8]`'s own hashing feeds the hasher a byte at a time.
        header.withUnsafeBytes { hasher.combine(bytes: $0) }
        value.withUnsafeBytes { hasher.combine(bytes: $0) }
        return hasher.finalize()
    }
}
