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
 *
 * Block cache (the engine's array pool): a freed block of up to CACHE_MAX_BLOCK bytes is
 * kept, instead of going back to malloc, on a list per capacity (the size rounded up to
 * 64 bytes; CACHE_SLOTS lists, open addressing), and the next request of that capacity
 * takes it back. Eager code makes the same arrays, tape nodes and views step after step,
 * so once the collector has returned one step's garbage a steady step calls malloc for
 * none of them; a large array's pages also stay mapped. Kept blocks count as freed in
 * the live counters; total_allocs counts only blocks malloc made (a reuse is not an
 * allocation). At most CACHE_MAX_BYTES are kept (past that, frees go to malloc). A block
 * only ever serves requests of its own capacity, which are at most its size. Kept blocks
 * carry the dead magic (double frees still abort) and, with poisoning on, both fills.
 * The cache steps aside while a fault is armed (lmx_debug_alloc_fail_at: every request
 * then reaches malloc and can fail) and is off by default under AddressSanitizer (which
 * must see frees to find use after free); lmx_debug_alloc_cache switches it, and so does
 * LUAMX_ALLOC_CACHE=0 or 1 in the environment when the library loads.
 *
 * One spin lock (g_lock) guards the cache and the counters (live blocks and bytes,
 * blocks malloc made, cache hits): an allocation or a free takes it once, which costs
 * less than the three atomic additions each used to make (eager code allocates and frees
 * a few small blocks per call).
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

typedef struct header header;
struct header {
  size_t size;  /* the user size asked for */
  uint64_t magic;
  void *raw;    /* what malloc returned */
  size_t cap;   /* the usable bytes: size rounded up to 64 */
  header *next; /* in the block cache: the next kept block of this capacity */
};
_Static_assert(sizeof(header) <= HDR, "the block header must fit its 64 bytes");

static long long g_live_blocks, g_live_bytes, g_total; /* under g_lock */
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

/* ---- the block cache (see the top of the file) ---- */
enum { CACHE_SLOTS = 128, CACHE_PROBE = 8 };
#define CACHE_MAX_BLOCK ((size_t)16 << 20)
#define CACHE_MAX_BYTES ((size_t)128 << 20)

typedef struct {
  size_t cap; /* 0: unused */
  header *head;
} cache_list;

static cache_list g_cache[CACHE_SLOTS];
static size_t g_cache_bytes, g_cache_blocks; /* under g_lock */
static atomic_flag g_lock = ATOMIC_FLAG_INIT;
static long long g_cache_hits; /* under g_lock */
#if defined(__SANITIZE_ADDRESS__) /* gcc */
#define LMX_ASAN 1
#elif defined(__has_feature) /* clang */
#if __has_feature(address_sanitizer)
#define LMX_ASAN 1
#endif
#endif
#ifdef LMX_ASAN
static atomic_int g_cache_on = 0;
#else
static atomic_int g_cache_on = 1;
#endif

/* LUAMX_ALLOC_CACHE=0 / =1 in the environment switches the cache off / on at load. */
__attribute__((constructor)) static void cache_from_env(void) {
  const char *e = getenv("LUAMX_ALLOC_CACHE");
  if (e && (e[0] == '0' || e[0] == '1') && e[1] == '\0') atomic_store(&g_cache_on, e[0] == '1');
}

static void cache_lock(void) {
  while (atomic_flag_test_and_set_explicit(&g_lock, memory_order_acquire)) {
  }
}
static void cache_unlock(void) { atomic_flag_clear_explicit(&g_lock, memory_order_release); }

static size_t cap_of(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

/* The list of capacity cap: its slot, or (claim != 0) an empty one to take; NULL when
 * the probe finds neither. Under the lock. */
static cache_list *cache_find(size_t cap, int claim) {
  size_t h = (size_t)((cap >> 6) * 0x9E3779B97F4A7C15ull) % CACHE_SLOTS;
  cache_list *spare = NULL;
  for (int i = 0; i < CACHE_PROBE; i++) {
    cache_list *l = &g_cache[(h + (size_t)i) % CACHE_SLOTS];
    if (l->cap == cap) return l;
    if (!spare && (l->cap == 0 || !l->head)) spare = l;
  }
  if (claim && spare) spare->cap = cap;
  return claim ? spare : NULL;
}

/* Whether a request or a freed block of capacity cap may use the cache now. */
static int cache_usable(size_t cap) {
  return cap <= CACHE_MAX_BLOCK && atomic_load_explicit(&g_cache_on, memory_order_relaxed) &&
         atomic_load_explicit(&g_fail_countdown, memory_order_relaxed) <= 0;
}

/* A kept block of capacity cap, or NULL. Under the lock. */
static header *cache_take(size_t cap) {
  cache_list *l = cache_find(cap, 0);
  header *h = l ? l->head : NULL;
  if (h) {
    l->head = h->next;
    g_cache_bytes -= cap + HDR, g_cache_blocks--, g_cache_hits++;
    /* kept blocks are cold (the collector frees a step's garbage at once): warm the
     * next one's header while this one is used */
    if (l->head) __builtin_prefetch(l->head, 1);
  }
  return h;
}

/* Keeps a freed block (its magic already dead); 0 when the cache is full. Under the
 * lock. */
static int cache_keep(header *h) {
  size_t cap = h->cap;
  if (g_cache_bytes + cap + HDR > CACHE_MAX_BYTES) return 0;
  cache_list *l = cache_find(cap, 1);
  if (!l) return 0;
  h->next = l->head, l->head = h;
  g_cache_bytes += cap + HDR, g_cache_blocks++;
  return 1;
}

/* Gives every kept block back to malloc. */
static void cache_flush(void) {
  header *all = NULL;
  cache_lock();
  for (int i = 0; i < CACHE_SLOTS; i++) {
    while (g_cache[i].head) {
      header *h = g_cache[i].head;
      g_cache[i].head = h->next;
      h->next = all, all = h;
    }
    g_cache[i].cap = 0;
  }
  g_cache_bytes = g_cache_blocks = 0;
  cache_unlock();
  while (all) {
    header *h = all;
    all = h->next;
    free(h->raw);
  }
}

static void *alloc_at(size_t bytes, const void *site) {
  if (should_fail(site)) return NULL;
  if (bytes > SIZE_MAX - 2 * HDR - 64) return NULL;
  size_t cap = cap_of(bytes);
  header *h = NULL;
  if (cache_usable(cap)) {
    cache_lock();
    h = cache_take(cap);
    if (h) g_live_blocks++, g_live_bytes += (long long)bytes;
    cache_unlock();
  }
  if (!h) {
    unsigned char *raw = malloc(HDR + cap + 63);
    if (!raw) return NULL;
    h = (header *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    h->raw = raw;
    h->cap = cap;
    cache_lock();
    g_total++, g_live_blocks++, g_live_bytes += (long long)bytes;
    cache_unlock();
  } else if (h->magic != MAGIC_DEAD) {
    abort(); /* a kept block was written through a stale pointer's header: a bug */
  }
  h->size = bytes;
  h->magic = MAGIC_LIVE;
  h->next = NULL;
  unsigned char *user = (unsigned char *)h + HDR;
  if (atomic_load_explicit(&g_poison, memory_order_relaxed)) memset(user, 0xA5, bytes);
  return user;
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
  int cached = cache_usable(h->cap);
  cache_lock();
  g_live_blocks--, g_live_bytes -= (long long)bytes;
  int kept = cached && cache_keep(h);
  cache_unlock();
  if (!kept) free(h->raw);
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
  cache_lock();
  long long blocks = g_live_blocks, bytes = g_live_bytes, total = g_total;
  cache_unlock();
  if (live_blocks) *live_blocks = blocks;
  if (live_bytes) *live_bytes = bytes;
  if (total_allocs) *total_allocs = total;
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

int lmx_debug_alloc_cache(int on, int *was_on, int64_t *hits, int64_t *kept_blocks,
                          int64_t *kept_bytes) {
  if (on < -1 || on > 1)
    return lmx_fail(LMX_ERR_ARG, "lmx_debug_alloc_cache: on must be -1, 0 or 1, got %d", on);
  if (was_on) *was_on = atomic_load(&g_cache_on);
  if (on >= 0) atomic_store(&g_cache_on, on);
  if (on == 0) cache_flush();
  cache_lock();
  if (hits) *hits = g_cache_hits;
  if (kept_blocks) *kept_blocks = (int64_t)g_cache_blocks;
  if (kept_bytes) *kept_bytes = (int64_t)g_cache_bytes;
  cache_unlock();
  return LMX_OK;
}

int lmx_debug_alloc_set_poison(int on) {
  atomic_store(&g_poison, on ? 1 : 0);
  return LMX_OK;
}
