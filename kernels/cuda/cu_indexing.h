/* cu_indexing.h — CUDA launchers of the indexing and sequence operators
 * (kernels/cuda/indexing.cu): take / Embedding forward and backward, one_hot, where and
 * its gradient, SequenceMask, SequenceLast (and its gradient), SequenceReverse. They
 * mirror the loops of the CPU glue (src/ops/cpu/indexing.c, sequence.c), which has no
 * kernel of its own: same index rules, same accumulation order. Stream first; every
 * pointer is device memory. Index / length / condition arrays may be of any of the 7
 * dtypes (read through double and truncated toward zero, as lmx_load_f64 and a C cast);
 * their dtype is passed as idt / ldt / cdt. Data dtypes: float32, float64, float16
 * (float arithmetic) unless said otherwise. Return 0, a cudaError_t code from the launch,
 * or -1 for an unsupported dtype / mode. Nothing here synchronises or allocates.
 */
#ifndef LMX_KERNELS_CU_INDEXING_H
#define LMX_KERNELS_CU_INDEXING_H

#include "cu_base.h"

LMX_CU_BEGIN

/* index modes of take (the CPU glue's clip / wrap / raise) */
enum { LMX_CU_TAKE_CLIP, LMX_CU_TAKE_WRAP, LMX_CU_TAKE_RAISE };

/* out[outer, K, inner] = a[outer, A, inner] gathered at rows idx[K] (A > 0): clip clamps an
 * index into [0, A), wrap takes it modulo A; raise also clamps (never reads out of
 * bounds) and, when bad.word is not NULL, reports an out-of-range index to it (position
 * k, value the truncated index; see lmx_cu_raise_word), read by the runtime at the next
 * synchronisation. Any of the 7 dtypes for a (copied, not converted); no accumulation
 * (the CPU refuses req ADD). */
int lmx_cu_take(lmx_cu_stream s, int dt, int idt, int64_t outer, int64_t A, int64_t inner,
                int64_t K, void *out, const void *a, const void *idx, int mode,
                lmx_cu_raise bad);
/* ga[outer, A, inner] (+)= the scatter of g[outer, K, inner] into the rows idx[K] resolved as
 * in lmx_cu_take (raise clamps). Deterministic, no atomics: one thread per (outer, inner)
 * column zeroes it (acc 0) then adds the K rows in index order, storing after every add,
 * so the result equals the CPU glue's bit for bit in every dtype. */
int lmx_cu_take_bwd(lmx_cu_stream s, int dt, int idt, int64_t outer, int64_t A, int64_t inner,
                    int64_t K, void *ga, const void *g, const void *idx, int mode, int acc);
/* out[K, depth] = on where depth position (int64)idx[k] (when 0 <= idx[k] < depth), off
 * elsewhere. Any of the 7 dtypes for out (stored as lmx_store_f64 does). */
int lmx_cu_one_hot(lmx_cu_stream s, int odt, int idt, int64_t K, int64_t depth, void *out,
                   const void *idx, double on, double off);
/* out[n] (+)= cond[i / row] != 0 ? x[n] : y[n] (row 1: same shape; else a 1-D condition
 * selecting whole rows of row elements), computed in double as the CPU glue does */
int lmx_cu_where(lmx_cu_stream s, int dt, int cdt, int64_t n, int64_t row, void *out,
                 const void *cond, const void *x, const void *y, int acc);
/* gout[n] (+)= g[n] where the condition picks side (1: x, 2: y), 0 elsewhere */
int lmx_cu_where_bwd(lmx_cu_stream s, int dt, int cdt, int64_t n, int64_t row, int side,
                     void *gout, const void *g, const void *cond, int acc);

/* Sequence data is [T, N, R] (axis 0) or [N, T, R] (axis 1); len[N] (may be NULL: every
 * length T) of dtype ldt is truncated and clamped into [0, T] ([1, T] for SequenceLast).
 * dst never aliases src except in SequenceMask (same position read and written). */
/* dst (+)= src at t < L, value (acc: += value) beyond */
int lmx_cu_seq_mask(lmx_cu_stream s, int dt, int ldt, int axis, int64_t T, int64_t N,
                    int64_t R, void *dst, const void *src, const void *len, double value,
                    int acc);
/* out[N, R] (+)= x[L-1, b] (T > 0) */
int lmx_cu_seq_last(lmx_cu_stream s, int dt, int ldt, int axis, int64_t T, int64_t N,
                    int64_t R, void *out, const void *x, const void *len, int acc);
/* gx[T, N, R] (+)= g[b] at t = L-1, 0 elsewhere (T > 0) */
int lmx_cu_seq_last_bwd(lmx_cu_stream s, int dt, int ldt, int axis, int64_t T, int64_t N,
                        int64_t R, void *gx, const void *g, const void *len, int acc);
/* dst[t, b] (+)= src[L-1-t, b] for t < L, src[t, b] beyond */
int lmx_cu_seq_reverse(lmx_cu_stream s, int dt, int ldt, int axis, int64_t T, int64_t N,
                       int64_t R, void *dst, const void *src, const void *len, int acc);

LMX_CU_END

#endif
