/* cuda_ops.h — the CUDA backend's operator glue: naming, conventions, helpers.
 *
 * Compiled only when LUAMX_WITH_CUDA (the real CUDA build and the simulator build).
 * Mirrors src/ops/cpu/cpu_ops.h: the CUDA kernels of an operator `id` are
 * `lmx_cuda_fwd_<id>`, `lmx_cuda_bwd_<id>` and, when it needs scratch memory,
 * `lmx_cuda_ws_<id>`; they are declared here for every operator of ops.def, defined in
 * src/ops/cuda/<family>.c (the family split of src/ops/cpu), and listed once in
 * src/ops/cuda/cuda_table.c:
 *
 *   [LMX_OPID_FullyConnected] = {FWD(FullyConnected), BWD(FullyConnected)},
 *
 * Nothing else in the engine changes when an op gains a CUDA kernel: bind, the
 * executor's steps and the imperative path find it through lmx_op_kernel (kernel.h).
 *
 * Conventions for a glue function (the calling convention itself is cpu_ops.h's):
 *  - Read the typed parameters: `const lmx_fc_param *p = c->param;` (op_params.h).
 *  - Check what a kernel could crash on with the device-neutral checks of ../glue.h
 *    (lmx_glue_check_size, lmx_glue_check_like, lmx_glue_check_ws, ...); tensors' data
 *    are device pointers of gpu(c->dev_id): never dereference them on the host.
 *  - Launch on the call's stream: `lmx_cu_<name>((lmx_cu_stream)c->stream, ...)`
 *    (kernels/cuda/cuda_kernels.h). Never synchronise, never allocate: temporaries come
 *    from c->workspace (on the device), sized by lmx_cuda_ws_<id>.
 *  - A non-zero launcher return becomes lmx_cuda_fail(c, rc, "<kernel name>"): -1 is an
 *    unsupported dtype/op (LMX_ERR_DTYPE), anything else a CUDA error code
 *    (LMX_ERR_DEVICE), both naming the op, the node, the kernel and the device.
 *  - Where CPU and CUDA glue compute the same dims from shapes and parameters, put that
 *    computation in one plain function in src/ops shared by both, not in two copies.
 */
#ifndef LMX_OPS_CUDA_OPS_H
#define LMX_OPS_CUDA_OPS_H

#include "../glue.h"
#include "../kernel.h"
#include "../op.h"
#include "../op_params.h"

#define LMX_CUDA_DECL(id)                                                                    \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                        const int *req, const lmx_tensor *aux);                              \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *out_grad,                     \
                        const lmx_tensor *in, const lmx_tensor *out,                         \
                        const lmx_tensor *in_grad, const int *req, const lmx_tensor *aux);   \
  size_t lmx_cuda_ws_##id(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out);
#define LMX_OP(id) LMX_CUDA_DECL(id)
#include "../ops.def"

/* Turns a launcher's non-zero return into a status and a message:
 * "<Op> '<node>': <kernel> on gpu(<id>): unsupported dtype or op" (rc -1, LMX_ERR_DTYPE)
 * or "... : CUDA error <rc>" (LMX_ERR_DEVICE). Returns LMX_OK for rc 0. */
int lmx_cuda_fail(const lmx_op_ctx *c, int rc, const char *kernel);

#endif
