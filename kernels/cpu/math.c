/* math.c — the math family's CPU kernels (ops14a): every row of math_fns.h as one
 * contiguous map out[n] (+)= f(a[n], b[n], c[n], s) and one strided (broadcasting) map
 * over an output shape.
 *
 * Each row expands into a float32 and a float64 loop (<tgmath.h> picks the float or
 * double libm function for the one expression), selected by a table indexed by the
 * row's code, so a call costs one indirect call per array, none per element. Operands
 * given as NULL read as 0. Loops go parallel above LMX_OMP_MIN elements (cpu_par.h);
 * float16 / bfloat16 run the float32 loops chunk by chunk (elementwise_half.c).
 */
#include <tgmath.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"

#define MF(f) f
#define LMX_MF_QUAL static inline
#include "math_fns.h"

#define MATH_LOOP(T, acc, EXPR)                                                           \
  do {                                                                                    \
    if (acc)                                                                              \
      LMX_PAR_FOR(n, i, {                                                                 \
        T a = ap ? ap[i] : 0, b = bp ? bp[i] : 0, c = cp ? cp[i] : 0;                     \
        (void)a, (void)b, (void)c;                                                        \
        o[i] += (T)(EXPR);                                                                \
      });                                                                                 \
    else                                                                                  \
      LMX_PAR_FOR(n, i, {                                                                 \
        T a = ap ? ap[i] : 0, b = bp ? bp[i] : 0, c = cp ? cp[i] : 0;                     \
        (void)a, (void)b, (void)c;                                                        \
        o[i] = (T)(EXPR);                                                                 \
      });                                                                                 \
  } while (0)

#define DEF_MF(NAME, EXPR)                                                                \
  LMX_SIMD_CLONES static void mf_##NAME##_f32(int64_t n, float *o, const float *ap,       \
                                              const float *bp, const float *cp, double sd, \
                                              int acc) {                                  \
    typedef float T;                                                                      \
    T s = (T)sd;                                                                          \
    (void)s;                                                                              \
    MATH_LOOP(T, acc, EXPR);                                                              \
  }                                                                                       \
  static void mf_##NAME##_f64(int64_t n, double *o, const double *ap, const double *bp,   \
                              const double *cp, double s, int acc) {                      \
    typedef double T;                                                                     \
    (void)s;                                                                              \
    MATH_LOOP(T, acc, EXPR);                                                              \
  }
LMX_MATH_FNS(DEF_MF)

typedef void (*mf_f32)(int64_t, float *, const float *, const float *, const float *, double,
                       int);
typedef void (*mf_f64)(int64_t, double *, const double *, const double *, const double *,
                       double, int);
#define ROW_MF(NAME, EXPR) {mf_##NAME##_f32, mf_##NAME##_f64},
static const struct {
  mf_f32 f;
  mf_f64 d;
} g_mf[] = {LMX_MATH_FNS(ROW_MF)};

typedef struct {
  int fn;
  double s;
} half_ctx;

static int half_mf(const void *ctx, int64_t m, float *o, const float *const *x, int acc) {
  const half_ctx *h = ctx;
  return lmx_cpu_math(h->fn, LMX_FLOAT32, m, o, x[0], x[1], x[2], h->s, acc);
}

int lmx_cpu_math(int fn, int dt, int64_t n, void *out, const void *a, const void *b,
                 const void *c, double s, int acc) {
  if (fn < 0 || fn >= LMX_NUM_MF) return -1;
  if (dt == LMX_FLOAT16 || dt == LMX_BFLOAT16)
    return lmx_cpu_half_map(dt, n, out, acc, 3, (const void *[]){a, b, c}, half_mf,
                            &(half_ctx){fn, s});
  if (dt == LMX_FLOAT32) g_mf[fn].f(n, out, a, b, c, s, acc);
  else if (dt == LMX_FLOAT64) g_mf[fn].d(n, out, a, b, c, s, acc);
  else return -1;
  return 0;
}

/* ---- strided maps --------------------------------------------------------------------
 * Walks the output shape with the innermost dim contiguous: one row of the output at a
 * time, each operand's row start found from the row's index, then the row is mapped
 * through per-element offsets (stride 0 repeats the element). */

#define DEF_MFS(NAME, EXPR)                                                               \
  static void mfs_##NAME##_f32(int64_t n, float *o, const float *ap, int64_t as,          \
                               const float *bp, int64_t bs, const float *cp, int64_t cs,  \
                               double sd, int acc) {                                      \
    typedef float T;                                                                      \
    T s = (T)sd;                                                                          \
    (void)s;                                                                              \
    for (int64_t i = 0; i < n; i++) {                                                     \
      T a = ap ? ap[i * as] : 0, b = bp ? bp[i * bs] : 0, c = cp ? cp[i * cs] : 0;        \
      (void)a, (void)b, (void)c;                                                          \
      o[i] = (T)((acc ? o[i] : 0) + (T)(EXPR));                                           \
    }                                                                                     \
  }                                                                                       \
  static void mfs_##NAME##_f64(int64_t n, double *o, const double *ap, int64_t as,        \
                               const double *bp, int64_t bs, const double *cp,            \
                               int64_t cs, double s, int acc) {                           \
    typedef double T;                                                                     \
    (void)s;                                                                              \
    for (int64_t i = 0; i < n; i++) {                                                     \
      T a = ap ? ap[i * as] : 0, b = bp ? bp[i * bs] : 0, c = cp ? cp[i * cs] : 0;        \
      (void)a, (void)b, (void)c;                                                          \
      o[i] = (acc ? o[i] : 0) + (T)(EXPR);                                                \
    }                                                                                     \
  }
LMX_MATH_FNS(DEF_MFS)

typedef void (*mfs_f32)(int64_t, float *, const float *, int64_t, const float *, int64_t,
                        const float *, int64_t, double, int);
typedef void (*mfs_f64)(int64_t, double *, const double *, int64_t, const double *, int64_t,
                        const double *, int64_t, double, int);
#define ROW_MFS(NAME, EXPR) {mfs_##NAME##_f32, mfs_##NAME##_f64},
static const struct {
  mfs_f32 f;
  mfs_f64 d;
} g_mfs[] = {LMX_MATH_FNS(ROW_MFS)};

int lmx_cpu_math_strided(int fn, int dt, int ndim, const int64_t *oshape, void *out,
                         const void *const *in, const int64_t *const *str, double s, int acc) {
  if (fn < 0 || fn >= LMX_NUM_MF || ndim < 0 || ndim > LMX_MAX_NDIM) return -1;
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  size_t es = dt == LMX_FLOAT32 ? 4 : 8;
  int64_t len = ndim ? oshape[ndim - 1] : 1, rows = 1, last[3];
  for (int d = 0; d + 1 < ndim; d++) rows *= oshape[d];
  for (int k = 0; k < 3; k++) last[k] = ndim && in[k] ? str[k][ndim - 1] : 0;
  if (len <= 0) return 0;
  LMX_PAR_FOR_W(rows, len, r, {
    const char *p[3];
    int64_t rem = r;
    int64_t off[3] = {0, 0, 0};
    for (int d = ndim - 2; d >= 0; d--) {
      int64_t ix = rem % oshape[d];
      rem /= oshape[d];
      for (int k = 0; k < 3; k++)
        if (in[k]) off[k] += ix * str[k][d];
    }
    for (int k = 0; k < 3; k++) p[k] = in[k] ? (const char *)in[k] + off[k] * (int64_t)es : NULL;
    char *o = (char *)out + r * len * (int64_t)es;
    if (dt == LMX_FLOAT32)
      g_mfs[fn].f(len, (float *)o, (const float *)p[0], last[0], (const float *)p[1], last[1],
                  (const float *)p[2], last[2], s, acc);
    else
      g_mfs[fn].d(len, (double *)o, (const double *)p[0], last[0], (const double *)p[1],
                  last[1], (const double *)p[2], last[2], s, acc);
  });
  return 0;
}
