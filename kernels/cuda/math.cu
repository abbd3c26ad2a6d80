/* math.cu — the math family's CUDA kernels (ops14a): every row of
 * kernels/cpu/math_fns.h as a contiguous map and as a strided (broadcasting) map, with
 * the CPU's formulas (one shared list), computed in float for float32 / float16 and in
 * double for float64 (cu_util.cuh's lmx_cu_acc). erfinv and digamma run in double on
 * both backends (math_fns.h). One grid-stride loop per launch; the strided map turns
 * each flat output index into operand offsets by division along the output dims.
 */
#include "../cpu/cpu_kernels.h"
#include "cu_math.h"
#include "cu_util.cuh"

/* ---- one name per function for float and double ----------------------------------- */
#define M1(name, ff, df)                                                                  \
  __device__ static inline float m_##name(float x) { return ff(x); }                      \
  __device__ static inline double m_##name(double x) { return df(x); }
M1(log1p, log1pf, log1p)
M1(expm1, expm1f, expm1)
M1(log2, log2f, log2)
M1(log10, log10f, log10)
M1(cbrt, cbrtf, cbrt)
M1(tan, tanf, tan)
M1(asin, asinf, asin)
M1(acos, acosf, acos)
M1(atan, atanf, atan)
M1(sinh, sinhf, sinh)
M1(cosh, coshf, cosh)
M1(asinh, asinhf, asinh)
M1(acosh, acoshf, acosh)
M1(atanh, atanhf, atanh)
M1(erf, erff, erf)
M1(tgamma, tgammaf, tgamma)
M1(lgamma, lgammaf, lgamma)
M1(trunc, truncf, trunc)
M1(floor, floorf, floor)
M1(ceil, ceilf, ceil)
M1(fabs, fabsf, fabs)
M1(exp, expf, exp)
M1(sqrt, sqrtf, sqrt)
#undef M1
__device__ static inline float m_hypot(float a, float b) { return hypotf(a, b); }
__device__ static inline double m_hypot(double a, double b) { return hypot(a, b); }
__device__ static inline float m_fmod(float a, float b) { return fmodf(a, b); }
__device__ static inline double m_fmod(double a, double b) { return fmod(a, b); }

#define MF(f) m_##f
#define LMX_MF_QUAL __host__ __device__ static inline
#include "../cpu/math_fns.h"

/* ---- the maps ------------------------------------------------------------------------ */

template <typename C>
__device__ static inline C mf_eval(int fn, C a, C b, C c, C s) {
  typedef C T;
  (void)a, (void)b, (void)c, (void)s;
  switch (fn) {
#define MF_CASE(NAME, EXPR) \
  case LMX_MF_##NAME:       \
    return (C)(EXPR);
    LMX_MATH_FNS(MF_CASE)
#undef MF_CASE
  }
  return (C)0;
}

template <typename T>
__global__ void k_math(int fn, int64_t n, T *o, const T *pa, const T *pb, const T *pc, double sd,
                       int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  C s = (C)sd;
  LMX_CU_GRID_LOOP(i, n) {
    C a = pa ? (C)lmx_cu_ld(pa, i) : (C)0, b = pb ? (C)lmx_cu_ld(pb, i) : (C)0;
    C c = pc ? (C)lmx_cu_ld(pc, i) : (C)0;
    C r = mf_eval<C>(fn, a, b, c, s);
    if (acc) r = (C)lmx_cu_ld(o, i) + r;
    lmx_cu_st(o, i, r);
  }
}

struct MathWalk {
  int nd;
  int64_t shape[LMX_MAX_NDIM];
  int64_t st[3][LMX_MAX_NDIM];
};

template <typename T>
__global__ void k_math_strided(int fn, int64_t n, MathWalk w, T *o, const T *pa, const T *pb,
                               const T *pc, double sd, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  C s = (C)sd;
  LMX_CU_GRID_LOOP(i, n) {
    int64_t rem = i, off[3] = {0, 0, 0};
    for (int d = w.nd - 1; d >= 0; d--) {
      int64_t ix = rem % w.shape[d];
      rem /= w.shape[d];
      for (int k = 0; k < 3; k++) off[k] += ix * w.st[k][d];
    }
    C a = pa ? (C)lmx_cu_ld(pa, off[0]) : (C)0, b = pb ? (C)lmx_cu_ld(pb, off[1]) : (C)0;
    C c = pc ? (C)lmx_cu_ld(pc, off[2]) : (C)0;
    C r = mf_eval<C>(fn, a, b, c, s);
    if (acc) r = (C)lmx_cu_ld(o, i) + r;
    lmx_cu_st(o, i, r);
  }
}

int lmx_cu_math(lmx_cu_stream st, int fn, int dt, int64_t n, void *out, const void *a,
                const void *b, const void *c, double s, int acc) {
  if (fn < 0 || fn >= LMX_NUM_MF) return -1;
  if (n <= 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1, {
    LMX_LAUNCH(k_math<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, st, fn, n, (T *)out,
               (const T *)a, (const T *)b, (const T *)c, s, acc);
    return lmx_cu_last_error();
  });
  return -1;
}

int lmx_cu_math_strided(lmx_cu_stream st, int fn, int dt, int ndim, const int64_t *oshape,
                        void *out, const void *const *in, const int64_t *const *str, double s,
                        int acc) {
  if (fn < 0 || fn >= LMX_NUM_MF || ndim < 0 || ndim > LMX_MAX_NDIM) return -1;
  MathWalk w;
  w.nd = ndim;
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) {
    w.shape[d] = oshape[d];
    n *= oshape[d];
    for (int k = 0; k < 3; k++) w.st[k][d] = in[k] ? str[k][d] : 0;
  }
  if (n <= 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1, {
    LMX_LAUNCH(k_math_strided<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, st, fn, n, w, (T *)out,
               (const T *)in[0], (const T *)in[1], (const T *)in[2], s, acc);
    return lmx_cu_last_error();
  });
  return -1;
}
