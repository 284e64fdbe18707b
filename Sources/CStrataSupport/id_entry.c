// One format 5 id block entry read out of a segment's mapping (SPEC.md §6.1.1): the entry (16
// or 8 bytes) and the next entry's value offset, then the value between the two offsets, in one
// guarded region (one sigsetjmp for both copies, see fault_guard.c), then the entry's CRC-32C over
// the key looked for, the trailer and the value. Written in C because the read is the whole of an
// object's storage cost: through the Swift file abstraction it was two existential calls, two
// guarded copies and three CRC calls, each with its own alignment prologue (callgrind totals of
// the forward phase at scale 0.1 over its ~400,000 reads: about 880 instructions a read that way,
// 500 this way, the id block table's lookup included).
#include "CStrataSupport.h"

#include <setjmp.h>
#include <string.h>

int strata_guarded_copy_pair(void *entry_out, const void *entry, size_t entry_length, uint64_t value_end_override,
                             const uint8_t *block, uint64_t values_end, uint8_t *value_out,
                             size_t capacity, uint64_t *value_length);

// The trailer of a format 5 entry: after its offset and checksum, or 1 (sequence 0, a value)
// in a block whose 8-byte entries leave it out.
static uint64_t entry_trailer(const uint8_t *entry, uint32_t entry_bytes) {
    uint64_t trailer = 1;
    if (entry_bytes == 16) memcpy(&trailer, entry + 8, 8);
    return trailer;
}

static int64_t check_entry(const uint8_t *entry, uint32_t entry_bytes, const uint8_t *key, size_t key_length,
                           const uint8_t *value, uint64_t length, uint64_t *trailer_out, int sealed) {
    uint64_t trailer = entry_trailer(entry, entry_bytes);
    if (sealed) {
        // The caller opens the value with its tag, which stands for this checksum.
        *trailer_out = trailer;
        return (int64_t)length;
    }
    uint32_t stored;
    memcpy(&stored, entry + 4, 4);
    uint8_t trailer_bytes[8];
    memcpy(trailer_bytes, &trailer, 8);
    uint32_t crc = strata_crc32c_pieces(key, key_length, trailer_bytes, 8, value, (size_t)length);
    uint32_t masked = ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
    if (masked != stored) return STRATA_ENTRY_CHECKSUM;
    *trailer_out = trailer;
    return (int64_t)length;
}

int64_t strata_read_checked_value(const uint8_t *block, const uint8_t *entry, uint32_t entry_bytes, int is_last,
                                  uint64_t values_end, const uint8_t *key, size_t key_length, uint8_t *value_out,
                                  size_t capacity, uint64_t *trailer_out, int sealed) {
    uint32_t offset, next;
    memcpy(&offset, entry, 4);
    memcpy(&next, entry + entry_bytes, 4);
    uint64_t end = is_last ? values_end : next;
    if (offset > end || end > values_end) return STRATA_ENTRY_OUT_OF_RANGE;
    uint64_t size = end - offset;
    if (size > capacity) return STRATA_ENTRY_TOO_LARGE;
    if (size > 0 && strata_guarded_copy(value_out, block + offset, (size_t)size) != 0) return STRATA_ENTRY_FAULT;
    return check_entry(entry, entry_bytes, key, key_length, value_out, size, trailer_out, sealed);
}

int64_t strata_read_checked_entry(const uint8_t *block, uint64_t entry_offset, uint32_t entry_bytes, int is_last,
                                  uint64_t values_end, const uint8_t *key, size_t key_length, uint8_t *value_out,
                                  size_t capacity, uint64_t *trailer_out, int sealed) {
    uint8_t entry[20];
    uint64_t length = 0;
    int r = strata_guarded_copy_pair(entry, block + entry_offset, entry_bytes + 4, is_last ? values_end : UINT64_MAX,
                                     block, values_end, value_out, capacity, &length);
    if (r != 0) return r;
    return check_entry(entry, entry_bytes, key, key_length, value_out, length, trailer_out, sealed);
}
