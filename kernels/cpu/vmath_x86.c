/* vmath_x86.c — AVX-512 float32 sigmoid and tanh loops, picked at run time by
 * lmx_cpu_vmath_f32 when the CPU has AVX-512F (elsewhere the portable loops of
 * elementwise.c run).
 *
 * Why: cpu_math.h's portable exp (degree-6 polynomial) plus the clamps GCC if-converts
 * into masked compares cost ~25 vector operations per 16 floats, and these loops are
 * compute-bound whenever the data sits in cache. Here e^c = 2^k 2^(j/16) e^r with
 * n = 16k + j = round(16 c log2 e): the 16 values 2^(j/16) fit one register and are
 * looked up with one vpermps, so |r| <= ln2/32 and a degree-3 (sigmoid) or degree-4
 * (tanh, which needs e^r - 1 to relative accuracy) Taylor polynomial suffices.
 * Measured on one Zen 5 core, 64K floats: sigmoid 13.8 -> 7.9 us, tanh 11.9 -> 11.1 us.
 * The division stays an IEEE vdivps: vrcp14ps plus a Newton step measured slower here
 * (more operations, and tanh then needs a fix-up to reach exactly 1).
 * Accuracy over every 7th float32 bit pattern: sigmoid 1.8e-7, tanh 2.2e-7 maximum
 * relative error (tests/test_vmath.c checks every 251st against 3e-7). Same edge
 * semantics as cpu_math.h: NaN propagates (vmaxps/vminps return their second operand
 * when either is NaN, so x is passed second), sigmoid saturates to finite values past
 * +-88, tanh is exactly +-1 past |x| = 20 and keeps the sign of -0.
 */
#include "cpu_kernels.h"
#include "cpu_par.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

/* 2^(j/16) rounded to float, and the remainder 2^(j/16) - hi rounded to float. */
static const float g_exp2_hi[16] = {
    0x1.000000p+0f, 0x1.0b5586p+0f, 0x1.172b84p+0f, 0x1.2387a6p+0f,
    0x1.306fe0p+0f, 0x1.3dea64p+0f, 0x1.4bfdaep+0f, 0x1.5ab07ep+0f,
    0x1.6a09e6p+0f, 0x1.7a1148p+0f, 0x1.8ace54p+0f, 0x1.9c4918p+0f,
    0x1.ae89fap+0f, 0x1.c199bep+0f, 0x1.d5818ep+0f, 0x1.ea4afap+0f};
static const float g_exp2_lo[16] = {
    0.0f,             4.833470157e-08f,  -1.307753994e-08f, 5.386222313e-08f,
    3.797635273e-08f, 4.496838102e-08f,  -4.018999533e-08f, -1.012334927e-08f,
    2.420323497e-08f, -4.500898854e-08f, 8.070904833e-09f,  9.836217174e-09f,
    -2.475532668e-08f, -9.235770371e-09f, -1.123927795e-08f, 9.845328108e-09f};

/* Splits c (already clamped, or NaN) as e^c = S (1 + em): returns em = e^r - 1 to
 * degree `deg` (3 or 4), sets *S = 2^k 2^(j/16) and *idx to the bits carrying j in
 * their low 4 bits. tm = 16 c log2e + 1.5*2^23 holds n = 16k + j = round(16 c log2e)
 * in its low mantissa bits, so n needs no float->int conversion: its low 4 bits index
 * the table, and (tm << 19) masked to the exponent field is k << 23, added to the
 * looked-up value's bits (the clamps keep S normal; vscalefps measured slower).
 * r = c - n ln2/16 in two steps (the high constant has few bits, so n times it is
 * exact). */
static inline AVX512 __m512 exp_split(__m512 c, int deg, __m512 tab, __m512 *S,
                                      __m512i *idx) {
  __m512 tm = _mm512_fmadd_ps(c, _mm512_set1_ps(23.0831206542234f), _mm512_set1_ps(12582912.0f));
  __m512 n = _mm512_sub_ps(tm, _mm512_set1_ps(12582912.0f));
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f / 16), c);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f / 16), r);
  __m512 p = deg == 4 ? _mm512_fmadd_ps(
                            _mm512_fmadd_ps(r, _mm512_set1_ps(1.0f / 24), _mm512_set1_ps(1.0f / 6)),
                            r, _mm512_set1_ps(0.5f))
                      : _mm512_fmadd_ps(r, _mm512_set1_ps(1.0f / 6), _mm512_set1_ps(0.5f));
  __m512 em = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
  __m512i tb = _mm512_castps_si512(tm);
  __m512i k = _mm512_and_si512(_mm512_slli_epi32(tb, 19), _mm512_set1_epi32((int)0xFF800000u));
  __m512i t = _mm512_castps_si512(_mm512_permutexvar_ps(tb, tab));
  *S = _mm512_castsi512_ps(_mm512_add_epi32(t, k));
  *idx = tb;
  return em;
}

/* sigmoid x = 1 / (1 + e^-x), x clamped to [-88.37, 87.3] (e^-x stays finite and
 * normal; beyond, sigmoid already rounds to 0 or 1 or is below 1.2e-38). */
static inline AVX512 __m512 v_sigmoid(__m512 x, __m512 tab) {
  __m512 c = _mm512_max_ps(_mm512_set1_ps(-87.3f), _mm512_sub_ps(_mm512_setzero_ps(), x));
  c = _mm512_min_ps(_mm512_set1_ps(88.37f), c);
  __m512 S;
  __m512i idx;
  __m512 em = exp_split(c, 3, tab, &S, &idx);
  __m512 d = _mm512_fmadd_ps(S, em, _mm512_add_ps(S, _mm512_set1_ps(1.0f)));
  return _mm512_div_ps(_mm512_set1_ps(1.0f), d);
}

/* tanh|x| = E / (E + 2), E = e^{2|x|} - 1 = (S - 1) + (S em + lo) where lo is the
 * table's remainder (it matters only for k = 0, where S - 1 is exact and E is small).
 * 2|x| is clamped at 40, where E + 2 rounds to E and the quotient is exactly 1. The
 * sign is or-ed back from x. */
static inline AVX512 __m512 v_tanh(__m512 x, __m512 tab, __m512 tablo) {
  __m512 ax = _mm512_abs_ps(x);
  __m512 u = _mm512_min_ps(_mm512_set1_ps(40.0f), _mm512_add_ps(ax, ax));
  __m512 S;
  __m512i idx;
  __m512 em = exp_split(u, 4, tab, &S, &idx);
  __m512 lo = _mm512_permutexvar_ps(idx, tablo);
  __m512 E = _mm512_add_ps(_mm512_fmadd_ps(S, em, lo), _mm512_sub_ps(S, _mm512_set1_ps(1.0f)));
  __m512 t = _mm512_div_ps(E, _mm512_add_ps(E, _mm512_set1_ps(2.0f)));
  /* t | (x & signbit): ternary-logic truth table A | (B & C) = 0xF8 */
  return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(t),
                                                       _mm512_castps_si512(x),
                                                       _mm512_set1_epi32((int)0x80000000u), 0xF8));
}

/* One loop body per function: 32 floats per step (two independent vectors keep both FMA
 * pipes busy), then 16, then a masked tail. acc adds into o (req = ADD). */
#define VM_LOOP(CALL)                                                                   \
  int64_t i = 0;                                                                        \
  for (; i + 32 <= n; i += 32) {                                                        \
    __m512 a = CALL(_mm512_loadu_ps(x + i)), b = CALL(_mm512_loadu_ps(x + i + 16));     \
    if (acc) {                                                                          \
      a = _mm512_add_ps(a, _mm512_loadu_ps(o + i));                                     \
      b = _mm512_add_ps(b, _mm512_loadu_ps(o + i + 16));                                \
    }                                                                                   \
    _mm512_storeu_ps(o + i, a);                                                         \
    _mm512_storeu_ps(o + i + 16, b);                                                    \
  }                                                                                     \
  for (; i < n; i += 16) {                                                              \
    __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);   \
    __m512 a = CALL(_mm512_maskz_loadu_ps(m, x + i));                                   \
    if (acc) a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(m, o + i));                     \
    _mm512_mask_storeu_ps(o + i, m, a);                                                 \
  }

static AVX512 void sigmoid_block(int64_t n, float *o, const float *x, int acc) {
  __m512 tab = _mm512_loadu_ps(g_exp2_hi);
#define CALL_SIG(v) v_sigmoid(v, tab)
  VM_LOOP(CALL_SIG)
#undef CALL_SIG
}

static AVX512 void tanh_block(int64_t n, float *o, const float *x, int acc) {
  __m512 tab = _mm512_loadu_ps(g_exp2_hi), tablo = _mm512_loadu_ps(g_exp2_lo);
#define CALL_TANH(v) v_tanh(v, tab, tablo)
  VM_LOOP(CALL_TANH)
#undef CALL_TANH
}

typedef void (*vm_block)(int64_t, float *, const float *, int);

/* Above LMX_OMP_MIN elements, blocks of 16K floats (cache-sized, a multiple of 32) are
 * shared among the OpenMP threads. */
static void run_blocks(vm_block f, int64_t n, float *o, const float *x, int acc) {
  enum { BLOCK = 16384 };
  int64_t nb = (n + BLOCK - 1) / BLOCK;
  LMX_PAR_FOR_W(nb, BLOCK, b, {
    int64_t lo = b * BLOCK, len = n - lo < BLOCK ? n - lo : BLOCK;
    f(len, o + lo, x + lo, acc);
  });
}

static int have_avx512(void) {
  static int cached = -1;
  if (cached < 0) {
    __builtin_cpu_init();
    cached = __builtin_cpu_supports("avx512f") ? 1 : 0;
  }
  return cached;
}

int lmx_cpu_vmath_f32(int fn, int64_t n, float *o, const float *x, int acc) {
  if (!have_avx512()) return 0;
  if (fn == LMX_UN_SIGMOID) run_blocks(sigmoid_block, n, o, x, acc);
  else if (fn == LMX_UN_TANH) run_blocks(tanh_block, n, o, x, acc);
  else return 0;
  return 1;
}

#else
int lmx_cpu_vmath_f32(int fn, int64_t n, float *o, const float *x, int acc) {
  (void)fn, (void)n, (void)o, (void)x, (void)acc;
  return 0;
}
#endif
