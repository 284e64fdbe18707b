import Foundation
import Strata
import StrataS3
import StrataStorage
import StrataTestSupport
import Testing

/// The `strata` command, run as a subprocess on stores the tests build through the public API.
@Suite struct StrataToolTests {
    /// Three customers, ten orders (nine with a customer), three pupils with three tutor edges.
    static func makeShop(_ path: String) throws {
        let store = try Store(directoryPath: path)
        defer { store.close() }
        let customers = [ShopCustomer(email: "ada@example.com", name: "Ada"),
                         ShopCustomer(email: "grace@example.com", name: "Grace"),
                         ShopCustomer(email: "alan@example.com", name: "Alan")]
        var orders: [ShopOrder] = []
        for i in 0..<10 { orders.append(ShopOrder(amount: Int64(10 * (i + 1)), customer: i == 9 ? nil : customers[i % 3])) }
        try store.box(for: ShopOrder.self).put(orders)
        let tutors = [Tutor(name: "Lovelace"), Tutor(name: "Hopper")]
        let pupils = [Pupil(name: "Ann"), Pupil(name: "Bob"), Pupil(name: "Cid")]
        pupils[0].tutors.append(contentsOf: tutors)
        pupils[1].tutors.append(tutors[1])
        try store.box(for: Pupil.self).put(pupils)
    }

    /// The store's ids for an entity and one of its properties.
    static func ids(_ path: String, entity: String, property: String) throws -> (UInt32, UInt32) {
        var options = StoreOptions()
        options.readOnly = true
        let store = try Store(directoryPath: path, options: options)
        defer { store.close() }
        let e = try #require(try store.storedEntities().first { $0.name == entity })
        let p = try #require(e.properties.first { $0.name == property })
        return (e.id, p.id)
    }

    static func bigEndian<T: FixedWidthInteger>(_ v: T) -> [UInt8] { withUnsafeBytes(of: v.bigEndian) { Array($0) } }

    @Test func inspectShowsFormatsLevelsEntitiesSchemaAndEdgeCounts() throws {
        let dir = TemporaryDirectory()
        try Self.makeShop(dir.path)
        let run = try ToolRunner.run(["inspect", dir.path, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let report = run.jsonObject
        #expect(report["storeFormat"] as? Int == 3)
        #expect(report["objectFormat"] as? Int == 5)
        let spaces = (report["keySpaces"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(Set(["default", "objects", "meta", "edges", "indexes"]).isSubset(of: Set(spaces)))
        let entities = report["entities"] as? [[String: Any]] ?? []
        func entity(_ name: String) -> [String: Any] { entities.first { $0["name"] as? String == name } ?? [:] }
        func property(_ e: String, _ p: String) -> [String: Any] {
            (entity(e)["properties"] as? [[String: Any]] ?? []).first { $0["name"] as? String == p } ?? [:]
        }
        #expect(entity("ShopOrder")["objects"] as? Int == 10)
        #expect(entity("ShopCustomer")["objects"] as? Int == 3)
        #expect(property("ShopOrder", "customer")["edges"] as? Int == 9)
        #expect(property("ShopOrder", "customer")["target"] as? String == "ShopCustomer")
        #expect(property("ShopOrder", "amount")["index"] as? String == "index")
        #expect(property("ShopCustomer", "email")["index"] as? String == "unique")
        #expect(property("Pupil", "tutors")["edges"] as? Int == 3)
        #expect(property("Pupil", "tutors")["type"] as? String == "ToMany<Tutor>")
        #expect((report["walBytes"] as? Int ?? 0) > 0)

        let text = try ToolRunner.run(["inspect", dir.path])
        #expect(text.status == 0)
        #expect(text.stdout.contains("ShopCustomer (id"))
        #expect(text.stdout.contains("email: String @Unique"))
        #expect(text.stdout.contains("customer: ToOne<ShopCustomer>, 9 edges"))
    }

    @Test func verifyPassesOnAHealthyStoreAndReportsAFlippedSegmentByteWithFileAndOffset() throws {
        let dir = TemporaryDirectory()
        try Self.makeShop(dir.path)
        #expect(try ToolRunner.run(["compact", dir.path]).status == 0)
        let healthy = try ToolRunner.run(["verify", dir.path])
        #expect(healthy.status == 0, "\(healthy.stdout)\(healthy.stderr)")
        #expect(healthy.stdout.contains("OK: no problems found"))

        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".seg") }
        let largest = try #require(names.max { a, b in
            let size = { (n: String) in (try? FileManager.default.attributesOfItem(atPath: dir.path + "/" + n)[.size] as? Int) ?? 0 }
            return size(a) < size(b)
        })
        let path = dir.path + "/" + largest
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count / 3] ^= 0x10
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let damaged = try ToolRunner.run(["verify", dir.path])
        #expect(damaged.status == 1)
        #expect(damaged.stdout.contains("problem: \(path) at offset"), "\(damaged.stdout)")
        let json = try ToolRunner.run(["verify", dir.path, "--json"])
        #expect(json.status == 1)
        #expect(json.jsonObject["ok"] as? Bool == false)
        let problems = (json.jsonObject["storage"] as? [String: Any])?["problems"] as? [[String: Any]] ?? []
        #expect(problems.contains { $0["file"] as? String == path })
        // Verification never changes the store: the damaged byte is still there.
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) == bytes)
    }

    @Test func verifyReportsHandDamagedEdgesAndIndexEntriesByEntityAndId() throws {
        let dir = TemporaryDirectory()
        try Self.makeShop(dir.path)
        let (orderEntity, customerProperty) = try Self.ids(dir.path, entity: "ShopOrder", property: "customer")
        let (pupilEntity, tutorsProperty) = try Self.ids(dir.path, entity: "Pupil", property: "tutors")
        let (_, amountProperty) = try Self.ids(dir.path, entity: "ShopOrder", property: "amount")
        do {
            let engine = try Engine.open(directory: dir.path)
            defer { engine.close() }
            let edges = try #require(engine.existingKeySpace(named: "edges"))
            let indexes = try #require(engine.existingKeySpace(named: "indexes"))
            var batch = WriteBatch()
            // Order 1 points at customer 1: drop the backlink entry that mirrors it.
            batch.delete([1] + Self.bigEndian(orderEntity) + Self.bigEndian(customerProperty)
                         + Self.bigEndian(UInt64(1)) + Self.bigEndian(UInt64(1)), in: edges)
            // A reverse entry claiming pupil 3 holds tutor 1: its list says nothing of the kind.
            batch.put([3] + Self.bigEndian(pupilEntity) + Self.bigEndian(tutorsProperty)
                      + Self.bigEndian(UInt64(1)) + Self.bigEndian(UInt64(3)), [], in: edges)
            // An index entry for an order that does not exist.
            batch.put(Self.bigEndian(orderEntity) + Self.bigEndian(amountProperty) + [1] + Self.bigEndian(UInt64(1) << 63 | 5)
                      + Self.bigEndian(UInt64(77)), [], in: indexes)
            try engine.write(batch)
        }
        let run = try ToolRunner.run(["verify", dir.path])
        #expect(run.status == 1)
        #expect(run.stdout.contains("problem: ShopOrder 1: customer points at 1, but its backlink entry is missing"), "\(run.stdout)")
        #expect(run.stdout.contains("problem: Pupil 3: reverse entry says tutors holds 1, but the list does not"), "\(run.stdout)")
        #expect(run.stdout.contains("problem: ShopOrder 77: index entry of amount does not match the object"), "\(run.stdout)")
        let json = try ToolRunner.run(["verify", dir.path, "--json"])
        let problems = (json.jsonObject["objects"] as? [String: Any])?["problems"] as? [[String: Any]] ?? []
        #expect(problems.count == 3)
        #expect(problems.contains { $0["entity"] as? String == "Pupil" && $0["id"] as? Int == 3 })
    }

    @Test func compactShrinksAStoreFullOfOverwritesAndReportsProgress() throws {
        let dir = TemporaryDirectory()
        do {
            var options = StoreOptions()
            options.durability = .none
            let store = try Store(directoryPath: dir.path, options: options)
            defer { store.close() }
            let box = store.box(for: ShopOrder.self)
            let orders = (0..<500).map { ShopOrder(amount: Int64($0), customer: nil) }
            try box.put(orders)
            for round in 1...40 {
                for o in orders { o.amount = Int64(round * 1_000 + Int(o.id)) }
                try box.put(orders)
            }
        }
        let run = try ToolRunner.run(["compact", dir.path, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let before = run.jsonObject["bytesBefore"] as? Int ?? 0
        let after = run.jsonObject["bytesAfter"] as? Int ?? Int.max
        #expect(before > 0)
        #expect(after * 4 < before, "before \(before), after \(after)")
        #expect(run.stderr.isEmpty, "--json writes no progress")
        // The merged objects keep the id layout a store writes them in: the tool compacts a
        // store of objects with its object layer's engine options.
        let layout = try ToolRunner.run(["verify", dir.path, "--json"])
        let storage = layout.jsonObject["storage"] as? [String: Any] ?? [:]
        #expect((storage["idBlocks"] as? Int ?? 0) > 0, "\(layout.stdout)")

        let text = try ToolRunner.run(["compact", dir.path, "--keyspace", "objects"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("compacted key space objects"))
        #expect(text.stderr.contains("compacting: 100%"), "progress lines when not on a terminal: \(text.stderr)")
        #expect(try ToolRunner.run(["verify", dir.path]).status == 0)
        let dump = try ToolRunner.run(["dump", dir.path, "ShopOrder", "--id", "7"])
        #expect(dump.stdout.contains("\"amount\":40007"), "\(dump.stdout)")
    }

    @Test func dumpWritesObjectsAndEdgesAsJSONLines() throws {
        let dir = TemporaryDirectory()
        try Self.makeShop(dir.path)
        let all = try ToolRunner.run(["dump", dir.path, "ShopOrder"])
        #expect(all.status == 0, "\(all.stderr)")
        let lines = all.stdout.split(separator: "\n")
        #expect(lines.count == 10)
        let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == 10)
        #expect(objects.map { $0["id"] as? Int } == (1...10).map { $0 })
        #expect(objects[0]["amount"] as? Int == 10)
        #expect(objects[0]["customer"] as? Int != nil)
        #expect(objects[9]["customer"] is NSNull)
        #expect(objects[0]["placed"] as? String == "2001-01-01T00:00:00Z")

        let one = try ToolRunner.run(["dump", dir.path, "ShopOrder", "--id", "3"])
        #expect(one.stdout.split(separator: "\n").count == 1)
        #expect(one.stdout.hasPrefix("{\"id\":3,"))
        #expect(try ToolRunner.run(["dump", dir.path, "ShopOrder", "--limit", "4"]).stdout.split(separator: "\n").count == 4)
        let pupils = try ToolRunner.run(["dump", dir.path, "Pupil"]).stdout.split(separator: "\n")
        #expect(pupils.first?.contains("\"tutors\":[1,2]") == true, "\(pupils)")

        let tutorEdges = try ToolRunner.run(["dump", dir.path, "--edges", "Pupil.tutors"])
        #expect(tutorEdges.stdout == "{\"source\":1,\"target\":1,\"position\":0}\n{\"source\":1,\"target\":2,\"position\":1}\n{\"source\":2,\"target\":2,\"position\":0}\n")
        #expect(try ToolRunner.run(["dump", dir.path, "--edges", "ShopOrder.customer"]).stdout.split(separator: "\n").count == 9)

        let missing = try ToolRunner.run(["dump", dir.path, "Nothing"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("has no entity \"Nothing\"; entities: ShopOrder, ShopCustomer, Pupil, Tutor"), "\(missing.stderr)")
        let absent = try ToolRunner.run(["dump", dir.path, "ShopOrder", "--id", "99"])
        #expect(absent.status == 2)
        #expect(absent.stderr.contains("ShopOrder 99 is not stored"))
        #expect(try ToolRunner.run(["dump", dir.path, "--edges", "Pupil.name"]).status == 2)
    }

    @Test func backupAndRestoreGiveTheSameObjectsAndRefuseWhatTheyMustNotTouch() throws {
        let dir = TemporaryDirectory(), root = TemporaryDirectory()
        try Self.makeShop(dir.path)
        // Into segments, and a little more in the log: a read-only open backs up both.
        do {
            let store = try Store(directoryPath: dir.path)
            try store.compact()
            try store.box(for: Tutor.self).put(Tutor(name: "Turing"))
            store.close()
        }
        let backup = root.path + "/backup", restored = root.path + "/restored"
        let first = try ToolRunner.run(["backup", dir.path, backup, "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect((first.jsonObject["segments"] as? Int ?? 0) > 0)
        #expect((first.jsonObject["filesLinked"] as? Int ?? 0) == first.jsonObject["segments"] as? Int)
        // Again, with copies: every segment is already there; only the log is copied.
        let again = try ToolRunner.run(["backup", dir.path, backup, "--copy"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("segments: 0 linked (0 B), 1 copied"), "\(again.stdout)")
        #expect(again.stderr.contains("backing up: 100%"), "\(again.stderr)")
        let third = try ToolRunner.run(["backup", dir.path, backup, "--json"])
        #expect(third.jsonObject["filesReused"] as? Int == first.jsonObject["segments"] as? Int)

        let restore = try ToolRunner.run(["restore", backup, restored])
        #expect(restore.status == 0, "\(restore.stderr)")
        #expect(restore.stdout.contains("restored to \(restored)"))
        #expect(!FileManager.default.fileExists(atPath: restored + "/BACKUP"), "a restored store is a plain store")
        #expect(try ToolRunner.run(["verify", restored]).status == 0)
        for entity in ["ShopOrder", "ShopCustomer", "Pupil", "Tutor"] {
            #expect(try ToolRunner.run(["dump", restored, entity]).stdout == ToolRunner.run(["dump", dir.path, entity]).stdout, "\(entity)")
        }
        #expect(try ToolRunner.run(["dump", restored, "--edges", "Pupil.tutors"]).stdout
                == ToolRunner.run(["dump", dir.path, "--edges", "Pupil.tutors"]).stdout)

        // A restore never writes into a non-empty directory; a backup never into a store.
        let occupied = try ToolRunner.run(["restore", backup, restored])
        #expect(occupied.status == 2)
        #expect(occupied.stderr.contains("\(restored) cannot be used: a restore needs an empty directory"), "\(occupied.stderr)")
        let intoStore = try ToolRunner.run(["backup", dir.path, restored])
        #expect(intoStore.status == 2)
        #expect(intoStore.stderr.contains("holds no Strata backup"), "\(intoStore.stderr)")

        // A damaged backup is named and nothing is restored.
        let segment = try #require(try FileManager.default.contentsOfDirectory(atPath: backup).first { $0.hasSuffix(".seg") })
        let copyDir = root.path + "/copied"
        #expect(try ToolRunner.run(["backup", dir.path, copyDir, "--copy"]).status == 0)
        let path = copyDir + "/" + segment
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count / 3] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let damaged = try ToolRunner.run(["restore", copyDir, root.path + "/never"])
        #expect(damaged.status == 2)
        #expect(damaged.stderr.contains(segment), "\(damaged.stderr)")
        #expect(!FileManager.default.fileExists(atPath: root.path + "/never/CURRENT"))
    }

    @Test func restoreRebuildsAnArchiveAtASequenceOrATime() throws {
        let dir = TemporaryDirectory(), root = TemporaryDirectory()
        let archive = root.path + "/archive"
        var options = StoreOptions()
        options.archive = ArchiveOptions(target: DirectoryArchiveTarget(path: archive))
        let store = try Store(directoryPath: dir.path, options: options)
        try store.box(for: Tutor.self).put(Tutor(name: "Lovelace"))
        try store.archiveNow()
        let first = try #require(store.archiveStatus()).archivedSequence
        usleep(20_000)
        let between = Date()
        usleep(20_000)
        try store.box(for: Tutor.self).put(Tutor(name: "Hopper"))
        try store.archiveNow()
        store.close()

        let latest = try ToolRunner.run(["restore", archive, root.path + "/latest", "--json"])
        #expect(latest.status == 0, "\(latest.stderr)")
        #expect(try ToolRunner.run(["dump", root.path + "/latest", "Tutor"]).stdout.split(separator: "\n").count == 2)
        let early = try ToolRunner.run(["restore", archive, root.path + "/early", "--sequence", String(first)])
        #expect(early.status == 0, "\(early.stderr)")
        #expect(early.stdout.contains("up to sequence \(first)"), "\(early.stdout)")
        #expect(try ToolRunner.run(["dump", root.path + "/early", "Tutor"]).stdout.split(separator: "\n").count == 1)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let atTime = try ToolRunner.run(["restore", archive, root.path + "/at", "--at", formatter.string(from: between), "--json"])
        #expect(atTime.status == 0, "\(atTime.stderr)")
        #expect(atTime.jsonObject["sequence"] as? Int == Int(first))
        #expect(try ToolRunner.run(["verify", root.path + "/at"]).status == 0)

        #expect(try ToolRunner.run(["restore", archive, root.path + "/x", "--at", "yesterday"]).status == 64)
        let tooEarly = try ToolRunner.run(["restore", archive, root.path + "/y", "--at", "2001-01-01T00:00:00Z"])
        #expect(tooEarly.status == 2)
        #expect(tooEarly.stderr.contains("no commit at or before"), "\(tooEarly.stderr)")
        let notAnArchive = try ToolRunner.run(["restore", root.path, root.path + "/z"])
        #expect(notAnArchive.status == 2)
        #expect(notAnArchive.stderr.contains("neither a backup"), "\(notAnArchive.stderr)")

        // A second store sharing the archive: a restore names the store it wants.
        let other = TemporaryDirectory()
        options.archive!.sharesTarget = true
        let second = try Store(directoryPath: other.path, options: options)
        try second.box(for: Tutor.self).put([Tutor(name: "Turing"), Tutor(name: "Church"), Tutor(name: "Gödel")])
        try second.archiveNow()
        second.close()
        let ambiguous = try ToolRunner.run(["restore", archive, root.path + "/which"])
        #expect(ambiguous.status == 2)
        #expect(ambiguous.stderr.contains("name one with --store"), "\(ambiguous.stderr)")
        let id = try #require(try ToolRunner.run(["inspect", other.path, "--json"]).jsonObject["storeId"] as? String)
        let chosen = try ToolRunner.run(["restore", archive, root.path + "/which", "--store", id])
        #expect(chosen.status == 0, "\(chosen.stderr)")
        #expect(try ToolRunner.run(["dump", root.path + "/which", "Tutor"]).stdout.split(separator: "\n").count == 3)

        // archive-status: both stores, the first with its one generation and its last commit.
        let status = try ToolRunner.run(["archive-status", archive, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let stores = try #require(status.jsonObject["stores"] as? [[String: Any]])
        #expect(Set(stores.compactMap { $0["id"] as? String }).count == 2)
        let text = try ToolRunner.run(["archive-status", archive])
        #expect(text.stdout.contains("store \(id): 1 generations"), "\(text.stdout)")
    }

    /// `restore`, `archive-status` and `replicate` read an archive on S3 (the tests' local server).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["STRATA_S3_ENDPOINT"] != nil
                   || ProcessInfo.processInfo.environment["CI"] != nil))
    func restoreArchiveStatusAndReplicateReadAnS3Archive() throws {
        let env = ProcessInfo.processInfo.environment
        let endpoint = try #require(env["STRATA_S3_ENDPOINT"])
        let url = "s3://\(env["STRATA_S3_BUCKET"] ?? "strata-test")/tool-\(UUID().uuidString.lowercased())"
        let dir = TemporaryDirectory(), root = TemporaryDirectory()
        var options = StoreOptions()
        options.archive = ArchiveOptions(target: S3ArchiveTarget(try S3Configuration(url: url, endpoint: endpoint)))
        let store = try Store(directoryPath: dir.path, options: options)
        try store.box(for: Tutor.self).put([Tutor(name: "Lovelace"), Tutor(name: "Hopper")])
        try store.archiveNow()
        store.close()
        let status = try ToolRunner.run(["archive-status", url, "--endpoint", endpoint, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        #expect((status.jsonObject["stores"] as? [[String: Any]])?.count == 1)
        let restored = root.path + "/restored"
        let restore = try ToolRunner.run(["restore", url, restored, "--endpoint", endpoint])
        #expect(restore.status == 0, "\(restore.stderr)")
        #expect(try ToolRunner.run(["dump", restored, "Tutor"]).stdout.split(separator: "\n").count == 2)
        let replica = root.path + "/replica"
        let replicate = try ToolRunner.run(["replicate", url, replica, "--endpoint", endpoint, "--once"])
        #expect(replicate.status == 0, "\(replicate.stderr)")
        #expect(try ToolRunner.run(["dump", replica, "Tutor"]).stdout.split(separator: "\n").count == 2)
        // A wrong secret is a clear error, not a retry loop.
        let denied = try ToolRunner.run(["archive-status", url, "--endpoint", endpoint],
                                        environment: ["AWS_SECRET_ACCESS_KEY": "wrong"])
        #expect(denied.status != 0)
        #expect(denied.stderr.contains("access denied"), "\(denied.stderr)")
    }

    /// Lines longer than the pieces `load` reads the file in (1 MiB) arrive whole, each byte
    /// searched for a newline once (issue 54: a long line was searched again with every piece,
    /// and copied, which took its length squared).
    @Test func loadReadsLinesLongerThanItsReadPieces() throws {
        let dir = TemporaryDirectory(), copy = TemporaryDirectory(), files = TemporaryDirectory()
        let names = ["short", String(repeating: "é", count: 1_300_000), String(repeating: "x", count: 2_500_001), "last"]
        for path in [dir.path, copy.path] {
            let store = try Store(directoryPath: path)
            if path == dir.path { try store.box(for: Tutor.self).put(names.map { Tutor(name: $0) }) } else { _ = store.box(for: Tutor.self) }
            store.close()
        }
        try FileManager.default.createDirectory(atPath: files.path, withIntermediateDirectories: true)
        let dump = try ToolRunner.run(["dump", dir.path, "Tutor"])
        #expect(dump.status == 0)
        try dump.stdout.write(toFile: files.path + "/t.jsonl", atomically: true, encoding: .utf8)
        let load = try ToolRunner.run(["load", copy.path, "Tutor", files.path + "/t.jsonl", "--json"])
        #expect(load.status == 0, "\(load.stderr)")
        #expect(load.jsonObject["objects"] as? Int == names.count)
        let store = try Store(directoryPath: copy.path)
        defer { store.close() }
        #expect(try store.box(for: Tutor.self).all().map(\.name) == names)
    }

    @Test func loadReadsDumpBackToTheSameLines() throws {
        let dir = TemporaryDirectory(), copy = TemporaryDirectory(), files = TemporaryDirectory()
        try Self.makeShop(dir.path)
        do {
            // A date with a fraction of a second, and a pupil whose tutors come later in its file.
            let store = try Store(directoryPath: dir.path)
            let order = try #require(try store.box(for: ShopOrder.self).get(2))
            order.placed = Date(timeIntervalSince1970: 1_700_000_000.125)
            try store.box(for: ShopOrder.self).put(order)
            store.close()
        }
        do {
            // The copy has the schema (the app opened it once) and no objects.
            let store = try Store(directoryPath: copy.path)
            _ = store.box(for: ShopCustomer.self); _ = store.box(for: ShopOrder.self)
            _ = store.box(for: Pupil.self); _ = store.box(for: Tutor.self)
            store.close()
        }
        try FileManager.default.createDirectory(atPath: files.path, withIntermediateDirectories: true)
        let entities = ["ShopCustomer", "ShopOrder", "Tutor", "Pupil"]
        for entity in entities {
            let dump = try ToolRunner.run(["dump", dir.path, entity])
            #expect(dump.status == 0)
            try dump.stdout.write(toFile: files.path + "/\(entity).jsonl", atomically: true, encoding: .utf8)
        }
        // Orders name customers: loading them first is refused, naming the missing object.
        let early = try ToolRunner.run(["load", copy.path, "ShopOrder", files.path + "/ShopOrder.jsonl"])
        #expect(early.status == 2)
        #expect(early.stderr.contains("ShopCustomer with id"), "\(early.stderr)")
        for entity in entities {
            let load = try ToolRunner.run(["load", copy.path, entity, files.path + "/\(entity).jsonl", "--batch", "3"])
            #expect(load.status == 0, "\(entity): \(load.stderr)")
            #expect(load.stderr.contains("loading: 100%"), "\(load.stderr)")
        }
        for entity in entities {
            #expect(try ToolRunner.run(["dump", copy.path, entity]).stdout == ToolRunner.run(["dump", dir.path, entity]).stdout, "\(entity)")
        }
        #expect(try ToolRunner.run(["dump", copy.path, "--edges", "Pupil.tutors"]).stdout
                == ToolRunner.run(["dump", dir.path, "--edges", "Pupil.tutors"]).stdout)
        #expect(try ToolRunner.run(["verify", copy.path]).status == 0)
        // Loading the same lines again changes nothing.
        #expect(try ToolRunner.run(["load", copy.path, "ShopOrder", files.path + "/ShopOrder.jsonl", "--json"]).jsonObject["objects"] as? Int == 10)
        #expect(try ToolRunner.run(["dump", copy.path, "ShopOrder"]).stdout == ToolRunner.run(["dump", dir.path, "ShopOrder"]).stdout)

        // A bad line is named and nothing of the file is written.
        let bad = files.path + "/bad.jsonl"
        try "{\"id\":50,\"name\":\"ok\"}\n{\"id\":51,\"name\":7}\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let refused = try ToolRunner.run(["load", copy.path, "Tutor", bad])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("line 2: name"), "\(refused.stderr)")
        #expect(try ToolRunner.run(["dump", copy.path, "Tutor", "--id", "50"]).status == 2)
        try "{\"id\":50,\"nickname\":\"x\"}\n".write(toFile: bad, atomically: true, encoding: .utf8)
        #expect(try ToolRunner.run(["load", copy.path, "Tutor", bad]).stderr.contains("no property \"nickname\""))
        #expect(try ToolRunner.run(["load", copy.path, "Nobody", bad]).status == 2)
        // What only the put finds (issue 54: it was found mid-load, with the lines before it
        // stored): a target not stored, an id given twice, a unique value taken. Transactions of
        // one line each, and still nothing of the file is written.
        let customer = try #require(try ToolRunner.run(["dump", copy.path, "ShopCustomer"]).stdout.split(separator: "\n").first)
        let takenEmail = try #require(customer.split(separator: "\"email\":\"").last?.split(separator: "\"").first)
        let cases: [(entity: String, lines: String, message: String, written: String)] = [
            ("ShopOrder", "{\"id\":60,\"amount\":1,\"customer\":1}\n{\"id\":61,\"amount\":2,\"customer\":999}\n",
             "line 2: ", "60"),
            ("Tutor", "{\"id\":70,\"name\":\"a\"}\n{\"id\":70,\"name\":\"b\"}\n", "line 2: id 70 again (first on line 1)", "70"),
            ("ShopCustomer", "{\"id\":80,\"email\":\"new@x\",\"name\":\"n\"}\n{\"id\":81,\"email\":\"\(takenEmail)\",\"name\":\"m\"}\n",
             "line 2: ", "80"),
        ]
        for c in cases {
            try c.lines.write(toFile: bad, atomically: true, encoding: .utf8)
            let refused = try ToolRunner.run(["load", copy.path, c.entity, bad, "--batch", "1"])
            #expect(refused.status == 2, "\(c.entity): \(refused.stderr)")
            #expect(refused.stderr.contains(c.message), "\(c.entity): \(refused.stderr)")
            #expect(try ToolRunner.run(["dump", copy.path, c.entity, "--id", c.written]).status == 2, "\(c.entity): line 1 was written")
        }

        // Relations within one entity may point forward in its file: set in a second pass.
        let tree = TemporaryDirectory(), treeCopy = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: tree.path)
            let root = ShopCategory(name: "root"), leaf = ShopCategory(name: "leaf")
            try store.box(for: ShopCategory.self).put([leaf, root])   // the leaf gets the smaller id
            leaf.parent.target = root
            try store.box(for: ShopCategory.self).put(leaf)
            store.close()
            let empty = try Store(directoryPath: treeCopy.path)
            _ = empty.box(for: ShopCategory.self)
            empty.close()
        }
        let categories = try ToolRunner.run(["dump", tree.path, "ShopCategory"]).stdout
        #expect(categories.hasPrefix("{\"id\":1,\"name\":\"leaf\",\"parent\":2}"), "\(categories)")
        try categories.write(toFile: files.path + "/categories.jsonl", atomically: true, encoding: .utf8)
        let loaded = try ToolRunner.run(["load", treeCopy.path, "ShopCategory", files.path + "/categories.jsonl"])
        #expect(loaded.status == 0, "\(loaded.stderr)")
        #expect(try ToolRunner.run(["dump", treeCopy.path, "ShopCategory"]).stdout == categories)
        #expect(try ToolRunner.run(["verify", treeCopy.path]).status == 0)
    }

    @Test func statsReportsTheStoreLifetimeCounters() throws {
        let dir = TemporaryDirectory()
        try Self.makeShop(dir.path)
        do {   // a second session: counters add up across closes
            let store = try Store(directoryPath: dir.path)
            defer { store.close() }
            try store.box(for: ShopOrder.self).put(ShopOrder(amount: 1, customer: nil))
        }
        let run = try ToolRunner.run(["stats", dir.path, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let lifetime = run.jsonObject["lifetime"] as? [String: Any] ?? [:]
        #expect((lifetime["userBytesWritten"] as? Int ?? 0) > 0)
        #expect((lifetime["writeBatches"] as? Int ?? 0) >= 4)
        #expect((lifetime["writeAmplification"] as? Double ?? 0) > 1)
        let text = try ToolRunner.run(["stats", dir.path])
        #expect(text.stdout.contains("writeAmplification"))
    }

    @Test func errorsAreOneLineWithANonZeroExit() throws {
        let dir = TemporaryDirectory()
        func expectOneLineError(_ arguments: [String], containing text: String) throws {
            let run = try ToolRunner.run(arguments)
            #expect(run.status == 2, "\(arguments): \(run.stdout) \(run.stderr)")
            #expect(run.stderr.hasPrefix("strata: error: "))
            #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
            #expect(run.stderr.contains(text), "\(run.stderr)")
        }
        for command in ["inspect", "verify", "compact", "stats"] {
            try expectOneLineError([command, dir.path + "/missing"], containing: "no such directory")
        }
        try FileManager.default.createDirectory(atPath: dir.path + "/empty", withIntermediateDirectories: true)
        try expectOneLineError(["inspect", dir.path + "/empty"], containing: "is not a Strata store")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/empty/CURRENT"), "read-only commands create nothing")

        let shop = dir.path + "/shop"
        try Self.makeShop(shop)
        do {
            let holder = try Store(directoryPath: shop)
            defer { holder.close() }
            try expectOneLineError(["inspect", shop], containing: "is locked: another process has it open for writing. Stop that process")
            try expectOneLineError(["compact", shop], containing: "is locked")
        }
        do {
            let engine = try Engine.open(directory: shop)
            var batch = WriteBatch()
            batch.put([1], withUnsafeBytes(of: UInt32(99).littleEndian) { Array($0) }, in: try #require(engine.existingKeySpace(named: "meta")))
            try engine.write(batch)
            engine.close()
        }
        try expectOneLineError(["inspect", shop], containing: "was written by a newer Strata (object format 99")

        let damaged = dir.path + "/damaged"
        try Self.makeShop(damaged)
        try Data("MANIFEST-000099\n00000000\n".utf8).write(to: URL(fileURLWithPath: damaged + "/CURRENT"))
        try expectOneLineError(["inspect", damaged], containing: "is damaged: \(damaged)/CURRENT at offset 0")
        let verify = try ToolRunner.run(["verify", damaged])
        #expect(verify.status == 1)
        #expect(verify.stdout.contains("problem: \(damaged)/CURRENT at offset 0: CURRENT checksum mismatch"), "\(verify.stdout)")
    }

    @Test func helpHasExamplesAndBadUsageIsRefused() throws {
        let help = try ToolRunner.run(["--help"])
        #expect(help.status == 0)
        for command in ["demo", "inspect", "verify", "compact", "dump", "load", "stats", "backup", "restore"] { #expect(help.stdout.contains(command)) }
        for command in ["inspect", "verify", "compact", "dump", "load", "stats", "backup", "restore"] {
            let run = try ToolRunner.run([command, "--help"])
            #expect(run.status == 0)
            #expect(run.stdout.contains("Examples:"), "\(command)")
            #expect(run.stdout.contains("--json"), "\(command)")
        }
        #expect(try ToolRunner.run(["dump", "/tmp"]).status == 64)
        #expect(try ToolRunner.run(["inspect"]).status == 64)
        #expect(try ToolRunner.run(["frobnicate"]).status == 64)
    }

    @Test func theDemoBuildsAStoreThatVerifies() throws {
        let dir = TemporaryDirectory()
        let demo = try ToolRunner.run(["demo", dir.path])
        #expect(demo.status == 0, "\(demo.stderr)")
        #expect(demo.stdout.contains("reopening"))
        let verify = try ToolRunner.run(["verify", dir.path, "--json"])
        #expect(verify.status == 0, "\(verify.stdout)")
        #expect(verify.jsonObject["ok"] as? Bool == true)
        // In JSON too (issue 54): the steps, and what the reopened store holds.
        let json = try ToolRunner.run(["demo", dir.path, "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let reopened = json.jsonObject["reopened"] as? [String: Any]
        #expect(reopened?["Order"] as? Int == 3 && reopened?["Customer"] as? Int == 1 && reopened?["Note"] as? Int == 1, "\(json.stdout)")
        #expect((json.jsonObject["steps"] as? [String])?.contains { $0.contains("reopening") } == true)
    }

    /// A command asked for JSON answers in JSON when it fails too (issue 54), with the exit
    /// status and the message on standard error as before.
    @Test func failuresAnswerInJSONWhenAsked() throws {
        let missing = TemporaryDirectory().path + "/nowhere"
        for command in [["inspect", missing], ["verify", missing], ["stats", missing], ["dump", missing, "Order"],
                        ["compact", missing], ["backup", missing, missing + "-b"], ["restore", missing, missing + "-r"],
                        ["load", missing, "Order", missing + ".jsonl"]] {
            let run = try ToolRunner.run(command + ["--json"])
            #expect(run.status == 2, "\(command)")
            #expect((run.jsonObject["error"] as? String)?.contains("no such directory") == true, "\(command): \(run.stdout)")
            #expect(run.jsonObject["status"] as? Int == 2)
            #expect(run.stderr.contains("strata: error:"), "\(command)")
        }
    }
}
