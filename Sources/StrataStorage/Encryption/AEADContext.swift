// BoringSSL as swift-crypto vendors and builds it on Linux (and the other platforms without
// CryptoKit). It is not one of swift-crypto's products: SwiftPM makes the module of every C
// target a dependency builds visible to the targets above it, which is how this import
// resolves. Where it does not (Apple platforms, where swift-crypto is CryptoKit), the cipher
// goes through swift-crypto's API instead; both implementations are built here and
// `EncryptionTests` checks that each opens what the other seals, byte for byte the same.
//
// Imported `internal`, and no stored property has one of its types: nothing of BoringSSL is part
// of StrataStorage's interface. A client's compiler still loads the module (the library is not
// built for library evolution, which `@_implementationOnly` would want): SwiftPM hands it the map
// as it hands every transitive C module's; a bare `swiftc` needs it given (TypedIdCompileTests).
#if canImport(CCryptoBoringSSL)
internal import CCryptoBoringSSL
#endif
import Crypto
import Foundation

/// One file key's AEAD (AES-256-GCM or ChaCha20-Poly1305), set up once and used for every unit
/// of the file, sealing and opening in place.
///
/// Why not swift-crypto's `AES.GCM.seal`/`open` per unit: each call sets up the cipher from the
/// key (key schedule, GHASH tables) and allocates its result, about 1 µs whatever the unit's
/// size (951 ns to open 64 bytes, 1,159 ns for 2 KiB; `strata-objects-bench ciphers`). A
/// context kept per file (BoringSSL's `EVP_AEAD_CTX`, which the library documents as safe for
/// concurrent seals and opens) pays that once per file and writes into the caller's buffer.
package final class AEADContext: @unchecked Sendable {
    // @unchecked Sendable: immutable after init; BoringSSL's context may be used by any number
    // of threads at once for seal and open (aead.h), and swift-crypto's key is a value.

    /// How a context reaches the cipher: BoringSSL's context where it is built, swift-crypto's
    /// one-shot calls everywhere (what Apple platforms use; tests run both here).
    package enum Implementation: Sendable, CaseIterable {
        case boringSSL
        case swiftCrypto

        /// What contexts use unless a test asks: BoringSSL where it is built.
        package static var preferred: Implementation {
            #if canImport(CCryptoBoringSSL)
            .boringSSL
            #else
            .swiftCrypto
            #endif
        }

        /// The implementations this build has.
        package static var available: [Implementation] {
            #if canImport(CCryptoBoringSSL)
            [.boringSSL, .swiftCrypto]
            #else
            [.swiftCrypto]
            #endif
        }
    }

    let cipher: FileCipher
    let implementation: Implementation
    private let key: SymmetricKey
    /// BoringSSL's `EVP_AEAD_CTX`, untyped here (see the import); nil for swift-crypto's calls.
    private let rawContext: UnsafeMutableRawPointer?
    /// BoringSSL's `AES_KEY` (the AES-256 key schedule) of an AES-256-GCM context, for
    /// ``decryptAuthenticated(_:nonce:)``; nil otherwise.
    private let rawAESKey: UnsafeMutableRawPointer?

    #if canImport(CCryptoBoringSSL)
    private var context: UnsafeMutablePointer<EVP_AEAD_CTX>? { rawContext?.assumingMemoryBound(to: EVP_AEAD_CTX.self) }
    #endif

    static let keyBytes = 32
    static let nonceBytes = 12
    static let tagBytes = 16

    /// A context for a 32-byte key. `implementation` other than ``Implementation/preferred`` is
    /// for tests; one this build lacks falls back to swift-crypto.
    package init(key: UnsafeRawBufferPointer, cipher: FileCipher, implementation: Implementation = .preferred) {
        precondition(key.count == Self.keyBytes, "an AEAD key is 32 bytes")
        self.cipher = cipher
        self.key = SymmetricKey(data: key)
        #if canImport(CCryptoBoringSSL)
        if implementation == .boringSSL {
            let aead = cipher == .aes256GCM ? CCryptoBoringSSL_EVP_aead_aes_256_gcm() : CCryptoBoringSSL_EVP_aead_chacha20_poly1305()
            let raw = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<EVP_AEAD_CTX>.size,
                                                       alignment: MemoryLayout<EVP_AEAD_CTX>.alignment)
            let context = raw.bindMemory(to: EVP_AEAD_CTX.self, capacity: 1)
            CCryptoBoringSSL_EVP_AEAD_CTX_zero(context)
            // Fails only for a key or tag of the wrong length, which the lines above rule out.
            let ok = CCryptoBoringSSL_EVP_AEAD_CTX_init(context, aead, key.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                       Self.keyBytes, Self.tagBytes, nil)
            precondition(ok == 1, "EVP_AEAD_CTX_init refused a 32-byte key")
            rawContext = raw
            if cipher == .aes256GCM {
                let aes = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<AES_KEY>.size, alignment: MemoryLayout<AES_KEY>.alignment)
                let schedule = aes.bindMemory(to: AES_KEY.self, capacity: 1)
                let set = CCryptoBoringSSL_AES_set_encrypt_key(key.baseAddress!.assumingMemoryBound(to: UInt8.self), 256, schedule)
                precondition(set == 0, "AES_set_encrypt_key refused a 256-bit key")
                rawAESKey = aes
            } else {
                rawAESKey = nil
            }
            self.implementation = .boringSSL
            return
        }
        #endif
        rawContext = nil
        rawAESKey = nil
        self.implementation = .swiftCrypto
    }

    /// Decrypts in place a unit sealed under `nonce` whose bytes were authenticated already, as
    /// a whole, by another tag (an id block of sealed values, whose block tag covers every
    /// value's ciphertext and tag, SPEC.md §14.3): AES-GCM's own counter mode (counter blocks
    /// `nonce | 2`, `nonce | 3`, …), without computing the value's tag again. Returns false when
    /// this context cannot (swift-crypto's calls, ChaCha20): the caller then opens the unit with
    /// its tag. Why: a block read whole opens tens of values, and GCM's per-unit cost (its
    /// counter block, its hash of the additional data and the lengths) is most of a small one's.
    func decryptAuthenticated(_ body: UnsafeMutableRawBufferPointer, nonce: UnsafeRawBufferPointer) -> Bool {
        precondition(nonce.count == Self.nonceBytes)
        #if canImport(CCryptoBoringSSL)
        if let rawAESKey {
            if body.isEmpty { return true }
            var counter = (UInt64(0), UInt64(0)), stream = (UInt64(0), UInt64(0))
            var used: UInt32 = 0
            withUnsafeMutableBytes(of: &counter) { c in
                c.copyMemory(from: nonce)
                c[15] = 2
                withUnsafeMutableBytes(of: &stream) { e in
                    CCryptoBoringSSL_AES_ctr128_encrypt(body.bytes, body.bytes, body.count,
                                                        rawAESKey.assumingMemoryBound(to: AES_KEY.self),
                                                        c.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                        e.baseAddress!.assumingMemoryBound(to: UInt8.self), &used)
                }
            }
            return true
        }
        #endif
        return false
    }

    deinit {
        #if canImport(CCryptoBoringSSL)
        if let context {
            // Zeroes the key schedule before the memory goes back.
            CCryptoBoringSSL_EVP_AEAD_CTX_cleanup(context)
            rawContext?.deallocate()
        }
        if let rawAESKey {
            rawAESKey.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<AES_KEY>.size)
            rawAESKey.deallocate()
        }
        #endif
    }

    /// Encrypts `body` in place and writes its tag to `tag` (16 bytes), authenticating `aad`
    /// too. `nonce` (12 bytes) must never have sealed another unit under this key.
    func seal(_ body: UnsafeMutableRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
              tag: UnsafeMutableRawBufferPointer) {
        precondition(nonce.count == Self.nonceBytes && tag.count == Self.tagBytes)
        #if canImport(CCryptoBoringSSL)
        if let context {
            var tagCount = 0
            // Fails only for sizes BoringSSL cannot take (a nonce of another length, a body
            // past 2^36 bytes), which a unit of this engine never has.
            let ok = CCryptoBoringSSL_EVP_AEAD_CTX_seal_scatter(
                context, body.bytes, tag.bytes, &tagCount, Self.tagBytes, nonce.bytes, Self.nonceBytes,
                body.bytes, body.count, nil, 0, aad.bytes, aad.count)
            precondition(ok == 1 && tagCount == Self.tagBytes, "EVP_AEAD_CTX_seal_scatter failed")
            return
        }
        #endif
        // swift-crypto's sealing only fails for a nonce of the wrong size, ruled out above.
        let (ciphertext, sealedTag): (Data, Data)
        switch cipher {
        case .aes256GCM:
            let box = try! AES.GCM.seal(UnsafeRawBufferPointer(body), using: key, nonce: AES.GCM.Nonce(data: nonce), authenticating: aad)
            (ciphertext, sealedTag) = (box.ciphertext, box.tag)
        case .chaCha20Poly1305:
            let box = try! ChaChaPoly.seal(UnsafeRawBufferPointer(body), using: key, nonce: ChaChaPoly.Nonce(data: nonce), authenticating: aad)
            (ciphertext, sealedTag) = (box.ciphertext, box.tag)
        }
        if !body.isEmpty { ciphertext.withUnsafeBytes { body.copyMemory(from: $0) } }
        sealedTag.withUnsafeBytes { tag.copyMemory(from: $0) }
    }

    /// Decrypts `ciphertext` into `out` (the same count; `out` may be `ciphertext` itself, or
    /// apart from it, never overlapping it otherwise) if `tag` authenticates it and `aad`;
    /// false otherwise, and then `out` holds nothing of the plaintext.
    func open(_ ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
              aad: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard nonce.count == Self.nonceBytes, tag.count == Self.tagBytes, out.count == ciphertext.count else { return false }
        #if canImport(CCryptoBoringSSL)
        if let context {
            return CCryptoBoringSSL_EVP_AEAD_CTX_open_gather(
                context, out.bytes, nonce.bytes, Self.nonceBytes, ciphertext.bytes, ciphertext.count,
                tag.bytes, Self.tagBytes, aad.bytes, aad.count) == 1
        }
        #endif
        let opened: Data?
        switch cipher {
        case .aes256GCM:
            opened = (try? AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonce), ciphertext: ciphertext, tag: tag))
                .flatMap { try? AES.GCM.open($0, using: key, authenticating: aad) }
        case .chaCha20Poly1305:
            opened = (try? ChaChaPoly.SealedBox(nonce: ChaChaPoly.Nonce(data: nonce), ciphertext: ciphertext, tag: tag))
                .flatMap { try? ChaChaPoly.open($0, using: key, authenticating: aad) }
        }
        guard let plain = opened, plain.count == out.count else { return false }
        if !plain.isEmpty { plain.withUnsafeBytes { out.copyMemory(from: $0) } }
        return true
    }
}

private extension UnsafeRawBufferPointer {
    /// The bytes as BoringSSL takes them; a non-null pointer even when empty (BoringSSL reads
    /// nothing through it then, but some of its checks want one).
    var bytes: UnsafePointer<UInt8> {
        (baseAddress ?? UnsafeRawPointer(AEADContext.emptyBytes)).assumingMemoryBound(to: UInt8.self)
    }
}

private extension UnsafeMutableRawBufferPointer {
    var bytes: UnsafeMutablePointer<UInt8> {
        (baseAddress ?? AEADContext.emptyBytes).assumingMemoryBound(to: UInt8.self)
    }
}

extension AEADContext {
    /// What an empty buffer's pointer stands for: never read or written through.
    // nonisolated(unsafe): set once, never written through.
    fileprivate nonisolated(unsafe) static let emptyBytes = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 16)
}
