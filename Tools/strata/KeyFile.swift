import Foundation

/// An encryption key read from a file (`--key-file PATH`), never from the command line, where
/// any user of the machine could read it in the process list or a shell's history. The file
/// holds the 32 bytes of the key, raw, or as 64 hexadecimal digits (a trailing newline allowed).
enum KeyFile {
    static func read(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ToolFailure(message: "cannot read the key file \(path)")
        }
        let bytes = Array(data)
        if bytes.count == 32 { return bytes }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.utf8.count == 64, let key = hex(text) { return key }
        throw ToolFailure(message: "the key file \(path) holds \(bytes.count) bytes: a key is 32 bytes, raw or as 64 hexadecimal digits")
    }

    private static func hex(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var digits = Array(text.utf8)[...]
        while let hi = digits.popFirst(), let lo = digits.popFirst() {
            guard let h = value(hi), let l = value(lo) else { return nil }
            out.append(h << 4 | l)
        }
        return out
    }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        case 0x41...0x46: c - 0x41 + 10
        default: nil
        }
    }
}
