/// The values of an encrypted segment's id blocks, sealed one by one (segment format 6, SPEC.md
/// §14.3), so that a point read opens the one object it copies out of the file instead of a
/// whole block: its nonce comes from where its entry lies, its additional data is its key, so
/// nothing but the entry and the value is read.
///
/// ```
/// stored value = ciphertext | tag (16)
/// nonce        = 0x80000000 (u32 LE) | file offset of the value's entry (u64 LE)
/// AAD          = user key (head · id BE) | trailer (u64 LE)
/// ```
///
/// A segment file is written once, by one writer, under its own key (its random salt), and each
/// entry lies at its own offset: no nonce seals two values. The counter nonces of the file's
/// blocks (``FileSealer``) start with a word whose top bit is clear; these set it, so the two
/// never meet. A value read at a damaged offset opens under another nonce and fails; a value
/// read for another key or with a changed trailer fails on its additional data.
package enum SealedIdValues {
    static let tagBytes = AEADContext.tagBytes
    /// The nonce's first word: its top bit tells a value's nonce from a block's.
    static let nonceHigh: UInt32 = 0x8000_0000

    /// Seals `value` (plaintext followed by `tagBytes` bytes for its tag) in place.
    static func seal(_ value: UnsafeMutableRawBufferPointer, userKey: UnsafeRawBufferPointer, trailer: UInt64,
                     entryAt entryOffset: UInt64, context: AEADContext) {
        let n = value.count - tagBytes
        withNonceAndAAD(userKey: userKey, trailer: trailer, entryAt: entryOffset) { nonce, aad in
            context.seal(UnsafeMutableRawBufferPointer(rebasing: value[0..<n]), nonce: nonce, aad: aad,
                         tag: UnsafeMutableRawBufferPointer(rebasing: value[n...]))
        }
    }

    /// Opens a stored value in place: its plaintext is then `value`'s first `count - tagBytes`
    /// bytes. False when it is shorter than a tag or its tag does not match.
    static func open(_ value: UnsafeMutableRawBufferPointer, userKey: UnsafeRawBufferPointer, trailer: UInt64,
                     entryAt entryOffset: UInt64, context: AEADContext) -> Bool {
        guard value.count >= tagBytes else { return false }
        let n = value.count - tagBytes
        return withNonceAndAAD(userKey: userKey, trailer: trailer, entryAt: entryOffset) { nonce, aad in
            context.open(UnsafeRawBufferPointer(rebasing: value[0..<n]), tag: UnsafeRawBufferPointer(rebasing: value[n...]),
                         nonce: nonce, aad: aad, into: UnsafeMutableRawBufferPointer(rebasing: value[0..<n]))
        }
    }

    /// Opens every value of an id block read whole, in place in `contents` (the block's bytes,
    /// `layout` decoded from them with sealed values), whose block tag was checked: that tag
    /// covers every value's ciphertext and tag, so each is only decrypted
    /// (``AEADContext/decryptAuthenticated(_:nonce:)``). With `checkEach` (verification), or
    /// where the context cannot decrypt alone, each entry's checksum is checked over the sealed
    /// bytes and each value opened with its own tag, as a point read does. `payloadOffset`: the
    /// file offset of the block's first byte. Returns the first entry that fails, or nil.
    package static func openAll(_ layout: IdBlockLayout, contents: UnsafeMutableRawBufferPointer, context: AEADContext,
                        payloadOffset: UInt64, checkEach: Bool = false) -> Int? {
        withUnsafeTemporaryAllocation(byteCount: max(layout.userKeyCount + 8, 12), alignment: 8) { key in
            let user = UnsafeRawBufferPointer(start: key.baseAddress, count: layout.userKeyCount)
            for i in 0..<layout.count {
                let stored = layout.storedValue(i)
                let value = UnsafeMutableRawBufferPointer(rebasing: contents[stored.offset..<(stored.offset + stored.count)])
                let e = layout.entriesOffset + i * layout.entryStride
                let entryAt = payloadOffset + UInt64(e)
                if !checkEach {
                    key.baseAddress!.storeBytes(of: nonceHigh.littleEndian, as: UInt32.self)
                    (key.baseAddress! + 4).storeBytes(of: entryAt.littleEndian, as: UInt64.self)
                    let body = UnsafeMutableRawBufferPointer(rebasing: value[0..<(value.count - tagBytes)])
                    if context.decryptAuthenticated(body, nonce: UnsafeRawBufferPointer(start: key.baseAddress, count: 12)) { continue }
                }
                layout.writeKey(i, to: key.baseAddress!)
                let trailer = layout.trailer(i)
                guard loadFixed32(UnsafeRawBufferPointer(contents), e + 4)
                        == IdBlockLayout.entryChecksum(userKey: user, trailer: trailer, value: UnsafeRawBufferPointer(value)),
                      open(value, userKey: user, trailer: trailer, entryAt: entryAt, context: context) else { return i }
            }
            return nil
        }
    }

    /// Calls `body` with the 12-byte nonce and the additional data of the value whose entry lies
    /// at `entryOffset`, both on the stack.
    @inline(__always)
    private static func withNonceAndAAD<R>(userKey: UnsafeRawBufferPointer, trailer: UInt64, entryAt entryOffset: UInt64,
                                           _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> R) -> R {
        withUnsafeTemporaryAllocation(byteCount: userKey.count + 8 + 12, alignment: 8) { buffer in
            let base = buffer.baseAddress!
            base.storeBytes(of: nonceHigh.littleEndian, as: UInt32.self)
            (base + 4).storeBytes(of: entryOffset.littleEndian, toByteOffset: 0, as: UInt64.self)
            let aad = base + 12
            if userKey.count > 0 { aad.copyMemory(from: userKey.baseAddress!, byteCount: userKey.count) }
            (aad + userKey.count).storeBytes(of: trailer.littleEndian, as: UInt64.self)
            return body(UnsafeRawBufferPointer(start: base, count: 12), UnsafeRawBufferPointer(start: aad, count: userKey.count + 8))
        }
    }
}
