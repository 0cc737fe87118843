// GNU extensions Swift's Glibc module does not import: a close-on-exec pipe and the spawn file
// action that closes every descriptor from `from` up in the child.
#define _GNU_SOURCE
#include "ctestsupport.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int ctest_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC) == 0 ? 0 : -errno;
}

int ctest_spawn_addclosefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
