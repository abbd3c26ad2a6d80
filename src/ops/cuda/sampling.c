/* sampling.c — CUDA glue of GridGenerator, BilinearSampler, SpatialTransformer,
 * ROIPooling, _contrib_ROIAlign and _contrib_PSROIPooling: src/ops/cpu/sampling.c with
 * the device launchers (kernels/cuda/sampling.cu) on the call's stream, the same plans
 * and checks. float32 and float64 (the CPU's dtypes).
 */
#include "../sampling.h"
#include "../../../kernels/cuda/cu_sampling.h"
#include "../op_impl.h"
#include "k1_glue.h"

/* "<what>: expected float32 or float64 on the GPU, got <dtype>" */
static int smp_check_float(const lmx_op_ctx *c, const lmx_tensor *t, const char *what) {
  if (t->dtype == LMX_FLOAT32 || t->dtype == LMX_FLOAT64) return LMX_OK;
  return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected float32 or float64 on the GPU, got %s", what,
                     lmx_dtype_str(t->dtype));
}

static int fwd_req(const lmx_op_ctx *c, int req) {
  return req == LMX_REQ_ADD ? lmx_cuda_fail_req_add(c, "output") : LMX_OK;
}

static int same_dtype(const lmx_op_ctx *c, const lmx_tensor *a, const lmx_tensor *b,
                      const char *what) {
  LMX_TRY(smp_check_float(c, b, what));
  if (a->dtype == b->dtype) return LMX_OK;
  return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected %s like 'data', got %s", what,
                     lmx_dtype_str(a->dtype), lmx_dtype_str(b->dtype));
}

/* ---- GridGenerator ---------------------------------------------------------------------- */

int lmx_cuda_fwd_GridGenerator(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                               const int *req, const lmx_tensor *aux) {
  (void)aux;
  const lmx_gridgen_param *p = c->param;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(fwd_req(c, req[0]));
  LMX_TRY(smp_check_float(c, &in[0], "input 'data'"));
  lmx_shape o;
  LMX_TRY(lmx_gridgen_plan(c, &in[0].shape, &o));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &o, in[0].dtype, "output"));
  LMX_TRY(
      lmx_cuda_fail(c,
                    lmx_cu_gridgen_fwd(LMX_CU_S(c), in[0].dtype, p->transform_type == LMX_GG_WARP,
                                       o.dim[0], o.dim[2], o.dim[3], in[0].data, out[0].data),
                    "lmx_cu_gridgen_fwd"));
  return LMX_OK;
}

int lmx_cuda_bwd_GridGenerator(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                               const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                               const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  const lmx_gridgen_param *p = c->param;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(smp_check_float(c, &ig[0], "gradient of 'data'"));
  lmx_shape o;
  LMX_TRY(lmx_gridgen_plan(c, &ig[0].shape, &o));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &o, ig[0].dtype, "output gradient"));
  LMX_TRY(lmx_cuda_fail(
      c,
      lmx_cu_gridgen_bwd(LMX_CU_S(c), ig[0].dtype, p->transform_type == LMX_GG_WARP, o.dim[0],
                         o.dim[2], o.dim[3], og[0].data, ig[0].data, req[0] == LMX_REQ_ADD),
      "lmx_cu_gridgen_bwd"));
  return LMX_OK;
}

/* ---- BilinearSampler -------------------------------------------------------------------- */

int lmx_cuda_fwd_BilinearSampler(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                                 const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(fwd_req(c, req[0]));
  LMX_TRY(smp_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(same_dtype(c, &in[0], &in[1], "input 'grid'"));
  lmx_smp_geom g;
  LMX_TRY(lmx_bsampler_plan(c, &in[0].shape, &in[1].shape, &g));
  lmx_shape o = LMX_SHP(g.N, g.C, g.OH, g.OW);
  LMX_TRY(lmx_glue_check_like(c, &out[0], &o, in[0].dtype, "output"));
  LMX_TRY(lmx_cuda_fail(
      c, lmx_cu_bsampler_fwd(LMX_CU_S(c), in[0].dtype, g, in[0].data, in[1].data, out[0].data),
      "lmx_cu_bsampler_fwd"));
  return LMX_OK;
}

int lmx_cuda_bwd_BilinearSampler(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                                 const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                                 const lmx_tensor *aux) {
  (void)out, (void)aux;
  if (req[0] == LMX_REQ_NULL && req[1] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(smp_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(same_dtype(c, &in[0], &in[1], "input 'grid'"));
  lmx_smp_geom g;
  LMX_TRY(lmx_bsampler_plan(c, &in[0].shape, &in[1].shape, &g));
  lmx_shape o = LMX_SHP(g.N, g.C, g.OH, g.OW);
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &og[0], &o, dt, "output gradient"));
  if (req[0] != LMX_REQ_NULL)
    LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, dt, "gradient of 'data'"));
  if (req[1] != LMX_REQ_NULL)
    LMX_TRY(lmx_glue_check_like(c, &ig[1], &in[1].shape, dt, "gradient of 'grid'"));
  LMX_TRY(lmx_cuda_fail(
      c,
      lmx_cu_bsampler_bwd(LMX_CU_S(c), dt, g, in[0].data, in[1].data, og[0].data,
                          req[0] != LMX_REQ_NULL ? ig[0].data : NULL, req[0] == LMX_REQ_ADD,
                          req[1] != LMX_REQ_NULL ? ig[1].data : NULL, req[1] == LMX_REQ_ADD),
      "lmx_cu_bsampler_bwd"));
  return LMX_OK;
}

/* ---- SpatialTransformer ----------------------------------------------------------------- */

/* the workspace: the grid (N, 2, OH, OW) and its gradient, 8 bytes an element */
size_t lmx_cuda_ws_SpatialTransformer(const lmx_op_ctx *c, const lmx_shape *in,
                                      const lmx_shape *out) {
  (void)out;
  const lmx_stn_param *p = c->param;
  if (in[0].ndim < 1 || p->target_shape.ndim != 2) return 0;
  return (size_t)(2 * 2 * in[0].dim[0] * p->target_shape.dim[0] * p->target_shape.dim[1]) * 8;
}

static int stn_setup(const lmx_op_ctx *c, const lmx_tensor *in, lmx_smp_geom *g) {
  LMX_TRY(smp_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(same_dtype(c, &in[0], &in[1], "input 'loc'"));
  LMX_TRY(lmx_stn_plan(c, &in[0].shape, &in[1].shape, g));
  size_t need = (size_t)(2 * 2 * g->N * g->OH * g->OW) * (size_t)lmx_dtype_size(in[0].dtype);
  return lmx_glue_check_ws(c, need);
}

int lmx_cuda_fwd_SpatialTransformer(const lmx_op_ctx *c, const lmx_tensor *in,
                                    const lmx_tensor *out, const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(fwd_req(c, req[0]));
  lmx_smp_geom g;
  LMX_TRY(stn_setup(c, in, &g));
  lmx_shape o = LMX_SHP(g.N, g.C, g.OH, g.OW);
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &out[0], &o, dt, "output"));
  LMX_TRY(lmx_cuda_fail(
      c, lmx_cu_gridgen_fwd(LMX_CU_S(c), dt, 0, g.N, g.OH, g.OW, in[1].data, c->workspace),
      "lmx_cu_gridgen_fwd"));
  LMX_TRY(lmx_cuda_fail(
      c, lmx_cu_bsampler_fwd(LMX_CU_S(c), dt, g, in[0].data, c->workspace, out[0].data),
      "lmx_cu_bsampler_fwd"));
  return LMX_OK;
}

int lmx_cuda_bwd_SpatialTransformer(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                                    const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                                    const lmx_tensor *aux) {
  (void)out, (void)aux;
  if (req[0] == LMX_REQ_NULL && req[1] == LMX_REQ_NULL) return LMX_OK;
  lmx_smp_geom g;
  LMX_TRY(stn_setup(c, in, &g));
  lmx_shape o = LMX_SHP(g.N, g.C, g.OH, g.OW);
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &og[0], &o, dt, "output gradient"));
  if (req[0] != LMX_REQ_NULL)
    LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, dt, "gradient of 'data'"));
  if (req[1] != LMX_REQ_NULL)
    LMX_TRY(lmx_glue_check_like(c, &ig[1], &in[1].shape, dt, "gradient of 'loc'"));
  char *grid = c->workspace;
  char *ggrid = grid + (size_t)(2 * g.N * g.OH * g.OW) * (size_t)lmx_dtype_size(dt);
  LMX_TRY(lmx_cuda_fail(c,
                        lmx_cu_gridgen_fwd(LMX_CU_S(c), dt, 0, g.N, g.OH, g.OW, in[1].data, grid),
                        "lmx_cu_gridgen_fwd"));
  LMX_TRY(lmx_cuda_fail(
      c,
      lmx_cu_bsampler_bwd(LMX_CU_S(c), dt, g, in[0].data, grid, og[0].data,
                          req[0] != LMX_REQ_NULL ? ig[0].data : NULL, req[0] == LMX_REQ_ADD,
                          req[1] != LMX_REQ_NULL ? ggrid : NULL, 0),
      "lmx_cu_bsampler_bwd"));
  if (req[1] != LMX_REQ_NULL)
    LMX_TRY(lmx_cuda_fail(c,
                          lmx_cu_gridgen_bwd(LMX_CU_S(c), dt, 0, g.N, g.OH, g.OW, ggrid, ig[1].data,
                                             req[1] == LMX_REQ_ADD),
                          "lmx_cu_gridgen_bwd"));
  return LMX_OK;
}

/* ---- ROIPooling, ROIAlign and PSROIPooling
 * ------------------------------------------------------------ */

static int roi_setup(const lmx_op_ctx *c, int kind, const lmx_tensor *in, lmx_roi_geom *g,
                     lmx_shape *o) {
  LMX_TRY(smp_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(same_dtype(c, &in[0], &in[1], "input 'rois'"));
  LMX_TRY(lmx_roi_plan(c, kind, &in[0].shape, &in[1].shape, g));
  *o = LMX_SHP(g->R, g->Cout, g->PH, g->PW);
  return LMX_OK;
}

int lmx_cuda_fwd_ROIPooling(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                            const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL && req[1] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(fwd_req(c, req[0]));
  LMX_TRY(fwd_req(c, req[1]));
  lmx_roi_geom g;
  lmx_shape o;
  LMX_TRY(roi_setup(c, LMX_ROI_POOL, in, &g, &o));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &o, in[0].dtype, "output"));
  LMX_TRY(lmx_glue_check_like(c, &out[1], &o, in[0].dtype, "output 'maxidx'"));
  LMX_TRY(lmx_cuda_fail(c,
                        lmx_cu_roipool_fwd(LMX_CU_S(c), in[0].dtype, g, in[0].data, in[1].data,
                                           out[0].data, out[1].data),
                        "lmx_cu_roipool_fwd"));
  return LMX_OK;
}

int lmx_cuda_bwd_ROIPooling(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                            const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                            const lmx_tensor *aux) {
  (void)aux;
  LMX_TRY(lmx_cuda_zero_grad(c, &ig[1], req[1]));
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_roi_geom g;
  lmx_shape o;
  LMX_TRY(roi_setup(c, LMX_ROI_POOL, in, &g, &o));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &og[0], &o, dt, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &out[1], &o, dt, "output 'maxidx'"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, dt, "gradient of 'data'"));
  LMX_TRY(lmx_cuda_fail(c,
                        lmx_cu_roipool_bwd(LMX_CU_S(c), dt, g, in[1].data, out[1].data, og[0].data,
                                           ig[0].data, req[0] == LMX_REQ_ADD),
                        "lmx_cu_roipool_bwd"));
  return LMX_OK;
}

int lmx_cuda_fwd__contrib_ROIAlign(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                                   const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(fwd_req(c, req[0]));
  lmx_roi_geom g;
  lmx_shape o;
  LMX_TRY(roi_setup(c, LMX_ROI_ALIGN, in, &g, &o));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &o, in[0].dtype, "output"));
  LMX_TRY(lmx_cuda_fail(
      c, lmx_cu_roialign_fwd(LMX_CU_S(c), in[0].dtype, g, in[0].data, in[1].data, out[0].data),
      "lmx_cu_roialign_fwd"));
  return LMX_OK;
}

int lmx_cuda_bwd__contrib_ROIAlign(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                                   const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                                   const lmx_tensor *aux) {
  (void)out, (void)aux;
  LMX_TRY(lmx_cuda_zero_grad(c, &ig[1], req[1]));
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_roi_geom g;
  lmx_shape o;
  LMX_TRY(roi_setup(c, LMX_ROI_ALIGN, in, &g, &o));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &og[0], &o, dt, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, dt, "gradient of 'data'"));
  LMX_TRY(lmx_cuda_fail(c,
                        lmx_cu_roialign_bwd(LMX_CU_S(c), dt, g, in[1].data, og[0].data, ig[0].data,
                                            req[0] == LMX_REQ_ADD),
                        "lmx_cu_roialign_bwd"));
  return LMX_OK;
}

int lmx_cuda_fwd__contrib_PSROIPooling(const lmx_op_ctx *c, const lmx_tensor *in,
                                       const lmx_tensor *out, const int *req,
                                       const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(fwd_req(c, req[0]));
  lmx_roi_geom g;
  lmx_shape o;
  LMX_TRY(roi_setup(c, LMX_ROI_PS, in, &g, &o));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &o, in[0].dtype, "output"));
  LMX_TRY(lmx_cuda_fail(
      c, lmx_cu_psroi_fwd(LMX_CU_S(c), in[0].dtype, g, in[0].data, in[1].data, out[0].data),
      "lmx_cu_psroi_fwd"));
  return LMX_OK;
}

int lmx_cuda_bwd__contrib_PSROIPooling(const lmx_op_ctx *c, const lmx_tensor *og,
                                       const lmx_tensor *in, const lmx_tensor *out,
                                       const lmx_tensor *ig, const int *req,
                                       const lmx_tensor *aux) {
  (void)out, (void)aux;
  LMX_TRY(lmx_cuda_zero_grad(c, &ig[1], req[1]));
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_roi_geom g;
  lmx_shape o;
  LMX_TRY(roi_setup(c, LMX_ROI_PS, in, &g, &o));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &og[0], &o, dt, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, dt, "gradient of 'data'"));
  LMX_TRY(lmx_cuda_fail(c,
                        lmx_cu_psroi_bwd(LMX_CU_S(c), dt, g, in[1].data, og[0].data, ig[0].data,
                                         req[0] == LMX_REQ_ADD),
                        "lmx_cu_psroi_bwd"));
  return LMX_OK;
}
