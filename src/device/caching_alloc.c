/* caching_alloc.c — the device caching allocator (see caching_alloc.h).
 *
 * Bookkeeping: blocks handed out live in an open-addressing hash table keyed by
 * pointer (linear probing, deletion by backward shift), so release finds a block's size
 * in O(1). Cached small blocks sit in one stack per size class (2048 classes of 512 B up
 * to 1 MiB): a hit is a pop, a release a push. Cached large blocks sit in an array
 * sorted by (size, address), so a request finds the smallest fitting block by binary
 * search. All tables grow through the engine's host allocator; when one cannot grow,
 * the operation degrades (a release goes straight to the backend, an allocation fails
 * with LMX_ERR_NOMEM) and never loses a block.
 */
#include "caching_alloc.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"

enum {
  SMALL_LIMIT = 1 << 20,
  SMALL_ROUND = 512,
  LARGE_ROUND = 2 << 20,
  NBINS = SMALL_LIMIT / SMALL_ROUND
};

typedef struct bin {
  void **p;
  size_t n, cap;
} bin;

typedef struct blk {
  void *p; /* NULL: empty hash slot */
  size_t size;
} blk;

struct lmx_cache {
  pthread_mutex_t mu;
  lmx_cache_backend be;
  char name[48];
  blk *live; /* hash table, cap_live slots (a power of two), n_live used */
  size_t cap_live, n_live;
  bin *bins;  /* NBINS stacks of cached small blocks (allocated on first release) */
  blk *freel; /* cached large blocks sorted by (size, p), n_free used */
  size_t cap_free, n_free;
  lmx_cache_stats st;
};

size_t lmx_cache_round(size_t bytes) {
  if (bytes == 0) bytes = 1;
  size_t unit = bytes <= SMALL_LIMIT ? SMALL_ROUND : LARGE_ROUND;
  if (bytes > SIZE_MAX - unit) return SIZE_MAX; /* unsatisfiable: the raw call fails */
  return (bytes + unit - 1) / unit * unit;
}

const char *lmx_cache_bytes_str(int64_t bytes, char *buf, size_t cap) {
  static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024.0 && u < 4) v /= 1024.0, u++;
  if (u == 0) snprintf(buf, cap, "%lld B", (long long)bytes);
  else snprintf(buf, cap, "%.2f %s", v, unit[u]);
  return buf;
}

/* ---- the live table -------------------------------------------------------------------- */

static size_t slot_of(const void *p, size_t cap) {
  uint64_t h = (uint64_t)(uintptr_t)p;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return (size_t)h & (cap - 1);
}

static void live_put(blk *tab, size_t cap, void *p, size_t size) {
  size_t i = slot_of(p, cap);
  while (tab[i].p) i = (i + 1) & (cap - 1);
  tab[i].p = p;
  tab[i].size = size;
}

/* Room for one more live block (load factor at most 1/2). */
static int live_reserve(lmx_cache *c) {
  if (2 * (c->n_live + 1) <= c->cap_live) return LMX_OK;
  size_t cap = c->cap_live ? 2 * c->cap_live : 64;
  blk *tab = lmx_calloc(cap, sizeof *tab);
  if (!tab) return lmx_fail_nomem("device block table", cap * sizeof *tab);
  for (size_t i = 0; i < c->cap_live; i++)
    if (c->live[i].p) live_put(tab, cap, c->live[i].p, c->live[i].size);
  lmx_free(c->live);
  c->live = tab;
  c->cap_live = cap;
  return LMX_OK;
}

/* Removes p from the live table; its size into *size. 0 when found, -1 otherwise. */
static int live_take(lmx_cache *c, void *p, size_t *size) {
  if (!c->cap_live) return -1;
  size_t m = c->cap_live - 1, i = slot_of(p, c->cap_live);
  while (c->live[i].p && c->live[i].p != p) i = (i + 1) & m;
  if (!c->live[i].p) return -1;
  *size = c->live[i].size;
  c->live[i].p = NULL;
  c->n_live--;
  /* Backward-shift deletion: move later members of the probe run into the hole. */
  for (size_t j = (i + 1) & m; c->live[j].p; j = (j + 1) & m) {
    size_t home = slot_of(c->live[j].p, c->cap_live);
    int moves = i <= j ? (home <= i || home > j) : (home <= i && home > j);
    if (moves) {
      c->live[i] = c->live[j];
      c->live[j].p = NULL;
      i = j;
    }
  }
  return 0;
}

/* ---- the cached list ------------------------------------------------------------------- */

static int blk_less(const blk *a, size_t size, const void *p) {
  return a->size < size || (a->size == size && (uintptr_t)a->p < (uintptr_t)p);
}

/* First index whose (size, p) is not less than (size, p). */
static size_t free_lower(const lmx_cache *c, size_t size, const void *p) {
  size_t lo = 0, hi = c->n_free;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (blk_less(&c->freel[mid], size, p)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static int free_insert(lmx_cache *c, void *p, size_t size) {
  if (c->n_free == c->cap_free) {
    size_t cap = c->cap_free ? 2 * c->cap_free : 64;
    blk *a = lmx_realloc(c->freel, cap * sizeof *a);
    if (!a) return LMX_ERR_NOMEM;
    c->freel = a;
    c->cap_free = cap;
  }
  size_t at = free_lower(c, size, p);
  memmove(c->freel + at + 1, c->freel + at, (c->n_free - at) * sizeof *c->freel);
  c->freel[at].p = p;
  c->freel[at].size = size;
  c->n_free++;
  return LMX_OK;
}

/* Index of the cached large block that serves a request of rounded size r, or -1. */
static long free_find(const lmx_cache *c, size_t r) {
  size_t at = free_lower(c, r, NULL);
  if (at == c->n_free) return -1;
  size_t have = c->freel[at].size;
  size_t slack = r / 8 > LARGE_ROUND ? r / 8 : LARGE_ROUND;
  return have - r <= slack ? (long)at : -1;
}

static bin *bin_of(lmx_cache *c, size_t r) { return &c->bins[r / SMALL_ROUND - 1]; }

/* Caches p (size r): a push on its bin, or an insertion in the large list. */
static int cache_put(lmx_cache *c, void *p, size_t r) {
  if (r > SMALL_LIMIT) return free_insert(c, p, r);
  if (!c->bins && !(c->bins = lmx_calloc(NBINS, sizeof *c->bins))) return LMX_ERR_NOMEM;
  bin *b = bin_of(c, r);
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 8;
    void **a = lmx_realloc(b->p, cap * sizeof *a);
    if (!a) return LMX_ERR_NOMEM;
    b->p = a;
    b->cap = cap;
  }
  b->p[b->n++] = p;
  return LMX_OK;
}

/* A cached block for rounded size r (its size into *size), or NULL. */
static void *cache_take(lmx_cache *c, size_t r, size_t *size) {
  if (r <= SMALL_LIMIT) {
    bin *b = c->bins ? bin_of(c, r) : NULL;
    if (!b || b->n == 0) return NULL;
    *size = r;
    return b->p[--b->n];
  }
  long at = free_find(c, r);
  if (at < 0) return NULL;
  blk b = c->freel[at];
  memmove(c->freel + at, c->freel + at + 1, (c->n_free - (size_t)at - 1) * sizeof *c->freel);
  c->n_free--;
  *size = b.size;
  return b.p;
}

/* ---- the cache ------------------------------------------------------------------------- */

int lmx_cache_new(const lmx_cache_backend *backend, const char *name, lmx_cache **out) {
  lmx_cache *c = lmx_calloc(1, sizeof *c);
  if (!c) return lmx_fail_nomem("device allocator", sizeof *c);
  if (pthread_mutex_init(&c->mu, NULL) != 0) {
    lmx_free(c);
    return lmx_fail(LMX_ERR_INTERNAL, "%s: cannot create the allocator's mutex", name);
  }
  c->be = *backend;
  snprintf(c->name, sizeof c->name, "%s", name);
  *out = c;
  return LMX_OK;
}

static size_t empty_locked(lmx_cache *c) {
  size_t bytes = 0;
  for (size_t i = 0; i < c->n_free; i++) {
    c->be.raw_free(c->be.ctx, c->freel[i].p);
    bytes += c->freel[i].size;
  }
  c->n_free = 0;
  for (size_t k = 0; c->bins && k < NBINS; k++) {
    bin *b = &c->bins[k];
    for (size_t i = 0; i < b->n; i++) c->be.raw_free(c->be.ctx, b->p[i]);
    bytes += b->n * (k + 1) * SMALL_ROUND;
    b->n = 0;
  }
  c->st.raw_frees += c->st.cached_blocks;
  c->st.cached = 0;
  c->st.cached_blocks = 0;
  return bytes;
}

void lmx_cache_free(lmx_cache *c) {
  if (!c) return;
  empty_locked(c);
  for (size_t i = 0; i < c->cap_live; i++)
    if (c->live[i].p) c->be.raw_free(c->be.ctx, c->live[i].p);
  for (size_t k = 0; c->bins && k < NBINS; k++) lmx_free(c->bins[k].p);
  lmx_free(c->bins);
  lmx_free(c->live);
  lmx_free(c->freel);
  pthread_mutex_destroy(&c->mu);
  lmx_free(c);
}

static int oom_message(lmx_cache *c, size_t bytes, size_t r, int retried) {
  char a[32], u[32], k[32], f[32], t[32];
  size_t fr = 0, tot = 0;
  int known = c->be.mem_info && c->be.mem_info(c->be.ctx, &fr, &tot) == LMX_OK;
  lmx_clear_error(); /* the backend's own text is replaced by ours */
  return lmx_fail(LMX_ERR_NOMEM,
                  "%s: out of memory allocating %s (%zu bytes, block %zu): the caching "
                  "allocator holds %s in use in %lld blocks and %s cached%s; device free %s "
                  "of %s%s",
                  c->name, lmx_cache_bytes_str((int64_t)bytes, a, sizeof a), bytes, r,
                  lmx_cache_bytes_str(c->st.in_use, u, sizeof u), (long long)c->st.live_blocks,
                  lmx_cache_bytes_str(c->st.cached, k, sizeof k),
                  retried ? " (the cache was emptied and the allocation retried)" : "",
                  known ? lmx_cache_bytes_str((int64_t)fr, f, sizeof f) : "?",
                  known ? lmx_cache_bytes_str((int64_t)tot, t, sizeof t) : "?",
                  known ? "" : " (unknown)");
}

static int alloc_locked(lmx_cache *c, size_t bytes, void **out) {
  size_t r = lmx_cache_round(bytes);
  LMX_TRY(live_reserve(c));
  size_t have = 0;
  void *hit = cache_take(c, r, &have);
  if (hit) {
    c->st.cached -= (int64_t)have;
    c->st.cached_blocks--;
    c->st.cache_hits++;
    r = have;
    *out = hit;
  } else {
    void *p = NULL;
    int rc = c->be.raw_alloc(c->be.ctx, r, &p), retried = 0;
    if (rc == LMX_ERR_NOMEM && c->st.cached_blocks > 0) {
      retried = 1;
      empty_locked(c);
      c->st.oom_retries++;
      rc = c->be.raw_alloc(c->be.ctx, r, &p);
    }
    if (rc == LMX_ERR_NOMEM) {
      c->st.ooms++;
      return oom_message(c, bytes, r, retried);
    }
    if (rc != LMX_OK) return rc;
    c->st.raw_allocs++;
    *out = p;
  }
  live_put(c->live, c->cap_live, *out, r);
  c->n_live++;
  c->st.requests++;
  c->st.live_blocks++;
  c->st.in_use += (int64_t)r;
  if (c->st.in_use > c->st.peak) c->st.peak = c->st.in_use;
  return LMX_OK;
}

int lmx_cache_alloc(lmx_cache *c, size_t bytes, void **out) {
  pthread_mutex_lock(&c->mu);
  int rc = alloc_locked(c, bytes, out);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

void lmx_cache_release(lmx_cache *c, void *p) {
  if (!p) return;
  pthread_mutex_lock(&c->mu);
  size_t size;
  if (live_take(c, p, &size) == 0) {
    c->st.live_blocks--;
    c->st.in_use -= (int64_t)size;
    if (cache_put(c, p, size) == LMX_OK) {
      c->st.cached += (int64_t)size;
      c->st.cached_blocks++;
    } else {
      c->be.raw_free(c->be.ctx, p);
      c->st.raw_frees++;
    }
  }
  pthread_mutex_unlock(&c->mu);
}

size_t lmx_cache_empty(lmx_cache *c) {
  pthread_mutex_lock(&c->mu);
  size_t n = empty_locked(c);
  pthread_mutex_unlock(&c->mu);
  return n;
}

void lmx_cache_get_stats(lmx_cache *c, lmx_cache_stats *out) {
  pthread_mutex_lock(&c->mu);
  *out = c->st;
  pthread_mutex_unlock(&c->mu);
}

void lmx_cache_reset_peak(lmx_cache *c) {
  pthread_mutex_lock(&c->mu);
  c->st.peak = c->st.in_use;
  pthread_mutex_unlock(&c->mu);
}

int lmx_cache_mem_info(lmx_cache *c, size_t *free_bytes, size_t *total_bytes) {
  *free_bytes = *total_bytes = 0;
  if (!c->be.mem_info) return LMX_OK;
  return c->be.mem_info(c->be.ctx, free_bytes, total_bytes);
}
