extension FileSystem {
    /// Replaces the small file at `path` with `bytes` so that a crash leaves the old file or
    /// the new one, never a mix: writes and syncs `path.tmp`, then renames it over `path`. The
    /// caller syncs the directory when the rename must be durable before it goes on.
    func replaceFile(at path: String, with bytes: [UInt8]) throws {
        let tmpPath = path + FormatConstants.tempSuffix
        let file = try openWritable(tmpPath, truncate: true)
        do {
            try bytes.withUnsafeBytes { try file.append($0) }
            try file.sync()
        } catch {
            try? file.close()
            try? removeFile(tmpPath)
            throw error
        }
        try file.close()
        try rename(tmpPath, to: path)
    }
}
