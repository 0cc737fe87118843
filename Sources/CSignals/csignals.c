#define _GNU_SOURCE
#include "csignals.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

/* The descriptor each signal's handler writes to: set before its handler is installed, never
 * changed while it is (the Swift side creates its pipe once for the process). */
static volatile sig_atomic_t forward_fd[NSIG];
static struct sigaction previous[NSIG];
static int saved[NSIG];

static void forward(int number) {
    int kept = errno;
    unsigned char octet = (unsigned char)number;
    ssize_t ignored = write((int)forward_fd[number], &octet, 1); /* a full pipe drops it: one is pending */
    (void)ignored;
    errno = kept;
}

int csignals_pipe(int ends[2]) {
    return pipe2(ends, O_CLOEXEC | O_NONBLOCK) == 0 ? 0 : -errno;
}

int csignals_forward(int number, int fd) {
    if (number <= 0 || number >= NSIG || fd < 0) return -EINVAL;
    forward_fd[number] = fd;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = forward;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    struct sigaction before;
    if (sigaction(number, &action, &before) != 0) return -errno;
    if (!saved[number]) {
        previous[number] = before;
        saved[number] = 1;
    }
    return 0;
}

int csignals_restore(int number) {
    if (number <= 0 || number >= NSIG) return -EINVAL;
    if (!saved[number]) return 0;
    saved[number] = 0;
    if (sigaction(number, &previous[number], NULL) != 0) return -errno;
    return 0;
}
