/* device.c — device lookup and the public context queries. */
#include "device.h"

#include "../core/status.h"
#include "../luamx.h"

int lmx_device_lookup(int dev_type, int dev_id, const lmx_device_ops **out) {
  const lmx_device_ops *ops = NULL;
  if (dev_type == LMX_CPU) ops = &lmx_cpu_device;
#ifdef LUAMX_WITH_CUDA
  if (dev_type == LMX_GPU) ops = &lmx_cuda_device;
#endif
  if (!ops && dev_type == LMX_GPU)
    return lmx_fail(LMX_ERR_DEVICE,
                    "context gpu(%d): this build of luamx has no CUDA support (0 GPUs)", dev_id);
  if (!ops)
    return lmx_fail(LMX_ERR_DEVICE, "unknown device type %d (expected 1 = cpu or 2 = gpu)",
                    dev_type);
  int n = ops->count();
  if (dev_id < 0 || dev_id >= n) {
    if (dev_type == LMX_GPU)
      return lmx_fail(LMX_ERR_DEVICE, "context gpu(%d) requested but %d GPU%s present", dev_id,
                      n, n == 1 ? " is" : "s are");
    return lmx_fail(LMX_ERR_DEVICE, "context cpu(%d): device id must be in 0..%d", dev_id, n - 1);
  }
  *out = ops;
  return LMX_OK;
}

int lmx_num_gpus(void) {
#ifdef LUAMX_WITH_CUDA
  return lmx_cuda_device.count();
#else
  return 0;
#endif
}

int lmx_context_check(int dev_type, int dev_id) {
  lmx_clear_error();
  const lmx_device_ops *ops;
  return lmx_device_lookup(dev_type, dev_id, &ops);
}
