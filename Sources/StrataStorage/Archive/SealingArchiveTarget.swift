/// The archive target of an encrypted store (SPEC.md §14.5): every object is sealed whole on its
/// way out (``SealedFile``, its name authenticated with it, so that no object can pass for
/// another) and opened on its way back, so that the bucket or directory holding the archive
/// reads as noise without the key. Segments and log pieces already hold sealed blocks and
/// records; sealing them again costs a pass of AES-GCM over what is shipped, and keeps the
/// names, commit times and key ranges of states and pieces out of sight too.
struct SealingArchiveTarget: ArchiveTarget {
    let inner: any ArchiveTarget
    let cipher: StoreCipher

    func put(_ name: String, _ bytes: [UInt8]) throws {
        do {
            try inner.put(name, SealedFile.seal(bytes, cipher: cipher, label: Self.label(name)))
        } catch {
            // A retried put seals afresh (another salt, other bytes): the object already there
            // is the same one when it opens to the same plaintext.
            if let existing = try? get(name), existing == bytes { return }
            throw error
        }
    }

    func get(_ name: String) throws -> [UInt8] {
        try SealedFile.open(try inner.get(name), cipher: cipher, label: Self.label(name), path: name)
    }

    func list() throws -> [String] { try inner.list() }
    func delete(_ name: String) throws { try inner.delete(name) }
    func removeIncompleteObjects() throws { try inner.removeIncompleteObjects() }

    static func label(_ name: String) -> String { "strata archive object " + name }

    /// `target` as an encrypted store reads and writes it: sealed when there is a cipher.
    static func wrapping(_ target: any ArchiveTarget, cipher: StoreCipher?) -> any ArchiveTarget {
        guard let cipher else { return target }
        return SealingArchiveTarget(inner: target, cipher: cipher)
    }

    /// The cipher behind `target`, when it is a sealing one: what reads the sealed WAL records
    /// inside its log pieces.
    static func cipher(of target: any ArchiveTarget) -> StoreCipher? { (target as? SealingArchiveTarget)?.cipher }
}
