import Foundation
import Testing
@testable import StrataStorage

/// The cipher contexts under every sealed unit (SPEC.md §14): BoringSSL's kept context where it
/// is built, swift-crypto's one-shot calls (what Apple platforms use). A file sealed by one must
/// open with the other, byte for byte the same, or a store written on Linux would not open on
/// a Mac.
@Suite struct AEADContextTests {
    static func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            out.append(UInt8(s[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    /// Seals `plain` with `context`, returning ciphertext and tag.
    static func seal(_ context: AEADContext, _ plain: [UInt8], nonce: [UInt8], aad: [UInt8]) -> ([UInt8], [UInt8]) {
        var body = plain
        var tag = [UInt8](repeating: 0, count: 16)
        body.withUnsafeMutableBytes { b in
            tag.withUnsafeMutableBytes { t in
                nonce.withUnsafeBytes { n in aad.withUnsafeBytes { a in context.seal(b, nonce: n, aad: a, tag: t) } }
            }
        }
        return (body, tag)
    }

    /// Opens into a separate buffer; nil when the tag does not match.
    static func open(_ context: AEADContext, _ ciphertext: [UInt8], tag: [UInt8], nonce: [UInt8], aad: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: ciphertext.count)
        let ok = out.withUnsafeMutableBytes { o in
            ciphertext.withUnsafeBytes { c in
                tag.withUnsafeBytes { t in
                    nonce.withUnsafeBytes { n in aad.withUnsafeBytes { a in context.open(c, tag: t, nonce: n, aad: a, into: o) } }
                }
            }
        }
        return ok ? out : nil
    }

    /// The GCM specification's test cases 13 and 14 (AES-256, zero key and IV): the
    /// implementations compute AES-256-GCM itself, not something that merely round-trips.
    @Test(arguments: AEADContext.Implementation.available)
    func aesGCMMatchesTheSpecificationsTestVectors(_ implementation: AEADContext.Implementation) {
        let key = [UInt8](repeating: 0, count: 32)
        let context = key.withUnsafeBytes { AEADContext(key: $0, cipher: .aes256GCM, implementation: implementation) }
        #expect(context.implementation == implementation)
        let nonce = [UInt8](repeating: 0, count: 12)
        let empty = Self.seal(context, [], nonce: nonce, aad: [])
        #expect(empty.0.isEmpty)
        #expect(empty.1 == Self.hex("530f8afbc74536b9a963b4f1c4cb738b"))
        let block = Self.seal(context, [UInt8](repeating: 0, count: 16), nonce: nonce, aad: [])
        #expect(block.0 == Self.hex("cea7403d4d606b6e074ec5d3baf39d18"))
        #expect(block.1 == Self.hex("d0d1c8a799996bf0265b98b5d48ab919"))
    }

    /// Every implementation seals the same bytes and opens every other's, in place too, and
    /// refuses a changed byte of the ciphertext, the tag, the nonce or the additional data.
    @Test(arguments: FileCipher.allCases)
    func everyImplementationOpensWhatAnotherSeals(_ cipher: FileCipher) {
        let key = (0..<32).map { UInt8($0 &* 7 &+ 3) }
        let contexts = AEADContext.Implementation.available.map { i in
            key.withUnsafeBytes { AEADContext(key: $0, cipher: cipher, implementation: i) }
        }
        var rng = SystemRandomNumberGenerator()
        for size in [0, 1, 15, 16, 64, 1000, 2048, 70_000] {
            let plain = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let nonce = (0..<12).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let aad = (0..<9).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let sealed = contexts.map { Self.seal($0, plain, nonce: nonce, aad: aad) }
            for s in sealed {
                #expect(s.0 == sealed[0].0 && s.1 == sealed[0].1, "implementations disagree at \(size) bytes")
            }
            let (ciphertext, tag) = sealed[0]
            if size >= 16 { #expect(ciphertext != plain) }
            for context in contexts {
                #expect(Self.open(context, ciphertext, tag: tag, nonce: nonce, aad: aad) == plain)
                // In place: the output is the ciphertext itself.
                var inPlace = ciphertext
                let ok = inPlace.withUnsafeMutableBytes { buffer in
                    tag.withUnsafeBytes { t in
                        nonce.withUnsafeBytes { n in
                            aad.withUnsafeBytes { a in context.open(UnsafeRawBufferPointer(buffer), tag: t, nonce: n, aad: a, into: buffer) }
                        }
                    }
                }
                #expect(ok && inPlace == plain)
                if size > 0 {
                    var changed = ciphertext
                    changed[size / 2] ^= 0x01
                    #expect(Self.open(context, changed, tag: tag, nonce: nonce, aad: aad) == nil)
                }
                var badTag = tag
                badTag[15] ^= 0x80
                #expect(Self.open(context, ciphertext, tag: badTag, nonce: nonce, aad: aad) == nil)
                var badNonce = nonce
                badNonce[0] ^= 0x01
                #expect(Self.open(context, ciphertext, tag: tag, nonce: badNonce, aad: aad) == nil)
                var badAAD = aad
                badAAD[8] ^= 0x01
                #expect(Self.open(context, ciphertext, tag: tag, nonce: nonce, aad: badAAD) == nil)
                let otherKey = [UInt8](repeating: 0x11, count: 32)
                let other = otherKey.withUnsafeBytes { AEADContext(key: $0, cipher: cipher, implementation: context.implementation) }
                #expect(Self.open(other, ciphertext, tag: tag, nonce: nonce, aad: aad) == nil)
            }
        }
    }

    /// One context sealing and opening from several threads at once, as segment reads and a
    /// flush do: every unit opens to what was sealed.
    /// What a block of sealed values does with values its block tag authenticated: decrypts
    /// them with GCM's counter mode alone, which must give exactly what opening them gives, at
    /// every length (partial and whole counter blocks), for nonces whose last word is high.
    @Test func decryptingAnAuthenticatedUnitGivesWhatOpeningGives() {
        let key = (0..<32).map { UInt8($0 &* 7 &+ 3) }
        let context = key.withUnsafeBytes { AEADContext(key: $0, cipher: .aes256GCM, implementation: .boringSSL) }
        guard context.implementation == .boringSSL else { return }
        var rng = SystemRandomNumberGenerator()
        for length in Array(0...70) + [255, 256, 257, 2048, 65_537] {
            let plain = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let nonce = (0..<8).map { _ in UInt8.random(in: 0...255, using: &rng) } + [0xFF, 0xFF, 0xFF, 0xFF]
            let (ciphertext, _) = Self.seal(context, plain, nonce: nonce, aad: [1, 2, 3])
            var body = ciphertext
            let ok = body.withUnsafeMutableBytes { b in nonce.withUnsafeBytes { context.decryptAuthenticated(b, nonce: $0) } }
            #expect(ok)
            #expect(body == plain, "length \(length)")
        }
        // Contexts that cannot decrypt alone say so (the caller opens with the tag instead).
        let chacha = key.withUnsafeBytes { AEADContext(key: $0, cipher: .chaCha20Poly1305, implementation: .boringSSL) }
        let swift = key.withUnsafeBytes { AEADContext(key: $0, cipher: .aes256GCM, implementation: .swiftCrypto) }
        for c in [chacha, swift] {
            var body = [UInt8](repeating: 1, count: 20)
            #expect(!body.withUnsafeMutableBytes { b in [UInt8](repeating: 0, count: 12).withUnsafeBytes { c.decryptAuthenticated(b, nonce: $0) } })
            #expect(body == [UInt8](repeating: 1, count: 20))
        }
    }

    @Test func oneContextServesManyThreadsAtOnce() async {
        let key = [UInt8](repeating: 0x42, count: 32)
        let context = key.withUnsafeBytes { AEADContext(key: $0, cipher: .aes256GCM) }
        let failures = await withTaskGroup(of: Int.self) { group in
            for t in 0..<4 {
                group.addTask {
                    var bad = 0
                    for i in 0..<500 {
                        let plain = (0..<(64 + i % 300)).map { UInt8(truncatingIfNeeded: $0 &+ i &+ t) }
                        let nonce = [UInt8](repeating: UInt8(t), count: 4) + withUnsafeBytes(of: UInt64(i), Array.init)
                        let (c, tag) = Self.seal(context, plain, nonce: nonce, aad: [UInt8(t)])
                        if Self.open(context, c, tag: tag, nonce: nonce, aad: [UInt8(t)]) != plain { bad += 1 }
                    }
                    return bad
                }
            }
            return await group.reduce(0, +)
        }
        #expect(failures == 0)
    }
}
