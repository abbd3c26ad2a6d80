/* blaslt_args.h — the cuBLASLt path of the FullyConnected products: which path runs, and
 * the row-major request → cublasLtMatmul argument derivation, in plain C (blaslt_args.c,
 * built in every configuration and tested on the CPU by tests/test_blaslt_args.c).
 *
 * cublasLtMatmul computes D = alpha·op(A)·op(B) + beta·C column-major, with an optional
 * epilogue fused into the same kernel. The FullyConnected products use two:
 *   - BIAS (forward): out[m,n] (+)= x·wᵀ + b[n]. In the derived column-major call
 *     (cu_gemm.h: A and B swap, m and n swap) b has one entry per row of D, which is
 *     what CUBLASLT_EPILOGUE_BIAS broadcasts.
 *   - BGRADB (backward, weight): gw[n,k] (+)= gᵀ·x and, in the same kernel,
 *     gb[n] = Σ_rows g. The request is ta = 1 with A = g, so the column-major call's B is
 *     g and the reduction over its k (the batch) is CUBLASLT_EPILOGUE_BGRADB, one entry
 *     per column of D. The bias gradient is written, never accumulated: a request that
 *     must add to gb cannot use it (lmx_lt_epilogue says so).
 *
 * Which path: lmx_lt_choose, a plain function of the mode (LUAMX_CUBLASLT=0 / 1 / auto,
 * read at each call: a getenv, no allocation), the dtype, the epilogue and the dims. The
 * `auto` rule is read off bench/gpu/lt_bound.cu's table on an H100 (80 GB HBM3, CUDA 13,
 * 2026-11-28), which times both paths at the W1/W2/W3/ResNet-50 FullyConnected shapes:
 *   - with an epilogue to fuse, cuBLASLt was faster in 23 of 24 products (1.03x-5.19x;
 *     the BGRADB weight products by 1.01x-5.19x), so auto takes it;
 *   - except a float32 forward whose reduction is long against its rows: ResNet-50's
 *     classifier (m 64, k 2048, n 1000) took 38.2 us through cuBLASLt against 21.9 us
 *     through cuBLAS (whose heuristic splits k over the SMs). Auto leaves float32 BIAS
 *     products with k >= 16 m to cuBLAS (LMX_LT_LONG_K); no other measured shape is there;
 *   - plain products (no epilogue) were within 1.00x-1.62x either way (cuBLAS faster in
 *     two float32 shapes), so auto leaves them to cuBLAS, as before.
 * Whole training steps with LUAMX_CUBLASLT=0 / 1 have not been timed on a GPU yet.
 *
 * Types as cudaDataType_t values (cuda's library_types.h; blaslt.cu checks them against
 * the real enums at compile time): float32 and float16 storage, both with float32
 * compute and float32 alpha/beta (CUBLAS_COMPUTE_32F: no TF32, like the cuBLAS path).
 */
#ifndef LMX_KERNELS_CUDA_BLASLT_ARGS_H
#define LMX_KERNELS_CUDA_BLASLT_ARGS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { LMX_LT_OFF = 0, LMX_LT_ON = 1, LMX_LT_AUTO = 2 };
enum { LMX_LT_EPI_NONE = 0, LMX_LT_EPI_BIAS = 1, LMX_LT_EPI_BGRADB = 2 };
/* cudaDataType_t values */
enum { LMX_LT_R_32F = 0, LMX_LT_R_16F = 2 };
/* cublasLtEpilogue_t values */
enum { LMX_LT_CU_EPI_DEFAULT = 1, LMX_LT_CU_EPI_BIAS = 4, LMX_LT_CU_EPI_BGRADB = 512 };
/* The workspace a FullyConnected node asks for when cuBLASLt may run (cuBLAS's advice for
 * cublasLtMatmul before Hopper; a smaller one only narrows the algorithms offered). */
enum { LMX_LT_WS_BYTES = 4 << 20 };
/* Auto's limit for a float32 forward through cuBLASLt: k < LMX_LT_LONG_K · m (above). */
enum { LMX_LT_LONG_K = 16 };

/* The mode named by env (the value of LUAMX_CUBLASLT; NULL or "" is auto): 0 with *mode
 * set, or -1 for anything but "0", "1", "auto" (then *mode is LMX_LT_OFF). */
int lmx_lt_parse_mode(const char *env, int *mode);

/* The epilogue a FullyConnected product can fuse: forward (fwd 1) LMX_LT_EPI_BIAS when
 * there is a bias, else NONE; backward (fwd 0, the weight product) LMX_LT_EPI_BGRADB when
 * the bias gradient is wanted (want_bias) and overwritten (bias_acc 0), else NONE (the
 * bias gradient then takes the column-sum kernel). */
int lmx_lt_epilogue(int fwd, int has_bias, int want_bias, int bias_acc);

/* 1: run this product through cuBLASLt; 0: through cuBLAS. OFF: never; dtypes other than
 * float32 / float16, a batch other than 1 or an empty product (m, n or k 0): never; ON:
 * always otherwise; AUTO: when epi is not NONE, except a float32 BIAS product with
 * k >= LMX_LT_LONG_K · m (the measured rule above). */
int lmx_lt_choose(int mode, int dt, int epi, int64_t m, int64_t n, int64_t k, int64_t batch);
/* Why lmx_lt_choose answers 0, as a static string ("LUAMX_CUBLASLT=0", "auto: no
 * epilogue to fuse", ...); NULL where it answers 1. */
const char *lmx_lt_choose_why(int mode, int dt, int epi, int64_t m, int64_t n, int64_t k,
                              int64_t batch);

/* The largest power of two, at most 256, that divides the address (256 for NULL):
 * what the heuristic query is told of each pointer's alignment. */
int lmx_lt_align(const void *p);

/* A row-major request as cu_gemm.h's (batch 1): C[m,n] = alpha·op(A)·op(B) + beta·C, with
 * epi BIAS: + bias[j] on every row (n entries); epi BGRADB: bias[i] = Σ_q op(A)[i,q] over
 * the k columns of op(A) (m entries, written, not accumulated). For the weight gradient
 * (ta = 1, A = g[batch, n]) that is gb[j] = Σ_r g[r,j]. */
typedef struct {
  int dt, ta, tb, epi;
  int64_t m, n, k;
  double alpha, beta;
  const void *A;
  int64_t lda;
  const void *B;
  int64_t ldb;
  void *C;
  int64_t ldc;
  void *bias;
} lmx_lt_req;

/* One column-major matrix layout (cublasLtMatrixLayoutCreate's arguments). */
typedef struct {
  int64_t type, rows, cols, ld; /* all 64-bit: the key below has no padding bytes */
} lmx_lt_layout;

/* The plan key of a derived call: everything but the pointers. Descriptors, layouts and
 * the heuristic's algorithm are made once per key. Compared with memcmp: it has no
 * padding (blaslt_args.c checks). */
typedef struct lmx_lt_key {
  int type;           /* of A, B, C, D and the bias (LMX_LT_R_*) */
  int compute;        /* 32: float32 accumulation (CUBLAS_COMPUTE_32F) */
  int scale_type;     /* LMX_LT_R_32F: alpha and beta are floats */
  int transa, transb; /* 0 / 1 (CUBLAS_OP_N / CUBLAS_OP_T) */
  int epilogue;       /* cublasLtEpilogue_t (LMX_LT_CU_EPI_*) */
  int m, n, k;        /* of the column-major call */
  int align_a, align_b, align_c, align_bias; /* bytes, for the heuristic's preference */
  int reserved;       /* 0 */
  lmx_lt_layout a, b, c; /* D shares C's layout */
  uint64_t ws_bytes;  /* the most workspace the algorithm may use */
} lmx_lt_key;

/* The derived cublasLtMatmul call. */
typedef struct {
  lmx_lt_key key;
  float alpha, beta;
  const void *A, *B;
  void *C, *bias;
} lmx_lt_call;

/* Checks r (dtype float32 or float16, dims >= 1 and within int, leading dims at least
 * the row length and within int, non-NULL pointers, a bias exactly where the epilogue
 * needs one, a known epilogue) and derives the call with ws_bytes of workspace. Returns
 * 0, or -1 with a message in msg[len] (may be NULL) naming the argument, what was
 * expected and what was given. */
int lmx_lt_derive(const lmx_lt_req *r, size_t ws_bytes, lmx_lt_call *c, char *msg, size_t len);

#ifdef __cplusplus
}
#endif

#endif
