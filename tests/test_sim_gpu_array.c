/* test_sim_gpu_array.c — gpu(n) arrays through the engine's C API on simulated GPUs (the
 * -DLUAMX_CUDA=SIM build; elsewhere it reports itself skipped): create, set, read back,
 * fill, copies cpu <-> gpu(0) <-> gpu(1), float16, the simulated memory they take, and the
 * refusals (a GPU that is not there, a host pointer, more memory than the GPU has), each
 * with its message. Independent of the Lua specs. Prints "N passed, N failed". */
#include <stdio.h>
#include <string.h>

#include "luamx.h"

#ifdef LUAMX_CUDA_SIM
#include <cuda_runtime_api.h>
#endif

#include "check.h"
#define HAS(text) (strstr(lmx_last_error(), (text)) != NULL)

#ifdef LUAMX_CUDA_SIM
static size_t used_on(int dev) {
  size_t fr = 0, tot = 0;
  int old = 0;
  cudaGetDevice(&old);
  cudaSetDevice(dev);
  cudaMemGetInfo(&fr, &tot);
  cudaSetDevice(old);
  return tot - fr;
}

static void test_arrays(void) {
  const int64_t dims[2] = {3, 4};
  double in[12], out[12];
  for (int i = 0; i < 12; i++) in[i] = i * 1.5 - 4;
  size_t used0 = used_on(0);
  lmx_ndarray *g = NULL, *h = NULL, *c = NULL, *g1 = NULL;
  CHECK(lmx_ndarray_new(dims, 2, LMX_FLOAT32, LMX_GPU, 0, &g) == 0 && g);
  CHECK(used_on(0) >= used0 + 12 * sizeof(float));
  int dt = 0, di = -1;
  CHECK(lmx_ndarray_context(g, &dt, &di) == 0 && dt == LMX_GPU && di == 0);
  CHECK(lmx_ndarray_set_f64(g, in, 12) == 0);
  memset(out, 0, sizeof out);
  CHECK(lmx_ndarray_get_f64(g, out, 12) == 0 && !memcmp(in, out, sizeof in));
  CHECK(lmx_ndarray_fill(g, 2.5) == 0 && lmx_ndarray_get_f64(g, out, 12) == 0);
  CHECK(out[0] == 2.5 && out[11] == 2.5);
  CHECK(lmx_ndarray_set_f64(g, in, 12) == 0);

  /* gpu(0) -> cpu -> gpu(1) -> back */
  CHECK(lmx_ndarray_new(dims, 2, LMX_FLOAT32, LMX_CPU, 0, &c) == 0);
  CHECK(lmx_ndarray_copyto(g, c) == 0 && lmx_ndarray_get_f64(c, out, 12) == 0 &&
        !memcmp(in, out, sizeof in));
  size_t used1 = used_on(1);
  CHECK(lmx_ndarray_new(dims, 2, LMX_FLOAT32, LMX_GPU, 1, &g1) == 0);
  CHECK(used_on(1) >= used1 + 12 * sizeof(float));
  CHECK(lmx_ndarray_fill(c, 7) == 0 && lmx_ndarray_copyto(c, g1) == 0);
  CHECK(lmx_ndarray_get_f64(g1, out, 12) == 0 && out[5] == 7);
  CHECK(lmx_ndarray_copyto(g, g1) == 0 && lmx_ndarray_get_f64(g1, out, 12) == 0 &&
        !memcmp(in, out, sizeof in));
  CHECK(lmx_ndarray_wait_to_read(g1) == 0 && lmx_waitall() == 0);

  /* float16 on the GPU: values that are exact in half come back unchanged */
  CHECK(lmx_ndarray_new(dims, 2, LMX_FLOAT16, LMX_GPU, 0, &h) == 0);
  CHECK(lmx_ndarray_set_f64(h, in, 12) == 0 && lmx_ndarray_get_f64(h, out, 12) == 0 &&
        !memcmp(in, out, sizeof in));

  /* refusals */
  void *p = NULL;
  CHECK(lmx_ndarray_data(g, &p) != 0 && HAS("only CPU arrays expose a pointer"));
  lmx_ndarray *bad = NULL;
  int n = lmx_num_gpus();
  CHECK(lmx_ndarray_new(dims, 2, LMX_FLOAT32, LMX_GPU, n, &bad) != 0 && !bad);
  char want[32];
  snprintf(want, sizeof want, "gpu(%d)", n);
  CHECK(HAS(want));
  const int64_t huge[1] = {(int64_t)3 << 28}; /* 3 GiB of float32: more than the GPU has */
  size_t before = used_on(0);
  CHECK(lmx_ndarray_new(huge, 1, LMX_FLOAT32, LMX_GPU, 0, &bad) != 0 && !bad);
  CHECK(HAS("out of memory") && HAS("3221225472 bytes"));
  CHECK(used_on(0) == before); /* nothing half-allocated */

  lmx_ndarray_free(g), lmx_ndarray_free(h), lmx_ndarray_free(c), lmx_ndarray_free(g1);
  CHECK(lmx_waitall() == 0);
}
#endif

int main(void) {
#ifdef LUAMX_CUDA_SIM
  CHECK(lmx_num_gpus() >= 2); /* LUAMX_SIM_GPUS, default 2 */
  if (lmx_num_gpus() >= 2) test_arrays();
#else
  printf("not the CUDA simulator build: skipped\n");
#endif
  return check_summary();
}
