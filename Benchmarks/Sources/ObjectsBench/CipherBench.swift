import Crypto
import Foundation

/// `strata-objects-bench ciphers`: sealing and opening a unit with AES-256-GCM and with
/// ChaCha20-Poly1305 through swift-crypto, exactly as Strata's `FileSealer` calls them (a random
/// nonce per unit, additional data, the result copied into a buffer), at the sizes Strata seals:
/// a small WAL record, a larger one, a 2 KiB segment block. The default cipher of new files is
/// chosen from these figures (SPEC.md §14.1).
enum CipherBench {
    static func run(reps: Int) {
        let key = SymmetricKey(size: .bits256)
        let aad = [UInt8](repeating: 7, count: 9)
        print("ciphers: seal + open of one unit, ns per unit (median of \(reps)); swift-crypto; release build")
        print("| unit bytes | AES-256-GCM seal | AES-256-GCM open | ChaCha20-Poly1305 seal | ChaCha20-Poly1305 open | AES-256-GCM seal, nonce given | a random nonce alone |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for size in [64, 256, 2048, 16384] {
            let plain = [UInt8](repeating: 0x41, count: size)
            let n = max(2_000, 20_000_000 / size)
            func median(_ body: () -> Double) -> Double {
                let xs = (0..<reps).map { _ in body() }.sorted()
                return xs[xs.count / 2]
            }
            func time(_ body: () -> Void) -> Double {
                let start = DispatchTime.now().uptimeNanoseconds
                for _ in 0..<n { body() }
                return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(n)
            }
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
            print(String(format: "| %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |", size, aesSeal, aesOpen, chachaSeal, chachaOpen, aesSealFixedNonce, nonce))
        }
    }
}
