/* cuda_prims.h — the CUDA device table's array-level primitives (device.h's contracts:
 * enqueue on the device's stream, never synchronise), implemented with K1's launchers
 * (kernels/cuda). The table in src/device/cuda.c points its .fill, .add, .sum_n,
 * .convert, .binary, .scalar and .random entries at these. Built with LUAMX_WITH_CUDA only. */
#ifndef LMX_DEVICE_CUDA_PRIMS_H
#define LMX_DEVICE_CUDA_PRIMS_H

#include <stdint.h>

int lmx_cuda_prim_fill(int dev_id, void *p, int dt, int64_t n, double v);
int lmx_cuda_prim_add(int dev_id, int dt, int64_t n, void *y, const void *x);
int lmx_cuda_prim_sum_n(int dev_id, int dt, int64_t n, void *y, const void *const *xs, int nx,
                        int acc);
int lmx_cuda_prim_convert(int dev_id, void *dst, int dt, const void *src, int st, int64_t n);
int lmx_cuda_prim_binary(int dev_id, int op, int dt, int ndim, const int64_t *oshape, void *out,
                         const int64_t *ashape, const void *a, const int64_t *bshape,
                         const void *b);
int lmx_cuda_prim_scalar(int dev_id, int op, int dt, int64_t n, void *out, const void *a,
                         double s, int reverse);
/* row-major GEMM on the device's stream (src/device/cuda_gemm.c) */
int lmx_cuda_prim_gemm(int dev_id, int dt, int ta, int tb, int64_t m, int64_t n, int64_t k,
                       double alpha, const void *A, const void *B, double beta, void *C);
int lmx_cuda_prim_random(int dev_id, int dist, int dt, int64_t n, void *p, double a, double b,
                         uint64_t seed, uint64_t offset);

#endif
