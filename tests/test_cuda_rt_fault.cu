// test_cuda_rt_fault.cu — asynchronous kernel faults through the GPU runtime, in the
// simulator build (-DLUAMX_CUDA=SIM; tests/*.cu are built only there). A kernel launched
// on a device's stream after lmx_sim_inject_fault fails asynchronously: the launch
// succeeds and the next synchronisation reports the fault. Checks that the runtime
// reports it at sync() / a device-to-host copy / wait_to_read, naming the operator and
// node noted last (lmx_device_note_op), once; that the device is usable afterwards (the
// simulator clears the fault once reported; hardware would lose the context, which
// tests/fake_cuda/test_cuda_fake.c checks with a sticky fake); and that a fault on gpu(1)
// is not reported by gpu(0). Exit status 0 when every check passes.
#include <stdio.h>
#include <string.h>

#include "../kernels/cuda/cuda_common.cuh"
#include "lmx_sim.h"

extern "C" {
#include "core/status.h"
#include "device/device.h"
#include "luamx.h"
}

static int g_fail, g_checks;
#define CHECK(cond)                                                              \
  do {                                                                           \
    g_checks++;                                                                  \
    if (!(cond)) {                                                               \
      g_fail++;                                                                  \
      printf("FAIL %s:%d: %s (message: %s)\n", __FILE__, __LINE__, #cond, lmx_errmsg()); \
    }                                                                            \
  } while (0)
#define HAS(text) (strstr(lmx_errmsg(), (text)) != NULL)

__global__ void set_ones(float *p) { p[threadIdx.x] = 1.0f; }

static const lmx_device_ops *G;

static int launch(int dev, void *p) {
  LMX_LAUNCH(set_ones, 1, 32, 0, (lmx_cu_stream)G->stream(dev), (float *)p);
  return lmx_cu_last_error();
}

int main(void) {
  if (lmx_device_lookup(LMX_GPU, 0, &G) != LMX_OK || G->count() < 2) {
    printf("needs two simulated GPUs: skipped\n");
    return 0;
  }
  void *p = NULL, *q = NULL;
  CHECK(G->alloc(0, 32 * sizeof(float), &p) == LMX_OK);
  CHECK(G->zero(0, p, 32 * sizeof(float)) == LMX_OK);

  // Reported at the next sync, naming the op and node that ran last; once.
  G->note_op(0, "FullyConnected", "fc1");
  lmx_sim_inject_fault(0, cudaErrorIllegalAddress);
  CHECK(launch(0, p) == 0);
  CHECK(G->sync(0) == LMX_ERR_DEVICE);
  CHECK(HAS("gpu(0): asynchronous CUDA fault: an illegal memory access was encountered "
            "(last operator: FullyConnected 'fc1'"));
  CHECK(!HAS("unusable"));
  CHECK(G->sync(0) == LMX_OK);

  // The device goes on: a kernel runs and its result comes back.
  float h[32];
  CHECK(launch(0, p) == 0);
  CHECK(G->copy(0, h, p, sizeof h, LMX_COPY_D2H) == LMX_OK && h[0] == 1.0f && h[31] == 1.0f);

  // Reported by the wait inside a device-to-host copy; an imperative call has no node.
  G->note_op(0, "Activation", NULL);
  lmx_sim_inject_fault(0, cudaErrorIllegalAddress);
  CHECK(launch(0, p) == 0);
  CHECK(G->copy(0, h, p, sizeof h, LMX_COPY_D2H) == LMX_ERR_DEVICE);
  CHECK(HAS("last operator: Activation (imperative call)"));
  CHECK(G->copy(0, h, p, sizeof h, LMX_COPY_D2H) == LMX_OK);

  // Through the public API: wait_to_read on an array of the device (it waits for the
  // device's whole stream, so the failing kernel may write any memory there), then waitall.
  lmx_ndarray *a = NULL;
  int64_t dims[1] = {32};
  CHECK(lmx_ndarray_new(dims, 1, LMX_FLOAT32, LMX_GPU, 0, &a) == LMX_OK);
  G->note_op(0, "Convolution", "conv2");
  lmx_sim_inject_fault(0, cudaErrorLaunchFailure);
  CHECK(launch(0, p) == 0);
  CHECK(lmx_ndarray_wait_to_read(a) == LMX_ERR_DEVICE);
  CHECK(HAS("unspecified launch failure") || HAS("launch failure"));
  CHECK(HAS("last operator: Convolution 'conv2'"));
  CHECK(lmx_waitall() == LMX_OK);
  lmx_ndarray_free(a);

  // A fault on gpu(1) is gpu(1)'s: gpu(0) syncs cleanly, gpu(1) reports its own op.
  CHECK(G->alloc(1, 32 * sizeof(float), &q) == LMX_OK);
  G->note_op(1, "Pooling", "pool1");
  lmx_sim_inject_fault(1, cudaErrorIllegalAddress);
  CHECK(launch(1, q) == 0);
  CHECK(G->sync(0) == LMX_OK);
  CHECK(lmx_waitall() == LMX_ERR_DEVICE && HAS("gpu(1): asynchronous CUDA fault") &&
        HAS("Pooling 'pool1'"));
  CHECK(lmx_waitall() == LMX_OK);

  G->release(0, p);
  G->release(1, q);
  printf("%d checks, %d failed\n", g_checks, g_fail);
  return g_fail ? 1 : 0;
}
