// GNU extensions Swift's Glibc module does not import: a close-on-exec pipe, the spawn file
// action that closes every descriptor from `from` up in the child, a pseudo-terminal, one
// thread's own nice value.
#define _GNU_SOURCE
#include "ctestsupport.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

int ctest_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC) == 0 ? 0 : -errno;
}

int ctest_spawn_addclosefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

// AddressSanitizer replaces malloc, and glibc's mallinfo2 then reports nothing; its own
// statistic counts the chunks still allocated (freed chunks in its quarantine excluded).
// Weak: null in a build without the sanitizer runtime.
extern size_t __sanitizer_get_current_allocated_bytes(void) __attribute__((weak));

int ctest_address_sanitizer_heap(void) {
    return __sanitizer_get_current_allocated_bytes != 0;
}

unsigned long long ctest_heap_in_use(void) {
    if (__sanitizer_get_current_allocated_bytes) return (unsigned long long)__sanitizer_get_current_allocated_bytes();
    struct mallinfo2 info = mallinfo2();
    return (unsigned long long)info.uordblks + (unsigned long long)info.hblkhd;
}

int ctest_open_pty(int *slave) {
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0) return -errno;
    if (grantpt(master) != 0 || unlockpt(master) != 0) {
        int error = errno;
        close(master);
        return -error;
    }
    char name[128];
    if (ptsname_r(master, name, sizeof name) != 0) {
        int error = errno;
        close(master);
        return -error;
    }
    *slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (*slave < 0) {
        int error = errno;
        close(master);
        return -error;
    }
    return master;
}

int ctest_nice_this_thread(int niceness) {
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), niceness) == 0 ? 0 : -errno;
}

int ctest_this_thread_niceness(void) {
    return getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
}
