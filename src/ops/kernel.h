/* kernel.h — the kernel tables: one per backend, indexed by operator.
 *
 * The descriptor (op.h) knows no device. What runs an operator on a device is an
 * lmx_kernel {forward, backward, workspace} in that backend's table, indexed by the
 * operator's id (LMX_OPID_<id>, generated from ops.def in registry order, so
 * lmx_op_index(op) == LMX_OPID_<id>):
 *
 *   src/ops/cpu/cpu_table.c    lmx_cpu_kernels[]   glue in src/ops/cpu/<family>.c
 *   src/ops/cuda/cuda_table.c  lmx_cuda_kernels[]  glue in src/ops/cuda/<family>.c
 *                                                  (compiled with LUAMX_WITH_CUDA only)
 *
 * Each table is one designated-initializer line per operator the backend implements:
 *
 *   [LMX_OPID_FullyConnected] = {lmx_cpu_fwd_FullyConnected, lmx_cpu_bwd_FullyConnected},
 *
 * Rows not written are {NULL, NULL, NULL}: "no kernel for <Op> on <device>". A NULL
 * backward with a forward means "forward only on this backend" (bind refuses to build
 * a backward pass through the op there). workspace is NULL when the op needs no
 * scratch memory; otherwise it returns the bytes one call needs for the given shapes,
 * and the engine hands that much (on the same device) to the kernel in c->workspace.
 *
 * Nothing outside src/ops reads a table directly: bind, the executor's steps and the
 * imperative path ask lmx_op_kernel() once (at bind / per call) and keep the function
 * pointers, so the step loop pays nothing for the indirection.
 *
 * Adding an operator: its descriptor (src/ops/<family>.c), its ops.def line, its param
 * struct (src/ops/op_params.h) when it has parameters, and per backend one table line
 * plus the glue. Adding a backend: a table file, a glue directory, one case in
 * lmx_op_kernel (kernel.c) and a device table (src/device). See docs/backends.md.
 */
#ifndef LMX_OPS_KERNEL_H
#define LMX_OPS_KERNEL_H

#include "op.h"

/* Operator ids: LMX_OPID_FullyConnected, LMX_OPID__plus_scalar, ... (ops.def order). */
typedef enum {
#define LMX_OP(id) LMX_OPID_##id,
#include "ops.def"
  LMX_NUM_OPS
} lmx_opid;

/* Scratch bytes one call of the op needs for these input and output shapes (and the
 * dtypes in c->dtypes, when not NULL: inputs then outputs). */
typedef size_t (*lmx_workspace_fn)(const lmx_op_ctx *c, const lmx_shape *in,
                                   const lmx_shape *out);

typedef struct lmx_kernel {
  lmx_forward_fn forward;     /* NULL: the backend does not run this op */
  lmx_backward_fn backward;   /* NULL: no gradient on this backend */
  lmx_workspace_fn workspace; /* NULL: no scratch memory */
} lmx_kernel;

/* The backends' tables (LMX_NUM_OPS rows each). */
extern const lmx_kernel lmx_cpu_kernels[LMX_NUM_OPS];
#ifdef LUAMX_WITH_CUDA
extern const lmx_kernel lmx_cuda_kernels[LMX_NUM_OPS];
#endif

/* The row of operator `op` for device type dev_type (LMX_CPU, LMX_GPU); NULL when the
 * backend is not built in, the op is not registered, or the backend has no forward
 * kernel for it. Never sets an error message. */
const lmx_kernel *lmx_op_kernel(const lmx_op *op, int dev_type);
/* The same by operator id (0..LMX_NUM_OPS-1). */
const lmx_kernel *lmx_op_kernel_at(int opid, int dev_type);

/* "Does backend X support op Y": 1 when device type dev_type has a forward kernel for
 * op (and a backward one too when `backward` is non-zero), else 0. */
int lmx_op_supported(const lmx_op *op, int dev_type, int backward);

/* The same as a status for bind and the imperative path: LMX_OK, or
 * LMX_ERR_UNSUPPORTED with "no kernel for <Op> on gpu(0)" (backward: "no backward
 * kernel for <Op> on gpu(0)"), with " (node '<node>')" after the op when node is not
 * NULL. */
int lmx_op_require_kernel(const lmx_op *op, int dev_type, int dev_id, const char *node,
                          int backward);

#endif
