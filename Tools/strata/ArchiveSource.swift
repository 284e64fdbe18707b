import StrataS3
import StrataStorage

/// Where an archive command reads: a directory, or `s3://bucket/prefix` with the endpoint from
/// `--endpoint` or `AWS_ENDPOINT_URL` and the keys from `AWS_ACCESS_KEY_ID` and
/// `AWS_SECRET_ACCESS_KEY` (never from the command line, where other users could read them).
enum ArchiveSource {
    static func isS3(_ source: String) -> Bool { source.hasPrefix("s3://") }

    static func target(_ source: String, endpoint: String?) throws -> any ArchiveTarget {
        guard isS3(source) else { return DirectoryArchiveTarget(path: source) }
        do {
            return S3ArchiveTarget(try S3Configuration(url: source, endpoint: endpoint))
        } catch let e as S3Error {
            throw ToolFailure(message: "\(source): \(e)")
        }
    }
}
