import Foundation

/// The keys that sign S3 requests: an access key id and its secret, and a session token for
/// temporary credentials (STS, an instance role).
public struct S3Credentials: Sendable, Equatable {
    public var accessKeyId: String
    public var secretAccessKey: String
    public var sessionToken: String?

    public init(accessKeyId: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyId = accessKeyId
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`, as every AWS tool
    /// reads them; nil when the first two are not both set.
    ///
    /// ```swift
    /// guard let credentials = S3Credentials.fromEnvironment() else { fatalError("no AWS keys") }
    /// ```
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> S3Credentials? {
        guard let id = environment["AWS_ACCESS_KEY_ID"], !id.isEmpty,
              let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty else { return nil }
        let token = environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        return S3Credentials(accessKeyId: id, secretAccessKey: secret, sessionToken: token)
    }
}

/// Where an ``S3ArchiveTarget`` keeps its objects and how it reaches them.
///
/// ```swift
/// let s3 = try S3Configuration(url: "s3://backups/shop/",
///                              endpoint: "https://s3.eu-west-1.amazonaws.com", region: "eu-west-1",
///                              credentials: S3Credentials.fromEnvironment()!)
/// ```
public struct S3Configuration: Sendable {
    /// How the bucket appears in a request's URL.
    public enum Addressing: Sendable, Equatable {
        /// `https://endpoint/bucket/key`: every S3-compatible server takes it (Ceph RGW, MinIO).
        case path
        /// `https://bucket.endpoint/key`: AWS's default, and the only one for newer buckets there.
        case virtualHosted
    }

    /// The server, scheme and host (and port): `https://s3.eu-west-1.amazonaws.com`,
    /// `http://127.0.0.1:7480`.
    public var endpoint: URL
    /// The region the signature names (`us-east-1` for most servers that are not AWS).
    public var region: String
    public var bucket: String
    /// Prepended to every object name (`shop/`): several archives in one bucket, one prefix
    /// each. A prefix that is not empty and does not end in `/` gets one.
    public var prefix: String
    public var addressing: Addressing
    public var credentials: S3Credentials
    /// Seconds one attempt of a request may take, connection included: a hung endpoint never
    /// holds the archive longer than the attempts times this. At least 1: URLSession on Linux
    /// (libcurl underneath) ended a request at once when given less.
    public var requestTimeout: Double = 30
    /// Attempts per request for the answers that are retried (5xx, throttling, timeouts, broken
    /// connections), the wait doubling from 0.2 s up to 5 s between them.
    public var attempts: Int = 4
    /// Ask for an object's existence before each put, for servers that ignore `If-None-Match`
    /// (a put then never replaces an object holding other bytes). AWS S3, Ceph RGW and MinIO
    /// honour the header: off by default.
    public var checksBeforePut = false

    public init(endpoint: URL, region: String = "us-east-1", bucket: String, prefix: String = "",
                addressing: Addressing = .path, credentials: S3Credentials) {
        self.endpoint = endpoint
        self.region = region
        self.bucket = bucket
        self.prefix = prefix.isEmpty || prefix.hasSuffix("/") ? prefix : prefix + "/"
        self.addressing = addressing
        self.credentials = credentials
    }

    /// From an `s3://bucket/prefix` URL and an endpoint (`AWS_ENDPOINT_URL` when nil; AWS's for
    /// the region when that is unset too). Credentials from the arguments, else the environment
    /// (``S3Credentials/fromEnvironment(_:)``); the region from `AWS_REGION` (then
    /// `AWS_DEFAULT_REGION`, then `us-east-1`) when not given.
    public init(url: String, endpoint: String? = nil, region: String? = nil, addressing: Addressing = .path,
                credentials: S3Credentials? = nil,
                environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard url.hasPrefix("s3://") else { throw S3Error.invalidConfiguration("\(url) is not an s3://bucket/prefix URL") }
        let rest = url.dropFirst(5)
        let bucket = String(rest.prefix { $0 != "/" })
        let prefix = String(rest.dropFirst(bucket.count).drop { $0 == "/" })
        guard Self.isValidBucket(bucket) else { throw S3Error.invalidConfiguration("\"\(bucket)\" is not a bucket name") }
        let region = region ?? environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"] ?? "us-east-1"
        let endpointText = endpoint ?? environment["AWS_ENDPOINT_URL_S3"] ?? environment["AWS_ENDPOINT_URL"]
            ?? "https://s3.\(region).amazonaws.com"
        guard let endpointURL = URL(string: endpointText), let scheme = endpointURL.scheme, scheme == "http" || scheme == "https",
              endpointURL.host != nil else {
            throw S3Error.invalidConfiguration("\(endpointText) is not an http(s) endpoint")
        }
        guard let credentials = credentials ?? S3Credentials.fromEnvironment(environment) else {
            throw S3Error.invalidConfiguration("no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
        }
        self.init(endpoint: endpointURL, region: region, bucket: bucket, prefix: prefix, addressing: addressing, credentials: credentials)
    }

    /// S3's rules for bucket names: 3 to 63 lower-case letters, digits, `.` and `-`.
    static func isValidBucket(_ name: String) -> Bool {
        (3...63).contains(name.utf8.count)
            && name.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x2D }
    }
}
