import Crypto
import Foundation

/// Seals and opens the units of one encrypted file (a log record, a segment block, a whole
/// small file) with AES-256-GCM under the file's own key (SPEC.md §14). A sealed unit is
/// `nonce (12) | ciphertext | tag (16)`; the nonce is random for every unit sealed, so a unit
/// sealed again (a log record appended after a torn tail was cut back, a second copy of the
/// store appending to the same file) never reuses a (key, nonce) pair: under a key used for
/// one file, the chance that two of its units draw the same 96-bit nonce is negligible (a file
/// holds far fewer than the 2^32 units NIST allows a key with random nonces).
package final class FileSealer: Sendable {
    let key: SymmetricKey
    let salt: [UInt8]
    /// The key check value the header carries.
    let check: [UInt8]

    static let nonceBytes = 12
    static let tagBytes = 16
    /// What sealing adds to a unit: its nonce and its tag.
    package static let overhead = nonceBytes + tagBytes

    init(key: SymmetricKey, salt: [UInt8], check: [UInt8]) {
        self.key = key
        self.salt = salt
        self.check = check
    }

    /// The header that starts the file (SPEC.md §14.1).
    package var header: [UInt8] { EncryptionHeader.encode(salt: salt, check: check) }

    /// Appends `nonce | ciphertext | tag` of `plaintext` to `out`, authenticating `aad` too.
    func seal(_ plaintext: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, into out: inout ByteWriter) {
        // Sealing only fails for a nonce of the wrong size, which AES.GCM.Nonce() never is.
        let box = try! AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(), authenticating: aad)
        box.nonce.withUnsafeBytes { out.append($0) }
        box.ciphertext.withUnsafeBytes { out.append($0) }
        box.tag.withUnsafeBytes { out.append($0) }
    }

    /// `nonce | ciphertext | tag` of `plaintext` as a new array.
    func sealed(_ plaintext: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer) -> [UInt8] {
        var w = ByteWriter(capacity: plaintext.count + Self.overhead)
        seal(plaintext, aad: aad, into: &w)
        return w.bytes
    }

    /// Opens a sealed unit into `out` (which holds `sealed.count - overhead` bytes); false when
    /// the tag does not match: a changed byte anywhere in the unit or in `aad`, or another key.
    func open(_ sealed: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard sealed.count >= Self.overhead, out.count == sealed.count - Self.overhead,
              let nonce = try? AES.GCM.Nonce(data: UnsafeRawBufferPointer(rebasing: sealed[0..<Self.nonceBytes])),
              let box = try? AES.GCM.SealedBox(nonce: nonce,
                                               ciphertext: UnsafeRawBufferPointer(rebasing: sealed[Self.nonceBytes..<(sealed.count - Self.tagBytes)]),
                                               tag: UnsafeRawBufferPointer(rebasing: sealed[(sealed.count - Self.tagBytes)...])),
              let plain = try? AES.GCM.open(box, using: key, authenticating: aad)
        else { return false }
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
