import Foundation
import StrataStorage

/// An ``ArchiveTarget`` over the S3 API (AWS S3, Ceph RGW, MinIO, Cloudflare R2, Backblaze B2
/// and the like): each archive object an S3 object under the configured prefix, put once with
/// `If-None-Match: *`, so that a continuous archive (SPEC.md §3.3) leaves the device.
///
/// Requests are signed with SigV4, bounded in time (``S3Configuration/requestTimeout``), and
/// retried with backoff on 5xx, throttling, timeouts and broken connections; a 4xx answer is an
/// ``S3Error`` at once (a wrong key is ``S3Error/accessDenied(_:)``). The archiver runs them on
/// its own thread: a slow or hung server holds up no commit.
///
/// ```swift
/// let s3 = try S3Configuration(url: "s3://backups/shop", endpoint: "http://127.0.0.1:7480")
/// var options = StoreOptions()
/// options.archive = ArchiveOptions(target: S3ArchiveTarget(s3))
/// ```
public final class S3ArchiveTarget: ArchiveTarget, @unchecked Sendable {
    // @unchecked Sendable: its properties are constant and the client is thread-safe.
    public let configuration: S3Configuration
    let client: S3Client
    /// Keys per listing page (S3's maximum; tests ask for fewer to cross pages).
    let pageSize: Int

    public convenience init(_ configuration: S3Configuration) {
        self.init(configuration, pageSize: 1000)
    }

    init(_ configuration: S3Configuration, pageSize: Int) {
        self.configuration = configuration
        client = S3Client(configuration)
        self.pageSize = max(1, min(1000, pageSize))
    }

    private func key(_ name: String) -> String { configuration.prefix + name }

    public func put(_ name: String, _ bytes: [UInt8]) throws {
        if configuration.checksBeforePut, let existing = try existingBytes(name) {
            guard existing == bytes else { throw S3Error.objectExists(key(name)) }
            return
        }
        let response = try client.send(method: "PUT", key: key(name), headers: ["if-none-match": "*"], body: bytes)
        switch response.status {
        case 200..<300:
            return
        case 412:
            // An object of that name exists: a retried put of the same bytes is success.
            guard try existingBytes(name) == bytes else { throw S3Error.objectExists(key(name)) }
        default:
            throw failure(response, key: key(name))
        }
    }

    public func get(_ name: String) throws -> [UInt8] {
        guard let bytes = try existingBytes(name) else { throw S3Error.noSuchKey(key(name)) }
        return bytes
    }

    /// The object's bytes, or nil when there is none.
    private func existingBytes(_ name: String) throws -> [UInt8]? {
        let response = try client.send(method: "GET", key: key(name))
        switch response.status {
        case 200:
            guard response.body.count <= 4 << 30 else { throw S3Error.malformedResponse("an object of \(response.body.count) bytes") }
            return [UInt8](response.body)
        case 404 where S3Client.errorParts(response.body).code != "NoSuchBucket":
            return nil
        default:
            throw failure(response, key: key(name))
        }
    }

    public func list() throws -> [String] {
        var names: [String] = []
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("max-keys", String(pageSize))]
            if !configuration.prefix.isEmpty { query.append(("prefix", configuration.prefix)) }
            if let token { query.append(("continuation-token", token)) }
            let response = try client.send(method: "GET", key: nil, query: query)
            guard response.status == 200 else { throw failure(response, key: nil) }
            let page = try S3ListPage.parse(response.body)
            for k in page.keys where k.hasPrefix(configuration.prefix) {
                let name = String(k.dropFirst(configuration.prefix.count))
                // Only this prefix's own level: an archive under a longer prefix is another's.
                if !name.isEmpty && !name.contains("/") { names.append(name) }
            }
            token = page.isTruncated ? page.continuationToken : nil
        } while token != nil
        return names
    }

    public func delete(_ name: String) throws {
        let response = try client.send(method: "DELETE", key: key(name))
        guard (200..<300).contains(response.status) || response.status == 404 else { throw failure(response, key: key(name)) }
    }

    private func failure(_ response: S3Client.Response, key: String?) -> S3Error {
        let (code, message) = S3Client.errorParts(response.body)
        switch (response.status, code) {
        case (403, _): return .accessDenied(code.isEmpty ? "status 403" : "\(code)\(message.isEmpty ? "" : ": \(message)")")
        case (404, "NoSuchBucket"): return .noSuchBucket(configuration.bucket)
        case (404, _): return key.map { .noSuchKey($0) } ?? .noSuchBucket(configuration.bucket)
        default: return .http(status: response.status, code: code, message: message)
        }
    }
}
