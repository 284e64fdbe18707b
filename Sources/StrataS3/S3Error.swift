/// What an S3 request can end in besides success. A 4xx answer is never retried: it will not
/// change by asking again (a wrong key is ``accessDenied(_:)``, not a retry loop); 5xx answers,
/// throttling, timeouts and broken connections are retried with backoff first.
public enum S3Error: Error, Equatable, Sendable, CustomStringConvertible {
    /// 403: the key, the secret, the session token or the bucket's policy refuses the request.
    case accessDenied(String)
    /// 404 for the bucket.
    case noSuchBucket(String)
    /// 404 for an object.
    case noSuchKey(String)
    /// A put found an object of that name holding other bytes: archive objects are never
    /// replaced.
    case objectExists(String)
    /// Any other answer the server gave (the status, S3's error code and message), after the
    /// retries when it is one that is retried.
    case http(status: Int, code: String, message: String)
    /// No answer within the request timeout, on every attempt.
    case timedOut(seconds: Double)
    /// The connection failed (refused, reset, a name that does not resolve) on every attempt.
    case transport(String)
    /// An answer that is not what S3 sends (a listing that does not parse, a body larger than an
    /// archive object may be).
    case malformedResponse(String)
    /// A configuration that cannot make a request: no credentials, a bad endpoint or bucket.
    case invalidConfiguration(String)

    public var description: String {
        switch self {
        case let .accessDenied(m): "S3 access denied: \(m)"
        case let .noSuchBucket(b): "S3 bucket \(b) does not exist"
        case let .noSuchKey(k): "S3 object \(k) does not exist"
        case let .objectExists(k): "S3 object \(k) exists with other bytes (archive objects are never replaced)"
        case let .http(status, code, message): "S3 answered \(status) \(code)\(message.isEmpty ? "" : ": \(message)")"
        case let .timedOut(s): "S3 request timed out after \(s) s"
        case let .transport(m): "S3 connection failed: \(m)"
        case let .malformedResponse(m): "S3 answer not understood: \(m)"
        case let .invalidConfiguration(m): "S3 configuration: \(m)"
        }
    }
}
