/* api_gpu.c — public GPU queries: memory figures and the allocator's cache.
 *
 * Device-neutral: the figures come from the GPU table's runtime hooks (memory,
 * empty_cache in device.h), so this file builds without CUDA and reports "no CUDA
 * support" through lmx_device_lookup there.
 */
#include "../core/status.h"
#include "../device/device.h"
#include "../luamx.h"
#include "api.h"

int lmx_gpu_memory_info(int dev_id, int64_t *figures, int n) {
  LMX_ENTER();
  LMX_NEED(figures, "lmx_gpu_memory_info", "figures");
  if (n < 1)
    return lmx_fail(LMX_ERR_ARG, "gpu_memory_info: room for %d figures given, expected at "
                    "least 1", n);
  const lmx_device_ops *d;
  LMX_TRY(lmx_device_lookup(LMX_GPU, dev_id, &d));
  if (!d->memory) return lmx_device_unsupported(d, dev_id, "gpu_memory_info");
  return d->memory(dev_id, figures, n);
}

int lmx_gpu_empty_cache(int dev_id, int64_t *out_bytes) {
  LMX_ENTER();
  const lmx_device_ops *d;
  LMX_TRY(lmx_device_lookup(LMX_GPU, dev_id, &d));
  size_t n = d->empty_cache ? d->empty_cache(dev_id) : 0;
  if (out_bytes) *out_bytes = (int64_t)n;
  return LMX_OK;
}
