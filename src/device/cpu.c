/* cpu.c — the CPU device table. Memory comes from the engine allocator (counted,
 * fault-injectable, 64-byte aligned); copies are memcpy; sync is a no-op because CPU
 * work is done when the call returns. Several CPU ids (cpu(0), cpu(1), ...) share the
 * host memory; they differ in which thread runs their work (executor issue). */
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../luamx.h"
#include "device.h"

static int cpu_count(void) { return LMX_MAX_CPU_ID + 1; }

static int cpu_alloc(int dev_id, size_t bytes, void **out) {
  (void)dev_id;
  void *p = lmx_alloc(bytes ? bytes : 1);
  if (!p) return lmx_fail_nomem("array storage on cpu", bytes);
  *out = p;
  return LMX_OK;
}

static void cpu_release(int dev_id, void *p) {
  (void)dev_id;
  lmx_free(p);
}

static int cpu_zero(int dev_id, void *p, size_t bytes) {
  (void)dev_id;
  memset(p, 0, bytes);
  return LMX_OK;
}

static int cpu_copy(int dev_id, void *dst, const void *src, size_t bytes, int dir) {
  (void)dev_id;
  (void)dir;
  if (dst != src) memmove(dst, src, bytes);
  return LMX_OK;
}

static int cpu_sync(int dev_id) {
  (void)dev_id;
  return LMX_OK;
}

const lmx_device_ops lmx_cpu_device = {
    .name = "cpu",
    .count = cpu_count,
    .alloc = cpu_alloc,
    .release = cpu_release,
    .zero = cpu_zero,
    .copy = cpu_copy,
    .sync = cpu_sync,
};
