/* sequence.c — CPU glue of SequenceMask, SequenceLast and SequenceReverse.
 *
 * Data is (T, N, rest...) with axis 0, or (N, T, rest...) with axis 1 (Mask, Last); each
 * (time, batch) pair owns a contiguous block of R = prod(rest) elements, so every op is
 * a block copy or fill. Lengths come from the optional `sequence_length` input (any
 * dtype, truncated; clamped into [0, T], and into [1, T] for SequenceLast, so a bad
 * length can never index outside the data); without it every sequence has length T.
 * Gradients route the head gradient back through the same blocks (masked blocks and
 * positions SequenceLast did not pick get zero). The sequence_length input gets none.
 * MXNet 1.9: src/operator/sequence_mask-inl.h, sequence_last-inl.h, sequence_reverse-inl.h.
 */
#include <string.h>

#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../op_impl.h"
#include "cpu_ops.h"

typedef struct {
  int64_t T, N, R;
  int axis, dt;
  size_t es;
} seq_geo;

static int seq_geo_of(const lmx_op_ctx *c, const lmx_tensor *in, int nin, seq_geo *g) {
  const lmx_shape *s = &in[0].shape;
  g->axis = (int)((const lmx_seq_param *)c->param)->axis;
  if (s->ndim < 2 || g->axis < 0 || g->axis > 1)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected at least 2-D with axis 0 or 1");
  g->T = s->dim[g->axis], g->N = s->dim[1 - g->axis], g->R = lmx_glue_inner(s, 1);
  g->dt = in[0].dtype, g->es = (size_t)lmx_dtype_size(g->dt);
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], g->T * g->N * g->R, "input 'data'"));
  if (nin > 1) LMX_TRY(lmx_glue_check_size(c, &in[1], g->N, "input 'sequence_length'"));
  return LMX_OK;
}

static int64_t seq_len(const lmx_tensor *in, int nin, const seq_geo *g, int64_t b, int64_t lo) {
  int64_t L = g->T;
  if (nin > 1) {
    double v = lmx_load_f64(in[1].data, in[1].dtype, b);
    L = v != v ? 0 : v > (double)g->T ? g->T : (int64_t)v;
  }
  return L < lo ? (lo <= g->T ? lo : g->T) : L;
}

static char *blk(const void *base, const seq_geo *g, int64_t t, int64_t b) {
  int64_t i = g->axis == 0 ? t * g->N + b : b * g->T + t;
  return (char *)base + (size_t)(i * g->R) * g->es;
}

static int nin_of(const lmx_op_ctx *c) {
  return ((const lmx_seq_param *)c->param)->use_sequence_length ? 2 : 1;
}

/* ---- SequenceMask ------------------------------------------------------------------ */

static void mask_pass(const seq_geo *g, const lmx_tensor *in, int nin, void *dst,
                      const void *src, double value, int acc) {
  for (int64_t b = 0; b < g->N; b++) {
    int64_t L = seq_len(in, nin, g, b, 0);
    for (int64_t t = 0; t < g->T; t++) {
      if (t < L) lmx_cpu_scale(g->dt, g->R, blk(dst, g, t, b), blk(src, g, t, b), 1.0, acc);
      else if (!acc) lmx_cpu_fill(blk(dst, g, t, b), g->dt, g->R, value);
      else if (value != 0.0)
        lmx_cpu_scalar_op(LMX_SC_PLUS, g->dt, g->R, blk(dst, g, t, b), blk(dst, g, t, b), value, 0);
    }
  }
}

int lmx_cpu_fwd_SequenceMask(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                             const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  seq_geo g = {0};
  int nin = nin_of(c);
  LMX_TRY(seq_geo_of(c, in, nin, &g));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, g.dt, "output"));
  mask_pass(&g, in, nin, out[0].data, in[0].data, ((const lmx_seq_param *)c->param)->value,
            req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

/* Shared start of the elementwise-shaped backwards (SequenceMask, SequenceReverse):
 * sequence_length gets no gradient; *run is 0 when the data gradient is not wanted. */
static int same_shape_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                          const lmx_tensor *ig, const int *req, seq_geo *g, int *nin,
                          int *run) {
  *nin = nin_of(c);
  *run = 0;
  if (*nin > 1) lmx_cpu_zero_grad(&ig[1], req[1]);
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(seq_geo_of(c, in, *nin, g));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &in[0].shape, g->dt, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, g->dt, "gradient of 'data'"));
  *run = 1;
  return LMX_OK;
}

int lmx_cpu_bwd_SequenceMask(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                             const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                             const lmx_tensor *aux) {
  (void)out, (void)aux;
  seq_geo g = {0};
  int nin, run;
  LMX_TRY(same_shape_bwd(c, og, in, ig, req, &g, &nin, &run));
  if (run) mask_pass(&g, in, nin, ig[0].data, og[0].data, 0.0, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

/* ---- SequenceLast ------------------------------------------------------------------ */

int lmx_cpu_fwd_SequenceLast(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                             const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  seq_geo g = {0};
  int nin = nin_of(c);
  LMX_TRY(seq_geo_of(c, in, nin, &g));
  LMX_TRY(lmx_glue_check_size(c, &out[0], g.N * g.R, "output"));
  if (out[0].dtype != g.dt) return lmx_cpu_fail_dtype(c, &out[0], "output");
  if (g.T == 0) return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': empty sequence axis");
  for (int64_t b = 0; b < g.N; b++) {
    int64_t L = seq_len(in, nin, &g, b, 1);
    lmx_cpu_scale(g.dt, g.R, (char *)out[0].data + (size_t)(b * g.R) * g.es,
                  blk(in[0].data, &g, L - 1, b), 1.0, req[0] == LMX_REQ_ADD);
  }
  return LMX_OK;
}

int lmx_cpu_bwd_SequenceLast(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                             const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                             const lmx_tensor *aux) {
  (void)out, (void)aux;
  seq_geo g = {0};
  int nin = nin_of(c);
  if (nin > 1) lmx_cpu_zero_grad(&ig[1], req[1]);
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(seq_geo_of(c, in, nin, &g));
  LMX_TRY(lmx_glue_check_size(c, &og[0], g.N * g.R, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, g.dt, "gradient of 'data'"));
  if (g.T == 0) return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': empty sequence axis");
  if (req[0] != LMX_REQ_ADD) memset(ig[0].data, 0, (size_t)(g.T * g.N * g.R) * g.es);
  for (int64_t b = 0; b < g.N; b++) {
    int64_t L = seq_len(in, nin, &g, b, 1);
    lmx_cpu_scale(g.dt, g.R, blk(ig[0].data, &g, L - 1, b),
                  (const char *)og[0].data + (size_t)(b * g.R) * g.es, 1.0, 1);
  }
  return LMX_OK;
}

/* ---- SequenceReverse ----------------------------------------------------------------- */

/* dst[t, b] (+)= src[L-1-t, b] for t < L, src[t, b] beyond (dst never aliases src). */
static void reverse_pass(const seq_geo *g, const lmx_tensor *in, int nin, void *dst,
                         const void *src, int acc) {
  for (int64_t b = 0; b < g->N; b++) {
    int64_t L = seq_len(in, nin, g, b, 0);
    for (int64_t t = 0; t < g->T; t++)
      lmx_cpu_scale(g->dt, g->R, blk(dst, g, t, b), blk(src, g, t < L ? L - 1 - t : t, b), 1.0,
                    acc);
  }
}

int lmx_cpu_fwd_SequenceReverse(const lmx_op_ctx *c, const lmx_tensor *in,
                                const lmx_tensor *out, const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  seq_geo g = {0};
  int nin = nin_of(c);
  LMX_TRY(seq_geo_of(c, in, nin, &g));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, g.dt, "output"));
  if (out[0].data == in[0].data)
    return lmx_op_fail(c, LMX_ERR_ARG, "output: cannot reverse in place");
  reverse_pass(&g, in, nin, out[0].data, in[0].data, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_bwd_SequenceReverse(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                                const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                                const lmx_tensor *aux) {
  (void)out, (void)aux;
  seq_geo g = {0};
  int nin, run;
  LMX_TRY(same_shape_bwd(c, og, in, ig, req, &g, &nin, &run));
  if (run) reverse_pass(&g, in, nin, ig[0].data, og[0].data, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}
