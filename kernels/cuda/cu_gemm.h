/* cu_gemm.h — matrix products on the device (kernels/cpu/gemm.c, linalg.c).
 *
 * Every product is a row-major request (the CPU's lmx_cpu_gemm_ld convention) that
 * lmx_cu_gemm_derive turns into one column-major BLAS call: C = op(A)·op(B) row-major is
 * Cᵀ = op(B)ᵀ·op(A)ᵀ column-major, so A and B swap, m and n swap, each keeps its own
 * transpose flag and leading dimension, and the batch strides follow their matrices.
 * The derivation and its checks are plain C (gemm_args.c, built in every configuration
 * and tested on the CPU by tests/test_cu_gemm.c); the call itself goes to cuBLAS, opened
 * with dlopen on first use (blas_api.cu; libluamx does not link it), or, in the simulator
 * build, to OpenBLAS's column-major cblas_?gemm with exactly the derived arguments.
 *
 * dtypes: float32 (cublasSgemm; TF32 tensor-core math is NOT enabled, so results are
 * IEEE float32 products like the CPU's), float64 (cublasDgemm), float16 storage with
 * float32 compute and float32 alpha/beta (cublasGemmEx, CUBLAS_COMPUTE_32F).
 * FullyConnected's products may go through cuBLASLt instead (lmx_cu_fc_*_lt below,
 * blaslt_args.h): a bias or bias-gradient epilogue fused into the product.
 * Return codes of every launcher here: 0; -1 unsupported dtype; LMX_CU_GEMM_EARG bad
 * dims / leading dims / strides (lmx_cu_gemm_derive says which); LMX_CU_GEMM_ELIB cuBLAS
 * could not be opened (lmx_cu_blas_error says why); a cudaError_t code from a launch;
 * LMX_CU_GEMM_EBLAS + the cublasStatus_t of a failed cuBLAS call.
 */
#ifndef LMX_KERNELS_CU_GEMM_H
#define LMX_KERNELS_CU_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "blaslt_args.h"
#include "cu_base.h"

LMX_CU_BEGIN

enum { LMX_CU_GEMM_EARG = -2, LMX_CU_GEMM_ELIB = -3, LMX_CU_GEMM_SKIP = -4,
       LMX_CU_GEMM_EBLAS = 10000 };

/* A row-major request: for b < batch,
 *   C[b][m,n] = alpha · op(A[b]) · op(B[b]) + beta · C[b]
 * with A[b] = A + b·sa ([m,k] row stride lda, or [k,m] when ta), B[b] = B + b·sb ([k,n]
 * row stride ldb, or [n,k] when tb), C[b] = C + b·sc ([m,n] row stride ldc). Strides in
 * elements; sa / sb may be 0 (one matrix shared by every batch). */
typedef struct {
  int dt, ta, tb;
  int64_t m, n, k, batch;
  double alpha, beta;
  const void *A;
  int64_t lda, sa;
  const void *B;
  int64_t ldb, sb;
  void *C;
  int64_t ldc, sc;
} lmx_cu_gemm_req;

/* The column-major BLAS call that computes a request (argument names as in cuBLAS):
 * C' [m,n] col-major, ld ldc = alpha · op(A') · op(B') + beta · C', batch times.
 * nop = 1: nothing to compute (m, n or batch is 0). */
typedef struct {
  int dt, transa, transb; /* 0 = no transpose, 1 = transpose */
  int m, n, k, lda, ldb, ldc, batch, nop;
  long long sa, sb, sc;
  double alpha, beta;
  const void *A, *B;
  void *C;
} lmx_cu_gemm_call;

/* Checks r (dims >= 0, leading dims at least the row length and >= 1, everything within
 * cuBLAS's int range, non-negative strides, batches of C that do not overlap (stacked, or
 * side by side within a row), non-NULL
 * pointers where data is read or written) and derives the call. Returns 0, -1 for an
 * unsupported dtype, or LMX_CU_GEMM_EARG with a message in msg[len] (may be NULL) naming
 * the argument, what was expected and what was given. Plain C: no device needed. */
int lmx_cu_gemm_derive(const lmx_cu_gemm_req *r, lmx_cu_gemm_call *c, char *msg, size_t len);

/* Runs a request on stream s (derive + one BLAS call). */
int lmx_cu_gemm_req_run(lmx_cu_stream s, const lmx_cu_gemm_req *r);

/* Why cuBLAS could not be opened ("" when it was, or was not tried yet). */
const char *lmx_cu_blas_error(void);

/* Mirrors of the CPU primitives (same arguments after the stream; device pointers). */
/* C[m,n] = alpha op(A) op(B) + beta C, contiguous (lda = ta ? m : k, ...) */
int lmx_cu_gemm(lmx_cu_stream s, int dt, int ta, int tb, int64_t m, int64_t n, int64_t k,
                double alpha, const void *A, const void *B, double beta, void *C);
/* the same with leading dimensions */
int lmx_cu_gemm_ld(lmx_cu_stream s, int dt, int ta, int tb, int64_t m, int64_t n, int64_t k,
                   double alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
                   double beta, void *C, int64_t ldc);
/* C[b][m,n] (+)= op(A[b]) · op(B[b]), contiguous batches (lmx_cpu_batch_gemm) */
int lmx_cu_batch_gemm(lmx_cu_stream s, int dt, int64_t batch, int ta, int tb, int64_t m,
                      int64_t n, int64_t k, const void *A, const void *B, void *C, int acc);

/* ---- FullyConnected (linalg.c), float32 / float64 / float16 ------------------------ */
/* out[m,n] (+)= x[m,k] · w[n,k]ᵀ (+ b[n], b may be NULL) */
int lmx_cu_fc_fwd(lmx_cu_stream s, int dt, int64_t m, int64_t k, int64_t n, void *out,
                  const void *x, const void *w, const void *b, int acc);
/* gx[m,k] (+)= g[m,n] · w[n,k] */
int lmx_cu_fc_bwd_data(lmx_cu_stream s, int dt, int64_t m, int64_t k, int64_t n, void *gx,
                       const void *g, const void *w, int acc);
/* gw[n,k] (+)= g[m,n]ᵀ · x[m,k] */
int lmx_cu_fc_bwd_weight(lmx_cu_stream s, int dt, int64_t m, int64_t k, int64_t n, void *gw,
                         const void *g, const void *x, int acc);
/* out[n] (+)= Σ_r x[r,n] over m rows (bias gradient; float32 accumulation for float16,
 * one thread per column summing rows in order, so the result does not depend on the
 * launch geometry) */
int lmx_cu_sum_rows(lmx_cu_stream s, int dt, int64_t m, int64_t n, void *out, const void *x,
                    int acc);
/* out[m,n] (+)= b[n] broadcast over rows (acc = 0: out is overwritten with the rows) */
int lmx_cu_bias_rows(lmx_cu_stream s, int dt, int64_t m, int64_t n, void *out, const void *b,
                     int acc);

/* ---- the same FullyConnected products with the cuBLASLt choice (blaslt_args.h) -------- */
/* What the last lmx_cu_fc_*_lt call did with its product: lt 1 when cuBLASLt ran it, with
 * epi its LMX_LT_EPI_*; lt 0 when cuBLAS (or, for a bias gradient alone, the column sum)
 * ran it, with why a static string saying why (the glue's executor note). */
typedef struct {
  int lt, epi;
  const char *why;
} lmx_cu_lt_ran;

/* How the FullyConnected glue runs its products: mode LMX_LT_* (lmx_lt_parse_mode of
 * LUAMX_CUBLASLT), the op's workspace and where to report the path taken (NULL: not
 * wanted; written by every lmx_cu_fc_*_lt call, error or not). */
typedef struct {
  int mode;
  void *ws;
  size_t ws_bytes;
  lmx_cu_lt_ran *ran;
} lmx_cu_lt_opts;

/* Runs a derived cuBLASLt call (blaslt.cu): 0, LMX_CU_GEMM_SKIP (nothing written: the
 * caller takes the cuBLAS path; *why, when why is not NULL, a static string saying why),
 * LMX_CU_GEMM_EBLAS + status, or a cudaError_t. */
int lmx_cu_lt_run(lmx_cu_stream s, const lmx_lt_call *c, void *ws, const char **why);

/* lmx_cu_fc_fwd through cuBLASLt with the bias epilogue where lmx_lt_choose says so
 * (cuBLAS otherwise, or when cuBLASLt declines). */
int lmx_cu_fc_fwd_lt(lmx_cu_stream s, const lmx_cu_lt_opts *o, int dt, int64_t m, int64_t k,
                     int64_t n, void *out, const void *x, const void *w, const void *b, int acc);
/* lmx_cu_fc_bwd_data likewise (no epilogue) */
int lmx_cu_fc_bwd_data_lt(lmx_cu_stream s, const lmx_cu_lt_opts *o, int dt, int64_t m,
                          int64_t k, int64_t n, void *gx, const void *g, const void *w, int acc);
/* lmx_cu_fc_bwd_weight and, when gb is not NULL, the bias gradient gb[n] (+)= Σ_rows g
 * (gb_acc: add): fused as BGRADB where it can be (gb overwritten), else the column sum.
 * gw may be NULL (no weight gradient wanted: only the bias gradient is made). */
int lmx_cu_fc_bwd_weight_lt(lmx_cu_stream s, const lmx_cu_lt_opts *o, int dt, int64_t m,
                            int64_t k, int64_t n, void *gw, const void *g, const void *x,
                            int acc, void *gb, int gb_acc);

/* y[N, C, inner] += b[C] per channel (Convolution / Deconvolution bias) */
int lmx_cu_bias_channels(lmx_cu_stream s, int dt, int64_t N, int64_t C, int64_t inner, void *y,
                         const void *b);
/* gb[C] (+)= Σ over n and inner of g[N, C, inner]: one block per channel, a fixed tree
 * (float accumulation; double for float64) */
int lmx_cu_sum_channels(lmx_cu_stream s, int dt, int64_t N, int64_t C, int64_t inner, void *gb,
                        const void *g, int acc);

LMX_CU_END

#endif
