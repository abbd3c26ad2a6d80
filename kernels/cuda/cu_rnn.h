/* cu_rnn.h — the fused RNN operator on the device (kernels/cpu/rnn.c): rnn_relu,
 * rnn_tanh, lstm, gru; multi-layer, bidirectional, inter-layer dropout masks; float32 and
 * float64. Same lmx_cpu_rnn description, packed parameter layout, reserve and workspace
 * layout and sizes as the CPU (lmx_cpu_rnn_param_size / _reserve / _ws give them), so the
 * glue is the CPU's with device buffers. Device pointers; return 0, a cudaError_t code,
 * -1 for another dtype, or a GEMM code of cu_gemm.h. */
#ifndef LMX_KERNELS_CU_RNN_H
#define LMX_KERNELS_CU_RNN_H

#include "cu_base.h"

LMX_CU_BEGIN
#include "../cpu/cpu_kernels.h" /* lmx_cpu_rnn, lmx_cpu_rnn_grad */

/* y[T,N,D·H], hy[L·D,N,H], cy (lstm) from x[T,N,In], packed w, h0/c0[L·D,N,H]; y, hy, cy
 * may be NULL. Fills the reserve rs (the dropout masks excepted: the caller fills them
 * first when r->drop). ws: lmx_cpu_rnn_ws(r) elements. */
int lmx_cu_rnn_fwd(lmx_cu_stream s, const lmx_cpu_rnn *r, const void *x, const void *w,
                   const void *h0, const void *c0, void *y, void *hy, void *cy, void *rs,
                   void *ws);
/* Accumulates the gradients of gr (device pointers) from the reserve forward left. */
int lmx_cu_rnn_bwd(lmx_cu_stream s, const lmx_cpu_rnn *r, const void *x, const void *w,
                   const void *h0, const void *c0, const void *rs, const lmx_cpu_rnn_grad *gr,
                   void *ws);

LMX_CU_END

#endif
