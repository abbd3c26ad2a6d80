/* test_cuda_runtime.c — the GPU runtime (src/device/cuda*.c) through the GPU device
 * table, in builds and on machines with a GPU context: the simulator build
 * (-DLUAMX_CUDA=SIM) and a real GPU. Elsewhere (CPU builds, no driver) it says so and
 * passes; tests/fake_cuda/test_cuda_fake.c covers the same runtime over a host fake
 * there. The checks are tests/cuda_runtime_cases.h. Prints "N passed, N failed". */
#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "device/device.h"
#include "luamx.h"

#include "check.h"
#define HAS(text) (strstr(lmx_errmsg(), (text)) != NULL)

static const lmx_device_ops *G;
#define CASES_PENDING(dev) (-1)
#include "cuda_runtime_cases.h"

int main(void) {
  int n = lmx_num_gpus();
  if (n == 0 || lmx_device_lookup(LMX_GPU, 0, &G) != LMX_OK) {
    printf("no GPU context in this build or on this machine: GPU runtime checks skipped\n");
    return 0;
  }
  test_copies(n);
  test_allocator();
  test_oom();
  return check_summary();
}
