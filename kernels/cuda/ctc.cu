/* ctc.cu — CUDA kernels of CTCLoss (cu_ctc.h): the CPU's per-sequence code
 * (kernels/cpu/ctc_core.h) in one thread per sequence, and the backward scaling. */
#include "cuda_common.cuh"
#include "cu_ctc.h"
#include "cu_util.cuh"

__global__ void k_ctc(lmx_ctc_args a, lmx_cu_raise bad) {
  LMX_CU_GRID_LOOP(n, a.N) {
    int64_t pos = 0;
    double val = 0;
    int rc = lmx_ctc_seq(&a, n, &pos, &val);
    if (rc != LMX_CTC_OK) lmx_cu_raise_set(bad, ((int64_t)rc << 40) + pos, (int64_t)val);
  }
}

__global__ void k_ctc_bwd(int dt, int64_t total, int64_t N, int64_t C, const void *og,
                          const void *grad, void *gx, int acc) {
  LMX_CU_GRID_LOOP(q, total) {
    double v = lmx_ctc_ld(og, dt, (q / C) % N) * lmx_ctc_ld(grad, dt, q);
    lmx_ctc_st(gx, dt, q, acc ? lmx_ctc_ld(gx, dt, q) + v : v);
  }
}

int lmx_cu_ctc(lmx_cu_stream s, const lmx_ctc_args *a, lmx_cu_raise bad) {
  if (a->dt != LMX_FLOAT32 && a->dt != LMX_FLOAT64) return -1;
  if (a->N == 0) return 0;
  LMX_LAUNCH(k_ctc, lmx_cu_blocks(a->N), LMX_CU_THREADS, 0, s, *a, bad);
  return lmx_cu_last_error();
}

int lmx_cu_ctc_bwd(lmx_cu_stream s, int dt, int64_t T, int64_t N, int64_t C, const void *og,
                   const void *grad, void *gx, int acc) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  int64_t total = T * N * C;
  if (total == 0) return 0;
  LMX_LAUNCH(k_ctc_bwd, lmx_cu_blocks(total), LMX_CU_THREADS, 0, s, dt, total, N, C, og, grad,
             gx, acc);
  return lmx_cu_last_error();
}
