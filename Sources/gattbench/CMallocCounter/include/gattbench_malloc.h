/*
 * Heap allocation counter for gattbench's codec micro-benchmarks.
 *
 * Why a C shim: counting allocations needs the process's own malloc/calloc/realloc/
 * posix_memalign/aligned_alloc/memalign symbols, defined in the executable so they interpose
 * glibc's (the Swift runtime reaches malloc through the PLT), forwarding to glibc's
 * __libc_malloc family. No LD_PRELOAD, no hooks (glibc 2.34 removed __malloc_hook).
 * Swift cannot define C symbols with these exact names and signatures cleanly.
 */
#ifndef GATTBENCH_MALLOC_H
#define GATTBENCH_MALLOC_H
#include <stdint.h>

/* Allocations (malloc, calloc, realloc of a new block, aligned allocations) since start. */
uint64_t gattbench_allocation_count(void);
/* Whether the interposed allocator is the one the process uses (a malloc call counts). */
int gattbench_malloc_counter_active(void);
/* Heap bytes in use (glibc mallinfo2), for the scan soak. */
uint64_t gattbench_heap_in_use(void);



/* stdio helpers: Swift 6 refuses to touch the C globals stdout/stderr (shared mutable state). */
/* Makes stdout line-buffered, so progress shows when it is a pipe or a file. */
void gattbench_line_buffer_stdout(void);
/* Writes a message to stderr. */
void gattbench_print_error(const char *message);
#endif
