/* la_blas.cu — CUDA kernels of the Cholesky and triangular linalg (cu_la_blas.h). The
 * triangular product and solve take one thread per vector of B: a column (left side) or
 * a row (right side, where B · op(T) is op(T)ᵀ applied to the row), so each thread works
 * in place on its own vector, in the order that reads each entry before overwriting it.
 * Only T's own triangle is read. potrf is Cholesky–Banachiewicz, one thread per matrix.
 */
#include "cuda_common.cuh"
#include "cu_la_blas.h"
#include "cu_util.cuh"
#include "../cpu/cpu_kernels.h"

/* M(i, j) of the effective n x n matrix: T(i, j), or T(j, i) when tp */
template <typename T>
__device__ static inline double la_m(const T *a, int64_t n, int tp, int64_t i, int64_t j) {
  return (double)(tp ? a[j * n + i] : a[i * n + j]);
}

template <typename T>
__global__ void k_la_tri(int64_t nvec, int64_t m, int64_t k, const T *A, T *B, int lower,
                         int trans, int right, double alpha, int solve) {
  LMX_CU_GRID_LOOP(q, nvec) {
    int64_t per = right ? m : k, n = right ? k : m, b = q / per, v = q % per;
    const T *a = A + b * n * n;
    T *x = B + b * m * k + (right ? v * k : v);
    int64_t st = right ? 1 : k;
    int tp = trans ^ right, low = lower ^ tp; /* M = op(T) (left) or op(T)ᵀ (right) */
    if (!solve && low) {
      for (int64_t i = n - 1; i >= 0; i--) {
        double s = 0;
        for (int64_t j = 0; j <= i; j++) s += la_m(a, n, tp, i, j) * (double)x[j * st];
        x[i * st] = (T)(alpha * s);
      }
    } else if (!solve) {
      for (int64_t i = 0; i < n; i++) {
        double s = 0;
        for (int64_t j = i; j < n; j++) s += la_m(a, n, tp, i, j) * (double)x[j * st];
        x[i * st] = (T)(alpha * s);
      }
    } else if (low) {
      for (int64_t i = 0; i < n; i++) {
        double s = alpha * (double)x[i * st];
        for (int64_t j = 0; j < i; j++) s -= la_m(a, n, tp, i, j) * (double)x[j * st];
        x[i * st] = (T)(s / la_m(a, n, tp, i, i));
      }
    } else {
      for (int64_t i = n - 1; i >= 0; i--) {
        double s = alpha * (double)x[i * st];
        for (int64_t j = i + 1; j < n; j++) s -= la_m(a, n, tp, i, j) * (double)x[j * st];
        x[i * st] = (T)(s / la_m(a, n, tp, i, i));
      }
    }
  }
}

template <typename T>
__global__ void k_la_syrk(int64_t total, int64_t m, int64_t k, const T *A, T *C, int trans,
                          double alpha) {
  LMX_CU_GRID_LOOP(q, total) {
    int64_t n = trans ? k : m, inner = trans ? m : k;
    int64_t b = q / (n * n), i = (q / n) % n, j = q % n;
    const T *a = A + b * m * k;
    double s = 0;
    for (int64_t l = 0; l < inner; l++)
      s += trans ? (double)a[l * k + i] * (double)a[l * k + j]
                 : (double)a[i * k + l] * (double)a[j * k + l];
    C[q] = (T)(alpha * s);
  }
}

template <typename T>
__global__ void k_la_tri_fix(int64_t total, int64_t n, T *A, int lower, int copy) {
  LMX_CU_GRID_LOOP(q, total) {
    int64_t b = q / (n * n), i = (q / n) % n, j = q % n;
    int other = lower ? j > i : j < i;
    if (other) A[q] = copy ? A[(b * n + j) * n + i] : (T)0;
  }
}

template <typename T>
__global__ void k_la_potrf(int64_t batch, int64_t n, T *A, int lower, lmx_cu_raise bad) {
  LMX_CU_GRID_LOOP(b, batch) {
    T *a = A + b * n * n;
    /* L(i, j), i >= j, lives at (i, j) for lower and at (j, i) for upper (L = Uᵀ) */
#define LA_AT(i, j) a[lower ? (i) * n + (j) : (j) * n + (i)]
    for (int64_t i = 0; i < n; i++) {
      int ok = 1;
      for (int64_t j = 0; j <= i; j++) {
        double s = (double)LA_AT(i, j);
        for (int64_t l = 0; l < j; l++) s -= (double)LA_AT(i, l) * (double)LA_AT(j, l);
        if (i == j) {
          if (!(s > 0)) {
            lmx_cu_raise_set(bad, b, i + 1);
            ok = 0;
            break;
          }
          LA_AT(i, i) = (T)sqrt(s);
        } else {
          LA_AT(i, j) = (T)(s / (double)LA_AT(j, j));
        }
      }
      if (!ok) break;
    }
#undef LA_AT
  }
}

template <typename T>
__global__ void k_la_eye(int64_t total, int64_t n, T *A) {
  LMX_CU_GRID_LOOP(q, total) A[q] = (q / n) % n == q % n ? (T)1 : (T)0;
}

template <typename T>
__global__ void k_la_check_diag(int64_t batch, int64_t n, const T *A, lmx_cu_raise bad) {
  LMX_CU_GRID_LOOP(b, batch) {
    for (int64_t i = 0; i < n; i++)
      if (A[(b * n + i) * n + i] == (T)0) {
        lmx_cu_raise_set(bad, b, i);
        break;
      }
  }
}

#define LA_DISPATCH(dt, ...)                                                              \
  switch (dt) {                                                                           \
    case LMX_FLOAT32: { typedef float T; __VA_ARGS__; } break;                            \
    case LMX_FLOAT64: { typedef double T; __VA_ARGS__; } break;                           \
    default: return -1;                                                                   \
  }

static int la_ok(int dt) { return dt == LMX_FLOAT32 || dt == LMX_FLOAT64; }

int lmx_cu_la_trxm(lmx_cu_stream s, int dt, int64_t batch, int64_t m, int64_t k,
                   const void *A, void *B, int lower, int trans, int right, double alpha,
                   int solve) {
  if (!la_ok(dt)) return -1;
  int64_t nvec = batch * (right ? m : k);
  if (nvec == 0 || m == 0 || k == 0) return 0;
  LA_DISPATCH(dt, LMX_LAUNCH(k_la_tri<T>, lmx_cu_blocks(nvec), LMX_CU_THREADS, 0, s, nvec, m, k,
                             (const T *)A, (T *)B, lower, trans, right, alpha, solve));
  return lmx_cu_last_error();
}

int lmx_cu_la_syrk(lmx_cu_stream s, int dt, int64_t batch, int64_t m, int64_t k, const void *A,
                   void *C, int trans, double alpha) {
  if (!la_ok(dt)) return -1;
  int64_t n = trans ? k : m, total = batch * n * n;
  if (total == 0) return 0;
  LA_DISPATCH(dt, LMX_LAUNCH(k_la_syrk<T>, lmx_cu_blocks(total), LMX_CU_THREADS, 0, s, total, m,
                             k, (const T *)A, (T *)C, trans, alpha));
  return lmx_cu_last_error();
}

int lmx_cu_la_tri_fix(lmx_cu_stream s, int dt, int64_t batch, int64_t n, void *A, int lower,
                      int copy) {
  if (!la_ok(dt)) return -1;
  int64_t total = batch * n * n;
  if (total == 0) return 0;
  LA_DISPATCH(dt, LMX_LAUNCH(k_la_tri_fix<T>, lmx_cu_blocks(total), LMX_CU_THREADS, 0, s, total,
                             n, (T *)A, lower, copy));
  return lmx_cu_last_error();
}

int lmx_cu_la_potrf(lmx_cu_stream s, int dt, int64_t batch, int64_t n, void *A, int lower,
                    lmx_cu_raise bad) {
  if (!la_ok(dt)) return -1;
  if (batch * n == 0) return 0;
  LA_DISPATCH(dt, LMX_LAUNCH(k_la_potrf<T>, lmx_cu_blocks(batch), LMX_CU_THREADS, 0, s, batch, n,
                             (T *)A, lower, bad));
  int rc = lmx_cu_last_error();
  return rc ? rc : lmx_cu_la_tri_fix(s, dt, batch, n, A, lower, 0);
}

int lmx_cu_la_eye(lmx_cu_stream s, int dt, int64_t batch, int64_t n, void *A) {
  if (!la_ok(dt)) return -1;
  int64_t total = batch * n * n;
  if (total == 0) return 0;
  LA_DISPATCH(dt, LMX_LAUNCH(k_la_eye<T>, lmx_cu_blocks(total), LMX_CU_THREADS, 0, s, total, n,
                             (T *)A));
  return lmx_cu_last_error();
}

int lmx_cu_la_check_diag(lmx_cu_stream s, int dt, int64_t batch, int64_t n, const void *A,
                         lmx_cu_raise bad) {
  if (!la_ok(dt)) return -1;
  if (batch * n == 0) return 0;
  LA_DISPATCH(dt, LMX_LAUNCH(k_la_check_diag<T>, lmx_cu_blocks(batch), LMX_CU_THREADS, 0, s,
                             batch, n, (const T *)A, bad));
  return lmx_cu_last_error();
}
