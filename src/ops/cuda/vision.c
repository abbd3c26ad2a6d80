/* vision.c — CUDA glue of LRN, InstanceNorm, GroupNorm, L2Normalization, Pad,
 * UpSampling, depth_to_space, space_to_depth and Crop: src/ops/cpu/norm_more.c and
 * spatial.c with device launchers (kernels/cuda/vision.cu) on the call's stream; the same
 * plans (norm_more.h, spatial.h, crop.h) and checks. Bilinear UpSampling runs the
 * Deconvolution glue (src/ops/cuda/conv.c). float32, float64 and float16.
 */
#include "../crop.h"
#include "../norm_more.h"
#include "../op_impl.h"
#include "../spatial.h"
#include "k1_glue.h"

extern const lmx_op lmx_op_Deconvolution;

static int fwd_reqs(const lmx_op_ctx *c, const int *req, int n) {
  for (int i = 0; i < n; i++)
    if (req[i] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output");
  return LMX_OK;
}

/* ---- LRN ------------------------------------------------------------------------------ */

static int lrn_setup(const lmx_op_ctx *c, const lmx_tensor *in, int64_t *N, int64_t *C,
                     int64_t *S) {
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  const lmx_shape *d = &in[0].shape;
  if (d->ndim < 2) {
    char s[LMX_SHAPE_STRCAP];
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected (N, C, ...), got %s",
                       lmx_shape_str(d, s));
  }
  *N = d->dim[0], *C = d->dim[1], *S = 1;
  for (int i = 2; i < d->ndim; i++) *S *= d->dim[i];
  return LMX_OK;
}

int lmx_cuda_fwd_LRN(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, const lmx_tensor *aux) {
  (void)aux;
  const lmx_lrn_param *p = c->param;
  int64_t N, C, S;
  LMX_TRY(lrn_setup(c, in, &N, &C, &S));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, dt, "output"));
  LMX_TRY(lmx_glue_check_like(c, &out[1], &in[0].shape, dt, "output 'tmp_norm'"));
  LMX_TRY(fwd_reqs(c, req, 2));
  if (req[0] == LMX_REQ_NULL && req[1] == LMX_REQ_NULL) return LMX_OK;
  return lmx_cuda_fail(c, lmx_cu_lrn_fwd(LMX_CU_S(c), dt, N, C, S, p->nsize, p->alpha, p->beta,
                                         p->knorm, in[0].data, out[0].data, out[1].data),
                       "lmx_cu_lrn_fwd");
}

int lmx_cuda_bwd_LRN(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                     const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                     const lmx_tensor *aux) {
  (void)aux;
  const lmx_lrn_param *p = c->param;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t N, C, S;
  LMX_TRY(lrn_setup(c, in, &N, &C, &S));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &og[0], &in[0].shape, dt, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, dt, "output"));
  LMX_TRY(lmx_glue_check_like(c, &out[1], &in[0].shape, dt, "output 'tmp_norm'"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, dt, "gradient of 'data'"));
  return lmx_cuda_fail(c, lmx_cu_lrn_bwd(LMX_CU_S(c), dt, N, C, S, p->nsize, p->alpha, p->beta,
                                         in[0].data, out[0].data, out[1].data, og[0].data,
                                         ig[0].data, req[0] == LMX_REQ_ADD),
                       "lmx_cu_lrn_bwd");
}

/* ---- row normalisations ----------------------------------------------------------------- */

static double eps_of(const lmx_op_ctx *c, int kind) {
  if (kind == LMX_RN_INSTANCE) return ((const lmx_inorm_param *)c->param)->eps;
  if (kind == LMX_RN_GROUP) return ((const lmx_gn_param *)c->param)->eps;
  return ((const lmx_l2n_param *)c->param)->eps;
}

static int rn_setup(const lmx_op_ctx *c, int kind, const lmx_tensor *in, const lmx_tensor *out,
                    const lmx_shape *d, int dt, lmx_cu_rownorm *r) {
  lmx_rownorm g;
  if (d->ndim < (kind == LMX_RN_L2 ? 2 : 3)) {
    char s[LMX_SHAPE_STRCAP];
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected (N, C, ...), got %s",
                       lmx_shape_str(d, s));
  }
  LMX_TRY(lmx_rownorm_plan(c, kind, d, &g));
  r->outer = g.outer, r->len = g.len, r->inner = g.inner, r->na = g.na;
  LMX_TRY(lmx_glue_check_like(c, &out[0], d, dt, "output"));
  int64_t ns = g.outer * g.inner;
  const char *n1 = kind == LMX_RN_L2 ? "output 'norm'" : "output 'mean'";
  LMX_TRY(lmx_glue_check_size(c, &out[1], ns, n1));
  if (out[1].dtype != dt) return lmx_cuda_fail_dtype(c, &out[1], n1);
  if (kind == LMX_RN_L2) return LMX_OK;
  const char *n2 = kind == LMX_RN_GROUP ? "output 'std'" : "output 'var'";
  LMX_TRY(lmx_glue_check_size(c, &out[2], ns, n2));
  if (out[2].dtype != dt) return lmx_cuda_fail_dtype(c, &out[2], n2);
  lmx_shape a = LMX_SHP(g.na);
  LMX_TRY(lmx_glue_check_like(c, &in[1], &a, dt, "input 'gamma'"));
  return lmx_glue_check_like(c, &in[2], &a, dt, "input 'beta'");
}

static int rn_fwd(const lmx_op_ctx *c, int kind, const lmx_tensor *in, const lmx_tensor *out,
                  const int *req) {
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  int dt = in[0].dtype, nout = kind == LMX_RN_L2 ? 2 : 3, any = 0;
  lmx_cu_rownorm r;
  LMX_TRY(rn_setup(c, kind, in, out, &in[0].shape, dt, &r));
  LMX_TRY(fwd_reqs(c, req, nout));
  for (int i = 0; i < nout; i++) any |= req[i] != LMX_REQ_NULL;
  if (!any) return LMX_OK;
  int l2 = kind == LMX_RN_L2;
  return lmx_cuda_fail(c, lmx_cu_rownorm_fwd(LMX_CU_S(c), dt, kind, r, eps_of(c, kind),
                                             in[0].data, l2 ? NULL : in[1].data,
                                             l2 ? NULL : in[2].data, out[0].data, out[1].data,
                                             l2 ? NULL : out[2].data),
                       "lmx_cu_rownorm_fwd");
}

static int rn_bwd(const lmx_op_ctx *c, int kind, const lmx_tensor *og, const lmx_tensor *in,
                  const lmx_tensor *out, const lmx_tensor *ig, const int *req) {
  int l2 = kind == LMX_RN_L2, nin = l2 ? 1 : 3, any = 0;
  for (int i = 0; i < nin; i++) any |= req[i] != LMX_REQ_NULL;
  if (!any) return LMX_OK;
  const lmx_tensor *x = l2 ? &out[0] : &in[0]; /* L2: the output carries data's shape */
  LMX_TRY(lmx_cuda_check_float(c, x, l2 ? "output" : "input 'data'"));
  int dt = x->dtype;
  lmx_cu_rownorm r;
  LMX_TRY(rn_setup(c, kind, in, out, &x->shape, dt, &r));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &x->shape, dt, "output gradient"));
  static const char *const names[] = {"gradient of 'data'", "gradient of 'gamma'",
                                      "gradient of 'beta'"};
  void *g[3] = {NULL, NULL, NULL};
  for (int i = 0; i < nin; i++)
    if (req[i] != LMX_REQ_NULL) {
      LMX_TRY(lmx_glue_check_like(c, &ig[i], i ? &in[i].shape : &x->shape, dt, names[i]));
      g[i] = ig[i].data;
    }
  return lmx_cuda_fail(
      c, lmx_cu_rownorm_bwd(LMX_CU_S(c), dt, kind, r, eps_of(c, kind), l2 ? NULL : in[0].data,
                            out[0].data, l2 ? NULL : in[1].data, out[1].data,
                            l2 ? NULL : out[2].data, og[0].data, g[0], g[1], g[2],
                            req[0] == LMX_REQ_ADD, nin > 1 && req[1] == LMX_REQ_ADD,
                            nin > 2 && req[2] == LMX_REQ_ADD),
      "lmx_cu_rownorm_bwd");
}

#define RN_GLUE(id, kind)                                                                   \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                        const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                              \
    return rn_fwd(c, kind, in, out, req);                                                   \
  }                                                                                         \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,    \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,        \
                        const lmx_tensor *aux) {                                            \
    (void)aux;                                                                              \
    return rn_bwd(c, kind, og, in, out, ig, req);                                           \
  }

RN_GLUE(InstanceNorm, LMX_RN_INSTANCE)
RN_GLUE(GroupNorm, LMX_RN_GROUP)
RN_GLUE(L2Normalization, LMX_RN_L2)

/* ---- Pad ------------------------------------------------------------------------------ */

static lmx_cu_pad pad_geom(const lmx_pad_param *p, const lmx_shape *d, const lmx_shape *o) {
  lmx_cu_pad g;
  memset(&g, 0, sizeof g);
  g.nd = d->ndim;
  for (int i = 0; i < d->ndim && i < 5; i++) {
    g.ish[i] = d->dim[i], g.osh[i] = o->dim[i];
    g.pw[2 * i] = p->pw[2 * i], g.pw[2 * i + 1] = p->pw[2 * i + 1];
  }
  return g;
}

int lmx_cuda_fwd_Pad(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, const lmx_tensor *aux) {
  (void)aux;
  const lmx_pad_param *p = c->param;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output");
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  lmx_shape o;
  LMX_TRY(lmx_pad_plan(c, &in[0].shape, &o));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &o, in[0].dtype, "output"));
  return lmx_cuda_fail(c, lmx_cu_pad_fwd(LMX_CU_S(c), in[0].dtype, p->mode,
                                         pad_geom(p, &in[0].shape, &o), p->constant_value,
                                         in[0].data, out[0].data),
                       "lmx_cu_pad_fwd");
}

int lmx_cuda_bwd_Pad(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                     const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                     const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  const lmx_pad_param *p = c->param;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "gradient of 'data'"));
  lmx_shape o;
  LMX_TRY(lmx_pad_plan(c, &ig[0].shape, &o));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &o, ig[0].dtype, "output gradient"));
  return lmx_cuda_fail(c, lmx_cu_pad_bwd(LMX_CU_S(c), ig[0].dtype, p->mode,
                                         pad_geom(p, &ig[0].shape, &o), og[0].data, ig[0].data,
                                         req[0] == LMX_REQ_ADD),
                       "lmx_cu_pad_bwd");
}

/* ---- UpSampling ----------------------------------------------------------------------- */

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

size_t lmx_cuda_ws_UpSampling(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  const lmx_ups_param *p = c->param;
  if (p->sample_type != LMX_UPS_BILINEAR || in[0].ndim != 4) return 0;
  lmx_conv_param d;
  lmx_op_ctx dc = deconv_ctx(c, &in[0], &d);
  return lmx_cuda_ws_Deconvolution(&dc, in, out);
}

static lmx_cu_ups ups_geom(const lmx_shape *x, const lmx_shape *o, int64_t coff) {
  lmx_cu_ups u = {x->dim[0], x->dim[1], x->dim[2], x->dim[3], o->dim[2] / x->dim[2],
                  o->dim[1], coff};
  return u;
}

int lmx_cuda_fwd_UpSampling(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                            const int *req, const lmx_tensor *aux) {
  const lmx_ups_param *p = c->param;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output");
  int bil = p->sample_type == LMX_UPS_BILINEAR, nin = bil ? 2 : (int)p->num_args;
  for (int i = 0; i < (bil ? 1 : nin); i++) LMX_TRY(lmx_cuda_check_float(c, &in[i], "input"));
  lmx_shape o;
  LMX_TRY(ups_shapes(c, in, nin, &o));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &out[0], &o, dt, "output"));
  if (bil) {
    lmx_conv_param d;
    lmx_op_ctx dc = deconv_ctx(c, &in[0].shape, &d);
    return lmx_cuda_fwd_Deconvolution(&dc, in, out, req, aux);
  }
  int64_t coff = 0;
  for (int i = 0; i < nin; i++) {
    if (in[i].dtype != dt) return lmx_cuda_fail_dtype(c, &in[i], "input");
    int rc = lmx_cu_ups_fwd(LMX_CU_S(c), dt, ups_geom(&in[i].shape, &o, coff), in[i].data,
                            out[0].data, p->multi_input_mode == LMX_UPS_SUM && i > 0);
    LMX_TRY(lmx_cuda_fail(c, rc, "lmx_cu_ups_fwd"));
    if (p->multi_input_mode == LMX_UPS_CONCAT) coff += in[i].shape.dim[1];
  }
  return LMX_OK;
}

int lmx_cuda_bwd_UpSampling(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                            const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                            const lmx_tensor *aux) {
  const lmx_ups_param *p = c->param;
  int bil = p->sample_type == LMX_UPS_BILINEAR, nin = bil ? 2 : (int)p->num_args;
  lmx_shape o;
  LMX_TRY(ups_shapes(c, in, nin, &o));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &og[0], &o, dt, "output gradient"));
  if (bil) {
    lmx_conv_param d;
    lmx_op_ctx dc = deconv_ctx(c, &in[0].shape, &d);
    return lmx_cuda_bwd_Deconvolution(&dc, og, in, out, ig, req, aux);
  }
  int64_t coff = 0;
  for (int i = 0; i < nin; i++) {
    if (req[i] != LMX_REQ_NULL) {
      LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, dt, "input gradient"));
      int rc = lmx_cu_ups_bwd(LMX_CU_S(c), dt, ups_geom(&in[i].shape, &o, coff), og[0].data,
                              ig[i].data, req[i] == LMX_REQ_ADD);
      LMX_TRY(lmx_cuda_fail(c, rc, "lmx_cu_ups_bwd"));
    }
    if (p->multi_input_mode == LMX_UPS_CONCAT) coff += in[i].shape.dim[1];
  }
  return LMX_OK;
}

/* ---- depth_to_space / space_to_depth ------------------------------------------------- */

static int d2s_run(const lmx_op_ctx *c, int to_depth, int bwd, const lmx_tensor *src,
                   const lmx_tensor *dst, const lmx_shape *data, int req) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  if (!bwd && req == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output");
  LMX_TRY(lmx_cuda_check_float(c, src, bwd ? "output gradient" : "input 'data'"));
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
  lmx_cu_d2s_geom k = {g.N, g.C, g.H, g.W, b};
  return lmx_cuda_fail(c, lmx_cu_d2s(LMX_CU_S(c), src->dtype, k, !src_small, src->data,
                                     dst->data, req == LMX_REQ_ADD),
                       "lmx_cu_d2s");
}

#define D2S_GLUE(id, to_depth)                                                              \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                        const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                              \
    return d2s_run(c, to_depth, 0, &in[0], &out[0], &in[0].shape, req[0]);                  \
  }                                                                                         \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,    \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,        \
                        const lmx_tensor *aux) {                                            \
    (void)in, (void)out, (void)aux;                                                         \
    return d2s_run(c, to_depth, 1, &og[0], &ig[0], &ig[0].shape, req[0]);                   \
  }

D2S_GLUE(depth_to_space, 0)
D2S_GLUE(space_to_depth, 1)

/* ---- Crop ----------------------------------------------------------------------------- */

static int crop_geom(const lmx_op_ctx *c, const lmx_tensor *in, lmx_cu_crop_geom *k, lmx_shape *o) {
  const lmx_crop_param *p = c->param;
  lmx_crop_geom g;
  LMX_TRY(lmx_crop_plan(c, &in[0].shape, p->num_args > 1 ? &in[1].shape : NULL, &g));
  lmx_cu_crop_geom kk = {g.planes, g.H, g.W, g.h, g.w, g.oy, g.ox};
  *k = kk;
  *o = LMX_SHP(in[0].shape.dim[0], in[0].shape.dim[1], g.h, g.w);
  return LMX_OK;
}

int lmx_cuda_fwd_Crop(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                      const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output");
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  lmx_cu_crop_geom k;
  lmx_shape o;
  LMX_TRY(crop_geom(c, in, &k, &o));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &o, in[0].dtype, "output"));
  return lmx_cuda_fail(c, lmx_cu_crop(LMX_CU_S(c), in[0].dtype, k, 0, in[0].data, out[0].data, 0),
                       "lmx_cu_crop");
}

int lmx_cuda_bwd_Crop(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                      const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                      const lmx_tensor *aux) {
  (void)out, (void)aux;
  const lmx_crop_param *p = c->param;
  if (p->num_args > 1) LMX_TRY(lmx_cuda_zero_grad(c, &ig[1], req[1]));
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  lmx_cu_crop_geom k;
  lmx_shape o;
  LMX_TRY(crop_geom(c, in, &k, &o));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &o, in[0].dtype, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, in[0].dtype, "gradient of 'data'"));
  return lmx_cuda_fail(c, lmx_cu_crop(LMX_CU_S(c), in[0].dtype, k, 1, og[0].data, ig[0].data,
                                      req[0] == LMX_REQ_ADD),
                       "lmx_cu_crop");
}
