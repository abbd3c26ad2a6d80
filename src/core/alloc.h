/* alloc.h — the one allocator behind every host allocation of the engine.
 *
 * All host memory goes through lmx_alloc / lmx_calloc / lmx_realloc / lmx_free so that
 * tests can count live blocks and bytes and fail the Nth allocation (fault injection).
 * Blocks are 64-byte aligned (SIMD and cache lines) and carry a small header with
 * their size, so lmx_free needs no size and live bytes are exact.
 *
 * Debug mode (build option LUAMX_DEBUG_ALLOC, or lmx_debug_alloc_set_poison(1) at run
 * time): fresh blocks are filled with 0xA5 and freed blocks with 0xDD, and the header
 * magic is checked on free, so use-after-free and double free show up.
 * Counting and fail-after-N are always available (one relaxed atomic per call).
 * Thread safety: all functions may be called from any thread.
 * lmx_free(NULL) is a no-op. A failed allocation returns NULL and sets no message:
 * the caller names what it was allocating (lmx_fail_nomem).
 */
#ifndef LMX_CORE_ALLOC_H
#define LMX_CORE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

void *lmx_alloc(size_t bytes);
void *lmx_calloc(size_t count, size_t size); /* zeroed; NULL on overflow */
void *lmx_realloc(void *p, size_t bytes);   /* NULL p acts as lmx_alloc */
void lmx_free(void *p);
char *lmx_strdup(const char *s);
char *lmx_strndup(const char *s, size_t n);

/* Multiplication that reports overflow: returns 0 and sets *out, or -1 on overflow. */
int lmx_mul_size(size_t a, size_t b, size_t *out);

#endif
