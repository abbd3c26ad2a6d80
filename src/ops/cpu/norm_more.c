/* norm_more.c — CPU glue of LRN, InstanceNorm, GroupNorm and L2Normalization
 * (descriptors in src/ops/nn_norm_more.c, kernels in kernels/cpu/norm_more.c).
 *
 * Every output (the hidden statistics too) is written by forward; forward refuses req
 * ADD. Backward reads the forward's outputs (LRN: output and tmp_norm; the row norms:
 * the statistics; L2Normalization: output and norm) and honours req per gradient.
 */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../norm_more.h"
#include "../op_impl.h"
#include "cpu_ops.h"

static int check_t(const lmx_op_ctx *c, const lmx_tensor *t, const lmx_shape *s, int dt,
                   const char *what) {
  return lmx_glue_check_like(c, t, s, dt, what);
}

static int fwd_reqs(const lmx_op_ctx *c, const int *req, int n) {
  for (int i = 0; i < n; i++)
    if (req[i] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "output");
  return LMX_OK;
}

/* ---- LRN ------------------------------------------------------------------------------ */

static int lrn_setup(const lmx_op_ctx *c, const lmx_tensor *in, int64_t *N, int64_t *C,
                     int64_t *S) {
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
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

int lmx_cpu_fwd_LRN(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                    const int *req, const lmx_tensor *aux) {
  (void)aux;
  const lmx_lrn_param *p = c->param;
  int64_t N, C, S;
  LMX_TRY(lrn_setup(c, in, &N, &C, &S));
  int dt = in[0].dtype;
  LMX_TRY(check_t(c, &out[0], &in[0].shape, dt, "output"));
  LMX_TRY(check_t(c, &out[1], &in[0].shape, dt, "output 'tmp_norm'"));
  LMX_TRY(fwd_reqs(c, req, 2));
  if (req[0] == LMX_REQ_NULL && req[1] == LMX_REQ_NULL) return LMX_OK;
  lmx_cpu_lrn_fwd(dt, N, C, S, p->nsize, p->alpha, p->beta, p->knorm, in[0].data, out[0].data,
                  out[1].data);
  return LMX_OK;
}

int lmx_cpu_bwd_LRN(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                    const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                    const lmx_tensor *aux) {
  (void)aux;
  const lmx_lrn_param *p = c->param;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t N, C, S;
  LMX_TRY(lrn_setup(c, in, &N, &C, &S));
  int dt = in[0].dtype;
  LMX_TRY(check_t(c, &og[0], &in[0].shape, dt, "output gradient"));
  LMX_TRY(check_t(c, &out[0], &in[0].shape, dt, "output"));
  LMX_TRY(check_t(c, &out[1], &in[0].shape, dt, "output 'tmp_norm'"));
  LMX_TRY(check_t(c, &ig[0], &in[0].shape, dt, "gradient of 'data'"));
  lmx_cpu_lrn_bwd(dt, N, C, S, p->nsize, p->alpha, p->beta, in[0].data, out[0].data,
                  out[1].data, og[0].data, ig[0].data, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

/* ---- row normalisations ----------------------------------------------------------------- */

static double eps_of(const lmx_op_ctx *c, int kind) {
  if (kind == LMX_RN_INSTANCE) return ((const lmx_inorm_param *)c->param)->eps;
  if (kind == LMX_RN_GROUP) return ((const lmx_gn_param *)c->param)->eps;
  return ((const lmx_l2n_param *)c->param)->eps;
}

/* The plan and the checks of data, gamma/beta and the statistics (d: data's shape). */
static int rn_setup(const lmx_op_ctx *c, int kind, const lmx_tensor *in, const lmx_tensor *out,
                    const lmx_shape *d, int dt, lmx_cpu_rownorm *r) {
  lmx_rownorm g;
  if (d->ndim < (kind == LMX_RN_L2 ? 2 : 3)) {
    char s[LMX_SHAPE_STRCAP];
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected (N, C, ...), got %s",
                       lmx_shape_str(d, s));
  }
  LMX_TRY(lmx_rownorm_plan(c, kind, d, &g));
  r->outer = g.outer, r->len = g.len, r->inner = g.inner, r->na = g.na;
  LMX_TRY(check_t(c, &out[0], d, dt, "output"));
  lmx_shape st = LMX_SHP(g.outer * g.inner);
  LMX_TRY(lmx_glue_check_size(c, &out[1], st.dim[0], kind == LMX_RN_L2 ? "output 'norm'"
                                                                       : "output 'mean'"));
  if (out[1].dtype != dt) return lmx_cpu_fail_dtype(c, &out[1], "output 'mean'");
  if (kind == LMX_RN_L2) return LMX_OK;
  LMX_TRY(lmx_glue_check_size(c, &out[2], st.dim[0], kind == LMX_RN_GROUP ? "output 'std'"
                                                                          : "output 'var'"));
  if (out[2].dtype != dt) return lmx_cpu_fail_dtype(c, &out[2], "output 'var'");
  lmx_shape a = LMX_SHP(g.na);
  LMX_TRY(check_t(c, &in[1], &a, dt, "input 'gamma'"));
  return check_t(c, &in[2], &a, dt, "input 'beta'");
}

static int rn_fwd(const lmx_op_ctx *c, int kind, const lmx_tensor *in, const lmx_tensor *out,
                  const int *req) {
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  int dt = in[0].dtype, nout = kind == LMX_RN_L2 ? 2 : 3;
  lmx_cpu_rownorm r;
  LMX_TRY(rn_setup(c, kind, in, out, &in[0].shape, dt, &r));
  LMX_TRY(fwd_reqs(c, req, nout));
  int any = 0;
  for (int i = 0; i < nout; i++) any |= req[i] != LMX_REQ_NULL;
  if (!any) return LMX_OK;
  lmx_cpu_rownorm_fwd(dt, kind, &r, eps_of(c, kind), in[0].data,
                      kind == LMX_RN_L2 ? NULL : in[1].data, kind == LMX_RN_L2 ? NULL : in[2].data,
                      out[0].data, out[1].data, kind == LMX_RN_L2 ? NULL : out[2].data);
  return LMX_OK;
}

static int rn_bwd(const lmx_op_ctx *c, int kind, const lmx_tensor *og, const lmx_tensor *in,
                  const lmx_tensor *out, const lmx_tensor *ig, const int *req) {
  int nin = kind == LMX_RN_L2 ? 1 : 3, any = 0;
  for (int i = 0; i < nin; i++) any |= req[i] != LMX_REQ_NULL;
  if (!any) return LMX_OK;
  /* L2Normalization's backward reads no input: the output carries data's shape */
  const lmx_tensor *x = kind == LMX_RN_L2 ? &out[0] : &in[0];
  LMX_TRY(lmx_cpu_check_float(c, x, kind == LMX_RN_L2 ? "output" : "input 'data'"));
  int dt = x->dtype;
  lmx_cpu_rownorm r;
  LMX_TRY(rn_setup(c, kind, in, out, &x->shape, dt, &r));
  LMX_TRY(check_t(c, &og[0], &x->shape, dt, "output gradient"));
  static const char *const names[] = {"gradient of 'data'", "gradient of 'gamma'",
                                      "gradient of 'beta'"};
  for (int i = 0; i < nin; i++)
    if (req[i] != LMX_REQ_NULL)
      LMX_TRY(check_t(c, &ig[i], i ? &in[i].shape : &x->shape, dt, names[i]));
  int acc[3] = {0, 0, 0};
  void *g[3] = {NULL, NULL, NULL};
  for (int i = 0; i < nin; i++)
    acc[i] = req[i] == LMX_REQ_ADD, g[i] = req[i] != LMX_REQ_NULL ? ig[i].data : NULL;
  lmx_cpu_rownorm_bwd(dt, kind, &r, eps_of(c, kind), kind == LMX_RN_L2 ? NULL : in[0].data,
                      out[0].data, kind == LMX_RN_L2 ? NULL : in[1].data, out[1].data,
                      kind == LMX_RN_L2 ? NULL : out[2].data, og[0].data, g[0], g[1], g[2], acc);
  return LMX_OK;
}

#define RN_GLUE(id, kind)                                                                   \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                       const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                              \
    return rn_fwd(c, kind, in, out, req);                                                   \
  }                                                                                         \
  int lmx_cpu_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,     \
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,         \
                       const lmx_tensor *aux) {                                             \
    (void)aux;                                                                              \
    return rn_bwd(c, kind, og, in, out, ig, req);                                           \
  }

RN_GLUE(InstanceNorm, LMX_RN_INSTANCE)
RN_GLUE(GroupNorm, LMX_RN_GROUP)
RN_GLUE(L2Normalization, LMX_RN_L2)
