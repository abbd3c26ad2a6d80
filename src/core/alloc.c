/* alloc.c — the engine's host allocator with counting, poisoning and fault injection.
 *
 * Layout of a block: [header: 64 bytes][user bytes]. The header keeps the user size and
 * a magic word and the pointer malloc gave; the user pointer is 64-byte aligned because
 * the header starts at the first 64-byte boundary of a malloc'd block 63 bytes larger.
 * (Plain malloc, not aligned_alloc: glibc serves small mallocs from per-thread caches,
 * while each aligned request splits a chunk, which made the engine's small, short-lived
 * blocks — array headers, tape nodes — cost several times their work.) The fail-at countdown is shared by all threads: the Nth call
 * from now (whichever thread makes it) gets NULL.
 *
 * Allocation sites: each public entry point passes its caller's return address down,
 * and the call that an injected failure hits records that address in a fixed table
 * (open addressing, SITES slots, lock-free insert), so a fault-injection run can say
 * how many distinct places in the engine it made fail (lmx_debug_alloc_sites). A site
 * is the code address that called lmx_alloc / lmx_calloc / lmx_realloc / lmx_strdup /
 * lmx_strndup: a helper that allocates for many callers (a vector's growth) counts once.
 */
#include "alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../luamx.h"
#include "status.h"

enum { HDR = 64 };
#define MAGIC_LIVE 0x4c4d58414c4c4f43ull /* "LMXALLOC" */
#define MAGIC_DEAD 0x4445414446524545ull /* "DEADFREE" */

typedef struct {
  size_t size;
  uint64_t magic;
  void *raw; /* what malloc returned */
} header;

static atomic_llong g_live_blocks, g_live_bytes, g_total;
static atomic_llong g_fail_countdown; /* 0: off; k: the kth call from now fails */
#ifdef LUAMX_DEBUG_ALLOC
static atomic_int g_poison = 1;
#else
static atomic_int g_poison = 0;
#endif

enum { SITES = 4096 };
static _Atomic uintptr_t g_sites[SITES];
static atomic_llong g_site_count, g_site_overflow;

static void record_site(const void *site) {
  uintptr_t a = (uintptr_t)site;
  size_t h = (size_t)((a >> 2) * 0x9E3779B97F4A7C15ull) % SITES;
  for (size_t i = 0; i < SITES; i++) {
    _Atomic uintptr_t *slot = &g_sites[(h + i) % SITES];
    uintptr_t cur = atomic_load_explicit(slot, memory_order_relaxed);
    if (cur == a) return;
    if (cur == 0) {
      if (atomic_compare_exchange_strong(slot, &cur, a)) {
        atomic_fetch_add_explicit(&g_site_count, 1, memory_order_relaxed);
        return;
      }
      if (cur == a) return;
    }
  }
  atomic_fetch_add_explicit(&g_site_overflow, 1, memory_order_relaxed);
}

static int should_fail(const void *site) {
  long long c = atomic_load_explicit(&g_fail_countdown, memory_order_relaxed);
  while (c > 0) {
    if (atomic_compare_exchange_weak(&g_fail_countdown, &c, c - 1)) {
      if (c == 1) record_site(site);
      return c == 1;
    }
  }
  return 0;
}

static void *alloc_at(size_t bytes, const void *site) {
  if (should_fail(site)) return NULL;
  if (bytes > SIZE_MAX - 2 * HDR) return NULL;
  unsigned char *raw = malloc(HDR + bytes + 63);
  if (!raw) return NULL;
  unsigned char *base = (unsigned char *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
  header *h = (header *)base;
  h->size = bytes;
  h->magic = MAGIC_LIVE;
  h->raw = raw;
  raw = base;
  if (atomic_load_explicit(&g_poison, memory_order_relaxed)) memset(raw + HDR, 0xA5, bytes);
  atomic_fetch_add_explicit(&g_live_blocks, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&g_live_bytes, (long long)bytes, memory_order_relaxed);
  atomic_fetch_add_explicit(&g_total, 1, memory_order_relaxed);
  return raw + HDR;
}

void *lmx_alloc(size_t bytes) { return alloc_at(bytes, __builtin_return_address(0)); }

int lmx_mul_size(size_t a, size_t b, size_t *out) {
  if (b != 0 && a > SIZE_MAX / b) return -1;
  *out = a * b;
  return 0;
}

void *lmx_calloc(size_t count, size_t size) {
  size_t bytes;
  if (lmx_mul_size(count, size, &bytes)) return NULL;
  void *p = alloc_at(bytes, __builtin_return_address(0));
  if (p) memset(p, 0, bytes);
  return p;
}

static header *header_of(void *p) {
  header *h = (header *)((unsigned char *)p - HDR);
  if (h->magic != MAGIC_LIVE) abort(); /* double free or foreign pointer: a bug, not input */
  return h;
}

void *lmx_realloc(void *p, size_t bytes) {
  const void *site = __builtin_return_address(0);
  if (!p) return alloc_at(bytes, site);
  size_t old = header_of(p)->size;
  void *q = alloc_at(bytes, site);
  if (!q) return NULL;
  memcpy(q, p, old < bytes ? old : bytes);
  lmx_free(p);
  return q;
}

void lmx_free(void *p) {
  if (!p) return;
  header *h = header_of(p);
  size_t bytes = h->size;
  if (atomic_load_explicit(&g_poison, memory_order_relaxed)) memset(p, 0xDD, bytes);
  h->magic = MAGIC_DEAD;
  atomic_fetch_sub_explicit(&g_live_blocks, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&g_live_bytes, (long long)bytes, memory_order_relaxed);
  free(h->raw);
}

static char *strndup_at(const char *s, size_t n, const void *site) {
  size_t len = strnlen(s, n);
  char *d = alloc_at(len + 1, site);
  if (!d) return NULL;
  memcpy(d, s, len);
  d[len] = '\0';
  return d;
}

char *lmx_strndup(const char *s, size_t n) {
  return strndup_at(s, n, __builtin_return_address(0));
}

char *lmx_strdup(const char *s) { return strndup_at(s, strlen(s), __builtin_return_address(0)); }

/* ---- public debugging entry points ---- */

int lmx_debug_alloc_stats(int64_t *live_blocks, int64_t *live_bytes, int64_t *total_allocs) {
  if (live_blocks) *live_blocks = atomic_load(&g_live_blocks);
  if (live_bytes) *live_bytes = atomic_load(&g_live_bytes);
  if (total_allocs) *total_allocs = atomic_load(&g_total);
  return LMX_OK;
}

int lmx_debug_alloc_fail_at(int64_t n) {
  if (n < 0) return lmx_fail(LMX_ERR_ARG, "lmx_debug_alloc_fail_at: n must be >= 0, got %lld", (long long)n);
  atomic_store(&g_fail_countdown, (long long)n);
  return LMX_OK;
}

int lmx_debug_alloc_sites(int64_t *sites, int reset) {
  if (sites) *sites = atomic_load(&g_site_count) + atomic_load(&g_site_overflow);
  if (reset) {
    for (size_t i = 0; i < SITES; i++) atomic_store(&g_sites[i], 0);
    atomic_store(&g_site_count, 0);
    atomic_store(&g_site_overflow, 0);
  }
  return LMX_OK;
}

int lmx_debug_alloc_set_poison(int on) {
  atomic_store(&g_poison, on ? 1 : 0);
  return LMX_OK;
}
