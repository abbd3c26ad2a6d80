/* cu_sort.h — CUDA launchers of topk / sort / argsort and of the values' gradient
 * (kernels/cuda/sort.cu), the twins of kernels/cpu/sort.c with the same order: ascending
 * or descending along n, ties by index (stable), NaNs after every number. A simple per-row
 * rank count: one thread per element counts the elements of its row that come before it
 * (O(n) each, so O(n^2) per row), then writes its value / index / mask or reads its
 * gradient; deterministic, no atomics, no workspace. Stream first; every pointer is device
 * memory. Return 0, a cudaError_t code, or -1 for an unsupported dtype. */
#ifndef LMX_KERNELS_CU_SORT_H
#define LMX_KERNELS_CU_SORT_H

#include "cu_base.h"

LMX_CU_BEGIN

/* x[outer, n, inner] (any of the 7 dtypes): val[outer, k, inner] (+)= the first k values in
 * order (x's dtype), idx[...] = their indices (idt), mask[outer, n, inner] = 1 at them, 0
 * elsewhere (x's dtype); NULL skips one. */
int lmx_cu_topk(lmx_cu_stream s, int dt, int idt, int64_t outer, int64_t n, int64_t inner,
                int64_t k, int asc, const void *x, void *val, void *idx, void *mask, int acc);
/* gx[outer, n, inner] (+)= g[outer, k, inner] at the picked positions, 0 elsewhere
 * (float32 / float64 / float16) */
int lmx_cu_topk_bwd(lmx_cu_stream s, int dt, int64_t outer, int64_t n, int64_t inner,
                    int64_t k, int asc, const void *x, void *gx, const void *g, int acc);

LMX_CU_END

#endif
