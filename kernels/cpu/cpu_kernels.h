/* cpu_kernels.h — compute primitives on the CPU.
 *
 * Plain pointers, element counts and dtype codes only: kernels know nothing of arrays,
 * graphs or handles. One function per family, with the dtype chosen inside by a small
 * table (float32 and float64 get dedicated loops; other dtypes go through doubles).
 * Shapes of the arguments are given in each comment.
 */
#ifndef LMX_KERNELS_CPU_H
#define LMX_KERNELS_CPU_H

#include <stdint.h>

#include "../../src/luamx.h"

/* dst[n] (dtype dt) <- src[n] (dtype st), converting values. */
void lmx_cpu_convert(void *dst, int dt, const void *src, int st, int64_t n);

/* p[n] <- value, converted to dtype dt. */
void lmx_cpu_fill(void *p, int dt, int64_t n, double value);

/* Broadcasting binary op (LMX_BIN_*). out has ndim dims `oshape`; a and b are given with
 * the same ndim and their own dims (1 where broadcast). All contiguous, same dtype. */
void lmx_cpu_binary(int op, int dt, int ndim, const int64_t *oshape, void *out,
                    const int64_t *ashape, const void *a, const int64_t *bshape, const void *b);

/* out[n] = a[n] op s, or s op a[n] when reverse. */
void lmx_cpu_scalar(int op, int dt, int64_t n, void *out, const void *a, double s, int reverse);

/* C[m,n] = alpha * op(A) op(B) + beta * C, row-major; op = transpose when ta/tb.
 * A is [m,k] (or [k,m] when ta), B is [k,n] (or [n,k] when tb). dt: float32/float64. */
void lmx_cpu_gemm(int dt, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                  const void *A, const void *B, double beta, void *C);

#endif
