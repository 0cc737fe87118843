#ifndef CTESTSUPPORT_H
#define CTESTSUPPORT_H

#include <spawn.h>

/// pipe2(fds, O_CLOEXEC): 0, or -errno.
int ctest_pipe_cloexec(int fds[2]);

/// posix_spawn_file_actions_addclosefrom_np(actions, from) (glibc 2.34+): 0, or an errno value.
int ctest_spawn_addclosefrom(posix_spawn_file_actions_t *actions, int from);

/// Heap bytes in use: glibc mallinfo2 (allocated arena bytes plus mmapped blocks), or under
/// AddressSanitizer its count of allocated bytes (its quarantine excluded).
unsigned long long ctest_heap_in_use(void);

/// 1 when the heap is AddressSanitizer's (its runtime is linked in), else 0.
int ctest_address_sanitizer_heap(void);

/// A new pseudo-terminal: its master descriptor (the test's end) and, in `slave`, the opened
/// terminal the program under test uses; -errno on failure.
int ctest_open_pty(int *slave);

/// setpriority for the calling thread alone (Linux: a thread's nice value is its own): 0, or -errno.
int ctest_nice_this_thread(int niceness);

/// The calling thread's nice value.
int ctest_this_thread_niceness(void);

#endif
