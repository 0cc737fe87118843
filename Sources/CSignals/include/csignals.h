#ifndef CSIGNALS_H
#define CSIGNALS_H

/*
 * Signals onto a pipe: a handler installed with sigaction(2) that writes the signal's number,
 * one octet, to a descriptor (the write end of a non-blocking pipe). The handler is installed
 * synchronously, so a signal that arrives right after csignals_forward returns is never lost
 * (a dispatch signal source is armed later, on another thread, and the signal would meanwhile
 * meet its default action or be ignored). write(2) is async-signal-safe; errno is kept.
 */

/* A pipe for the handler: both ends non-blocking and close-on-exec. 0, or -errno. */
int csignals_pipe(int ends[2]);

/* Sends `number` (SIGINT, SIGTERM) to `fd` from now on (SA_RESTART), keeping the previous
 * action for csignals_restore. 0, or -errno. */
int csignals_forward(int number, int fd);

/* Puts back the action csignals_forward replaced. 0, or -errno. */
int csignals_restore(int number);

#endif
