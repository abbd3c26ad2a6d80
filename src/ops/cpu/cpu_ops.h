/* cpu_ops.h — the CPU backend's operator glue: naming, calling convention, helpers.
 *
 * The CPU kernels of an operator `id` are `lmx_cpu_fwd_<id>` (an lmx_forward_fn) and,
 * when it has a gradient, `lmx_cpu_bwd_<id>` (an lmx_backward_fn), plus
 * `lmx_cpu_ws_<id>` (an lmx_workspace_fn) when it needs scratch memory. They are
 * declared here for every operator of ops.def (a declaration nobody defines costs
 * nothing), defined in the glue files src/ops/cpu/<family>.c, and listed once in the
 * CPU kernel table, src/ops/cpu/cpu_table.c (kernel.h explains the tables). The glue
 * reads the op's typed parameters (`const lmx_fc_param *p = c->param;`, op_params.h),
 * checks everything a kernel could crash on (dtypes, sizes, index ranges) and calls
 * kernels/cpu. Only src/ops/cpu and src/device/cpu.c call kernels/cpu.
 *
 * Calling convention (what the executor and the imperative path pass; the same for
 * every backend, see also src/ops/cuda/cuda_ops.h):
 *  - forward: in[num_inputs], out[num_outputs] (hidden outputs included), req[num_outputs],
 *    aux[num_aux]. Tensors are dense and contiguous in C order, on the context's device.
 *  - backward: out_grad[num_outputs] (hidden outputs get a tensor with data NULL), in and
 *    out as in forward, in_grad[num_inputs], req[num_inputs] (one per input gradient).
 *    Tensors that backward_needs does not ask for may have data NULL; the glue never
 *    reads them. A loss op (LMX_OPF_LOSS) may get out_grad data NULL.
 *  - req: LMX_REQ_NULL leaves the buffer untouched, WRITE/INPLACE overwrite (an output
 *    may share memory with the input named in the descriptor's inplace pairs), ADD
 *    accumulates into the existing values. Forward outputs with ADD are supported by the
 *    elementwise families; elsewhere ADD on a forward output fails with
 *    LMX_ERR_UNSUPPORTED (the executor never asks for it).
 *  - Kernels never allocate: temporaries come from c->workspace, sized by the table's
 *    workspace function (lmx_cpu_ws_<id>), which the glue checks.
 *  - c->dev_type / dev_id / dev / stream say where the call runs (the CPU: stream NULL).
 *  - Errors: LMX_ERR_DTYPE / LMX_ERR_SHAPE / LMX_ERR_ARG with "<Op> '<node>': ..." naming
 *    the argument, the expected and the actual value. Never abort.
 */
#ifndef LMX_OPS_CPU_OPS_H
#define LMX_OPS_CPU_OPS_H

#include "../glue.h"
#include "../kernel.h"
#include "../op.h"
#include "../op_params.h"
#include "../softmax_plan.h"

/* ---- the kernels (defined in the glue files, listed in cpu_table.c) ------------------ */

#define LMX_CPU_DECL(id)                                                                     \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,     \
                       const int *req, const lmx_tensor *aux);                               \
  int lmx_cpu_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *out_grad, const lmx_tensor *in, \
                       const lmx_tensor *out, const lmx_tensor *in_grad, const int *req,     \
                       const lmx_tensor *aux);                                               \
  size_t lmx_cpu_ws_##id(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out);
#define LMX_OP(id) LMX_CPU_DECL(id)
#include "../ops.def"

/* ---- CPU-only helpers (cpu_common.c); the device-neutral checks are in ../glue.h ---- */

/* Fails unless t is float32/float64 (the kernels' dtypes); `what` names the argument. */
int lmx_cpu_check_float(const lmx_op_ctx *c, const lmx_tensor *t, const char *what);
/* Standard failures. */
int lmx_cpu_fail_dtype(const lmx_op_ctx *c, const lmx_tensor *t, const char *what);
/* The same for the elementwise ops, which also take float16 and bfloat16. */
int lmx_cpu_fail_dtype_ew(const lmx_op_ctx *c, const lmx_tensor *t, const char *what);
int lmx_cpu_fail_req_add(const lmx_op_ctx *c, const char *what);
/* ---- lowp_stage.c: float16/bfloat16 calls of float32 glue through float32 twins ---- */
int lmx_cpu_is_lowp(int dt); /* float16 or bfloat16 */
/* Fails unless t is float32/float64/float16/bfloat16. */
int lmx_cpu_check_float_lowp(const lmx_op_ctx *c, const lmx_tensor *t, const char *what);
/* Workspace of a staged op: inner's bytes (NULL: none) plus float32 twins of the
 * low-precision tensors named by c->dtypes (none when c->dtypes is NULL). */
size_t lmx_cpu_lowp_ws(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out,
                       lmx_workspace_fn inner);
/* Runs the float32 glue f on float32 twins of the call's tensors, rounding outputs once. */
int lmx_cpu_lowp_fwd(const lmx_op_ctx *c, lmx_forward_fn f, lmx_workspace_fn inner,
                     const lmx_tensor *in, const lmx_tensor *out, const int *req,
                     const lmx_tensor *aux);
int lmx_cpu_lowp_bwd(const lmx_op_ctx *c, lmx_backward_fn f, lmx_workspace_fn inner,
                     const lmx_tensor *og, const lmx_tensor *in, const lmx_tensor *out,
                     const lmx_tensor *ig, const int *req, const lmx_tensor *aux);

/* nn_fc_lowp.c: FullyConnected in float16/bfloat16 (AVX512_BF16 or staging);
 * which path bfloat16 takes ("avx512_bf16" or "float32"); forcing the fallback. */
int lmx_cpu_fc_lowp_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req, const lmx_tensor *aux);
int lmx_cpu_fc_lowp_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                        const lmx_tensor *aux);
const char *lmx_cpu_fc_bf16_path(void);
void lmx_cpu_fc_bf16_force_fallback(int on);

/* SoftmaxOutput's gradient divisor: its normalization's (null 1, batch outer), or for
 * 'valid' the count of labels other than ignore_label, at least 1 (loss.c). */
double lmx_cpu_smo_valid_cnt(const lmx_op_ctx *c, const lmx_tensor *label,
                             const lmx_smo_plan *d);

/* The backward steps of FullyConnected and of the SoftmaxOutput reading its output, in
 * one (fc_smo.c): 1 when it ran, 0 when these tensors or parameters are not the fused
 * kernel's case (run the two steps instead: their kernels report any error). The
 * tensors are each step's, as the executor passes them to the backward kernels. */
int lmx_cpu_fc_smo_backward(const lmx_op_ctx *sc, const lmx_tensor *s_in,
                            const lmx_tensor *s_out, const lmx_tensor *s_ig, const int *s_req,
                            const lmx_op_ctx *fc, const lmx_tensor *f_og,
                            const lmx_tensor *f_in, const lmx_tensor *f_ig, const int *f_req);

/* 1 when the storage of a and b overlaps (the memory plan may share storage between
 * entries; fused kernels decline such arrays). cpu_common.c. */
int lmx_cpu_tensors_overlap(const lmx_tensor *a, const lmx_tensor *b);

/* Activation's act_type as the elementwise op (LMX_UN_*), -1 for none (activation.c). */
int lmx_cpu_act_code(const lmx_op_ctx *c);

/* The forward steps of FullyConnected and of the Activation reading its output, in one
 * (nn_fc.c): Activation's output z = f(x · wᵀ + b) written directly, FC's own output never
 * written. 1 when it ran with f in oneDNN's epilogue, 2 when it ran as the product then f
 * over z, 0 when these tensors are not the fused kernel's case (run the two steps
 * instead). fc/f_in/f_req and ac/a_out/a_req are each step's. */
int lmx_cpu_fc_act_forward(const lmx_op_ctx *fc, const lmx_tensor *f_in, const int *f_req,
                           const lmx_op_ctx *ac, const lmx_tensor *a_out, const int *a_req);

/* Convolution's forward with a per-channel epilogue ep that holds the bias (conv.c; the
 * output request is write): ep NULL is the plain forward. An LMX_* status. */
struct lmx_cpu_ep_s;
int lmx_cpu_conv_fwd_ep(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const struct lmx_cpu_ep_s *ep);

/* The forward steps of Convolution, BatchNorm (may be absent: bn NULL; else with its
 * inputs and aux) and Activation or clip (act NULL when absent) in one (conv_chain.c): z,
 * the last step's output (req its request), written directly. 1 when it ran, 0 when these
 * tensors or modes are not the fused kernel's case (nothing written: run the steps). */
int lmx_cpu_conv_chain_forward(const lmx_op_ctx *cv, const lmx_tensor *cv_in,
                               const lmx_op_ctx *bn, const lmx_tensor *bn_in,
                               const lmx_tensor *bn_aux, const lmx_op_ctx *act,
                               const lmx_tensor *z, const int *req);

/* The Activation (relu, sigmoid, tanh, softrelu) or clip step ctx act as an epilogue's
 * function (ep->act, lo, hi; act NULL: none): 1, or 0 when it is not an epilogue's
 * (conv_chain.c). */
int lmx_cpu_ep_act(const lmx_op_ctx *act, struct lmx_cpu_ep_s *ep);

/* The forward steps of BatchNorm and of the Activation or clip reading its output in one
 * (norm.c): z, the activation's output (zreq its request), written directly; BatchNorm's
 * own output never written (its backward does not read it). in/out/req/aux are
 * BatchNorm's. 1 when it ran, 0 when these tensors are not the fused kernel's case
 * (nothing written: run the two steps). */
int lmx_cpu_bn_act_forward(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux, const lmx_op_ctx *act,
                           const lmx_tensor *z, const int *zreq);

/* Writes zeros into t unless req is NULL (ADD: nothing to add). */
void lmx_cpu_zero_grad(const lmx_tensor *t, int req);

#endif
