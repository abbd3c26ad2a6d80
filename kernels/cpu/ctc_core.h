/* ctc_core.h — one sequence of the CTC loss and its gradient (CTCLoss, issue 14, ops14g),
 * shared by the CPU kernel (kernels/cpu/ctc.c: sequences in parallel) and the CUDA kernel
 * (kernels/cuda/ctc.cu: one thread per sequence), so both compute the same numbers.
 *
 * In log space, in double: the log-softmax of each frame, the forward variables α and
 * the backward variables β over the label with blanks between and around (S = 2L' + 1
 * states, L' the sequence's label length), log p = logsumexp of the last two α; the loss
 * is -log p and the gradient with respect to the activations x[t, c] is
 *   softmax(x_t)_c - exp(logsumexp_{s: ext(s) = c} (α_t(s) + β_t(s)) - lp_t(c) - log p)
 * for t below the sequence's data length, 0 past it; a sequence whose label cannot be
 * aligned (log p = -inf) gets loss +inf and a zero gradient.
 */
#ifndef LMX_KERNELS_CTC_CORE_H
#define LMX_KERNELS_CTC_CORE_H

#include <math.h>
#include <stdint.h>

#include "../../src/luamx.h"

#ifdef __host__
#define LMX_CTC_HD __host__ __device__
#else
#define LMX_CTC_HD
#endif

typedef struct {
  int64_t T, N, C, L; /* frames, sequences, classes, label columns */
  int64_t blank;      /* the blank class: 0 or C - 1 */
  int pad;            /* the label padding value without label lengths: 0 or -1 */
  int dt;             /* data's dtype (float32 / float64); loss and grad take it too */
  int ldt, dldt, lldt; /* dtypes of label, data_lengths, label_lengths (float32, float64,
                          int32, int64) */
  const void *data;   /* [T, N, C] */
  const void *label;  /* [N, L] */
  const void *dlen, *llen; /* [N] each, NULL when not given */
  void *loss;         /* [N] */
  void *grad;         /* [T, N, C], NULL when not wanted */
  double *ws;         /* lmx_ctc_ws_doubles(...) doubles */
} lmx_ctc_args;

/* what a sequence may find wrong (lmx_ctc_seq's return) */
enum { LMX_CTC_OK, LMX_CTC_BAD_DATA_LEN, LMX_CTC_BAD_LABEL_LEN, LMX_CTC_BAD_LABEL };

/* scratch doubles one sequence needs, and all of them */
LMX_CTC_HD static inline int64_t lmx_ctc_ws_seq(int64_t T, int64_t C, int64_t L) {
  return T * C + 2 * T * (2 * L + 1) + C;
}

LMX_CTC_HD static inline double lmx_ctc_ld(const void *p, int dt, int64_t i) {
  switch (dt) {
    case LMX_FLOAT32: return (double)((const float *)p)[i];
    case LMX_FLOAT64: return ((const double *)p)[i];
    case LMX_INT32: return (double)((const int32_t *)p)[i];
    case LMX_INT64: return (double)((const int64_t *)p)[i];
    default: return NAN;
  }
}

LMX_CTC_HD static inline void lmx_ctc_st(void *p, int dt, int64_t i, double v) {
  if (dt == LMX_FLOAT32) ((float *)p)[i] = (float)v;
  else ((double *)p)[i] = v;
}

LMX_CTC_HD static inline double lmx_ctc_lse(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  double m = a > b ? a : b;
  return m + log(exp(a - m) + exp(b - m));
}

/* class of extended state s (blank at even s) */
LMX_CTC_HD static inline int64_t lmx_ctc_ext(const lmx_ctc_args *a, int64_t n, int64_t s) {
  return s % 2 ? (int64_t)lmx_ctc_ld(a->label, a->ldt, n * a->L + s / 2) : a->blank;
}

/* a whole number in [lo, hi]? */
LMX_CTC_HD static inline int lmx_ctc_whole(double v, double lo, double hi) {
  return v >= lo && v <= hi && v == floor(v);
}

/* The loss (and gradient) of sequence n. Returns LMX_CTC_OK, or what was wrong with
 * *pos the flat position of the bad element and *val its value (nothing written). */
LMX_CTC_HD static inline int lmx_ctc_seq(const lmx_ctc_args *a, int64_t n, int64_t *pos,
                                         double *val) {
  int64_t T = a->T, N = a->N, C = a->C, L = a->L, Tn = T, Ln = L;
  if (a->dlen) {
    double v = lmx_ctc_ld(a->dlen, a->dldt, n);
    if (!lmx_ctc_whole(v, 0, (double)T)) return *pos = n, *val = v, LMX_CTC_BAD_DATA_LEN;
    Tn = (int64_t)v;
  }
  if (a->llen) {
    double v = lmx_ctc_ld(a->llen, a->lldt, n);
    if (!lmx_ctc_whole(v, 0, (double)L)) return *pos = n, *val = v, LMX_CTC_BAD_LABEL_LEN;
    Ln = (int64_t)v;
  } else {
    for (int64_t i = 0; i < L; i++)
      if (lmx_ctc_ld(a->label, a->ldt, n * L + i) == (double)a->pad) {
        Ln = i;
        break;
      }
  }
  for (int64_t i = 0; i < Ln; i++) {
    double v = lmx_ctc_ld(a->label, a->ldt, n * L + i);
    if (!lmx_ctc_whole(v, 0, (double)(C - 1)) || v == (double)a->blank)
      return *pos = n * L + i, *val = v, LMX_CTC_BAD_LABEL;
  }
  int64_t S = 2 * Ln + 1, Smax = 2 * L + 1;
  double *lp = a->ws + n * lmx_ctc_ws_seq(T, C, L), *al = lp + T * C, *be = al + T * Smax;
  double *cls = be + T * Smax;
  for (int64_t t = 0; t < Tn; t++) { /* log-softmax of frame t */
    double m = -INFINITY, z = 0;
    for (int64_t c = 0; c < C; c++) {
      double x = lmx_ctc_ld(a->data, a->dt, (t * N + n) * C + c);
      m = x > m ? x : m;
    }
    for (int64_t c = 0; c < C; c++) z += exp(lmx_ctc_ld(a->data, a->dt, (t * N + n) * C + c) - m);
    for (int64_t c = 0; c < C; c++)
      lp[t * C + c] = lmx_ctc_ld(a->data, a->dt, (t * N + n) * C + c) - m - log(z);
  }
  for (int64_t t = 0; t < Tn; t++) /* α */
    for (int64_t s = 0; s < S; s++) {
      double v = -INFINITY;
      if (t == 0) {
        if (s < 2) v = 0;
      } else {
        int64_t e = lmx_ctc_ext(a, n, s);
        v = al[(t - 1) * S + s];
        if (s > 0) v = lmx_ctc_lse(v, al[(t - 1) * S + s - 1]);
        if (s > 1 && e != a->blank && e != lmx_ctc_ext(a, n, s - 2))
          v = lmx_ctc_lse(v, al[(t - 1) * S + s - 2]);
      }
      al[t * S + s] = v == -INFINITY ? v : v + lp[t * C + lmx_ctc_ext(a, n, s)];
    }
  double logp = Ln == 0 ? 0 : -INFINITY;
  if (Tn > 0) {
    logp = al[(Tn - 1) * S + S - 1];
    if (S > 1) logp = lmx_ctc_lse(logp, al[(Tn - 1) * S + S - 2]);
  }
  lmx_ctc_st(a->loss, a->dt, n, -logp);
  if (!a->grad) return LMX_CTC_OK;
  for (int64_t t = Tn - 1; t >= 0; t--) /* β */
    for (int64_t s = S - 1; s >= 0; s--) {
      double v = -INFINITY;
      if (t == Tn - 1) {
        if (s >= S - 2) v = 0;
      } else {
        int64_t e = lmx_ctc_ext(a, n, s);
        v = be[(t + 1) * S + s];
        if (s + 1 < S) v = lmx_ctc_lse(v, be[(t + 1) * S + s + 1]);
        if (s + 2 < S && e != a->blank && e != lmx_ctc_ext(a, n, s + 2))
          v = lmx_ctc_lse(v, be[(t + 1) * S + s + 2]);
      }
      be[t * S + s] = v == -INFINITY ? v : v + lp[t * C + lmx_ctc_ext(a, n, s)];
    }
  for (int64_t t = 0; t < T; t++) {
    int live = t < Tn && logp != -INFINITY;
    for (int64_t c = 0; c < C; c++) cls[c] = -INFINITY;
    if (live)
      for (int64_t s = 0; s < S; s++) {
        int64_t e = lmx_ctc_ext(a, n, s);
        cls[e] = lmx_ctc_lse(cls[e], al[t * S + s] + be[t * S + s]);
      }
    for (int64_t c = 0; c < C; c++) {
      double g = 0;
      if (live) {
        double post = cls[c] == -INFINITY ? 0 : exp(cls[c] - lp[t * C + c] - logp);
        g = exp(lp[t * C + c]) - post;
      }
      lmx_ctc_st(a->grad, a->dt, (t * N + n) * C + c, g);
    }
  }
  return LMX_CTC_OK;
}

#endif
