import Crypto
import Foundation

/// The store's master key, from which every encrypted file's own key is derived (SPEC.md §14).
/// One per engine; it never touches the disk. Each file the engine writes gets a fresh random
/// salt in its header and a key derived from the master key and that salt (HKDF-SHA256), so that
/// no two files, not even two copies of a store that go on writing, or a file number used again
/// after a restore, share a key.
package final class StoreCipher: Sendable {
    private let master: SymmetricKey

    /// A master key of exactly 32 bytes (AES-256); anything else is refused.
    package init(key: [UInt8]) throws {
        guard key.count == EncryptionHeader.masterKeyBytes else {
            throw StorageError.invalidOption(name: "encryptionKey",
                                             reason: "a key is \(EncryptionHeader.masterKeyBytes) bytes; this one has \(key.count)")
        }
        master = SymmetricKey(data: key)
    }

    /// The sealer of a new file: a fresh salt, written first in the file as its header.
    package func newFile() -> FileSealer {
        var salt = [UInt8](repeating: 0, count: EncryptionHeader.saltBytes)
        var rng = SystemRandomNumberGenerator()
        for i in stride(from: 0, to: salt.count, by: 8) {
            withUnsafeBytes(of: rng.next()) { salt.replaceSubrange(i..<(i + 8), with: $0) }
        }
        return sealer(salt: salt)
    }

    /// The sealer of an existing file whose header holds `salt` and `check`; a check value that
    /// differs means another master key: ``StorageError/wrongEncryptionKey(file:)``.
    func sealer(salt: [UInt8], check: UnsafeRawBufferPointer, path: String) throws -> FileSealer {
        let s = sealer(salt: salt)
        guard s.check.withUnsafeBytes({ $0.elementsEqual(check) }) else { throw StorageError.wrongEncryptionKey(file: path) }
        return s
    }

    private func sealer(salt: [UInt8]) -> FileSealer {
        // One HKDF expansion gives the file's key and its check value: revealing the check value
        // (it is in the header) reveals nothing of the key, as both are outputs of a PRF.
        let derived = HKDF<SHA256>.deriveKey(inputKeyMaterial: master, salt: salt,
                                             info: Array("strata file key v1".utf8),
                                             outputByteCount: 32 + EncryptionHeader.checkBytes)
        let bytes = derived.withUnsafeBytes { Array($0) }
        return FileSealer(key: SymmetricKey(data: bytes[0..<32]), salt: salt, check: Array(bytes[32...]))
    }
}
