/* chan_ep.c — a per-channel epilogue over channel-first data: y = f(x · scale[c] +
 * shift[c]), f an activation (relu, sigmoid, tanh, softrelu), clip to [lo, hi], or none.
 *
 * It is what a convolution followed by BatchNorm at inference (scale = gamma / sqrt(var +
 * eps), shift = beta - mean · scale, plus the convolution's bias · scale) and an
 * activation becomes when the three run as one step (src/exec/fuse.c, the glue in
 * src/ops/cpu/conv_chain.c): the convolution kernels call it on each output plane while
 * the plane is in cache (depthwise, im2col chunks) or once over the output (batch 1,
 * Winograd), instead of a BatchNorm pass and an activation pass over the whole tensor.
 * relu and clip are folded into the affine loop; the other activations run the
 * elementwise kernels over the plane after it. float32 / float64.
 */
#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"

#define DEF_EP(T, S)                                                                       \
  LMX_SIMD_CLONES static void ep_row_##S(const lmx_cpu_ep *ep, T s, T t, int64_t n, T *y,  \
                                         const T *x) {                                     \
    if (ep->act == LMX_UN_RELU) {                                                          \
      for (int64_t i = 0; i < n; i++) {                                                    \
        T v = x[i] * s + t;                                                                \
        y[i] = v > 0 ? v : (T)0;                                                           \
      }                                                                                    \
    } else if (ep->act == LMX_CPU_EP_CLIP) {                                               \
      T lo = (T)ep->lo, hi = (T)ep->hi;                                                    \
      for (int64_t i = 0; i < n; i++) {                                                    \
        T v = x[i] * s + t;                                                                \
        v = v > lo ? v : lo;                                                               \
        y[i] = v < hi ? v : hi;                                                            \
      }                                                                                    \
    } else {                                                                               \
      for (int64_t i = 0; i < n; i++) y[i] = x[i] * s + t;                                 \
    }                                                                                      \
  }
DEF_EP(float, f32)
DEF_EP(double, f64)

void lmx_cpu_ep_row(int dt, const lmx_cpu_ep *ep, int64_t c, int64_t n, void *y,
                    const void *x) {
  double s = ep->scale ? ep->scale[c] : 1.0, t = ep->shift ? ep->shift[c] : 0.0;
  if (dt == LMX_FLOAT32) ep_row_f32(ep, (float)s, (float)t, n, y, x);
  else ep_row_f64(ep, s, t, n, y, x);
  if (ep->act >= 0 && ep->act != LMX_UN_RELU) lmx_cpu_unary(ep->act, dt, n, y, y, 0);
}

void lmx_cpu_ep_planes(int dt, const lmx_cpu_ep *ep, int64_t N, int64_t C, int64_t n,
                       void *y) {
  size_t es = dt == LMX_FLOAT32 ? sizeof(float) : sizeof(double);
  LMX_PAR_FOR_W(N * C, n, r, {
    char *p = (char *)y + (size_t)(r * n) * es;
    lmx_cpu_ep_row(dt, ep, r % C, n, p, p);
  });
}
