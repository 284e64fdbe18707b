import Crypto
import Foundation

/// AWS Signature Version 4 for S3 requests, in headers (SigV4: canonical request, string to
/// sign, a signing key derived from the secret by HMAC-SHA256 over date, region and service).
/// SHA-256 and HMAC come from swift-crypto (CryptoKit on Apple platforms).
struct S3Signer: Sendable {
    let credentials: S3Credentials
    let region: String

    /// The headers to add to a request: `x-amz-date`, `x-amz-content-sha256`, the session token
    /// when there is one, and `Authorization`. `headers` are the others the request sends that
    /// are signed (`host` always; `if-none-match` when set), lower-case names.
    func sign(method: String, encodedPath: String, query: [(String, String)], headers: [String: String],
              payloadHash: String, date: Date) -> [String: String] {
        let (amzDate, day) = Self.timestamps(date)
        var signed = headers
        signed["x-amz-date"] = amzDate
        signed["x-amz-content-sha256"] = payloadHash
        if let token = credentials.sessionToken { signed["x-amz-security-token"] = token }
        let names = signed.keys.sorted()
        let canonicalHeaders = names.map { "\($0):\(signed[$0]!.trimmingCharacters(in: .whitespaces))\n" }.joined()
        let signedHeaders = names.joined(separator: ";")
        let canonicalQuery = query.map { (Self.encode($0.0), Self.encode($0.1)) }.sorted { $0 < $1 }
            .map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        let canonicalRequest = [method, encodedPath, canonicalQuery, canonicalHeaders, signedHeaders, payloadHash].joined(separator: "\n")
        let scope = "\(day)/\(region)/s3/aws4_request"
        let stringToSign = ["AWS4-HMAC-SHA256", amzDate, scope, Self.hex(SHA256.hash(data: Data(canonicalRequest.utf8)))].joined(separator: "\n")
        var key = SymmetricKey(data: Data(("AWS4" + credentials.secretAccessKey).utf8))
        for part in [day, region, "s3", "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        let signature = Self.hex(HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: key))
        var out = signed
        out["host"] = nil
        out["authorization"] = "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyId)/\(scope), SignedHeaders=\(signedHeaders), Signature=\(signature)"
        return out
    }

    static func payloadHash(_ body: [UInt8]) -> String { hex(SHA256.hash(data: body)) }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `yyyyMMdd'T'HHmmss'Z'` and `yyyyMMdd`, in UTC.
    static func timestamps(_ date: Date) -> (String, String) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func pad(_ v: Int?, _ n: Int) -> String { String(v ?? 0).leftPadded(to: n) }
        let day = pad(c.year, 4) + pad(c.month, 2) + pad(c.day, 2)
        return (day + "T" + pad(c.hour, 2) + pad(c.minute, 2) + pad(c.second, 2) + "Z", day)
    }

    /// RFC 3986 percent-encoding of everything but the unreserved characters (and `/` when
    /// `keepingSlashes`, for a path), as SigV4 wants it.
    static func encode(_ s: String, keepingSlashes: Bool = false) -> String {
        var out = ""
        for b in s.utf8 {
            let unreserved = (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39)
                || b == 0x2D || b == 0x2E || b == 0x5F || b == 0x7E
            if unreserved || (keepingSlashes && b == 0x2F) {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                out += "%" + String(b, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
