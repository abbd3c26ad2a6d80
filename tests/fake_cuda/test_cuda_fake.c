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

static int g_pass, g_fail;
#define CHECK(cond)                                                                       \
  do {                                                                                   \
    if (cond) g_pass++;                                                                  \
    else {                                                                               \
      g_fail++;                                                                          \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);           \
    }                                                                                    \
  } while (0)
#define HAS(text) (strstr(lmx_errmsg(), (text)) != NULL)

static const lmx_device_ops *G = &lmx_cuda_device;

static int64_t fig(int dev, int which) {
  int64_t f[LMX_GPUMEM_NUM_FIGURES];
  if (G->memory(dev, f, LMX_GPUMEM_NUM_FIGURES) != LMX_OK) return -1;
  return f[which];
}

static void test_count(void) {
  CHECK(G->count() == 2);
  lmx_cuda_dev *d;
  CHECK(lmx_cuda_dev_get(2, &d) == LMX_ERR_DEVICE && HAS("gpu(2) requested but 2 GPUs are"));
  CHECK(lmx_cuda_dev_peek(0) == NULL); /* nothing created before first use */
  CHECK(G->sync(0) == LMX_OK && lmx_cuda_dev_peek(0) == NULL);
  CHECK(G->stream(0) != NULL && lmx_cuda_dev_peek(0) != NULL);
  CHECK(G->stream(0) == G->stream(0) && G->stream(1) != G->stream(0));
}

/* host -> device -> host for a size; the host source is overwritten as soon as the
 * upload returns (allowed), and the download must hold the original bytes. */
static void round_trip(int dev, size_t n) {
  unsigned char *src = malloc(n + 1), *want = malloc(n + 1), *back = malloc(n + 1);
  for (size_t i = 0; i < n; i++) want[i] = src[i] = (unsigned char)(i * 131 + n);
  void *g = NULL;
  CHECK(G->alloc(dev, n, &g) == LMX_OK);
  CHECK(G->copy(dev, g, src, n, LMX_COPY_H2D) == LMX_OK);
  memset(src, 0x11, n);
  if (n > 0) CHECK(n > (size_t)LMX_CUDA_STAGING_SLOTS * LMX_CUDA_STAGING_BYTES || fake_cuda_pending(dev) > 0);
  memset(back, 0, n + 1);
  CHECK(G->copy(dev, back, g, n, LMX_COPY_D2H) == LMX_OK);
  CHECK(memcmp(back, want, n) == 0);
  /* device to device on the same GPU, then zeroing */
  void *h = NULL;
  CHECK(G->alloc(dev, n, &h) == LMX_OK);
  CHECK(G->copy(dev, h, g, n, LMX_COPY_D2D) == LMX_OK);
  CHECK(G->zero(dev, g, n) == LMX_OK);
  CHECK(G->copy(dev, back, h, n, LMX_COPY_D2H) == LMX_OK && memcmp(back, want, n) == 0);
  CHECK(G->copy(dev, back, g, n, LMX_COPY_D2H) == LMX_OK);
  size_t nz = 0;
  for (size_t i = 0; i < n; i++) nz += back[i] != 0;
  CHECK(nz == 0);
  G->release(dev, g);
  G->release(dev, h);
  free(src), free(want), free(back);
}

static void test_copies(void) {
  size_t sizes[] = {0, 1, 1000, (size_t)LMX_CUDA_STAGING_BYTES + 3,
                    (size_t)(LMX_CUDA_STAGING_SLOTS + 1) * LMX_CUDA_STAGING_BYTES + 5};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) round_trip(0, sizes[i]);
  round_trip(1, 7777);
  /* Peer copy: the source is written by work still queued on gpu(0) (deferred upload);
   * the copy on gpu(1)'s stream must run after it. */
  size_t n = 3 << 20;
  unsigned char *src = malloc(n), *back = malloc(n);
  for (size_t i = 0; i < n; i++) src[i] = (unsigned char)(i % 251);
  void *a = NULL, *b = NULL;
  CHECK(G->alloc(0, n, &a) == LMX_OK && G->alloc(1, n, &b) == LMX_OK);
  CHECK(G->copy(0, a, src, n, LMX_COPY_H2D) == LMX_OK);
  CHECK(fake_cuda_pending(0) > 0);
  CHECK(G->copy_peer(1, b, 0, a, n) == LMX_OK);
  CHECK(G->copy(1, back, b, n, LMX_COPY_D2H) == LMX_OK && memcmp(back, src, n) == 0);
  CHECK(G->sync(0) == LMX_OK && G->sync(1) == LMX_OK);
  CHECK(fake_cuda_pending(0) == 0 && fake_cuda_pending(1) == 0);
  G->release(0, a);
  G->release(1, b);
  free(src), free(back);
}

static void test_allocator(void) {
  void *a = NULL, *b = NULL;
  CHECK(G->alloc(0, 100000, &a) == LMX_OK);
  int64_t m0 = fig(0, LMX_GPUMEM_RAW_ALLOCS);
  int64_t hits = fig(0, LMX_GPUMEM_CACHE_HITS);
  G->release(0, a);
  CHECK(G->alloc(0, 100000, &b) == LMX_OK && b == a && fig(0, LMX_GPUMEM_RAW_ALLOCS) == m0);
  CHECK(fig(0, LMX_GPUMEM_CACHE_HITS) == hits + 1);
  G->release(0, b);
  /* many small allocations and frees: no new raw allocation after the first round */
  void *p[64];
  for (int r = 0; r < 10; r++) {
    for (int i = 0; i < 64; i++) CHECK(G->alloc(0, (size_t)(i + 1) * 64, &p[i]) == LMX_OK);
    for (int i = 0; i < 64; i++) G->release(0, p[i]);
    if (r == 0) m0 = fig(0, LMX_GPUMEM_RAW_ALLOCS);
  }
  CHECK(fig(0, LMX_GPUMEM_RAW_ALLOCS) == m0);
  /* out of memory: 64 MiB device */
  CHECK(G->empty_cache(0) > 0 && fig(0, LMX_GPUMEM_CACHED) == 0);
  CHECK(fig(0, LMX_GPUMEM_TOTAL) == 64 << 20);
  void *x = NULL, *y = NULL, *z = NULL;
  CHECK(G->alloc(0, 40 << 20, &x) == LMX_OK);
  G->release(0, x);
  int64_t retries = fig(0, LMX_GPUMEM_OOM_RETRIES);
  CHECK(G->alloc(0, 50 << 20, &y) == LMX_OK); /* only after emptying the 40 MiB cached */
  CHECK(fig(0, LMX_GPUMEM_OOM_RETRIES) == retries + 1);
  CHECK(G->alloc(0, 30 << 20, &z) == LMX_ERR_NOMEM);
  CHECK(HAS("gpu(0): out of memory allocating 30.00 MiB (31457280 bytes"));
  CHECK(HAS("50.00 MiB in use in 1 blocks") && HAS("device free 14.00 MiB of 64.00 MiB"));
  CHECK(fig(0, LMX_GPUMEM_OOMS) == 1);
  G->release(0, y);
  CHECK(G->alloc(0, 30 << 20, &z) == LMX_OK);
  CHECK(fig(0, LMX_GPUMEM_PEAK) >= 50 << 20);
  G->release(0, z);
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
  test_copies();
  test_allocator();
  test_lib_handles();
  test_faults();
  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
