/* dnn.c — the cuDNN branch of the CUDA glue of Convolution, Pooling and BatchNorm.
 *
 * conv.c and norm.c call these after their own checks, in every CUDA build. Each builds
 * the request of kernels/cuda/cudnn_args.h from the plan and the typed parameters, lets
 * lmx_dnn_*_derive decide, and runs the accepted calls through kernels/cuda/cudnn_exec.cu
 * (real CUDA builds that found cudnn.h: LUAMX_HAVE_CUDNN). LMX_CUDNN_OWN (nothing
 * written) sends the caller on to its own kernels: cudnn_off, cuDNN not in this build
 * (the simulator, no cudnn.h), disabled or not loadable (LUAMX_CUDNN=0, no
 * libcudnn.so.9), a refused configuration, or NOT_SUPPORTED from cuDNN. Every call
 * writes the executor step's note (which path ran and why; debug_str shows it).
 */
#include "dnn.h"

#include <stdarg.h>
#include <stdio.h>

#ifdef LUAMX_HAVE_CUDNN
#include "../../../kernels/cuda/cu_dnn.h"
#endif

int lmx_cudnn_note(const lmx_op_ctx *c, const char *fmt, ...) {
  if (c->note && c->note_cap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->note, c->note_cap, fmt, ap);
    va_end(ap);
  }
  return LMX_CUDNN_OWN;
}

int lmx_cudnn_unavailable(const lmx_op_ctx *c, int cudnn_off) {
  if (cudnn_off) return lmx_cudnn_note(c, "own kernels (cudnn_off=True)");
#ifdef LUAMX_HAVE_CUDNN
  if (!lmx_cu_dnn_ready())
    return lmx_cudnn_note(c, "own kernels (cuDNN off: %s)", lmx_cu_dnn_why_off());
  return LMX_OK;
#elif defined(LUAMX_CUDA_SIM)
  return lmx_cudnn_note(c, "own kernels (cuDNN not built: the CUDA simulator has no cuDNN)");
#else
  return lmx_cudnn_note(c, "own kernels (cuDNN not built: cudnn.h was not found at build time)");
#endif
}

static int refused(const lmx_op_ctx *c, const char *why) {
  return lmx_cudnn_note(c, "own kernels (cuDNN refuses: %s)", why);
}

static lmx_dnn_geom geom_of(const lmx_cpu_geom *g, int k) {
  lmx_dnn_geom r;
  r.k = k;
  for (int i = 0; i < 3; i++)
    r.in[i] = g->in[i], r.out[i] = g->out[i], r.kernel[i] = g->kernel[i],
    r.stride[i] = g->stride[i], r.pad[i] = g->pad[i], r.dilate[i] = g->dilate[i];
  return r;
}

static int conv_args(const lmx_op_ctx *c, const lmx_conv_dims *d, int k, lmx_dnn_conv_args *a) {
  const lmx_conv_param *p = c->param;
  if (lmx_cudnn_unavailable(c, p->cudnn_off)) return LMX_CUDNN_OWN;
  lmx_dnn_conv_req r = {d->dt, p->layout, d->deconv, d->bias, d->N, d->C, d->F, d->G,
                        geom_of(&d->g, k)};
  char why[160];
  return lmx_dnn_conv_derive(&r, a, why, sizeof why) == LMX_DNN_USE ? LMX_OK : refused(c, why);
}

static int pool_args(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_cpu_geom *g, int type,
                     int incl, lmx_dnn_pool_args *a) {
  const lmx_pool_param *p = c->param;
  if (lmx_cudnn_unavailable(c, p->cudnn_off)) return LMX_CUDNN_OWN;
  lmx_dnn_pool_req r = {x->dtype, p->layout, type, p->pooling_convention, p->global_pool, incl,
                        x->shape.dim[0], x->shape.dim[1], geom_of(g, x->shape.ndim - 2)};
  char why[160];
  return lmx_dnn_pool_derive(&r, a, why, sizeof why) == LMX_DNN_USE ? LMX_OK : refused(c, why);
}

static int bn_args(const lmx_op_ctx *c, const lmx_cpu_bn *b, int dt, int backward,
                   const int *req, lmx_dnn_bn_args *a) {
  const lmx_bn_param *p = c->param;
  if (lmx_cudnn_unavailable(c, p->cudnn_off)) return LMX_CUDNN_OWN;
#ifdef LUAMX_HAVE_CUDNN
  double min_eps = lmx_cu_dnn_bn_min_eps();
#else
  double min_eps = 0; /* not reached: lmx_cudnn_unavailable answered */
#endif
  lmx_dnn_bn_req r = {dt, backward, b->outer, b->C, b->inner, b->eps, b->momentum, min_eps,
                      b->fix_gamma, b->batch_stats, b->update_moving,
                      {req[0], backward ? req[1] : 0, backward ? req[2] : 0},
                      c->workspace ? c->workspace_bytes : 0};
  char why[160];
  return lmx_dnn_bn_derive(&r, a, why, sizeof why) == LMX_DNN_USE ? LMX_OK : refused(c, why);
}

#ifdef LUAMX_HAVE_CUDNN

/* rc of a cudnn_exec.cu call -> LMX_OK, LMX_CUDNN_OWN or a status naming the call */
static int result(const lmx_op_ctx *c, int rc, const char *what) {
  if (rc == 0) {
    lmx_cudnn_note(c, "cuDNN");
    return LMX_OK;
  }
  if (rc == LMX_CU_DNN_SKIP)
    return lmx_cudnn_note(c, "own kernels (cuDNN declined at run time: NOT_SUPPORTED, or no "
                          "descriptor or algorithm for this configuration)");
  lmx_cudnn_note(c, "cuDNN failed");
  if (rc >= LMX_CU_DNN_ESTATUS)
    return lmx_op_fail(c, LMX_ERR_DEVICE, "cuDNN %s on gpu(%d): status %d (%s)", what,
                       c->dev_id, rc - LMX_CU_DNN_ESTATUS, lmx_cu_dnn_status_str(rc));
  return lmx_cuda_fail(c, rc, what);
}

int lmx_cudnn_conv_fwd(const lmx_op_ctx *c, const lmx_conv_dims *d, const lmx_tensor *in,
                       const lmx_tensor *out, int acc) {
  lmx_dnn_conv_args a;
  int rc = conv_args(c, d, in[0].shape.ndim - 2, &a);
  if (rc) return rc;
  return result(c, lmx_cu_dnn_conv_fwd(LMX_CU_S(c), &a, in[0].data, in[1].data,
                                       d->bias ? in[2].data : NULL, out[0].data, acc,
                                       c->workspace, c->workspace_bytes),
                "convolution forward");
}

int lmx_cudnn_conv_bwd(const lmx_op_ctx *c, const lmx_conv_dims *d, const lmx_tensor *og,
                       const lmx_tensor *in, const lmx_tensor *ig, const int *req) {
  lmx_dnn_conv_args a;
  int rc = conv_args(c, d, in[0].shape.ndim - 2, &a);
  if (rc) return rc;
  int acc[3] = {req[0] == LMX_REQ_ADD, req[1] == LMX_REQ_ADD, d->bias && req[2] == LMX_REQ_ADD};
  void *db = d->bias && req[2] ? ig[2].data : NULL;
  return result(c, lmx_cu_dnn_conv_bwd(LMX_CU_S(c), &a, in[0].data, in[1].data, og[0].data,
                                       req[0] ? ig[0].data : NULL, req[1] ? ig[1].data : NULL,
                                       db, acc, c->workspace, c->workspace_bytes),
                "convolution backward");
}

int lmx_cudnn_pool_fwd(const lmx_op_ctx *c, const lmx_cpu_geom *g, int type, int incl,
                       const lmx_tensor *x, const lmx_tensor *y, int acc) {
  lmx_dnn_pool_args a;
  int rc = pool_args(c, x, g, type, incl, &a);
  if (rc) return rc;
  return result(c, lmx_cu_dnn_pool_fwd(LMX_CU_S(c), &a, x->data, y->data, acc),
                "pooling forward");
}

int lmx_cudnn_pool_bwd(const lmx_op_ctx *c, const lmx_cpu_geom *g, int type, int incl,
                       const lmx_tensor *x, const lmx_tensor *y, const lmx_tensor *dy,
                       const lmx_tensor *dx, int acc) {
  lmx_dnn_pool_args a;
  int rc = pool_args(c, x, g, type, incl, &a);
  if (rc) return rc;
  if (!y->data || y->dtype != x->dtype || lmx_glue_size(y) != lmx_glue_size(dy))
    return refused(c, "the forward output is not kept for this backward");
  return result(c, lmx_cu_dnn_pool_bwd(LMX_CU_S(c), &a, x->data, y->data, dy->data, dx->data,
                                       acc), "pooling backward");
}

int lmx_cudnn_bn_fwd(const lmx_op_ctx *c, const lmx_cpu_bn *b, const lmx_tensor *in,
                     const lmx_tensor *out, const int *req, const lmx_tensor *aux) {
  lmx_dnn_bn_args a;
  int rc = bn_args(c, b, in[0].dtype, 0, req, &a);
  if (rc) return rc;
  return result(c, lmx_cu_dnn_bn_fwd(LMX_CU_S(c), &a, in[0].data, out[0].data, in[1].data,
                                     in[2].data, out[1].data, out[2].data, aux[0].data,
                                     aux[1].data, c->workspace), "batch norm forward");
}

int lmx_cudnn_bn_bwd(const lmx_op_ctx *c, const lmx_cpu_bn *b, const lmx_tensor *og,
                     const lmx_tensor *in, const lmx_tensor *out, const lmx_tensor *ig,
                     const int *req) {
  lmx_dnn_bn_args a;
  int rc = bn_args(c, b, in[0].dtype, 1, req, &a);
  if (rc) return rc;
  return result(c, lmx_cu_dnn_bn_bwd(LMX_CU_S(c), &a, in[0].data, og[0].data, in[1].data,
                                     out[1].data, out[2].data, ig[0].data,
                                     req[1] ? ig[1].data : NULL, req[2] ? ig[2].data : NULL,
                                     c->workspace), "batch norm backward");
}

#else /* no cuDNN in this build: the note says so, and the own kernels run */

int lmx_cudnn_conv_fwd(const lmx_op_ctx *c, const lmx_conv_dims *d, const lmx_tensor *in,
                       const lmx_tensor *out, int acc) {
  lmx_dnn_conv_args a;
  (void)out, (void)acc;
  (void)conv_args(c, d, in[0].shape.ndim - 2, &a); /* writes the note */
  return LMX_CUDNN_OWN;
}

int lmx_cudnn_conv_bwd(const lmx_op_ctx *c, const lmx_conv_dims *d, const lmx_tensor *og,
                       const lmx_tensor *in, const lmx_tensor *ig, const int *req) {
  (void)og, (void)ig, (void)req;
  return lmx_cudnn_conv_fwd(c, d, in, NULL, 0);
}

int lmx_cudnn_pool_fwd(const lmx_op_ctx *c, const lmx_cpu_geom *g, int type, int incl,
                       const lmx_tensor *x, const lmx_tensor *y, int acc) {
  lmx_dnn_pool_args a;
  (void)y, (void)acc;
  (void)pool_args(c, x, g, type, incl, &a); /* writes the note */
  return LMX_CUDNN_OWN;
}

int lmx_cudnn_pool_bwd(const lmx_op_ctx *c, const lmx_cpu_geom *g, int type, int incl,
                       const lmx_tensor *x, const lmx_tensor *y, const lmx_tensor *dy,
                       const lmx_tensor *dx, int acc) {
  (void)dy, (void)dx;
  return lmx_cudnn_pool_fwd(c, g, type, incl, x, y, acc);
}

int lmx_cudnn_bn_fwd(const lmx_op_ctx *c, const lmx_cpu_bn *b, const lmx_tensor *in,
                     const lmx_tensor *out, const int *req, const lmx_tensor *aux) {
  lmx_dnn_bn_args a;
  (void)out, (void)aux;
  (void)bn_args(c, b, in[0].dtype, 0, req, &a); /* writes the note */
  return LMX_CUDNN_OWN;
}

int lmx_cudnn_bn_bwd(const lmx_op_ctx *c, const lmx_cpu_bn *b, const lmx_tensor *og,
                     const lmx_tensor *in, const lmx_tensor *out, const lmx_tensor *ig,
                     const int *req) {
  lmx_dnn_bn_args a;
  (void)og, (void)out, (void)ig;
  (void)bn_args(c, b, in[0].dtype, 1, req, &a); /* writes the note */
  return LMX_CUDNN_OWN;
}

#endif
