/* kv_nccl_plan.c — the `nccl` kvstore's argument derivation (see kv_nccl_plan.h): dtype
 * to NCCL type, distinct devices and ranks, bucket planning. Pure functions, no
 * allocation, built in every configuration so the CPU tests cover them.
 */
#include "kv_nccl_plan.h"

#include "../tensor/dtype.h"

int lmx_nccl_dtype(int dtype) {
  switch (dtype) {
    case LMX_FLOAT32: return LMX_NCCL_FLOAT32;
    case LMX_FLOAT64: return LMX_NCCL_FLOAT64;
    case LMX_FLOAT16: return LMX_NCCL_FLOAT16;
    case LMX_UINT8: return LMX_NCCL_UINT8;
    case LMX_INT32: return LMX_NCCL_INT32;
    case LMX_INT8: return LMX_NCCL_INT8;
    case LMX_INT64: return LMX_NCCL_INT64;
    default: return -1;
  }
}

int lmx_nccl_distinct(const int *devs, int n, int *uniq, int *dup) {
  int nu = 0;
  *dup = 0;
  for (int i = 0; i < n; i++) {
    int at = 0; /* insertion point in the sorted uniq */
    while (at < nu && uniq[at] < devs[i]) at++;
    if (at < nu && uniq[at] == devs[i]) {
      *dup = 1;
      continue;
    }
    for (int j = nu; j > at; j--) uniq[j] = uniq[j - 1];
    uniq[at] = devs[i];
    nu++;
  }
  return nu;
}

int lmx_nccl_ranks(const int *devs, int n, const int *uniq, int nu, int *rank) {
  for (int i = 0; i < n; i++) {
    rank[i] = -1;
    for (int r = 0; r < nu && rank[i] < 0; r++)
      if (uniq[r] == devs[i]) rank[i] = r;
    if (rank[i] < 0) return -1;
  }
  return 0;
}

int lmx_nccl_local_groups(const int *rank, int n, int nu, int *order, int *start) {
  if (n < 1 || nu < 1 || nu > LMX_NCCL_MAX_RANKS) return -1;
  for (int r = 0; r <= nu; r++) start[r] = 0;
  for (int i = 0; i < n; i++) {
    if (rank[i] < 0 || rank[i] >= nu) return -1;
    start[rank[i] + 1]++;
  }
  int most = 0;
  for (int r = 0; r < nu; r++) {
    int cnt = start[r + 1];
    if (cnt == 0) return -1;
    if (cnt > most) most = cnt;
    start[r + 1] = start[r] + cnt;
  }
  /* a stable placement: within a rank, values keep the order given */
  int at[LMX_NCCL_MAX_RANKS];
  for (int r = 0; r < nu; r++) at[r] = start[r];
  for (int i = 0; i < n; i++) order[at[rank[i]]++] = i;
  return most;
}

size_t lmx_nccl_bucket_bytes(const lmx_nccl_bucket *b) {
  return (size_t)b->count * (size_t)lmx_dtype_size(b->dtype);
}

int lmx_nccl_plan(int n, const int *dtype, const int64_t *count, size_t cap, size_t align,
                  lmx_nccl_slot *slot, lmx_nccl_bucket *bucket) {
  if (n < 0 || align == 0) return -1;
  if (cap == 0) cap = LMX_NCCL_BUCKET_BYTES;
  int open[LMX_NUM_DTYPES]; /* the bucket still taking keys of each dtype, or -1 */
  for (int d = 0; d < LMX_NUM_DTYPES; d++) {
    open[d] = -1;
    if (lmx_dtype_valid(d) && align % (size_t)lmx_dtype_size(d) != 0) return -1;
  }
  int nb = 0;
  for (int k = 0; k < n; k++) {
    int dt = dtype[k];
    if (lmx_nccl_dtype(dt) < 0 || count[k] < 1) return -1;
    size_t es = (size_t)lmx_dtype_size(dt);
    if ((size_t)count[k] > cap / es) { /* large: a bucket of its own, never reopened */
      bucket[nb] = (lmx_nccl_bucket){.dtype = dt, .fused = 0, .nkeys = 1, .count = count[k]};
      slot[k] = (lmx_nccl_slot){.bucket = nb++, .offset = 0};
      continue;
    }
    int64_t step = (int64_t)(align / es);
    int b = open[dt];
    int64_t at = b < 0 ? 0 : (bucket[b].count + step - 1) / step * step;
    if (b < 0 || (size_t)(at + count[k]) > cap / es) { /* start a new bucket */
      b = open[dt] = nb++;
      bucket[b] = (lmx_nccl_bucket){.dtype = dt, .fused = 1, .nkeys = 0, .count = 0};
      at = 0;
    }
    slot[k] = (lmx_nccl_slot){.bucket = b, .offset = at};
    bucket[b].count = at + count[k];
    bucket[b].nkeys++;
  }
  for (int b = 0; b < nb; b++)
    if (bucket[b].nkeys == 1) bucket[b].fused = 0; /* alone: reduced straight from the value */
  return nb;
}
