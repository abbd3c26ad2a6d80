/* index_plan.c — shared dims of the indexing and sequence glue (see index_plan.h). */
#include "index_plan.h"

#include <stdio.h>

#include "../core/status.h"

#include "glue.h"
#include "op_impl.h"
#include "op_params.h"

int lmx_plan_take(const lmx_op_ctx *c, const lmx_tensor *a, const lmx_tensor *idx,
                  int embedding, lmx_take_plan *t) {
  int ax = 0, mode = LMX_TAKE_CLIP; /* Embedding: axis 0, indices clipped */
  if (!embedding) {
    const lmx_take_param *p = c->param;
    LMX_TRY(lmx_op_axis(c, "axis", p->axis, a->shape.ndim, &ax));
    mode = p->mode;
  }
  t->outer = lmx_glue_outer(&a->shape, ax), t->A = a->shape.dim[ax];
  t->inner = lmx_glue_inner(&a->shape, ax), t->K = lmx_glue_size(idx);
  t->mode = mode;
  if (t->A == 0 && t->K > 0)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "cannot take from an empty axis");
  LMX_TRY(lmx_glue_check_size(c, a, lmx_glue_size(a), embedding ? "input 'weight'" : "input 'a'"));
  return lmx_glue_check_size(c, idx, t->K, embedding ? "input 'data'" : "input 'indices'");
}

int lmx_plan_where(const lmx_op_ctx *c, const lmx_tensor *in, int64_t *n, int64_t *row) {
  *n = lmx_glue_size(&in[1]);
  LMX_TRY(lmx_glue_check_like(c, &in[2], &in[1].shape, in[1].dtype, "input 'y'"));
  LMX_TRY(lmx_glue_check_size(c, &in[1], *n, "input 'x'"));
  int64_t nc = lmx_glue_size(&in[0]);
  *row = 1;
  if (nc != *n) {
    if (in[0].shape.ndim != 1 || in[1].shape.ndim < 1 || nc != in[1].shape.dim[0])
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'condition': expected x's shape or (%lld,)",
                         (long long)(in[1].shape.ndim ? in[1].shape.dim[0] : 0));
    *row = nc ? *n / nc : 1;
  }
  return lmx_glue_check_size(c, &in[0], nc, "input 'condition'");
}

int lmx_plan_seq(const lmx_op_ctx *c, const lmx_tensor *in, lmx_seq_plan *g) {
  const lmx_seq_param *p = c->param;
  const lmx_shape *s = &in[0].shape;
  g->axis = (int)p->axis;
  g->nin = p->use_sequence_length ? 2 : 1;
  if (s->ndim < 2 || g->axis < 0 || g->axis > 1)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected at least 2-D with axis 0 or 1");
  g->T = s->dim[g->axis], g->N = s->dim[1 - g->axis], g->R = lmx_glue_inner(s, 1);
  LMX_TRY(lmx_glue_check_size(c, &in[0], g->T * g->N * g->R, "input 'data'"));
  if (g->nin > 1) LMX_TRY(lmx_glue_check_size(c, &in[1], g->N, "input 'sequence_length'"));
  return LMX_OK;
}

void lmx_take_bad_index_text(char *buf, size_t cap, long long pos, long long value,
                             int64_t A) {
  snprintf(buf, cap, "input 'indices': index %lld at position %lld is out of range [0, %lld)",
           value, pos, (long long)A);
}
