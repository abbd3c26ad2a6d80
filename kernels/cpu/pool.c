/* pool.c — pooling (max / avg / sum / lp; 1-D to 3-D, padded, count_include_pad) on
 * channel-first data: x[planes, in...] -> y[planes, out...] and back.
 *
 * Windows follow MXNet 1.9's pool.h: along each dim the window of output o starts at
 * o*stride - pad and ends at min(start + kernel, in + pad); it reads the part inside
 * [0, in). avg divides by that padded size unless count_include_pad is false (then by the
 * in-range size); a window with nothing in range gives 0 (avg/sum/lp) or -inf (max) and
 * no gradient. The 'same' convention needs nothing here: the glue passes pad 0 and
 * out = ceil(in / stride), so windows start at o*stride and the last ones hang over the
 * end and are clipped (src/ops/cpu/conv.c).
 *
 * Max pooling keeps the FIRST maximum of its window in scan order (depth, row, column):
 * the first in-range element is taken, later ones replace it only when strictly greater.
 * Its gradient goes to that element only (MXNet's unpool gives it to the first element
 * equal to the output, the same element). Every path below compares candidates in that
 * order with that rule, so all paths give equal values and send each gradient to the
 * same element, ties and NaN included (spec/pool_spec.lua compares them exactly).
 *
 * Paths, chosen per call (pool_path):
 *  - 2x2 stride 2, no pad, max (LeNet; 52% of a W2 step went to the generic kernel):
 *    one output row from two input rows in blocks of 8 and 4 outputs that the compiler
 *    turns into vector code (stride-2 loads become permutes); windows do not overlap, so
 *    the backward writes every input element once (selects, no scatter, no memset) and
 *    zeroes rows / columns no window covers. Odd sizes ('full' / 'same' leave a last
 *    window of one row or column) take a short edge case.
 *  - any other 2-D (and 1-D) max: the rows of the window are clipped once per output
 *    row; the columns whose window is fully inside the row (all but a few at the edges)
 *    run as a vector loop over outputs with the window offsets (h, j) outermost, so each
 *    output still sees its candidates in scan order; the few edge columns are clipped
 *    one by one. The backward runs the same loop tracking the winner's offset in the
 *    window, then scatters (windows may overlap). Short rows (13 outputs for a 3x3/2
 *    pool of 28x28) still spend much of their time in the loop's scalar remainder.
 *  - 2x2 stride 2, no pad, avg / sum: the same row blocks, each window summed in scan
 *    order and scaled by 1/4 (1/2, 1 for clipped last windows; exact, like the generic
 *    division); the backward writes the share of each window's four elements directly.
 *  - any other 2-D (and 1-D) avg / sum: laid out like the general max path (window rows
 *    clipped once per output row, one divisor for its inside columns, edge columns
 *    clipped one by one with their own); the backward spreads each window's share,
 *    accumulating (windows may overlap) into a zeroed gradient for req WRITE.
 *    Both keep the generic kernel's order of every sum (window elements in scan order
 *    from 0; gradient shares per element in output order), so results equal the generic
 *    kernel's up to the sign of a zero (spec/pool_spec.lua compares them exactly).
 *  - everything else (3-D, lp): the generic per-window loop.
 * The fast per-plane functions inline into loops over PCH planes that are cloned per
 * vector width (LMX_SIMD_CLONES); those chunks of the N*C planes run in parallel above
 * cpu_par.h's threshold (LeNet's first pooling does, its second, 205k elements, not).
 * The backward writes gx (acc = 0: the kernels zero what no window covers) or adds into
 * it (acc = 1).
 * float32 and float64 siblings from one macro; other dtypes return -1.
 */
#include <math.h>
#include <string.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"

enum { PATH_GENERIC, PATH_MAX22, PATH_MAX2D, PATH_SUM22, PATH_SUM2D };
enum { BLK = 128 }; /* outputs per vector pass of the general 2-D path (stack buffers) */

/* The per-plane and per-block functions must inline into the cloned plane loops to be
 * compiled for the clone's vector width (a plain inline one stayed an SSE2 call). */
#if defined(__GNUC__)
#define INLINE inline __attribute__((always_inline))
#else
#define INLINE inline
#endif

/* The path for this call: the fast ones need a 1-D / 2-D problem (depth 1, as the
 * normalized geometry has it) and max, avg or sum pooling. */
static int pool_path(int type, const lmx_cpu_geom *g) {
  if (type == LMX_POOL_LP || g->in[0] != 1 || g->out[0] != 1 || g->kernel[0] != 1 ||
      g->pad[0] != 0)
    return PATH_GENERIC;
  int max = type == LMX_POOL_MAX;
  if (g->kernel[1] == 2 && g->kernel[2] == 2 && g->stride[1] == 2 && g->stride[2] == 2 &&
      g->pad[1] == 0 && g->pad[2] == 0 && g->out[1] <= (g->in[1] + 1) / 2 &&
      g->out[2] <= (g->in[2] + 1) / 2)
    return max ? PATH_MAX22 : PATH_SUM22;
  return max ? PATH_MAX2D : PATH_SUM2D;
}

/* ---- generic ------------------------------------------------------------------------ */

typedef struct {
  int64_t s[3], e[3], size;
} pwin;

/* Window of output position (od, oh, ow), clipped to the input; size per MXNet. */
static void pool_window(const lmx_cpu_geom *g, const int64_t *o, int include_pad, pwin *w) {
  int64_t full = 1, in_range = 1;
  for (int i = 0; i < 3; i++) {
    int64_t s = o[i] * g->stride[i] - g->pad[i];
    int64_t e = s + g->kernel[i];
    if (e > g->in[i] + g->pad[i]) e = g->in[i] + g->pad[i];
    if (e < s) e = s; /* a 'full'-convention window past the padded end is empty */
    full *= e - s;
    w->s[i] = s < 0 ? 0 : s;
    w->e[i] = e > g->in[i] ? g->in[i] : e;
    in_range *= w->e[i] > w->s[i] ? w->e[i] - w->s[i] : 0;
  }
  w->size = include_pad ? full : in_range;
}

#define DEF_POOL(T, S)                                                                     \
  static T pool_one_##S(int type, int pv, const lmx_cpu_geom *g, const T *x, const pwin *w, \
                        int64_t *arg) {                                                    \
    T acc = type == LMX_POOL_MAX ? -INFINITY : 0;                                          \
    for (int64_t d = w->s[0]; d < w->e[0]; d++)                                            \
      for (int64_t h = w->s[1]; h < w->e[1]; h++)                                          \
        for (int64_t q = w->s[2]; q < w->e[2]; q++) {                                      \
          int64_t i = (d * g->in[1] + h) * g->in[2] + q;                                   \
          T v = x[i];                                                                      \
          if (type == LMX_POOL_MAX) {                                                      \
            if (v > acc || *arg < 0) acc = v, *arg = i;                                    \
          } else if (type == LMX_POOL_LP) {                                                \
            acc += pv == 1 ? fabs(v) : v * v;                                              \
          } else {                                                                         \
            acc += v;                                                                      \
          }                                                                                \
        }                                                                                  \
    if (type == LMX_POOL_AVG) acc = w->size > 0 ? acc / (T)w->size : 0;                    \
    if (type == LMX_POOL_LP && pv == 2) acc = sqrt(acc);                                   \
    return acc;                                                                            \
  }                                                                                        \
  static void pool_plane_##S(int type, int pv, const lmx_cpu_geom *g, int include_pad,     \
                             const T *x, T *y, int acc) {                                  \
    int64_t O = g->out[0] * g->out[1] * g->out[2];                                         \
    for (int64_t j = 0; j < O; j++) {                                                      \
      int64_t o[3] = {j / (g->out[1] * g->out[2]), (j / g->out[2]) % g->out[1],            \
                      j % g->out[2]}, arg = -1;                                            \
      pwin w;                                                                              \
      pool_window(g, o, include_pad, &w);                                                  \
      T v = pool_one_##S(type, pv, g, x, &w, &arg);                                        \
      if (acc) y[j] += v;                                                                  \
      else y[j] = v;                                                                       \
    }                                                                                      \
  }                                                                                        \
  static void pool_plane_bwd_##S(int type, int pv, const lmx_cpu_geom *g, int include_pad, \
                                 T *gp, const T *gy, const T *xp, const T *y, int acc) {   \
    int64_t O = g->out[0] * g->out[1] * g->out[2];                                         \
    if (!acc) memset(gp, 0, sizeof(T) * (size_t)(g->in[0] * g->in[1] * g->in[2]));         \
    for (int64_t j = 0; j < O; j++) {                                                      \
      int64_t o[3] = {j / (g->out[1] * g->out[2]), (j / g->out[2]) % g->out[1],            \
                      j % g->out[2]}, arg = -1;                                            \
      pwin w;                                                                              \
      pool_window(g, o, include_pad, &w);                                                  \
      T gv = gy[j];                                                                        \
      if (type == LMX_POOL_MAX) {                                                          \
        pool_one_##S(type, pv, g, xp, &w, &arg);                                           \
        if (arg >= 0) gp[arg] += gv;                                                       \
        continue;                                                                          \
      }                                                                                    \
      T yv = y ? y[j] : 0;                                                                 \
      T sc = type == LMX_POOL_AVG ? (w.size > 0 ? gv / (T)w.size : 0) : gv;                \
      for (int64_t d = w.s[0]; d < w.e[0]; d++)                                            \
        for (int64_t h = w.s[1]; h < w.e[1]; h++)                                          \
          for (int64_t q = w.s[2]; q < w.e[2]; q++) {                                      \
            int64_t i = (d * g->in[1] + h) * g->in[2] + q;                                 \
            if (type != LMX_POOL_LP) gp[i] += sc;                                          \
            else if (pv == 1) gp[i] += xp[i] > 0 ? gv : xp[i] < 0 ? -gv : 0;               \
            else gp[i] += yv != 0 ? gv * xp[i] / yv : 0;                                   \
          }                                                                                \
    }                                                                                      \
  }

/* ---- 2x2 stride 2 max ---------------------------------------------------------------- */

/* Rows here are short (12 and 4 outputs for LeNet's two poolings), and a runtime-length
 * vector loop spends them in its scalar remainder. So a row goes in blocks of 8 and 4
 * outputs with a compile-time count (after inlining each becomes straight-line vector
 * code: deinterleaving permutes, compares, blends) and a scalar tail of 0-3.
 * ROW_BLOCKS_84 runs the 8- and 4-output blocks and leaves i0_ at the first output not
 * done. */
#define ROW_BLOCKS_84(n, ...)                                                              \
  int64_t i0_ = 0;                                                                         \
  for (; i0_ + 8 <= (n); i0_ += 8) {                                                       \
    const int64_t nb_ = 8;                                                                 \
    __VA_ARGS__;                                                                           \
  }                                                                                        \
  for (; i0_ + 4 <= (n); i0_ += 4) {                                                       \
    const int64_t nb_ = 4;                                                                 \
    __VA_ARGS__;                                                                           \
  }

#define ROW_TAIL1(n, ...)                                                                  \
  for (; i0_ < (n); i0_++) {                                                               \
    const int64_t nb_ = 1;                                                                 \
    __VA_ARGS__;                                                                           \
  }

#define ROW_BLOCKS(n, ...)                                                                 \
  do {                                                                                     \
    ROW_BLOCKS_84(n, __VA_ARGS__)                                                          \
    ROW_TAIL1(n, __VA_ARGS__)                                                              \
  } while (0)

/* The same for blocks that only write what they compute from the input (req WRITE): a
 * tail of 1-3 is one more block of 4 that overlaps the previous one and rewrites equal
 * values, instead of scalar steps (branches on random data: 'full' 23x23 ran 3x slower
 * than 24x24 with a scalar tail). */
#define ROW_BLOCKS_OVERLAP(n, ...)                                                         \
  do {                                                                                     \
    ROW_BLOCKS_84(n, __VA_ARGS__)                                                          \
    if (i0_ < (n) && (n) >= 4) {                                                           \
      const int64_t nb_ = 4;                                                               \
      i0_ = (n) - 4;                                                                       \
      __VA_ARGS__;                                                                         \
    } else {                                                                               \
      ROW_TAIL1(n, __VA_ARGS__)                                                            \
    }                                                                                      \
  } while (0)

/* y[n] (+)= max of the 2x2 windows of rows r0, r1 (columns 2i, 2i+1), in scan order. */
/* The 2x2 window i of rows g0, g1 (+)= a b / c d (acc: add). */
#define PUT22(g0, g1, i, a, b, c, d, acc)                                                  \
  do {                                                                                     \
    if (acc) {                                                                             \
      (g0)[2 * (i)] += (a), (g0)[2 * (i) + 1] += (b);                                      \
      (g1)[2 * (i)] += (c), (g1)[2 * (i) + 1] += (d);                                      \
    } else {                                                                               \
      (g0)[2 * (i)] = (a), (g0)[2 * (i) + 1] = (b);                                        \
      (g1)[2 * (i)] = (c), (g1)[2 * (i) + 1] = (d);                                        \
    }                                                                                      \
  } while (0)

#define DEF_MAX22(T, S)                                                                    \
  static INLINE void max22_blk_##S(const T *restrict r0, const T *restrict r1,             \
                                   T *restrict y, int64_t n, int acc) {                    \
    for (int64_t i = 0; i < n; i++) {                                                      \
      T m = r0[2 * i], b = r0[2 * i + 1], c = r1[2 * i], d = r1[2 * i + 1];                \
      m = b > m ? b : m;                                                                   \
      m = c > m ? c : m;                                                                   \
      m = d > m ? d : m;                                                                   \
      if (acc) y[i] += m;                                                                  \
      else y[i] = m;                                                                       \
    }                                                                                      \
  }                                                                                        \
  static INLINE void max22_plane_##S(const lmx_cpu_geom *g, const T *restrict x,           \
                                     T *restrict y, int acc) {                             \
    int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2];                    \
    int64_t wf = OW < W / 2 ? OW : W / 2; /* full-width windows */                         \
    for (int64_t oh = 0; oh < OH; oh++) {                                                  \
      /* one input row (odd H): r1 = r0 repeats candidates, which never win */             \
      const T *r0 = x + 2 * oh * W, *r1 = 2 * oh + 1 < H ? r0 + W : r0;                    \
      T *yr = y + oh * OW;                                                                 \
      if (acc) ROW_BLOCKS(wf, max22_blk_##S(r0 + 2 * i0_, r1 + 2 * i0_, yr + i0_, nb_, 1)); \
      else ROW_BLOCKS_OVERLAP(wf, max22_blk_##S(r0 + 2 * i0_, r1 + 2 * i0_, yr + i0_, nb_, 0)); \
      if (wf < OW) { /* odd W: a last window of one column */                              \
        T a = r0[2 * wf], c = r1[2 * wf], m = c > a ? c : a;                               \
        yr[wf] = acc ? yr[wf] + m : m;                                                     \
      }                                                                                    \
    }                                                                                      \
  }                                                                                        \
  /* Backward of n full windows of rows r0, r1: the winner gets v, the other three 0 (acc: \
   * add, the others add 0). Written with masks so the block vectorises. */                \
  static INLINE void max22_bwd_blk_##S(const T *restrict r0, const T *restrict r1,         \
                                       const T *restrict gr, T *restrict g0,               \
                                       T *restrict g1, int64_t n, int acc) {               \
    for (int64_t i = 0; i < n; i++) {                                                      \
      T a = r0[2 * i], b = r0[2 * i + 1], c = r1[2 * i], d = r1[2 * i + 1], v = gr[i];     \
      T m1 = b > a ? b : a, m2 = c > m1 ? c : m1;                                          \
      T gb = b > a ? v : 0, ga = b > a ? 0 : v; /* nested selects: no int masks */         \
      T gc = c > m1 ? v : 0;                                                               \
      ga = c > m1 ? 0 : ga, gb = c > m1 ? 0 : gb;                                          \
      T gd = d > m2 ? v : 0;                                                               \
      ga = d > m2 ? 0 : ga, gb = d > m2 ? 0 : gb, gc = d > m2 ? 0 : gc;                    \
      PUT22(g0, g1, i, ga, gb, gc, gd, acc);                                               \
    }                                                                                      \
  }                                                                                        \
  /* Backward: the winner of each window gets gy, the others 0; with acc, added. */        \
  static INLINE void max22_plane_bwd_##S(const lmx_cpu_geom *g,                            \
                                         const T *restrict x, const T *restrict gy,        \
                                                  T *restrict gx, int acc) {               \
    int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2];                    \
    int64_t wf = OW < W / 2 ? OW : W / 2, wc = 2 * OW < W ? 2 * OW : W;                    \
    for (int64_t oh = 0; oh < OH; oh++) {                                                  \
      int two = 2 * oh + 1 < H;                                                            \
      const T *r0 = x + 2 * oh * W, *r1 = two ? r0 + W : r0;                               \
      T *g0 = gx + 2 * oh * W, *g1 = g0 + W;                                               \
      const T *gr = gy + oh * OW;                                                          \
      if (two && acc)                                                                      \
        ROW_BLOCKS(wf, max22_bwd_blk_##S(r0 + 2 * i0_, r1 + 2 * i0_, gr + i0_, g0 + 2 * i0_, \
                                         g1 + 2 * i0_, nb_, 1));                           \
      else if (two)                                                                        \
        ROW_BLOCKS_OVERLAP(wf, max22_bwd_blk_##S(r0 + 2 * i0_, r1 + 2 * i0_, gr + i0_,     \
                                                 g0 + 2 * i0_, g1 + 2 * i0_, nb_, 0));     \
      else /* odd H: a last window of one row */                                           \
        for (int64_t i = 0; i < wf; i++) {                                                 \
          int k = r0[2 * i + 1] > r0[2 * i];                                               \
          if (acc) g0[2 * i + k] += gr[i];                                                 \
          else g0[2 * i] = k ? 0 : gr[i], g0[2 * i + 1] = k ? gr[i] : 0;                   \
        }                                                                                  \
      if (wf < OW) { /* odd W: a last window of one column */                              \
        int k = two && r1[2 * wf] > r0[2 * wf];                                            \
        if (acc) (k ? g1 : g0)[2 * wf] += gr[wf];                                          \
        else {                                                                             \
          g0[2 * wf] = k ? 0 : gr[wf];                                                     \
          if (two) g1[2 * wf] = k ? gr[wf] : 0;                                            \
        }                                                                                  \
      }                                                                                    \
      if (!acc) /* columns no window covers ('valid' with odd W) */                        \
        for (int64_t r = 0; r < (two ? 2 : 1); r++)                                        \
          for (int64_t q = wc; q < W; q++) g0[r * W + q] = 0;                              \
    }                                                                                      \
    if (!acc) /* rows no window covers */                                                  \
      for (int64_t q = (2 * OH < H ? 2 * OH : H) * W; q < H * W; q++) gx[q] = 0;           \
  }

/* ---- general 2-D max ----------------------------------------------------------------- */

/* Geometry of one output row of the general path: input rows [h0, h1) of the window,
 * columns [wl, wh) of outputs whose window lies inside the row. */
typedef struct {
  int64_t H, W, OH, OW, kh, kw, sh, sw, ph, pw, wl, wh;
} g2d;

static g2d g2d_of(const lmx_cpu_geom *g) {
  g2d q = {g->in[1], g->in[2], g->out[1], g->out[2], g->kernel[1], g->kernel[2],
           g->stride[1], g->stride[2], g->pad[1], g->pad[2], 0, 0};
  q.wl = (q.pw + q.sw - 1) / q.sw;
  q.wh = q.W + q.pw - q.kw >= 0 ? (q.W + q.pw - q.kw) / q.sw + 1 : 0;
  if (q.wl > q.OW) q.wl = q.OW;
  if (q.wh > q.OW) q.wh = q.OW;
  if (q.wh < q.wl) q.wh = q.wl;
  return q;
}

/* Rows [*h0, *h1) of output row oh's window (empty when *h0 >= *h1). */
static INLINE void g2d_rows(const g2d *q, int64_t oh, int64_t *h0, int64_t *h1) {
  int64_t s = oh * q->sh - q->ph, e = s + q->kh;
  *h0 = s < 0 ? 0 : s;
  *h1 = e > q->H ? q->H : e;
}

/* yo[0..nb) (+)= m[0..nb) */
#define PUT_ROW(yo, m, nb, acc)                                                            \
  do {                                                                                     \
    if (acc)                                                                               \
      for (int64_t i_ = 0; i_ < (nb); i_++) (yo)[i_] += (m)[i_];                           \
    else                                                                                   \
      for (int64_t i_ = 0; i_ < (nb); i_++) (yo)[i_] = (m)[i_];                            \
  } while (0)

#define DEF_MAX2D(T, S)                                                                    \
  /* One edge output (window clipped on the left or right, or no rows): value and winner  \
   * (-1: none, the value is then -inf). */                                                \
  static INLINE T max2d_edge_##S(const g2d *q, const T *x, int64_t h0, int64_t h1,         \
                                 int64_t ow, int64_t *arg) {                               \
    int64_t s = ow * q->sw - q->pw, e = s + q->kw;                                         \
    if (s < 0) s = 0;                                                                      \
    if (e > q->W) e = q->W;                                                                \
    T m = -INFINITY;                                                                       \
    *arg = -1;                                                                             \
    for (int64_t h = h0; h < h1; h++)                                                      \
      for (int64_t w = s; w < e; w++)                                                      \
        if (x[h * q->W + w] > m || *arg < 0) m = x[h * q->W + w], *arg = h * q->W + w;     \
    return m;                                                                              \
  }                                                                                        \
  /* m[0, n) = max of the inside windows of outputs ow0.. (rows [h0, h1), h0 < h1), with   \
   * k[i] (when k) = the winner's offset (h - h0) * kw + j in its window. The loop over     \
   * outputs is innermost with a run-time length: GCC vectorises that form (deinterleaving  \
   * permutes for stride 2), but not blocks of a constant 8 (it unrolls them first and the \
   * straight-line compares stay scalar). The first element is compared with itself again, \
   * which never replaces it. */                                                           \
  static INLINE void max2d_blk_##S(const g2d *q, const T *x, int64_t h0, int64_t h1,       \
                                   int64_t ow0, int64_t n, int64_t sw, T *restrict m,       \
                                   T *restrict k) {                                        \
    const T *base = x + h0 * q->W + ow0 * sw - q->pw;                                      \
    int64_t kw = q->kw, W = q->W, nh = h1 - h0;                                            \
    for (int64_t i = 0; i < n; i++) m[i] = base[i * sw];                                   \
    if (k)                                                                                 \
      for (int64_t i = 0; i < n; i++) k[i] = 0;                                            \
    for (int64_t h = 0; h < nh; h++)                                                       \
      for (int64_t j = 0; j < kw; j++) {                                                   \
        const T *r = base + h * W + j;                                                     \
        T off = (T)(h * kw + j);                                                           \
        if (k)                                                                             \
          for (int64_t i = 0; i < n; i++) {                                                \
            T v = r[i * sw];                                                               \
            k[i] = v > m[i] ? off : k[i];                                                  \
            m[i] = v > m[i] ? v : m[i];                                                    \
          }                                                                                \
        else                                                                               \
          for (int64_t i = 0; i < n; i++) {                                                \
            T v = r[i * sw];                                                               \
            m[i] = v > m[i] ? v : m[i];                                                    \
          }                                                                                \
      }                                                                                    \
  }                                                                                        \
  /* The same with the stride made a constant where it is 1 or 2. */                      \
  static INLINE void max2d_run_##S(const g2d *q, const T *x, int64_t h0, int64_t h1,       \
                                   int64_t ow0, int64_t n, T *restrict m, T *restrict k) { \
    if (q->sw == 1) max2d_blk_##S(q, x, h0, h1, ow0, n, 1, m, k);                          \
    else if (q->sw == 2) max2d_blk_##S(q, x, h0, h1, ow0, n, 2, m, k);                     \
    else max2d_blk_##S(q, x, h0, h1, ow0, n, q->sw, m, k);                                 \
  }                                                                                        \
  static INLINE void max2d_plane_##S(const lmx_cpu_geom *g, const T *restrict x,           \
                                     T *restrict y, int acc) {                             \
    g2d q = g2d_of(g);                                                                     \
    T m[BLK];                                                                              \
    for (int64_t oh = 0; oh < q.OH; oh++) {                                                \
      int64_t h0, h1, arg;                                                                 \
      T *yr = y + oh * q.OW;                                                               \
      g2d_rows(&q, oh, &h0, &h1);                                                          \
      int64_t lo = h0 < h1 ? q.wl : q.OW, n = h0 < h1 ? q.wh - q.wl : 0;                   \
      for (int64_t ow = 0; ow < q.OW; ow++) {                                              \
        if (ow == lo && n > 0) { /* the inside columns */                                  \
          for (int64_t i0 = 0; i0 < n; i0 += BLK) {                                        \
            int64_t nb = n - i0 < BLK ? n - i0 : BLK;                                      \
            max2d_run_##S(&q, x, h0, h1, lo + i0, nb, m, NULL);                            \
            T *yo = yr + lo + i0;                                                          \
            PUT_ROW(yo, m, nb, acc);                                                       \
          }                                                                                \
          ow += n - 1;                                                                     \
          continue;                                                                        \
        }                                                                                  \
        T v = max2d_edge_##S(&q, x, h0, h1, ow, &arg);                                     \
        yr[ow] = acc ? yr[ow] + v : v;                                                     \
      }                                                                                    \
    }                                                                                      \
  }                                                                                        \
  static INLINE void max2d_plane_bwd_##S(const lmx_cpu_geom *g, const T *restrict x,       \
                                         const T *restrict gy, T *restrict gx, int acc) {  \
    g2d q = g2d_of(g);                                                                     \
    T m[BLK], k[BLK];                                                                      \
    if (!acc) memset(gx, 0, sizeof(T) * (size_t)(q.H * q.W));                              \
    for (int64_t oh = 0; oh < q.OH; oh++) {                                                \
      int64_t h0, h1, arg;                                                                 \
      const T *gr = gy + oh * q.OW;                                                        \
      g2d_rows(&q, oh, &h0, &h1);                                                          \
      int64_t lo = h0 < h1 ? q.wl : q.OW, n = h0 < h1 ? q.wh - q.wl : 0;                   \
      for (int64_t ow = 0; ow < q.OW; ow++) {                                              \
        if (ow == lo && n > 0) {                                                           \
          for (int64_t i0 = 0; i0 < n; i0 += BLK) {                                        \
            int64_t nb = n - i0 < BLK ? n - i0 : BLK;                                      \
            max2d_run_##S(&q, x, h0, h1, lo + i0, nb, m, k);                               \
            T *gb = gx + h0 * q.W + (lo + i0) * q.sw - q.pw;                               \
            for (int64_t i = 0; i < nb; i++) { /* scatter: windows may overlap */          \
              int64_t o = (int64_t)k[i];                                                   \
              gb[(o / q.kw) * q.W + i * q.sw + o % q.kw] += gr[lo + i0 + i];               \
            }                                                                              \
          }                                                                                \
          ow += n - 1;                                                                     \
          continue;                                                                        \
        }                                                                                  \
        max2d_edge_##S(&q, x, h0, h1, ow, &arg);                                           \
        if (arg >= 0) gx[arg] += gr[ow];                                                   \
      }                                                                                    \
    }                                                                                      \
  }

/* ---- 2x2 stride 2 avg / sum ------------------------------------------------------------ */

/* The same row blocks as the max path. A window's sum is taken in scan order, as the
 * generic kernel takes it ((a + b) + c) + d, so values agree (the generic kernel's first
 * 0 + a only turns a -0 into +0). avg multiplies by 1/4 (1/2 for a window of one row or
 * column; no pad here, so count_include_pad changes nothing): scaling by a power of two is
 * exact, so it equals the generic division. The backward writes g/4 (or g) to the four
 * elements of each window (they do not overlap) and zeroes what no window covers. */
#define DEF_SUM22(T, S)                                                                    \
  static INLINE void sum22_blk_##S(const T *restrict r0, const T *restrict r1,             \
                                   T *restrict y, int64_t n, T k, int acc) {               \
    for (int64_t i = 0; i < n; i++) {                                                      \
      T v = (((r0[2 * i] + r0[2 * i + 1]) + r1[2 * i]) + r1[2 * i + 1]) * k;               \
      if (acc) y[i] += v;                                                                  \
      else y[i] = v;                                                                       \
    }                                                                                      \
  }                                                                                        \
  static INLINE void sum22_plane_##S(const lmx_cpu_geom *g, int avg, const T *restrict x,  \
                                     T *restrict y, int acc) {                             \
    int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2];                    \
    int64_t wf = OW < W / 2 ? OW : W / 2; /* full-width windows */                         \
    T k4 = avg ? (T)0.25 : 1, k2 = avg ? (T)0.5 : 1;                                       \
    for (int64_t oh = 0; oh < OH; oh++) {                                                  \
      int two = 2 * oh + 1 < H;                                                            \
      const T *r0 = x + 2 * oh * W, *r1 = two ? r0 + W : r0;                               \
      T *yr = y + oh * OW;                                                                 \
      if (two && acc)                                                                      \
        ROW_BLOCKS(wf, sum22_blk_##S(r0 + 2 * i0_, r1 + 2 * i0_, yr + i0_, nb_, k4, 1));   \
      else if (two)                                                                        \
        ROW_BLOCKS_OVERLAP(wf, sum22_blk_##S(r0 + 2 * i0_, r1 + 2 * i0_, yr + i0_, nb_, k4, 0)); \
      else /* odd H: a last window of one row */                                           \
        for (int64_t i = 0; i < wf; i++) {                                                 \
          T v = (r0[2 * i] + r0[2 * i + 1]) * k2;                                          \
          yr[i] = acc ? yr[i] + v : v;                                                     \
        }                                                                                  \
      if (wf < OW) { /* odd W: a last window of one column */                              \
        T v = two ? (r0[2 * wf] + r1[2 * wf]) * k2 : r0[2 * wf];                           \
        yr[wf] = acc ? yr[wf] + v : v;                                                     \
      }                                                                                    \
    }                                                                                      \
  }                                                                                        \
  static INLINE void sum22_bwd_blk_##S(const T *restrict gr, T *restrict g0,               \
                                       T *restrict g1, int64_t n, T k, int acc) {          \
    for (int64_t i = 0; i < n; i++) {                                                      \
      T v = gr[i] * k;                                                                     \
      PUT22(g0, g1, i, v, v, v, v, acc);                                                   \
    }                                                                                      \
  }                                                                                        \
  static INLINE void sum22_plane_bwd_##S(const lmx_cpu_geom *g, int avg,                   \
                                         const T *restrict gy, T *restrict gx, int acc) {  \
    int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2];                    \
    int64_t wf = OW < W / 2 ? OW : W / 2, wc = 2 * OW < W ? 2 * OW : W;                    \
    T k4 = avg ? (T)0.25 : 1, k2 = avg ? (T)0.5 : 1;                                       \
    for (int64_t oh = 0; oh < OH; oh++) {                                                  \
      int two = 2 * oh + 1 < H;                                                            \
      T *g0 = gx + 2 * oh * W, *g1 = g0 + W;                                               \
      const T *gr = gy + oh * OW;                                                          \
      if (two && acc)                                                                      \
        ROW_BLOCKS(wf, sum22_bwd_blk_##S(gr + i0_, g0 + 2 * i0_, g1 + 2 * i0_, nb_, k4, 1)); \
      else if (two)                                                                        \
        ROW_BLOCKS_OVERLAP(wf, sum22_bwd_blk_##S(gr + i0_, g0 + 2 * i0_, g1 + 2 * i0_, nb_, \
                                                 k4, 0));                                  \
      else /* odd H: a last window of one row */                                           \
        for (int64_t i = 0; i < wf; i++) {                                                 \
          T v = gr[i] * k2;                                                                \
          g0[2 * i] = acc ? g0[2 * i] + v : v;                                             \
          g0[2 * i + 1] = acc ? g0[2 * i + 1] + v : v;                                     \
        }                                                                                  \
      if (wf < OW) { /* odd W: a last window of one column */                              \
        T v = two ? gr[wf] * k2 : gr[wf];                                                  \
        g0[2 * wf] = acc ? g0[2 * wf] + v : v;                                             \
        if (two) g1[2 * wf] = acc ? g1[2 * wf] + v : v;                                    \
      }                                                                                    \
      if (!acc) /* columns no window covers ('valid' with odd W) */                        \
        for (int64_t r = 0; r < (two ? 2 : 1); r++)                                        \
          for (int64_t q = wc; q < W; q++) g0[r * W + q] = 0;                              \
    }                                                                                      \
    if (!acc) /* rows no window covers */                                                  \
      for (int64_t q = (2 * OH < H ? 2 * OH : H) * W; q < H * W; q++) gx[q] = 0;           \
  }

/* ---- general 2-D avg / sum --------------------------------------------------------------- */

/* One dim of a window, as pool_window has it: *full = its size clipped to the padded
 * input, [*lo, *hi) the part inside [0, n) (empty when *lo >= *hi). */
static INLINE void win1(int64_t s, int64_t k, int64_t n, int64_t p, int64_t *full,
                        int64_t *lo, int64_t *hi) {
  int64_t e = s + k;
  if (e > n + p) e = n + p;
  if (e < s) e = s;
  *full = e - s;
  *lo = s < 0 ? 0 : s;
  *hi = e > n ? n : e;
}

/* Laid out like the general max path: per output row the window rows are clipped once
 * and their padded / in-range counts give the divisor of every inside column (times kw);
 * edge columns compute their own. Sums run in the generic kernel's scan order (rows, then
 * columns, from 0), so values agree with it. The backward spreads g/divisor over each
 * window; an element covered by several windows of an output row gets their shares in
 * ascending output order, as in the generic kernel, because the inside loop runs the
 * window's columns j from last to first (for a fixed element, j descending means the
 * output index ascending), after the left edge columns and before the right ones. */
#define DEF_SUM2D(T, S)                                                                    \
  /* One edge output: the sum (avg: the mean) of its clipped window, rows [h0, h1) with   \
   * rf padded rows, rn = rows in range. */                                                \
  static INLINE T sum2d_edge_##S(const g2d *q, const T *x, int64_t h0, int64_t h1,         \
                                 int64_t rf, int64_t rn, int64_t ow, int avg, int incl) {  \
    int64_t cf, w0, w1;                                                                    \
    win1(ow * q->sw - q->pw, q->kw, q->W, q->pw, &cf, &w0, &w1);                           \
    T a = 0;                                                                               \
    for (int64_t h = h0; h < h1; h++)                                                      \
      for (int64_t w = w0; w < w1; w++) a += x[h * q->W + w];                              \
    if (!avg) return a;                                                                    \
    int64_t size = incl ? rf * cf : rn * (w1 > w0 ? w1 - w0 : 0);                          \
    return size > 0 ? a / (T)size : 0;                                                     \
  }                                                                                        \
  /* The share each element of edge output ow's window gets from g. */                     \
  static INLINE void sum2d_edge_bwd_##S(const g2d *q, T *gx, int64_t h0, int64_t h1,       \
                                        int64_t rf, int64_t rn, int64_t ow, T gv, int avg, \
                                        int incl) {                                        \
    int64_t cf, w0, w1;                                                                    \
    win1(ow * q->sw - q->pw, q->kw, q->W, q->pw, &cf, &w0, &w1);                           \
    if (avg) {                                                                             \
      int64_t size = incl ? rf * cf : rn * (w1 > w0 ? w1 - w0 : 0);                        \
      gv = size > 0 ? gv / (T)size : 0;                                                    \
    }                                                                                      \
    for (int64_t h = h0; h < h1; h++)                                                      \
      for (int64_t w = w0; w < w1; w++) gx[h * q->W + w] += gv;                            \
  }                                                                                        \
  /* m[0, n) = sums of the inside windows of outputs ow0.. (rows [h0, h1)), the loop over  \
   * outputs innermost (vectorised, strided loads for sw > 1). */                          \
  static INLINE void sum2d_blk_##S(const g2d *q, const T *x, int64_t h0, int64_t h1,       \
                                   int64_t ow0, int64_t n, int64_t sw, T *restrict m) {    \
    const T *base = x + h0 * q->W + ow0 * sw - q->pw;                                      \
    int64_t kw = q->kw, W = q->W, nh = h1 - h0;                                            \
    for (int64_t i = 0; i < n; i++) m[i] = 0;                                              \
    for (int64_t h = 0; h < nh; h++)                                                       \
      for (int64_t j = 0; j < kw; j++) {                                                   \
        const T *r = base + h * W + j;                                                     \
        for (int64_t i = 0; i < n; i++) m[i] += r[i * sw];                                 \
      }                                                                                    \
  }                                                                                        \
  /* gx += s[i] over the inside windows of outputs ow0.. (rows [h0, h1)), columns of the   \
   * window last to first (see above). */                                                  \
  static INLINE void sum2d_spread_##S(const g2d *q, T *gx, int64_t h0, int64_t h1,         \
                                      int64_t ow0, int64_t n, int64_t sw,                  \
                                      const T *restrict s) {                               \
    T *restrict base = gx + h0 * q->W + ow0 * sw - q->pw;                                  \
    int64_t kw = q->kw, W = q->W, nh = h1 - h0;                                            \
    for (int64_t h = 0; h < nh; h++)                                                       \
      for (int64_t j = kw - 1; j >= 0; j--) {                                              \
        T *restrict r = base + h * W + j;                                                  \
        for (int64_t i = 0; i < n; i++) r[i * sw] += s[i];                                 \
      }                                                                                    \
  }                                                                                        \
  /* The two with the stride made a constant where it is 1 or 2. */                       \
  static INLINE void sum2d_run_##S(const g2d *q, const T *x, int64_t h0, int64_t h1,       \
                                   int64_t ow0, int64_t n, T *restrict m) {                \
    if (q->sw == 1) sum2d_blk_##S(q, x, h0, h1, ow0, n, 1, m);                             \
    else if (q->sw == 2) sum2d_blk_##S(q, x, h0, h1, ow0, n, 2, m);                        \
    else sum2d_blk_##S(q, x, h0, h1, ow0, n, q->sw, m);                                    \
  }                                                                                        \
  static INLINE void sum2d_spread_run_##S(const g2d *q, T *gx, int64_t h0, int64_t h1,     \
                                          int64_t ow0, int64_t n, const T *restrict s) {   \
    if (q->sw == 1) sum2d_spread_##S(q, gx, h0, h1, ow0, n, 1, s);                         \
    else if (q->sw == 2) sum2d_spread_##S(q, gx, h0, h1, ow0, n, 2, s);                    \
    else sum2d_spread_##S(q, gx, h0, h1, ow0, n, q->sw, s);                                \
  }                                                                                        \
  static INLINE void sum2d_plane_##S(const lmx_cpu_geom *g, int avg, int incl,             \
                                     const T *restrict x, T *restrict y, int acc) {        \
    g2d q = g2d_of(g);                                                                     \
    T m[BLK];                                                                              \
    for (int64_t oh = 0; oh < q.OH; oh++) {                                                \
      int64_t rf, h0, h1;                                                                  \
      win1(oh * q.sh - q.ph, q.kh, q.H, q.ph, &rf, &h0, &h1);                              \
      int64_t rn = h1 > h0 ? h1 - h0 : 0;                                                  \
      T *yr = y + oh * q.OW;                                                               \
      int64_t lo = rn > 0 ? q.wl : q.OW, n = rn > 0 ? q.wh - q.wl : 0;                     \
      for (int64_t ow = 0; ow < q.OW; ow++) {                                              \
        if (ow == lo && n > 0) { /* the inside columns: one divisor */                     \
          T dv = (T)((incl ? rf : rn) * q.kw);                                             \
          for (int64_t i0 = 0; i0 < n; i0 += BLK) {                                        \
            int64_t nb = n - i0 < BLK ? n - i0 : BLK;                                      \
            sum2d_run_##S(&q, x, h0, h1, lo + i0, nb, m);                                  \
            if (avg)                                                                       \
              for (int64_t i = 0; i < nb; i++) m[i] = m[i] / dv;                           \
            T *yo = yr + lo + i0;                                                          \
            PUT_ROW(yo, m, nb, acc);                                                       \
          }                                                                                \
          ow += n - 1;                                                                     \
          continue;                                                                        \
        }                                                                                  \
        T v = sum2d_edge_##S(&q, x, h0, h1, rf, rn, ow, avg, incl);                        \
        yr[ow] = acc ? yr[ow] + v : v;                                                     \
      }                                                                                    \
    }                                                                                      \
  }                                                                                        \
  static INLINE void sum2d_plane_bwd_##S(const lmx_cpu_geom *g, int avg, int incl,         \
                                         const T *restrict gy, T *restrict gx, int acc) {  \
    g2d q = g2d_of(g);                                                                     \
    T s[BLK];                                                                              \
    if (!acc) memset(gx, 0, sizeof(T) * (size_t)(q.H * q.W));                              \
    for (int64_t oh = 0; oh < q.OH; oh++) {                                                \
      int64_t rf, h0, h1;                                                                  \
      win1(oh * q.sh - q.ph, q.kh, q.H, q.ph, &rf, &h0, &h1);                              \
      if (h1 <= h0) continue; /* no row in range: no gradient */                           \
      int64_t rn = h1 - h0, lo = q.wl, n = q.wh - q.wl;                                    \
      const T *gr = gy + oh * q.OW;                                                        \
      for (int64_t ow = 0; ow < q.OW; ow++) {                                              \
        if (ow == lo && n > 0) {                                                           \
          T dv = (T)((incl ? rf : rn) * q.kw);                                             \
          for (int64_t i0 = 0; i0 < n; i0 += BLK) {                                        \
            int64_t nb = n - i0 < BLK ? n - i0 : BLK;                                      \
            const T *go = gr + lo + i0;                                                    \
            if (avg)                                                                       \
              for (int64_t i = 0; i < nb; i++) s[i] = go[i] / dv;                          \
            else                                                                           \
              for (int64_t i = 0; i < nb; i++) s[i] = go[i];                               \
            sum2d_spread_run_##S(&q, gx, h0, h1, lo + i0, nb, s);                          \
          }                                                                                \
          ow += n - 1;                                                                     \
          continue;                                                                        \
        }                                                                                  \
        sum2d_edge_bwd_##S(&q, gx, h0, h1, rf, rn, ow, gr[ow], avg, incl);                 \
      }                                                                                    \
    }                                                                                      \
  }

/* ---- drivers ------------------------------------------------------------------------ */

/* Planes per task: one (ifunc-resolved) call of a cloned loop covers PCH planes, and the
 * per-plane code inlined into it is compiled for the clone's vector width. */
enum { PCH = 16 };

#define DEF_DRIVERS(T, S)                                                                  \
  LMX_SIMD_CLONES static void max_planes_##S(int path, const lmx_cpu_geom *g, int64_t np,  \
                                             const T *x, T *y, int acc) {                  \
    int64_t I = g->in[0] * g->in[1] * g->in[2], O = g->out[0] * g->out[1] * g->out[2];     \
    for (int64_t p = 0; p < np; p++)                                                       \
      if (path == PATH_MAX22) max22_plane_##S(g, x + p * I, y + p * O, acc);               \
      else max2d_plane_##S(g, x + p * I, y + p * O, acc);                                  \
  }                                                                                        \
  LMX_SIMD_CLONES static void max_planes_bwd_##S(int path, const lmx_cpu_geom *g,          \
                                                 int64_t np, const T *x, const T *gy,      \
                                                 T *gx, int acc) {                         \
    int64_t I = g->in[0] * g->in[1] * g->in[2], O = g->out[0] * g->out[1] * g->out[2];     \
    for (int64_t p = 0; p < np; p++)                                                       \
      if (path == PATH_MAX22) max22_plane_bwd_##S(g, x + p * I, gy + p * O, gx + p * I, acc); \
      else max2d_plane_bwd_##S(g, x + p * I, gy + p * O, gx + p * I, acc);                 \
  }                                                                                        \
  LMX_SIMD_CLONES static void sum_planes_##S(int path, const lmx_cpu_geom *g, int avg,     \
                                             int incl, int64_t np, const T *x, T *y,       \
                                             int acc) {                                    \
    int64_t I = g->in[0] * g->in[1] * g->in[2], O = g->out[0] * g->out[1] * g->out[2];     \
    for (int64_t p = 0; p < np; p++)                                                       \
      if (path == PATH_SUM22) sum22_plane_##S(g, avg, x + p * I, y + p * O, acc);          \
      else sum2d_plane_##S(g, avg, incl, x + p * I, y + p * O, acc);                       \
  }                                                                                        \
  LMX_SIMD_CLONES static void sum_planes_bwd_##S(int path, const lmx_cpu_geom *g, int avg, \
                                                 int incl, int64_t np, const T *gy,        \
                                                 T *gx, int acc) {                         \
    int64_t I = g->in[0] * g->in[1] * g->in[2], O = g->out[0] * g->out[1] * g->out[2];     \
    for (int64_t p = 0; p < np; p++)                                                       \
      if (path == PATH_SUM22) sum22_plane_bwd_##S(g, avg, gy + p * O, gx + p * I, acc);    \
      else sum2d_plane_bwd_##S(g, avg, incl, gy + p * O, gx + p * I, acc);                 \
  }                                                                                        \
  static void pool_##S(int type, int pv, const lmx_cpu_geom *g, int include_pad,           \
                       int64_t planes, const T *x, T *y, int acc) {                        \
    int64_t I = g->in[0] * g->in[1] * g->in[2], O = g->out[0] * g->out[1] * g->out[2];     \
    int path = pool_path(type, g);                                                         \
    LMX_PAR_FOR_W((planes + PCH - 1) / PCH, PCH * O * g->kernel[0] * g->kernel[1] * g->kernel[2], \
                  c, {                                                                     \
      int64_t p0 = c * PCH, np = planes - p0 < PCH ? planes - p0 : PCH;                    \
      if (path == PATH_MAX22 || path == PATH_MAX2D)                                        \
        max_planes_##S(path, g, np, x + p0 * I, y + p0 * O, acc);                          \
      else if (path != PATH_GENERIC)                                                       \
        sum_planes_##S(path, g, type == LMX_POOL_AVG, include_pad, np, x + p0 * I,         \
                       y + p0 * O, acc);                                                   \
      else                                                                                 \
        for (int64_t p = p0; p < p0 + np; p++)                                             \
          pool_plane_##S(type, pv, g, include_pad, x + p * I, y + p * O, acc);             \
    });                                                                                    \
  }                                                                                        \
  static void pool_bwd_##S(int type, int pv, const lmx_cpu_geom *g, int include_pad,       \
                           int64_t planes, T *gx, const T *gy, const T *x, const T *y,     \
                           int acc) {                                                      \
    int64_t I = g->in[0] * g->in[1] * g->in[2], O = g->out[0] * g->out[1] * g->out[2];     \
    int path = pool_path(type, g);                                                         \
    LMX_PAR_FOR_W((planes + PCH - 1) / PCH, PCH * O * g->kernel[0] * g->kernel[1] * g->kernel[2], \
                  c, {                                                                     \
      int64_t p0 = c * PCH, np = planes - p0 < PCH ? planes - p0 : PCH;                    \
      if (path == PATH_MAX22 || path == PATH_MAX2D)                                        \
        max_planes_bwd_##S(path, g, np, x + p0 * I, gy + p0 * O, gx + p0 * I, acc);        \
      else if (path != PATH_GENERIC)                                                       \
        sum_planes_bwd_##S(path, g, type == LMX_POOL_AVG, include_pad, np, gy + p0 * O,    \
                           gx + p0 * I, acc);                                              \
      else                                                                                 \
        for (int64_t p = p0; p < p0 + np; p++)                                             \
          pool_plane_bwd_##S(type, pv, g, include_pad, gx + p * I, gy + p * O, x + p * I,   \
                             y ? y + p * O : NULL, acc);                                   \
    });                                                                                    \
  }

DEF_POOL(float, f32)
DEF_POOL(double, f64)
DEF_MAX22(float, f32)
DEF_MAX22(double, f64)
DEF_MAX2D(float, f32)
DEF_MAX2D(double, f64)
DEF_SUM22(float, f32)
DEF_SUM22(double, f64)
DEF_SUM2D(float, f32)
DEF_SUM2D(double, f64)
DEF_DRIVERS(float, f32)
DEF_DRIVERS(double, f64)

int lmx_cpu_pool(int type, int p_value, int dt, const lmx_cpu_geom *g, int include_pad,
                 int64_t planes, const void *x, void *y, int acc) {
  if (dt == LMX_FLOAT32) pool_f32(type, p_value, g, include_pad, planes, x, y, acc);
  else if (dt == LMX_FLOAT64) pool_f64(type, p_value, g, include_pad, planes, x, y, acc);
  else return -1;
  return 0;
}

int lmx_cpu_pool_bwd(int type, int p_value, int dt, const lmx_cpu_geom *g, int include_pad,
                     int64_t planes, void *gx, const void *gy, const void *x, const void *y,
                     int acc) {
  if (dt == LMX_FLOAT32) pool_bwd_f32(type, p_value, g, include_pad, planes, gx, gy, x, y, acc);
  else if (dt == LMX_FLOAT64)
    pool_bwd_f64(type, p_value, g, include_pad, planes, gx, gy, x, y, acc);
  else return -1;
  return 0;
}
