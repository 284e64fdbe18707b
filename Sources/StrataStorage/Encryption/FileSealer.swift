import Crypto
import Foundation
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
    let key: SymmetricKey
    let salt: [UInt8]
    /// The key check value the header carries.
    let check: [UInt8]
    let cipher: FileCipher
    /// The nonce's first 4 bytes and the base of its last 8, drawn at random for this sealer.
    private let nonceHigh: UInt32
    private let nonceBase: UInt64
    private let sealed = Atomic<UInt64>(0)

    static let nonceBytes = 12
    static let tagBytes = 16
    /// What sealing adds to a unit: its nonce and its tag.
    package static let overhead = nonceBytes + tagBytes

    init(key: SymmetricKey, salt: [UInt8], check: [UInt8], cipher: FileCipher) {
        self.key = key
        self.salt = salt
        self.check = check
        self.cipher = cipher
        var rng = SystemRandomNumberGenerator()
        nonceHigh = UInt32(truncatingIfNeeded: rng.next())
        nonceBase = rng.next()
    }

    /// The next nonce of this sealer: its random start plus the units sealed so far.
    private func nextNonce() -> [UInt8] {
        let low = nonceBase &+ sealed.wrappingAdd(1, ordering: .relaxed).oldValue
        var bytes = [UInt8](repeating: 0, count: Self.nonceBytes)
        withUnsafeBytes(of: nonceHigh.littleEndian) { bytes.replaceSubrange(0..<4, with: $0) }
        withUnsafeBytes(of: low.littleEndian) { bytes.replaceSubrange(4..<12, with: $0) }
        return bytes
    }

    /// The header that starts the file (SPEC.md §14.1).
    package var header: [UInt8] { EncryptionHeader.encode(salt: salt, check: check, cipher: cipher) }

    /// Appends `nonce | ciphertext | tag` of `plaintext` to `out`, authenticating `aad` too.
    func seal(_ plaintext: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, into out: inout ByteWriter) {
        // Sealing only fails for a nonce of the wrong size, which `nextNonce()` never makes.
        let nonce = nextNonce()
        let (ciphertext, tag): (Data, Data)
        switch cipher {
        case .aes256GCM:
            let box = try! AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(data: nonce), authenticating: aad)
            (ciphertext, tag) = (box.ciphertext, box.tag)
        case .chaCha20Poly1305:
            let box = try! ChaChaPoly.seal(plaintext, using: key, nonce: ChaChaPoly.Nonce(data: nonce), authenticating: aad)
            (ciphertext, tag) = (box.ciphertext, box.tag)
        }
        out.append(nonce)
        ciphertext.withUnsafeBytes { out.append($0) }
        tag.withUnsafeBytes { out.append($0) }
    }

    /// Opens a sealed unit into `out` (which holds `sealed.count - overhead` bytes); false when
    /// the tag does not match: a changed byte anywhere in the unit or in `aad`, or another key.
    func open(_ sealed: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard sealed.count >= Self.overhead, out.count == sealed.count - Self.overhead else { return false }
        let nonceBytes = UnsafeRawBufferPointer(rebasing: sealed[0..<Self.nonceBytes])
        let ciphertext = UnsafeRawBufferPointer(rebasing: sealed[Self.nonceBytes..<(sealed.count - Self.tagBytes)])
        let tag = UnsafeRawBufferPointer(rebasing: sealed[(sealed.count - Self.tagBytes)...])
        let opened: Data?
        switch cipher {
        case .aes256GCM:
            opened = (try? AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonceBytes), ciphertext: ciphertext, tag: tag))
                .flatMap { try? AES.GCM.open($0, using: key, authenticating: aad) }
        case .chaCha20Poly1305:
            opened = (try? ChaChaPoly.SealedBox(nonce: ChaChaPoly.Nonce(data: nonceBytes), ciphertext: ciphertext, tag: tag))
                .flatMap { try? ChaChaPoly.open($0, using: key, authenticating: aad) }
        }
        guard let plain = opened else { return false }
        guard plain.count == out.count else { return false }
        if !plain.isEmpty { plain.withUnsafeBytes { out.copyMemory(from: $0) } }
        return true
    }

    /// The plaintext of a sealed unit, or nil when its tag does not match.
    func opened(_ sealed: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer) -> [UInt8]? {
        guard sealed.count >= Self.overhead else { return nil }
        var out = [UInt8](repeating: 0, count: sealed.count - Self.overhead)
        let ok = out.withUnsafeMutableBytes { open(sealed, aad: aad, into: $0) }
        return ok ? out : nil
    }
}
