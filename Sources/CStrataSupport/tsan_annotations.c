#include "CStrataSupport.h"

// See CStrataSupport.h: the edges of a memtable's hand-over that ThreadSanitizer cannot see.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRATA_TSAN_ANNOTATIONS 1
#endif
#endif

#ifdef STRATA_TSAN_ANNOTATIONS
void __tsan_acquire(void *address);
void __tsan_release(void *address);
const int strata_tsan_active = 1;
void strata_tsan_acquire(const void *address) { __tsan_acquire((void *)address); }
void strata_tsan_release(const void *address) { __tsan_release((void *)address); }
#else
const int strata_tsan_active = 0;
void strata_tsan_acquire(const void *address) { (void)address; }
void strata_tsan_release(const void *address) { (void)address; }
#endif
