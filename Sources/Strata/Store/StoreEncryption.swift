import Foundation
import StrataStorage

extension Store {
    /// Moves this store to another key and returns it opened under that key: closes it (wait
    /// for your transactions first), re-encrypts it with
    /// ``changeEncryptionKey(directoryPath:from:to:options:)`` (`to: nil` decrypts it), then
    /// opens it again with `options` and the new key. This instance stays closed; use the one
    /// returned. A failure (a crash, an I/O error) leaves the store under the old key or the new
    /// one, whole; open it again with the key that works.
    ///
    /// ```swift
    /// store = try store.changeEncryptionKey(to: newKey, reopeningWith: StoreOptions())
    /// ```
    public func changeEncryptionKey(to newKey: Data?, reopeningWith options: StoreOptions = StoreOptions()) throws(StrataError) -> Store {
        let oldKey = engine.encryptionKey.map { Data($0) }
        let path = directoryPath
        close()
        try Self.changeEncryptionKey(directoryPath: path, from: oldKey, to: newKey, options: options)
        var reopen = options
        reopen.encryptionKey = newKey
        return try Store(directoryPath: path, options: reopen)
    }

    /// Re-encrypts the closed store in `directoryPath` under another key: `from` is its key now
    /// (nil: a plaintext store, which this encrypts), `to` the key it gets (nil: decrypt it).
    /// Every file is written again under the new key and the switch is one rename: a crash or
    /// a power cut at any moment leaves a store that opens with the old key or with the new one,
    /// never neither. The store must not be open (it is locked while this runs). A continuous
    /// archive keeps what it holds under the old key: give the store a new archive target after
    /// a key change. `options` are the ones the store is opened with (their key is ignored).
    ///
    /// ```swift
    /// try Store.changeEncryptionKey(directoryPath: path, from: nil, to: newKey)      // encrypt
    /// try Store.changeEncryptionKey(directoryPath: path, from: newKey, to: otherKey) // rotate
    /// ```
    @discardableResult
    public static func changeEncryptionKey(directoryPath: String, from oldKey: Data?, to newKey: Data?,
                                           options: StoreOptions = StoreOptions()) throws(StrataError) -> KeyChangeReport {
        do {
            return try Engine.changeEncryptionKey(directory: directoryPath, from: oldKey.map { Array($0) }, to: newKey.map { Array($0) },
                                                  options: engineOptions(for: options))
        } catch {
            throw StrataError(error)
        }
    }
}
