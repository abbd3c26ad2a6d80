/* blaslt_args.c — which GEMM path runs, and the cublasLtMatmul argument derivation
 * (blaslt_args.h). Plain C with no CUDA header, compiled in every build.
 * The swap is cu_gemm.h's: row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ,
 * so the call's A is the request's B (with tb as its transpose flag and ldb), its B the
 * request's A, its m the request's n and its n the request's m.
 */
#include "blaslt_args.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../../src/luamx.h"

_Static_assert(sizeof(struct lmx_lt_key) == 14 * sizeof(int) + 3 * sizeof(lmx_lt_layout) +
                   sizeof(uint64_t),
               "struct lmx_lt_key has padding: its memcmp would compare garbage");

#define FAIL(...)                                                                          \
  do {                                                                                     \
    if (msg && len) snprintf(msg, len, __VA_ARGS__);                                       \
    return -1;                                                                             \
  } while (0)

int lmx_lt_parse_mode(const char *env, int *mode) {
  *mode = LMX_LT_OFF;
  if (!env || !*env || strcmp(env, "auto") == 0) return *mode = LMX_LT_AUTO, 0;
  if (strcmp(env, "0") == 0) return 0;
  if (strcmp(env, "1") == 0) return *mode = LMX_LT_ON, 0;
  return -1;
}

int lmx_lt_epilogue(int fwd, int has_bias, int want_bias, int bias_acc) {
  if (fwd) return has_bias ? LMX_LT_EPI_BIAS : LMX_LT_EPI_NONE;
  return has_bias && want_bias && !bias_acc ? LMX_LT_EPI_BGRADB : LMX_LT_EPI_NONE;
}

const char *lmx_lt_choose_why(int mode, int dt, int epi, int64_t m, int64_t n, int64_t k,
                              int64_t batch) {
  if (mode == LMX_LT_OFF) return "LUAMX_CUBLASLT=0";
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT16) return "dtype is not float32 or float16";
  if (batch != 1 || m < 1 || n < 1 || k < 1) return "an empty or batched product";
  if (mode == LMX_LT_ON) return NULL;
  if (mode != LMX_LT_AUTO) return "unknown LUAMX_CUBLASLT mode";
  if (epi == LMX_LT_EPI_NONE) return "auto: no epilogue to fuse";
  if (dt == LMX_FLOAT32 && epi == LMX_LT_EPI_BIAS && k >= (int64_t)LMX_LT_LONG_K * m)
    return "auto: a float32 forward with a long reduction (k >= 16 m), faster through cuBLAS";
  return NULL;
}

int lmx_lt_choose(int mode, int dt, int epi, int64_t m, int64_t n, int64_t k, int64_t batch) {
  return lmx_lt_choose_why(mode, dt, epi, m, n, k, batch) == NULL;
}

int lmx_lt_align(const void *p) {
  uintptr_t a = (uintptr_t)p;
  int al = 1;
  if (!a) return 256;
  while (al < 256 && (a & (uintptr_t)al) == 0) al <<= 1;
  return al;
}

/* the stored matrix of an operand whose op() is rows x cols: transposed, it is cols x rows */
static lmx_lt_layout layout(int type, int trans, int64_t rows, int64_t cols, int64_t ld) {
  lmx_lt_layout l = {type, trans ? cols : rows, trans ? rows : cols, ld};
  /* a stored matrix is never empty here: dims >= 1 were checked */
  return l;
}

int lmx_lt_derive(const lmx_lt_req *r, size_t ws_bytes, lmx_lt_call *c, char *msg, size_t len) {
  if (msg && len) msg[0] = 0;
  if (r->dt != LMX_FLOAT32 && r->dt != LMX_FLOAT16)
    FAIL("cublasLt: dtype %d is not float32 (%d) or float16 (%d)", r->dt, LMX_FLOAT32,
         LMX_FLOAT16);
  if (r->epi != LMX_LT_EPI_NONE && r->epi != LMX_LT_EPI_BIAS && r->epi != LMX_LT_EPI_BGRADB)
    FAIL("cublasLt: epilogue %d is not none (0), bias (1) or bgradb (2)", r->epi);
  if (r->m < 1 || r->n < 1 || r->k < 1 || r->m > INT_MAX || r->n > INT_MAX || r->k > INT_MAX)
    FAIL("cublasLt: dims must be in [1, %d], got m=%lld n=%lld k=%lld", INT_MAX,
         (long long)r->m, (long long)r->n, (long long)r->k);
  int64_t arow = r->ta ? r->m : r->k, brow = r->tb ? r->k : r->n;
  if (r->lda < arow || r->lda > INT_MAX)
    FAIL("cublasLt: lda must be >= %s = %lld and fit an int, got %lld",
         r->ta ? "m (A transposed)" : "k", (long long)arow, (long long)r->lda);
  if (r->ldb < brow || r->ldb > INT_MAX)
    FAIL("cublasLt: ldb must be >= %s = %lld and fit an int, got %lld",
         r->tb ? "k (B transposed)" : "n", (long long)brow, (long long)r->ldb);
  if (r->ldc < r->n || r->ldc > INT_MAX)
    FAIL("cublasLt: ldc must be >= n = %lld and fit an int, got %lld", (long long)r->n,
         (long long)r->ldc);
  if (!r->A || !r->B || !r->C)
    FAIL("cublasLt: %s is NULL", !r->A ? "A" : !r->B ? "B" : "C");
  if ((r->epi != LMX_LT_EPI_NONE) != (r->bias != NULL))
    FAIL("cublasLt: epilogue %s, got %s",
         r->epi == LMX_LT_EPI_BIAS     ? "bias needs a bias pointer"
         : r->epi == LMX_LT_EPI_BGRADB ? "bgradb needs a bias pointer"
                                       : "none takes no bias pointer",
         r->bias ? "one" : "NULL");
  memset(c, 0, sizeof *c); /* the key is compared bytewise: padding included */
  struct lmx_lt_key *k = &c->key;
  int type = r->dt == LMX_FLOAT16 ? LMX_LT_R_16F : LMX_LT_R_32F;
  k->type = type, k->compute = 32, k->scale_type = LMX_LT_R_32F;
  k->transa = r->tb != 0, k->transb = r->ta != 0;
  k->epilogue = r->epi == LMX_LT_EPI_BIAS     ? LMX_LT_CU_EPI_BIAS
                : r->epi == LMX_LT_EPI_BGRADB ? LMX_LT_CU_EPI_BGRADB
                                              : LMX_LT_CU_EPI_DEFAULT;
  k->m = (int)r->n, k->n = (int)r->m, k->k = (int)r->k;
  k->a = layout(type, k->transa, k->m, k->k, r->ldb); /* op(A') = m x k */
  k->b = layout(type, k->transb, k->k, k->n, r->lda); /* op(B') = k x n */
  k->c = layout(type, 0, k->m, k->n, r->ldc);
  k->align_a = lmx_lt_align(r->B), k->align_b = lmx_lt_align(r->A);
  k->align_c = lmx_lt_align(r->C), k->align_bias = lmx_lt_align(r->bias);
  k->ws_bytes = (uint64_t)ws_bytes;
  c->alpha = (float)r->alpha, c->beta = (float)r->beta;
  c->A = r->B, c->B = r->A, c->C = r->C, c->bias = r->bias;
  return 0;
}
