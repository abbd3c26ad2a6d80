/* kv_dist_shm.c — the dist store's all-reduce through the node's shared memory (the scheme
 * is described in kv_dist_shm.h). */
#include "kv_dist_shm.h"

#include <stdio.h>
#include <string.h>

#include "../core/status.h"
#include "../tensor/dtype.h"

enum { BLOCK = 512, MAXRANKS = 256 };

int lmx_kvd_shm_dtype(int dtype) {
  switch (dtype) {
    case LMX_FLOAT32:
    case LMX_FLOAT64:
    case LMX_FLOAT16:
    case LMX_UINT8:
    case LMX_INT32:
    case LMX_INT8:
    case LMX_INT64:
      return 1;
    default:
      return 0;
  }
}

/* The sum of elements [i0, i1) over the n sources p[], written to the ndst destinations;
 * a block at a time in a local accumulator, so that every source is read once. Full
 * blocks run loops of a constant count, which GCC vectorizes at -O2 too. */
#define SUM_KERNEL(NAME, T, ADD)                                                       \
  static inline __attribute__((always_inline)) void NAME##_block(                      \
      const char *const *p, int n, char *const *dst, int ndst, size_t i, size_t m) {   \
    T acc[BLOCK];                                                                      \
    const T *s0 = (const T *)p[0] + i;                                                 \
    for (size_t j = 0; j < m; j++) acc[j] = s0[j];                                     \
    for (int q = 1; q < n; q++) {                                                      \
      const T *s = (const T *)p[q] + i;                                                \
      for (size_t j = 0; j < m; j++) acc[j] = ADD(acc[j], s[j]);                       \
    }                                                                                  \
    for (int d = 0; d < ndst; d++) memcpy((T *)dst[d] + i, acc, m * sizeof(T));        \
  }                                                                                    \
  static void NAME(const char *const *p, int n, char *const *dst, int ndst, size_t i0, \
                   size_t i1) {                                                        \
    size_t i = i0;                                                                     \
    for (; i + BLOCK <= i1; i += BLOCK) NAME##_block(p, n, dst, ndst, i, BLOCK);       \
    if (i < i1) NAME##_block(p, n, dst, ndst, i, i1 - i);                              \
  }

#define ADD_F(a, b) ((a) + (b))
#define ADD_U8(a, b) ((uint8_t)((a) + (b)))
#define ADD_I8(a, b) ((int8_t)(uint8_t)((uint8_t)(a) + (uint8_t)(b)))
#define ADD_I32(a, b) ((int32_t)((uint32_t)(a) + (uint32_t)(b)))
#define ADD_I64(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define ADD_F16(a, b) lmx_f32_to_f16(lmx_f16_to_f32(a) + lmx_f16_to_f32(b))

SUM_KERNEL(sum_f32, float, ADD_F)
SUM_KERNEL(sum_f64, double, ADD_F)
SUM_KERNEL(sum_u8, uint8_t, ADD_U8)
SUM_KERNEL(sum_i8, int8_t, ADD_I8)
SUM_KERNEL(sum_i32, int32_t, ADD_I32)
SUM_KERNEL(sum_i64, int64_t, ADD_I64)
SUM_KERNEL(sum_f16, uint16_t, ADD_F16)

static void sum(int dtype, const char *const *p, int n, char *const *dst, int ndst, size_t i0,
                size_t i1) {
  switch (dtype) {
    case LMX_FLOAT32:
      sum_f32(p, n, dst, ndst, i0, i1);
      break;
    case LMX_FLOAT64:
      sum_f64(p, n, dst, ndst, i0, i1);
      break;
    case LMX_FLOAT16:
      sum_f16(p, n, dst, ndst, i0, i1);
      break;
    case LMX_UINT8:
      sum_u8(p, n, dst, ndst, i0, i1);
      break;
    case LMX_INT32:
      sum_i32(p, n, dst, ndst, i0, i1);
      break;
    case LMX_INT8:
      sum_i8(p, n, dst, ndst, i0, i1);
      break;
    default:
      sum_i64(p, n, dst, ndst, i0, i1);
      break;
  }
}

/* Copies bytes [0, a) and [b, len) of from to to (the parts outside a slice). */
static void outside(char *to, const char *from, size_t a, size_t b, size_t len) {
  if (a > 0) memcpy(to, from, a);
  if (b < len) memcpy(to + b, from + b, len - b);
}

int lmx_kvd_shm_allreduce(const lmx_kvd_shm *s, const char *src, char *out, char *val,
                          int64_t count, int dtype, const char *key) {
  size_t esz = (size_t)lmx_dtype_size(dtype), per_chunk = s->slot / esz;
  int n = s->nlocal, me = s->local;
  if (n > MAXRANKS || per_chunk == 0 || !lmx_kvd_shm_dtype(dtype))
    return lmx_fail(LMX_ERR_INTERNAL, "kvstore: shared-memory all-reduce of key '%s': unsupported",
                    key);
  char *res = s->seg + (size_t)n * s->slot;
  char what[160];
  snprintf(what, sizeof what, "push of key '%s' (shared-memory all-reduce)", key);
  const char *p[MAXRANKS];
  int ndst = val ? 3 : 2;
  for (size_t c = 0; c < (size_t)count; c += per_chunk) {
    size_t m = (size_t)count - c < per_chunk ? (size_t)count - c : per_chunk;
    size_t line = 64 / esz, slice = ((m + (size_t)n - 1) / (size_t)n + line - 1) / line * line;
    size_t a = (size_t)me * slice < m ? (size_t)me * slice : m, b = a + slice < m ? a + slice : m;
    const char *sc = src + c * esz;
    char *oc = out + c * esz;
    outside(s->seg + (size_t)me * s->slot, sc, a * esz, b * esz, m * esz);
    LMX_TRY(s->barrier(s->ctx, what));
    for (int q = 0; q < n; q++) p[q] = q == me ? sc : s->seg + (size_t)q * s->slot;
    char *dst[3] = {oc, res, val ? val + c * esz : NULL}; /* element 0 of the chunk */
    sum(dtype, p, n, dst, ndst, a, b);
    LMX_TRY(s->barrier(s->ctx, what));
    outside(oc, res, a * esz, b * esz, m * esz);
    if (val) outside(val + c * esz, res, a * esz, b * esz, m * esz);
  }
  return LMX_OK;
}
