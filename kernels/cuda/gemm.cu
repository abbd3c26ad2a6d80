/* gemm.cu — GEMM launchers and the FullyConnected family (kernels/cpu/gemm.c, linalg.c).
 *
 * Products go through lmx_cu_gemm_derive (gemm_args.c) and one BLAS call (blas_api.cu);
 * the two small kernels here are the bias broadcast over rows and the column sum that
 * gives its gradient. sum_rows runs one thread per column adding the rows in order
 * (float accumulation for float32/float16, double for float64), the CPU's order, so the
 * float32 bias gradient equals the CPU's bit for bit and does not depend on the launch.
 * The lmx_cu_fc_*_lt variants (at the end) first offer each FullyConnected product to
 * cuBLASLt (blaslt_args.h decides, blaslt.cu runs it, with the bias or its gradient
 * fused) and take the cuBLAS functions above when it is not chosen or declines, saying
 * which path ran and why in the options' `ran` (the glue's executor note).
 */
#include "blas_api.h"
#include "cu_gemm.h"
#include "cu_util.cuh"

int lmx_cu_gemm_req_run(lmx_cu_stream s, const lmx_cu_gemm_req *r) {
  lmx_cu_gemm_call c;
  int rc = lmx_cu_gemm_derive(r, &c, NULL, 0);
  if (rc) return rc;
  return c.nop ? 0 : lmx_cu_blas_run(s, &c);
}

int lmx_cu_gemm_ld(lmx_cu_stream s, int dt, int ta, int tb, int64_t m, int64_t n, int64_t k,
                   double alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
                   double beta, void *C, int64_t ldc) {
  lmx_cu_gemm_req r = {dt, ta, tb, m, n, k, 1, alpha, beta, A, lda, 0, B, ldb, 0, C, ldc, 0};
  return lmx_cu_gemm_req_run(s, &r);
}

int lmx_cu_gemm(lmx_cu_stream s, int dt, int ta, int tb, int64_t m, int64_t n, int64_t k,
                double alpha, const void *A, const void *B, double beta, void *C) {
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  return lmx_cu_gemm_ld(s, dt, ta, tb, m, n, k, alpha, A, lda < 1 ? 1 : lda, B,
                        ldb < 1 ? 1 : ldb, beta, C, n < 1 ? 1 : n);
}

/* ---- bias rows and column sums -------------------------------------------------------- */

template <typename T>
__global__ void k_bias_rows(int64_t m, int64_t n, T *out, const T *b, int acc) {
  LMX_CU_GRID_LOOP(i, m * n) {
    typename lmx_cu_acc<T>::type v = b ? lmx_cu_ld(b, i % n) : 0;
    if (acc) v += lmx_cu_ld(out, i);
    lmx_cu_st(out, i, v);
  }
}

template <typename T>
__global__ void k_sum_rows(int64_t m, int64_t n, T *out, const T *x, int acc) {
  LMX_CU_GRID_LOOP(j, n) {
    typename lmx_cu_acc<T>::type v = acc ? lmx_cu_ld(out, j) : 0;
    for (int64_t r = 0; r < m; r++) v += lmx_cu_ld(x, r * n + j);
    lmx_cu_st(out, j, v);
  }
}

int lmx_cu_bias_rows(lmx_cu_stream s, int dt, int64_t m, int64_t n, void *out, const void *b,
                     int acc) {
  if (m * n == 0) return dt == LMX_FLOAT32 || dt == LMX_FLOAT64 || dt == LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
    LMX_LAUNCH(k_bias_rows<T>, lmx_cu_blocks(m * n), LMX_CU_THREADS, 0, s, m, n, (T *)out,
               (const T *)b, acc))
  return lmx_cu_last_error();
}

int lmx_cu_sum_rows(lmx_cu_stream s, int dt, int64_t m, int64_t n, void *out, const void *x,
                    int acc) {
  if (n == 0) return dt == LMX_FLOAT32 || dt == LMX_FLOAT64 || dt == LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
    LMX_LAUNCH(k_sum_rows<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, m, n, (T *)out,
               (const T *)x, acc))
  return lmx_cu_last_error();
}

template <typename T>
__global__ void k_bias_channels(int64_t N, int64_t C, int64_t inner, T *y, const T *b) {
  LMX_CU_GRID_LOOP(i, N * C * inner) {
    typename lmx_cu_acc<T>::type v = lmx_cu_ld(y, i);
    v += lmx_cu_ld(b, i / inner % C);
    lmx_cu_st(y, i, v);
  }
}

enum { SUM_NT = 256 }; /* threads of a channel-sum block (a power of two) */

template <typename T>
__global__ void k_sum_channels(int64_t N, int64_t C, int64_t inner, T *gb, const T *g, int acc) {
  typedef typename lmx_cu_acc<T>::type A;
  __shared__ A sh[SUM_NT];
  int64_t c = blockIdx.x, cnt = N * inner;
  A v = 0;
  for (int64_t q = threadIdx.x; q < cnt; q += SUM_NT) v += lmx_cu_ld(g, (q / inner * C + c) * inner + q % inner);
  sh[threadIdx.x] = v;
  __syncthreads();
  for (unsigned k = SUM_NT / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) lmx_cu_st(gb, c, sh[0] + (acc ? (A)lmx_cu_ld(gb, c) : (A)0));
}

int lmx_cu_bias_channels(lmx_cu_stream s, int dt, int64_t N, int64_t C, int64_t inner, void *y,
                         const void *b) {
  int64_t n = N * C * inner;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
    if (n == 0) return 0;
    LMX_LAUNCH(k_bias_channels<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, N, C, inner,
               (T *)y, (const T *)b))
  return lmx_cu_last_error();
}

int lmx_cu_sum_channels(lmx_cu_stream s, int dt, int64_t N, int64_t C, int64_t inner, void *gb,
                        const void *g, int acc) {
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
    if (C == 0) return 0;
    LMX_LAUNCH(k_sum_channels<T>, (unsigned)C, SUM_NT, 0, s, N, C, inner, (T *)gb,
               (const T *)g, acc))
  return lmx_cu_last_error();
}

/* ---- FullyConnected and batched products (the CPU's linalg.c, step for step) --------- */

int lmx_cu_fc_fwd(lmx_cu_stream s, int dt, int64_t m, int64_t k, int64_t n, void *out,
                  const void *x, const void *w, const void *b, int acc) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64 && dt != LMX_FLOAT16) return -1;
  if (m == 0 || n == 0) return 0;
  int pre = b && !acc, rc = 0;
  if (pre) rc = lmx_cu_bias_rows(s, dt, m, n, out, b, 0);
  if (!rc && k == 0) {
    if (!acc && !pre) rc = lmx_cu_bias_rows(s, dt, m, n, out, NULL, 0);
  } else if (!rc) {
    rc = lmx_cu_gemm(s, dt, 0, 1, m, n, k, 1.0, x, w, acc || pre ? 1.0 : 0.0, out);
  }
  if (!rc && b && acc) rc = lmx_cu_bias_rows(s, dt, m, n, out, b, 1);
  return rc;
}

int lmx_cu_fc_bwd_data(lmx_cu_stream s, int dt, int64_t m, int64_t k, int64_t n, void *gx,
                       const void *g, const void *w, int acc) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64 && dt != LMX_FLOAT16) return -1;
  if (m == 0 || k == 0) return 0;
  if (n == 0) return acc ? 0 : lmx_cu_bias_rows(s, dt, m, k, gx, NULL, 0);
  return lmx_cu_gemm(s, dt, 0, 0, m, k, n, 1.0, g, w, acc ? 1.0 : 0.0, gx);
}

int lmx_cu_fc_bwd_weight(lmx_cu_stream s, int dt, int64_t m, int64_t k, int64_t n, void *gw,
                         const void *g, const void *x, int acc) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64 && dt != LMX_FLOAT16) return -1;
  if (n == 0 || k == 0) return 0;
  if (m == 0) return acc ? 0 : lmx_cu_bias_rows(s, dt, n, k, gw, NULL, 0);
  return lmx_cu_gemm(s, dt, 1, 0, n, k, m, 1.0, g, x, acc ? 1.0 : 0.0, gw);
}

int lmx_cu_batch_gemm(lmx_cu_stream s, int dt, int64_t batch, int ta, int tb, int64_t m,
                      int64_t n, int64_t k, const void *A, const void *B, void *C, int acc) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64 && dt != LMX_FLOAT16) return -1;
  if (k == 0) return acc ? 0 : lmx_cu_bias_rows(s, dt, batch * m, n, C, NULL, 0);
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  lmx_cu_gemm_req r = {dt, ta, tb, m, n, k, batch, 1.0, acc ? 1.0 : 0.0,
                       A, lda < 1 ? 1 : lda, m * k, B, ldb < 1 ? 1 : ldb, k * n,
                       C, n < 1 ? 1 : n, m * n};
  return lmx_cu_gemm_req_run(s, &r);
}

/* ---- the cuBLASLt choice (blaslt_args.h) ---------------------------------------------- */

/* Reports the path of a product to the glue (o->ran, when asked): cuBLASLt with epi, or
 * cuBLAS for why. */
static void ran(const lmx_cu_lt_opts *o, int lt, int epi, const char *why) {
  if (!o || !o->ran) return;
  o->ran->lt = lt, o->ran->epi = lt ? epi : LMX_LT_EPI_NONE, o->ran->why = lt ? NULL : why;
}

/* One FullyConnected product through cuBLASLt: 0 done, LMX_CU_GEMM_SKIP (nothing written)
 * or an error; o->ran says which path and why. */
static int lt_product(lmx_cu_stream s, const lmx_cu_lt_opts *o, const lmx_lt_req *r) {
  const char *why = o ? lmx_lt_choose_why(o->mode, r->dt, r->epi, r->m, r->n, r->k, 1)
                      : "no cuBLASLt options";
  if (why) return ran(o, 0, r->epi, why), LMX_CU_GEMM_SKIP;
  lmx_lt_call c;
  /* cuBLASLt wants a 256-byte aligned workspace: a less aligned one is not offered */
  size_t ws_bytes = o->ws && lmx_lt_align(o->ws) >= 256 ? o->ws_bytes : 0;
  if (lmx_lt_derive(r, ws_bytes, &c, NULL, 0))
    return ran(o, 0, r->epi, "lmx_lt_derive refused the request"), LMX_CU_GEMM_SKIP;
  why = "cuBLASLt failed";
  int rc = lmx_cu_lt_run(s, &c, o->ws, &why);
  ran(o, rc == 0, r->epi, why);
  return rc;
}

int lmx_cu_fc_fwd_lt(lmx_cu_stream s, const lmx_cu_lt_opts *o, int dt, int64_t m, int64_t k,
                     int64_t n, void *out, const void *x, const void *w, const void *b, int acc) {
  lmx_lt_req r = {dt, 0, 1, lmx_lt_epilogue(1, b != NULL, 0, 0), m, n, k, 1.0, acc ? 1.0 : 0.0,
                  x, k, w, k, out, n, (void *)b};
  int rc = lt_product(s, o, &r);
  return rc == LMX_CU_GEMM_SKIP ? lmx_cu_fc_fwd(s, dt, m, k, n, out, x, w, b, acc) : rc;
}

int lmx_cu_fc_bwd_data_lt(lmx_cu_stream s, const lmx_cu_lt_opts *o, int dt, int64_t m,
                          int64_t k, int64_t n, void *gx, const void *g, const void *w, int acc) {
  lmx_lt_req r = {dt, 0, 0, LMX_LT_EPI_NONE, m, k, n, 1.0, acc ? 1.0 : 0.0, g, n, w, k, gx, k,
                  NULL};
  int rc = lt_product(s, o, &r);
  return rc == LMX_CU_GEMM_SKIP ? lmx_cu_fc_bwd_data(s, dt, m, k, n, gx, g, w, acc) : rc;
}

int lmx_cu_fc_bwd_weight_lt(lmx_cu_stream s, const lmx_cu_lt_opts *o, int dt, int64_t m,
                            int64_t k, int64_t n, void *gw, const void *g, const void *x,
                            int acc, void *gb, int gb_acc) {
  int rc = LMX_CU_GEMM_SKIP;
  if (gw) {
    /* gw[n,k] (+)= gᵀ[n,m] · x[m,k]; BGRADB sums op(A) = gᵀ over its k (the batch) */
    int epi = lmx_lt_epilogue(0, 1, gb != NULL, gb_acc);
    lmx_lt_req r = {dt, 1, 0, epi, n, k, m, 1.0, acc ? 1.0 : 0.0, g, n, x, k, gw, k,
                    epi == LMX_LT_EPI_BGRADB ? gb : NULL};
    rc = lt_product(s, o, &r);
    if (rc == 0 && epi == LMX_LT_EPI_BGRADB) return 0; /* both gradients made */
    if (rc == LMX_CU_GEMM_SKIP) rc = lmx_cu_fc_bwd_weight(s, dt, m, k, n, gw, g, x, acc);
    if (rc) return rc;
  } else {
    ran(o, 0, LMX_LT_EPI_NONE, "bias gradient alone: the column sum");
  }
  return gb ? lmx_cu_sum_rows(s, dt, m, n, gb, g, gb_acc) : 0;
}
