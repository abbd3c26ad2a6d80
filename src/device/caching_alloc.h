/* caching_alloc.h — a caching allocator for device memory, over two raw callbacks.
 *
 * Raw device allocation (cudaMalloc / cudaFree) is slow and synchronising, so a device
 * keeps the blocks it freed and hands them out again. This file knows nothing of CUDA:
 * a backend passes raw alloc/free (and optionally a free/total query), so the same code
 * runs on a GPU and, in tests, over a fake backend on the CPU (tests/test_cuda_alloc.c).
 *
 * Size classes. A request is rounded up to a multiple of 512 B when it is at most 1 MiB
 * (a "small" block), else to a multiple of 2 MiB (a "large" block); the raw callback is
 * asked for exactly the rounded size, and a block keeps its rounded size for life
 * (blocks are never split or merged: steady training loops ask for the same sizes every
 * step, so exact reuse is the common case and fragmentation is bounded by the rounding).
 * A cached block serves a request of its own class: a small request takes a block of
 * exactly its rounded size; a large one the smallest cached block of at least its
 * rounded size and at most 1/8 (and at least 2 MiB) above it.
 *
 * Out of memory. When the raw allocation fails with LMX_ERR_NOMEM, every cached block
 * is released to the backend and the allocation is retried once; if that fails too, the
 * error names the bytes asked, the device and what is held (in use, cached, device
 * free/total when the backend can tell).
 *
 * Stream order. The cache does not synchronise: a block freed while queued work still
 * uses it may be handed out at once. That is safe when all work on the device is
 * ordered on one stream (the CUDA backend's rule: one stream per device), because a
 * later user's work is queued after the earlier user's.
 *
 * Thread safety: every function may be called from any thread (one mutex per cache;
 * the raw callbacks run under it). Host bookkeeping goes through src/core/alloc.h.
 */
#ifndef LMX_DEVICE_CACHING_ALLOC_H
#define LMX_DEVICE_CACHING_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus /* also included by kernels/cuda (C++) */
extern "C" {
#endif

typedef struct lmx_cache lmx_cache;

typedef struct lmx_cache_backend {
  void *ctx; /* passed to every callback */
  /* Allocates bytes (> 0) of device memory into *out: LMX_OK; LMX_ERR_NOMEM when the
   * device is full (the message may be left unset: the cache writes its own); any other
   * status with a message for other failures (reported as they are, no retry). */
  int (*raw_alloc)(void *ctx, size_t bytes, void **out);
  void (*raw_free)(void *ctx, void *p);
  /* Optional (NULL): device free and total bytes, for messages and statistics. */
  int (*mem_info)(void *ctx, size_t *free_bytes, size_t *total_bytes);
} lmx_cache_backend;

/* Figures of one cache. Bytes are rounded block sizes. */
typedef struct lmx_cache_stats {
  int64_t in_use;       /* bytes in blocks handed out and not yet freed */
  int64_t cached;       /* bytes in freed blocks kept for reuse */
  int64_t peak;         /* highest in_use since creation (or the last reset_peak) */
  int64_t live_blocks;  /* blocks handed out */
  int64_t cached_blocks;
  int64_t requests;     /* successful allocations */
  int64_t cache_hits;   /* of which served from the cache */
  int64_t raw_allocs;   /* successful raw allocations (cache misses) */
  int64_t raw_frees;    /* blocks given back to the backend */
  int64_t oom_retries;  /* raw out-of-memory answered by emptying the cache */
  int64_t ooms;         /* allocations that failed after the retry */
} lmx_cache_stats;

/* Rounded size of a request (the block size it gets). bytes 0 counts as 1. */
size_t lmx_cache_round(size_t bytes);

/* New empty cache. name ("gpu(0)") prefixes messages and is copied. */
int lmx_cache_new(const lmx_cache_backend *backend, const char *name, lmx_cache **out);

/* Releases every cached block to the backend and frees the cache. Blocks still handed
 * out are released too (the device is going away); NULL is a no-op. */
void lmx_cache_free(lmx_cache *c);

/* A block of at least bytes into *out (see the file comment): LMX_OK, LMX_ERR_NOMEM
 * ("gpu(0): out of memory allocating ..."), or the backend's error. */
int lmx_cache_alloc(lmx_cache *c, size_t bytes, void **out);

/* Returns p (from lmx_cache_alloc, not yet released) to the cache; NULL is a no-op.
 * A pointer the cache did not hand out is ignored (and counted nowhere). When the host
 * cannot record the block as cached it goes straight back to the backend. */
void lmx_cache_release(lmx_cache *c, void *p);

/* Gives every cached block back to the backend. Returns the bytes released. */
size_t lmx_cache_empty(lmx_cache *c);

/* Current figures (a consistent snapshot). */
void lmx_cache_get_stats(lmx_cache *c, lmx_cache_stats *out);

/* Sets peak to the current in_use. */
void lmx_cache_reset_peak(lmx_cache *c);

/* Device free/total from the backend (0, 0 when it cannot tell): LMX_OK or its error. */
int lmx_cache_mem_info(lmx_cache *c, size_t *free_bytes, size_t *total_bytes);

/* "1.50 GiB" style text of a byte count into buf (cap >= 16). Returns buf. */
const char *lmx_cache_bytes_str(int64_t bytes, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
