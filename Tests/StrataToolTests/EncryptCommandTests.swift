import Foundation
import Strata
import StrataTestSupport
import Testing

/// `strata encrypt` / `decrypt`, and `--key-file` on every command that opens a store.
@Suite struct EncryptCommandTests {
    static func writeKey(_ path: String, byte: UInt8, hex: Bool = false) throws {
        let key = [UInt8](repeating: byte, count: 32)
        let data = hex ? Data((key.map { String(format: "%02x", $0) }.joined() + "\n").utf8) : Data(key)
        try data.write(to: URL(fileURLWithPath: path))
    }

    @Test func everyCommandOpensAnEncryptedStoreWithItsKeyFileAndNoneWithout() throws {
        let dir = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        try StrataToolTests.makeShop(dir.path)
        let plainDump = try ToolRunner.run(["dump", dir.path, "ShopCustomer"]).stdout
        let key = root.path + "/shop.key", hexKey = root.path + "/shop.hex", other = root.path + "/other.key"
        try Self.writeKey(key, byte: 7)
        try Self.writeKey(hexKey, byte: 7, hex: true)
        try Self.writeKey(other, byte: 9)

        let encrypt = try ToolRunner.run(["encrypt", dir.path, "--new-key-file", key, "--json"])
        #expect(encrypt.status == 0, "\(encrypt.stderr)")
        #expect((encrypt.jsonObject["segments"] as? Int ?? 0) > 0)
        // No customer's email is left in any file.
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: dir.path + "/" + name))
            #expect(bytes.range(of: Data("ada@example.com".utf8)) == nil, "\(name)")
        }

        // Without the key, every command says what to do, exit 2.
        for args in [["inspect", dir.path], ["verify", dir.path], ["dump", dir.path, "ShopCustomer"], ["stats", dir.path],
                     ["compact", dir.path]] {
            let run = try ToolRunner.run(args)
            #expect(run.status == 2, "\(args)")
            #expect(run.stderr.contains("is encrypted: give its key with --key-file"), "\(args): \(run.stderr)")
        }
        let wrong = try ToolRunner.run(["inspect", dir.path, "--key-file", other, "--json"])
        #expect(wrong.status == 2)
        #expect((wrong.jsonObject["error"] as? String ?? "").contains("does not open"), "\(wrong.stdout)")

        // With it (raw or hex), every command works.
        #expect(try ToolRunner.run(["verify", dir.path, "--key-file", key]).status == 0)
        #expect(try ToolRunner.run(["dump", dir.path, "ShopCustomer", "--key-file", hexKey]).stdout == plainDump)
        #expect(try ToolRunner.run(["inspect", dir.path, "--key-file", key]).status == 0)
        #expect(try ToolRunner.run(["stats", dir.path, "--key-file", key]).status == 0)
        #expect(try ToolRunner.run(["compact", dir.path, "--key-file", key]).status == 0)
        let backup = root.path + "/backup", restored = root.path + "/restored"
        #expect(try ToolRunner.run(["backup", dir.path, backup, "--key-file", key]).status == 0)
        #expect(try ToolRunner.run(["restore", backup, root.path + "/nokey"]).status == 2)
        let restore = try ToolRunner.run(["restore", backup, restored, "--key-file", key])
        #expect(restore.status == 0, "\(restore.stderr)")
        #expect(try ToolRunner.run(["dump", restored, "ShopCustomer", "--key-file", key]).stdout == plainDump)
        let dumpFile = root.path + "/customers.jsonl"
        try Data(plainDump.utf8).write(to: URL(fileURLWithPath: dumpFile))

        // A new key, then back to plaintext.
        #expect(try ToolRunner.run(["encrypt", dir.path, "--key-file", key, "--new-key-file", other]).status == 0)
        #expect(try ToolRunner.run(["verify", dir.path, "--key-file", key]).status == 2)
        #expect(try ToolRunner.run(["verify", dir.path, "--key-file", other]).status == 0)
        let decrypt = try ToolRunner.run(["decrypt", dir.path, "--key-file", other])
        #expect(decrypt.status == 0, "\(decrypt.stderr)")
        #expect(try ToolRunner.run(["dump", dir.path, "ShopCustomer"]).stdout == plainDump)
        let unexpected = try ToolRunner.run(["verify", dir.path, "--key-file", key])
        #expect(unexpected.status == 2)
        #expect(unexpected.stderr.contains("is not encrypted"), "\(unexpected.stderr)")
        #expect(try ToolRunner.run(["decrypt", dir.path]).status == 64, "decrypt needs a key file")
        let badKey = root.path + "/short.key"
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: badKey))
        let short = try ToolRunner.run(["verify", dir.path, "--key-file", badKey])
        #expect(short.status == 2)
        #expect(short.stderr.contains("a key is 32 bytes"), "\(short.stderr)")
    }

    @Test func theDemoRunsEncrypted() throws {
        let dir = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        let key = root.path + "/demo.key"
        try Self.writeKey(key, byte: 3)
        let demo = try ToolRunner.run(["demo", dir.path, "--key-file", key, "--json"])
        #expect(demo.status == 0, "\(demo.stderr)")
        #expect(try ToolRunner.run(["verify", dir.path, "--key-file", key]).status == 0)
        #expect(try ToolRunner.run(["verify", dir.path]).status == 2)
    }
}
