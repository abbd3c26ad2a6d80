/* gemm_args.c — the row-major request → column-major BLAS call derivation (cu_gemm.h).
 *
 * Plain C with no CUDA header, compiled in every build so that tests/test_cu_gemm.c checks
 * it on the CPU; the simulator build then runs every device GEMM through OpenBLAS with
 * exactly these arguments, so the derivation is exercised end to end by each GPU op.
 * Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, and a row-major matrix
 * with row stride ld read column-major is its transpose with the same ld: the call takes
 * B as its first operand and A as its second, m and n swapped, flags and lds unchanged.
 */
#include <limits.h>
#include <stdio.h>

#include "../../src/luamx.h"
#include "cu_gemm.h"

#define FAIL(...)                                                                          \
  do {                                                                                     \
    if (msg && len) snprintf(msg, len, __VA_ARGS__);                                       \
    return LMX_CU_GEMM_EARG;                                                               \
  } while (0)

static int64_t max1(int64_t v) { return v < 1 ? 1 : v; }

int lmx_cu_gemm_derive(const lmx_cu_gemm_req *r, lmx_cu_gemm_call *c, char *msg, size_t len) {
  if (msg && len) msg[0] = 0;
  if (r->dt != LMX_FLOAT32 && r->dt != LMX_FLOAT64 && r->dt != LMX_FLOAT16) {
    if (msg && len) snprintf(msg, len, "gemm: dtype %d is not float32, float64 or float16", r->dt);
    return -1;
  }
  if (r->m < 0 || r->n < 0 || r->k < 0 || r->batch < 0)
    FAIL("gemm: dims must be >= 0, got m=%lld n=%lld k=%lld batch=%lld", (long long)r->m,
         (long long)r->n, (long long)r->k, (long long)r->batch);
  if (r->m > INT_MAX || r->n > INT_MAX || r->k > INT_MAX || r->batch > INT_MAX)
    FAIL("gemm: dims must fit cuBLAS's int, got m=%lld n=%lld k=%lld batch=%lld",
         (long long)r->m, (long long)r->n, (long long)r->k, (long long)r->batch);
  int64_t arow = r->ta ? r->m : r->k, brow = r->tb ? r->k : r->n;
  const char *an = r->ta ? "m (A transposed)" : "k", *bn = r->tb ? "k (B transposed)" : "n";
  if (r->lda < max1(arow) || r->lda > INT_MAX)
    FAIL("gemm: lda must be >= max(1, %s) = %lld and fit an int, got %lld", an,
         (long long)max1(arow), (long long)r->lda);
  if (r->ldb < max1(brow) || r->ldb > INT_MAX)
    FAIL("gemm: ldb must be >= max(1, %s) = %lld and fit an int, got %lld", bn,
         (long long)max1(brow), (long long)r->ldb);
  if (r->ldc < max1(r->n) || r->ldc > INT_MAX)
    FAIL("gemm: ldc must be >= max(1, n) = %lld and fit an int, got %lld",
         (long long)max1(r->n), (long long)r->ldc);
  if (r->sa < 0 || r->sb < 0 || r->sc < 0)
    FAIL("gemm: batch strides must be >= 0, got sa=%lld sb=%lld sc=%lld", (long long)r->sa,
         (long long)r->sb, (long long)r->sc);
  int nop = r->m == 0 || r->n == 0 || r->batch == 0;
  /* batches of C must not overlap: stacked (each after the previous matrix) or side by
   * side within the row stride (batch b at columns b*sc of every row) */
  if (!nop && r->batch > 1 && r->sc < (r->m - 1) * r->ldc + r->n &&
      !(r->sc >= r->n && (r->batch - 1) * r->sc + r->n <= r->ldc))
    FAIL("gemm: batches of C overlap: sc must be >= (m-1)*ldc + n = %lld (stacked) or "
         "in [n, (ldc-n)/(batch-1)] = [%lld, %lld] (side by side), got %lld",
         (long long)((r->m - 1) * r->ldc + r->n), (long long)r->n,
         (long long)((r->ldc - r->n) / (r->batch - 1)), (long long)r->sc);
  if (!nop && !r->C) FAIL("gemm: C is NULL for a %lldx%lld result", (long long)r->m, (long long)r->n);
  if (!nop && r->k > 0 && (!r->A || !r->B))
    FAIL("gemm: %s is NULL with k=%lld", r->A ? "B" : "A", (long long)r->k);
  c->dt = r->dt;
  c->transa = r->tb != 0, c->transb = r->ta != 0;
  c->m = (int)r->n, c->n = (int)r->m, c->k = (int)r->k;
  c->A = r->B, c->lda = (int)r->ldb, c->sa = r->sb;
  c->B = r->A, c->ldb = (int)r->lda, c->sb = r->sa;
  c->C = r->C, c->ldc = (int)r->ldc, c->sc = r->sc;
  c->batch = (int)r->batch, c->nop = nop;
  c->alpha = r->alpha, c->beta = r->beta;
  return 0;
}
