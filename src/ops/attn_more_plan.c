/* attn_more_plan.c — the products of the interleaved attention matmuls from their input
 * shapes (attn_more_plan.h has the layouts). */
#include "attn_more_plan.h"

#include "op_impl.h"

static lmx_imm_mat M(int t, int64_t off, int64_t ld, int64_t stride) {
  return (lmx_imm_mat){t, off, ld, stride};
}

static lmx_imm_gemm G(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                      lmx_imm_mat a, lmx_imm_mat b, lmx_imm_mat c) {
  return (lmx_imm_gemm){ta, tb, m, n, k, alpha, a, b, c};
}

/* Input i is 3-D with a last dim that is a positive multiple of per·heads; *d gets the
 * head dim. */
static int proj(const lmx_op_ctx *c, const lmx_shape *s, int i, int per, int64_t heads,
                int64_t *d) {
  char nm[48];
  lmx_op_in_name(c, i, nm, sizeof nm);
  if (s->ndim != 3)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input '%s': expected 3-D (seq_length, batch, "
                       "projections), got %d-D", nm, s->ndim);
  int64_t q = per * heads;
  if (s->dim[2] < q || s->dim[2] % q != 0)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input '%s': expected a last dim that is a positive "
                       "multiple of %d * heads = %lld, got %lld", nm, per, (long long)q,
                       (long long)s->dim[2]);
  *d = s->dim[2] / q;
  return LMX_OK;
}

/* attention input 1: (N, lq, lk), lq < 0 when any length goes */
static int att(const lmx_op_ctx *c, const lmx_shape *s, int64_t n, int64_t lq, int64_t lk) {
  if (s->ndim != 3)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'attention': expected 3-D (batch * heads, "
                       "seq_length, seq_length), got %d-D", s->ndim);
  if (s->dim[0] != n || (lq >= 0 && s->dim[1] != lq) || s->dim[2] != lk) {
    char want[64];
    if (lq >= 0) snprintf(want, sizeof want, "(%lld,%lld,%lld)", (long long)n, (long long)lq,
                          (long long)lk);
    else snprintf(want, sizeof want, "(%lld,_,%lld)", (long long)n, (long long)lk);
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'attention': expected shape %s, got "
                       "(%lld,%lld,%lld)", want, (long long)s->dim[0], (long long)s->dim[1],
                       (long long)s->dim[2]);
  }
  return LMX_OK;
}

static void self_qk(lmx_imm_plan *p, int64_t L, int64_t D, int64_t N) {
  int64_t ld = N * 3 * D, sq = 3 * D;
  double sc = 1.0 / sqrt((double)D);
  /* out_i = sc · Q_i K_iᵀ; dQ_i = sc · G_i K_i; dK_i = sc · G_iᵀ Q_i (V's slot zero) */
  p->fwd = G(0, 1, L, L, D, sc, M(LMX_IMM_IN0, 0, ld, sq), M(LMX_IMM_IN0, D, ld, sq),
             M(LMX_IMM_OUT, 0, L, L * L));
  p->bwd[0] = G(0, 0, L, D, L, sc, M(LMX_IMM_OG, 0, L, L * L), M(LMX_IMM_IN0, D, ld, sq),
                M(LMX_IMM_IG0, 0, ld, sq));
  p->bwd[1] = G(1, 0, L, D, L, sc, M(LMX_IMM_OG, 0, L, L * L), M(LMX_IMM_IN0, 0, ld, sq),
                M(LMX_IMM_IG0, D, ld, sq));
  p->partial[0] = 1;
}

/* value products: kv tensor t (slot at voff, per vectors a head), attention in[1] */
static void valatt(lmx_imm_plan *p, int64_t Lq, int64_t Lk, int64_t D, int64_t N, int per,
                   int64_t voff) {
  int64_t ld = N * per * D, sv = per * D, lo = N * D;
  /* out_i = A_i V_i; dV_i = A_iᵀ G_i; dA_i = G_i V_iᵀ */
  p->fwd = G(0, 0, Lq, D, Lk, 1.0, M(LMX_IMM_IN1, 0, Lk, Lq * Lk),
             M(LMX_IMM_IN0, voff, ld, sv), M(LMX_IMM_OUT, 0, lo, D));
  p->bwd[0] = G(1, 0, Lk, D, Lq, 1.0, M(LMX_IMM_IN1, 0, Lk, Lq * Lk), M(LMX_IMM_OG, 0, lo, D),
                M(LMX_IMM_IG0, voff, ld, sv));
  p->bwd[1] = G(0, 1, Lq, Lk, D, 1.0, M(LMX_IMM_OG, 0, lo, D), M(LMX_IMM_IN0, voff, ld, sv),
                M(LMX_IMM_IG1, 0, Lk, Lq * Lk));
  p->partial[0] = 1;
}

static void encdec_qk(lmx_imm_plan *p, int64_t Lq, int64_t Lk, int64_t D, int64_t N) {
  int64_t lq = N * D, lkv = N * 2 * D;
  double sc = 1.0 / sqrt((double)D);
  /* out_i = sc · Q_i K_iᵀ; dQ_i = sc · G_i K_i; dK_i = sc · G_iᵀ Q_i (V's slot zero) */
  p->fwd = G(0, 1, Lq, Lk, D, sc, M(LMX_IMM_IN0, 0, lq, D), M(LMX_IMM_IN1, 0, lkv, 2 * D),
             M(LMX_IMM_OUT, 0, Lk, Lq * Lk));
  p->bwd[0] = G(0, 0, Lq, D, Lk, sc, M(LMX_IMM_OG, 0, Lk, Lq * Lk),
                M(LMX_IMM_IN1, 0, lkv, 2 * D), M(LMX_IMM_IG0, 0, lq, D));
  p->bwd[1] = G(1, 0, Lk, D, Lq, sc, M(LMX_IMM_OG, 0, Lk, Lq * Lk), M(LMX_IMM_IN0, 0, lq, D),
                M(LMX_IMM_IG1, 0, lkv, 2 * D));
  p->partial[1] = 1;
}

int lmx_imm_plan_make(const lmx_op_ctx *c, int kind, const lmx_shape *in, lmx_imm_plan *p) {
  const lmx_imm_param *q = c->param;
  int64_t H = q->heads, D, D2;
  memset(p, 0, sizeof *p);
  switch (kind) {
  case LMX_IMM_SELF_QK: {
    LMX_TRY(proj(c, &in[0], 0, 3, H, &D));
    int64_t L = in[0].dim[0], N = in[0].dim[1] * H;
    p->batch = N;
    p->out = LMX_SHP(N, L, L);
    self_qk(p, L, D, N);
    return LMX_OK;
  }
  case LMX_IMM_SELF_VALATT: {
    LMX_TRY(proj(c, &in[0], 0, 3, H, &D));
    int64_t L = in[0].dim[0], N = in[0].dim[1] * H;
    LMX_TRY(att(c, &in[1], N, L, L));
    p->batch = N;
    p->out = LMX_SHP(L, in[0].dim[1], H * D);
    valatt(p, L, L, D, N, 3, 2 * D);
    return LMX_OK;
  }
  case LMX_IMM_ENCDEC_QK: {
    LMX_TRY(proj(c, &in[0], 0, 1, H, &D));
    LMX_TRY(proj(c, &in[1], 1, 2, H, &D2));
    if (D2 != D || in[1].dim[1] != in[0].dim[1])
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'keys_values': expected shape (_,%lld,%lld) "
                         "(the batch of 'queries', twice its projections), got (%lld,%lld,%lld)",
                         (long long)in[0].dim[1], (long long)(2 * in[0].dim[2]),
                         (long long)in[1].dim[0], (long long)in[1].dim[1],
                         (long long)in[1].dim[2]);
    int64_t N = in[0].dim[1] * H;
    p->batch = N;
    p->out = LMX_SHP(N, in[0].dim[0], in[1].dim[0]);
    encdec_qk(p, in[0].dim[0], in[1].dim[0], D, N);
    return LMX_OK;
  }
  case LMX_IMM_ENCDEC_VALATT: {
    LMX_TRY(proj(c, &in[0], 0, 2, H, &D));
    int64_t Lk = in[0].dim[0], N = in[0].dim[1] * H;
    LMX_TRY(att(c, &in[1], N, -1, Lk));
    int64_t Lq = in[1].dim[1];
    p->batch = N;
    p->out = LMX_SHP(Lq, in[0].dim[1], H * D);
    valatt(p, Lq, Lk, D, N, 2, D);
    return LMX_OK;
  }
  default:
    return lmx_op_fail(c, LMX_ERR_ARG, "unknown interleaved matmul %d", kind);
  }
}
