// CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78).
// Hardware path: the SSE4.2 crc32 instruction, compiled only for that function so the rest of the
// build keeps the baseline ISA; chosen at run time. Portable path: slicing-by-one table.
#include "CStrataSupport.h"
#include <string.h>

static uint32_t crc_table[256];
static int crc_table_ready = 0;

static void build_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : (c >> 1);
        crc_table[i] = c;
    }
    __atomic_store_n(&crc_table_ready, 1, __ATOMIC_RELEASE);
}

static uint32_t crc32c_portable(uint32_t crc, const uint8_t *p, size_t n) {
    if (!__atomic_load_n(&crc_table_ready, __ATOMIC_ACQUIRE)) build_table();
    crc = ~crc;
    while (n--) crc = crc_table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>
#include <pthread.h>

// The crc32 instruction takes 3 cycles and can start one per cycle, so one dependent chain uses
// a third of it. Long inputs run three chains over three adjacent stretches at once and join
// them: the CRC register is linear, so the state after A||B is shift(state after A, |B|) xor
// the state after B from zero, where shift (feeding |B| zero bytes) is a table lookup per byte
// of the state (the approach of Mark Adler's crc32c.c). Two stretch lengths: a long one for
// batches and a short one for 4 KiB blocks.
#define CRC_LONG 8192
#define CRC_SHORT 256

static uint32_t crc_long_shift[4][256];
static uint32_t crc_short_shift[4][256];
static pthread_once_t crc_shift_once = PTHREAD_ONCE_INIT;

__attribute__((target("sse4.2")))
static uint32_t crc_feed_zeros(uint32_t state, size_t length) {
    uint64_t c = state;
    for (size_t i = 0; i < length / 8; i++) c = _mm_crc32_u64(c, 0);
    return (uint32_t)c;
}

static void crc_build_shift(uint32_t table[4][256], size_t length) {
    uint32_t basis[32];
    for (int b = 0; b < 32; b++) basis[b] = crc_feed_zeros(1u << b, length);
    for (int j = 0; j < 4; j++) {
        for (uint32_t k = 0; k < 256; k++) {
            uint32_t v = 0;
            for (int b = 0; b < 8; b++) if (k & (1u << b)) v ^= basis[8 * j + b];
            table[j][k] = v;
        }
    }
}

static void crc_build_shifts(void) {
    crc_build_shift(crc_long_shift, CRC_LONG);
    crc_build_shift(crc_short_shift, CRC_SHORT);
}

static inline uint32_t crc_shift(uint32_t table[4][256], uint32_t c) {
    return table[0][c & 0xFF] ^ table[1][(c >> 8) & 0xFF] ^ table[2][(c >> 16) & 0xFF] ^ table[3][c >> 24];
}

static inline uint64_t load64(const uint8_t *p) { uint64_t w; memcpy(&w, p, 8); return w; }

// Runs three chains over adjacent stretches of `stretch` bytes for as long as three fit, then
// joins them (see above). Inlined per call site, so `stretch` is a constant in each loop.
__attribute__((target("sse4.2"), always_inline))
static inline uint64_t crc_three_way(uint64_t c, const uint8_t **pp, size_t *np, size_t stretch,
                                     uint32_t table[4][256]) {
    const uint8_t *p = *pp;
    size_t n = *np;
    while (n >= 3 * stretch) {
        uint64_t c0 = c, c1 = 0, c2 = 0;
        const uint8_t *end = p + stretch;
        do {
            c0 = _mm_crc32_u64(c0, load64(p));
            c1 = _mm_crc32_u64(c1, load64(p + stretch));
            c2 = _mm_crc32_u64(c2, load64(p + 2 * stretch));
            p += 8;
        } while (p < end);
        c = crc_shift(table, (uint32_t)c0) ^ c1;
        c = crc_shift(table, (uint32_t)c) ^ c2;
        p += 2 * stretch;
        n -= 3 * stretch;
    }
    *pp = p;
    *np = n;
    return c;
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = ~crc;
    while (n > 0 && ((uintptr_t)p & 7)) { c = _mm_crc32_u8((uint32_t)c, *p++); n--; }
    if (n >= 3 * CRC_SHORT) {
        pthread_once(&crc_shift_once, crc_build_shifts);
        c = crc_three_way(c, &p, &n, CRC_LONG, crc_long_shift);
        c = crc_three_way(c, &p, &n, CRC_SHORT, crc_short_shift);
    }
    while (n >= 8) {
        c = _mm_crc32_u64(c, load64(p));
        p += 8; n -= 8;
    }
    while (n--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}
#endif

#if defined(__x86_64__)
// Whether the processor has the crc32 instruction, asked once.
static int has_sse42(void) {
    static int known = -1;
    int h = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (h < 0) {
        __builtin_cpu_init();
        h = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        __atomic_store_n(&known, h, __ATOMIC_RELAXED);
    }
    return h;
}

// A short input in 8-byte steps with unaligned loads: no alignment prologue, no three-way
// set-up (what an id block entry's key, trailer and value are: tens of bytes in all).
__attribute__((target("sse4.2")))
static uint64_t crc_short_sse42(uint64_t c, const uint8_t *p, size_t n) {
    while (n >= 8) {
        c = _mm_crc32_u64(c, load64(p));
        p += 8;
        n -= 8;
    }
    while (n--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return c;
}
#endif

uint32_t strata_crc32c_extend(uint32_t crc, const void *data, size_t length) {
#if defined(__x86_64__)
    if (has_sse42()) return crc32c_sse42(crc, (const uint8_t *)data, length);
#endif
    return crc32c_portable(crc, (const uint8_t *)data, length);
}

uint32_t strata_crc32c_pieces(const void *a, size_t a_length, const void *b, size_t b_length,
                              const void *c, size_t c_length) {
#if defined(__x86_64__)
    if (has_sse42()) {
        uint64_t s = 0xFFFFFFFFu;
        s = crc_short_sse42(s, (const uint8_t *)a, a_length);
        s = crc_short_sse42(s, (const uint8_t *)b, b_length);
        s = crc_short_sse42(s, (const uint8_t *)c, c_length);
        return ~(uint32_t)s;
    }
#endif
    uint32_t crc = crc32c_portable(0, (const uint8_t *)a, a_length);
    crc = crc32c_portable(crc, (const uint8_t *)b, b_length);
    return crc32c_portable(crc, (const uint8_t *)c, c_length);
}
