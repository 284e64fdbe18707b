/// The plaintext header that starts every file of an encrypted store (SPEC.md §14.1):
///
/// ```
/// magic "STRATENC" (8) | version (u32) = 1 | cipher (u32) | salt (32) | key check (16)
/// ```
///
/// 64 bytes. The salt makes the file's key (HKDF of the master key); the key check value, derived
/// with it, tells a wrong key from damage before anything is decrypted.
package enum EncryptionHeader {
    package static let bytes = 64
    static let magic: UInt64 = 0x434E_4554_4152_5453 // "STRATENC" in file order
    static let version: UInt32 = 1
    static let saltBytes = 32
    static let checkBytes = 16
    package static let masterKeyBytes = 32

    static func encode(salt: [UInt8], check: [UInt8], cipher: FileCipher) -> [UInt8] {
        var w = ByteWriter(capacity: bytes)
        w.appendFixed64(magic)
        w.appendFixed32(version)
        w.appendFixed32(cipher.rawValue)
        w.append(salt)
        w.append(check)
        return w.bytes
    }

    /// Whether `prefix` (a file's first bytes, up to 8 of them) starts with the magic.
    package static func startsWithMagic(_ prefix: UnsafeRawBufferPointer) -> Bool {
        prefix.count >= 8 && loadFixed64(prefix, 0) == magic
    }

    /// What a file's first bytes say about its encryption, given the store's cipher (nil: the
    /// store is opened without a key).
    enum Reading {
        /// A plaintext file, opened without a key.
        case plain
        /// An encrypted file, opened with its key.
        case sealed(FileSealer)
    }

    /// Reads the header in `head` (the file's first `min(64, size)` bytes): a file that starts
    /// with the magic needs the key (``StorageError/encryptionKeyRequired(file:)``) and the right
    /// one (``StorageError/wrongEncryptionKey(file:)``); one that does not, opened with a key, is
    /// not encrypted (``StorageError/notEncrypted(file:)``). With `keyChecked` (the manifest
    /// already opened with this key), a header that disagrees is damage:
    /// ``StorageError/corruption(file:offset:reason:)``.
    static func read(_ head: UnsafeRawBufferPointer, cipher: StoreCipher?, path: String, keyChecked: Bool = false) throws -> Reading {
        do {
            return try readChecking(head, cipher: cipher, path: path)
        } catch let e as StorageError where keyChecked && (e == .wrongEncryptionKey(file: path) || e == .notEncrypted(file: path)) {
            throw StorageError.corruption(file: path, offset: 0,
                                          reason: "encryption header damaged (the key that opens the store's manifest does not open it)")
        }
    }

    private static func readChecking(_ head: UnsafeRawBufferPointer, cipher: StoreCipher?, path: String) throws -> Reading {
        let encrypted = startsWithMagic(head)
        guard let cipher else {
            if encrypted { throw StorageError.encryptionKeyRequired(file: path) }
            return .plain
        }
        guard encrypted else { throw StorageError.notEncrypted(file: path) }
        guard head.count >= bytes else {
            throw StorageError.corruption(file: path, offset: 0, reason: "encryption header cut short")
        }
        let version = loadFixed32(head, 8), kind = loadFixed32(head, 12)
        guard version == Self.version else {
            throw StorageError.unsupportedFormatVersion(file: path, found: version, supported: Self.version)
        }
        guard let fileCipher = FileCipher(rawValue: kind) else {
            throw StorageError.corruption(file: path, offset: 12, reason: "unknown cipher \(kind)")
        }
        let salt = Array(head[16..<(16 + saltBytes)])
        return .sealed(try cipher.sealer(salt: salt, cipher: fileCipher,
                                         check: UnsafeRawBufferPointer(rebasing: head[(16 + saltBytes)..<bytes]), path: path))
    }

    /// Reads the header of an open file (see ``read(_:cipher:path:)``).
    static func read(file: any ReadableFile, cipher: StoreCipher?, path: String, keyChecked: Bool = false) throws -> Reading {
        var head = [UInt8](repeating: 0, count: Int(min(UInt64(bytes), file.size)))
        try head.withUnsafeMutableBytes { try file.readExactly(at: 0, into: $0, path: path) }
        return try head.withUnsafeBytes { try read($0, cipher: cipher, path: path, keyChecked: keyChecked) }
    }
}
