import ArgumentParser
import Foundation
import Strata
import StrataStorage

/// Exit statuses of every command (listed in `strata --help`).
enum ExitStatus {
    /// `verify` found damage.
    static let problemsFound: Int32 = 1
    /// The command could not run: no such directory, not a store, locked, newer format, damaged.
    static let failed: Int32 = 2
}

/// A failure reported as one line on standard error: what happened and, where there is one,
/// what to do.
struct ToolFailure: Error {
    var message: String

    /// The one-line explanation of an error from opening or reading the store in `directory`.
    init(_ error: Error, directory: String) {
        let storage: StorageError?
        switch error {
        case let e as ToolFailure: self = e; return
        case let e as StorageError: storage = e
        case let StrataError.storage(e): storage = e
        case StrataError.encryptionKeyRequired: storage = .encryptionKeyRequired(file: directory)
        case StrataError.wrongEncryptionKey: storage = .wrongEncryptionKey(file: directory)
        case StrataError.storeNotEncrypted: storage = .notEncrypted(file: directory)
        case let StrataError.unsupportedFormatVersion(found, supported):
            message = "\(directory) was written by a newer Strata (object format \(found); this strata reads up to \(supported)): use a newer strata"
            return
        default: storage = nil
        }
        switch storage {
        case .locked?:
            message = "\(directory) is locked: another process has it open for writing. Stop that process (or wait for it to close the store) and retry; read-only commands (inspect, verify, dump, stats) can share a store only with other readers"
        case .notAStore?:
            message = "\(directory) is not a Strata store (it has no CURRENT file)"
        case let .unsupportedFormatVersion(file, found, supported)?:
            message = "\(directory) was written by a newer Strata (\(file) has format \(found); this strata reads up to \(supported)): use a newer strata"
        case let .corruption(file, offset, reason)?:
            message = "\(directory) is damaged: \(file) at offset \(offset): \(reason). Run `strata verify \(directory)` for a full report"
        case .encryptionKeyRequired?:
            message = "\(directory) is encrypted: give its key with --key-file PATH"
        case .wrongEncryptionKey?:
            message = "the key in --key-file does not open \(directory): it is encrypted with another key"
        case .notEncrypted?:
            message = "\(directory) is not encrypted: leave out --key-file (`strata encrypt` encrypts it)"
        case let .badMagic(file)?:
            message = "\(directory) is damaged: \(file) is not a Strata file. Run `strata verify \(directory)` for a full report"
        case let e?:
            message = "\(directory): \(e)"
        case nil:
            message = "\(directory): \(error)"
        }
    }

    init(message: String) { self.message = message }
}

/// Runs a command body; a failure becomes one line on standard error and exit status 2, and,
/// with `json`, also a JSON object on standard output (`{"error": …, "status": 2}`), so that a
/// caller that asked for JSON gets JSON whatever happens.
func reportingFailures(directory: String, json: Bool = false, _ body: () throws -> Void) throws {
    do {
        try body()
    } catch let exit as ExitCode {
        throw exit
    } catch {
        let failure = ToolFailure(error, directory: directory)
        FileHandle.standardError.write(Data("strata: error: \(failure.message)\n".utf8))
        if json {
            print(JSONValue.object([("error", .string(failure.message)), ("status", .int(Int64(ExitStatus.failed)))]).text)
        }
        throw ExitCode(ExitStatus.failed)
    }
}

/// Checks that `directory` exists and holds a store before anything opens it, so that a typo
/// gets a plain message instead of an engine error (and read-only opens never create anything).
func checkStoreDirectory(_ directory: String) throws {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else {
        throw ToolFailure(message: "no such directory: \(directory)")
    }
    guard isDirectory.boolValue else { throw ToolFailure(message: "\(directory) is a file, not a store directory") }
    guard FileManager.default.fileExists(atPath: (directory as NSString).appendingPathComponent("CURRENT")) else {
        throw ToolFailure(message: "\(directory) is not a Strata store (it has no CURRENT file)")
    }
}

/// Opens the object layer read-only, or returns nil for a store that holds key spaces only.
func openObjectStore(_ directory: String, key: [UInt8]?) throws -> Store? {
    var options = StoreOptions()
    options.readOnly = true
    options.engine.encryptionKey = key
    do {
        return try Store(directoryPath: directory, options: options)
    } catch StrataError.storage(.notAStore) {
        return nil
    }
}

/// Opens the engine read-only.
func openEngineReadOnly(_ directory: String, key: [UInt8]?) throws -> Engine {
    var options = EngineOptions()
    options.readOnly = true
    options.encryptionKey = key
    options.createIfMissing = false
    return try Engine.open(directory: directory, options: options)
}
