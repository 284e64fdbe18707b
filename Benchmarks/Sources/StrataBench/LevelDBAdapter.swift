import CLevelDB

/// LevelDB 1.23 through its C API, configured as a user tuning for the same job would: bloom
/// filter of 10 bits per key and the same block cache size as Strata (64 MiB); other options
/// are LevelDB's defaults (4 MiB write buffer, 4 KiB blocks, snappy).
final class LevelDBEngine: BenchEngine {
    static let name = "LevelDB"
    let db: OpaquePointer
    let options: OpaquePointer
    let cache: OpaquePointer
    let filter: OpaquePointer
    let writeOptions: OpaquePointer
    let syncOptions: OpaquePointer
    let readOptions: OpaquePointer
    let batch: OpaquePointer

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    init(directory: String) throws {
        options = leveldb_options_create()
        leveldb_options_set_create_if_missing(options, 1)
        cache = leveldb_cache_create_lru(64 << 20)
        leveldb_options_set_cache(options, cache)
        filter = leveldb_filterpolicy_create_bloom(10)
        leveldb_options_set_filter_policy(options, filter)
        var err: UnsafeMutablePointer<CChar>?
        guard let handle = leveldb_open(options, directory, &err) else {
            let message = err.map { String(cString: $0) } ?? "unknown"
            throw Failure(description: "leveldb_open: \(message)")
        }
        db = handle
        writeOptions = leveldb_writeoptions_create()
        syncOptions = leveldb_writeoptions_create()
        leveldb_writeoptions_set_sync(syncOptions, 1)
        readOptions = leveldb_readoptions_create()
        batch = leveldb_writebatch_create()
    }

    func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        leveldb_writebatch_put(batch, key.baseAddress!.assumingMemoryBound(to: CChar.self), key.count,
                               value.baseAddress!.assumingMemoryBound(to: CChar.self), value.count)
    }

    func commit(sync: Bool) throws {
        var err: UnsafeMutablePointer<CChar>?
        leveldb_write(db, sync ? syncOptions : writeOptions, batch, &err)
        leveldb_writebatch_clear(batch)
        if let err {
            defer { leveldb_free(err) }
            throw Failure(description: String(cString: err))
        }
    }

    func putConcurrently(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, sync: Bool) throws {
        var err: UnsafeMutablePointer<CChar>?
        leveldb_put(db, sync ? syncOptions : writeOptions, key.baseAddress!.assumingMemoryBound(to: CChar.self), key.count,
                    value.baseAddress!.assumingMemoryBound(to: CChar.self), value.count, &err)
        if let err {
            defer { leveldb_free(err) }
            throw Failure(description: String(cString: err))
        }
    }

    func get(key: UnsafeRawBufferPointer) throws -> Bool {
        var err: UnsafeMutablePointer<CChar>?
        var length = 0
        let value = leveldb_get(db, readOptions, key.baseAddress!.assumingMemoryBound(to: CChar.self), key.count, &length, &err)
        if let err {
            defer { leveldb_free(err) }
            throw Failure(description: String(cString: err))
        }
        if let value {
            leveldb_free(value)
            return true
        }
        return false
    }

    func scanAll() throws -> (entries: Int, bytes: Int) {
        let it = leveldb_create_iterator(db, readOptions)!
        defer { leveldb_iter_destroy(it) }
        var n = 0, bytes = 0
        leveldb_iter_seek_to_first(it)
        var klen = 0, vlen = 0
        while leveldb_iter_valid(it) != 0 {
            _ = leveldb_iter_key(it, &klen)
            _ = leveldb_iter_value(it, &vlen)
            n += 1
            bytes += klen + vlen
            leveldb_iter_next(it)
        }
        return (n, bytes)
    }

    func compactAll() throws {
        leveldb_compact_range(db, nil, 0, nil, 0)
    }

    func close() {
        leveldb_close(db)
        leveldb_writebatch_destroy(batch)
        leveldb_readoptions_destroy(readOptions)
        leveldb_writeoptions_destroy(writeOptions)
        leveldb_writeoptions_destroy(syncOptions)
        leveldb_options_destroy(options)
        leveldb_cache_destroy(cache)
        leveldb_filterpolicy_destroy(filter)
    }
}
