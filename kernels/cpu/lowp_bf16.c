/* lowp_bf16.c — bfloat16 FullyConnected with AVX512_BF16 (vdpbf16ps).
 *
 * y[m, n] (+)= x[m, k] · w[n, k]ᵀ (+ b[n]): both operands are rows of k contiguous
 * bfloat16, so each output is one dot product. vdpbf16ps multiplies 32 bfloat16 pairs
 * per instruction (each product of two bfloat16 is exact in float32) and adds them
 * pairwise into 16 float32 lanes; the lanes are summed at the end, the bias added in
 * float32, and the result rounded to bfloat16 once (round to nearest even), as the
 * float32-staging fallback does. The differences from that fallback: the summation
 * order, and vdpbf16ps treats denormal inputs as zero and flushes denormal sums (it
 * ignores MXCSR), so results agree within bfloat16 rounding, not bit for bit.
 *
 * Backward is the same kernel on transposed copies (bfloat16, in the caller's scratch):
 * gx = g · w is g's rows dotted with the rows of wᵀ, gw = gᵀ · x the rows of gᵀ with
 * those of xᵀ; the bias gradient is a float32 column sum, rounded once.
 *
 * Blocking: 4 rows of x by 4 rows of w per step share their loads (8 loads, 16
 * vdpbf16ps per 32 k); the tail of k uses masked loads (zeros contribute nothing).
 * Blocks of rows run in parallel when the product is large (OpenMP, static schedule:
 * each output is computed by one thread, so results do not depend on the thread count).
 *
 * Compiled for any x86-64: only the functions marked BF16 use the instructions, and
 * lmx_cpu_bf16_fc runs them only when lmx_cpu_features reports AVX512_BF16 (with F and
 * BW, and the OS saving zmm state); elsewhere it returns -1 and the caller stages in
 * float32. lmx_cpu_bf16_dot_force_off switches the fast path off (the fallback then
 * runs everywhere), for comparisons and as an escape hatch.
 */
#include <stdatomic.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"

static atomic_int g_forced_off;

void lmx_cpu_bf16_dot_force_off(int off) {
  atomic_store(&g_forced_off, off != 0);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#define BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))

static int cpu_has_bf16(void) {
  static atomic_int known = -1; /* -1: not asked yet (a race only asks twice) */
  int k = atomic_load(&known);
  if (k < 0) {
    uint64_t f = 0;
    lmx_cpu_features(&f);
    uint64_t need =
        (1ull << LMX_CPU_AVX512F) | (1ull << LMX_CPU_AVX512BW) | (1ull << LMX_CPU_AVX512_BF16);
    k = (f & need) == need;
    atomic_store(&known, k);
  }
  return k;
}

/* 32 bfloat16 from p, the first `left` of them (the rest zero) when left < 32. */
static inline BF16 __m512bh load32(const uint16_t *p, int64_t left) {
  if (left >= 32) return (__m512bh)_mm512_loadu_si512((const void *)p);
  __mmask32 mk = (__mmask32)((1ull << left) - 1);
  return (__m512bh)_mm512_maskz_loadu_epi16(mk, (const void *)p);
}

static inline float finish(float s, const uint16_t *b, int64_t j, const uint16_t *y, int acc) {
  if (b) s += lmx_bf16_to_f32(b[j]);
  if (acc) s += lmx_bf16_to_f32(*y);
  return s;
}

/* One block: rows [i0, i0 + mr) of x by rows [j0, j0 + nr) of w, mr, nr <= 4. Inlined
 * with constants for the full 4 x 4 block so the accumulators stay in registers. */
static inline __attribute__((always_inline)) BF16 void block(int mr, int nr, int64_t i0, int64_t j0,
                                                             int64_t k, int64_t n, uint16_t *y,
                                                             const uint16_t *x, const uint16_t *w,
                                                             const uint16_t *b, int acc) {
  __m512 s[4][4];
  for (int a = 0; a < mr; a++)
    for (int c = 0; c < nr; c++) s[a][c] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; p += 32) {
    __m512bh xv[4], wv[4];
    for (int a = 0; a < mr; a++) xv[a] = load32(x + (i0 + a) * k + p, k - p);
    for (int c = 0; c < nr; c++) wv[c] = load32(w + (j0 + c) * k + p, k - p);
    for (int a = 0; a < mr; a++)
      for (int c = 0; c < nr; c++) s[a][c] = _mm512_dpbf16_ps(s[a][c], xv[a], wv[c]);
  }
  for (int a = 0; a < mr; a++)
    for (int c = 0; c < nr; c++) {
      uint16_t *yp = y + (i0 + a) * n + j0 + c;
      *yp = lmx_f32_to_bf16(finish(_mm512_reduce_add_ps(s[a][c]), b, j0 + c, yp, acc));
    }
}

static BF16 void block_edge(int mr, int nr, int64_t i0, int64_t j0, int64_t k, int64_t n,
                            uint16_t *y, const uint16_t *x, const uint16_t *w, const uint16_t *b,
                            int acc) {
  block(mr, nr, i0, j0, k, n, y, x, w, b, acc);
}

/* The full 4 x 4 block with its 16 accumulators named, so they stay in registers (the
 * array form above is kept in memory by GCC 12 at -O3): rows i0.. of x by rows j0.. of w. */
#define DOT4(r)                                                                                 \
  a##r##0 = _mm512_dpbf16_ps(a##r##0, x##r, w0), a##r##1 = _mm512_dpbf16_ps(a##r##1, x##r, w1), \
  a##r##2 = _mm512_dpbf16_ps(a##r##2, x##r, w2), a##r##3 = _mm512_dpbf16_ps(a##r##3, x##r, w3)
static BF16 void block44(int64_t i0, int64_t j0, int64_t k, int64_t n, uint16_t *y,
                         const uint16_t *x, const uint16_t *w, const uint16_t *b, int acc) {
  __m512 a00 = _mm512_setzero_ps(), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00;
  __m512 a12 = a00, a13 = a00, a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00;
  __m512 a31 = a00, a32 = a00, a33 = a00;
  const uint16_t *xp = x + i0 * k, *wp = w + j0 * k;
  for (int64_t p = 0; p < k; p += 32) { /* the last step loads a masked tail */
    int64_t left = k - p;
    __m512bh x0 = load32(xp + p, left), x1 = load32(xp + k + p, left);
    __m512bh x2 = load32(xp + 2 * k + p, left), x3 = load32(xp + 3 * k + p, left);
    __m512bh w0 = load32(wp + p, left), w1 = load32(wp + k + p, left);
    __m512bh w2 = load32(wp + 2 * k + p, left), w3 = load32(wp + 3 * k + p, left);
    DOT4(0);
    DOT4(1);
    DOT4(2);
    DOT4(3);
  }
  __m512 s[16] = {a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22, a23, a30, a31, a32, a33};
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < 4; c++) {
      uint16_t *yp = y + (i0 + r) * n + j0 + c;
      *yp = lmx_f32_to_bf16(finish(_mm512_reduce_add_ps(s[r * 4 + c]), b, j0 + c, yp, acc));
    }
}
#undef DOT4

/* Rows [i0, i0 + mr) of y (mr <= 4), all columns. */
static BF16 void row_block(int mr, int64_t i0, int64_t k, int64_t n, uint16_t *y, const uint16_t *x,
                           const uint16_t *w, const uint16_t *b, int acc) {
  int64_t j = 0;
  if (mr == 4)
    for (; j + 4 <= n; j += 4) block44(i0, j, k, n, y, x, w, b, acc);
  for (; j < n; j += 4) block_edge(mr, n - j < 4 ? (int)(n - j) : 4, i0, j, k, n, y, x, w, b, acc);
}

int lmx_cpu_bf16_fc(int64_t m, int64_t k, int64_t n, uint16_t *y, const uint16_t *x,
                    const uint16_t *w, const uint16_t *b, int acc) {
  if (atomic_load(&g_forced_off) || !cpu_has_bf16()) return -1;
  int64_t blocks = (m + 3) / 4;
  int par = m * n * k >= (int64_t)1 << 21 && blocks > 1;
#pragma omp parallel for schedule(static) if (par)
  for (int64_t bi = 0; bi < blocks; bi++) {
    int64_t i0 = bi * 4;
    row_block(m - i0 < 4 ? (int)(m - i0) : 4, i0, k, n, y, x, w, b, acc);
  }
  return 0;
}

int lmx_cpu_bf16_dot_available(void) {
  return !atomic_load(&g_forced_off) && cpu_has_bf16();
}

/* t[c, r] = a[r, c] for a [rows, cols] */
static void transpose(int64_t rows, int64_t cols, const uint16_t *a, uint16_t *t) {
  enum { B = 32 };
  for (int64_t r0 = 0; r0 < rows; r0 += B)
    for (int64_t c0 = 0; c0 < cols; c0 += B)
      for (int64_t r = r0; r < r0 + B && r < rows; r++)
        for (int64_t c = c0; c < c0 + B && c < cols; c++) t[c * rows + r] = a[r * cols + c];
}

int lmx_cpu_bf16_fc_bwd(int64_t m, int64_t k, int64_t n, const uint16_t *g, const uint16_t *x,
                        const uint16_t *w, uint16_t *gx, int acc_x, uint16_t *gw, int acc_w,
                        uint16_t *gb, int acc_b, uint16_t *tmp) {
  if (atomic_load(&g_forced_off) || !cpu_has_bf16()) return -1;
  if (gx) { /* gx[m, k] = g[m, n] · (wᵀ[k, n])ᵀ */
    transpose(n, k, w, tmp);
    lmx_cpu_bf16_fc(m, n, k, gx, g, tmp, NULL, acc_x);
  }
  if (gw) { /* gw[n, k] = gᵀ[n, m] · (xᵀ[k, m])ᵀ */
    uint16_t *gt = tmp, *xt = tmp + n * m;
    transpose(m, n, g, gt);
    transpose(m, k, x, xt);
    lmx_cpu_bf16_fc(n, m, k, gw, gt, xt, NULL, acc_w);
  }
  if (gb)
    for (int64_t j = 0; j < n; j++) { /* float32 column sums, as the fallback's */
      float s = acc_b ? lmx_bf16_to_f32(gb[j]) : 0.0f, c = 0.0f;
      for (int64_t i = 0; i < m; i++) c += lmx_bf16_to_f32(g[i * n + j]);
      gb[j] = lmx_f32_to_bf16(s + c);
    }
  return 0;
}

#else

int lmx_cpu_bf16_fc(int64_t m, int64_t k, int64_t n, uint16_t *y, const uint16_t *x,
                    const uint16_t *w, const uint16_t *b, int acc) {
  (void)m, (void)k, (void)n, (void)y, (void)x, (void)w, (void)b, (void)acc;
  return -1;
}

int lmx_cpu_bf16_dot_available(void) {
  return 0;
}

int lmx_cpu_bf16_fc_bwd(int64_t m, int64_t k, int64_t n, const uint16_t *g, const uint16_t *x,
                        const uint16_t *w, uint16_t *gx, int acc_x, uint16_t *gw, int acc_w,
                        uint16_t *gb, int acc_b, uint16_t *tmp) {
  (void)m, (void)k, (void)n, (void)g, (void)x, (void)w, (void)gx, (void)acc_x, (void)gw;
  (void)acc_w, (void)gb, (void)acc_b, (void)tmp;
  return -1;
}

#endif
