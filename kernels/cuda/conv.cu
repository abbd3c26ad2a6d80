/* conv.cu — im2col / col2im on channel-first data, 1-D to 3-D with stride, padding and
 * dilation (kernels/cpu/conv.c); the GEMMs and the group / chunk loop are the glue's.
 * And the direct depthwise kernels (kernels/cpu/dwconv.c), below the lowering.
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

/* ---- depthwise (num_group == channels, m = F / C filters per channel) ---------------- */
/* Forward: one thread per output element, its taps in (kd, kh, kw) order after the bias.
 * Data gradient: one thread per input element gathers, for its m filters in order, the
 * taps whose output index is whole and in range (col2im's rule): no atomics.
 * Weight and bias gradients: one block per filter; per tap, each thread sums a strided
 * share of the N * O products, then one deterministic block reduction (cu_util.cuh). */

template <typename T>
__global__ void k_dw_fwd(lmx_cpu_geom G, int64_t N, int64_t C, int64_t m, const T *x,
                         const T *w, const T *b, T *y, int acc) {
  typedef typename lmx_cu_acc<T>::type A;
  int64_t K = G.kernel[0] * G.kernel[1] * G.kernel[2];
  int64_t O = G.out[0] * G.out[1] * G.out[2], I = G.in[0] * G.in[1] * G.in[2], F = C * m;
  LMX_CU_GRID_LOOP(e, N * F * O) {
    int64_t nf = e / O, o = e % O, f = nf % F, n = nf / F;
    int64_t ow = o % G.out[2], oh = (o / G.out[2]) % G.out[1], od = o / (G.out[2] * G.out[1]);
    const T *xp = x + (n * C + f / m) * I;
    A v = b ? (A)lmx_cu_ld(b, f) : (A)0;
    for (int64_t kd = 0; kd < G.kernel[0]; kd++) {
      int64_t id = od * G.stride[0] - G.pad[0] + kd * G.dilate[0];
      if (id < 0 || id >= G.in[0]) continue;
      for (int64_t kh = 0; kh < G.kernel[1]; kh++) {
        int64_t ih = oh * G.stride[1] - G.pad[1] + kh * G.dilate[1];
        if (ih < 0 || ih >= G.in[1]) continue;
        for (int64_t kw = 0; kw < G.kernel[2]; kw++) {
          int64_t iw = ow * G.stride[2] - G.pad[2] + kw * G.dilate[2];
          if (iw < 0 || iw >= G.in[2]) continue;
          v += (A)lmx_cu_ld(w, f * K + (kd * G.kernel[1] + kh) * G.kernel[2] + kw) *
               (A)lmx_cu_ld(xp, (id * G.in[1] + ih) * G.in[2] + iw);
        }
      }
    }
    lmx_cu_st(y, e, acc ? (A)lmx_cu_ld(y, e) + v : v);
  }
}

template <typename T>
__global__ void k_dw_bwd_data(lmx_cpu_geom G, int64_t N, int64_t C, int64_t m, const T *w,
                              const T *gy, T *gx, int acc) {
  typedef typename lmx_cu_acc<T>::type A;
  int64_t K = G.kernel[0] * G.kernel[1] * G.kernel[2];
  int64_t O = G.out[0] * G.out[1] * G.out[2], I = G.in[0] * G.in[1] * G.in[2], F = C * m;
  LMX_CU_GRID_LOOP(e, N * C * I) {
    int64_t nc = e / I, i = e % I, n = nc / C, c = nc % C;
    int64_t iw = i % G.in[2], ih = (i / G.in[2]) % G.in[1], id = i / (G.in[2] * G.in[1]);
    A v = 0;
    for (int64_t f = c * m; f < (c + 1) * m; f++) {
      const T *gp = gy + (n * F + f) * O;
      for (int64_t kd = 0; kd < G.kernel[0]; kd++) {
        int64_t od;
        if (!out_of(id, kd, G.stride[0], G.pad[0], G.dilate[0], G.out[0], &od)) continue;
        for (int64_t kh = 0; kh < G.kernel[1]; kh++) {
          int64_t oh;
          if (!out_of(ih, kh, G.stride[1], G.pad[1], G.dilate[1], G.out[1], &oh)) continue;
          for (int64_t kw = 0; kw < G.kernel[2]; kw++) {
            int64_t ow;
            if (!out_of(iw, kw, G.stride[2], G.pad[2], G.dilate[2], G.out[2], &ow)) continue;
            v += (A)lmx_cu_ld(w, f * K + (kd * G.kernel[1] + kh) * G.kernel[2] + kw) *
                 (A)lmx_cu_ld(gp, (od * G.out[1] + oh) * G.out[2] + ow);
          }
        }
      }
    }
    lmx_cu_st(gx, e, acc ? (A)lmx_cu_ld(gx, e) + v : v);
  }
}

struct DwSum {
  template <typename C> __device__ static C identity() { return (C)0; }
  template <typename C> __device__ static C merge(C a, C b) { return a + b; }
};

enum { LMX_CU_DW_THREADS = 256 };

template <typename T>
__global__ void k_dw_bwd_wb(lmx_cpu_geom G, int64_t N, int64_t C, int64_t m, const T *x,
                            const T *gy, T *gw, T *gb, int accw, int accb) {
  typedef typename lmx_cu_acc<T>::type A;
  __shared__ A sh[32];
  int64_t K = G.kernel[0] * G.kernel[1] * G.kernel[2];
  int64_t O = G.out[0] * G.out[1] * G.out[2], I = G.in[0] * G.in[1] * G.in[2], F = C * m;
  for (int64_t f = blockIdx.x; f < F; f += gridDim.x) {
    int64_t c = f / m;
    if (gb) {
      A v = 0;
      for (int64_t e = threadIdx.x; e < N * O; e += blockDim.x)
        v += (A)lmx_cu_ld(gy, ((e / O) * F + f) * O + e % O);
      v = lmx_cu_block_reduce<A, DwSum>(v, sh);
      if (threadIdx.x == 0) lmx_cu_st(gb, f, accb ? (A)lmx_cu_ld(gb, f) + v : v);
      __syncthreads();
    }
    for (int64_t t = 0; gw && t < K; t++) {
      int64_t kw = t % G.kernel[2], kh = (t / G.kernel[2]) % G.kernel[1];
      int64_t kd = t / (G.kernel[2] * G.kernel[1]);
      A v = 0;
      for (int64_t e = threadIdx.x; e < N * O; e += blockDim.x) {
        int64_t n = e / O, o = e % O;
        int64_t ow = o % G.out[2], oh = (o / G.out[2]) % G.out[1], od = o / (G.out[2] * G.out[1]);
        int64_t id = od * G.stride[0] - G.pad[0] + kd * G.dilate[0];
        int64_t ih = oh * G.stride[1] - G.pad[1] + kh * G.dilate[1];
        int64_t iw = ow * G.stride[2] - G.pad[2] + kw * G.dilate[2];
        if (id < 0 || id >= G.in[0] || ih < 0 || ih >= G.in[1] || iw < 0 || iw >= G.in[2]) continue;
        v += (A)lmx_cu_ld(gy, (n * F + f) * O + o) *
             (A)lmx_cu_ld(x, (n * C + c) * I + (id * G.in[1] + ih) * G.in[2] + iw);
      }
      v = lmx_cu_block_reduce<A, DwSum>(v, sh);
      if (threadIdx.x == 0) lmx_cu_st(gw, f * K + t, accw ? (A)lmx_cu_ld(gw, f * K + t) + v : v);
      __syncthreads();
    }
  }
}

int lmx_cu_dwconv_fwd(lmx_cu_stream s, int dt, const lmx_cpu_geom *g, int64_t N, int64_t C,
                      int64_t m, const void *x, const void *w, const void *b, void *y, int acc) {
  lmx_cpu_geom G = norm_copy(g);
  int64_t n = N * C * m * G.out[0] * G.out[1] * G.out[2];
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
    if (n == 0) return 0;
    LMX_LAUNCH(k_dw_fwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, G, N, C, m,
               (const T *)x, (const T *)w, (const T *)b, (T *)y, acc))
  return lmx_cu_last_error();
}

int lmx_cu_dwconv_bwd_data(lmx_cu_stream s, int dt, const lmx_cpu_geom *g, int64_t N,
                           int64_t C, int64_t m, const void *w, const void *gy, void *gx,
                           int acc) {
  lmx_cpu_geom G = norm_copy(g);
  int64_t n = N * C * G.in[0] * G.in[1] * G.in[2];
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
    if (n == 0) return 0;
    LMX_LAUNCH(k_dw_bwd_data<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, G, N, C, m,
               (const T *)w, (const T *)gy, (T *)gx, acc))
  return lmx_cu_last_error();
}

int lmx_cu_dwconv_bwd_wb(lmx_cu_stream s, int dt, const lmx_cpu_geom *g, int64_t N, int64_t C,
                         int64_t m, const void *x, const void *gy, void *gw, void *gb,
                         int accw, int accb) {
  lmx_cpu_geom G = norm_copy(g);
  int64_t F = C * m;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
    if (F == 0 || (!gw && !gb)) return 0;
    LMX_LAUNCH(k_dw_bwd_wb<T>, (unsigned)(F < 65535 ? F : 65535), LMX_CU_DW_THREADS, 0, s, G,
               N, C, m, (const T *)x, (const T *)gy, (T *)gw, (T *)gb, accw, accb))
  return lmx_cu_last_error();
}
