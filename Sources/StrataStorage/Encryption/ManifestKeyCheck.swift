/// Tells a wrong key from a damaged manifest header. The manifest is the first file an open
/// reads, and its header's key check value is what says "wrong key"; but a changed byte in its
/// salt or check value says the same. When another file of the store (a segment, a WAL) opens
/// under the key, the key is right and the manifest is damaged: corruption, not a wrong key.
enum ManifestKeyCheck {
    /// `error` as the open should report it: unchanged, or `corruption` of the manifest.
    static func explain(_ error: StorageError, manifest path: String, directory: String, fileSystem fs: any FileSystem,
                        cipher: StoreCipher?) -> StorageError {
        guard let cipher else { return error }
        switch error {
        case .wrongEncryptionKey, .notEncrypted: break
        default: return error
        }
        guard let names = try? fs.listDirectory(directory) else { return error }
        for name in names {
            switch StoreFile.parse(name) {
            case .segment?, .wal?:
                let other = joinPath(directory, name)
                guard let file = try? fs.openReadable(other) else { continue }
                defer { file.close() }
                guard file.size >= UInt64(EncryptionHeader.bytes),
                      case .sealed? = try? EncryptionHeader.read(file: file, cipher: cipher, path: other) else { continue }
                return .corruption(file: path, offset: 0,
                                   reason: "encryption header damaged (\(name) opens under the same key)")
            default:
                continue
            }
        }
        return error
    }
}
