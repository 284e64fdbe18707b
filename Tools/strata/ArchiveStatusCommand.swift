import ArgumentParser
import Foundation
import StrataStorage

/// `strata archive-status SOURCE`: what an archive holds (a directory or `s3://bucket/prefix`):
/// each store, its generations, their states and last commits, and how long ago that was.
struct ArchiveStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "archive-status",
        abstract: "Show what a continuous archive holds: stores, generations, states, last commits and lag.",
        discussion: """
        SOURCE is an archive directory or s3://bucket/prefix (the endpoint from --endpoint or
        AWS_ENDPOINT_URL, the keys from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY). Only reads.

        Examples:
          strata archive-status /archive/shop
          strata archive-status s3://backups/shop --endpoint http://127.0.0.1:7480 --json
        """)

    @Argument(help: "The archive: a directory or s3://bucket/prefix.")
    var source: String

    @Option(help: "The S3 endpoint (default: AWS_ENDPOINT_URL, else AWS's for AWS_REGION).")
    var endpoint: String?

    @Flag(help: "Write machine-readable JSON instead of text.")
    var json = false

    @Option(name: .customLong("key-file"),
            help: "A file holding the encrypted store's 32-byte key (raw, or 64 hex digits). Never give a key on the command line.")
    var keyFile: String?

    func run() throws {
        try reportingFailures(directory: source, json: json) {
            let inventory = try Engine.archiveInventory(of: try ArchiveSource.target(source, endpoint: endpoint),
                                                        encryptionKey: try keyFile.map(KeyFile.read))
            let now = Date().timeIntervalSince1970
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            func hex(_ v: UInt64) -> String { String(v, radix: 16) }
            if json {
                print(JSONValue.object([
                    ("source", .string(source)),
                    ("stores", .array(inventory.stores.map { s in
                        .object([
                            ("id", .string(hex(s.id))), ("segments", .int(Int64(s.segments))),
                            ("newestStateSegmentBytes", .uint(s.newestStateSegmentBytes)),
                            ("damagedObjects", .array(s.damagedObjects.map { .string($0) })),
                            ("generations", .array(s.generations.map { g in
                                .object([
                                    ("ordinal", .uint(g.ordinal)), ("id", .string(hex(g.id))), ("states", .int(Int64(g.states))),
                                    ("newestStateSequence", .uint(g.newestStateSequence)),
                                    ("lastCommitSequence", g.lastCommitSequence.map { .uint($0) } ?? .null),
                                    ("lastCommitTime", g.lastCommitTime.map { .string(formatter.string(from: Date(timeIntervalSince1970: $0))) } ?? .null),
                                    ("lagSeconds", g.lastCommitTime.map { .double(max(0, now - $0)) } ?? .null),
                                    ("logPieces", .int(Int64(g.logPieces))), ("wals", .int(Int64(g.wals))),
                                ])
                            })),
                        ])
                    })),
                    ("otherObjects", .int(Int64(inventory.otherObjects))),
                ]).text)
                return
            }
            if inventory.stores.isEmpty { print("\(source) holds no archive") }
            for s in inventory.stores {
                print("store \(s.id == 0 ? "(before store ids)" : hex(s.id)): \(s.generations.count) generations, \(s.segments) segments (\(HumanReadable.bytes(s.newestStateSegmentBytes)) in the newest state)")
                for g in s.generations {
                    let last = g.lastCommitSequence.map { seq in
                        "last commit \(seq)" + (g.lastCommitTime.map { " at \(formatter.string(from: Date(timeIntervalSince1970: $0))), \(HumanReadable.seconds(max(0, now - $0))) ago" } ?? "")
                    } ?? "no commit"
                    print("  generation \(g.ordinal) (\(hex(g.id))): \(g.states) states (newest at sequence \(g.newestStateSequence)), \(g.logPieces) log pieces of \(g.wals) WALs, \(last)")
                }
                for d in s.damagedObjects { print("  damaged: \(d)") }
            }
        }
    }
}
