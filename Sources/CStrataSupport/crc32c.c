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
__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = ~crc;
    while (n > 0 && ((uintptr_t)p & 7)) { c = _mm_crc32_u8((uint32_t)c, *p++); n--; }
    while (n >= 8) {
        uint64_t w; memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8; n -= 8;
    }
    while (n--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}
#endif

uint32_t strata_crc32c_extend(uint32_t crc, const void *data, size_t length) {
#if defined(__x86_64__)
    static int has_sse42 = -1;
    int h = __atomic_load_n(&has_sse42, __ATOMIC_RELAXED);
    if (h < 0) {
        __builtin_cpu_init();
        h = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        __atomic_store_n(&has_sse42, h, __ATOMIC_RELAXED);
    }
    if (h) return crc32c_sse42(crc, (const uint8_t *)data, length);
#endif
    return crc32c_portable(crc, (const uint8_t *)data, length);
}
