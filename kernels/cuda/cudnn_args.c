/* cudnn_args.c — descriptor arguments and the use-or-refuse decision for cuDNN
 * (cudnn_args.h). Plain C, compiled in every build and tested on the CPU.
 *
 * The rules, each a refusal with its reason when it fails:
 *  - dtype float32 or float16 (float16 data, float32 compute); channel-first layout;
 *    no empty dim; every dim, and every tensor's element count, fits an int.
 *  - Convolution: not Deconvolution; luamx's output sizes are cuDNN's
 *    (in + 2p - dilate·(k-1) - 1) / s + 1. float32 runs in FMA math (no TF32, as the
 *    own cuBLAS path), float16 may use tensor cores.
 *  - Pooling: max or avg (sum and lp have no cuDNN mode); cuDNN pads symmetrically and
 *    sizes the output with floor, so 'full' (ceil) and 'same' go to cuDNN only where
 *    their output equals the floor size with the same pads — then the windows, and avg's
 *    divisors (the whole window with count_include_pad, which never reaches past the
 *    padding then; else the in-range part), are the same as luamx's. pad < kernel.
 *  - BatchNorm: spatial mode; eps > 0 and >= cuDNN's minimum; training needs >= 2
 *    values per channel (cuDNN's unbiased variance divides by count - 1); backward needs
 *    batch statistics (use_global_stats' gradient is not cuDNN's), a data gradient, and
 *    one req for the parameter gradients that are kept; the workspace holds the ones
 *    and scratch vectors.
 */
#include "cudnn_args.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../../src/luamx.h"

enum { REQ_NULL = 0, REQ_ADD = 3 }; /* LMX_REQ_NULL, LMX_REQ_ADD (src/ops/op.h) */

static int refuse(char *why, size_t len, const char *fmt, ...) {
  if (why && len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
  }
  return LMX_DNN_REFUSE;
}

static int fits(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* packed tensor [n, c, s...] of sp spatial dims (the last sp of sz[3]); 0 if it fits */
static int tensor(lmx_dnn_tensor *t, int64_t n, int64_t c, int sp, const int64_t *sz) {
  int64_t d[5] = {n, c};
  for (int i = 0; i < sp; i++) d[2 + i] = sz[3 - sp + i];
  t->nd = 2 + sp;
  int64_t st = 1;
  for (int i = t->nd - 1; i >= 0; i--) {
    if (!fits(d[i]) || !fits(st)) return -1;
    t->dim[i] = (int)d[i], t->stride[i] = (int)st;
    st *= d[i];
  }
  return fits(st) ? 0 : -1;
}

static int dtype_of(int dt, int *out) {
  if (dt == LMX_FLOAT32) *out = LMX_DNN_FLOAT;
  else if (dt == LMX_FLOAT16) *out = LMX_DNN_HALF;
  else return -1;
  return 0;
}

static const char *dt_name(int dt) {
  return dt == LMX_FLOAT64 ? "float64" : dt == LMX_FLOAT32 ? "float32"
         : dt == LMX_FLOAT16 ? "float16" : "a non-float dtype";
}

/* common checks of a geometry: spatial rank, no empty dim, int range */
static int geom_ok(const lmx_dnn_geom *g, int64_t N, int64_t C, char *why, size_t len) {
  if (g->k < 1 || g->k > 3) return refuse(why, len, "%d spatial dims (1 to 3 go to cuDNN)", g->k);
  if (N <= 0 || C <= 0) return refuse(why, len, "empty batch or channel dim");
  for (int i = 0; i < 3; i++) {
    if (g->in[i] <= 0 || g->out[i] <= 0)
      return refuse(why, len, "empty spatial dim %d", i - (3 - g->k));
    if (!fits(g->kernel[i]) || !fits(g->stride[i]) || !fits(g->pad[i]) || !fits(g->dilate[i]))
      return refuse(why, len, "kernel, stride, pad or dilate beyond cuDNN's int");
  }
  return LMX_DNN_USE;
}

int lmx_dnn_conv_derive(const lmx_dnn_conv_req *r, lmx_dnn_conv_args *a, char *why,
                        size_t len) {
  if (why && len) why[0] = 0;
  memset(a, 0, sizeof *a);
  if (r->deconv) return refuse(why, len, "Deconvolution runs on the own path");
  if (dtype_of(r->dt, &a->data_type))
    return refuse(why, len, "%s (cuDNN is used for float32 and float16)", dt_name(r->dt));
  if (r->layout > 3) return refuse(why, len, "channel-last layout");
  if (geom_ok(&r->g, r->N, r->C, why, len)) return LMX_DNN_REFUSE;
  if (r->G < 1 || r->C % r->G || r->F % r->G || r->F <= 0 || !fits(r->G))
    return refuse(why, len, "channels %lld / filters %lld do not split into %lld groups",
                  (long long)r->C, (long long)r->F, (long long)r->G);
  const lmx_dnn_geom *g = &r->g;
  a->sp = g->k == 3 ? 3 : 2;
  for (int i = 0; i < 3; i++) {
    int64_t ke = g->dilate[i] * (g->kernel[i] - 1) + 1;
    int64_t want = (g->in[i] + 2 * g->pad[i] - ke) / g->stride[i] + 1;
    if (g->stride[i] < 1 || g->dilate[i] < 1 || g->in[i] + 2 * g->pad[i] < ke ||
        want != g->out[i])
      return refuse(why, len, "output size %lld of spatial dim %d is not cuDNN's %lld",
                    (long long)g->out[i], i - (3 - g->k), (long long)want);
  }
  int64_t wsz[3] = {g->kernel[0], g->kernel[1], g->kernel[2]};
  lmx_dnn_tensor w;
  if (tensor(&a->x, r->N, r->C, a->sp, g->in) || tensor(&a->y, r->N, r->F, a->sp, g->out) ||
      tensor(&w, r->F, r->C / r->G, a->sp, wsz))
    return refuse(why, len, "a dim or element count beyond cuDNN's int");
  a->w_nd = w.nd;
  memcpy(a->w_dim, w.dim, sizeof w.dim);
  int64_t one[3] = {1, 1, 1};
  tensor(&a->b, 1, r->F, a->sp, one);
  for (int i = 0; i < a->sp; i++) {
    int j = 3 - a->sp + i;
    a->pad[i] = (int)g->pad[j], a->stride[i] = (int)g->stride[j], a->dilate[i] = (int)g->dilate[j];
  }
  a->groups = (int)r->G;
  a->compute_type = LMX_DNN_FLOAT;
  a->math = r->dt == LMX_FLOAT16 ? LMX_DNN_MATH_TENSOR_OP : LMX_DNN_MATH_FMA;
  a->bias = r->bias != 0;
  return LMX_DNN_USE;
}

int lmx_dnn_pool_derive(const lmx_dnn_pool_req *r, lmx_dnn_pool_args *a, char *why,
                        size_t len) {
  static const char *const conv_names[] = {"valid", "full", "same"};
  if (why && len) why[0] = 0;
  memset(a, 0, sizeof *a);
  if (dtype_of(r->dt, &a->data_type))
    return refuse(why, len, "%s (cuDNN is used for float32 and float16)", dt_name(r->dt));
  if (r->layout > 3) return refuse(why, len, "channel-last layout");
  if (r->type != LMX_DNN_REQ_POOL_MAX && r->type != LMX_DNN_REQ_POOL_AVG)
    return refuse(why, len, "pool_type %s has no cuDNN mode",
                  r->type == LMX_DNN_REQ_POOL_SUM ? "sum" : "lp");
  if (geom_ok(&r->g, r->N, r->C, why, len)) return LMX_DNN_REFUSE;
  const lmx_dnn_geom *g = &r->g;
  int cv = r->convention >= 0 && r->convention <= 2 ? r->convention : 0;
  for (int i = 0; i < 3; i++) {
    if (g->kernel[i] < 1 || g->stride[i] < 1)
      return refuse(why, len, "kernel and stride must be >= 1");
    if (g->pad[i] >= g->kernel[i])
      return refuse(why, len, "pad %lld >= kernel %lld on spatial dim %d (windows of padding "
                    "only)", (long long)g->pad[i], (long long)g->kernel[i], i - (3 - g->k));
    int64_t floor_out = g->in[i] + 2 * g->pad[i] < g->kernel[i]
                            ? 0 : (g->in[i] + 2 * g->pad[i] - g->kernel[i]) / g->stride[i] + 1;
    if (floor_out != g->out[i])
      return refuse(why, len, "pooling_convention '%s' gives %lld outputs on spatial dim %d; "
                    "cuDNN's floor size is %lld", r->global_pool ? "global" : conv_names[cv],
                    (long long)g->out[i], i - (3 - g->k), (long long)floor_out);
  }
  a->sp = g->k == 3 ? 3 : 2;
  if (tensor(&a->x, r->N, r->C, a->sp, g->in) || tensor(&a->y, r->N, r->C, a->sp, g->out))
    return refuse(why, len, "a dim or element count beyond cuDNN's int");
  for (int i = 0; i < a->sp; i++) {
    int j = 3 - a->sp + i;
    a->window[i] = (int)g->kernel[j], a->pad[i] = (int)g->pad[j], a->stride[i] = (int)g->stride[j];
  }
  a->mode = r->type == LMX_DNN_REQ_POOL_MAX ? LMX_DNN_POOL_MAX
            : r->include_pad                ? LMX_DNN_POOL_AVG_INCL_PAD
                                            : LMX_DNN_POOL_AVG_EXCL_PAD;
  return LMX_DNN_USE;
}

static size_t up256(size_t v) { return (v + 255) / 256 * 256; }

size_t lmx_dnn_bn_ws(int64_t C) {
  return C > 0 ? 3 * up256((size_t)C * sizeof(float)) : 0;
}

int lmx_dnn_bn_derive(const lmx_dnn_bn_req *r, lmx_dnn_bn_args *a, char *why, size_t len) {
  if (why && len) why[0] = 0;
  memset(a, 0, sizeof *a);
  if (dtype_of(r->dt, &a->data_type))
    return refuse(why, len, "%s (cuDNN is used for float32 and float16)", dt_name(r->dt));
  if (r->outer <= 0 || r->C <= 0 || r->inner <= 0)
    return refuse(why, len, "empty data");
  int64_t one[3] = {1, 1, 1}, sp[3] = {1, r->inner, 1};
  if (tensor(&a->x, r->outer, r->C, 2, sp) || tensor(&a->param, 1, r->C, 2, one))
    return refuse(why, len, "a dim or element count beyond cuDNN's int");
  if (!(r->eps > 0) || r->eps < r->min_eps)
    return refuse(why, len, "eps %g is below cuDNN's minimum %g (or not > 0)", r->eps,
                  r->min_eps);
  size_t v = up256((size_t)r->C * sizeof(float));
  a->ws_ones = 0, a->ws_dscale = v, a->ws_dbias = 2 * v, a->ws_need = 3 * v;
  if (r->ws_bytes < a->ws_need)
    return refuse(why, len, "workspace %zu bytes, %zu needed", r->ws_bytes, a->ws_need);
  a->eps = r->eps;
  a->count = r->outer * r->inner;
  a->exp_avg_factor = 1.0 - r->momentum;
  a->ones_scale = r->fix_gamma != 0;
  a->alpha_data = 1, a->alpha_param = 1;
  if (!r->backward) {
    if (r->req[0] == REQ_NULL) return refuse(why, len, "no output requested");
    a->beta_data = r->req[0] == REQ_ADD;
    if (!r->batch_stats) {
      a->call = LMX_DNN_BN_INFERENCE;
      return LMX_DNN_USE;
    }
    if (a->count < 2)
      return refuse(why, len, "%lld value(s) per channel: cuDNN's unbiased variance needs 2",
                    (long long)a->count);
    a->call = LMX_DNN_BN_TRAINING;
    a->fold_moving = r->update_moving != 0;
    return LMX_DNN_USE;
  }
  a->call = LMX_DNN_BN_BACKWARD;
  if (!r->batch_stats)
    return refuse(why, len, "the gradient with moving statistics (use_global_stats or "
                  "inference) is not cuDNN's");
  if (r->req[0] == REQ_NULL) return refuse(why, len, "no data gradient requested");
  a->beta_data = r->req[0] == REQ_ADD;
  int kept_g = r->req[1] != REQ_NULL && !r->fix_gamma, kept_b = r->req[2] != REQ_NULL;
  if (kept_g && kept_b && (r->req[1] == REQ_ADD) != (r->req[2] == REQ_ADD))
    return refuse(why, len, "gamma and beta gradients with different reqs (one alpha/beta "
                  "pair in cuDNN)");
  a->beta_param = (kept_g ? r->req[1] : r->req[2]) == REQ_ADD;
  a->dscale_scratch = !kept_g, a->dbias_scratch = !kept_b;
  a->zero_dscale = r->fix_gamma && r->req[1] != REQ_NULL && r->req[1] != REQ_ADD;
  return LMX_DNN_USE;
}
