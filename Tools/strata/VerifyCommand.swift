import ArgumentParser
import Strata
import StrataStorage

/// `strata verify DIR`: every checksum of every file, then the object graph. Read-only.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every checksum and the object graph; exit 0 only when all is well.",
        discussion: """
        Storage: CURRENT, every manifest record, every block of every live segment (checksum,
        decompression, key order, entry counts and key ranges against the manifest), every
        record of the write-ahead logs, STATS. Objects: every object decodes; every edge has both
        of its ends and its reverse entry; every ToOne points at a live object or nothing; every
        index entry matches its object; object counts match. Each problem is printed with its
        file and offset, or its entity and id. Never modifies the store.

        Exit status: 0 all is well, 1 problems found, 2 the store could not be read at all.

        Examples:
          strata verify /tmp/shop
          strata verify /tmp/shop --json
        """)

    @OptionGroup var store: StoreArguments

    func run() throws {
        var problems = 0
        try reportingFailures(directory: store.directory, json: store.json) {
            try checkStoreDirectory(store.directory)
            let key = try store.encryptionKey()
            let storage = try Engine.verify(directory: store.directory, encryptionKey: key)
            var graph: GraphVerification?
            var graphSkipped: String?
            do {
                if let objects = try openObjectStore(store.directory, key: key) {
                    defer { objects.close() }
                    graph = try objects.verifyGraph()
                } else {
                    graphSkipped = "no object layer: the store holds key spaces only"
                }
            } catch {
                // The storage report says why when the files are damaged; keep both.
                graphSkipped = "object graph not checked: \(ToolFailure(error, directory: store.directory).message)"
                if storage.isClean { problems += 1 }
            }
            problems += storage.problems.count + (graph?.problems.count ?? 0)
            if store.json {
                print(Self.json(storage, graph, skipped: graphSkipped, ok: problems == 0).text)
            } else {
                print(Self.text(storage, graph, skipped: graphSkipped, ok: problems == 0))
            }
        }
        if problems > 0 { throw ExitCode(ExitStatus.problemsFound) }
    }

    static func text(_ s: StorageVerification, _ g: GraphVerification?, skipped: String?, ok: Bool) -> String {
        var lines = ["storage: \(s.segments) segments (\(s.blocks) blocks, \(s.idBlocks) in the id layout, \(s.entries) entries), \(s.manifestRecords) manifest records, \(s.walRecords) WAL records, \(HumanReadable.bytes(s.bytesChecked)) checked"]
        lines += s.problems.map { "  problem: \($0.file) at offset \($0.offset): \($0.reason)" }
        lines += s.notes.map { "  note: \($0)" }
        if let g {
            lines.append("objects: \(g.objects) objects, \(g.edges) edges, \(g.indexEntries) index entries")
            lines += g.problems.map { "  problem: \($0)" }
            lines += g.notes.map { "  note: \($0)" }
        }
        if let skipped { lines.append(ok ? "note: \(skipped)" : "problem: \(skipped)") }
        lines.append(ok ? "OK: no problems found" : "FAILED: \(s.problems.count + (g?.problems.count ?? 0) + (skipped != nil && !ok && s.isClean ? 1 : 0)) problem(s)")
        return lines.joined(separator: "\n")
    }

    static func json(_ s: StorageVerification, _ g: GraphVerification?, skipped: String?, ok: Bool) -> JSONValue {
        var fields: [(String, JSONValue)] = [
            ("ok", .bool(ok)),
            ("storage", .object([
                ("segments", .int(Int64(s.segments))), ("blocks", .int(Int64(s.blocks))), ("idBlocks", .int(Int64(s.idBlocks))), ("entries", .uint(s.entries)),
                ("manifestRecords", .int(Int64(s.manifestRecords))), ("walRecords", .int(Int64(s.walRecords))),
                ("bytesChecked", .uint(s.bytesChecked)),
                ("problems", .array(s.problems.map { .object([("file", .string($0.file)), ("offset", .uint($0.offset)), ("reason", .string($0.reason))]) })),
                ("notes", .array(s.notes.map { .string($0) })),
            ])),
        ]
        if let g {
            fields.append(("objects", .object([
                ("objects", .int(Int64(g.objects))), ("edges", .int(Int64(g.edges))), ("indexEntries", .int(Int64(g.indexEntries))),
                ("problems", .array(g.problems.map { .object([("entity", .string($0.entity)), ("id", .uint($0.id)), ("reason", .string($0.reason))]) })),
                ("notes", .array(g.notes.map { .string($0) })),
            ])))
        }
        if let skipped { fields.append(("objectsSkipped", .string(skipped))) }
        return .object(fields)
    }
}
