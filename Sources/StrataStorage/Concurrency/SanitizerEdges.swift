import CStrataSupport

/// Happens-before edges for ThreadSanitizer that Swift's reference counting carries but TSan
/// cannot see (CStrataSupport.h says why): a reader's last access to a memtable's arena, then
/// whichever thread frees the memtable and gives its chunks back to the pool. In a build
/// without ThreadSanitizer each is one load of a constant and a branch never taken.
enum SanitizerEdges {
    /// Everything this thread did with `object`'s memory happens before a later `acquire`.
    @inline(__always)
    static func release(_ object: AnyObject) {
        if strata_tsan_active != 0 { strata_tsan_release(Unmanaged.passUnretained(object).toOpaque()) }
    }

    /// Every `release` of `object` so far happens before what this thread does next.
    @inline(__always)
    static func acquire(_ object: AnyObject) {
        if strata_tsan_active != 0 { strata_tsan_acquire(Unmanaged.passUnretained(object).toOpaque()) }
    }
}
