/* kernel.c — choosing a backend's kernel table (see kernel.h).
 *
 * The one place that maps a device type to its kernel table: a new backend adds its
 * case here and nowhere else in the engine. Lookups happen at bind and once per
 * imperative call, never per step.
 */
#include "kernel.h"

#include <stdio.h>

#include "../core/status.h"
#include "../device/device.h"
#include "../luamx.h"

_Static_assert(sizeof(lmx_cpu_kernels) / sizeof(lmx_cpu_kernels[0]) == LMX_NUM_OPS,
               "one CPU kernel row per operator");

const lmx_kernel *lmx_op_kernel_at(int opid, int dev_type) {
  if (opid < 0 || opid >= LMX_NUM_OPS) return NULL;
  const lmx_kernel *k = NULL;
  if (dev_type == LMX_CPU) k = &lmx_cpu_kernels[opid];
#ifdef LUAMX_WITH_CUDA
  if (dev_type == LMX_GPU) k = &lmx_cuda_kernels[opid];
#endif
  return k && k->forward ? k : NULL;
}

const lmx_kernel *lmx_op_kernel(const lmx_op *op, int dev_type) {
  return op ? lmx_op_kernel_at(lmx_op_index(op), dev_type) : NULL;
}

int lmx_op_supported(const lmx_op *op, int dev_type, int backward) {
  const lmx_kernel *k = lmx_op_kernel(op, dev_type);
  return k && (!backward || k->backward);
}

int lmx_op_require_kernel(const lmx_op *op, int dev_type, int dev_id, const char *node,
                          int backward) {
  if (lmx_op_supported(op, dev_type, backward)) return LMX_OK;
  char where[160] = "";
  if (node && node[0]) snprintf(where, sizeof where, " (node '%s')", node);
  return lmx_fail(LMX_ERR_UNSUPPORTED, "no %skernel for %s%s on %s(%d)",
                  backward ? "backward " : "", op ? op->name : "(null operator)", where,
                  lmx_device_type_name(dev_type), dev_id);
}
