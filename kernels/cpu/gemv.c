/* gemv.c — float32 FullyConnected forward for a few rows of x (batch-1 inference):
 * y[m, n] (+)= x[m, k] · w[n, k]ᵀ (+ b[n]) with m = 1, or m <= LMX_FC_SMALL_M and w
 * large (see GEMV_MIN_MNK), as streaming dot products over w's rows instead of a GEMM.
 *
 * Why: at m = 1 the product is a matrix-vector product bound by reading w once (W5's MLP:
 * 2.7 MB of weights, from L3; one Zen 5 core's L2 holds 1 MiB). OpenBLAS's sgemm runs its
 * small-matrix kernel there on one thread (94% of a batch-1 forward in perf), at the rate
 * one core reads L3 (~100 GB/s; this kernel reads no faster on one core). Here each weight
 * vector is loaded once and used for one (m = 1) or two rows of x, the bias is added in
 * the same pass, and the rows of w are split over the OpenMP threads when w is large
 * enough that a second core's bandwidth pays for the fork (W5's two large layers: 16.0 ->
 * 7.5 and 9.4 -> 4.9 us with 2 threads). The price: like any parallel region, a forward
 * then waits for the other thread to be scheduled, milliseconds on an oversubscribed
 * machine (OMP_NUM_THREADS=1 avoids it; bench/README.md has the figures).
 *
 * Kernels: AVX-512F (16 lanes, masked tails) or AVX2+FMA (8 lanes, maskload tails),
 * chosen once from lmx_cpu_features (which requires the OS to save the registers);
 * elsewhere, for float64, for other shapes, or when forced off
 * (lmx_cpu_fc_small_force_blas), lmx_cpu_fc_small_f32 returns -1 and the caller runs
 * the GEMM. Results agree with the GEMM's within float32 rounding of another summation
 * order; they do not depend on the thread count.
 */
#include <omp.h>
#include <stdatomic.h>

#include "cpu_kernels.h"

/* Measured against OpenBLAS 0.3.21's sgemm (Cooperlake kernels) on one Zen 5 core,
 * w of 128..512 rows by 512..784: at m = 1 both stream w at the same rate (16.0 vs 16.2 us
 * for 512 x 784, 9.4 vs 9.1 for 512 x 512), so m = 1 always comes here, where the rows
 * can be split over threads. For 2 <= m <= 8 OpenBLAS's small-matrix kernel is 1.5-2x
 * faster while m·n·k stays under about 2^20, and 2-3x slower above, where its GEMM packs
 * w on every call (512 x 784, m = 3: 36 vs 109 us; m = 8: 69 vs 114): those come here
 * only from GEMV_MIN_MNK. Weight bytes per thread below which a row split does not pay
 * for the fork/join (about 1.5 us between back-to-back calls on the shared 2-core
 * machine): 128 x 784 (400 KB) broke even, 256 x 784 went from 6.5 to 4.7 us. */
enum { GEMV_MIN_MNK = 1 << 20, GEMV_PAR_BYTES = 256 * 1024 };

static atomic_int g_forced_blas, g_isa_cap = 2;

void lmx_cpu_fc_small_force_blas(int on) {
  atomic_store(&g_forced_blas, on != 0);
}

void lmx_cpu_fc_small_cap_isa(int level) {
  atomic_store(&g_isa_cap, level < 0 ? 0 : level > 2 ? 2 : level);
}

static inline void finish(float *y, float s, const float *b, int64_t j, int acc) {
  float v = acc ? *y + s : s;
  if (b) v += b[j];
  *y = v;
}

typedef void (*rows_fn)(int64_t m, int64_t k, int64_t n, int64_t j0, int64_t j1, float *y,
                        const float *x, const float *w, const float *b, int acc);

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

/* ---- AVX-512F ---------------------------------------------------------------------- */
#define V __m512
#define VL 16
#define ISA __attribute__((target("avx512f")))
#define F(name) name##_avx512
#define NR2 8
#define VZERO() _mm512_setzero_ps()
#define VLOAD(p) _mm512_loadu_ps(p)
#define VTAIL(p, l) _mm512_maskz_loadu_ps((__mmask16)((1u << (l)) - 1), (p))
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)

/* Pairs of vectors -> per-128-bit-lane sums: [sa, sb, sc, sd] in each lane of the result. */
static inline ISA __m512 lane4_avx512(__m512 a, __m512 b, __m512 c, __m512 d) {
  __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  __m512d abd = _mm512_castps_pd(ab), cdd = _mm512_castps_pd(cd);
  return _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(abd, cdd)),
                       _mm512_castpd_ps(_mm512_unpackhi_pd(abd, cdd)));
}
/* lanes L0..L3 -> (L0 + L1) + (L2 + L3), in RED8's order */
static inline ISA void red4_avx512(__m512 a, __m512 b, __m512 c, __m512 d, float *s) {
  __m512 q = lane4_avx512(a, b, c, d);
  q = _mm512_add_ps(q, _mm512_shuffle_f32x4(q, q, _MM_SHUFFLE(2, 3, 0, 1)));
  _mm_storeu_ps(s, _mm_add_ps(_mm512_castps512_ps128(q), _mm512_extractf32x4_ps(q, 2)));
}
static inline ISA void red8_avx512(__m512 a, __m512 b, __m512 c, __m512 d, __m512 e, __m512 f,
                                   __m512 g, __m512 h, float *s) {
  __m512 p = lane4_avx512(a, b, c, d), q = lane4_avx512(e, f, g, h);
  /* [p0 + p1, p2 + p3, q0 + q1, q2 + q3] */
  __m512 t = _mm512_add_ps(_mm512_shuffle_f32x4(p, q, _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_f32x4(p, q, _MM_SHUFFLE(3, 1, 3, 1)));
  t = _mm512_shuffle_f32x4(t, t, _MM_SHUFFLE(3, 1, 2, 0)); /* [p01, q01, p23, q23] */
  _mm256_storeu_ps(s,
                   _mm256_add_ps(_mm512_castps512_ps256(t),
                                 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(t), 1))));
}
#define RED4(a, b, c, d, s) red4_avx512(a, b, c, d, s)
#define RED8(a, b, c, d, e, f, g, h, s) red8_avx512(a, b, c, d, e, f, g, h, s)
#include "gemv_body.h"
#undef V
#undef VL
#undef ISA
#undef F
#undef NR2
#undef VZERO
#undef VLOAD
#undef VTAIL
#undef VFMA
#undef RED4
#undef RED8

/* ---- AVX2 + FMA -------------------------------------------------------------------- */
#define V __m256
#define VL 8
#define ISA __attribute__((target("avx2,fma")))
#define F(name) name##_avx2
#define NR2 4
#define VZERO() _mm256_setzero_ps()
#define VLOAD(p) _mm256_loadu_ps(p)
#define VTAIL(p, l)                                                       \
  _mm256_maskload_ps((p), _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(l)), \
                                             _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)))
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)

/* [a_lo, b_lo, c_lo, d_lo | a_hi, b_hi, c_hi, d_hi], each the sum of that half's 4 lanes */
static inline ISA __m256 half4_avx2(__m256 a, __m256 b, __m256 c, __m256 d) {
  return _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
}
static inline ISA void red4_avx2(__m256 a, __m256 b, __m256 c, __m256 d, float *s) {
  __m256 q = half4_avx2(a, b, c, d);
  _mm_storeu_ps(s, _mm_add_ps(_mm256_castps256_ps128(q), _mm256_extractf128_ps(q, 1)));
}
static inline ISA void red8_avx2(__m256 a, __m256 b, __m256 c, __m256 d, __m256 e, __m256 f,
                                 __m256 g, __m256 h, float *s) {
  __m256 p = half4_avx2(a, b, c, d), q = half4_avx2(e, f, g, h);
  _mm256_storeu_ps(
      s, _mm256_add_ps(_mm256_permute2f128_ps(p, q, 0x20), _mm256_permute2f128_ps(p, q, 0x31)));
}
#define RED4(a, b, c, d, s) red4_avx2(a, b, c, d, s)
#define RED8(a, b, c, d, e, f, g, h, s) red8_avx2(a, b, c, d, e, f, g, h, s)
#include "gemv_body.h"

/* 2: AVX-512F, 1: AVX2 + FMA, 0: neither (cached; a race only asks twice) */
static int isa_level(void) {
  static atomic_int known = -1;
  int k = atomic_load(&known);
  if (k < 0) {
    uint64_t f = 0;
    lmx_cpu_features(&f);
    uint64_t avx2 = (1ull << LMX_CPU_AVX2) | (1ull << LMX_CPU_FMA);
    k = f & (1ull << LMX_CPU_AVX512F) ? 2 : (f & avx2) == avx2 ? 1 : 0;
    atomic_store(&known, k);
  }
  return k;
}

static rows_fn kernel(void) {
  if (atomic_load(&g_forced_blas)) return NULL;
  int lv = isa_level(), cap = atomic_load(&g_isa_cap);
  if (lv > cap) lv = cap;
  return lv == 2 ? rows_avx512 : lv == 1 ? rows_avx2 : NULL;
}

const char *lmx_cpu_fc_small_path(void) {
  rows_fn f = kernel();
  return f == rows_avx512 ? "avx512f" : f == rows_avx2 ? "avx2" : "blas";
}

#else
static rows_fn kernel(void) {
  return NULL;
}
const char *lmx_cpu_fc_small_path(void) {
  return "blas";
}
#endif

int lmx_cpu_fc_small_f32(int64_t m, int64_t k, int64_t n, float *y, const float *x, const float *w,
                         const float *b, int acc) {
  if (m < 1 || m > LMX_FC_SMALL_M || k < 1 || n < 1) return -1;
  if (m > 1 && m * n * k < GEMV_MIN_MNK) return -1;
  rows_fn f = kernel();
  if (!f) return -1;
  int64_t blocks = (n + 7) / 8, bytes = n * k * (int64_t)sizeof(float);
  int64_t want = bytes / GEMV_PAR_BYTES;
  int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (want < threads) threads = (int)want;
  if (blocks < threads) threads = (int)blocks;
  if (threads <= 1) {
    f(m, k, n, 0, n, y, x, w, b, acc);
    return 0;
  }
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t j0 = blocks * t / nt * 8, j1 = blocks * (t + 1) / nt * 8;
    if (j1 > n) j1 = n;
    if (j0 < j1) f(m, k, n, j0, j1, y, x, w, b, acc);
  }
  return 0;
}
