import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// One page of a ListObjectsV2 answer: the keys, and the token for the next page when the
/// listing is truncated.
struct S3ListPage {
    var keys: [String] = []
    var isTruncated = false
    var continuationToken: String?

    /// Parses the XML body; a body that is not a listing is ``S3Error/malformedResponse(_:)``.
    static func parse(_ body: Data) throws -> S3ListPage {
        final class Collector: NSObject, XMLParserDelegate {
            var page = S3ListPage()
            var path: [String] = []
            var text = ""
            var sawRoot = false
            func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                        attributes: [String: String] = [:]) {
                if path.isEmpty && name == "ListBucketResult" { sawRoot = true }
                path.append(name)
                text = ""
            }
            func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }
            func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
                switch (path.dropLast().last, name) {
                case ("Contents", "Key"): page.keys.append(text)
                case ("ListBucketResult", "IsTruncated"): page.isTruncated = text == "true"
                case ("ListBucketResult", "NextContinuationToken"): page.continuationToken = text
                default: break
                }
                path.removeLast()
                text = ""
            }
        }
        let collector = Collector()
        let parser = XMLParser(data: body)
        parser.delegate = collector
        guard parser.parse(), collector.sawRoot else {
            throw S3Error.malformedResponse("a listing that is not a ListBucketResult")
        }
        if collector.page.isTruncated && (collector.page.continuationToken ?? "").isEmpty {
            throw S3Error.malformedResponse("a truncated listing without a continuation token")
        }
        return collector.page
    }
}
