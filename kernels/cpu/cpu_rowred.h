/* cpu_rowred.h — private to the CPU kernels: reductions of one contiguous row that
 * vectorise without -ffast-math. A plain `s += x[j]` loop is one serial chain (the
 * compiler may not reassociate float additions), bound by the add latency; these keep
 * LMX_ROW_LANES independent partial results, one per position modulo the lane count,
 * and merge them pairwise, so the loops vectorise at any width. The summation order is
 * fixed (the same result on every call), but differs from a left-to-right sum.
 * Static inline: inside a LMX_SIMD_CLONES function each clone gets its own width. */
#ifndef LMX_KERNELS_CPU_ROWRED_H
#define LMX_KERNELS_CPU_ROWRED_H

#include <stdint.h>

enum { LMX_ROW_LANES = 32 };

/* Forced: GCC otherwise keeps these out of line when the caller is a target_clones
 * function, and the out-of-line copy is baseline SSE2 (softmax rows ran 4.7x slower). */
#define LMX_ROW_INLINE static inline __attribute__((always_inline))

/* lmx_row_<what>_<S>: sum of EXPR(j) over j < n (sum, dot, sum of exp(scale·(x - m))) and
 * the maximum (v > m ? v : m, so a NaN is kept only if it comes first in its lane). */
#define LMX_ROW_SUM_FN(T, S, NAME, PARAMS, EXPR)                                           \
  LMX_ROW_INLINE T lmx_row_##NAME##_##S PARAMS {                                            \
    T part[LMX_ROW_LANES] = {0};                                                           \
    int64_t j = 0;                                                                         \
    for (; j + LMX_ROW_LANES <= n; j += LMX_ROW_LANES)                                     \
      for (int l = 0; l < LMX_ROW_LANES; l++) {                                            \
        int64_t k = j + l;                                                                 \
        part[l] += (T)(EXPR);                                                              \
      }                                                                                    \
    for (int w = LMX_ROW_LANES / 2; w >= 1; w /= 2)                                        \
      for (int l = 0; l < w; l++) part[l] += part[l + w];                                  \
    T s = part[0];                                                                         \
    for (int64_t k = j; k < n; k++) s += (T)(EXPR);                                        \
    return s;                                                                              \
  }

#define LMX_ROW_MAX_FN(T, S)                                                               \
  LMX_ROW_INLINE T lmx_row_max_##S(const T *x, int64_t n) {                                 \
    if (n < LMX_ROW_LANES) {                                                               \
      T m = x[0];                                                                          \
      for (int64_t k = 1; k < n; k++) m = x[k] > m ? x[k] : m;                             \
      return m;                                                                            \
    }                                                                                      \
    T part[LMX_ROW_LANES];                                                                 \
    for (int l = 0; l < LMX_ROW_LANES; l++) part[l] = x[l];                                \
    int64_t j = LMX_ROW_LANES;                                                             \
    for (; j + LMX_ROW_LANES <= n; j += LMX_ROW_LANES)                                     \
      for (int l = 0; l < LMX_ROW_LANES; l++)                                              \
        part[l] = x[j + l] > part[l] ? x[j + l] : part[l];                                 \
    for (int w = LMX_ROW_LANES / 2; w >= 1; w /= 2)                                        \
      for (int l = 0; l < w; l++) part[l] = part[l + w] > part[l] ? part[l + w] : part[l]; \
    T m = part[0];                                                                         \
    for (; j < n; j++) m = x[j] > m ? x[j] : m;                                            \
    return m;                                                                              \
  }

/* y[k] = exp(scale·(x[k] - m)) for k < n, returning their sum (one pass: softmax). */
#define LMX_ROW_EXPSUM_FN(T, S)                                                            \
  LMX_ROW_INLINE T lmx_row_expsum_##S(const T *x, T *y, int64_t n, T m, T scale) {          \
    T part[LMX_ROW_LANES] = {0};                                                           \
    int64_t j = 0;                                                                         \
    for (; j + LMX_ROW_LANES <= n; j += LMX_ROW_LANES)                                     \
      for (int l = 0; l < LMX_ROW_LANES; l++) {                                            \
        T e = XEXP((T)((x[j + l] - m) * scale));                                           \
        y[j + l] = e;                                                                      \
        part[l] += e;                                                                      \
      }                                                                                    \
    for (int w = LMX_ROW_LANES / 2; w >= 1; w /= 2)                                        \
      for (int l = 0; l < w; l++) part[l] += part[l + w];                                  \
    T s = part[0];                                                                         \
    for (; j < n; j++) s += y[j] = XEXP((T)((x[j] - m) * scale));                          \
    return s;                                                                              \
  }

#define LMX_ROW_FNS(T, S)                                                                  \
  LMX_ROW_EXPSUM_FN(T, S)                                                                  \
  LMX_ROW_SUM_FN(T, S, sum, (const T *x, int64_t n), x[k])                                 \
  LMX_ROW_SUM_FN(T, S, dot, (const T *x, const T *y, int64_t n), x[k] * y[k])              \
  LMX_ROW_SUM_FN(T, S, sumexp, (const T *x, int64_t n, T m, T scale),                     \
                 XEXP((T)((x[k] - m) * scale)))                                            \
  LMX_ROW_MAX_FN(T, S)

#endif
