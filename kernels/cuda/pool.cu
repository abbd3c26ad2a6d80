/* pool.cu — pooling (max / avg / sum / lp; 1-D to 3-D, padded, count_include_pad) on
 * channel-first data, forward and backward (kernels/cpu/pool.c).
 *
 * Windows, divisors and the maximum rule are the CPU generic kernel's (MXNet 1.9 pool.h):
 * along each dim the window of output o starts at o*stride - pad, ends at
 * min(start + kernel, in + pad), and reads the part inside [0, in); avg divides by the
 * padded size or, without count_include_pad, the in-range size; an empty window gives 0
 * (-inf for max) and no gradient. Max keeps the FIRST maximum in scan order (the first
 * in-range element, replaced only by a strictly greater one), so ties and NaN pick the
 * same element as on the CPU.
 * Forward: one thread per output, the window scanned in (d, h, w) order with the CPU's
 * compute type (float for float32 and float16, double for float64).
 * Backward: one thread per input element. It visits the outputs whose windows contain it,
 * in increasing output order (the order in which the CPU adds into that element), and adds
 * each one's share; for max it rescans that window and takes the gradient only if it is
 * the window's first maximum. No atomics, and float32 results equal the CPU's.
 */
#include <math.h>

#include "cu_conv.h"
#include "cu_util.cuh"

typedef struct {
  int64_t s[3], e[3], size;
} cwin;

__host__ __device__ static inline void window(const lmx_cpu_geom &g, const int64_t *o,
                                              int include_pad, cwin *w) {
  int64_t full = 1, in_range = 1;
  for (int i = 0; i < 3; i++) {
    int64_t s = o[i] * g.stride[i] - g.pad[i];
    int64_t e = s + g.kernel[i];
    if (e > g.in[i] + g.pad[i]) e = g.in[i] + g.pad[i];
    if (e < s) e = s;
    full *= e - s;
    w->s[i] = s < 0 ? 0 : s;
    w->e[i] = e > g.in[i] ? g.in[i] : e;
    in_range *= w->e[i] > w->s[i] ? w->e[i] - w->s[i] : 0;
  }
  w->size = include_pad ? full : in_range;
}

/* pooled value of one window; *arg gets the first maximum's index (max; -1 if empty) */
template <typename T, typename A>
__device__ static inline A pool_one(int type, int pv, const lmx_cpu_geom &g, const T *x,
                                    const cwin &w, int64_t *arg) {
  A acc = type == LMX_POOL_MAX ? (A)-INFINITY : (A)0;
  *arg = -1;
  for (int64_t d = w.s[0]; d < w.e[0]; d++)
    for (int64_t h = w.s[1]; h < w.e[1]; h++)
      for (int64_t q = w.s[2]; q < w.e[2]; q++) {
        int64_t i = (d * g.in[1] + h) * g.in[2] + q;
        A v = lmx_cu_ld(x, i);
        if (type == LMX_POOL_MAX) {
          if (v > acc || *arg < 0) acc = v, *arg = i;
        } else if (type == LMX_POOL_LP) {
          acc += pv == 1 ? (A)fabs((double)v) : v * v;
        } else {
          acc += v;
        }
      }
  if (type == LMX_POOL_AVG) acc = w.size > 0 ? acc / (A)w.size : (A)0;
  if (type == LMX_POOL_LP && pv == 2) acc = (A)sqrt((double)acc);
  return acc;
}

template <typename T>
__global__ void k_pool(int type, int pv, lmx_cpu_geom g, int include_pad, int64_t planes,
                       const T *x, T *y, int acc) {
  typedef typename lmx_cu_acc<T>::type A;
  int64_t O = g.out[0] * g.out[1] * g.out[2], I = g.in[0] * g.in[1] * g.in[2];
  LMX_CU_GRID_LOOP(e, planes * O) {
    int64_t p = e / O, j = e % O, arg;
    int64_t o[3] = {j / (g.out[1] * g.out[2]), (j / g.out[2]) % g.out[1], j % g.out[2]};
    cwin w;
    window(g, o, include_pad, &w);
    A v = pool_one<T, A>(type, pv, g, x + p * I, w, &arg);
    if (acc) v += (A)lmx_cu_ld(y, e);
    lmx_cu_st(y, e, v);
  }
}

/* outputs o along one dim whose window [o*stride - pad, o*stride - pad + kernel) holds i */
__device__ static inline void covering(int64_t i, int64_t kernel, int64_t stride, int64_t pad,
                                       int64_t nout, int64_t *lo, int64_t *hi) {
  int64_t t = i + pad - kernel; /* o*stride > t */
  int64_t l = t < 0 ? 0 : t / stride + 1, h = (i + pad) / stride;
  *lo = l;
  *hi = h < nout - 1 ? h : nout - 1;
}

template <typename T>
__global__ void k_pool_bwd(int type, int pv, lmx_cpu_geom g, int include_pad, int64_t planes,
                           T *gx, const T *gy, const T *x, const T *y, int acc) {
  typedef typename lmx_cu_acc<T>::type A;
  int64_t O = g.out[0] * g.out[1] * g.out[2], I = g.in[0] * g.in[1] * g.in[2];
  LMX_CU_GRID_LOOP(e, planes * I) {
    int64_t p = e / I, i = e % I;
    int64_t iq = i % g.in[2], ih = (i / g.in[2]) % g.in[1], id = i / (g.in[2] * g.in[1]);
    const T *xp = x + p * I;
    int64_t lo[3], hi[3];
    covering(id, g.kernel[0], g.stride[0], g.pad[0], g.out[0], &lo[0], &hi[0]);
    covering(ih, g.kernel[1], g.stride[1], g.pad[1], g.out[1], &lo[1], &hi[1]);
    covering(iq, g.kernel[2], g.stride[2], g.pad[2], g.out[2], &lo[2], &hi[2]);
    A v = acc ? (A)lmx_cu_ld(gx, e) : (A)0;
    int64_t o[3];
    for (o[0] = lo[0]; o[0] <= hi[0]; o[0]++)
      for (o[1] = lo[1]; o[1] <= hi[1]; o[1]++)
        for (o[2] = lo[2]; o[2] <= hi[2]; o[2]++) {
          cwin w;
          window(g, o, include_pad, &w);
          if (id < w.s[0] || id >= w.e[0] || ih < w.s[1] || ih >= w.e[1] || iq < w.s[2] ||
              iq >= w.e[2])
            continue; /* clipped away ('full' windows past the padded end) */
          int64_t j = p * O + (o[0] * g.out[1] + o[1]) * g.out[2] + o[2];
          A gv = lmx_cu_ld(gy, j);
          if (type == LMX_POOL_MAX) {
            int64_t arg;
            pool_one<T, A>(type, pv, g, xp, w, &arg);
            if (arg == i) v += gv;
          } else if (type == LMX_POOL_LP) {
            A xv = lmx_cu_ld(xp, i);
            if (pv == 1) {
              v += xv > 0 ? gv : xv < 0 ? -gv : (A)0;
            } else {
              A yv = lmx_cu_ld(y, j);
              v += yv != 0 ? gv * xv / yv : (A)0;
            }
          } else {
            v += type == LMX_POOL_AVG ? (w.size > 0 ? gv / (A)w.size : (A)0) : gv;
          }
        }
    lmx_cu_st(gx, e, v);
  }
}

static int type_ok(int type) { return type >= LMX_POOL_MAX && type <= LMX_POOL_LP; }

int lmx_cu_pool(lmx_cu_stream s, int type, int p_value, int dt, const lmx_cpu_geom *g,
                int include_pad, int64_t planes, const void *x, void *y, int acc) {
  if (!type_ok(type)) return -1;
  lmx_cpu_geom G = *g;
  lmx_cpu_geom_norm(&G);
  int64_t n = planes * G.out[0] * G.out[1] * G.out[2];
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
    if (n == 0) return 0;
    LMX_LAUNCH(k_pool<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, type, p_value, G,
               include_pad, planes, (const T *)x, (T *)y, acc))
  return lmx_cu_last_error();
}

int lmx_cu_pool_bwd(lmx_cu_stream s, int type, int p_value, int dt, const lmx_cpu_geom *g,
                    int include_pad, int64_t planes, void *gx, const void *gy, const void *x,
                    const void *y, int acc) {
  if (!type_ok(type)) return -1;
  lmx_cpu_geom G = *g;
  lmx_cpu_geom_norm(&G);
  int64_t n = planes * G.in[0] * G.in[1] * G.in[2];
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
    if (n == 0) return 0;
    LMX_LAUNCH(k_pool_bwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, type, p_value, G,
               include_pad, planes, (T *)gx, (const T *)gy, (const T *)x, (const T *)y, acc))
  return lmx_cu_last_error();
}
