/* ctc.c — CTCLoss on the CPU (cpu_kernels.h): the sequences of a batch in parallel, each
 * by lmx_ctc_seq (ctc_core.h, shared with the CUDA kernel); and the backward scaling of
 * the gradient made in the forward pass. */
#include "cpu_kernels.h"
#include "cpu_par.h"

int lmx_cpu_ctc(const lmx_ctc_args *a, int64_t *bad_pos, double *bad_val) {
  int64_t first = a->N, fpos = 0;
  int frc = LMX_CTC_OK;
  double fval = 0;
  int par = a->N > 1 && a->N * a->T * a->C * (2 * a->L + 1) >= LMX_OMP_MIN;
#pragma omp parallel for schedule(dynamic) if (par)
  for (int64_t n = 0; n < a->N; n++) {
    int64_t pos = 0;
    double val = 0;
    int rc = lmx_ctc_seq(a, n, &pos, &val);
    if (rc != LMX_CTC_OK) {
#pragma omp critical(lmx_ctc_bad)
      if (n < first) first = n, frc = rc, fpos = pos, fval = val;
    }
  }
  *bad_pos = fpos;
  *bad_val = fval;
  return frc;
}

int lmx_cpu_ctc_bwd(int dt, int64_t T, int64_t N, int64_t C, const void *og, const void *grad,
                    void *gx, int acc) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  LMX_PAR_FOR_W(T * N, C, tn, {
    double h = lmx_ctc_ld(og, dt, tn % N);
    for (int64_t c = 0; c < C; c++) {
      int64_t q = tn * C + c;
      double v = h * lmx_ctc_ld(grad, dt, q);
      lmx_ctc_st(gx, dt, q, acc ? lmx_ctc_ld(gx, dt, q) + v : v);
    }
  });
  return 0;
}
