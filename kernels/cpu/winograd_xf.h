/* winograd_xf.h — inside the Winograd kernels: the transforms of one tile size, each over n
 * filters or tiles at unit stride (so they vectorise), with the positions of the
 * transformed domain (P = (m + 2)² of them, row-major) in rows of a given stride.
 * winograd.c moves planes in and out of these rows; winograd2.c (F(2x2, 3x3)) and
 * winograd4.c (F(4x4, 3x3)) have the arithmetic. */
#ifndef LMX_KERNELS_CPU_WINOGRAD_XF_H
#define LMX_KERNELS_CPU_WINOGRAD_XF_H

#include <stdint.h>

typedef struct {
  /* U (P rows, stride us) <- G g Gᵀ of 3x3 filters g (9 rows of taps, stride gs) */
  void (*wt)(int64_t n, const float *g, int64_t gs, float *U, int64_t us);
  /* g (9 rows, stride gs) <- Gᵀ dU G */
  void (*wt_adj)(int64_t n, const float *dU, int64_t us, float *g, int64_t gs);
  /* V (P rows) <- Bᵀ d B of input tiles d (P rows: tile element (i, j) in row i(m + 2) + j) */
  void (*in)(int64_t n, const float *D, int64_t ds, float *V, int64_t vs);
  /* D (P rows) <- B dV Bᵀ */
  void (*in_adj)(int64_t n, const float *dV, int64_t vs, float *D, int64_t ds);
  /* E (m² rows: output (i, j) in row i·m + j) <- Aᵀ M A */
  void (*out)(int64_t n, const float *M, int64_t ms, float *E, int64_t es);
  /* dM (P rows) <- A dE Aᵀ */
  void (*out_adj)(int64_t n, const float *E, int64_t es, float *dM, int64_t ms);
} lmx_wino_xf;

extern const lmx_wino_xf lmx_wino_xf2, lmx_wino_xf4;

/* Defines the transform `name`: Y = T X Tᵀ of n tiles, X (K x K positions, rows of stride
 * xs) to Y (L x L, stride ys), for the 1-D map MAP(a, b): b[0, L) = T a[0, K). T along the
 * columns first, then along the rows; the small arrays live in registers, the loop over
 * tiles is the vector loop (one clone per x86-64 vector width; cpu_par.h). */
#define LMX_WINO_2D(name, K, L, MAP)                                                       \
  LMX_SIMD_CLONES                                                                          \
  static void name(int64_t n, const float *restrict X, int64_t xs, float *restrict Y,      \
                   int64_t ys) {                                                           \
    _Pragma("GCC ivdep") for (int64_t u = 0; u < n; u++) {                                 \
      float t_[L][K], a_[K], b_[L];                                                        \
      _Pragma("GCC unroll 8") for (int j = 0; j < K; j++) {                                \
        _Pragma("GCC unroll 8") for (int i = 0; i < K; i++) a_[i] = X[(i * K + j) * xs + u]; \
        MAP(a_, b_)                                                                        \
        _Pragma("GCC unroll 8") for (int i = 0; i < L; i++) t_[i][j] = b_[i];              \
      }                                                                                    \
      _Pragma("GCC unroll 8") for (int r = 0; r < L; r++) {                                \
        MAP(t_[r], b_)                                                                     \
        _Pragma("GCC unroll 8") for (int c = 0; c < L; c++) Y[(r * L + c) * ys + u] = b_[c]; \
      }                                                                                    \
    }                                                                                      \
  }

#endif
