/// Searches of sorted 64-bit keys that start where the target would lie if the keys were evenly
/// spread, then gallop away from that guess and finish with a binary search: object ids are
/// dense, so the guess is usually the answer or next to it, one or two cache lines where a
/// binary search over hundreds of entries touches ten; any other distribution costs at most
/// twice a binary search. The index summary (block last keys as words) and the id block table
/// (blocks' last ids) both search this way; `key(i)` reads entry `i`'s key.
enum InterpolationSearch {
    /// The first position in `0 ..< n` whose key is >= `t` (`n` when none is).
    @inline(__always)
    static func firstNotBelow(_ t: UInt64, count n: Int, key: (Int) -> UInt64) -> Int {
        guard n > 0, key(0) < t else { return 0 }
        guard key(n - 1) >= t else { return n }
        // key(0) < t <= key(n - 1): the span is positive, and the guess at most n - 1.
        let span = key(n - 1) - key(0)
        let guess = Int(span.dividingFullWidth((t - key(0)).multipliedFullWidth(by: UInt64(n - 1))).quotient)
        // Bracket the answer: key(lo) < t <= key(hi), galloping away from the guess.
        guard key(guess) >= t else { return firstFailing(after: guess, before: n - 1, key: key) { $0 < t } }
        var lo = 0, hi = guess
        var step = 1
        while step <= hi {
            if key(hi - step) < t {
                lo = hi - step
                break
            }
            hi -= step
            step &<<= 1
        }
        while hi - lo > 1 {
            let mid = (lo &+ hi) >> 1
            if key(mid) < t { lo = mid } else { hi = mid }
        }
        return hi
    }

    /// The first position in `lo + 1 ... hi` whose key fails `holds`, where `key(lo)` holds and
    /// `key(hi)` fails (or `hi` is the count): galloping right from `lo`, then a binary search.
    @inline(__always)
    static func firstFailing(after lo: Int, before hi: Int, key: (Int) -> UInt64, _ holds: (UInt64) -> Bool) -> Int {
        var lo = lo, hi = hi
        var step = 1
        while lo + step < hi {
            if !holds(key(lo + step)) {
                hi = lo + step
                break
            }
            lo += step
            step &<<= 1
        }
        while hi - lo > 1 {
            let mid = (lo &+ hi) >> 1
            if holds(key(mid)) { lo = mid } else { hi = mid }
        }
        return hi
    }
}
