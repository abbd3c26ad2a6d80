/* test_cuda_fake.c — the GPU runtime (src/device/cuda.c, cuda_state.c, cuda_copy.c)
 * over a host fake of the CUDA runtime (fake_cudart.c), in builds without CUDA.
 *
 * The fake runs copies only when someone waits, so these checks fail if the runtime
 * returns from a device->host copy before the bytes arrived, reuses a staging buffer
 * whose copy has not run, or orders a peer copy before the work that wrote its source.
 * Also: the caching allocator under the device table (reuse, out of memory with retry,
 * message, recovery), asynchronous faults naming the last operator (device usable after
 * a plain fault, refused with the original fault after a sticky one), per-device library
 * handles. Prints "N passed, N failed"; exits non-zero on failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "cuda_runtime_api.h"
#include "device/cuda_state.h"
#include "device/device.h"
#include "luamx.h"

#include "../check.h"
#define HAS(text) (strstr(lmx_errmsg(), (text)) != NULL)

static const lmx_device_ops *G = &lmx_cuda_device;
#define CASES_PENDING(dev) fake_cuda_pending(dev)
#include "cuda_runtime_cases.h"

static void test_count(void) {
  CHECK(G->count() == 2);
  lmx_cuda_dev *d;
  CHECK(lmx_cuda_dev_get(2, &d) == LMX_ERR_DEVICE && HAS("gpu(2) requested but 2 GPUs are"));
  CHECK(lmx_cuda_dev_peek(0) == NULL); /* nothing created before first use */
  CHECK(G->sync(0) == LMX_OK && lmx_cuda_dev_peek(0) == NULL);
  CHECK(G->stream(0) != NULL && lmx_cuda_dev_peek(0) != NULL);
  CHECK(G->stream(0) == G->stream(0) && G->stream(1) != G->stream(0));
}

static int g_made;
static int make_handle(int dev_id, void *stream, void **h) {
  g_made++;
  if (!stream) return lmx_fail(LMX_ERR_INTERNAL, "no stream");
  if (dev_id == 1) return lmx_fail(LMX_ERR_NOTFOUND, "cuBLAS could not be created here");
  *h = &g_made;
  return LMX_OK;
}

static void test_lib_handles(void) {
  void *h = NULL, *h2 = NULL;
  CHECK(lmx_cuda_lib_handle(0, LMX_LIB_CUBLAS, make_handle, &h) == LMX_OK && h == &g_made);
  CHECK(lmx_cuda_lib_handle(0, LMX_LIB_CUBLAS, make_handle, &h2) == LMX_OK && h2 == h);
  CHECK(g_made == 1);
  CHECK(lmx_cuda_lib_handle(1, LMX_LIB_CUBLAS, make_handle, &h) == LMX_ERR_NOTFOUND);
  CHECK(HAS("gpu(1): creating the cuBLAS handle: cuBLAS could not be created here"));
  CHECK(lmx_cuda_lib_handle(0, 42, make_handle, &h) == LMX_ERR_ARG);
}

static void test_faults(void) {
  /* A plain fault: reported once at the next sync, naming the last op, then the device
   * goes on. */
  G->note_op(0, "FullyConnected", "fc1");
  fake_cuda_inject_fault(0, cudaErrorIllegalAddress, 0);
  CHECK(G->sync(0) == LMX_ERR_DEVICE);
  CHECK(HAS("gpu(0): asynchronous CUDA fault: an illegal memory access was encountered "
            "(last operator: FullyConnected 'fc1'"));
  CHECK(!HAS("unusable"));
  CHECK(G->sync(0) == LMX_OK);
  round_trip(0, 5000);
  /* Reported by the wait inside a device->host copy, imperative op (no node). */
  G->note_op(0, "broadcast_add", NULL);
  fake_cuda_inject_fault(0, cudaErrorIllegalAddress, 0);
  unsigned char buf[64];
  void *g = NULL;
  CHECK(G->alloc(0, 64, &g) == LMX_OK);
  CHECK(G->copy(0, buf, g, 64, LMX_COPY_D2H) == LMX_ERR_DEVICE);
  CHECK(HAS("last operator: broadcast_add (imperative call)") && HAS("staging"));
  CHECK(G->copy(0, buf, g, 64, LMX_COPY_D2H) == LMX_OK);
  G->release(0, g);
  /* A long node name is cut, not overflowed. */
  char longname[300];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = 0;
  G->note_op(0, "Convolution", longname);
  fake_cuda_inject_fault(0, cudaErrorIllegalAddress, 0);
  CHECK(G->sync(0) == LMX_ERR_DEVICE && HAS("Convolution 'nnnnnnnn"));
  CHECK(G->sync(0) == LMX_OK);
  /* A sticky fault on gpu(1): the context is lost; every later use fails with the
   * original fault; gpu(0) is unaffected. */
  G->note_op(1, "Convolution", "conv2");
  fake_cuda_inject_fault(1, cudaErrorIllegalAddress, 1);
  CHECK(G->sync(1) == LMX_ERR_DEVICE);
  CHECK(HAS("last operator: Convolution 'conv2'") && HAS("gpu(1) is unusable now"));
  void *p = NULL;
  CHECK(G->alloc(1, 100, &p) == LMX_ERR_DEVICE);
  CHECK(HAS("gpu(1) is unusable after an earlier fault") && HAS("conv2") && HAS("restart"));
  CHECK(G->sync(1) == LMX_ERR_DEVICE && HAS("restart the process"));
  round_trip(0, 3000);
}

int main(void) {
  fake_cuda_setup(2, 64 << 20);
  test_count();
  test_copies(2);
  test_allocator();
  test_oom();
  test_lib_handles();
  test_faults();
  return check_summary();
}
