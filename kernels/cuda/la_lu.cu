/* la_lu.cu — CUDA kernels of the inverse and determinants (cu_la_lu.h). */
#include "cuda_common.cuh"
#include "cu_la_lu.h"
#include "cu_util.cuh"
#include "../cpu/cpu_kernels.h"

template <typename T>
__global__ void k_la_lu(int64_t batch, int64_t n, const T *A, T *inv, T *det, T *sign,
                        T *logabs, double *ws, int strict, lmx_cu_raise bad) {
  LMX_CU_GRID_LOOP(b, batch) {
    double *w = ws + b * 2 * n * n; /* [A | I], rows of 2n */
    int64_t m = 2 * n;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        w[i * m + j] = (double)A[(b * n + i) * n + j];
        w[i * m + n + j] = i == j ? 1.0 : 0.0;
      }
    double sg = 1, la = 0;
    for (int64_t k = 0; k < n && sg != 0; k++) {
      int64_t p = k;
      for (int64_t i = k + 1; i < n; i++)
        if (fabs(w[i * m + k]) > fabs(w[p * m + k])) p = i;
      if (w[p * m + k] == 0) {
        sg = 0, la = -INFINITY;
        break;
      }
      if (p != k) {
        sg = -sg;
        for (int64_t j = 0; j < m; j++) {
          double t = w[k * m + j];
          w[k * m + j] = w[p * m + j];
          w[p * m + j] = t;
        }
      }
      double d = w[k * m + k];
      if (d < 0) sg = -sg;
      la += log(fabs(d));
      for (int64_t j = 0; j < m; j++) w[k * m + j] /= d;
      for (int64_t i = 0; i < n; i++) {
        if (i == k) continue;
        double f = w[i * m + k];
        if (f != 0)
          for (int64_t j = 0; j < m; j++) w[i * m + j] -= f * w[k * m + j];
      }
    }
    if (sign) sign[b] = (T)sg;
    if (logabs) logabs[b] = (T)la;
    if (det) det[b] = (T)(sg * exp(la));
    if (inv) {
      if (sg == 0 && strict) {
        lmx_cu_raise_set(bad, b, 0);
      } else if (sg == 0) {
        for (int64_t i = 0; i < n * n; i++) inv[b * n * n + i] = (T)0;
      } else {
        for (int64_t i = 0; i < n; i++)
          for (int64_t j = 0; j < n; j++) inv[(b * n + i) * n + j] = (T)w[i * m + n + j];
      }
    }
  }
}

template <typename T>
__global__ void k_la_scale_t(int64_t total, int64_t n, const T *g, const T *f, const T *keep,
                             const T *inv, T *dA, int acc) {
  LMX_CU_GRID_LOOP(q, total) {
    int64_t b = q / (n * n), i = (q / n) % n, j = q % n;
    T v = keep[b] != (T)0 ? g[b] * (f ? f[b] : (T)1) * inv[(b * n + j) * n + i] : (T)0;
    dA[q] = acc ? dA[q] + v : v;
  }
}

int lmx_cu_la_lu(lmx_cu_stream s, int dt, int64_t batch, int64_t n, const void *A, void *inv,
                 void *det, void *sign, void *logabs, double *ws, int strict,
                 lmx_cu_raise bad) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  if (batch == 0) return 0;
  if (dt == LMX_FLOAT32)
    LMX_LAUNCH(k_la_lu<float>, lmx_cu_blocks(batch), LMX_CU_THREADS, 0, s, batch, n,
               (const float *)A, (float *)inv, (float *)det, (float *)sign, (float *)logabs,
               ws, strict, bad);
  else
    LMX_LAUNCH(k_la_lu<double>, lmx_cu_blocks(batch), LMX_CU_THREADS, 0, s, batch, n,
               (const double *)A, (double *)inv, (double *)det, (double *)sign,
               (double *)logabs, ws, strict, bad);
  return lmx_cu_last_error();
}

int lmx_cu_la_scale_t(lmx_cu_stream s, int dt, int64_t batch, int64_t n, const void *g,
                      const void *f, const void *keep, const void *inv, void *dA, int acc) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  int64_t total = batch * n * n;
  if (total == 0) return 0;
  if (dt == LMX_FLOAT32)
    LMX_LAUNCH(k_la_scale_t<float>, lmx_cu_blocks(total), LMX_CU_THREADS, 0, s, total, n,
               (const float *)g, (const float *)f, (const float *)keep, (const float *)inv,
               (float *)dA, acc);
  else
    LMX_LAUNCH(k_la_scale_t<double>, lmx_cu_blocks(total), LMX_CU_THREADS, 0, s, total, n,
               (const double *)g, (const double *)f, (const double *)keep,
               (const double *)inv, (double *)dA, acc);
  return lmx_cu_last_error();
}
