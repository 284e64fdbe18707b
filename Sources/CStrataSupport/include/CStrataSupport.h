#ifndef STRATA_CSTRATASUPPORT_H
#define STRATA_CSTRATASUPPORT_H

#include <stddef.h>
#include <stdint.h>

/// CRC-32C (Castagnoli), as used by every checksum Strata writes (see SPEC.md §Checksums).
/// `crc` is the running value: pass 0 for a fresh checksum, or a previous result to extend it.
uint32_t strata_crc32c_extend(uint32_t crc, const void *data, size_t length);
// The CRC-32C of three short pieces in a row (strata_crc32c_extend over each in turn, from 0).
uint32_t strata_crc32c_pieces(const void *a, size_t a_length, const void *b, size_t b_length,
                              const void *c, size_t c_length);

// Acquire/release access to pointer-sized words in raw memory. The memtable's skip list lives in an
// arena; one writer links nodes in with a release store, readers follow links with acquire loads,
// so readers never take a lock (the same protocol as LevelDB's skiplist.h).
static inline void *strata_load_acquire_ptr(void *const *slot) {
    return __atomic_load_n((void **)slot, __ATOMIC_ACQUIRE);
}
static inline void strata_store_release_ptr(void **slot, void *value) {
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
}
static inline void *strata_load_relaxed_ptr(void *const *slot) {
    return __atomic_load_n((void **)slot, __ATOMIC_RELAXED);
}
static inline void strata_store_relaxed_ptr(void **slot, void *value) {
    __atomic_store_n(slot, value, __ATOMIC_RELAXED);
}

// The memtable's bloom filter: its one writer ORs bits in, readers test them, without a lock.
// A load and a store, not a locked read-modify-write: no other thread writes the word, and the
// locked instruction was most of a replayed entry's cost.
static inline void strata_or_single_writer_u64(uint64_t *word, uint64_t bits) {
    __atomic_store_n(word, __atomic_load_n(word, __ATOMIC_RELAXED) | bits, __ATOMIC_RELAXED);
}
static inline uint64_t strata_load_relaxed_u64(const uint64_t *word) {
    return __atomic_load_n(word, __ATOMIC_RELAXED);
}

// Bytes shared by reading threads without a lock (an encrypted segment's per-block read
// counts): relaxed loads and stores; a lost update only delays or repeats a decision.
static inline uint8_t strata_load_relaxed_u8(const uint8_t *byte) {
    return __atomic_load_n(byte, __ATOMIC_RELAXED);
}
static inline void strata_store_relaxed_u8(uint8_t *byte, uint8_t value) {
    __atomic_store_n(byte, value, __ATOMIC_RELAXED);
}

// Publishes `desired` in `slot` if it still holds `expected` (release; acquire on failure):
// the one thread that wins keeps what it made, the others free theirs.
static inline int strata_cas_ptr(void **slot, void *expected, void *desired) {
    return __atomic_compare_exchange_n(slot, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

// A hint to start loading the cache line at `address`: batched reads issue these for many keys
// before touching any, so that their memory misses overlap instead of following one another.
// Never faults, whatever the address.
static inline void strata_prefetch(const void *address) {
    __builtin_prefetch(address, 0, 3);
}

// Copies between memory and a shared file mapping without letting a bus error end the process.
// A store or load on a mapped page the kernel cannot back (the file was truncated by another
// process, a media error, a copy-on-write file system out of space) raises SIGBUS; inside these
// copies a handler installed once (chaining to any previous handler for faults that are not
// theirs) turns it into a return value of -1, and the caller throws a typed error.
// Returns 0 when every byte was copied.
int strata_guarded_copy(void *destination, const void *source, size_t length);

// strata_read_checked_entry's failures (a value's size otherwise).
#define STRATA_ENTRY_FAULT (-1)
#define STRATA_ENTRY_OUT_OF_RANGE (-2)
#define STRATA_ENTRY_TOO_LARGE (-3)
#define STRATA_ENTRY_CHECKSUM (-4)

// Reads the format 5 id block entry at `entry_offset` of the block at `block` (in a segment's
// mapping; entries of `entry_bytes`, 16 or 8, SPEC.md §6.1.1) and copies its value into
// `value_out`: from the entry's value offset to the next entry's (or to `values_end` for the
// block's last entry, `is_last`), both copies guarded against bus errors; then checks the
// entry's checksum over `key`, its trailer and the value. Returns the value's size, with the
// trailer in `*trailer_out`, or a STRATA_ENTRY_ failure. The caller has checked that the block
// lies in the mapping and the entry in the block (the head and footer follow the last entry,
// so the next offset's 4 bytes are always inside it). `sealed`: the value is sealed (an
// encrypted segment, SPEC.md §14.3) and the caller opens it, whose tag covers all the checksum
// would (the key and trailer as its additional data, the value's every byte, the offsets by
// which bytes it opens): the checksum is not computed.
int64_t strata_read_checked_entry(const uint8_t *block, uint64_t entry_offset, uint32_t entry_bytes, int is_last,
                                  uint64_t values_end, const uint8_t *key, size_t key_length, uint8_t *value_out,
                                  size_t capacity, uint64_t *trailer_out, int sealed);

// The second half of strata_read_checked_entry, for a caller that copied the entry and the next
// offset (`entry_bytes` + 4 bytes at `entry`) itself: a batched read, which overlaps the
// entries' memory misses before the values'.
int64_t strata_read_checked_value(const uint8_t *block, const uint8_t *entry, uint32_t entry_bytes, int is_last,
                                  uint64_t values_end, const uint8_t *key, size_t key_length, uint8_t *value_out,
                                  size_t capacity, uint64_t *trailer_out, int sealed);

// Happens-before edges that ThreadSanitizer cannot see by itself. A memtable's arena chunks go
// back to a pool when the memtable is freed, and the thread that frees it is whichever dropped
// the last reference. Swift's reference counting runs in a runtime built without TSan's
// instrumentation, so the edge from a reader's last access, through its release of the
// memtable, to the freeing thread is invisible, and a writer reusing the chunk looks like a
// race. A reader calls `strata_tsan_release` on the memtable before it lets go; the memtable's
// deinit calls `strata_tsan_acquire`. The functions live in tsan_annotations.c, which SwiftPM
// compiles with `-fsanitize=thread` when the build is sanitized (a header's inline function is
// compiled by Swift's importer, which is not told); `strata_tsan_active` is 1 in such a build,
// so that callers test one constant instead of making a call on every read.
extern const int strata_tsan_active;
void strata_tsan_acquire(const void *address);
void strata_tsan_release(const void *address);

#endif
