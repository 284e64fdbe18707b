import Foundation
import Testing
@testable import StrataStorage

@Suite struct LockTests {
    static var tortureBinary: String? { builtExecutable(named: "strata-torture") }

    @Test func secondOpenInTheSameProcessIsLocked() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path)
        #expect(throws: StorageError.locked(path: dir.path + "/LOCK")) { try Engine.open(directory: dir.path) }
        e.close()
        let again = try Engine.open(directory: dir.path)
        again.close()
    }

    @Test func anotherProcessHoldingTheStoreLocksItOut() throws {
        let binary = try #require(Self.tortureBinary, "strata-torture was not built next to the tests")
        let dir = TemporaryDirectory()
        try Engine.open(directory: dir.path).close()
        let child = Process()
        child.executableURL = URL(fileURLWithPath: binary)
        child.arguments = ["hold", dir.path]
        let input = Pipe(), output = Pipe()
        child.standardInput = input
        child.standardOutput = output
        try child.run()
        let line = output.fileHandleForReading.availableData
        #expect(String(decoding: line, as: UTF8.self).hasPrefix("ready"))
        // RELIABILITY.md §8: 100 of 100 tries get the typed error, at once.
        let start = Date()
        for _ in 0..<100 {
            #expect(throws: StorageError.locked(path: dir.path + "/LOCK")) { try Engine.open(directory: dir.path) }
        }
        #expect(Date().timeIntervalSince(start) < 10, "a locked open must fail at once, not wait")
        // A holder killed with SIGKILL leaves no stale lock: the kernel drops flock locks.
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        let e = try Engine.open(directory: dir.path)
        e.close()
    }

    /// RELIABILITY.md §8: a holder killed with SIGKILL, 100 times: each time the next open works.
    @Test func aHolderKilledWithSIGKILLNeverLeavesTheStoreLocked() throws {
        let binary = try #require(Self.tortureBinary, "strata-torture was not built next to the tests")
        let dir = TemporaryDirectory()
        try Engine.open(directory: dir.path).close()
        var reopened = 0
        for _ in 0..<100 {
            let child = Process()
            child.executableURL = URL(fileURLWithPath: binary)
            child.arguments = ["hold", dir.path]
            let input = Pipe(), output = Pipe()
            child.standardInput = input
            child.standardOutput = output
            try child.run()
            guard String(decoding: output.fileHandleForReading.availableData, as: UTF8.self).hasPrefix("ready") else { break }
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            let e = try Engine.open(directory: dir.path)
            e.close()
            reopened += 1
        }
        #expect(reopened == 100)
    }

    @Test func acknowledgedDurableWritesSurviveSIGKILL() throws {
        let binary = try #require(Self.tortureBinary, "strata-torture was not built next to the tests")
        let dir = TemporaryDirectory()
        let child = Process()
        child.executableURL = URL(fileURLWithPath: binary)
        child.arguments = ["write", dir.path, "100000"]
        let output = Pipe()
        child.standardOutput = output
        try child.run()
        var acknowledged = -1
        var text = ""
        while acknowledged < 50 {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
            if let last = text.split(separator: "\n").last(where: { $0.hasPrefix("ack ") }) {
                acknowledged = Int(last.dropFirst(4)) ?? acknowledged
            }
        }
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        let e = try Engine.open(directory: dir.path)
        defer { e.close() }
        #expect(acknowledged >= 50)
        for i in 0...acknowledged {
            #expect(try e.get(bytes("key-\(i)"), in: e.defaultKeySpace) == bytes("value-\(i)"))
        }
    }
}

@Suite struct ReadOnlyDirectoryTests {
    /// Tests run as root, for whom permissions do not apply, so the opener is the helper
    /// process run as an unprivileged user (setpriv), against a store owned by root.
    @Test func storeInADirectoryTheUserCannotWriteIsAReadOnlyError() throws {
        let binary = try #require(LockTests.tortureBinary, "strata-torture was not built next to the tests")
        let setpriv = try #require(["/usr/bin/setpriv", "/bin/setpriv"].first { FileManager.default.isExecutableFile(atPath: $0) },
                                   "setpriv (util-linux) is needed to drop privileges")
        guard getuid() == 0 else { return }   // not root: chmod-style protection would already apply
        let dir = TemporaryDirectory()
        // Shared on purpose: others may read (files are the owner's alone by default).
        var shared = EngineOptions()
        shared.fileSystem = PosixFileSystem(fileMode: 0o644, directoryMode: 0o755)
        let writer = try Engine.open(directory: dir.path, options: shared)
        try writer.put("k", "v", in: writer.defaultKeySpace)
        writer.close()
        // The helper must be able to reach the directory and execute the binary.
        chmod(NSTemporaryDirectory(), 0o1777)
        chmod(dir.path, 0o755)
        let child = Process()
        child.executableURL = URL(fileURLWithPath: setpriv)
        child.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", binary, "hold", dir.path]
        let errors = Pipe()
        child.standardError = errors
        child.standardOutput = Pipe()
        child.standardInput = Pipe()
        try child.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        #expect(child.terminationStatus == 1)
        #expect(message.contains("is read-only"), "got: \(message)")

        // Opened read-only, the same user can read it: nothing needs writing.
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: setpriv)
        reader.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", binary, "read", dir.path]
        let out = Pipe()
        reader.standardOutput = out
        reader.standardError = Pipe()
        try reader.run()
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        reader.waitUntilExit()
        #expect(reader.terminationStatus == 0)
        #expect(printed.hasPrefix("keys 1"), "got: \(printed)")
        // The store is untouched and opens normally for its owner.
        let e = try Engine.open(directory: dir.path)
        e.close()

        // With the default modes another user cannot read the store at all.
        let privateDir = TemporaryDirectory()
        let owner = try Engine.open(directory: privateDir.path)
        try owner.put("k", "v", in: owner.defaultKeySpace)
        owner.close()
        let outsider = Process()
        outsider.executableURL = URL(fileURLWithPath: setpriv)
        outsider.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", binary, "read", privateDir.path]
        let outsiderOut = Pipe()
        outsider.standardOutput = outsiderOut
        outsider.standardError = Pipe()
        try outsider.run()
        let leaked = String(decoding: outsiderOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        outsider.waitUntilExit()
        #expect(outsider.terminationStatus != 0)
        #expect(!leaked.hasPrefix("keys"), "another user read the store: \(leaked)")
    }
}
