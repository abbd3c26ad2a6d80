/* arena.c — the memory pool that executors share (MXNet's data_pool_ + shared pool).
 *
 * A pool is a list of slabs: (arena, offset, bytes, device). An executor asks for one
 * slab per planned storage block, largest blocks first; each takes the smallest unused
 * slab of its device that is large enough, so an executor made by reshape() or bound
 * with shared_exec reuses the memory of the one it shares with (a down-sized executor
 * sees prefixes of the big one's buffers, as in MXNet). Blocks that find nothing are
 * carved out of ONE new arena per device, and those slabs are appended to the pool, so
 * the pool grows to the union of what its executors need and never more.
 * Executors sharing a pool must run one at a time (they alias memory).
 * Invariants: every slab holds one reference to its arena array; the pool is reference
 * counted (each executor holds one); a failed take leaves the pool valid (new arenas
 * that were made stay in it and are freed with it).
 */
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "exec.h"

int lmx_pool_new(lmx_pool **out) {
  lmx_pool *p = lmx_calloc(1, sizeof *p);
  if (!p) return lmx_fail_nomem("an executor memory pool", sizeof *p);
  lmx_ref_init(&p->rc);
  *out = p;
  return LMX_OK;
}

void lmx_pool_retain(lmx_pool *p) { lmx_ref_inc(&p->rc); }

void lmx_pool_release(lmx_pool *p) {
  if (!p || !lmx_ref_dec(&p->rc)) return;
  for (int i = 0; i < p->n; i++) lmx_nd_release(p->slab[i].base);
  for (int i = 0; i < p->nzeros; i++) lmx_nd_release(p->zeros[i]);
  lmx_free(p->slab);
  lmx_free(p);
}

static int push_slab(lmx_pool *p, const lmx_slab *s) {
  if (p->n == p->cap) {
    int nc = p->cap ? p->cap * 2 : 16;
    lmx_slab *q = lmx_realloc(p->slab, (size_t)nc * sizeof *q);
    if (!q) return lmx_fail_nomem("the executor memory pool", (size_t)nc * sizeof *q);
    p->slab = q;
    p->cap = nc;
  }
  p->slab[p->n++] = *s;
  lmx_ref_inc(&s->base->rc);
  return LMX_OK;
}

/* Block indices by size, largest first (stable; no global state, so binds on two
 * threads do not interfere). */
static void sort_desc(int *idx, int n, const size_t *bytes) {
  for (int i = 1; i < n; i++) {
    int v = idx[i], j = i;
    while (j > 0 && bytes[idx[j - 1]] < bytes[v]) idx[j] = idx[j - 1], j--;
    idx[j] = v;
  }
}

/* Matches blocks to unused slabs; unmatched blocks keep slab_of = -1. */
static void match(lmx_pool *p, int n, const int *idx, const size_t *bytes, const int *dt,
                  const int *di, int *slab_of, char *used) {
  for (int r = 0; r < n; r++) {
    int b = idx[r], best = -1;
    for (int s = 0; s < p->n; s++) {
      const lmx_slab *sl = &p->slab[s];
      if (used[s] || sl->bytes < bytes[b] || sl->dev_type != dt[b] || sl->dev_id != di[b]) continue;
      if (best < 0 || sl->bytes < p->slab[best].bytes) best = s;
    }
    slab_of[b] = best;
    if (best >= 0) used[best] = 1;
  }
}

/* One new arena for the unmatched blocks of device (t, d). */
static int new_arena(lmx_pool *p, int n, const int *idx, const size_t *bytes, const int *dt,
                     const int *di, int t, int d, int *slab_of, char *done) {
  size_t total = 0;
  for (int r = 0; r < n; r++) {
    int b = idx[r];
    if (slab_of[b] < 0 && dt[b] == t && di[b] == d) total += bytes[b];
  }
  lmx_shape sh = {1, {(int64_t)total}};
  lmx_ndarray *base;
  LMX_TRY(lmx_nd_create(&sh, LMX_UINT8, t, d, 1, &base));
  size_t off = 0;
  int rc = LMX_OK;
  for (int r = 0; r < n && rc == LMX_OK; r++) {
    int b = idx[r];
    if (slab_of[b] >= 0 || dt[b] != t || di[b] != d) continue;
    lmx_slab s = {base, off, bytes[b], t, d};
    rc = push_slab(p, &s);
    if (rc == LMX_OK) slab_of[b] = p->n - 1, done[p->n - 1] = 1, off += bytes[b];
  }
  if (rc == LMX_OK) p->bytes += total;
  lmx_nd_release(base); /* the slabs hold it */
  return rc;
}

int lmx_pool_take(lmx_pool *p, int n, const size_t *bytes, const int *dt, const int *di,
                  int *slab_of) {
  int *idx = lmx_alloc(((size_t)n + 1) * sizeof(int));
  char *used = lmx_calloc((size_t)p->n + (size_t)n + 1, 1);
  if (!idx || !used) {
    lmx_free(idx);
    lmx_free(used);
    return lmx_fail_nomem("pool matching", (size_t)n * 5);
  }
  for (int i = 0; i < n; i++) idx[i] = i;
  sort_desc(idx, n, bytes);
  match(p, n, idx, bytes, dt, di, slab_of, used);
  int rc = LMX_OK;
  for (int r = 0; r < n && rc == LMX_OK; r++) {
    int b = idx[r];
    if (slab_of[b] < 0) rc = new_arena(p, n, idx, bytes, dt, di, dt[b], di[b], slab_of, used);
  }
  lmx_free(idx);
  lmx_free(used);
  return rc;
}

int lmx_pool_zeros(lmx_pool *p, size_t bytes, int dev_type, int dev_id, lmx_ndarray **out) {
  int i = 0;
  while (i < p->nzeros &&
         !(p->zeros[i]->st->dev_type == dev_type && p->zeros[i]->st->dev_id == dev_id))
    i++;
  if (i < p->nzeros && lmx_nd_bytes(p->zeros[i]) >= bytes) {
    *out = p->zeros[i];
    return LMX_OK;
  }
  if (i == LMX_POOL_MAX_ZEROS)
    return lmx_fail(LMX_ERR_ARG, "executor pool: zeros on more than %d devices",
                    LMX_POOL_MAX_ZEROS);
  lmx_shape sh = {1, {(int64_t)(bytes ? bytes : 1)}};
  lmx_ndarray *z;
  LMX_TRY(lmx_nd_create(&sh, LMX_UINT8, dev_type, dev_id, 1, &z));
  if (i < p->nzeros) lmx_nd_release(p->zeros[i]);
  else p->nzeros++;
  p->zeros[i] = z;
  *out = z;
  return LMX_OK;
}
