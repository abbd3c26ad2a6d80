/* pad_index.h — Pad's index rules, one copy for the CPU kernels (kernels/cpu/spatial.c)
 * and the CUDA ones (kernels/cuda/spatial.cu), so both map positions alike.
 *
 * Along one axis of input size n padded by b before: output position o reads input
 *   constant: o - b when inside [0, n), else nothing (the constant);
 *   edge:     o - b clamped into [0, n);
 *   reflect:  o - b reflected at the ends without repeating them (n = 3, b = 2:
 *             positions 0..2 read 2 1 | 0 1 2 ...); needs b and the after-pad < n.
 * The gradient of input i gathers the output positions that read it, at most three
 * ranges per axis (lmx_pad_sources), so the backward needs no atomics. Include it after
 * the CUDA headers in .cu files (the simulator defines __host__ there).
 */
#ifndef LMX_KERNELS_PAD_INDEX_H
#define LMX_KERNELS_PAD_INDEX_H

#include <stdint.h>

#if defined(__CUDACC__) || defined(__host__)
#define LMX_PAD_HD __host__ __device__
#else
#define LMX_PAD_HD
#endif

enum { LMX_PADM_CONSTANT = 0, LMX_PADM_EDGE = 1, LMX_PADM_REFLECT = 2 };

/* Input position read by output position o, or -1 (constant mode outside the input). */
LMX_PAD_HD static inline int64_t lmx_pad_src(int mode, int64_t o, int64_t b, int64_t n) {
  int64_t i = o - b;
  if (i >= 0 && i < n) return i;
  if (mode == LMX_PADM_CONSTANT) return -1;
  if (mode == LMX_PADM_EDGE || n == 1) return i < 0 ? 0 : n - 1;
  return i < 0 ? -i : 2 * (n - 1) - i;
}

/* The output ranges [lo[k], hi[k]) (k < returned count, at most 3) of an axis of output
 * size m whose positions read input position i. */
LMX_PAD_HD static inline int lmx_pad_sources(int mode, int64_t i, int64_t b, int64_t n,
                                             int64_t m, int64_t *lo, int64_t *hi) {
  int k = 0;
  lo[k] = i + b, hi[k] = i + b + 1, k++;
  if (mode == LMX_PADM_CONSTANT) return k;
  if (mode == LMX_PADM_EDGE || n == 1) {
    if (i == 0) lo[0] = 0;
    if (i == n - 1) hi[0] = m;
    return k;
  }
  if (i > 0 && b - i >= 0) lo[k] = b - i, hi[k] = b - i + 1, k++;
  int64_t r = b + 2 * (n - 1) - i;
  if (i < n - 1 && r < m) lo[k] = r, hi[k] = r + 1, k++;
  return k;
}


/* The gradient of input element `e` (flat index into ishape) of an nd-D Pad (nd <= 5):
 * the sum (in double, in a fixed order) of gy at every output position that reads it; pw holds the
 * (before, after) pairs. T is the element type, S a suffix (f32, f64), LD(p, q) loads
 * p[q] as a double (the CUDA kernels widen float16 with it). */
#define LMX_PAD_DEF_GATHER(T, S, LD)                                                      \
  LMX_PAD_HD static inline double lmx_pad_gather_##S(int mode, int nd, const int64_t *ish, \
                                                      const int64_t *osh, const int64_t *pw, \
                                                      int64_t e, const T *gy) {           \
    int64_t lo[5][3], hi[5][3], cur[5];                                                   \
    int cnt[5], k[5];                                                                     \
    for (int a = nd - 1; a >= 0; a--) {                                                   \
      int64_t i = e % ish[a];                                                             \
      e /= ish[a];                                                                        \
      cnt[a] = lmx_pad_sources(mode, i, pw[2 * a], ish[a], osh[a], lo[a], hi[a]);         \
      k[a] = 0, cur[a] = lo[a][0];                                                        \
    }                                                                                     \
    double s = 0;                                                                         \
    for (;;) {                                                                            \
      int64_t q = 0;                                                                      \
      for (int a = 0; a < nd; a++) q = q * osh[a] + cur[a];                               \
      s += LD(gy, q);                                                                     \
      int a = nd - 1;                                                                     \
      for (; a >= 0; a--) {                                                               \
        if (++cur[a] < hi[a][k[a]]) break;                                                \
        if (++k[a] < cnt[a]) { cur[a] = lo[a][k[a]]; break; }                             \
        k[a] = 0, cur[a] = lo[a][0];                                                      \
      }                                                                                   \
      if (a < 0) return s;                                                                \
    }                                                                                     \
  }

#endif
