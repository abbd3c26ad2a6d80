/* spatial.c — CPU glue of Pad and UpSampling (descriptors in src/ops/nn_spatial.c,
 * kernels in kernels/cpu/spatial.c; bilinear UpSampling runs the Deconvolution glue of
 * src/ops/cpu/conv.c with the parameters MXNet derives, lmx_ups_deconv), and of
 * depth_to_space, space_to_depth and Crop (src/ops/nn_crop.c).
 */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../../kernels/pad_index.h"
#include "../crop.h"
#include "../op_impl.h"
#include "../spatial.h"
#include "cpu_ops.h"

extern const lmx_op lmx_op_Deconvolution;

/* ---- Pad ------------------------------------------------------------------------------ */

int lmx_cpu_fwd_Pad(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                    const int *req, const lmx_tensor *aux) {
  (void)aux;
  const lmx_pad_param *p = c->param;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "output");
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  lmx_shape o;
  LMX_TRY(lmx_pad_plan(c, &in[0].shape, &o));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &o, in[0].dtype, "output"));
  lmx_cpu_pad_fwd(in[0].dtype, p->mode, o.ndim, in[0].shape.dim, o.dim, p->pw,
                  p->constant_value, in[0].data, out[0].data);
  return LMX_OK;
}

int lmx_cpu_bwd_Pad(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                    const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                    const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  const lmx_pad_param *p = c->param;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cpu_check_float(c, &ig[0], "gradient of 'data'"));
  lmx_shape o;
  LMX_TRY(lmx_pad_plan(c, &ig[0].shape, &o));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &o, ig[0].dtype, "output gradient"));
  lmx_cpu_pad_bwd(ig[0].dtype, p->mode, o.ndim, ig[0].shape.dim, o.dim, p->pw, og[0].data,
                  ig[0].data, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

/* ---- UpSampling ----------------------------------------------------------------------- */

/* Bilinear: the call context of the equivalent Deconvolution (parameters in *d). */
static lmx_op_ctx deconv_ctx(const lmx_op_ctx *c, const lmx_shape *data, lmx_conv_param *d) {
  lmx_ups_deconv(c->param, data->dim[1], d);
  lmx_op_ctx dc = *c;
  dc.op = &lmx_op_Deconvolution;
  dc.param = d;
  return dc;
}

static int ups_shapes(const lmx_op_ctx *c, const lmx_tensor *in, int nin, lmx_shape *o) {
  lmx_shape s[64];
  if (nin > 64)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'num_args': at most 64 inputs, got %d", nin);
  for (int i = 0; i < nin; i++) s[i] = in[i].shape;
  return lmx_ups_plan(c, s, nin, o);
}

size_t lmx_cpu_ws_UpSampling(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  const lmx_ups_param *p = c->param;
  if (p->sample_type != LMX_UPS_BILINEAR || in[0].ndim != 4) return 0;
  lmx_conv_param d;
  lmx_op_ctx dc = deconv_ctx(c, &in[0], &d);
  return lmx_cpu_ws_Deconvolution(&dc, in, out);
}

static lmx_cpu_ups ups_geom(const lmx_shape *x, const lmx_shape *o, int64_t coff) {
  lmx_cpu_ups u = {x->dim[0], x->dim[1], x->dim[2], x->dim[3], o->dim[2] / x->dim[2],
                   o->dim[1], coff};
  return u;
}

int lmx_cpu_fwd_UpSampling(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  const lmx_ups_param *p = c->param;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "output");
  int nin = p->sample_type == LMX_UPS_BILINEAR ? 2 : (int)p->num_args;
  for (int i = 0; i < (p->sample_type == LMX_UPS_BILINEAR ? 1 : nin); i++)
    LMX_TRY(lmx_cpu_check_float(c, &in[i], "input"));
  lmx_shape o;
  LMX_TRY(ups_shapes(c, in, nin, &o));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &out[0], &o, dt, "output"));
  if (p->sample_type == LMX_UPS_BILINEAR) {
    lmx_conv_param d;
    lmx_op_ctx dc = deconv_ctx(c, &in[0].shape, &d);
    return lmx_cpu_fwd_Deconvolution(&dc, in, out, req, aux);
  }
  int64_t coff = 0;
  for (int i = 0; i < nin; i++) {
    if (in[i].dtype != dt) return lmx_cpu_fail_dtype(c, &in[i], "input");
    lmx_cpu_ups u = ups_geom(&in[i].shape, &o, coff);
    lmx_cpu_ups_fwd(dt, &u, in[i].data, out[0].data, p->multi_input_mode == LMX_UPS_SUM && i > 0);
    if (p->multi_input_mode == LMX_UPS_CONCAT) coff += in[i].shape.dim[1];
  }
  return LMX_OK;
}

int lmx_cpu_bwd_UpSampling(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                           const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                           const lmx_tensor *aux) {
  const lmx_ups_param *p = c->param;
  int nin = p->sample_type == LMX_UPS_BILINEAR ? 2 : (int)p->num_args;
  lmx_shape o;
  LMX_TRY(ups_shapes(c, in, nin, &o));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &og[0], &o, dt, "output gradient"));
  if (p->sample_type == LMX_UPS_BILINEAR) {
    lmx_conv_param d;
    lmx_op_ctx dc = deconv_ctx(c, &in[0].shape, &d);
    return lmx_cpu_bwd_Deconvolution(&dc, og, in, out, ig, req, aux);
  }
  int64_t coff = 0;
  for (int i = 0; i < nin; i++) {
    if (req[i] != LMX_REQ_NULL) {
      LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, dt, "input gradient"));
      lmx_cpu_ups u = ups_geom(&in[i].shape, &o, coff);
      lmx_cpu_ups_bwd(dt, &u, og[0].data, ig[i].data, req[i] == LMX_REQ_ADD);
    }
    if (p->multi_input_mode == LMX_UPS_CONCAT) coff += in[i].shape.dim[1];
  }
  return LMX_OK;
}

/* ---- depth_to_space / space_to_depth ------------------------------------------------- */

/* to_depth: space_to_depth; bwd: the gradient (the inverse move) */
static int d2s_run(const lmx_op_ctx *c, int to_depth, int bwd, const lmx_tensor *src,
                   const lmx_tensor *dst, const lmx_shape *data, int req) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  if (!bwd && req == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "output");
  LMX_TRY(lmx_cpu_check_float(c, src, bwd ? "output gradient" : "input 'data'"));
  lmx_d2s_geom g;
  LMX_TRY(lmx_d2s_plan(c, to_depth, data, &g));
  int64_t b = g.b;
  lmx_shape big = LMX_SHP(g.N, g.C, g.H * b, g.W * b);
  lmx_shape small = LMX_SHP(g.N, g.C * b * b, g.H, g.W);
  int src_small = to_depth == bwd; /* D2S forward and S2D backward read the small side */
  LMX_TRY(lmx_glue_check_like(c, src, src_small ? &small : &big, src->dtype,
                              bwd ? "output gradient" : "input 'data'"));
  LMX_TRY(lmx_glue_check_like(c, dst, src_small ? &big : &small, src->dtype,
                              bwd ? "gradient of 'data'" : "output"));
  lmx_cpu_d2s_geom k = {g.N, g.C, g.H, g.W, b};
  lmx_cpu_d2s(src->dtype, &k, !src_small, src->data, dst->data, req == LMX_REQ_ADD);
  return LMX_OK;
}

#define D2S_GLUE(id, to_depth)                                                              \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                       const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                              \
    return d2s_run(c, to_depth, 0, &in[0], &out[0], &in[0].shape, req[0]);                  \
  }                                                                                         \
  int lmx_cpu_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,     \
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,         \
                       const lmx_tensor *aux) {                                             \
    (void)in, (void)out, (void)aux;                                                         \
    return d2s_run(c, to_depth, 1, &og[0], &ig[0], &ig[0].shape, req[0]);                   \
  }

D2S_GLUE(depth_to_space, 0)
D2S_GLUE(space_to_depth, 1)

/* ---- Crop ----------------------------------------------------------------------------- */

static int crop_geom(const lmx_op_ctx *c, const lmx_tensor *in, lmx_cpu_crop_geom *k,
                     lmx_shape *o) {
  const lmx_crop_param *p = c->param;
  lmx_crop_geom g;
  LMX_TRY(lmx_crop_plan(c, &in[0].shape, p->num_args > 1 ? &in[1].shape : NULL, &g));
  lmx_cpu_crop_geom kk = {g.planes, g.H, g.W, g.h, g.w, g.oy, g.ox};
  *k = kk;
  *o = LMX_SHP(in[0].shape.dim[0], in[0].shape.dim[1], g.h, g.w);
  return LMX_OK;
}

int lmx_cpu_fwd_Crop(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "output");
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  lmx_cpu_crop_geom k;
  lmx_shape o;
  LMX_TRY(crop_geom(c, in, &k, &o));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &o, in[0].dtype, "output"));
  lmx_cpu_crop(in[0].dtype, &k, 0, in[0].data, out[0].data, 0);
  return LMX_OK;
}

int lmx_cpu_bwd_Crop(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                     const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                     const lmx_tensor *aux) {
  (void)out, (void)aux;
  const lmx_crop_param *p = c->param;
  if (p->num_args > 1) lmx_cpu_zero_grad(&ig[1], req[1]);
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  lmx_cpu_crop_geom k;
  lmx_shape o;
  LMX_TRY(crop_geom(c, in, &k, &o));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &o, in[0].dtype, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, in[0].dtype, "gradient of 'data'"));
  lmx_cpu_crop(in[0].dtype, &k, 1, og[0].data, ig[0].data, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}
