import Crypto
import Foundation

/// The store's master key, from which every encrypted file's own key is derived (SPEC.md §14).
/// One per engine; it never touches the disk. Each file the engine writes gets a fresh random
/// salt in its header and a key derived from the master key and that salt (HKDF-SHA256), so that
/// no two files, not even two copies of a store that go on writing, or a file number used again
/// after a restore, share a key.
package final class StoreCipher: Sendable {
    private let master: SymmetricKey
    /// The cipher new files are sealed with; a reader takes each file's from its header.
    let writes: FileCipher

    /// A master key of exactly 32 bytes (AES-256); anything else is refused.
    package init(key: [UInt8]) throws {
        guard key.count == EncryptionHeader.masterKeyBytes else {
            throw StorageError.invalidOption(name: "encryptionKey",
                                             reason: "a key is \(EncryptionHeader.masterKeyBytes) bytes; this one has \(key.count)")
        }
        master = SymmetricKey(data: key)
        writes = FileCipher.default
    }

    /// The sealer of a new file: a fresh salt, written first in the file as its header.
    package func newFile() -> FileSealer {
        var salt = [UInt8](repeating: 0, count: EncryptionHeader.saltBytes)
        var rng = SystemRandomNumberGenerator()
        for i in stride(from: 0, to: salt.count, by: 8) {
            withUnsafeBytes(of: rng.next()) { salt.replaceSubrange(i..<(i + 8), with: $0) }
        }
        return sealer(salt: salt, cipher: writes)
    }

    /// The sealer of an existing file whose header holds `salt` and `check`; a check value that
    /// differs means another master key: ``StorageError/wrongEncryptionKey(file:)``.
    func sealer(salt: [UInt8], cipher: FileCipher, check: UnsafeRawBufferPointer, path: String) throws -> FileSealer {
        let s = sealer(salt: salt, cipher: cipher)
        guard s.check.withUnsafeBytes({ $0.elementsEqual(check) }) else { throw StorageError.wrongEncryptionKey(file: path) }
        return s
    }

    private func sealer(salt: [UInt8], cipher: FileCipher) -> FileSealer {
        // One HKDF expansion gives the file's key and its check value: revealing the check value
        // (it is in the header) reveals nothing of the key, as both are outputs of a PRF.
        let derived = HKDF<SHA256>.deriveKey(inputKeyMaterial: master, salt: salt,
                                             info: Array("strata file key v1".utf8),
                                             outputByteCount: 32 + EncryptionHeader.checkBytes)
        return derived.withUnsafeBytes { bytes in
            FileSealer(key: UnsafeRawBufferPointer(rebasing: bytes[0..<AEADContext.keyBytes]), salt: salt,
                       check: Array(bytes[AEADContext.keyBytes...]), cipher: cipher)
        }
    }
}

/// The AEAD a file is sealed with, named by its header (never renumber). Both take a 32-byte
/// key, a 12-byte nonce and give a 16-byte tag, so the layouts of SPEC.md §14 hold for either.
package enum FileCipher: UInt32, Sendable, CaseIterable {
    case aes256GCM = 1
    case chaCha20Poly1305 = 2

    /// What new files are sealed with, chosen by measurement (Benchmarks/RESULTS.md).
    static let `default`: FileCipher = .aes256GCM
}
