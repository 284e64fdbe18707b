// One format 5 id block entry read out of a segment's mapping (SPEC.md §6.1.1): the 20-byte
// entry, then the value it names, in one guarded region (one sigsetjmp for both copies, see
// fault_guard.c), then the entry's CRC-32C over the key looked for, the trailer and the value.
// Written in C because the read is the whole of an object's storage cost: through the Swift
// file abstraction it was two existential calls, two guarded copies and three CRC calls, each
// with its own alignment prologue (about 640 instructions a read, callgrind; this is ~150).
#include "CStrataSupport.h"

#include <setjmp.h>
#include <string.h>

int strata_guarded_copy_pair(void *entry_out, const void *entry, size_t entry_length, uint64_t value_end_override,
                             const uint8_t *block, uint64_t values_end, uint8_t *value_out,
                             size_t capacity, uint64_t *value_length);

#if defined(__x86_64__)
#include <nmmintrin.h>

__attribute__((target("sse4.2")))
static uint64_t crc_short_sse42(uint64_t c, const uint8_t *p, size_t n) {
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        n -= 8;
    }
    while (n--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return c;
}
#endif

// The CRC-32C of three short pieces in a row, as strata_crc32c_extend over each in turn.
static uint32_t crc_of_pieces(const uint8_t *a, size_t an, const uint8_t *b, size_t bn, const uint8_t *c, size_t cn) {
#if defined(__x86_64__)
    static int has_sse42 = -1;
    int h = __atomic_load_n(&has_sse42, __ATOMIC_RELAXED);
    if (h < 0) {
        __builtin_cpu_init();
        h = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        __atomic_store_n(&has_sse42, h, __ATOMIC_RELAXED);
    }
    if (h) {
        uint64_t s = 0xFFFFFFFFu;
        s = crc_short_sse42(s, a, an);
        s = crc_short_sse42(s, b, bn);
        s = crc_short_sse42(s, c, cn);
        return ~(uint32_t)s;
    }
#endif
    uint32_t crc = strata_crc32c_extend(0, a, an);
    crc = strata_crc32c_extend(crc, b, bn);
    return strata_crc32c_extend(crc, c, cn);
}

// The trailer of a format 5 entry: after its offset and checksum, or 1 (sequence 0, a value)
// in a block whose 8-byte entries leave it out.
static uint64_t entry_trailer(const uint8_t *entry, uint32_t entry_bytes) {
    uint64_t trailer = 1;
    if (entry_bytes == 16) memcpy(&trailer, entry + 8, 8);
    return trailer;
}

static int64_t check_entry(const uint8_t *entry, uint32_t entry_bytes, const uint8_t *key, size_t key_length,
                           const uint8_t *value, uint64_t length, uint64_t *trailer_out) {
    uint64_t trailer = entry_trailer(entry, entry_bytes);
    uint32_t stored;
    memcpy(&stored, entry + 4, 4);
    uint8_t trailer_bytes[8];
    memcpy(trailer_bytes, &trailer, 8);
    uint32_t crc = crc_of_pieces(key, key_length, trailer_bytes, 8, value, (size_t)length);
    uint32_t masked = ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
    if (masked != stored) return STRATA_ENTRY_CHECKSUM;
    *trailer_out = trailer;
    return (int64_t)length;
}

int64_t strata_read_checked_value(const uint8_t *block, const uint8_t *entry, uint32_t entry_bytes, int is_last,
                                  uint64_t values_end, const uint8_t *key, size_t key_length, uint8_t *value_out,
                                  size_t capacity, uint64_t *trailer_out) {
    uint32_t offset, next;
    memcpy(&offset, entry, 4);
    memcpy(&next, entry + entry_bytes, 4);
    uint64_t end = is_last ? values_end : next;
    if (offset > end || end > values_end) return STRATA_ENTRY_OUT_OF_RANGE;
    uint64_t size = end - offset;
    if (size > capacity) return STRATA_ENTRY_TOO_LARGE;
    if (size > 0 && strata_guarded_copy(value_out, block + offset, (size_t)size) != 0) return STRATA_ENTRY_FAULT;
    return check_entry(entry, entry_bytes, key, key_length, value_out, size, trailer_out);
}

int64_t strata_read_checked_entry(const uint8_t *block, uint64_t entry_offset, uint32_t entry_bytes, int is_last,
                                  uint64_t values_end, const uint8_t *key, size_t key_length, uint8_t *value_out,
                                  size_t capacity, uint64_t *trailer_out) {
    uint8_t entry[20];
    uint64_t length = 0;
    int r = strata_guarded_copy_pair(entry, block + entry_offset, entry_bytes + 4, is_last ? values_end : UINT64_MAX,
                                     block, values_end, value_out, capacity, &length);
    if (r != 0) return r;
    return check_entry(entry, entry_bytes, key, key_length, value_out, length, trailer_out);
}
