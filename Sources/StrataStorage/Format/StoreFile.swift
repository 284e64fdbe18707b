/// The files of a store directory and their names (SPEC.md §2): the one place that says how
/// a log, a segment or a manifest is named, and what a name found in the directory is.
///
/// Numbers are written in decimal, zero-padded to six digits, with no sign: `000042.wal`,
/// `000043.seg`, `MANIFEST-000044`; `CURRENT`, `LOCK`, and the temporary files of CURRENT and
/// STATS.
package enum StoreFile: Equatable {
    case wal(UInt64), segment(UInt64), manifest(UInt64), current, lock, temp

    package static func walName(_ n: UInt64) -> String { String(n).leftPadded(to: 6) + FormatConstants.walSuffix }
    package static func segmentName(_ n: UInt64) -> String { String(n).leftPadded(to: 6) + FormatConstants.segmentSuffix }
    package static func manifestName(_ n: UInt64) -> String { FormatConstants.manifestPrefix + String(n).leftPadded(to: 6) }

    /// What a name in the store directory is, when it is exactly a name the engine gives: a
    /// number written the way the engine writes it and within ``FormatConstants/maxFileNumber``,
    /// so that arithmetic on it cannot overflow; temp files are CURRENT's and STATS's. Anything
    /// else (another program's file, `18446744073709551615.wal`, `+12.seg`) is not the store's:
    /// never read, never removed.
    package static func parse(_ name: String) -> StoreFile? {
        if name == FormatConstants.currentFileName { return .current }
        if name == FormatConstants.lockFileName { return .lock }
        if name == FormatConstants.currentFileName + FormatConstants.tempSuffix
            || name == FormatConstants.statsFileName + FormatConstants.tempSuffix { return .temp }
        if name.hasPrefix(FormatConstants.manifestPrefix) {
            return fileNumber(name.dropFirst(FormatConstants.manifestPrefix.count)).map { .manifest($0) }
        }
        if name.hasSuffix(FormatConstants.walSuffix) {
            return fileNumber(name.dropLast(FormatConstants.walSuffix.count)).map { .wal($0) }
        }
        if name.hasSuffix(FormatConstants.segmentSuffix) {
            return fileNumber(name.dropLast(FormatConstants.segmentSuffix.count)).map { .segment($0) }
        }
        return nil
    }

    /// The number of a file name's numeric part, if it is in the engine's canonical form.
    private static func fileNumber(_ digits: Substring) -> UInt64? {
        guard digits.count >= 6, digits.count <= 20, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              let n = UInt64(digits), n <= FormatConstants.maxFileNumber,
              String(n).leftPadded(to: 6) == digits else { return nil }
        return n
    }
}

extension String {
    /// The string with `pad` in front up to `width` characters: file and archive object numbers.
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
