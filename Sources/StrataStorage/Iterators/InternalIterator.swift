/// An iterator over internal keys (user key + trailer) in internal-key order, in both
/// directions. `key` and `value` stay valid until the iterator moves. An iterator that meets
/// damaged data becomes invalid and reports it in `error`.
protocol InternalIterator: AnyObject {
    var isValid: Bool { get }
    var key: UnsafeRawBufferPointer { get }
    var value: UnsafeRawBufferPointer { get }
    var error: StorageError? { get }
    func seekToFirst()
    func seekToLast()
    /// First entry with internal key >= `target`.
    func seek(_ target: UnsafeRawBufferPointer)
    func next()
    func prev()
}

/// Iterates one memtable. Holds the memtable alive, so its arena stays valid.
final class MemtableIterator: InternalIterator {
    private let table: Memtable
    // Iterator and arena state belongs to one thread at a time: `@exclusivity(unchecked)` spares
    // the runtime checks on every step.
    @exclusivity(unchecked) private var node: UnsafeMutableRawPointer?

    init(_ table: Memtable) { self.table = table }

    deinit {
        // See ``SanitizerEdges``: this iterator's reads of the arena come before the
        // memtable's deinit, whichever thread runs it.
        SanitizerEdges.release(table)
    }

    var isValid: Bool { node != nil }
    var error: StorageError? { nil }
    var key: UnsafeRawBufferPointer { Memtable.internalKey(node!) }
    var value: UnsafeRawBufferPointer { Memtable.value(node!) }

    func seekToFirst() { node = table.first() }
    func seekToLast() { node = table.last() }

    func seek(_ target: UnsafeRawBufferPointer) {
        node = table.seek(InternalKey.userKey(target), trailer: InternalKey.trailer(target))
    }

    func next() {
        guard let n = node else { return }
        node = Memtable.next(n, 0)
    }

    func prev() {
        guard let n = node else { return }
        node = table.seekBefore(Memtable.userKey(n), trailer: Memtable.trailer(n))
    }
}

/// Iterates one segment: the index block picks data blocks, read through the block cache.
/// Index entries are stored whole, one per restart point, so the iterator keeps the current
/// entry's position instead of an iterator over the index block, and a seek finds it the way a
/// point read does (narrowed by the segment's key prefixes): one allocation less per segment a
/// scan opens, and no linear parse.
package final class SegmentIterator: InternalIterator {
    private let reader: SegmentReader
    /// The index entry of the data block `dataIterator` reads.
    @exclusivity(unchecked) private var indexPosition = 0
    @exclusivity(unchecked) private var dataIterator: BlockIterator?
    @exclusivity(unchecked) private(set) var error: StorageError?
    private let fillCache: Bool

    init(reader: SegmentReader, fillCache: Bool) {
        self.reader = reader
        self.fillCache = fillCache
    }

    package var isValid: Bool { dataIterator?.isValid ?? false }
    package var key: UnsafeRawBufferPointer { dataIterator!.key }
    package var value: UnsafeRawBufferPointer { dataIterator!.value }

    private func fail(_ e: Error) {
        error = (e as? StorageError) ?? .io(operation: "read", path: reader.path, errno: 0)
        dataIterator = nil
    }

    /// Loads the data block of index entry `position`; false past either end or on damage.
    private func loadBlock(at position: Int) -> Bool {
        do {
            guard position >= 0, try position < reader.indexEntryCount() else {
                dataIterator = nil
                return false
            }
            let h = try reader.blockHandle(atIndexEntry: position)
            dataIterator = try reader.dataBlock(h, fillCache: fillCache).makeIterator()
            indexPosition = position
            return true
        } catch {
            fail(error)
            return false
        }
    }

    private func checkData() -> Bool {
        if let d = dataIterator, d.corrupted {
            fail(StorageError.corruption(file: reader.path, offset: 0, reason: "malformed data block"))
            return false
        }
        return true
    }

    /// Moves forward over blocks until a valid entry or the end.
    private func skipEmptyForward() {
        while let d = dataIterator, !d.isValid {
            guard checkData() else { return }
            guard loadBlock(at: indexPosition + 1) else { return }
            dataIterator!.seekToFirst()
        }
    }

    private func skipEmptyBackward() {
        while let d = dataIterator, !d.isValid {
            guard checkData() else { return }
            guard loadBlock(at: indexPosition - 1) else { return }
            dataIterator!.seekToLast()
        }
    }

    package func seekToFirst() {
        guard error == nil else { return }
        guard loadBlock(at: 0) else { return }
        dataIterator!.seekToFirst()
        skipEmptyForward()
    }

    func seekToLast() {
        guard error == nil else { return }
        let count: Int
        do { count = try reader.indexEntryCount() } catch {
            fail(error)
            return
        }
        guard loadBlock(at: count - 1) else { return }
        dataIterator!.seekToLast()
        skipEmptyBackward()
    }

    func seek(_ target: UnsafeRawBufferPointer) {
        guard error == nil else { return }
        let position: Int
        do {
            guard let found = try reader.indexPosition(target) else { throw reader.indexCorruption }
            position = found
        } catch {
            fail(error)
            return
        }
        guard loadBlock(at: position) else { return }
        dataIterator!.seek(target)
        skipEmptyForward()
    }

    package func next() {
        guard let d = dataIterator, d.isValid else { return }
        d.next()
        skipEmptyForward()
    }

    func prev() {
        guard let d = dataIterator, d.isValid else { return }
        d.prev()
        skipEmptyBackward()
    }
}
