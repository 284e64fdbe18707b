/// A small file (or an archive object) sealed whole (SPEC.md §14.4): the encryption header,
/// then one sealed unit of the plaintext, authenticated with a label that says what the file
/// is (so that one kind of file cannot be passed off as another).
package enum SealedFile {
    /// `header | nonce | ciphertext | tag` of `plaintext`, under a fresh salt.
    package static func seal(_ plaintext: [UInt8], cipher: StoreCipher, label: String) -> [UInt8] {
        let sealer = cipher.newFile()
        var w = ByteWriter(capacity: EncryptionHeader.bytes + plaintext.count + FileSealer.overhead)
        w.append(sealer.header)
        Array(label.utf8).withUnsafeBytes { aad in plaintext.withUnsafeBytes { sealer.seal($0, aad: aad, into: &w) } }
        return w.bytes
    }

    /// The plaintext of a sealed file: the key must be the right one
    /// (``StorageError/wrongEncryptionKey(file:)``), and any changed byte is corruption.
    package static func open(_ bytes: [UInt8], cipher: StoreCipher, label: String, path: String) throws -> [UInt8] {
        try bytes.withUnsafeBytes { raw in
            guard case let .sealed(sealer) = try EncryptionHeader.read(UnsafeRawBufferPointer(rebasing: raw.prefix(EncryptionHeader.bytes)),
                                                                       cipher: cipher, path: path) else {
                throw StorageError.notEncrypted(file: path)
            }
            let sealed = UnsafeRawBufferPointer(rebasing: raw[EncryptionHeader.bytes...])
            guard let plain = Array(label.utf8).withUnsafeBytes({ sealer.opened(sealed, aad: $0) }) else {
                throw StorageError.corruption(file: path, offset: UInt64(EncryptionHeader.bytes), reason: "fails its authentication tag")
            }
            return plain
        }
    }
}
