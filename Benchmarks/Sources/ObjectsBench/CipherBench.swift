#if canImport(CCryptoBoringSSL)
import CCryptoBoringSSL
#endif
import Crypto
import Foundation

/// `strata-objects-bench ciphers`: sealing and opening a unit with AES-256-GCM and with
/// ChaCha20-Poly1305 through swift-crypto, exactly as Strata's `FileSealer` calls them (a random
/// nonce per unit, additional data, the result copied into a buffer), at the sizes Strata seals:
/// a small WAL record, a larger one, a 2 KiB segment block. The default cipher of new files is
/// chosen from these figures (SPEC.md §14.1). The last two columns are what `FileSealer` does
/// since: BoringSSL's AES-256-GCM context set up once per file and kept, sealing and opening in
/// the caller's buffer (its `AEADContext`), and the same for ChaCha20-Poly1305.
enum CipherBench {
    static func run(reps: Int) {
        let key = SymmetricKey(size: .bits256)
        let aad = [UInt8](repeating: 7, count: 9)
        print("ciphers: seal + open of one unit, ns per unit (median of \(reps)); swift-crypto; release build")
        print("| unit bytes | AES-256-GCM seal | AES-256-GCM open | ChaCha20-Poly1305 seal | ChaCha20-Poly1305 open | AES-256-GCM seal, nonce given | a random nonce alone | AES-256-GCM seal, kept context | AES-256-GCM open, kept context | ChaCha20-Poly1305 seal, kept context | ChaCha20-Poly1305 open, kept context |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for size in [64, 96, 256, 2048, 16384] {
            let plain = [UInt8](repeating: 0x41, count: size)
            let n = max(2_000, 20_000_000 / size)
            func median(_ body: () -> Double) -> Double { Self.median(reps: reps, body) }
            func time(_ body: () -> Void) -> Double { Self.time(n: n, body) }
            var out = [UInt8](repeating: 0, count: size + 28)
            let aesBox = try! AES.GCM.seal(plain, using: key, nonce: AES.GCM.Nonce(), authenticating: aad)
            let chachaBox = try! ChaChaPoly.seal(plain, using: key, nonce: ChaChaPoly.Nonce(), authenticating: aad)
            let aesSeal = median { time {
                let b = try! AES.GCM.seal(plain, using: key, nonce: AES.GCM.Nonce(), authenticating: aad)
                b.ciphertext.withUnsafeBytes { c in out.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: c.baseAddress!, byteCount: c.count) } }
            } }
            let aesOpen = median { time {
                let p = try! AES.GCM.open(aesBox, using: key, authenticating: aad)
                p.withUnsafeBytes { c in out.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: c.baseAddress!, byteCount: c.count) } }
            } }
            let chachaSeal = median { time {
                let b = try! ChaChaPoly.seal(plain, using: key, nonce: ChaChaPoly.Nonce(), authenticating: aad)
                b.ciphertext.withUnsafeBytes { c in out.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: c.baseAddress!, byteCount: c.count) } }
            } }
            let chachaOpen = median { time {
                let p = try! ChaChaPoly.open(chachaBox, using: key, authenticating: aad)
                p.withUnsafeBytes { c in out.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: c.baseAddress!, byteCount: c.count) } }
            } }
            let fixed = AES.GCM.Nonce()
            let aesSealFixedNonce = median { time {
                let b = try! AES.GCM.seal(plain, using: key, nonce: fixed, authenticating: aad)
                b.ciphertext.withUnsafeBytes { c in out.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: c.baseAddress!, byteCount: c.count) } }
            } }
            let nonce = median { time { _ = AES.GCM.Nonce() } }
            let (keptSeal, keptOpen) = keptContext(size: size, n: n, reps: reps, chacha: false)
            let (keptChaChaSeal, keptChaChaOpen) = keptContext(size: size, n: n, reps: reps, chacha: true)
            print(String(format: "| %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %@ | %@ | %@ | %@ |", size, aesSeal, aesOpen, chachaSeal, chachaOpen,
                         aesSealFixedNonce, nonce, keptSeal, keptOpen, keptChaChaSeal, keptChaChaOpen))
        }
    }

    /// Seal and open of one unit through a BoringSSL context made once (AES-256-GCM, or
    /// ChaCha20-Poly1305 with `chacha`; a counted nonce, 9 bytes of additional data, in place),
    /// in nanoseconds; "n/a" where BoringSSL is not built.
    static func keptContext(size: Int, n: Int, reps: Int, chacha: Bool) -> (String, String) {
        #if canImport(CCryptoBoringSSL)
        func median(_ body: () -> Double) -> Double { Self.median(reps: reps, body) }
        func time(_ body: () -> Void) -> Double { Self.time(n: n, body) }
        let key = [UInt8](repeating: 0x33, count: 32)
        let context = UnsafeMutablePointer<EVP_AEAD_CTX>.allocate(capacity: 1)
        defer { CCryptoBoringSSL_EVP_AEAD_CTX_cleanup(context); context.deallocate() }
        CCryptoBoringSSL_EVP_AEAD_CTX_zero(context)
        let aead = chacha ? CCryptoBoringSSL_EVP_aead_chacha20_poly1305() : CCryptoBoringSSL_EVP_aead_aes_256_gcm()
        guard CCryptoBoringSSL_EVP_AEAD_CTX_init(context, aead, key, 32, 16, nil) == 1 else { return ("n/a", "n/a") }
        var body = [UInt8](repeating: 0x41, count: size)
        var tag = [UInt8](repeating: 0, count: 16)
        var nonce = [UInt8](repeating: 0, count: 12)
        let aad = [UInt8](repeating: 7, count: 9)
        var counter: UInt64 = 0
        let seal = median { time {
            counter &+= 1
            withUnsafeBytes(of: counter) { c in nonce.withUnsafeMutableBytes { $0.copyMemory(from: c) } }
            var tagCount = 0
            _ = CCryptoBoringSSL_EVP_AEAD_CTX_seal_scatter(context, &body, &tag, &tagCount, 16, nonce, 12, body, body.count, nil, 0, aad, aad.count)
        } }
        // The unit the last seal made, opened into a buffer apart (the segment reader's way).
        var out = [UInt8](repeating: 0, count: size)
        let open = median { time {
            _ = CCryptoBoringSSL_EVP_AEAD_CTX_open_gather(context, &out, nonce, 12, body, body.count, tag, 16, aad, aad.count)
        } }
        precondition(CCryptoBoringSSL_EVP_AEAD_CTX_open_gather(context, &out, nonce, 12, body, body.count, tag, 16, aad, aad.count) == 1)
        return (String(format: "%.0f", seal), String(format: "%.0f", open))
        #else
        return ("n/a", "n/a")
        #endif
    }

    /// The median of `reps` runs of `body`.
    static func median(reps: Int, _ body: () -> Double) -> Double {
        let xs = (0..<reps).map { _ in body() }.sorted()
        return xs[xs.count / 2]
    }

    /// Nanoseconds per call of `body`, over `n` calls.
    static func time(n: Int, _ body: () -> Void) -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<n { body() }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(n)
    }
}
