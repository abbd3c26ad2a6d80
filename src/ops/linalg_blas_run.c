/* linalg_blas_run.c — potrf, potri, trmm, trsm and syrk from a backend's primitives
 * (linalg_blas_run.h has the formulas). */
#include "linalg_blas_run.h"

#include "glue.h"
#include "op_impl.h"

static int nin_of(int kind) { return kind == LMX_LA_TRMM || kind == LMX_LA_TRSM ? 2 : 1; }

static int64_t big(const lmx_la_blas_plan *p) {
  int64_t a = p->n * p->n, b = p->m * p->k;
  return p->batch * (a > b ? a : b);
}

size_t lmx_la_blas_ws(const lmx_op_ctx *c, int kind, const lmx_shape *in) {
  lmx_la_blas_plan p;
  if (kind == LMX_LA_SYRK) return 0; /* its gradient accumulates in place */
  for (int i = 0; i < nin_of(kind); i++)
    if (!lmx_shape_known(&in[i])) return 0;
  if (lmx_la_blas_plan_make(c, kind, in, &p) != LMX_OK) return 0;
  return 2 * (size_t)big(&p) * sizeof(double);
}

/* dtype and plan from the inputs' descriptions (t: in[] forward; the gradients backward,
 * which carry the inputs' shapes and dtypes) */
static int plan(const lmx_la_prims *P, const lmx_op_ctx *c, int kind, const lmx_tensor *t,
                lmx_la_blas_plan *p) {
  LMX_TRY(P->check_dtype(c, &t[0], "input 'A'"));
  lmx_shape s[2] = {t[0].shape, nin_of(kind) == 2 ? t[1].shape : t[0].shape};
  return lmx_la_blas_plan_make(c, kind, s, p);
}

int lmx_la_blas_forward(const lmx_la_prims *P, const lmx_op_ctx *c, int kind,
                        const lmx_tensor *in, const lmx_tensor *out, int req) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  if (req == LMX_REQ_ADD)
    return lmx_op_fail(c, LMX_ERR_UNSUPPORTED, "output: req 'add' is not supported for this "
                       "forward output");
  lmx_la_blas_plan p;
  LMX_TRY(plan(P, c, kind, in, &p));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &in[0], &in[0].shape, dt, "input 'A'"));
  if (nin_of(kind) == 2) LMX_TRY(lmx_glue_check_like(c, &in[1], &in[1].shape, dt, "input 'B'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &p.out, dt, "output"));
  void *o = out[0].data;
  if (kind == LMX_LA_POTRF || kind == LMX_LA_POTRI)
    return P->chol(c, dt, p.batch, p.n, in[0].data, o,
                   ((const lmx_la_chol_param *)c->param)->lower, kind == LMX_LA_POTRI);
  if (kind == LMX_LA_SYRK) {
    const lmx_la_syrk_param *s = c->param;
    return P->syrk(c, dt, p.batch, p.m, p.k, in[0].data, o, s->transpose, s->alpha);
  }
  const lmx_la_trmm_param *t = c->param;
  if (o != in[1].data) LMX_TRY(P->copy(c, dt, lmx_glue_size(&out[0]), o, in[1].data, 0));
  return P->tri(c, dt, p.batch, p.m, p.k, in[0].data, o, t->lower, t->transpose, t->rightside,
                t->alpha, kind == LMX_LA_TRSM);
}

/* where a gradient is made: its buffer, or workspace buffer `slot` when it is added */
static void *dst_of(const lmx_op_ctx *c, const lmx_tensor *ig, int req, int64_t per, int dt,
                    int slot) {
  if (req != LMX_REQ_ADD) return ig->data;
  return (char *)c->workspace + (size_t)(slot * per) * (size_t)lmx_dtype_size(dt);
}

static int finish(const lmx_la_prims *P, const lmx_op_ctx *c, int dt, const lmx_tensor *ig,
                  int req, const void *d) {
  return req == LMX_REQ_ADD ? P->copy(c, dt, lmx_glue_size(ig), ig->data, d, 1) : LMX_OK;
}

/* d = alpha · (X Yᵀ) (left) or alpha · (Xᵀ Y) (right) per matrix, X and Y [m, k], d the
 * triangle's square (n), masked to the `lower` triangle; X is `b` when (left and
 * transpose) or (right and not transpose), else `g` (trmm: b = B, g = G; trsm: b = C,
 * g = dB). */
static int tri_grad(const lmx_la_prims *P, const lmx_op_ctx *c, int dt,
                    const lmx_la_blas_plan *p, const lmx_la_trmm_param *t, const void *g,
                    const void *b, double alpha, void *d) {
  int swap = t->rightside ? !t->transpose : t->transpose;
  const void *X = swap ? b : g, *Y = swap ? g : b;
  int64_t mk = p->m * p->k, n = p->n;
  if (!t->rightside)
    LMX_TRY(P->gemm(c, dt, p->batch, 0, 1, n, n, p->k, alpha, X, p->k, mk, Y, p->k, mk, 0.0, d,
                    n, n * n));
  else
    LMX_TRY(P->gemm(c, dt, p->batch, 1, 0, n, n, p->m, alpha, X, p->k, mk, Y, p->k, mk, 0.0, d,
                    n, n * n));
  return P->tri_fix(c, dt, p->batch, n, d, t->lower, 0);
}

static int tri_bwd(const lmx_la_prims *P, const lmx_op_ctx *c, int kind, const lmx_tensor *og,
                   const lmx_tensor *in, const lmx_tensor *out, const lmx_tensor *ig,
                   const int *req, const lmx_la_blas_plan *p, int64_t per) {
  const lmx_la_trmm_param *t = c->param;
  int dt = in[0].dtype;
  int64_t mk = p->batch * p->m * p->k;
  if (kind == LMX_LA_TRMM) {
    if (req[0] != LMX_REQ_NULL) {
      void *d = dst_of(c, &ig[0], req[0], per, dt, 0);
      LMX_TRY(tri_grad(P, c, dt, p, t, og[0].data, in[1].data, t->alpha, d));
      LMX_TRY(finish(P, c, dt, &ig[0], req[0], d));
    }
    if (req[1] != LMX_REQ_NULL) {
      void *d = dst_of(c, &ig[1], req[1], per, dt, 1);
      LMX_TRY(P->copy(c, dt, mk, d, og[0].data, 0));
      LMX_TRY(P->tri(c, dt, p->batch, p->m, p->k, in[0].data, d, t->lower, !t->transpose,
                     t->rightside, t->alpha, 0));
      LMX_TRY(finish(P, c, dt, &ig[1], req[1], d));
    }
    return LMX_OK;
  }
  /* trsm: dB first (dA needs it), in its buffer when written, else in the workspace */
  LMX_TRY(lmx_glue_check_like(c, &out[0], &p->out, dt, "output"));
  void *db = req[1] == LMX_REQ_WRITE || req[1] == LMX_REQ_INPLACE
                 ? ig[1].data
                 : (char *)c->workspace + (size_t)per * (size_t)lmx_dtype_size(dt);
  if (db != og[0].data) LMX_TRY(P->copy(c, dt, mk, db, og[0].data, 0));
  LMX_TRY(P->tri(c, dt, p->batch, p->m, p->k, in[0].data, db, t->lower, !t->transpose,
                 t->rightside, t->alpha, 1));
  if (req[0] != LMX_REQ_NULL) {
    void *d = dst_of(c, &ig[0], req[0], per, dt, 0);
    LMX_TRY(tri_grad(P, c, dt, p, t, db, out[0].data, -1.0 / t->alpha, d));
    LMX_TRY(finish(P, c, dt, &ig[0], req[0], d));
  }
  return req[1] == LMX_REQ_ADD ? finish(P, c, dt, &ig[1], req[1], db) : LMX_OK;
}

static int chol_bwd(const lmx_la_prims *P, const lmx_op_ctx *c, int kind, const lmx_tensor *og,
                    const lmx_tensor *in, const lmx_tensor *out, const lmx_tensor *ig, int req,
                    const lmx_la_blas_plan *p, int64_t per) {
  int lower = ((const lmx_la_chol_param *)c->param)->lower, dt = ig[0].dtype;
  int64_t n = p->n, nn = n * n, B = p->batch;
  LMX_TRY(lmx_glue_check_like(c, &out[0], &p->out, dt, "output"));
  void *d = dst_of(c, &ig[0], req, per, dt, 0);
  const void *G = og[0].data, *Y = out[0].data;
  if (kind == LMX_LA_POTRF) { /* Y is the factor */
    if (d != G) LMX_TRY(P->copy(c, dt, B * nn, d, G, 0));
    LMX_TRY(P->tri(c, dt, B, n, n, Y, d, lower, 1, !lower, 1.0, 0));
    LMX_TRY(P->tri_fix(c, dt, B, n, d, lower, 1));
    LMX_TRY(P->tri(c, dt, B, n, n, Y, d, lower, lower, 0, 1.0, 1));
    LMX_TRY(P->tri(c, dt, B, n, n, Y, d, lower, !lower, 1, 0.5, 1));
  } else { /* Y is the inverse, in[0] the factor */
    LMX_TRY(lmx_glue_check_like(c, &in[0], &p->out, dt, "input 'A'"));
    if (lower) {
      LMX_TRY(P->gemm(c, dt, B, 0, 0, n, n, n, 1.0, Y, n, nn, G, n, nn, 0.0, d, n, nn));
      LMX_TRY(P->gemm(c, dt, B, 0, 1, n, n, n, 1.0, Y, n, nn, G, n, nn, 1.0, d, n, nn));
    } else {
      LMX_TRY(P->gemm(c, dt, B, 0, 0, n, n, n, 1.0, G, n, nn, Y, n, nn, 0.0, d, n, nn));
      LMX_TRY(P->gemm(c, dt, B, 1, 0, n, n, n, 1.0, G, n, nn, Y, n, nn, 1.0, d, n, nn));
    }
    LMX_TRY(P->tri(c, dt, B, n, n, in[0].data, d, lower, 1, lower, -1.0, 1));
    LMX_TRY(P->tri_fix(c, dt, B, n, d, lower, 0));
  }
  return finish(P, c, dt, &ig[0], req, d);
}

static int syrk_bwd(const lmx_la_prims *P, const lmx_op_ctx *c, const lmx_tensor *og,
                    const lmx_tensor *in, const lmx_tensor *ig, int req,
                    const lmx_la_blas_plan *p) {
  const lmx_la_syrk_param *s = c->param;
  int dt = ig[0].dtype;
  int64_t m = p->m, k = p->k, mk = m * k, B = p->batch;
  double b0 = req == LMX_REQ_ADD ? 1.0 : 0.0;
  const void *A = in[0].data, *G = og[0].data;
  void *d = ig[0].data;
  if (!s->transpose) { /* α G A + α Gᵀ A, G [m, m] */
    LMX_TRY(P->gemm(c, dt, B, 0, 0, m, k, m, s->alpha, G, m, m * m, A, k, mk, b0, d, k, mk));
    return P->gemm(c, dt, B, 1, 0, m, k, m, s->alpha, G, m, m * m, A, k, mk, 1.0, d, k, mk);
  } /* α A G + α A Gᵀ, G [k, k] */
  LMX_TRY(P->gemm(c, dt, B, 0, 0, m, k, k, s->alpha, A, k, mk, G, k, k * k, b0, d, k, mk));
  return P->gemm(c, dt, B, 0, 1, m, k, k, s->alpha, A, k, mk, G, k, k * k, 1.0, d, k, mk);
}

int lmx_la_blas_backward(const lmx_la_prims *P, const lmx_op_ctx *c, int kind,
                         const lmx_tensor *og, const lmx_tensor *in, const lmx_tensor *out,
                         const lmx_tensor *ig, const int *req) {
  int nin = nin_of(kind), any = 0;
  for (int j = 0; j < nin; j++) any |= req[j] != LMX_REQ_NULL;
  if (!any) return LMX_OK;
  lmx_la_blas_plan p;
  LMX_TRY(plan(P, c, kind, ig, &p));
  int dt = ig[0].dtype;
  int64_t per = big(&p);
  if (kind != LMX_LA_SYRK) LMX_TRY(lmx_glue_check_ws(c, 2 * (size_t)per * sizeof(double)));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &p.out, dt, "output gradient"));
  for (int j = 0; j < nin; j++) {
    const char *what = j == 0 ? "gradient of 'A'" : "gradient of 'B'";
    LMX_TRY(lmx_glue_check_like(c, &ig[j], &ig[j].shape, dt, what));
  }
  if (kind == LMX_LA_POTRF || kind == LMX_LA_POTRI)
    return chol_bwd(P, c, kind, og, in, out, ig, req[0], &p, per);
  LMX_TRY(lmx_glue_check_like(c, &in[0], &ig[0].shape, dt, "input 'A'"));
  if (kind == LMX_LA_SYRK) return syrk_bwd(P, c, og, in, ig, req[0], &p);
  LMX_TRY(lmx_glue_check_like(c, &in[1], &ig[1].shape, dt, "input 'B'"));
  return tri_bwd(P, c, kind, og, in, out, ig, req, &p, per);
}
