import Dispatch
import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One S3 request as the target makes it: signed, sent through URLSession, bounded in time,
/// retried with backoff while the answer is one that may change (SPEC.md §3.3's target is
/// written once per name, so every request here is safe to repeat).
final class S3Client: @unchecked Sendable {
    // @unchecked Sendable: every stored property is constant; URLSession is thread-safe.
    let configuration: S3Configuration
    private let signer: S3Signer
    private let session: URLSession
    /// Attempts made, over every request (tests: a 4xx is not retried).
    let attemptsMade = Atomic<Int>(0)

    struct Response {
        var status: Int
        var headers: [String: String]
        var body: Data
    }

    init(_ configuration: S3Configuration) {
        var configuration = configuration
        // Finite and at least a second (see ``S3Configuration/requestTimeout``).
        configuration.requestTimeout = configuration.requestTimeout.isFinite ? min(max(1, configuration.requestTimeout), 3600) : 30
        self.configuration = configuration
        signer = S3Signer(credentials: configuration.credentials, region: configuration.region)
        let c = URLSessionConfiguration.ephemeral
        c.timeoutIntervalForRequest = configuration.requestTimeout
        c.timeoutIntervalForResource = configuration.requestTimeout
        c.httpMaximumConnectionsPerHost = 4
        c.urlCache = nil
        session = URLSession(configuration: c)
    }

    deinit { session.invalidateAndCancel() }

    /// Sends the request, retrying what may change; returns the last answer whose status is
    /// below 500 and not 429 (the caller maps 4xx to its errors), or throws.
    func send(method: String, key: String?, query: [(String, String)] = [], headers: [String: String] = [:],
              body: [UInt8] = []) throws -> Response {
        var wait = 0.2
        var lastError: S3Error = .transport("no attempt made")
        for attempt in 1...max(1, configuration.attempts) {
            attemptsMade.add(1, ordering: .relaxed)
            do {
                let response = try once(method: method, key: key, query: query, headers: headers, body: body)
                if response.status >= 500 || response.status == 429 {
                    let error = Self.errorParts(response.body)
                    lastError = .http(status: response.status, code: error.code, message: error.message)
                } else {
                    return response
                }
            } catch let e as S3Error {
                lastError = e
            }
            if attempt < configuration.attempts {
                // Jitter keeps stores that failed together from retrying together.
                Thread.sleep(forTimeInterval: wait * Double.random(in: 0.5...1.0))
                wait = min(5, wait * 2)
            }
        }
        throw lastError
    }

    /// One attempt, bounded by the request timeout (and a second for the callback).
    private func once(method: String, key: String?, query: [(String, String)], headers: [String: String],
                      body: [UInt8]) throws -> Response {
        let (url, host, path) = try address(key: key, query: query)
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = configuration.requestTimeout
        var signedHeaders = headers
        signedHeaders["host"] = host
        for (name, value) in signer.sign(method: method, encodedPath: path, query: query, headers: signedHeaders,
                                         payloadHash: S3Signer.payloadHash(body), date: Date()) {
            request.setValue(value, forHTTPHeaderField: name)
        }
        if !body.isEmpty || method == "PUT" { request.httpBody = Data(body) }

        final class Outcome: @unchecked Sendable {
            // @unchecked Sendable: written once by the callback before `done` is signalled,
            // read after the wait.
            var response: Response?
            var error: S3Error?
            let done = DispatchSemaphore(value: 0)
        }
        let outcome = Outcome()
        let timeout = configuration.requestTimeout
        // The handler holds no reference to the client: released on the session's queue, the
        // client's deinit would invalidate the session from inside it (a deadlock trap).
        let task = session.dataTask(with: request) { data, response, error in
            if let error {
                let e = error as NSError
                outcome.error = e.code == NSURLErrorTimedOut ? .timedOut(seconds: timeout)
                    : .transport(e.localizedDescription)
            } else if let http = response as? HTTPURLResponse {
                var headers: [String: String] = [:]
                for (k, v) in http.allHeaderFields { headers[String(describing: k).lowercased()] = String(describing: v) }
                outcome.response = Response(status: http.statusCode, headers: headers, body: data ?? Data())
            } else {
                outcome.error = .transport("no HTTP response")
            }
            outcome.done.signal()
        }
        task.resume()
        if outcome.done.wait(timeout: .now() + configuration.requestTimeout + 1) == .timedOut {
            task.cancel()
            throw S3Error.timedOut(seconds: configuration.requestTimeout)
        }
        if let error = outcome.error { throw error }
        guard let response = outcome.response else { throw S3Error.transport("no response") }
        return response
    }

    /// The request's URL, the `host` header it is signed with, and its encoded path.
    private func address(key: String?, query: [(String, String)]) throws -> (URL, String, String) {
        let endpoint = configuration.endpoint
        guard let scheme = endpoint.scheme, let endpointHost = endpoint.host else {
            throw S3Error.invalidConfiguration("\(endpoint) has no host")
        }
        let port = endpoint.port.map { ":\($0)" } ?? ""
        let basePath = endpoint.path == "/" ? "" : endpoint.path
        var host = endpointHost + port
        var path = basePath
        switch configuration.addressing {
        case .path: path += "/" + S3Signer.encode(configuration.bucket)
        case .virtualHosted: host = configuration.bucket + "." + host
        }
        if let key { path += "/" + S3Signer.encode(key, keepingSlashes: true) } else if configuration.addressing == .virtualHosted { path += "/" }
        let queryText = query.map { S3Signer.encode($0.0) + "=" + S3Signer.encode($0.1) }.joined(separator: "&")
        guard let url = URL(string: "\(scheme)://\(host)\(path)" + (queryText.isEmpty ? "" : "?" + queryText)) else {
            throw S3Error.invalidConfiguration("no URL for \(key ?? "the bucket")")
        }
        return (url, host, path)
    }

    /// S3's `<Error><Code>…</Code><Message>…</Message></Error>` body, as far as it goes.
    static func errorParts(_ body: Data) -> (code: String, message: String) {
        let text = String(decoding: body.prefix(4096), as: UTF8.self)
        func element(_ name: String) -> String {
            guard let open = text.range(of: "<\(name)>"), let close = text.range(of: "</\(name)>", range: open.upperBound..<text.endIndex)
            else { return "" }
            return String(text[open.upperBound..<close.lowerBound])
        }
        return (element("Code"), element("Message"))
    }
}
