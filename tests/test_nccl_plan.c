/* test_nccl_plan.c — the `nccl` kvstore's argument derivation on the CPU
 * (src/exec/kv_nccl_plan.c): luamx dtype to NCCL type, distinct devices and ranks, and
 * the bucket plan (fusion by dtype in the order given, aligned offsets, the cap, large
 * keys alone, a key alone in its bucket not packed, bad arguments). In the simulator
 * build it also runs the NCCL calls of src/device/cuda_nccl.c against the simulated
 * NCCL: the missing-library message, a duplicate device, sums of every dtype in and out
 * of place, and an injected NCCL failure.
 * Prints "N passed, N failed" and exits non-zero on failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "exec/kv_nccl_plan.h"
#include "luamx.h"
#include "tensor/dtype.h"

#include "check.h"

static void test_dtype(void) {
  CHECK(lmx_nccl_dtype(LMX_FLOAT32) == LMX_NCCL_FLOAT32 && LMX_NCCL_FLOAT32 == 7);
  CHECK(lmx_nccl_dtype(LMX_FLOAT64) == LMX_NCCL_FLOAT64 && LMX_NCCL_FLOAT64 == 8);
  CHECK(lmx_nccl_dtype(LMX_FLOAT16) == LMX_NCCL_FLOAT16 && LMX_NCCL_FLOAT16 == 6);
  CHECK(lmx_nccl_dtype(LMX_UINT8) == LMX_NCCL_UINT8 && LMX_NCCL_UINT8 == 1);
  CHECK(lmx_nccl_dtype(LMX_INT32) == LMX_NCCL_INT32 && LMX_NCCL_INT32 == 2);
  CHECK(lmx_nccl_dtype(LMX_INT8) == LMX_NCCL_INT8 && LMX_NCCL_INT8 == 0);
  CHECK(lmx_nccl_dtype(LMX_INT64) == LMX_NCCL_INT64 && LMX_NCCL_INT64 == 4);
  CHECK(lmx_nccl_dtype(LMX_NUM_DTYPES) == -1 && lmx_nccl_dtype(-1) == -1);
}

static void test_devices(void) {
  int uniq[8], dup = -1, rank[8];
  int a[] = {1, 0};
  CHECK(lmx_nccl_distinct(a, 2, uniq, &dup) == 2 && dup == 0 && uniq[0] == 0 && uniq[1] == 1);
  CHECK(lmx_nccl_ranks(a, 2, uniq, 2, rank) == 0 && rank[0] == 1 && rank[1] == 0);
  int b[] = {0, 0};
  CHECK(lmx_nccl_distinct(b, 2, uniq, &dup) == 1 && dup == 1 && uniq[0] == 0);
  int c[] = {3, 1, 3, 2, 1};
  CHECK(lmx_nccl_distinct(c, 5, uniq, &dup) == 3 && dup == 1);
  CHECK(uniq[0] == 1 && uniq[1] == 2 && uniq[2] == 3);
  CHECK(lmx_nccl_ranks(c, 5, uniq, 3, rank) == 0 && rank[0] == 2 && rank[3] == 1 && rank[4] == 0);
  int d[] = {5};
  CHECK(lmx_nccl_ranks(d, 1, uniq, 3, rank) == -1); /* not in the set */
  CHECK(lmx_nccl_distinct(d, 0, uniq, &dup) == 0 && dup == 0);
}

/* several contexts per GPU: values grouped by rank, in order within a rank */
static void test_local_groups(void) {
  int uniq[8], dup = -1, rank[8], order[8], start[9];
  int a[] = {0, 0, 1}; /* {gpu(0), gpu(0), gpu(1)} */
  int nu = lmx_nccl_distinct(a, 3, uniq, &dup);
  CHECK(nu == 2 && dup == 1 && lmx_nccl_ranks(a, 3, uniq, nu, rank) == 0);
  CHECK(lmx_nccl_local_groups(rank, 3, nu, order, start) == 2);
  CHECK(start[0] == 0 && start[1] == 2 && start[2] == 3);
  CHECK(order[0] == 0 && order[1] == 1 && order[2] == 2);
  int b[] = {0, 1, 1, 0}; /* {gpu(0), gpu(1), gpu(1), gpu(0)} */
  nu = lmx_nccl_distinct(b, 4, uniq, &dup);
  CHECK(nu == 2 && dup == 1 && lmx_nccl_ranks(b, 4, uniq, nu, rank) == 0);
  CHECK(lmx_nccl_local_groups(rank, 4, nu, order, start) == 2);
  CHECK(start[0] == 0 && start[1] == 2 && start[2] == 4);
  CHECK(order[0] == 0 && order[1] == 3 && order[2] == 1 && order[3] == 2);
  int c[] = {3, 1, 3, 3, 2}; /* gpu(3) three times, ranks by ascending id */
  nu = lmx_nccl_distinct(c, 5, uniq, &dup);
  CHECK(nu == 3 && lmx_nccl_ranks(c, 5, uniq, nu, rank) == 0);
  CHECK(lmx_nccl_local_groups(rank, 5, nu, order, start) == 3);
  CHECK(start[1] == 1 && start[2] == 2 && start[3] == 5);
  CHECK(order[0] == 1 && order[1] == 4 && order[2] == 0 && order[3] == 2 && order[4] == 3);
  int d[] = {1, 0}; /* distinct GPUs: one value per rank */
  nu = lmx_nccl_distinct(d, 2, uniq, &dup);
  CHECK(lmx_nccl_ranks(d, 2, uniq, nu, rank) == 0);
  CHECK(lmx_nccl_local_groups(rank, 2, nu, order, start) == 1 && order[0] == 1 && order[1] == 0);
  /* bad arguments: an empty rank, a rank out of range, no values, too many ranks */
  int empty[] = {0, 0};
  CHECK(lmx_nccl_local_groups(empty, 2, 2, order, start) == -1);
  int out[] = {0, 2};
  CHECK(lmx_nccl_local_groups(out, 2, 2, order, start) == -1);
  int neg[] = {-1, 0};
  CHECK(lmx_nccl_local_groups(neg, 2, 1, order, start) == -1);
  CHECK(lmx_nccl_local_groups(a, 0, 1, order, start) == -1);
  CHECK(lmx_nccl_local_groups(a, 1, 0, order, start) == -1);
  CHECK(lmx_nccl_local_groups(a, 1, LMX_NCCL_MAX_RANKS + 1, order, start) == -1);
}

static void test_plan(void) {
  lmx_nccl_slot slot[8];
  lmx_nccl_bucket bk[8];
  /* float32 3 elems, float64 5, float32 10, int32 4, float32 big, float64 alone-ish */
  int dt[] = {LMX_FLOAT32, LMX_FLOAT64, LMX_FLOAT32, LMX_INT32, LMX_FLOAT32, LMX_FLOAT64};
  int64_t cnt[] = {3, 5, 10, 4, 1000, 7};
  int nb = lmx_nccl_plan(6, dt, cnt, 1024, 256, slot, bk);
  CHECK(nb == 4);
  /* bucket 0: float32 keys 0 and 2 (offsets 0 and 64 = 256 bytes), fused */
  CHECK(slot[0].bucket == 0 && slot[0].offset == 0);
  CHECK(slot[2].bucket == 0 && slot[2].offset == 64);
  CHECK(bk[0].dtype == LMX_FLOAT32 && bk[0].fused == 1 && bk[0].nkeys == 2 && bk[0].count == 74);
  CHECK(lmx_nccl_bucket_bytes(&bk[0]) == 296);
  /* bucket 1: float64 keys 1 and 5 (offset 32 elements = 256 bytes) */
  CHECK(slot[1].bucket == 1 && slot[5].bucket == 1 && slot[5].offset == 32);
  CHECK(bk[1].dtype == LMX_FLOAT64 && bk[1].fused == 1 && bk[1].count == 39);
  /* bucket 2: the int32 key alone: not packed */
  CHECK(slot[3].bucket == 2 && slot[3].offset == 0 && bk[2].fused == 0 && bk[2].nkeys == 1);
  CHECK(bk[2].count == 4 && bk[2].dtype == LMX_INT32);
  /* bucket 3: 4000 bytes > cap: alone */
  CHECK(slot[4].bucket == 3 && bk[3].fused == 0 && bk[3].count == 1000);

  /* the cap closes a bucket: 100-float keys (400 bytes) under a 1024-byte cap: offsets
   * 0, 128 (512 bytes); the third would end at 1424 > 1024 -> a new bucket */
  int dt2[] = {LMX_FLOAT32, LMX_FLOAT32, LMX_FLOAT32, LMX_FLOAT32};
  int64_t c2[] = {100, 100, 100, 256};
  nb = lmx_nccl_plan(4, dt2, c2, 1024, 256, slot, bk);
  CHECK(nb == 3);
  CHECK(slot[0].bucket == 0 && slot[1].bucket == 0 && slot[1].offset == 128);
  CHECK(bk[0].count == 228 && bk[0].fused == 1);
  CHECK(slot[2].bucket == 1 && slot[2].offset == 0);
  /* exactly cap bytes is still small: it does not fit beside key 2, so it opens bucket 2 */
  CHECK(slot[3].bucket == 2 && bk[2].count == 256 && bk[2].fused == 0);
  CHECK(bk[1].fused == 0 && bk[1].nkeys == 1); /* key 2 ended alone */

  /* float16 and int8 offsets are counted in their own elements */
  int dt3[] = {LMX_FLOAT16, LMX_INT8, LMX_FLOAT16, LMX_INT8};
  int64_t c3[] = {3, 5, 2, 1};
  nb = lmx_nccl_plan(4, dt3, c3, 0, 256, slot, bk);
  CHECK(nb == 2 && slot[2].offset == 128 && slot[3].offset == 256);
  CHECK(bk[0].count == 130 && bk[1].count == 257 && bk[0].fused && bk[1].fused);
  CHECK(lmx_nccl_plan(0, dt3, c3, 0, 256, slot, bk) == 0);

  /* bad arguments */
  int64_t zero[] = {0};
  CHECK(lmx_nccl_plan(1, dt3, zero, 0, 256, slot, bk) == -1);
  int bad[] = {LMX_NUM_DTYPES};
  CHECK(lmx_nccl_plan(1, bad, c3, 0, 256, slot, bk) == -1);
  CHECK(lmx_nccl_plan(1, dt3, c3, 0, 6, slot, bk) == -1); /* not a multiple of 4 and 8 */
  CHECK(lmx_nccl_plan(1, dt3, c3, 0, 0, slot, bk) == -1);
}

#ifdef LUAMX_CUDA_SIM
#include <cuda_runtime_api.h>

#include "device/cuda_nccl.h"

/* the simulated NCCL through the calls the kvstore makes */
static void test_sim_nccl(void) {
  int devs[2] = {0, 1}, dd[2] = {1, 1};
  lmx_nccl_comm *c = NULL;
  setenv("LUAMX_SIM_NCCL", "missing", 1);
  CHECK(lmx_nccl_comm_new(2, devs, &c) == LMX_ERR_NOTFOUND);
  CHECK(strstr(lmx_last_error(), "NCCL (libnccl.so.2") && strstr(lmx_last_error(), "libnccl2"));
  unsetenv("LUAMX_SIM_NCCL");
  CHECK(lmx_nccl_comm_new(2, dd, &c) == LMX_ERR_ARG);
  CHECK(strstr(lmx_last_error(), "gpu(1) appears twice") != NULL);
  CHECK(lmx_nccl_comm_new(2, devs, &c) == LMX_OK);
  if (!c) return;
  float *x[2], *y[2];
  int32_t *ix[2];
  uint16_t *hx[2];
  for (int r = 0; r < 2; r++) {
    cudaSetDevice(r);
    cudaMalloc((void **)&x[r], 5 * sizeof(float));
    cudaMalloc((void **)&y[r], 5 * sizeof(float));
    cudaMalloc((void **)&ix[r], 2 * sizeof(int32_t));
    cudaMalloc((void **)&hx[r], 3 * sizeof(uint16_t));
    float h[5];
    for (int i = 0; i < 5; i++) h[i] = (float)(i + 1) * (r ? 10.0f : 1.0f);
    cudaMemcpy(x[r], h, sizeof h, cudaMemcpyHostToDevice);
    int32_t hi[2] = {r ? 1 : INT32_MAX, -7};
    cudaMemcpy(ix[r], hi, sizeof hi, cudaMemcpyHostToDevice);
    uint16_t hh[3] = {lmx_f32_to_f16(0.5f), lmx_f32_to_f16(1.0f), lmx_f32_to_f16(-2.0f)};
    cudaMemcpy(hx[r], hh, sizeof hh, cudaMemcpyHostToDevice);
  }
  const void *send[2] = {x[0], x[1]};
  void *recv[2] = {y[0], y[1]};
  CHECK(lmx_nccl_allreduce(c, send, recv, 5, LMX_NCCL_FLOAT32) == LMX_OK);
  float out[5];
  cudaMemcpy(out, y[1], sizeof out, cudaMemcpyDeviceToHost);
  CHECK(out[0] == 11 && out[4] == 55);
  cudaMemcpy(out, x[1], sizeof out, cudaMemcpyDeviceToHost);
  CHECK(out[0] == 10); /* out of place: the inputs stay */
  void *inplace[2] = {ix[0], ix[1]};
  CHECK(lmx_nccl_allreduce(c, (const void *const *)inplace, inplace, 2, LMX_NCCL_INT32) == LMX_OK);
  int32_t io[2];
  cudaMemcpy(io, ix[0], sizeof io, cudaMemcpyDeviceToHost);
  CHECK(io[0] == INT32_MIN && io[1] == -14); /* wraps, as the GPU does */
  void *hp[2] = {hx[0], hx[1]};
  CHECK(lmx_nccl_allreduce(c, (const void *const *)hp, hp, 3, LMX_NCCL_FLOAT16) == LMX_OK);
  uint16_t ho[3];
  cudaMemcpy(ho, hx[1], sizeof ho, cudaMemcpyDeviceToHost);
  CHECK(lmx_f16_to_f32(ho[0]) == 1.0f && lmx_f16_to_f32(ho[2]) == -4.0f);
  /* a buffer on the wrong device is NCCL's invalid argument */
  const void *wrong[2] = {x[1], x[1]};
  CHECK(lmx_nccl_allreduce(c, wrong, recv, 5, LMX_NCCL_FLOAT32) == LMX_ERR_ARG);
  CHECK(strstr(lmx_last_error(), "ncclAllReduce on gpu(0),gpu(1) failed: invalid argument"));
  /* an injected failure, then the communicator works again */
  setenv("LUAMX_SIM_NCCL_FAIL", "2", 1);
  CHECK(lmx_nccl_allreduce(c, send, recv, 5, LMX_NCCL_FLOAT32) == LMX_ERR_DEVICE);
  CHECK(strstr(lmx_last_error(), "unhandled system error") != NULL);
  unsetenv("LUAMX_SIM_NCCL_FAIL");
  CHECK(lmx_nccl_allreduce(c, send, recv, 5, LMX_NCCL_FLOAT32) == LMX_OK);
  for (int r = 0; r < 2; r++) {
    cudaFree(x[r]), cudaFree(y[r]), cudaFree(ix[r]), cudaFree(hx[r]);
  }
  lmx_nccl_comm_free(c);
}
#endif

int main(void) {
  test_dtype();
  test_devices();
  test_local_groups();
  test_plan();
#ifdef LUAMX_CUDA_SIM
  test_sim_nccl();
#endif
  return check_summary();
}
