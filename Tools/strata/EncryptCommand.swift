import ArgumentParser
import Foundation
import Strata
import StrataStorage

/// `strata encrypt STORE --new-key-file NEW [--key-file OLD]`: encrypts a plaintext store, or
/// re-encrypts an encrypted one under a new key.
struct EncryptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encrypt",
        abstract: "Encrypt a store (or change its key).",
        discussion: """
        Writes every file of STORE again, sealed with AES-256-GCM under the key in --new-key-file
        (32 bytes, raw or as 64 hex digits). With --key-file, STORE is encrypted already and that
        is its current key: the store moves to the new key. The switch is one rename: a crash or
        power cut at any moment leaves a store that opens with the old key (or none) or with the
        new one. STORE must not be open in any process. Keys are only ever read from files.

        Examples:
          head -c 32 /dev/urandom > shop.key && chmod 600 shop.key
          strata encrypt /tmp/shop --new-key-file shop.key
          strata encrypt /tmp/shop --key-file shop.key --new-key-file shop-2027.key
        """)

    @OptionGroup var store: StoreArguments

    @Option(name: .customLong("new-key-file"), help: "A file holding the key the store gets.")
    var newKeyFile: String

    func run() throws {
        try reportingFailures(directory: store.directory, json: store.json) {
            try checkStoreDirectory(store.directory)
            let report = try Store.changeEncryptionKey(directoryPath: store.directory, from: try store.encryptionKey().map { Data($0) },
                                                       to: Data(try KeyFile.read(newKeyFile)))
            printKeyChange(report, verb: "encrypted", directory: store.directory, json: store.json)
        }
    }
}

/// `strata decrypt STORE --key-file KEY`: writes an encrypted store back in plaintext.
struct DecryptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decrypt",
        abstract: "Decrypt an encrypted store.",
        discussion: """
        Writes every file of STORE again in plaintext; --key-file names its key. Crash-safe like
        `encrypt`. STORE must not be open in any process.

        Example:
          strata decrypt /tmp/shop --key-file shop.key
        """)

    @OptionGroup var store: StoreArguments

    func validate() throws {
        if store.keyFile == nil { throw ValidationError("decrypt needs the store's key: --key-file PATH") }
    }

    func run() throws {
        try reportingFailures(directory: store.directory, json: store.json) {
            try checkStoreDirectory(store.directory)
            let report = try Store.changeEncryptionKey(directoryPath: store.directory, from: try store.encryptionKey().map { Data($0) }, to: nil)
            printKeyChange(report, verb: "decrypted", directory: store.directory, json: store.json)
        }
    }
}

private func printKeyChange(_ report: KeyChangeReport, verb: String, directory: String, json: Bool) {
    if json {
        print(JSONValue.object([
            ("directory", .string(directory)), ("segments", .int(Int64(report.segments))),
            ("bytesWritten", .uint(report.bytesWritten)), ("seconds", .double(report.seconds)),
        ]).text)
    } else {
        print("\(verb) \(directory): \(report.segments) segments, \(HumanReadable.bytes(report.bytesWritten)) written in \(String(format: "%.2f", report.seconds)) s")
    }
}
