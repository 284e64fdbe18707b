/// An index key prefix (header and encoded value) as a dictionary key. Hashes its bytes in one
/// call: `[UInt8]`'s own hashing feeds the hasher a byte at a time, which made remembering the
/// unique values of a transaction a fifth of the cost of putting an object with a `@Unique`.
struct IndexValueKey: Hashable {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
