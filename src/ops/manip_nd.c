/* manip_nd.c — gather_nd and scatter_nd (issue 14), kernels in kernels/cpu/manip.c and
 * kernels/cuda/manip.cu, glue in src/ops/{cpu,cuda}/manip_nd.c.
 *
 * indices has shape (M, Y0, ..., Yk): column y names a position in the first M dims of
 * the indexed array (negative indices count from the end; out-of-range ones are clipped,
 * where MXNet's behaviour is undefined). gather_nd(data, indices) has shape
 * (Y0, ..., Yk, X_M, ..., X_{N-1}); scatter_nd(data, indices, shape) writes data's
 * columns into zeros of `shape` (for repeated positions the last column wins; MXNet
 * leaves that undefined). The gradient of each is the other one (summing repeated
 * positions for gather_nd); indices get a zero gradient.
 * MXNet 1.9: src/operator/tensor/indexing_op(-inl.h) (gather_nd, scatter_nd, ScatterNDParam).
 */
#include "manip_params.h"
#include "op_impl.h"

enum { G = LMX_NEEDS_OUT_GRADS };

#define SH(s) lmx_shape_str((s), (char[LMX_SHAPE_STRCAP]){0})

static const char *const nd_inputs[] = {"data", "indices", NULL};

/* The shape (Y..., X_M...) of indices (M, Y...) against an indexed shape x. */
static int nd_shape(const lmx_op_ctx *c, const lmx_shape *x, const lmx_shape *idx,
                    lmx_shape *o) {
  int64_t M = idx->dim[0];
  if (M < 1 || M > x->ndim)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'indices' %s: its first dim (%lld) must be "
                       "1 to the %d dims of the indexed shape %s", SH(idx), (long long)M,
                       x->ndim, SH(x));
  int nd = idx->ndim - 1 + x->ndim - (int)M;
  if (nd > LMX_MAX_NDIM)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "the result would have %d dims (at most %d)", nd,
                       LMX_MAX_NDIM);
  o->ndim = 0;
  for (int k = 1; k < idx->ndim; k++) o->dim[o->ndim++] = idx->dim[k];
  for (int k = (int)M; k < x->ndim; k++) o->dim[o->ndim++] = x->dim[k];
  if (o->ndim == 0) *o = LMX_SHP(1);
  return LMX_OK;
}

static int data_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                     int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  if (in[0] < 0 && out[0] >= 0) in[0] = out[0];
  return in[0] < 0 ? LMX_OK : lmx_dtype_assign(c, &out[0], in[0], "output");
}

static int gather_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                              int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  if (!lmx_shape_known(&in[0]) || !lmx_shape_known(&in[1])) return LMX_OK;
  lmx_shape o;
  LMX_TRY(nd_shape(c, &in[0], &in[1], &o));
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_gather_nd = {
    .name = "gather_nd",
    .doc = "Gathers elements or slices from data into an array of shape (Y0, ..., Yk, X_M, "
           "..., X_{N-1}) given indices of shape (M, Y0, ..., Yk).",
    .inputs = nd_inputs,
    .infer_shape = gather_infer_shape,
    .infer_type = data_type,
    .backward_needs = G | LMX_NEEDS_INPUTS,
};

static const lmx_param_field scatter_fields[] = {
    LMX_PF(lmx_scatter_nd_param, shape, LMX_PT_SHAPE, NULL, NULL, 0, 0, "Shape of output."),
};

static int scatter_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                               int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_scatter_nd_param *p = LMX_PRM(c, lmx_scatter_nd_param);
  if (!lmx_shape_known(&p->shape))
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'shape': expected positive dims, got %s",
                       SH(&p->shape));
  if (lmx_shape_known(&in[1])) {
    lmx_shape d;
    LMX_TRY(nd_shape(c, &p->shape, &in[1], &d));
    LMX_TRY(lmx_in_assign(c, in, 0, &d));
  }
  return lmx_out_assign(c, out, 0, &p->shape);
}

const lmx_op lmx_op_scatter_nd = {
    .name = "scatter_nd",
    .doc = "Scatters data into a new tensor of `shape` at the positions named by indices "
           "(zeros elsewhere; for a repeated position the last one wins).",
    LMX_PARAMS(scatter_fields, lmx_scatter_nd_param),
    .inputs = nd_inputs,
    .infer_shape = scatter_infer_shape,
    .infer_type = data_type,
    .backward_needs = G | LMX_NEEDS_INPUTS,
};
