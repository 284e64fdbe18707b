// A bus error inside a copy from or to a shared file mapping becomes an error return instead of
// the end of the host process. The JVM (Unsafe.copyMemory on a MappedByteBuffer) and Go
// (debug.SetPanicOnFault) do the same for the same reason: a mapped file can shrink or fail
// under the process, and nothing checked before the copy can rule that out.
//
// How: the copy runs after sigsetjmp with a thread-local pointer to its jump buffer set. The
// SIGBUS handler, installed once, jumps back when that pointer is set and the signal came from
// the kernel (a fault, not kill(2)); otherwise it hands the signal to the handler that was there
// before, or restores the default action and returns, so the faulting instruction runs again
// and ends the process exactly as it would have without this file.
//
// SA_NODEFER keeps SIGBUS unblocked while the handler runs, so the copy needs no saved signal
// mask (sigsetjmp(..., 0) is a few stores, not a system call per copy). A wrapper may still block
// signals around the handler: ThreadSanitizer installs every handler with a full mask and calls
// ours from its own. A jump out of the handler would then leave SIGBUS blocked on the thread, and
// the thread's next fault, a SIGBUS the kernel cannot deliver, would end the process (the SIGBUS
// seen in TSan runs of MappedFaultTests). So the handler puts back the interrupted code's mask,
// which the kernel saved in the context, before it jumps: one system call, on the fault path only.
#if defined(__APPLE__)
// Apple's SDKs refuse <ucontext.h> unless the X/Open interfaces are asked for; _DARWIN_C_SOURCE
// keeps the rest of the system headers whole beside it. Read, not built: no Apple toolchain
// here (issue 54).
#define _XOPEN_SOURCE 700
#define _DARWIN_C_SOURCE
#else
#define _GNU_SOURCE
#endif
#include "CStrataSupport.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

static struct sigaction previous_action;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static _Thread_local sigjmp_buf *volatile active_copy;

static void bus_error_handler(int signal_number, siginfo_t *info, void *context) {
    sigjmp_buf *jump = active_copy;
    if (jump != NULL && info != NULL && info->si_code > 0) {
        active_copy = NULL;
        if (context != NULL) pthread_sigmask(SIG_SETMASK, &((ucontext_t *)context)->uc_sigmask, NULL);
        siglongjmp(*jump, 1);
    }
    if (previous_action.sa_flags & SA_SIGINFO) {
        if (previous_action.sa_sigaction != NULL) {
            previous_action.sa_sigaction(signal_number, info, context);
            return;
        }
    } else if (previous_action.sa_handler != SIG_DFL && previous_action.sa_handler != SIG_IGN &&
               previous_action.sa_handler != NULL) {
        previous_action.sa_handler(signal_number);
        return;
    }
    if (info == NULL || info->si_code <= 0) {
        // Sent by a process (kill(2), sigqueue(3)), not a fault: there is no instruction to run
        // again. Ignored before the guard, it stays ignored, and the guard stays. Otherwise it
        // gets the default action now (the process ends with SIGBUS), instead of being swallowed
        // with the guard uninstalled.
        if (previous_action.sa_handler == SIG_IGN) return;
        sigaction(SIGBUS, &previous_action, NULL);
        raise(SIGBUS);
        return;
    }
    // A fault that is not ours and nobody else's: the default action, when the instruction
    // faults again.
    sigaction(SIGBUS, &previous_action, NULL);
    if (previous_action.sa_handler == SIG_IGN) signal(SIGBUS, SIG_DFL);
}

static void install_handler(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = bus_error_handler;
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &previous_action);
}

int strata_guarded_copy(void *destination, const void *source, size_t length) {
    pthread_once(&install_once, install_handler);
    sigjmp_buf jump;
    if (sigsetjmp(jump, 0) != 0) {
        return -1;
    }
    active_copy = &jump;
    // Keeps the compiler from moving the copy out from between the two stores.
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memcpy(destination, source, length);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    active_copy = NULL;
    return 0;
}

// The entry copy of strata_read_checked_entry (id_entry.c): the entry and the next one's value
// offset (`entry_length` bytes), then, when the entry's value (from its offset, u32 LE at 0, to
// the next offset, at entry_length - 4, or to `value_end_override` unless that is UINT64_MAX)
// lies below `values_end` and fits in `capacity`, the value; both under one jump buffer.
int strata_guarded_copy_pair(void *entry_out, const void *entry, size_t entry_length, uint64_t value_end_override,
                             const uint8_t *block, uint64_t values_end, uint8_t *value_out,
                             size_t capacity, uint64_t *value_length) {
    pthread_once(&install_once, install_handler);
    sigjmp_buf jump;
    if (sigsetjmp(jump, 0) != 0) {
        return STRATA_ENTRY_FAULT;
    }
    active_copy = &jump;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memcpy(entry_out, entry, entry_length);
    uint32_t offset, next;
    memcpy(&offset, (const uint8_t *)entry_out, 4);
    memcpy(&next, (const uint8_t *)entry_out + entry_length - 4, 4);
    uint64_t end = value_end_override != UINT64_MAX ? value_end_override : next;
    int result = 0;
    if (offset > end || end > values_end) {
        result = STRATA_ENTRY_OUT_OF_RANGE;
    } else if (end - offset > capacity) {
        result = STRATA_ENTRY_TOO_LARGE;
    } else {
        memcpy(value_out, block + offset, (size_t)(end - offset));
        *value_length = end - offset;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    active_copy = NULL;
    return result;
}
