/* elementwise.c — unary math, scalar ops and equal-shape binary ops, forward and
 * backward, with optional accumulation into the destination (req = ADD).
 *
 * Each operation is one row of an X-macro list giving its forward expression and its
 * gradient expression (in terms of x = input, y = output, g = head gradient, s =
 * scalar). The macros expand every row into one float32 and one float64 function
 * (<tgmath.h> picks expf/exp; exp, tanh and sigmoid use cpu_math.h's vectorisable
 * float32 versions), and a table indexed by [op][dtype] selects the sibling,
 * so there is no per-dtype re-include. Loops are plain, so the compiler vectorises
 * them, and go parallel only above LMX_OMP_MIN elements. float16 and bfloat16 run the
 * float32 loops chunk by chunk (elementwise_half.c); any other dtype returns -1 and the
 * caller reports it.
 * MXNet 1.9 formulas: src/operator/mshadow_op.h.
 */
#include <tgmath.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_math.h"
#include "cpu_par.h"

static int dt_slot(int dt) { return dt == LMX_FLOAT32 ? 0 : dt == LMX_FLOAT64 ? 1 : -1; }
static int is_half(int dt) { return dt == LMX_FLOAT16 || dt == LMX_BFLOAT16; }

/* What a half-precision call runs per float32 chunk (see lmx_cpu_half_map). */
typedef struct {
  int op, side;
  double s;
} half_ctx;

/* Stores v into o[i] (acc = 0) or adds it (acc = 1); the branch is hoisted by writing
 * the loop twice. */
#define EW_LOOP(n, acc, i, T, expr)                       \
  do {                                                     \
    if (acc) LMX_PAR_FOR(n, i, o[i] += (T)(expr););        \
    else LMX_PAR_FOR(n, i, o[i] = (T)(expr););             \
  } while (0)

#define SGN(v) ((v) > 0 ? 1 : (v) < 0 ? -1 : 0)
#define SOFTRELU(x) ((x) > 20 ? (x) : log1p(exp(x)))

/* ---- unary -------------------------------------------------------------------------- */

/* X(name, forward(x), backward(x, y, g)) */
#define UNARY_LIST(X)                                                   \
  X(COPY, x, g)                                                         \
  X(EXP, XEXP(x), g * y)                                                \
  X(LOG, log(x), g / x)                                                 \
  X(SQRT, sqrt(x), g / (2 * y))                                         \
  X(RSQRT, 1 / sqrt(x), -g / (2 * x * sqrt(x)))                        \
  X(SQUARE, x * x, 2 * x * g)                                           \
  X(ABS, fabs(x), g * SGN(x))                                           \
  X(SIGN, SGN(x), 0)                                                    \
  X(SIN, sin(x), g * cos(x))                                            \
  X(COS, cos(x), -g * sin(x))                                           \
  X(TANH, XTANH(x), g * (1 - y * y))                                   \
  X(SIGMOID, 1 / (1 + XEXP(-x)), g * y * (1 - y))                      \
  X(RELU, x > 0 ? x : 0, y > 0 ? g : 0)                                 \
  X(NEG, -x, -g)                                                        \
  X(RECIP, 1 / x, -g / (x * x))                                         \
  X(FLOOR, floor(x), 0)                                                 \
  X(CEIL, ceil(x), 0)                                                   \
  X(ROUND, round(x), 0)                                                 \
  X(SOFTRELU, SOFTRELU(x), -g * expm1(-y))                              \
  X(SOFTSIGN, x / (1 + fabs(x)), g / ((1 + fabs(x)) * (1 + fabs(x))))

#define DEF_UN(NAME, FWD, BWD)                                                             \
  LMX_SIMD_CLONES static void unf_##NAME##_f32(int64_t n, float *o, const float *xp,       \
                                               int acc) {                                  \
    EW_LOOP(n, acc, i, float, ({ float x = xp[i]; (float)(FWD); }));                       \
  }                                                                                        \
  static void unf_##NAME##_f64(int64_t n, double *o, const double *xp, int acc) {          \
    EW_LOOP(n, acc, i, double, ({ double x = xp[i]; (double)(FWD); }));                    \
  }                                                                                        \
  LMX_SIMD_CLONES                                                                          \
  static void unb_##NAME##_f32(int64_t n, float *o, const float *gp, const float *xp,      \
                               const float *yp, int acc) {                                 \
    (void)xp, (void)yp;                                                                    \
    EW_LOOP(n, acc, i, float, ({ float g = gp[i], x = xp ? xp[i] : 0, y = yp ? yp[i] : 0;  \
                                 (void)g, (void)x, (void)y; (float)(BWD); }));             \
  }                                                                                        \
  static void unb_##NAME##_f64(int64_t n, double *o, const double *gp, const double *xp,   \
                               const double *yp, int acc) {                                \
    (void)xp, (void)yp;                                                                    \
    EW_LOOP(n, acc, i, double, ({ double g = gp[i], x = xp ? xp[i] : 0, y = yp ? yp[i] : 0; \
                                  (void)g, (void)x, (void)y; (double)(BWD); }));           \
  }
UNARY_LIST(DEF_UN)

typedef void (*unf_f32)(int64_t, float *, const float *, int);
typedef void (*unf_f64)(int64_t, double *, const double *, int);
typedef void (*unb_f32)(int64_t, float *, const float *, const float *, const float *, int);
typedef void (*unb_f64)(int64_t, double *, const double *, const double *, const double *, int);

#define ROW_UNF(NAME, F, B) {unf_##NAME##_f32, unf_##NAME##_f64},
#define ROW_UNB(NAME, F, B) {unb_##NAME##_f32, unb_##NAME##_f64},
static const struct { unf_f32 f; unf_f64 d; } g_unf[] = {UNARY_LIST(ROW_UNF)};
static const struct { unb_f32 f; unb_f64 d; } g_unb[] = {UNARY_LIST(ROW_UNB)};

static int half_un(const void *c, int64_t m, float *o, const float *const *x, int acc) {
  return lmx_cpu_unary(((const half_ctx *)c)->op, LMX_FLOAT32, m, o, x[0], acc);
}
static int half_unb(const void *c, int64_t m, float *o, const float *const *x, int acc) {
  return lmx_cpu_unary_bwd(((const half_ctx *)c)->op, LMX_FLOAT32, m, o, x[0], x[1], x[2], acc);
}

int lmx_cpu_unary(int op, int dt, int64_t n, void *y, const void *x, int acc) {
  if (is_half(dt) && op >= 0 && op < LMX_NUM_UNOPS)
    return lmx_cpu_half_map(dt, n, y, acc, 1, (const void *[]){x}, half_un, &(half_ctx){.op = op});
  int s = dt_slot(dt);
  if (s < 0 || op < 0 || op >= LMX_NUM_UNOPS) return -1;
  if (s == 0) {
    if (!lmx_cpu_vmath_f32(op, n, y, x, acc)) g_unf[op].f(n, y, x, acc);
  } else {
    g_unf[op].d(n, y, x, acc);
  }
  return 0;
}

int lmx_cpu_unary_bwd(int op, int dt, int64_t n, void *gx, const void *g, const void *x,
                      const void *y, int acc) {
  if (is_half(dt) && op >= 0 && op < LMX_NUM_UNOPS)
    return lmx_cpu_half_map(dt, n, gx, acc, 3, (const void *[]){g, x, y}, half_unb,
                            &(half_ctx){.op = op});
  int s = dt_slot(dt);
  if (s < 0 || op < 0 || op >= LMX_NUM_UNOPS) return -1;
  if (s == 0) g_unb[op].f(n, gx, g, x, y, acc);
  else g_unb[op].d(n, gx, g, x, y, acc);
  return 0;
}

/* ---- scalar ops ------------------------------------------------------------------- */

/* X(name, forward(x, s), backward(x, y, g, s)) */
#define SCALAR_LIST(X)                                                  \
  X(PLUS, x + s, g)                                                     \
  X(MINUS, x - s, g)                                                    \
  X(RMINUS, s - x, -g)                                                  \
  X(MUL, x * s, g * s)                                                  \
  X(DIV, x / s, g / s)                                                  \
  X(RDIV, s / x, -g * s / (x * x))                                      \
  X(POW, pow(x, s), g * s * pow(x, s - 1))                              \
  X(RPOW, pow(s, x), g * y * log(s))                                    \
  X(MAX, x > s ? x : s, x >= s ? g : 0)                                 \
  X(MIN, x < s ? x : s, x <= s ? g : 0)                                 \
  X(EQ, x == s, 0)                                                      \
  X(NE, x != s, 0)                                                      \
  X(GT, x > s, 0)                                                       \
  X(GE, x >= s, 0)                                                      \
  X(LT, x < s, 0)                                                       \
  X(LE, x <= s, 0)

#define DEF_SC(NAME, FWD, BWD)                                                             \
  LMX_SIMD_CLONES                                                                          \
  static void scf_##NAME##_f32(int64_t n, float *o, const float *xp, double sd, int acc) { \
    float s = (float)sd;                                                                   \
    EW_LOOP(n, acc, i, float, ({ float x = xp[i]; (float)(FWD); }));                       \
  }                                                                                        \
  static void scf_##NAME##_f64(int64_t n, double *o, const double *xp, double s, int acc) { \
    EW_LOOP(n, acc, i, double, ({ double x = xp[i]; (double)(FWD); }));                    \
  }                                                                                        \
  LMX_SIMD_CLONES                                                                          \
  static void scb_##NAME##_f32(int64_t n, float *o, const float *gp, const float *xp,      \
                               const float *yp, double sd, int acc) {                      \
    float s = (float)sd;                                                                   \
    (void)s, (void)xp, (void)yp;                                                           \
    EW_LOOP(n, acc, i, float, ({ float g = gp[i], x = xp ? xp[i] : 0, y = yp ? yp[i] : 0;  \
                                 (void)g, (void)x, (void)y; (float)(BWD); }));             \
  }                                                                                        \
  static void scb_##NAME##_f64(int64_t n, double *o, const double *gp, const double *xp,   \
                               const double *yp, double s, int acc) {                      \
    (void)s, (void)xp, (void)yp;                                                           \
    EW_LOOP(n, acc, i, double, ({ double g = gp[i], x = xp ? xp[i] : 0, y = yp ? yp[i] : 0; \
                                  (void)g, (void)x, (void)y; (double)(BWD); }));           \
  }
SCALAR_LIST(DEF_SC)

typedef void (*scf_f32)(int64_t, float *, const float *, double, int);
typedef void (*scf_f64)(int64_t, double *, const double *, double, int);
typedef void (*scb_f32)(int64_t, float *, const float *, const float *, const float *, double,
                        int);
typedef void (*scb_f64)(int64_t, double *, const double *, const double *, const double *,
                        double, int);
#define ROW_SCF(NAME, F, B) {scf_##NAME##_f32, scf_##NAME##_f64},
#define ROW_SCB(NAME, F, B) {scb_##NAME##_f32, scb_##NAME##_f64},
static const struct { scf_f32 f; scf_f64 d; } g_scf[] = {SCALAR_LIST(ROW_SCF)};
static const struct { scb_f32 f; scb_f64 d; } g_scb[] = {SCALAR_LIST(ROW_SCB)};

static int half_sc(const void *c, int64_t m, float *o, const float *const *x, int acc) {
  const half_ctx *h = c;
  return lmx_cpu_scalar_op(h->op, LMX_FLOAT32, m, o, x[0], h->s, acc);
}
static int half_scb(const void *c, int64_t m, float *o, const float *const *x, int acc) {
  const half_ctx *h = c;
  return lmx_cpu_scalar_bwd(h->op, LMX_FLOAT32, m, o, x[0], x[1], x[2], h->s, acc);
}

int lmx_cpu_scalar_op(int op, int dt, int64_t n, void *y, const void *x, double s, int acc) {
  if (is_half(dt) && op >= 0 && op < LMX_NUM_SCOPS)
    return lmx_cpu_half_map(dt, n, y, acc, 1, (const void *[]){x}, half_sc,
                            &(half_ctx){.op = op, .s = s});
  int k = dt_slot(dt);
  if (k < 0 || op < 0 || op >= LMX_NUM_SCOPS) return -1;
  if (k == 0) g_scf[op].f(n, y, x, s, acc);
  else g_scf[op].d(n, y, x, s, acc);
  return 0;
}

int lmx_cpu_scalar_bwd(int op, int dt, int64_t n, void *gx, const void *g, const void *x,
                       const void *y, double s, int acc) {
  if (is_half(dt) && op >= 0 && op < LMX_NUM_SCOPS)
    return lmx_cpu_half_map(dt, n, gx, acc, 3, (const void *[]){g, x, y}, half_scb,
                            &(half_ctx){.op = op, .s = s});
  int k = dt_slot(dt);
  if (k < 0 || op < 0 || op >= LMX_NUM_SCOPS) return -1;
  if (k == 0) g_scb[op].f(n, gx, g, x, y, s, acc);
  else g_scb[op].d(n, gx, g, x, y, s, acc);
  return 0;
}

/* ---- equal-shape binary ----------------------------------------------------------- */

/* X(name, forward(a, b), d/da * g, d/db * g) — LMX_BIN_* order. */
#define BINARY_LIST(X)                                                          \
  X(ADD, a + b, g, g)                                                           \
  X(SUB, a - b, g, -g)                                                          \
  X(MUL, a * b, g * b, g * a)                                                   \
  X(DIV, a / b, g / b, -g * a / (b * b))                                        \
  X(POW, pow(a, b), g * b * pow(a, b - 1), g * pow(a, b) * log(a))              \
  X(MAX, a > b ? a : b, a >= b ? g : 0, a < b ? g : 0)                          \
  X(MIN, a < b ? a : b, a <= b ? g : 0, a > b ? g : 0)

#define DEF_BI(NAME, FWD, DA, DB)                                                          \
  LMX_SIMD_CLONES                                                                          \
  static void bif_##NAME##_f32(int64_t n, float *o, const float *ap, const float *bp,      \
                               int acc) {                                                  \
    EW_LOOP(n, acc, i, float, ({ float a = ap[i], b = bp[i]; (float)(FWD); }));            \
  }                                                                                        \
  static void bif_##NAME##_f64(int64_t n, double *o, const double *ap, const double *bp,   \
                               int acc) {                                                  \
    EW_LOOP(n, acc, i, double, ({ double a = ap[i], b = bp[i]; (double)(FWD); }));         \
  }                                                                                        \
  LMX_SIMD_CLONES                                                                          \
  static void bib_##NAME##_f32(int64_t n, float *o, int side, const float *gp,             \
                               const float *ap, const float *bp, int acc) {                \
    if (side == 0)                                                                         \
      EW_LOOP(n, acc, i, float, ({ float g = gp[i], a = ap[i], b = bp[i];                  \
                                   (void)a, (void)b; (float)(DA); }));                     \
    else                                                                                   \
      EW_LOOP(n, acc, i, float, ({ float g = gp[i], a = ap[i], b = bp[i];                  \
                                   (void)a, (void)b; (float)(DB); }));                     \
  }                                                                                        \
  static void bib_##NAME##_f64(int64_t n, double *o, int side, const double *gp,           \
                               const double *ap, const double *bp, int acc) {              \
    if (side == 0)                                                                         \
      EW_LOOP(n, acc, i, double, ({ double g = gp[i], a = ap[i], b = bp[i];                \
                                    (void)a, (void)b; (double)(DA); }));                   \
    else                                                                                   \
      EW_LOOP(n, acc, i, double, ({ double g = gp[i], a = ap[i], b = bp[i];                \
                                    (void)a, (void)b; (double)(DB); }));                   \
  }
BINARY_LIST(DEF_BI)

typedef void (*bif_f32)(int64_t, float *, const float *, const float *, int);
typedef void (*bif_f64)(int64_t, double *, const double *, const double *, int);
typedef void (*bib_f32)(int64_t, float *, int, const float *, const float *, const float *, int);
typedef void (*bib_f64)(int64_t, double *, int, const double *, const double *, const double *,
                        int);
#define ROW_BIF(NAME, F, A, B) {bif_##NAME##_f32, bif_##NAME##_f64},
#define ROW_BIB(NAME, F, A, B) {bib_##NAME##_f32, bib_##NAME##_f64},
static const struct { bif_f32 f; bif_f64 d; } g_bif[] = {BINARY_LIST(ROW_BIF)};
static const struct { bib_f32 f; bib_f64 d; } g_bib[] = {BINARY_LIST(ROW_BIB)};

static int half_bi(const void *c, int64_t m, float *o, const float *const *x, int acc) {
  return lmx_cpu_ew_binary(((const half_ctx *)c)->op, LMX_FLOAT32, m, o, x[0], x[1], acc);
}
static int half_bib(const void *c, int64_t m, float *o, const float *const *x, int acc) {
  const half_ctx *h = c;
  return lmx_cpu_ew_binary_bwd(h->op, h->side, LMX_FLOAT32, m, o, x[0], x[1], x[2], acc);
}

int lmx_cpu_ew_binary(int op, int dt, int64_t n, void *out, const void *a, const void *b,
                      int acc) {
  if (is_half(dt) && op >= 0 && op < LMX_NUM_BINOPS)
    return lmx_cpu_half_map(dt, n, out, acc, 2, (const void *[]){a, b}, half_bi,
                            &(half_ctx){.op = op});
  int k = dt_slot(dt);
  if (k < 0 || op < 0 || op >= LMX_NUM_BINOPS) return -1;
  if (k == 0) g_bif[op].f(n, out, a, b, acc);
  else g_bif[op].d(n, out, a, b, acc);
  return 0;
}

int lmx_cpu_ew_binary_bwd(int op, int side, int dt, int64_t n, void *gout, const void *g,
                          const void *a, const void *b, int acc) {
  if (is_half(dt) && op >= 0 && op < LMX_NUM_BINOPS)
    return lmx_cpu_half_map(dt, n, gout, acc, 3, (const void *[]){g, a, b}, half_bib,
                            &(half_ctx){.op = op, .side = side});
  int k = dt_slot(dt);
  if (k < 0 || op < 0 || op >= LMX_NUM_BINOPS) return -1;
  if (k == 0) g_bib[op].f(n, gout, side, g, a, b, acc);
  else g_bib[op].d(n, gout, side, g, a, b, acc);
  return 0;
}

/* ---- copies, scaling, sums -------------------------------------------------------- */

LMX_SIMD_CLONES static void axpy_f32(int64_t n, float *o, const float *x, double alpha, int acc) {
  float al = (float)alpha;
  EW_LOOP(n, acc, i, float, al * x[i]);
}
static void axpy_f64(int64_t n, double *o, const double *x, double alpha, int acc) {
  EW_LOOP(n, acc, i, double, alpha * x[i]);
}

static int half_axpy(const void *c, int64_t m, float *o, const float *const *x, int acc) {
  return lmx_cpu_scale(LMX_FLOAT32, m, o, x[0], ((const half_ctx *)c)->s, acc);
}

int lmx_cpu_scale(int dt, int64_t n, void *out, const void *x, double alpha, int acc) {
  int k = dt_slot(dt);
  if (is_half(dt) && (alpha != 1.0 || acc))
    return lmx_cpu_half_map(dt, n, out, acc, 1, (const void *[]){x}, half_axpy,
                            &(half_ctx){.s = alpha});
  if (k < 0) {
    if (alpha != 1.0 || acc) return -1;
    lmx_cpu_convert(out, dt, x, dt, n); /* plain copy of any dtype */
    return 0;
  }
  if (alpha == 1.0 && !acc) {
    if (out != x) lmx_cpu_convert(out, dt, x, dt, n);
    return 0;
  }
  if (k == 0) axpy_f32(n, out, x, alpha, acc);
  else axpy_f64(n, out, x, alpha, acc);
  return 0;
}
