/// The stored bytes of a fresh object of one entity type, in memory of a stable address:
/// query matchers keep views into them for fields that stored objects lack (a property added
/// after they were written), for as long as they hold this.
final class DefaultEncoding: Sendable {
    nonisolated(unsafe) let bytes: UnsafeMutableRawBufferPointer

    init(_ encoded: [UInt8]) {
        // Never empty: every encoding starts with the codec version.
        bytes = .allocate(byteCount: encoded.count, alignment: 8)
        encoded.withUnsafeBytes { bytes.copyMemory(from: $0) }
    }

    deinit { bytes.deallocate() }
}
