/* loss_more.c — CPU kernels of issue 14's losses: softmax_cross_entropy (the summed loss
 * of a batch of rows and its data gradient), SVMOutput's hinge gradient (the label
 * truncated to an integer as MXNet's static_cast<int>) and IdentityAttachKLSparseReg's
 * backward (the moving average of unit means, then the KL penalty on the gradient).
 * float32 and float64; rows are accumulated in double, one row per iteration (parallel
 * past the threshold of cpu_par.h for the gradients, whose rows are independent writes).
 */
#include <math.h>

#include "cpu_kernels.h"
#include "cpu_par.h"

/* The class of row i, or -1 when the label is not an integer index in [0, k). */
static int64_t label_at(int dt, const void *label, int64_t i, int64_t k) {
  double v = dt == LMX_FLOAT32 ? (double)((const float *)label)[i] : ((const double *)label)[i];
  if (!(v >= 0.0) || v >= (double)k) return -1;
  return (int64_t)v;
}

#define SCE_ROW(T, xr, k, mx, sum)                                  \
  double mx = -INFINITY, sum = 0.0;                                 \
  for (int64_t j = 0; j < (k); j++)                                 \
    if ((double)(xr)[j] > mx) mx = (double)(xr)[j];                 \
  for (int64_t j = 0; j < (k); j++) sum += exp((double)(xr)[j] - mx);

#define SCE_FWD(T)                                                  \
  for (int64_t i = 0; i < n; i++) {                                 \
    const T *xr = (const T *)x + i * k;                             \
    int64_t lab = label_at(dt, label, i, k);                        \
    if (lab < 0) return i;                                          \
    SCE_ROW(T, xr, k, mx, sum)                                      \
    total += log(sum) + mx - (double)xr[lab];                       \
  }                                                                 \
  T *lo = (T *)loss;                                                \
  lo[0] = (T)(acc ? (double)lo[0] + total : total);

int64_t lmx_cpu_sce_fwd(int dt, int64_t n, int64_t k, void *loss, const void *x,
                        const void *label, int acc) {
  double total = 0.0;
  if (dt == LMX_FLOAT32) {
    SCE_FWD(float)
  } else if (dt == LMX_FLOAT64) {
    SCE_FWD(double)
  } else {
    return -2;
  }
  return -1;
}

#define SCE_BWD(T)                                                          \
  LMX_PAR_FOR_W(n, k, i, {                                                  \
    const T *xr = (const T *)x + i * k;                                     \
    T *gr = (T *)gx + i * k;                                                \
    int64_t lab = label_at(dt, label, i, k);                                \
    SCE_ROW(T, xr, k, mx, sum)                                              \
    for (int64_t j = 0; j < k; j++) {                                       \
      double v = (exp((double)xr[j] - mx) / sum - (j == lab ? 1.0 : 0.0)) * g; \
      gr[j] = (T)(acc ? (double)gr[j] + v : v);                             \
    }                                                                       \
  });

int lmx_cpu_sce_bwd(int dt, int64_t n, int64_t k, void *gx, const void *x, const void *label,
                    double g, int acc) {
  if (dt == LMX_FLOAT32) {
    SCE_BWD(float)
  } else if (dt == LMX_FLOAT64) {
    SCE_BWD(double)
  } else {
    return -1;
  }
  return 0;
}

/* ---- SVMOutput's hinge gradient ---------------------------------------------------------- */

/* One element of MXNet's L1 / L2 SVM gradient: the labelled class pushes its output up to
 * the margin, the others down to -margin. */
static inline double svm_g(double y, int is_label, double margin, double reg, int linear) {
  if (linear) return is_label ? -(double)(margin > y) * reg : (double)(margin > -y) * reg;
  if (is_label) return margin > y ? -2.0 * (margin - y) * reg : 0.0;
  return margin > -y ? 2.0 * (margin + y) * reg : 0.0;
}

#define SVM_BWD(T)                                                              \
  LMX_PAR_FOR_W(n, k, i, {                                                      \
    const T *yr = (const T *)y + i * k;                                         \
    T *gr = (T *)gx + i * k;                                                    \
    double lv = (double)((const T *)label)[i];                                  \
    int64_t lab = lv > -1.0 && lv < (double)k ? (int64_t)lv : -1;              \
    for (int64_t j = 0; j < k; j++) {                                           \
      double v = svm_g((double)yr[j], j == lab, margin, reg, linear);          \
      gr[j] = (T)(acc ? (double)gr[j] + v : v);                                 \
    }                                                                           \
  });

int lmx_cpu_svm_grad(int dt, int64_t n, int64_t k, void *gx, const void *y, const void *label,
                     double margin, double reg, int linear, int acc) {
  if (dt == LMX_FLOAT32) {
    SVM_BWD(float)
  } else if (dt == LMX_FLOAT64) {
    SVM_BWD(double)
  } else {
    return -1;
  }
  return 0;
}

/* ---- IdentityAttachKLSparseReg's backward ---------------------------------------------- */

#define KL_BWD(T)                                                                  \
  do {                                                                             \
    const T *xs = (const T *)x, *gs = (const T *)g;                                \
    T *m = (T *)avg, *gd = (T *)gx;                                                \
    for (int64_t j = 0; j < k; j++) {                                              \
      double s = 0.0;                                                              \
      for (int64_t i = 0; i < n; i++) s += (double)xs[i * k + j];                  \
      m[j] = (T)(momentum * (double)m[j] + (1.0 - momentum) * (s / (double)n));    \
    }                                                                              \
    LMX_PAR_FOR_W(n, k, i, {                                                       \
      for (int64_t j = 0; j < k; j++) {                                            \
        double a = (double)m[j];                                                   \
        double pen = penalty * (-target / a + (1.0 - target) / (1.0 - a));          \
        double v = (double)gs[i * k + j] + pen;                                    \
        gd[i * k + j] = (T)(acc ? (double)gd[i * k + j] + v : v);                  \
      }                                                                            \
    });                                                                            \
  } while (0)

int lmx_cpu_klreg_bwd(int dt, int64_t n, int64_t k, void *gx, const void *g, const void *x,
                      void *avg, double target, double penalty, double momentum, int acc) {
  if (dt == LMX_FLOAT32) KL_BWD(float);
  else if (dt == LMX_FLOAT64) KL_BWD(double);
  else return -1;
  return 0;
}
