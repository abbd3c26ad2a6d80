/* nn_crop.c — depth_to_space, space_to_depth and Crop (4-D channel-first data).
 *
 * depth_to_space (block b): (N, C, H, W) -> (N, C / b^2, H b, W b) with
 *   y[n, c, h b + i, w b + j] = x[n, (i b + j) C / b^2 + c, h, w]  (MXNet's DCR order);
 * space_to_depth is its inverse: (N, C, H, W) -> (N, C b^2, H / b, W / b).
 * Crop: inputs data and, with num_args 2, crop_like; the output is (N, C, h, w) with (h, w)
 *   crop_like's last two dims or h_w, read from data at offset (oy, ox), or centred
 *   ((H - h) / 2, (W - w) / 2) with center_crop. crop_like gets a zero gradient.
 * lmx_crop_plan / lmx_d2s_plan give the geometry to the CPU and CUDA glue.
 * MXNet 1.9: src/operator/tensor/matrix_op.cc (depth_to_space, space_to_depth),
 * src/operator/crop.cc.
 */
#include "crop.h"
#include "op_impl.h"

/* ---- depth_to_space / space_to_depth ---------------------------------------------------- */

static const lmx_param_field d2s_fields[] = {
    LMX_PF(lmx_d2s_param, block_size, LMX_PT_INT, NULL, NULL, 1, 1e6,
           "Blocks of [block_size. block_size] are moved"),
};

int lmx_d2s_plan(const lmx_op_ctx *c, int to_depth, const lmx_shape *d, lmx_d2s_geom *g) {
  int64_t b = ((const lmx_d2s_param *)c->param)->block_size;
  char s[LMX_SHAPE_STRCAP];
  if (d->ndim != 4)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected 4-D data (N, C, H, W), got %s",
                       lmx_shape_str(d, s));
  g->N = d->dim[0], g->b = b;
  if (!to_depth) {
    if (d->dim[1] % (b * b))
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': %lld channels are not divisible by "
                         "block_size^2 = %lld in %s", (long long)d->dim[1], (long long)(b * b),
                         lmx_shape_str(d, s));
    g->C = d->dim[1] / (b * b), g->H = d->dim[2], g->W = d->dim[3];
  } else {
    if (d->dim[2] % b || d->dim[3] % b)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': height and width of %s must be "
                         "divisible by block_size %lld", lmx_shape_str(d, s), (long long)b);
    g->C = d->dim[1], g->H = d->dim[2] / b, g->W = d->dim[3] / b;
  }
  return LMX_OK;
}

static int d2s_infer(const lmx_op_ctx *c, lmx_shape *in, lmx_shape *out, int to_depth) {
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  lmx_d2s_geom g;
  LMX_TRY(lmx_d2s_plan(c, to_depth, &in[0], &g));
  int64_t b = g.b;
  lmx_shape o = to_depth ? LMX_SHP(g.N, g.C * b * b, g.H, g.W)
                         : LMX_SHP(g.N, g.C, g.H * b, g.W * b);
  return lmx_out_assign(c, out, 0, &o);
}

static int d2s_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  return d2s_infer(c, in, out, 0);
}

static int s2d_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  return d2s_infer(c, in, out, 1);
}

const lmx_op lmx_op_depth_to_space = {
    .name = "depth_to_space",
    .doc = "Rearranges(permutes) data from depth into blocks of spatial data: (N, C, H, W) -> "
           "(N, C / block_size^2, H * block_size, W * block_size).",
    LMX_PARAMS(d2s_fields, lmx_d2s_param),
    .infer_shape = d2s_infer_shape,
    .backward_needs = LMX_NEEDS_OUT_GRADS,
};

const lmx_op lmx_op_space_to_depth = {
    .name = "space_to_depth",
    .doc = "Rearranges(permutes) blocks of spatial data into depth: (N, C, H, W) -> "
           "(N, C * block_size^2, H / block_size, W / block_size).",
    LMX_PARAMS(d2s_fields, lmx_d2s_param),
    .infer_shape = s2d_infer_shape,
    .backward_needs = LMX_NEEDS_OUT_GRADS,
};

/* ---- Crop ------------------------------------------------------------------------------ */

static const lmx_param_field crop_fields[] = {
    LMX_PF(lmx_crop_param, num_args, LMX_PT_INT, NULL, NULL, 1, 2,
           "Number of inputs for crop, if equals one, then we will use the h_wfor crop "
           "height and width, else if equals two, then we will use the heightand width of "
           "the second input symbol, we name crop_like here"),
    LMX_PF(lmx_crop_param, offset, LMX_PT_SHAPE, "(0, 0)", NULL, 0, 0,
           "crop offset coordinate: (y, x)"),
    LMX_PF(lmx_crop_param, h_w, LMX_PT_SHAPE, "(0, 0)", NULL, 0, 0,
           "crop height and width: (h, w)"),
    LMX_PF(lmx_crop_param, center_crop, LMX_PT_BOOL, "False", NULL, 0, 0,
           "If set to true, then it will use be the center_crop,or it will crop using the "
           "shape of crop_like"),
};

static int crop_check(const lmx_op_ctx *c, void *param) {
  const lmx_crop_param *p = param;
  if (p->offset.ndim != 2 || p->offset.dim[0] < 0 || p->offset.dim[1] < 0)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'offset': expected 2 non-negative entries "
                       "(y, x), got %d entries", p->offset.ndim);
  if (p->h_w.ndim != 2 || p->h_w.dim[0] < 0 || p->h_w.dim[1] < 0)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'h_w': expected 2 non-negative entries "
                       "(h, w), got %d entries", p->h_w.ndim);
  return LMX_OK;
}

static int crop_num_inputs(const void *p) { return (int)((const lmx_crop_param *)p)->num_args; }

static void crop_input_name(const void *p, int i, char *buf, size_t cap) {
  (void)p;
  snprintf(buf, cap, "%s", i == 0 ? "data" : "crop_like");
}

int lmx_crop_plan(const lmx_op_ctx *c, const lmx_shape *d, const lmx_shape *like,
                  lmx_crop_geom *g) {
  const lmx_crop_param *p = c->param;
  char s[LMX_SHAPE_STRCAP];
  if (d->ndim != 4)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected 4-D data (N, C, H, W), got %s",
                       lmx_shape_str(d, s));
  if (p->num_args == 2 && like->ndim != 4)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'crop_like': expected 4-D data, got %s",
                       lmx_shape_str(like, s));
  g->planes = d->dim[0] * d->dim[1], g->H = d->dim[2], g->W = d->dim[3];
  g->h = p->num_args == 2 ? like->dim[2] : p->h_w.dim[0];
  g->w = p->num_args == 2 ? like->dim[3] : p->h_w.dim[1];
  g->oy = p->center_crop ? (g->H - g->h) / 2 : p->offset.dim[0];
  g->ox = p->center_crop ? (g->W - g->w) / 2 : p->offset.dim[1];
  if (g->h < 1 || g->w < 1 || g->oy < 0 || g->ox < 0 || g->oy + g->h > g->H ||
      g->ox + g->w > g->W)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': a (%lld, %lld) crop at offset (%lld, "
                       "%lld) does not fit inside %s", (long long)g->h, (long long)g->w,
                       (long long)g->oy, (long long)g->ox, lmx_shape_str(d, s));
  return LMX_OK;
}

static int crop_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                            int nout, lmx_shape *aux, int naux) {
  (void)nout, (void)aux, (void)naux;
  if (!lmx_shape_known(&in[0]) || (nin > 1 && !lmx_shape_known(&in[1]))) return LMX_OK;
  lmx_crop_geom g;
  LMX_TRY(lmx_crop_plan(c, &in[0], nin > 1 ? &in[1] : NULL, &g));
  lmx_shape o = LMX_SHP(in[0].dim[0], in[0].dim[1], g.h, g.w);
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_Crop = {
    .name = "Crop",
    .doc = "Crop the 2nd and 3rd dim of input data, with the corresponding size of h_w or "
           "with width and height of the second input symbol, i.e., with one input, we need "
           "h_w to specify the crop height and width, otherwise the second input symbol's "
           "size will be used.",
    LMX_PARAMS(crop_fields, lmx_crop_param),
    .param_check = crop_check,
    .num_inputs = crop_num_inputs,
    .input_name = crop_input_name,
    .infer_shape = crop_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};
