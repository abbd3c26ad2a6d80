/* conv.cu — im2col / col2im on channel-first data, 1-D to 3-D with stride, padding and
 * dilation (kernels/cpu/conv.c); the GEMMs and the group / chunk loop are the glue's.
 *
 * Geometry travels by value (normalized to 3-D, so one index decomposition serves all).
 * im2col: one thread per element of col[C*K, nimg*O], reading its input or 0 for padding
 * (reads along an output row are consecutive for stride 1, writes always are).
 * col2im: the transpose as a gather, one thread per image element: along each dim the
 * kernel offsets whose output index (i + pad - k*dil) / stride is whole and in range
 * contribute, visited in (kd, kh, kw) order and summed in the compute type (float for
 * float16) before one add into x — deterministic, no atomics.
 */
#include "cu_conv.h"
#include "cu_util.cuh"

static lmx_cpu_geom norm_copy(const lmx_cpu_geom *g) {
  lmx_cpu_geom G = *g;
  lmx_cpu_geom_norm(&G);
  return G;
}

template <typename T>
__global__ void k_im2col(lmx_cpu_geom G, int64_t C, int64_t nimg, const T *x, T *col,
                         int64_t ld) {
  int64_t K = G.kernel[0] * G.kernel[1] * G.kernel[2];
  int64_t O = G.out[0] * G.out[1] * G.out[2], I = G.in[0] * G.in[1] * G.in[2];
  int64_t cols = nimg * O;
  LMX_CU_GRID_LOOP(e, C * K * cols) {
    int64_t row = e / cols, cc = e % cols, n = cc / O, o = cc % O;
    int64_t c = row / K, kk = row % K;
    int64_t kw = kk % G.kernel[2], kh = (kk / G.kernel[2]) % G.kernel[1];
    int64_t kd = kk / (G.kernel[2] * G.kernel[1]);
    int64_t ow = o % G.out[2], oh = (o / G.out[2]) % G.out[1], od = o / (G.out[2] * G.out[1]);
    int64_t id = od * G.stride[0] - G.pad[0] + kd * G.dilate[0];
    int64_t ih = oh * G.stride[1] - G.pad[1] + kh * G.dilate[1];
    int64_t iw = ow * G.stride[2] - G.pad[2] + kw * G.dilate[2];
    typename lmx_cu_acc<T>::type v = 0;
    if (id >= 0 && id < G.in[0] && ih >= 0 && ih < G.in[1] && iw >= 0 && iw < G.in[2])
      v = lmx_cu_ld(x, (n * C + c) * I + (id * G.in[1] + ih) * G.in[2] + iw);
    lmx_cu_st(col, row * ld + cc, v);
  }
}

/* kernel offsets k along one dim with i = o*stride - pad + k*dil for an o in [0, out) */
__host__ __device__ static inline int out_of(int64_t i, int64_t k, int64_t stride,
                                             int64_t pad, int64_t dil, int64_t nout,
                                             int64_t *o) {
  int64_t t = i + pad - k * dil;
  if (t < 0 || t % stride) return 0;
  *o = t / stride;
  return *o < nout;
}

template <typename T>
__global__ void k_col2im(lmx_cpu_geom G, int64_t C, int64_t nimg, const T *col, T *x,
                         int64_t ld) {
  int64_t K = G.kernel[0] * G.kernel[1] * G.kernel[2];
  int64_t O = G.out[0] * G.out[1] * G.out[2], I = G.in[0] * G.in[1] * G.in[2];
  LMX_CU_GRID_LOOP(e, nimg * C * I) {
    int64_t nc = e / I, i = e % I, n = nc / C, c = nc % C;
    int64_t iw = i % G.in[2], ih = (i / G.in[2]) % G.in[1], id = i / (G.in[2] * G.in[1]);
    typename lmx_cu_acc<T>::type v = 0;
    for (int64_t kd = 0; kd < G.kernel[0]; kd++) {
      int64_t od;
      if (!out_of(id, kd, G.stride[0], G.pad[0], G.dilate[0], G.out[0], &od)) continue;
      for (int64_t kh = 0; kh < G.kernel[1]; kh++) {
        int64_t oh;
        if (!out_of(ih, kh, G.stride[1], G.pad[1], G.dilate[1], G.out[1], &oh)) continue;
        for (int64_t kw = 0; kw < G.kernel[2]; kw++) {
          int64_t ow;
          if (!out_of(iw, kw, G.stride[2], G.pad[2], G.dilate[2], G.out[2], &ow)) continue;
          int64_t row = c * K + (kd * G.kernel[1] + kh) * G.kernel[2] + kw;
          v += lmx_cu_ld(col, row * ld + n * O + (od * G.out[1] + oh) * G.out[2] + ow);
        }
      }
    }
    lmx_cu_st(x, e, lmx_cu_ld(x, e) + v);
  }
}

int lmx_cu_im2col(lmx_cu_stream s, int dt, const lmx_cpu_geom *g, int64_t C, int64_t nimg,
                  const void *x, void *col, int64_t ld) {
  lmx_cpu_geom G = norm_copy(g);
  int64_t n = C * G.kernel[0] * G.kernel[1] * G.kernel[2] * nimg * G.out[0] * G.out[1] * G.out[2];
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
    if (n == 0) return 0;
    LMX_LAUNCH(k_im2col<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, G, C, nimg,
               (const T *)x, (T *)col, ld))
  return lmx_cu_last_error();
}

int lmx_cu_col2im(lmx_cu_stream s, int dt, const lmx_cpu_geom *g, int64_t C, int64_t nimg,
                  const void *col, void *x, int64_t ld) {
  lmx_cpu_geom G = norm_copy(g);
  int64_t n = nimg * C * G.in[0] * G.in[1] * G.in[2];
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
    if (n == 0) return 0;
    LMX_LAUNCH(k_col2im<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, G, C, nimg,
               (const T *)col, (T *)x, ld))
  return lmx_cu_last_error();
}
