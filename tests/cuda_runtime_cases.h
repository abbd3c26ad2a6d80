/* cuda_runtime_cases.h — checks of a GPU device table (lmx_device_ops of src/device)
 * shared by tests/fake_cuda/test_cuda_fake.c (the runtime over a host fake of CUDA, CPU
 * builds) and tests/test_cuda_runtime.c (the runtime itself, in CUDA and simulator
 * builds with a GPU context). Included once by each; the includer defines CHECK, HAS,
 * the table pointer G and CASES_PENDING(dev) (operations queued and not run on dev's
 * streams, or -1 where the runtime cannot tell).
 *
 * Round trips of several sizes (across the staging ring), the host source reused at once
 * after an upload, device->device and zeroing, peer copies, allocator reuse without raw
 * allocations, no raw growth over many small allocations, out of memory relative to the
 * device's size (emptied cache, retry, the message, recovery). */
#ifndef TESTS_CUDA_RUNTIME_CASES_H
#define TESTS_CUDA_RUNTIME_CASES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "device/device.h"
#include "luamx.h"

enum { CASES_RING_BYTES = 4 * (4 << 20) }; /* cuda_state.h: 4 staging buffers of 4 MiB */

static int64_t fig(int dev, int which) {
  int64_t f[LMX_GPUMEM_NUM_FIGURES];
  if (G->memory(dev, f, LMX_GPUMEM_NUM_FIGURES) != LMX_OK) return -1;
  return f[which];
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
  if (n > 0 && n <= CASES_RING_BYTES && CASES_PENDING(dev) >= 0) CHECK(CASES_PENDING(dev) > 0);
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

static void test_copies(int ngpu) {
  size_t sizes[] = {0, 1, 1000, (4 << 20) + 3, (size_t)CASES_RING_BYTES + (4 << 20) + 5};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) round_trip(0, sizes[i]);
  if (ngpu < 2) {
    printf("one GPU: peer copies not checked\n");
    return;
  }
  round_trip(1, 7777);
  /* Peer copy: the source is written by work still queued on gpu(0) (deferred upload);
   * the copy on gpu(1)'s stream must run after it. */
  size_t n = 3 << 20;
  unsigned char *src = malloc(n), *back = malloc(n);
  for (size_t i = 0; i < n; i++) src[i] = (unsigned char)(i % 251);
  void *a = NULL, *b = NULL;
  CHECK(G->alloc(0, n, &a) == LMX_OK && G->alloc(1, n, &b) == LMX_OK);
  CHECK(G->copy(0, a, src, n, LMX_COPY_H2D) == LMX_OK);
  if (CASES_PENDING(0) >= 0) CHECK(CASES_PENDING(0) > 0);
  CHECK(G->copy_peer(1, b, 0, a, n) == LMX_OK);
  CHECK(G->copy(1, back, b, n, LMX_COPY_D2H) == LMX_OK && memcmp(back, src, n) == 0);
  CHECK(G->sync(0) == LMX_OK && G->sync(1) == LMX_OK);
  if (CASES_PENDING(0) >= 0) CHECK(CASES_PENDING(0) == 0 && CASES_PENDING(1) == 0);
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
}

/* Out of memory relative to the device's free memory (skipped on large devices). */
static void test_oom(void) {
  G->empty_cache(0);
  CHECK(fig(0, LMX_GPUMEM_CACHED) == 0);
  int64_t F = fig(0, LMX_GPUMEM_FREE), T = fig(0, LMX_GPUMEM_TOTAL), used = fig(0, LMX_GPUMEM_IN_USE);
  if (T > ((int64_t)1 << 30)) {
    printf("gpu(0) has %lld bytes: out-of-memory checks skipped\n", (long long)T);
    return;
  }
  size_t mib = 1 << 20, x = (size_t)F * 5 / 8 / mib * mib, y = (size_t)F * 3 / 4 / mib * mib;
  size_t z = (size_t)F / 2 / mib * mib;
  void *px = NULL, *py = NULL, *pz = NULL;
  CHECK(G->alloc(0, x, &px) == LMX_OK);
  G->release(0, px);
  int64_t retries = fig(0, LMX_GPUMEM_OOM_RETRIES), ooms = fig(0, LMX_GPUMEM_OOMS);
  CHECK(G->alloc(0, y, &py) == LMX_OK); /* fits only once the cached block is given back */
  CHECK(fig(0, LMX_GPUMEM_OOM_RETRIES) == retries + 1 && fig(0, LMX_GPUMEM_CACHED) == 0);
  CHECK(G->alloc(0, z, &pz) == LMX_ERR_NOMEM && pz == NULL);
  char want[96];
  snprintf(want, sizeof want, "gpu(0): out of memory allocating %.2f MiB (%zu bytes",
           (double)z / (double)mib, z);
  CHECK(HAS(want));
  snprintf(want, sizeof want, "%.2f MiB in use", (double)(y + (size_t)used) / (double)mib);
  CHECK(HAS(want) && HAS("0 B cached") && HAS("device free"));
  snprintf(want, sizeof want, " of %.2f MiB", (double)T / (double)mib);
  CHECK(HAS(want));
  CHECK(fig(0, LMX_GPUMEM_OOMS) == ooms + 1);
  G->release(0, py);
  CHECK(G->alloc(0, z, &pz) == LMX_OK && pz != NULL);
  CHECK(fig(0, LMX_GPUMEM_PEAK) >= (int64_t)y);
  G->release(0, pz);
}

#endif
