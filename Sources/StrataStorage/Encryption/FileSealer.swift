import Synchronization

/// Seals and opens the units of one encrypted file (a log record, a segment block, a whole
/// small file) with AES-256-GCM under the file's own key (SPEC.md §14). A sealed unit is
/// `nonce (12) | ciphertext | tag (16)`. Each sealer draws a random 96-bit nonce when it is made
/// and counts up from it, one per unit, so a unit sealed again (a log record appended after a
/// torn tail was cut back, a second copy of the store appending to the same file, the next open
/// appending to a manifest) gets a nonce never used under the file's key: two sealers of one
/// file collide only if their random starts fall within the units they seal of each other, a
/// chance of about (units)/2^96. Drawing one random nonce per unit cost 750 ns (a system call);
/// counting costs nothing (Benchmarks/RESULTS.md, `ciphers`).
package final class FileSealer: Sendable {
    let salt: [UInt8]
    /// The key check value the header carries.
    let check: [UInt8]
    /// The file key's cipher, set up once (``AEADContext``).
    let context: AEADContext
    var cipher: FileCipher { context.cipher }
    /// The nonce's first 4 bytes and the base of its last 8, drawn at random for this sealer.
    private let nonceHigh: UInt32
    private let nonceBase: UInt64
    private let sealed = Atomic<UInt64>(0)

    static let nonceBytes = AEADContext.nonceBytes
    static let tagBytes = AEADContext.tagBytes
    /// What sealing adds to a unit: its nonce and its tag.
    package static let overhead = nonceBytes + tagBytes

    init(key: UnsafeRawBufferPointer, salt: [UInt8], check: [UInt8], cipher: FileCipher,
         implementation: AEADContext.Implementation = .preferred) {
        context = AEADContext(key: key, cipher: cipher, implementation: implementation)
        self.salt = salt
        self.check = check
        var rng = SystemRandomNumberGenerator()
        // Top bit clear: nonces with it set are a segment's sealed values' (``SealedIdValues``).
        nonceHigh = UInt32(truncatingIfNeeded: rng.next()) & 0x7FFF_FFFF
        nonceBase = rng.next()
    }

    /// The header that starts the file (SPEC.md §14.1).
    package var header: [UInt8] { EncryptionHeader.encode(salt: salt, check: check, cipher: cipher) }

    /// Appends `nonce | ciphertext | tag` of `plaintext` to `out`, authenticating `aad` too.
    func seal(_ plaintext: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, into out: inout ByteWriter) {
        let start = beginUnit(&out)
        out.append(plaintext)
        endUnit(start, in: &out) { _ in aad }
    }

    /// Appends a sealed unit whose plaintext `writeBody` appends to `out`, sealed there in place:
    /// no copy of the body. The additional data is `out`'s bytes `aad`, written before the unit.
    func seal(into out: inout ByteWriter, aad: Range<Int>, _ writeBody: (inout ByteWriter) -> Void) {
        precondition(aad.upperBound <= out.count, "additional data must precede the unit")
        let start = beginUnit(&out)
        writeBody(&out)
        endUnit(start, in: &out) { UnsafeRawBufferPointer(rebasing: $0[aad]) }
    }

    /// Appends `nonce | payload | tag`, where the tag authenticates the payload, left in the
    /// clear, followed by `aadSuffix` (not stored): AES-GCM of an empty plaintext with that
    /// additional data. A segment's id block of sealed values is stored so (SPEC.md §14.3): its
    /// values are sealed already, its entries must stay readable one by one.
    func authenticate(_ payload: UnsafeRawBufferPointer, aadSuffix: UnsafeRawBufferPointer, into out: inout ByteWriter) {
        let start = beginUnit(&out)
        out.append(payload)
        out.append(aadSuffix)
        withUnsafeTemporaryAllocation(byteCount: Self.tagBytes, alignment: 8) { tag in
            out.bytes.withUnsafeMutableBytes { raw in
                context.seal(UnsafeMutableRawBufferPointer(start: nil, count: 0),
                             nonce: UnsafeRawBufferPointer(rebasing: raw[start..<(start + Self.nonceBytes)]),
                             aad: UnsafeRawBufferPointer(rebasing: raw[(start + Self.nonceBytes)...]), tag: tag)
            }
            out.removeLast(aadSuffix.count)
            out.append(UnsafeRawBufferPointer(tag))
        }
    }

    /// Checks `nonce | payload | tag` in `stored`, as ``authenticate(_:aadSuffix:into:)`` wrote
    /// it, with `aadSuffix`; `stored` must have room for the suffix past the payload, where the
    /// tag lies, which it overwrites (the tag is copied first). False when the tag does not match.
    func verifyAuthenticated(_ stored: UnsafeMutableRawBufferPointer, payloadCount n: Int, aadSuffix: UnsafeRawBufferPointer) -> Bool {
        guard stored.count >= Self.overhead, n <= stored.count - Self.overhead,
              aadSuffix.count <= stored.count - Self.nonceBytes - n else { return false }
        return withUnsafeTemporaryAllocation(byteCount: Self.tagBytes, alignment: 8) { tag in
            let tagAt = Self.nonceBytes + n
            tag.copyMemory(from: UnsafeRawBufferPointer(rebasing: stored[tagAt..<(tagAt + Self.tagBytes)]))
            UnsafeMutableRawBufferPointer(rebasing: stored[tagAt..<(tagAt + aadSuffix.count)]).copyMemory(from: aadSuffix)
            return context.open(UnsafeRawBufferPointer(start: nil, count: 0), tag: UnsafeRawBufferPointer(tag),
                                nonce: UnsafeRawBufferPointer(rebasing: stored[0..<Self.nonceBytes]),
                                aad: UnsafeRawBufferPointer(rebasing: stored[Self.nonceBytes..<(tagAt + aadSuffix.count)]),
                                into: UnsafeMutableRawBufferPointer(start: nil, count: 0))
        }
    }

    /// Appends the next nonce of this sealer (its random start plus the units sealed so far);
    /// returns where the unit starts.
    private func beginUnit(_ out: inout ByteWriter) -> Int {
        let start = out.count
        out.appendFixed32(nonceHigh)
        out.appendFixed64(nonceBase &+ sealed.wrappingAdd(1, ordering: .relaxed).oldValue)
        return start
    }

    /// Seals the unit's body (everything appended after its nonce) in place and appends its tag.
    private func endUnit(_ start: Int, in out: inout ByteWriter, aad: (UnsafeRawBufferPointer) -> UnsafeRawBufferPointer) {
        let bodyStart = start + Self.nonceBytes
        let bodyEnd = out.count
        out.appendZeros(Self.tagBytes)
        out.bytes.withUnsafeMutableBytes { raw in
            context.seal(UnsafeMutableRawBufferPointer(rebasing: raw[bodyStart..<bodyEnd]),
                         nonce: UnsafeRawBufferPointer(rebasing: raw[start..<bodyStart]),
                         aad: aad(UnsafeRawBufferPointer(raw)),
                         tag: UnsafeMutableRawBufferPointer(rebasing: raw[bodyEnd...]))
        }
    }

    /// Opens a sealed unit into `out`, which holds `sealed.count - overhead` bytes and is either
    /// apart from `sealed` or exactly its ciphertext (`sealed` past the nonce: opened in place).
    /// False when the tag does not match: a changed byte anywhere in the unit or in `aad`, or
    /// another key.
    func open(_ sealed: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard sealed.count >= Self.overhead, out.count == sealed.count - Self.overhead else { return false }
        return context.open(UnsafeRawBufferPointer(rebasing: sealed[Self.nonceBytes..<(sealed.count - Self.tagBytes)]),
                            tag: UnsafeRawBufferPointer(rebasing: sealed[(sealed.count - Self.tagBytes)...]),
                            nonce: UnsafeRawBufferPointer(rebasing: sealed[0..<Self.nonceBytes]),
                            aad: aad, into: out)
    }

    /// The plaintext of a sealed unit, or nil when its tag does not match.
    func opened(_ sealed: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer) -> [UInt8]? {
        guard sealed.count >= Self.overhead else { return nil }
        var out = [UInt8](repeating: 0, count: sealed.count - Self.overhead)
        let ok = out.withUnsafeMutableBytes { open(sealed, aad: aad, into: $0) }
        return ok ? out : nil
    }
}
