/* khatri_rao.h — the shared description of a Khatri-Rao product (issue 14), for the CPU
 * kernels (kernels/cpu/khatri_rao.c) and the CUDA kernels (kernels/cuda/khatri_rao.cu):
 * n matrices A_i (M_i, N), the product X (M_1···M_n, N) whose row r = (r_1, ..., r_n)
 * (r_n varying fastest) is X[r, k] = Π_i A_i[r_i, k]. Passed by value, so at most
 * LMX_KR_MAX matrices. */
#ifndef LMX_KERNELS_KHATRI_RAO_H
#define LMX_KERNELS_KHATRI_RAO_H

#include <stdint.h>

enum { LMX_KR_MAX = 16 };

typedef struct {
  int n;                         /* matrices */
  int64_t N;                     /* columns */
  int64_t M[LMX_KR_MAX];         /* rows of each */
  const void *A[LMX_KR_MAX];     /* their data (device memory for the CUDA kernels) */
} lmx_kr_args;

#endif
