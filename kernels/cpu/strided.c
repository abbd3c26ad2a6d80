/* strided.c — kernels that walk an index space with per-operand strides: strided
 * copies (transpose, slice, concat, broadcast_to), broadcasting binary ops with their
 * gradients, and reductions over any set of axes with their gradients.
 *
 * An operand is (pointer, strides in elements over the walked shape); a stride of 0
 * repeats the operand along that axis (broadcast) or, on a destination, folds the axis
 * (reduction). Every walk first collapses the shape (size-1 axes dropped, neighbouring
 * axes that all operands walk contiguously merged), so an (n)+(n) or a transpose-free
 * slice becomes one long row. The walk then runs the last axis as an inner loop with
 * loops specialised for unit and zero inner strides (the compiler vectorises them) and
 * advances the outer index like an odometer. Above LMX_OMP_MIN elements the rows are
 * split among the OpenMP threads, except where the destination folds an axis (rows
 * would race on it).
 * Reductions recognise the canonical forms (outer, len, inner) after collapsing: a row
 * reduction (inner = 1) keeps 64 partial results per row so it vectorises without
 * reassociating any single chain, and a column reduction adds whole rows into the
 * output; both go parallel over rows, or over slices of a single long row / of the
 * columns. Other reductions (several separate reduced axis groups) take a serial walk.
 * float32/float64 have typed loops; the plain copy also moves any dtype by element
 * size.
 */
#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"

static int nthreads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

/* Drops size-1 axes and merges axis d into d+1 where every operand's stride satisfies
 * st[d] == st[d+1] * shape[d+1]; rewrites shape/st in place and returns the new ndim
 * (at least 1: a single element becomes shape {1}). */
static int collapse(int ndim, int64_t *shape, int nops, int64_t (*st)[LMX_MAX_NDIM]) {
  int nd = 0;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == 1) continue;
    int merge = nd > 0;
    for (int k = 0; k < nops && merge; k++) merge = st[k][nd - 1] == st[k][d] * shape[d];
    if (merge) {
      shape[nd - 1] *= shape[d];
      for (int k = 0; k < nops; k++) st[k][nd - 1] = st[k][d];
    } else {
      shape[nd] = shape[d];
      for (int k = 0; k < nops; k++) st[k][nd] = st[k][d];
      nd++;
    }
  }
  if (nd == 0) {
    shape[0] = 1;
    for (int k = 0; k < nops; k++) st[k][0] = 0;
    nd = 1;
  }
  return nd;
}

static int64_t size_of(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  return n;
}

/* Runs BODY for rows rb..re-1 of the outer index of shape (all axes but the last);
 * o0..o2 are the operands' element offsets of the row, len its length and s0..s2 the
 * inner strides. */
#define WALK_ROWS(nd, shape, st, rb, re, ...)                                             \
  do {                                                                                    \
    int64_t len = (shape)[(nd) - 1];                                                      \
    int64_t s0 = (st)[0][(nd) - 1], s1 = (st)[1][(nd) - 1], s2 = (st)[2][(nd) - 1];       \
    int64_t idx_[LMX_MAX_NDIM] = {0}, rem_ = (rb), o0 = 0, o1 = 0, o2 = 0;                \
    (void)s0, (void)s1, (void)s2;                                                         \
    for (int d_ = (nd) - 2; d_ >= 0; d_--) {                                              \
      idx_[d_] = rem_ % (shape)[d_];                                                      \
      rem_ /= (shape)[d_];                                                                \
      o0 += idx_[d_] * (st)[0][d_], o1 += idx_[d_] * (st)[1][d_], o2 += idx_[d_] * (st)[2][d_]; \
    }                                                                                     \
    for (int64_t row_ = (rb); row_ < (re); row_++) {                                      \
      __VA_ARGS__;                                                                        \
      for (int d_ = (nd) - 2; d_ >= 0; d_--) {                                            \
        idx_[d_]++;                                                                       \
        o0 += (st)[0][d_], o1 += (st)[1][d_], o2 += (st)[2][d_];                          \
        if (idx_[d_] < (shape)[d_]) break;                                                \
        o0 -= (st)[0][d_] * (shape)[d_], o1 -= (st)[1][d_] * (shape)[d_];                 \
        o2 -= (st)[2][d_] * (shape)[d_];                                                  \
        idx_[d_] = 0;                                                                     \
      }                                                                                   \
    }                                                                                     \
  } while (0)

/* All rows, split among the threads when `par` and the walk is large enough. */
#define WALK(nd, shape, st, par, ...)                                                     \
  do {                                                                                    \
    int64_t rows_ = size_of((nd) - 1, (shape)), tot_ = rows_ * (shape)[(nd) - 1];         \
    if (tot_ == 0) break;                                                                 \
    if ((par) && rows_ > 1 && tot_ >= LMX_OMP_MIN) {                                      \
      _Pragma("omp parallel")                                                             \
      {                                                                                   \
        int64_t nt_ = 1, t_ = 0;                                                          \
        LMX_OMP_ID(nt_, t_);                                                              \
        WALK_ROWS(nd, shape, st, rows_ * t_ / nt_, rows_ * (t_ + 1) / nt_, __VA_ARGS__);  \
      }                                                                                   \
    } else {                                                                              \
      WALK_ROWS(nd, shape, st, 0, rows_, __VA_ARGS__);                                    \
    }                                                                                     \
  } while (0)

#ifdef _OPENMP
#define LMX_OMP_ID(nt, t) ((nt) = omp_get_num_threads(), (t) = omp_get_thread_num())
#else
#define LMX_OMP_ID(nt, t) ((void)0)
#endif

/* Whether a destination with strides st folds an axis (stride 0 on a walked axis). */
static int folds(int nd, const int64_t *shape, const int64_t *st) {
  for (int d = 0; d < nd; d++)
    if (st[d] == 0 && shape[d] > 1) return 1;
  return 0;
}

void lmx_cpu_contig_strides(int ndim, const int64_t *shape, int64_t *st) {
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    st[d] = s;
    s *= shape[d];
  }
}

/* ---- strided copy ------------------------------------------------------------------- */

#define COPY_ROW(T, acc)                                                                  \
  do {                                                                                    \
    T *d_ = (T *)dst + o0;                                                                \
    const T *s_ = (const T *)src + o1;                                                    \
    if (acc) {                                                                            \
      if (s0 == 1 && s1 == 1) for (int64_t j = 0; j < len; j++) d_[j] += s_[j];           \
      else if (s0 == 1 && s1 == 0) for (int64_t j = 0; j < len; j++) d_[j] += s_[0];      \
      else for (int64_t j = 0; j < len; j++) d_[j * s0] += s_[j * s1];                    \
    } else {                                                                              \
      if (s0 == 1 && s1 == 1) memmove(d_, s_, sizeof(T) * (size_t)len);                   \
      else if (s0 == 1 && s1 == 0) for (int64_t j = 0; j < len; j++) d_[j] = s_[0];       \
      else for (int64_t j = 0; j < len; j++) d_[j * s0] = s_[j * s1];                     \
    }                                                                                     \
  } while (0)

int lmx_cpu_strided_copy(int dt, int ndim, const int64_t *shape, void *dst, const int64_t *dstr,
                         const void *src, const int64_t *sstr, int acc) {
  if (acc && dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  int64_t sh[LMX_MAX_NDIM], st[3][LMX_MAX_NDIM] = {{0}};
  memcpy(sh, shape, sizeof(int64_t) * (size_t)ndim);
  memcpy(st[0], dstr, sizeof(int64_t) * (size_t)ndim);
  memcpy(st[1], sstr, sizeof(int64_t) * (size_t)ndim);
  int nd = collapse(ndim, sh, 2, st);
  /* rows race when the destination folds an axis, or when it is the source itself */
  int par = !folds(nd, sh, st[0]) && dst != src;
  if (dt == LMX_FLOAT32) {
    if (acc) WALK(nd, sh, st, par, COPY_ROW(float, 1));
    else WALK(nd, sh, st, par, COPY_ROW(float, 0));
    return 0;
  }
  if (dt == LMX_FLOAT64) {
    if (acc) WALK(nd, sh, st, par, COPY_ROW(double, 1));
    else WALK(nd, sh, st, par, COPY_ROW(double, 0));
    return 0;
  }
  size_t es = (size_t)lmx_dtype_size(dt);
  char *d = dst;
  const char *s = src;
  WALK(nd, sh, st, par, {
    if (s0 == 1 && s1 == 1)
      memmove(d + (size_t)o0 * es, s + (size_t)o1 * es, es * (size_t)len);
    else
      for (int64_t j = 0; j < len; j++)
        memmove(d + (size_t)(o0 + j * s0) * es, s + (size_t)(o1 + j * s1) * es, es);
  });
  return 0;
}

/* ---- broadcasting binary ------------------------------------------------------------ */

#define BC_APPLY(op, a, b)                                                                \
  ((op) == LMX_BC_ADD ? (a) + (b) : (op) == LMX_BC_SUB ? (a) - (b)                        \
   : (op) == LMX_BC_MUL ? (a) * (b) : (op) == LMX_BC_DIV ? (a) / (b)                      \
   : (op) == LMX_BC_MAX ? ((a) > (b) ? (a) : (b)) : (op) == LMX_BC_MIN ? ((a) < (b) ? (a) : (b)) \
   : (op) == LMX_BC_POW ? pow((a), (b)) : (op) == LMX_BC_EQ ? (double)((a) == (b))        \
   : (op) == LMX_BC_NE ? (double)((a) != (b)) : (op) == LMX_BC_GT ? (double)((a) > (b))   \
   : (op) == LMX_BC_GE ? (double)((a) >= (b)) : (op) == LMX_BC_LT ? (double)((a) < (b))   \
   : (double)((a) <= (b)))

static double bc_grad(int op, int side, double g, double a, double b) {
  switch (op) {
    case LMX_BC_ADD: return g;
    case LMX_BC_SUB: return side ? -g : g;
    case LMX_BC_MUL: return side ? g * a : g * b;
    case LMX_BC_DIV: return side ? -g * a / (b * b) : g / b;
    case LMX_BC_MAX: return side ? (a < b ? g : 0) : (a >= b ? g : 0);
    case LMX_BC_MIN: return side ? (a > b ? g : 0) : (a <= b ? g : 0);
    case LMX_BC_POW: return side ? g * pow(a, b) * log(a) : g * b * pow(a, b - 1);
    default: return 0;
  }
}

/* One output row o[0..len) (+)= a[j·sa] OP b[j·sb], with loops for the unit / zero
 * stride combinations. */
#define BC_ROW(T, o, a, sa, b, sb, len, acc, EXPR)                                        \
  do {                                                                                    \
    if ((sa) == 1 && (sb) == 1) {                                                         \
      if (acc)                                                                            \
        for (int64_t j = 0; j < (len); j++) { T x = (a)[j], y = (b)[j]; (o)[j] += (T)(EXPR); } \
      else                                                                                \
        for (int64_t j = 0; j < (len); j++) { T x = (a)[j], y = (b)[j]; (o)[j] = (T)(EXPR); } \
    } else if ((sa) == 1 && (sb) == 0) {                                                  \
      T y = (b)[0];                                                                       \
      if (acc) for (int64_t j = 0; j < (len); j++) { T x = (a)[j]; (o)[j] += (T)(EXPR); } \
      else for (int64_t j = 0; j < (len); j++) { T x = (a)[j]; (o)[j] = (T)(EXPR); }      \
    } else if ((sa) == 0 && (sb) == 1) {                                                  \
      T x = (a)[0];                                                                       \
      if (acc) for (int64_t j = 0; j < (len); j++) { T y = (b)[j]; (o)[j] += (T)(EXPR); } \
      else for (int64_t j = 0; j < (len); j++) { T y = (b)[j]; (o)[j] = (T)(EXPR); }      \
    } else {                                                                              \
      for (int64_t j = 0; j < (len); j++) {                                               \
        T x = (a)[j * (sa)], y = (b)[j * (sb)];                                           \
        if (acc) (o)[j] += (T)(EXPR);                                                     \
        else (o)[j] = (T)(EXPR);                                                          \
      }                                                                                   \
    }                                                                                     \
  } while (0)

#define DEF_BC(T, S)                                                                      \
  LMX_SIMD_CLONES static void bc_row_##S(int op, int64_t len, T *o, const T *a, int64_t sa, \
                                         const T *b, int64_t sb, int acc) {               \
    switch (op) {                                                                         \
      case LMX_BC_ADD: BC_ROW(T, o, a, sa, b, sb, len, acc, x + y); break;                \
      case LMX_BC_SUB: BC_ROW(T, o, a, sa, b, sb, len, acc, x - y); break;                \
      case LMX_BC_MUL: BC_ROW(T, o, a, sa, b, sb, len, acc, x * y); break;                \
      case LMX_BC_DIV: BC_ROW(T, o, a, sa, b, sb, len, acc, x / y); break;                \
      case LMX_BC_MAX: BC_ROW(T, o, a, sa, b, sb, len, acc, x > y ? x : y); break;        \
      case LMX_BC_MIN: BC_ROW(T, o, a, sa, b, sb, len, acc, x < y ? x : y); break;        \
      default:                                                                            \
        for (int64_t j = 0; j < len; j++) {                                               \
          T v = (T)BC_APPLY(op, a[j * sa], b[j * sb]);                                    \
          if (acc) o[j] += v;                                                             \
          else o[j] = v;                                                                  \
        }                                                                                 \
    }                                                                                     \
  }                                                                                       \
  /* gd (+)= d(a op b)/d(side) · g, serially (gd may fold axes); g is contiguous over  \
   * the walked shape, so its offset is the row number times len plus j. */             \
  static void bcg_##S(int op, int side, int ndim, const int64_t *shape, T *gd,             \
                      int64_t (*st)[LMX_MAX_NDIM], const T *g, const T *a, const T *b) {   \
    WALK_ROWS(ndim, shape, st, 0, size_of(ndim - 1, shape), {                             \
      const T *gr = g + row_ * len;                                                       \
      for (int64_t j = 0; j < len; j++)                                                   \
        gd[o0 + j * s0] += (T)bc_grad(op, side, gr[j], a[o1 + j * s1], b[o2 + j * s2]);   \
    });                                                                                   \
  }
DEF_BC(float, f32)
DEF_BC(double, f64)

int lmx_cpu_bcast_binary(int op, int dt, int ndim, const int64_t *oshape, void *out,
                         const void *a, const int64_t *astr, const void *b, const int64_t *bstr,
                         int acc) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  int64_t sh[LMX_MAX_NDIM], st[3][LMX_MAX_NDIM] = {{0}};
  memcpy(sh, oshape, sizeof(int64_t) * (size_t)ndim);
  lmx_cpu_contig_strides(ndim, oshape, st[0]);
  memcpy(st[1], astr, sizeof(int64_t) * (size_t)ndim);
  memcpy(st[2], bstr, sizeof(int64_t) * (size_t)ndim);
  int nd = collapse(ndim, sh, 3, st);
  if (dt == LMX_FLOAT32)
    WALK(nd, sh, st, 1, bc_row_f32(op, len, (float *)out + o0, (const float *)a + o1, s1,
                                   (const float *)b + o2, s2, acc));
  else
    WALK(nd, sh, st, 1, bc_row_f64(op, len, (double *)out + o0, (const double *)a + o1, s1,
                                   (const double *)b + o2, s2, acc));
  return 0;
}

int lmx_cpu_bcast_binary_grad(int op, int side, int dt, int ndim, const int64_t *oshape,
                              void *gd, const int64_t *dstr, int64_t dsize, const void *g,
                              const void *a, const int64_t *astr, const void *b,
                              const int64_t *bstr, int acc) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  /* add / sub: the gradient is ±g summed over the broadcast axes, a reduction */
  if (op == LMX_BC_ADD || op == LMX_BC_SUB)
    return lmx_cpu_reduce(LMX_RED_SUM, dt, ndim, oshape, g, gd, dstr, dsize,
                          op == LMX_BC_SUB && side ? -1.0 : 1.0, acc);
  if (!acc) lmx_cpu_fill(gd, dt, dsize, 0.0);
  int64_t st[3][LMX_MAX_NDIM] = {{0}};
  memcpy(st[0], dstr, sizeof(int64_t) * (size_t)ndim);
  memcpy(st[1], astr, sizeof(int64_t) * (size_t)ndim);
  memcpy(st[2], bstr, sizeof(int64_t) * (size_t)ndim);
  if (ndim == 0 || size_of(ndim, oshape) == 0) return 0;
  if (dt == LMX_FLOAT32) bcg_f32(op, side, ndim, oshape, gd, st, g, a, b);
  else bcg_f64(op, side, ndim, oshape, gd, st, g, a, b);
  return 0;
}

/* ---- reductions ---------------------------------------------------------------------- */

/* X(kind, init, comb(acc a, element v) with scale sc, merge(partial a, partial b),
 * final(a)). SUM and MEAN differ only by the scale the caller passes. */
#define RED_KINDS(X)                                                                      \
  X(SUM, 0, a + v * sc, a + b, a)                                                         \
  X(PROD, 1, a * v, a * b, a)                                                             \
  X(MAX, -INFINITY, v > a || v != v ? v : a, b > a || b != b ? b : a, a)                   \
  X(MIN, INFINITY, v < a || v != v ? v : a, b < a || b != b ? b : a, a)                    \
  X(NORM1, 0, a + fabs(v), a + b, a)                                                      \
  X(NORM2, 0, a + v * v, a + b, sqrt(a))

enum { RED_LANES = 64 }; /* partial results per row: 4 AVX-512 registers of float */

/* Row reduction of x[len] from start value a0 (lanes hold partials, merged in a fixed
 * order, so the result does not depend on threads); column reduction y[inner] (op)=
 * x[len][inner] row by row; and the gradient of one row. */
#define DEF_RED_KIND(T, S, K, INIT, COMB, MERGE, FIN)                                     \
  LMX_SIMD_CLONES                                                                         \
  static T redrow_##K##_##S(const T *x, int64_t len, T sc) {                              \
    int64_t j = 0;                                                                        \
    T r = (T)(INIT);                                                                      \
    if (len >= 2 * RED_LANES) {                                                           \
      T part[RED_LANES];                                                                  \
      for (int l = 0; l < RED_LANES; l++) part[l] = (T)(INIT);                            \
      for (; j + RED_LANES <= len; j += RED_LANES)                                        \
        for (int l = 0; l < RED_LANES; l++) {                                             \
          T a = part[l], v = x[j + l];                                                    \
          part[l] = (T)(COMB);                                                            \
        }                                                                                 \
      /* pairwise: halves merged into the lower half, so the merge vectorises too */     \
      for (int w = RED_LANES / 2; w >= 1; w /= 2)                                         \
        for (int l = 0; l < w; l++) {                                                     \
          T a = part[l], b = part[l + w];                                                 \
          part[l] = (T)(MERGE);                                                           \
        }                                                                                 \
      r = part[0];                                                                        \
    }                                                                                     \
    for (; j < len; j++) {                                                                \
      T a = r, v = x[j];                                                                  \
      r = (T)(COMB);                                                                      \
    }                                                                                     \
    (void)sc;                                                                             \
    return r;                                                                             \
  }                                                                                       \
  LMX_SIMD_CLONES static void redcol_##K##_##S(const T *x, int64_t len, int64_t inner,     \
                                               int64_t stride, T *y, T sc) {              \
    int64_t j = 0;                                                                        \
    /* four rows per pass over y (the same order of operations as one at a time) */      \
    for (; j + 4 <= len; j += 4) {                                                        \
      const T *x0 = x + j * stride, *x1 = x0 + stride, *x2 = x1 + stride, *x3 = x2 + stride; \
      for (int64_t i = 0; i < inner; i++) {                                               \
        T a = y[i], v = x0[i];                                                            \
        a = (T)(COMB), v = x1[i];                                                         \
        a = (T)(COMB), v = x2[i];                                                         \
        a = (T)(COMB), v = x3[i];                                                         \
        y[i] = (T)(COMB);                                                                 \
      }                                                                                   \
    }                                                                                     \
    for (; j < len; j++) {                                                                \
      const T *xr = x + j * stride;                                                       \
      for (int64_t i = 0; i < inner; i++) {                                               \
        T a = y[i], v = xr[i];                                                            \
        y[i] = (T)(COMB);                                                                 \
      }                                                                                   \
    }                                                                                     \
    (void)sc;                                                                             \
  }                                                                                       \
  static T redfin_##K##_##S(T a) { return (T)(FIN); }                                     \
  static T redmerge_##K##_##S(T a, T b) { return (T)(MERGE); }

#define DEF_RED_KIND_F32(K, I, C, M, F) DEF_RED_KIND(float, f32, K, I, C, M, F)
#define DEF_RED_KIND_F64(K, I, C, M, F) DEF_RED_KIND(double, f64, K, I, C, M, F)
RED_KINDS(DEF_RED_KIND_F32)
RED_KINDS(DEF_RED_KIND_F64)

#define RED_DISPATCH(kind, S, FN, ...)                                                    \
  switch (kind) {                                                                         \
    case LMX_RED_PROD: FN##_PROD_##S(__VA_ARGS__); break;                                 \
    case LMX_RED_MAX: FN##_MAX_##S(__VA_ARGS__); break;                                   \
    case LMX_RED_MIN: FN##_MIN_##S(__VA_ARGS__); break;                                   \
    case LMX_RED_NORM1: FN##_NORM1_##S(__VA_ARGS__); break;                               \
    case LMX_RED_NORM2: FN##_NORM2_##S(__VA_ARGS__); break;                               \
    default: FN##_SUM_##S(__VA_ARGS__);                                                   \
  }
#define RED_VALUE(kind, S, FN, ...)                                                       \
  ((kind) == LMX_RED_PROD ? FN##_PROD_##S(__VA_ARGS__)                                    \
   : (kind) == LMX_RED_MAX ? FN##_MAX_##S(__VA_ARGS__)                                    \
   : (kind) == LMX_RED_MIN ? FN##_MIN_##S(__VA_ARGS__)                                    \
   : (kind) == LMX_RED_NORM1 ? FN##_NORM1_##S(__VA_ARGS__)                                \
   : (kind) == LMX_RED_NORM2 ? FN##_NORM2_##S(__VA_ARGS__) : FN##_SUM_##S(__VA_ARGS__))

#define DEF_RED(T, S)                                                                     \
  /* y[o] = reduction of row o of x[outer][len] (lin && acc: y[o] += ...) */              \
  static void red_rows_##S(int kind, int64_t outer, int64_t len, const T *x, T *y, T sc,   \
                           int lin, int acc) {                                            \
    int nt = nthreads();                                                                  \
    if (outer < nt && len >= LMX_OMP_MIN) {                                               \
      /* few long rows: each row in slices, one per thread, merged in slice order */      \
      T part[64];                                                                         \
      int ns = nt < 64 ? nt : 64;                                                         \
      for (int64_t o = 0; o < outer; o++) {                                               \
        const T *xr = x + o * len;                                                        \
        _Pragma("omp parallel for schedule(static)")                                      \
        for (int k = 0; k < ns; k++) {                                                    \
          int64_t lo = len * k / ns, hi = len * (k + 1) / ns;                             \
          part[k] = RED_VALUE(kind, S, redrow, xr + lo, hi - lo, sc);                     \
        }                                                                                 \
        T a = part[0];                                                                    \
        for (int k = 1; k < ns; k++) a = RED_VALUE(kind, S, redmerge, a, part[k]);        \
        a = RED_VALUE(kind, S, redfin, a);                                                \
        y[o] = lin && acc ? y[o] + a : a;                                                 \
      }                                                                                   \
      return;                                                                             \
    }                                                                                     \
    LMX_PAR_FOR_W(outer, len, o, {                                                        \
      T a = RED_VALUE(kind, S, redrow, x + o * len, len, sc);                             \
      a = RED_VALUE(kind, S, redfin, a);                                                  \
      y[o] = lin && acc ? y[o] + a : a;                                                   \
    });                                                                                   \
  }                                                                                       \
  /* y[o][inner] = reduction over j of x[o][j][inner] (y already holds the start) */     \
  static void red_cols_##S(int kind, int64_t outer, int64_t len, int64_t inner,           \
                           const T *x, T *y, T sc) {                                      \
    enum { CHUNK = 1024 };                                                                \
    int64_t nchunk = (inner + CHUNK - 1) / CHUNK;                                         \
    LMX_PAR_FOR_W(outer * nchunk, len * (inner < CHUNK ? inner : CHUNK), t, {             \
      int64_t o = t / nchunk, i0 = (t % nchunk) * CHUNK;                                  \
      int64_t n = inner - i0 < CHUNK ? inner - i0 : CHUNK;                                \
      RED_DISPATCH(kind, S, redcol, x + o * len * inner + i0, len, n, inner,              \
                   y + o * inner + i0, sc);                                               \
    });                                                                                   \
    if (kind == LMX_RED_NORM2)                                                            \
      for (int64_t i = 0; i < outer * inner; i++) y[i] = (T)sqrt(y[i]);                   \
  }                                                                                       \
  static void red_##S(int kind, int ndim, const int64_t *shape, const T *x, T *y,          \
                      const int64_t *ystr, int64_t ysize, double scale, int acc) {         \
    int lin = kind == LMX_RED_SUM || kind == LMX_RED_MEAN;                                \
    T init = kind == LMX_RED_PROD ? 1 : kind == LMX_RED_MAX ? -INFINITY                   \
             : kind == LMX_RED_MIN ? INFINITY : 0;                                        \
    T sc = lin ? (T)scale : 1;                                                            \
    int64_t sh[LMX_MAX_NDIM], st[3][LMX_MAX_NDIM] = {{0}};                                \
    memcpy(sh, shape, sizeof(int64_t) * (size_t)ndim);                                    \
    lmx_cpu_contig_strides(ndim, shape, st[0]);                                           \
    memcpy(st[1], ystr, sizeof(int64_t) * (size_t)ndim);                                  \
    int nd = collapse(ndim, sh, 2, st);                                                   \
    if (size_of(nd, sh) == 0) {                                                           \
      if (!(lin && acc)) for (int64_t i = 0; i < ysize; i++) y[i] = init;                 \
      return;                                                                             \
    }                                                                                     \
    /* canonical forms: [R], [K R], [R K], [K R K] with y contiguous over K */            \
    int r0 = st[1][0] == 0 && sh[0] > 1;                                                  \
    int64_t outer = -1, rlen = 0, inner = 0;                                               \
    if (nd == 1) outer = r0 ? 1 : sh[0], rlen = r0 ? sh[0] : 1, inner = 1;                 \
    else if (nd == 2 && !r0 && st[1][1] == 0 && st[1][0] == 1)                            \
      outer = sh[0], rlen = sh[1], inner = 1;                                              \
    else if (nd == 2 && r0 && st[1][1] == 1) outer = 1, rlen = sh[0], inner = sh[1];       \
    else if (nd == 3 && !r0 && st[1][1] == 0 && st[1][2] == 1 && st[1][0] == sh[2])       \
      outer = sh[0], rlen = sh[1], inner = sh[2];                                          \
    if (outer >= 0 && inner == 1) {                                                       \
      red_rows_##S(kind, outer, rlen, x, y, sc, lin, acc);                                 \
      return;                                                                             \
    }                                                                                     \
    if (!(lin && acc)) for (int64_t i = 0; i < ysize; i++) y[i] = init;                   \
    if (outer >= 0) {                                                                     \
      red_cols_##S(kind, outer, rlen, inner, x, y, sc);                                    \
      return;                                                                             \
    }                                                                                     \
    /* anything else: a serial walk (y folds axes), one row of partials at a time */      \
    WALK_ROWS(nd, sh, st, 0, size_of(nd - 1, sh), {                                       \
      if (s1 == 0) {                                                                      \
        T a = RED_VALUE(kind, S, redrow, x + o0, len, sc);                                \
        y[o1] = RED_VALUE(kind, S, redmerge, y[o1], a);                                   \
      } else if (s1 == 1) {                                                               \
        RED_DISPATCH(kind, S, redcol, x + o0, 1, len, 0, y + o1, sc);                     \
      } else {                                                                            \
        for (int64_t j = 0; j < len; j++)                                                 \
          RED_DISPATCH(kind, S, redcol, x + o0 + j, 1, 1, 0, y + o1 + j * s1, sc);        \
      }                                                                                   \
    });                                                                                   \
    for (int64_t i = 0; i < ysize; i++) y[i] = RED_VALUE(kind, S, redfin, y[i]);          \
  }
DEF_RED(float, f32)
DEF_RED(double, f64)

/* gx[o0 + j] (+)= EXPR for a row, with g / y read at stride s1 (0: one value per row);
 * xv is read only by the kinds that need x. */
#define GRAD_ROW(T, acc, READ_X, EXPR)                                                    \
  do {                                                                                    \
    if (s1 == 0) {                                                                        \
      T gv = gg[0], yv = yy ? yy[0] : 0;                                                  \
      (void)yv;                                                                           \
      for (int64_t j = 0; j < len; j++) {                                                 \
        T xv = READ_X;                                                                    \
        (void)xv;                                                                         \
        if (acc) gr[j] += (T)(EXPR);                                                      \
        else gr[j] = (T)(EXPR);                                                           \
      }                                                                                   \
    } else {                                                                              \
      for (int64_t j = 0; j < len; j++) {                                                 \
        T gv = gg[j * s1], yv = yy ? yy[j * s1] : 0, xv = READ_X;                         \
        (void)yv, (void)xv;                                                               \
        if (acc) gr[j] += (T)(EXPR);                                                      \
        else gr[j] = (T)(EXPR);                                                           \
      }                                                                                   \
    }                                                                                     \
  } while (0)

#define GRAD_KINDS(T, acc)                                                                \
  switch (kind) {                                                                         \
    case LMX_RED_PROD: GRAD_ROW(T, acc, xr[j], gv * yv / xv); break;                      \
    case LMX_RED_MAX:                                                                     \
    case LMX_RED_MIN: GRAD_ROW(T, acc, xr[j], xv == yv ? gv : 0); break;                  \
    case LMX_RED_NORM1: GRAD_ROW(T, acc, xr[j], xv > 0 ? gv : xv < 0 ? -gv : 0); break;   \
    case LMX_RED_NORM2: GRAD_ROW(T, acc, xr[j], yv != 0 ? gv * xv / yv : 0); break;       \
    default: GRAD_ROW(T, acc, 0, gv * sc);                                                \
  }

#define DEF_REDG(T, S)                                                                    \
  static void redg_##S(int kind, int ndim, const int64_t *shape, T *gx, const T *x,        \
                       const T *g, const T *y, const int64_t *ystr, double scale, int acc) { \
    T sc = (T)scale;                                                                      \
    int64_t sh[LMX_MAX_NDIM], st[3][LMX_MAX_NDIM] = {{0}};                                \
    memcpy(sh, shape, sizeof(int64_t) * (size_t)ndim);                                    \
    lmx_cpu_contig_strides(ndim, shape, st[0]);                                           \
    memcpy(st[1], ystr, sizeof(int64_t) * (size_t)ndim);                                  \
    int nd = collapse(ndim, sh, 2, st);                                                   \
    WALK(nd, sh, st, 1, {                                                                 \
      T *gr = gx + o0;                                                                    \
      const T *xr = x ? x + o0 : NULL, *gg = g + o1, *yy = y ? y + o1 : NULL;             \
      (void)xr;                                                                           \
      if (acc) GRAD_KINDS(T, 1)                                                           \
      else GRAD_KINDS(T, 0)                                                               \
    });                                                                                   \
  }
DEF_REDG(float, f32)
DEF_REDG(double, f64)

int lmx_cpu_reduce(int kind, int dt, int ndim, const int64_t *shape, const void *x, void *y,
                   const int64_t *ystr, int64_t ysize, double scale, int acc) {
  if (dt == LMX_FLOAT32) red_f32(kind, ndim, shape, x, y, ystr, ysize, scale, acc);
  else if (dt == LMX_FLOAT64) red_f64(kind, ndim, shape, x, y, ystr, ysize, scale, acc);
  else return -1;
  return 0;
}

int lmx_cpu_reduce_bwd(int kind, int dt, int ndim, const int64_t *shape, void *gx, const void *x,
                       const void *g, const void *y, const int64_t *ystr, double scale, int acc) {
  if (dt == LMX_FLOAT32) redg_f32(kind, ndim, shape, gx, x, g, y, ystr, scale, acc);
  else if (dt == LMX_FLOAT64) redg_f64(kind, ndim, shape, gx, x, g, y, ystr, scale, acc);
  else return -1;
  return 0;
}
/* ---- argmax / argmin along [outer, len, inner] -------------------------------------- */

#define DEF_ARG(T, S)                                                                     \
  static void arg_##S(int want_min, int64_t outer, int64_t len, int64_t inner, const T *x, \
                      T *y) {                                                             \
    for (int64_t o = 0; o < outer; o++)                                                   \
      for (int64_t in = 0; in < inner; in++) {                                            \
        const T *p = x + o * len * inner + in;                                            \
        int64_t best = 0;                                                                 \
        for (int64_t j = 1; j < len; j++) {                                               \
          T v = p[j * inner], b = p[best * inner];                                        \
          if (want_min ? v < b : v > b) best = j;                                         \
        }                                                                                 \
        y[o * inner + in] = (T)best;                                                      \
      }                                                                                   \
  }
DEF_ARG(float, f32)
DEF_ARG(double, f64)

int lmx_cpu_argmax(int want_min, int dt, int64_t outer, int64_t len, int64_t inner,
                   const void *x, void *y) {
  if (dt == LMX_FLOAT32) arg_f32(want_min, outer, len, inner, x, y);
  else if (dt == LMX_FLOAT64) arg_f64(want_min, outer, len, inner, x, y);
  else return -1;
  return 0;
}
