/* cu_ctc.h — CUDA launchers of CTCLoss (issue 14, ops14g; kernels/cuda/ctc.cu): one thread
 * per sequence runs lmx_ctc_seq (kernels/cpu/ctc_core.h, the CPU's own code) on device
 * memory, a->ws holding N · lmx_ctc_ws_seq doubles of device scratch; a bad length or
 * label is reported to `bad` with pos = kind · 2^40 + position (lmx_ctc_bad_decode) and
 * the value rounded toward zero. Simple and exact rather than fast: the frames of a
 * sequence run one after another in its thread. Then the backward scaling, one thread
 * per element. float32 and float64; -1 for another dtype, else 0 or a cudaError_t. */
#ifndef LMX_KERNELS_CU_CTC_H
#define LMX_KERNELS_CU_CTC_H

#include "../cpu/ctc_core.h"
#include "cu_base.h"

LMX_CU_BEGIN

int lmx_cu_ctc(lmx_cu_stream s, const lmx_ctc_args *a, lmx_cu_raise bad);
int lmx_cu_ctc_bwd(lmx_cu_stream s, int dt, int64_t T, int64_t N, int64_t C, const void *og,
                   const void *grad, void *gx, int acc);

LMX_CU_END

#endif
