/* device.h — the per-device table: allocation, zeroing, copies, synchronisation.
 *
 * One table per device type (cpu.c; cuda.c when built with CUDA). Storage and copies
 * go through these entries so nothing above src/device knows how a device is driven.
 * Copies between two device types are done by the table of the non-CPU side.
 * CPU memory comes from the engine allocator, so it is counted and fault-injectable.
 */
#ifndef LMX_DEVICE_DEVICE_H
#define LMX_DEVICE_DEVICE_H

#include <stddef.h>

typedef struct lmx_device_ops {
  const char *name; /* "cpu", "gpu" */
  int (*count)(void); /* usable device ids: 0..count-1 (CPU: a large bound) */
  int (*alloc)(int dev_id, size_t bytes, void **out);
  void (*release)(int dev_id, void *p);
  int (*zero)(int dev_id, void *p, size_t bytes);
  /* copy bytes; dir: 0 device->device (same device type), 1 host->device, 2 device->host */
  int (*copy)(int dev_id, void *dst, const void *src, size_t bytes, int dir);
  int (*sync)(int dev_id);
} lmx_device_ops;

enum { LMX_COPY_D2D = 0, LMX_COPY_H2D = 1, LMX_COPY_D2H = 2 };
enum { LMX_MAX_CPU_ID = 255 };

/* Table for a device type, or NULL (and a message) when the type is unknown or was not
 * built in. Checks dev_id against count(); LMX_ERR_DEVICE messages name the context. */
int lmx_device_lookup(int dev_type, int dev_id, const lmx_device_ops **out);

extern const lmx_device_ops lmx_cpu_device;
#ifdef LUAMX_WITH_CUDA
extern const lmx_device_ops lmx_cuda_device;
#endif

#endif
