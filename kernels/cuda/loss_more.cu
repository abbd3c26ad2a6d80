/* loss_more.cu — CUDA kernels of softmax_cross_entropy and SVMOutput's gradient
 * (cu_loss_more.h), the formulas of kernels/cpu/loss_more.c. The loss is one number:
 * one block whose threads each take rows (stride blockDim.x), each row's logsumexp -
 * x[label] in double, combined by lmx_cu_block_reduce's fixed tree, so the result does
 * not depend on timing. The gradient runs one thread per row over the grid. A label
 * outside [0, k) gives NaN. SVMOutput's gradient is one thread per element.
 * IdentityAttachKLSparseReg's backward is two launches on the stream: one thread per unit
 * sums its column in a fixed order and moves moving_avg, then one thread per element
 * writes the gradient from the updated average.
 */
#include <math.h>

#include "cuda_common.cuh"
#include "cu_loss_more.h"
#include "cu_util.cuh"
#include "../cpu/cpu_kernels.h"

struct RSumD {
  template <typename C> __device__ static C identity() { return (C)0; }
  template <typename C> __device__ static C merge(C a, C b) { return a + b; }
};

/* the class of row i, or -1 when the label is not an index in [0, k) */
template <typename T>
__device__ static inline int64_t sce_label(const T *label, int64_t i, int64_t k) {
  double v = (double)lmx_cu_ld(label, i);
  if (!(v >= 0.0) || v >= (double)k) return -1;
  return (int64_t)v;
}

template <typename T>
__device__ static inline void sce_row(const T *xr, int64_t k, double *mx, double *sum) {
  double m = -INFINITY, s = 0.0;
  for (int64_t j = 0; j < k; j++) {
    double v = (double)lmx_cu_ld(xr, j);
    if (v > m) m = v;
  }
  for (int64_t j = 0; j < k; j++) s += exp((double)lmx_cu_ld(xr, j) - m);
  *mx = m;
  *sum = s;
}

template <typename T>
__global__ void k_sce_fwd(int64_t n, int64_t k, T *loss, const T *x, const T *label, int acc) {
  __shared__ double sh[32];
  double t = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const T *xr = x + i * k;
    int64_t lab = sce_label(label, i, k);
    double mx, sum;
    sce_row(xr, k, &mx, &sum);
    t += lab < 0 ? NAN : log(sum) + mx - (double)lmx_cu_ld(xr, lab);
  }
  t = lmx_cu_block_reduce<double, RSumD>(t, sh);
  if (threadIdx.x == 0) {
    if (acc) t += (double)lmx_cu_ld(loss, 0);
    lmx_cu_st(loss, 0, t);
  }
}

template <typename T>
__global__ void k_sce_bwd(int64_t n, int64_t k, T *gx, const T *x, const T *label, const T *g,
                          int acc) {
  double gv = (double)lmx_cu_ld(g, 0);
  LMX_CU_GRID_LOOP(i, n) {
    const T *xr = x + i * k;
    T *gr = gx + i * k;
    int64_t lab = sce_label(label, i, k);
    double mx, sum;
    sce_row(xr, k, &mx, &sum);
    for (int64_t j = 0; j < k; j++) {
      double v = lab < 0 ? NAN : (exp((double)lmx_cu_ld(xr, j) - mx) / sum - (j == lab)) * gv;
      if (acc) v += (double)lmx_cu_ld(gr, j);
      lmx_cu_st(gr, j, v);
    }
  }
}

int lmx_cu_sce_fwd(lmx_cu_stream s, int dt, int64_t n, int64_t k, void *loss, const void *x,
                   const void *label, int acc) {
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_sce_fwd<T>, 1, LMX_CU_THREADS, 0, s, n, k, (T *)loss,
                                   (const T *)x, (const T *)label, acc));
  return lmx_cu_last_error();
}

int lmx_cu_sce_bwd(lmx_cu_stream s, int dt, int64_t n, int64_t k, void *gx, const void *x,
                   const void *label, const void *g, int acc) {
  if (n == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_sce_bwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, n, k,
                                   (T *)gx, (const T *)x, (const T *)label, (const T *)g, acc));
  return lmx_cu_last_error();
}

/* ---- SVMOutput's hinge gradient ---------------------------------------------------------- */

__device__ static inline double svm_g(double y, int is_label, double margin, double reg,
                                      int linear) {
  if (linear) return is_label ? -(double)(margin > y) * reg : (double)(margin > -y) * reg;
  if (is_label) return margin > y ? -2.0 * (margin - y) * reg : 0.0;
  return margin > -y ? 2.0 * (margin + y) * reg : 0.0;
}

template <typename T>
__global__ void k_svm_grad(int64_t n, int64_t k, T *gx, const T *y, const T *label,
                           double margin, double reg, int linear, int acc) {
  LMX_CU_GRID_LOOP(q, n * k) {
    int64_t i = q / k, j = q % k;
    double lv = (double)lmx_cu_ld(label, i);
    int64_t lab = lv > -1.0 && lv < (double)k ? (int64_t)lv : -1;
    double v = svm_g((double)lmx_cu_ld(y, q), j == lab, margin, reg, linear);
    if (acc) v += (double)lmx_cu_ld(gx, q);
    lmx_cu_st(gx, q, v);
  }
}

int lmx_cu_svm_grad(lmx_cu_stream s, int dt, int64_t n, int64_t k, void *gx, const void *y,
                    const void *label, double margin, double reg, int linear, int acc) {
  if (n * k == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_svm_grad<T>, lmx_cu_blocks(n * k), LMX_CU_THREADS, 0, s,
                                   n, k, (T *)gx, (const T *)y, (const T *)label, margin, reg,
                                   linear, acc));
  return lmx_cu_last_error();
}

/* ---- IdentityAttachKLSparseReg's backward ---------------------------------------------- */

/* one thread per unit: its batch mean in a fixed order, then the moving average */
template <typename T>
__global__ void k_klreg_avg(int64_t n, int64_t k, const T *x, T *avg, double momentum) {
  LMX_CU_GRID_LOOP(j, k) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += (double)lmx_cu_ld(x, i * k + j);
    double m = momentum * (double)lmx_cu_ld(avg, j) + (1.0 - momentum) * (s / (double)n);
    lmx_cu_st(avg, j, m);
  }
}

template <typename T>
__global__ void k_klreg_grad(int64_t n, int64_t k, T *gx, const T *g, const T *avg,
                             double target, double penalty, int acc) {
  LMX_CU_GRID_LOOP(q, n * k) {
    double a = (double)lmx_cu_ld(avg, q % k);
    double v = (double)lmx_cu_ld(g, q) + penalty * (-target / a + (1.0 - target) / (1.0 - a));
    if (acc) v += (double)lmx_cu_ld(gx, q);
    lmx_cu_st(gx, q, v);
  }
}

int lmx_cu_klreg_bwd(lmx_cu_stream s, int dt, int64_t n, int64_t k, void *gx, const void *g,
                     const void *x, void *avg, double target, double penalty, double momentum,
                     int acc) {
  if (n * k == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_klreg_avg<T>, lmx_cu_blocks(k), LMX_CU_THREADS, 0, s, n, k,
                                   (const T *)x, (T *)avg, momentum);
                        LMX_LAUNCH(k_klreg_grad<T>, lmx_cu_blocks(n * k), LMX_CU_THREADS, 0, s,
                                   n, k, (T *)gx, (const T *)g, (const T *)avg, target, penalty,
                                   acc));
  return lmx_cu_last_error();
}
