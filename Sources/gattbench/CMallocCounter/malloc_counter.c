#include "gattbench_malloc.h"
#include <errno.h>
#include <stddef.h>

/* glibc's own entry points (exported by libc.so.6 since GLIBC_2.0). */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static uint64_t allocations;

static inline void count(void) { __atomic_fetch_add(&allocations, 1, __ATOMIC_RELAXED); }

void *malloc(size_t size) { count(); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { count(); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { count(); return __libc_realloc(p, size); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
    count();
    void *p = __libc_memalign(alignment, size);
    if (!p && size) return ENOMEM;
    *out = p;
    return 0;
}

uint64_t gattbench_allocation_count(void) { return __atomic_load_n(&allocations, __ATOMIC_RELAXED); }

int gattbench_malloc_counter_active(void) {
    uint64_t before = gattbench_allocation_count();
    void *volatile p = malloc(24);
    free(p);
    return gattbench_allocation_count() > before;
}

#include <stdio.h>

void gattbench_line_buffer_stdout(void) { setvbuf(stdout, NULL, _IOLBF, 0); }

void gattbench_print_error(const char *message) { fputs(message, stderr); }

/* Heap bytes in use (glibc's mallinfo2: arena bytes allocated plus mmapped blocks); the counter
 * above forwards to glibc's allocator, so its statistics stay true. */
#include <malloc.h>
uint64_t gattbench_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (uint64_t)info.uordblks + (uint64_t)info.hblkhd;
}
