/* ctc_glue.h — what the CPU and the CUDA glue of CTCLoss share (src/ops/ctc_glue.c):
 * the checks of the tensors a call gets, the kernel arguments, and the messages for a bad
 * length or label that a kernel found. */
#ifndef LMX_OPS_CTC_GLUE_H
#define LMX_OPS_CTC_GLUE_H

#include <stddef.h>

#include "../../kernels/cpu/ctc_core.h"
#include "ctc_plan.h"

/* Checks the forward call's tensors (data float32/float64 per data_ok; labels and
 * lengths float32, float64, int32 or int64; the outputs like data) and fills *a (ws from
 * c->workspace, checked). grad_out NULL: no gradient wanted. */
int lmx_ctc_setup(const lmx_op_ctx *c, const lmx_tensor *in, int nin, const lmx_tensor *loss,
                  const lmx_tensor *grad_out, lmx_ctc_args *a, lmx_ctc_plan *p);
/* the workspace bytes of a forward call with these input shapes */
size_t lmx_ctc_ws_bytes(const lmx_op_ctx *c, const lmx_shape *in, int nin);
/* Fails with the message for what lmx_ctc_seq found (kind LMX_CTC_BAD_*). */
int lmx_ctc_fail_bad(const lmx_op_ctx *c, const lmx_ctc_plan *p, int kind, long long pos,
                     double val);
/* The range to give the device's raise word: T, L, C (20 bits each, enough for any
 * message) and the blank's side, packed. */
int64_t lmx_ctc_bad_range(const lmx_op_ctx *c, const lmx_ctc_plan *p);
/* The same words for the device's raise word (pos = kind · 2^40 + position). */
void lmx_ctc_bad_text(char *buf, size_t cap, long long pos, long long value, int64_t range);

#endif
