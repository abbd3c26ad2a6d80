/* nn_sampling.c — GridGenerator, BilinearSampler and SpatialTransformer (issue 14).
 *
 * GridGenerator: affine takes theta (N, 6) and target_shape (H, W) and gives the grid
 *   (N, 2, H, W) of theta [x_w, y_h, 1] (row 0 the x coordinate, row 1 the y); warp takes
 *   a flow (N, 2, H, W) and gives ((flow_x + w) 2 / (W - 1) - 1, (flow_y + h) 2 / (H - 1)
 *   - 1). BilinearSampler: data (N, C, H, W) sampled at grid (N, 2, OH, OW) of normalised
 *   (x, y), zero outside. SpatialTransformer: the two in one, loc (N, 6) as theta. The
 *   arithmetic is kernels/sampling_impl.h. MXNet also lists hidden scratch outputs (tmp,
 *   grid_dst, grid_src) nothing reads; luamx keeps one output (SpatialTransformer's
 *   backward recomputes the grid in its workspace). MXNet 1.9: src/operator/
 *   grid_generator-inl.h, bilinear_sampler-inl.h, spatial_transformer-inl.h.
 */
#include "op_impl.h"
#include "sampling.h"

static int need_ndim(const lmx_op_ctx *c, const lmx_shape *s, int nd, const char *what,
                     const char *layout) {
  if (s->ndim == nd) return LMX_OK;
  char b[LMX_SHAPE_STRCAP];
  return lmx_op_fail(c, LMX_ERR_SHAPE, "input '%s': expected %d-D %s, got %s", what, nd, layout,
                     lmx_shape_str(s, b));
}

static int need_target(const lmx_op_ctx *c, const lmx_shape *t) {
  if (t->ndim == 2 && t->dim[0] > 0 && t->dim[1] > 0) return LMX_OK;
  char b[LMX_SHAPE_STRCAP];
  return lmx_op_fail(c, LMX_ERR_ARG,
                     "parameter 'target_shape': expected (H, W) with both "
                     "above 0, got %s",
                     lmx_shape_str(t, b));
}

/* ---- GridGenerator ---------------------------------------------------------------------- */

static const lmx_param_field gg_fields[] = {
    LMX_PF(lmx_gridgen_param, transform_type, LMX_PT_ENUM, NULL, "affine|warp", 0, 0,
           "The type of transformation. For `affine`, input data should be an affine matrix "
           "of size (batch, 6). For `warp`, input data should be an optical flow of size "
           "(batch, 2, h, w)."),
    LMX_PF(lmx_gridgen_param, target_shape, LMX_PT_SHAPE, "(0, 0)", NULL, 0, 0,
           "Specifies the output shape (H, W). This is required if transformation type is "
           "affine. If transformation type is warp, this parameter is ignored."),
};

int lmx_gridgen_plan(const lmx_op_ctx *c, const lmx_shape *d, lmx_shape *o) {
  const lmx_gridgen_param *p = c->param;
  char b[LMX_SHAPE_STRCAP];
  if (p->transform_type == LMX_GG_WARP) {
    LMX_TRY(need_ndim(c, d, 4, "data", "flow (N, 2, H, W)"));
    if (d->dim[1] != 2)
      return lmx_op_fail(c, LMX_ERR_SHAPE,
                         "input 'data': a warp flow needs 2 channels (N, 2, "
                         "H, W), got %s",
                         lmx_shape_str(d, b));
    *o = *d;
    return LMX_OK;
  }
  LMX_TRY(need_target(c, &p->target_shape));
  if (d->ndim != 2 || d->dim[1] != 6)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "input 'data': an affine transform needs (N, 6), got "
                       "%s",
                       lmx_shape_str(d, b));
  *o = LMX_SHP(d->dim[0], 2, p->target_shape.dim[0], p->target_shape.dim[1]);
  return LMX_OK;
}

static int gg_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out, int nout,
                          lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  lmx_shape o;
  LMX_TRY(lmx_gridgen_plan(c, &in[0], &o));
  return lmx_out_assign(c, out, 0, &o);
}

static int gg_check(const lmx_op_ctx *c, void *param) {
  const lmx_gridgen_param *p = param;
  return p->transform_type == LMX_GG_AFFINE ? need_target(c, &p->target_shape) : LMX_OK;
}

const lmx_op lmx_op_GridGenerator = {
    .name = "GridGenerator",
    .doc =
        "Generates 2D sampling grids for bilinear sampling: from an affine matrix (N, 6) "
        "and target_shape, or from an optical flow (N, 2, H, W). The output (N, 2, H, W) "
        "holds normalised (x, y) in [-1, 1].",
    LMX_PARAMS(gg_fields, lmx_gridgen_param),
    .param_check = gg_check,
    .infer_shape = gg_infer_shape,
    .backward_needs = LMX_NEEDS_OUT_GRADS,
};

/* ---- BilinearSampler -------------------------------------------------------------------- */

static const lmx_param_field bs_fields[] = {
    LMX_PF(lmx_bsampler_param, cudnn_off, LMX_PT_OPT_BOOL, "None", NULL, 0, 0,
           "whether to turn cudnn off"),
};

static const char *const bs_inputs[] = {"data", "grid", NULL};

int lmx_bsampler_plan(const lmx_op_ctx *c, const lmx_shape *d, const lmx_shape *gr,
                      lmx_smp_geom *g) {
  char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
  LMX_TRY(need_ndim(c, d, 4, "data", "data (N, C, H, W)"));
  LMX_TRY(need_ndim(c, gr, 4, "grid", "grid (N, 2, H, W)"));
  if (gr->dim[0] != d->dim[0] || gr->dim[1] != 2)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "input 'grid': expected (%lld, 2, H, W) for data %s, "
                       "got %s",
                       (long long)d->dim[0], lmx_shape_str(d, a), lmx_shape_str(gr, b));
  lmx_smp_geom s = {d->dim[0], d->dim[1], d->dim[2], d->dim[3], gr->dim[2], gr->dim[3]};
  *g = s;
  return LMX_OK;
}

static int bs_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out, int nout,
                          lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  if (!lmx_shape_known(&in[0]) || !lmx_shape_known(&in[1])) return LMX_OK;
  lmx_smp_geom g;
  LMX_TRY(lmx_bsampler_plan(c, &in[0], &in[1], &g));
  lmx_shape o = LMX_SHP(g.N, g.C, g.OH, g.OW);
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_BilinearSampler = {
    .name = "BilinearSampler",
    .doc =
        "Applies bilinear sampling to input feature map: output[n, c, h, w] interpolates "
        "data[n, c] at the normalised point grid[n, :, h, w] (x = -1 the left edge's "
        "centre, 1 the right's), reading zeros outside the data.",
    LMX_PARAMS(bs_fields, lmx_bsampler_param),
    .inputs = bs_inputs,
    .infer_shape = bs_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};

/* ---- SpatialTransformer ----------------------------------------------------------------- */

static const lmx_param_field stn_fields[] = {
    LMX_PF(lmx_stn_param, target_shape, LMX_PT_SHAPE, "(0, 0)", NULL, 0, 0,
           "output shape(h, w) of spatial transformer: (y, x)"),
    LMX_PF(lmx_stn_param, transform_type, LMX_PT_ENUM, NULL, "affine", 0, 0, "transformation type"),
    LMX_PF(lmx_stn_param, sampler_type, LMX_PT_ENUM, NULL, "bilinear", 0, 0, "sampling type"),
    LMX_PF(lmx_stn_param, cudnn_off, LMX_PT_OPT_BOOL, "None", NULL, 0, 0,
           "whether to turn cudnn off"),
};

static const char *const stn_inputs[] = {"data", "loc", NULL};

static int stn_check(const lmx_op_ctx *c, void *param) {
  return need_target(c, &((const lmx_stn_param *)param)->target_shape);
}

int lmx_stn_plan(const lmx_op_ctx *c, const lmx_shape *d, const lmx_shape *l, lmx_smp_geom *g) {
  const lmx_stn_param *p = c->param;
  char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
  LMX_TRY(need_ndim(c, d, 4, "data", "data (N, C, H, W)"));
  if (l->ndim != 2 || l->dim[0] != d->dim[0] || l->dim[1] != 6)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "input 'loc': expected (%lld, 6) (an affine matrix per "
                       "image of data %s), got %s",
                       (long long)d->dim[0], lmx_shape_str(d, a), lmx_shape_str(l, b));
  lmx_smp_geom s = {
      d->dim[0], d->dim[1], d->dim[2], d->dim[3], p->target_shape.dim[0], p->target_shape.dim[1]};
  *g = s;
  return LMX_OK;
}

static int stn_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out, int nout,
                           lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  if (in[0].ndim == 4 && in[1].ndim == 0) {
    lmx_shape l = LMX_SHP(in[0].dim[0], 6);
    LMX_TRY(lmx_in_assign(c, in, 1, &l));
  }
  if (!lmx_shape_known(&in[1])) return LMX_OK;
  lmx_smp_geom g;
  LMX_TRY(lmx_stn_plan(c, &in[0], &in[1], &g));
  lmx_shape o = LMX_SHP(g.N, g.C, g.OH, g.OW);
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_SpatialTransformer = {
    .name = "SpatialTransformer",
    .doc =
        "Applies a spatial transformer to input feature map: the affine grid of loc "
        "(N, 6) over target_shape (GridGenerator) sampled bilinearly from data "
        "(BilinearSampler).",
    LMX_PARAMS(stn_fields, lmx_stn_param),
    .param_check = stn_check,
    .inputs = stn_inputs,
    .infer_shape = stn_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};
