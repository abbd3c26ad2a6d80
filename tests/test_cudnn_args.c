/* test_cudnn_args.c — the cuDNN argument derivation and use-or-refuse decision of
 * kernels/cuda/cudnn_args.c, checked on the CPU in every build (cuDNN itself cannot run
 * without a GPU; the GPU specs compare its results with the own kernels).
 * Convolution 1-D / 2-D / 3-D with groups, pads, strides and dilation; Pooling modes and
 * the conventions cuDNN cannot express; BatchNorm calls, factors, workspace offsets and
 * the moving-statistics fold against MXNet's formula; every refusal with its reason.
 * In real builds with cuDNN (LUAMX_HAVE_CUDNN) also the loader's switch: LUAMX_CUDNN=0
 * (the c_test_cudnn_args_off run) keeps cuDNN off, otherwise it is on exactly when
 * libcudnn.so.9 opens (all its symbols resolve), and the build's minimum eps.
 * Prints "N passed, N failed"; exits non-zero on failure. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../kernels/cuda/cudnn_args.h"
#include "../kernels/cuda/cudnn_cache.h"
#include "../kernels/cuda/cudnn_rnn_args.h"
#include "../kernels/cpu/cpu_kernels.h"
#include "luamx.h"
#ifdef LUAMX_HAVE_CUDNN
#include <stdlib.h>

#include "../kernels/cuda/cu_dnn.h"
#include "device/cuda_libs.h"
#endif

#include "check.h"

/* normalized geometry (leading 1s) of a k-D case */
static lmx_dnn_geom geom(int k, const int64_t *in, const int64_t *ker, const int64_t *st,
                         const int64_t *pad, const int64_t *dil, const int64_t *out) {
  lmx_dnn_geom g = {k, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}};
  for (int i = 0; i < k; i++) {
    int j = 3 - k + i;
    g.in[j] = in[i], g.kernel[j] = ker[i], g.stride[j] = st[i], g.pad[j] = pad[i];
    g.dilate[j] = dil ? dil[i] : 1, g.out[j] = out[i];
  }
  return g;
}

static int dims_are(const int *d, int n, const int *want) {
  for (int i = 0; i < n; i++)
    if (d[i] != want[i]) return 0;
  return 1;
}

static void conv_cases(void) {
  char why[200];
  lmx_dnn_conv_args a;
  /* 2-D: N2 C4 8x7, F6 G2, kernel 3x2, stride 2x1, pad 1x0, dilate 1x2 */
  int64_t in[] = {8, 7}, k[] = {3, 2}, s[] = {2, 1}, p[] = {1, 0}, d[] = {1, 2}, o[] = {4, 5};
  lmx_dnn_conv_req r = {LMX_FLOAT32, 2, 0, 1, 2, 4, 6, 2, geom(2, in, k, s, p, d, o)};
  CHECK(lmx_dnn_conv_derive(&r, &a, why, sizeof why) == LMX_DNN_USE, "%s", why);
  CHECK(a.x.nd == 4 && dims_are(a.x.dim, 4, (int[]){2, 4, 8, 7}), "x dims");
  CHECK(dims_are(a.x.stride, 4, (int[]){224, 56, 7, 1}), "x strides");
  CHECK(dims_are(a.y.dim, 4, (int[]){2, 6, 4, 5}) &&
            dims_are(a.y.stride, 4, (int[]){120, 20, 5, 1}), "y");
  CHECK(a.w_nd == 4 && dims_are(a.w_dim, 4, (int[]){6, 2, 3, 2}), "filter [F, C/G, k]");
  CHECK(a.sp == 2 && dims_are(a.pad, 2, (int[]){1, 0}) && dims_are(a.stride, 2, (int[]){2, 1}) &&
            dims_are(a.dilate, 2, (int[]){1, 2}), "conv desc");
  CHECK(a.groups == 2 && a.bias == 1, "groups %d bias %d", a.groups, a.bias);
  CHECK(dims_are(a.b.dim, 4, (int[]){1, 6, 1, 1}), "bias tensor");
  CHECK(a.data_type == LMX_DNN_FLOAT && a.compute_type == LMX_DNN_FLOAT &&
            a.math == LMX_DNN_MATH_FMA, "float32: FMA math, float compute (no TF32)");
  r.dt = LMX_FLOAT16;
  CHECK(lmx_dnn_conv_derive(&r, &a, why, sizeof why) == LMX_DNN_USE, "%s", why);
  CHECK(a.data_type == LMX_DNN_HALF && a.compute_type == LMX_DNN_FLOAT &&
            a.math == LMX_DNN_MATH_TENSOR_OP, "float16: half data, float compute");
  /* 1-D (NCW) is 4-D with H = 1 */
  int64_t in1[] = {10}, k1[] = {3}, s1[] = {3}, p1[] = {2}, o1[] = {4};
  lmx_dnn_conv_req r1 = {LMX_FLOAT32, 1, 0, 0, 3, 5, 2, 1, geom(1, in1, k1, s1, p1, NULL, o1)};
  CHECK(lmx_dnn_conv_derive(&r1, &a, why, sizeof why) == LMX_DNN_USE, "%s", why);
  CHECK(dims_are(a.x.dim, 4, (int[]){3, 5, 1, 10}) && dims_are(a.w_dim, 4, (int[]){2, 5, 1, 3}),
        "1-D as 4-D");
  CHECK(dims_are(a.pad, 2, (int[]){0, 2}) && dims_are(a.stride, 2, (int[]){1, 3}) &&
            dims_are(a.dilate, 2, (int[]){1, 1}) && a.bias == 0, "1-D conv desc");
  /* 3-D (NCDHW) is 5-D */
  int64_t in3[] = {4, 5, 6}, k3[] = {2, 2, 3}, s3[] = {1, 2, 1}, p3[] = {0, 1, 1}, o3[] = {3, 3, 6};
  lmx_dnn_conv_req r3 = {LMX_FLOAT32, 3, 0, 1, 1, 3, 3, 3, geom(3, in3, k3, s3, p3, NULL, o3)};
  CHECK(lmx_dnn_conv_derive(&r3, &a, why, sizeof why) == LMX_DNN_USE, "%s", why);
  CHECK(a.x.nd == 5 && dims_are(a.x.dim, 5, (int[]){1, 3, 4, 5, 6}) &&
            dims_are(a.x.stride, 5, (int[]){360, 120, 30, 6, 1}), "3-D x");
  CHECK(a.w_nd == 5 && dims_are(a.w_dim, 5, (int[]){3, 1, 2, 2, 3}) && a.groups == 3, "3-D w");
  CHECK(dims_are(a.b.dim, 5, (int[]){1, 3, 1, 1, 1}), "3-D bias");
  /* refusals */
  lmx_dnn_conv_req b = r;
  b.dt = LMX_FLOAT64;
  CHECK(lmx_dnn_conv_derive(&b, &a, why, sizeof why) == LMX_DNN_REFUSE && strstr(why, "float64"),
        "%s", why);
  b = r, b.layout = 4;
  CHECK(lmx_dnn_conv_derive(&b, &a, why, sizeof why) == LMX_DNN_REFUSE && strstr(why, "layout"),
        "%s", why);
  b = r, b.deconv = 1;
  CHECK(lmx_dnn_conv_derive(&b, &a, why, sizeof why) == LMX_DNN_REFUSE && strstr(why, "Deconv"),
        "%s", why);
  b = r, b.N = 0;
  CHECK(lmx_dnn_conv_derive(&b, &a, why, sizeof why) == LMX_DNN_REFUSE && strstr(why, "empty"),
        "%s", why);
  b = r, b.g.out[2] = 6;
  CHECK(lmx_dnn_conv_derive(&b, &a, why, sizeof why) == LMX_DNN_REFUSE &&
            strstr(why, "output size"), "%s", why);
  b = r, b.N = 1 << 20, b.g.in[1] = 1 << 12; /* 2^20 * 4 * 4096 * 7 elements */
  b.g.out[1] = ((1 << 12) + 2 - 3) / 2 + 1;
  CHECK(lmx_dnn_conv_derive(&b, &a, why, sizeof why) == LMX_DNN_REFUSE && strstr(why, "int"),
        "%s", why);
  b = r, b.G = 3;
  CHECK(lmx_dnn_conv_derive(&b, &a, why, sizeof why) == LMX_DNN_REFUSE && strstr(why, "groups"),
        "%s", why);
}

static void pool_cases(void) {
  char why[200];
  lmx_dnn_pool_args a;
  /* 2-D max, valid, 9x9 kernel 3 stride 2 pad 1 -> 5x5 */
  int64_t in[] = {9, 9}, k[] = {3, 3}, s[] = {2, 2}, p[] = {1, 1}, o[] = {5, 5};
  lmx_dnn_pool_req r = {LMX_FLOAT32, 0, LMX_DNN_REQ_POOL_MAX, LMX_DNN_CONV_VALID, 0, 1, 2, 3,
                        geom(2, in, k, s, p, NULL, o)};
  CHECK(lmx_dnn_pool_derive(&r, &a, why, sizeof why) == LMX_DNN_USE, "%s", why);
  CHECK(a.mode == LMX_DNN_POOL_MAX && a.sp == 2 && dims_are(a.window, 2, (int[]){3, 3}) &&
            dims_are(a.pad, 2, (int[]){1, 1}) && dims_are(a.stride, 2, (int[]){2, 2}), "max desc");
  CHECK(dims_are(a.x.dim, 4, (int[]){2, 3, 9, 9}) && dims_are(a.y.dim, 4, (int[]){2, 3, 5, 5}),
        "pool tensors");
  r.type = LMX_DNN_REQ_POOL_AVG;
  CHECK(lmx_dnn_pool_derive(&r, &a, why, sizeof why) == LMX_DNN_USE &&
            a.mode == LMX_DNN_POOL_AVG_INCL_PAD, "avg counting the padding (MXNet's default)");
  r.include_pad = 0;
  CHECK(lmx_dnn_pool_derive(&r, &a, why, sizeof why) == LMX_DNN_USE &&
            a.mode == LMX_DNN_POOL_AVG_EXCL_PAD, "avg without the padding");
  /* 'full' where ceil == floor (9 + 2 - 3 divisible by 2) goes to cuDNN ... */
  r.convention = LMX_DNN_CONV_FULL;
  CHECK(lmx_dnn_pool_derive(&r, &a, why, sizeof why) == LMX_DNN_USE, "%s", why);
  /* ... and where ceil > floor it is refused: 10 + 2 - 3 = 9, floor 5, ceil 6 */
  int64_t in2[] = {10, 9}, o2[] = {6, 5};
  lmx_dnn_pool_req f = r;
  f.g = geom(2, in2, k, s, p, NULL, o2);
  CHECK(lmx_dnn_pool_derive(&f, &a, why, sizeof why) == LMX_DNN_REFUSE &&
            strstr(why, "'full'") && strstr(why, "floor size is 5"), "%s", why);
  /* 'same' (pad 0, out = ceil(in / s)): 9 / 2 -> 5, floor (9 - 3) / 2 + 1 = 4: refused */
  int64_t p0[] = {0, 0};
  lmx_dnn_pool_req sm = r;
  sm.convention = LMX_DNN_CONV_SAME, sm.type = LMX_DNN_REQ_POOL_MAX;
  sm.g = geom(2, in, k, s, p0, NULL, o);
  CHECK(lmx_dnn_pool_derive(&sm, &a, why, sizeof why) == LMX_DNN_REFUSE && strstr(why, "'same'"),
        "%s", why);
  /* 'same' with kernel 1 stride 1 equals floor: used */
  int64_t k1[] = {1, 1}, s1[] = {1, 1};
  sm.g = geom(2, in, k1, s1, p0, NULL, in);
  CHECK(lmx_dnn_pool_derive(&sm, &a, why, sizeof why) == LMX_DNN_USE, "%s", why);
  /* global pooling of 3-D data: the window is the input */
  int64_t in3[] = {3, 4, 5}, o3[] = {1, 1, 1}, z3[] = {0, 0, 0}, one3[] = {1, 1, 1};
  lmx_dnn_pool_req gp = {LMX_FLOAT16, 3, LMX_DNN_REQ_POOL_AVG, LMX_DNN_CONV_VALID, 1, 1, 2, 3,
                         geom(3, in3, in3, one3, z3, NULL, o3)};
  CHECK(lmx_dnn_pool_derive(&gp, &a, why, sizeof why) == LMX_DNN_USE && a.sp == 3 &&
            dims_are(a.window, 3, (int[]){3, 4, 5}) && a.data_type == LMX_DNN_HALF &&
            dims_are(a.y.dim, 5, (int[]){2, 3, 1, 1, 1}), "global 3-D: %s", why);
  /* 1-D as 4-D */
  int64_t i1[] = {7}, kk[] = {2}, ss[] = {2}, pp[] = {1}, oo[] = {4};
  lmx_dnn_pool_req r1 = {LMX_FLOAT32, 1, LMX_DNN_REQ_POOL_MAX, LMX_DNN_CONV_VALID, 0, 1, 1, 1,
                         geom(1, i1, kk, ss, pp, NULL, oo)};
  CHECK(lmx_dnn_pool_derive(&r1, &a, why, sizeof why) == LMX_DNN_USE &&
            dims_are(a.x.dim, 4, (int[]){1, 1, 1, 7}) && dims_are(a.window, 2, (int[]){1, 2}) &&
            dims_are(a.pad, 2, (int[]){0, 1}), "1-D: %s", why);
  /* refusals */
  lmx_dnn_pool_req b = r;
  b.type = LMX_DNN_REQ_POOL_SUM;
  CHECK(lmx_dnn_pool_derive(&b, &a, why, sizeof why) == LMX_DNN_REFUSE && strstr(why, "sum"),
        "%s", why);
  b.type = LMX_DNN_REQ_POOL_LP;
  CHECK(lmx_dnn_pool_derive(&b, &a, why, sizeof why) == LMX_DNN_REFUSE && strstr(why, "lp"),
        "%s", why);
  b = r, b.dt = LMX_FLOAT64;
  CHECK(lmx_dnn_pool_derive(&b, &a, why, sizeof why) == LMX_DNN_REFUSE, "float64");
  b = r, b.layout = 4;
  CHECK(lmx_dnn_pool_derive(&b, &a, why, sizeof why) == LMX_DNN_REFUSE, "channel-last");
  int64_t pbig[] = {3, 1}, obig[] = {7, 5};
  b = r, b.convention = LMX_DNN_CONV_VALID, b.g = geom(2, in, k, s, pbig, NULL, obig);
  CHECK(lmx_dnn_pool_derive(&b, &a, why, sizeof why) == LMX_DNN_REFUSE && strstr(why, "pad 3"),
        "%s", why);
}

static lmx_dnn_bn_req bn_req(int backward) {
  lmx_dnn_bn_req r = {LMX_FLOAT32, backward, 4, 3, 10, 1e-3, 0.9, 0.0, 0, 1, 1,
                      {1, 1, 1}, lmx_dnn_bn_ws(3)};
  return r;
}

static void bn_cases(void) {
  char why[200];
  lmx_dnn_bn_args a;
  CHECK(lmx_dnn_bn_ws(3) == 3 * 256 && lmx_dnn_bn_ws(100) == 3 * 512 && lmx_dnn_bn_ws(0) == 0,
        "workspace");
  lmx_dnn_bn_req r = bn_req(0);
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_USE, "%s", why);
  CHECK(a.call == LMX_DNN_BN_TRAINING && a.fold_moving && a.count == 40, "training call");
  CHECK(dims_are(a.x.dim, 4, (int[]){4, 3, 10, 1}) &&
            dims_are(a.x.stride, 4, (int[]){30, 10, 1, 1}), "x [outer, C, inner, 1]");
  CHECK(dims_are(a.param.dim, 4, (int[]){1, 3, 1, 1}), "param tensor");
  CHECK(fabs(a.exp_avg_factor - 0.1) < 1e-15 && a.eps == 1e-3, "factor %g", a.exp_avg_factor);
  CHECK(a.alpha_data == 1 && a.beta_data == 0 && !a.ones_scale, "write");
  CHECK(a.ws_ones == 0 && a.ws_dscale == 256 && a.ws_dbias == 512 && a.ws_need == 768, "offsets");
  /* MXNet's update (running*m + biased*(1-m)) from cuDNN's factor and unbiased variance */
  {
    double xs[] = {1, 2, 4, 9}, m = 0, ss = 0, run = 0.5, mom = 0.9;
    for (int i = 0; i < 4; i++) m += xs[i] / 4;
    for (int i = 0; i < 4; i++) ss += (xs[i] - m) * (xs[i] - m);
    double biased = ss / 4, unbiased = ss / 3;
    double want = run * mom + biased * (1 - mom);
    double got = lmx_dnn_bn_fold(run, lmx_dnn_bn_biased(unbiased, 4), 1 - mom);
    CHECK(fabs(got - want) < 1e-12, "fold %.17g vs %.17g", got, want);
    CHECK(lmx_dnn_bn_fold(run, 7.0, 0.0) == run, "momentum 1 keeps the moving value");
  }
  r.update_moving = 0, r.req[0] = 3, r.fix_gamma = 1;
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_USE && !a.fold_moving &&
            a.beta_data == 1 && a.ones_scale, "add, fix_gamma: %s", why);
  r = bn_req(0), r.batch_stats = 0, r.update_moving = 0;
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_USE &&
            a.call == LMX_DNN_BN_INFERENCE, "use_global_stats / inference");
  r = bn_req(0), r.dt = LMX_FLOAT16;
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_USE && a.data_type == LMX_DNN_HALF,
        "float16");
  /* refusals */
  r = bn_req(0), r.min_eps = 1e-5, r.eps = 1e-6;
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_REFUSE && strstr(why, "eps"),
        "%s", why);
  r = bn_req(0), r.eps = 0;
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_REFUSE, "eps 0");
  r = bn_req(0), r.outer = 1, r.inner = 1;
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_REFUSE && strstr(why, "unbiased"),
        "%s", why);
  r = bn_req(0), r.ws_bytes = 100;
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_REFUSE && strstr(why, "workspace"),
        "%s", why);
  r = bn_req(0), r.dt = LMX_FLOAT64;
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_REFUSE, "float64");
  r = bn_req(0), r.req[0] = 0;
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_REFUSE, "no output");
  /* backward */
  r = bn_req(1);
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_USE &&
            a.call == LMX_DNN_BN_BACKWARD && a.beta_data == 0 && a.beta_param == 0 &&
            !a.dscale_scratch && !a.dbias_scratch,
        "backward: %s", why);
  r.req[0] = 3, r.req[1] = 3, r.req[2] = 3;
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_USE && a.beta_data == 1 &&
            a.beta_param == 1, "backward add");
  r = bn_req(1), r.fix_gamma = 1;
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_USE && a.ones_scale &&
            a.dscale_scratch && a.zero_dscale, "fix_gamma: dgamma to scratch, then 0");
  r.req[1] = 3, r.req[2] = 1;
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_USE && !a.zero_dscale &&
            a.beta_param == 0, "fix_gamma with gamma req add: left as it is");
  r = bn_req(1), r.req[2] = 0;
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_USE && a.dbias_scratch,
        "no beta gradient: scratch");
  r = bn_req(1), r.req[1] = 3;
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_REFUSE && strstr(why, "reqs"),
        "%s", why);
  r = bn_req(1), r.batch_stats = 0;
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_REFUSE &&
            strstr(why, "moving statistics"), "%s", why);
  r = bn_req(1), r.req[0] = 0;
  CHECK(lmx_dnn_bn_derive(&r, &a, why, sizeof why) == LMX_DNN_REFUSE, "no data gradient");
}


/* ---- the descriptor cache (cudnn_cache.h) with a fake create / destroy -------------- */

typedef struct {
  int created, destroyed, fail_next;
  int live[1024]; /* fake descriptor ids: 1 while alive */
} fake_lib;

static int fake_create(void *user, int kind, const void *key, lmx_dnn_descs *d) {
  fake_lib *f = user;
  (void)key;
  if (f->fail_next) return f->fail_next;
  int id = ++f->created;
  f->live[id] = 1;
  d->p[0] = &f->live[id];
  d->i[0] = id, d->i[1] = kind;
  return 0;
}

static void fake_destroy(void *user, int kind, lmx_dnn_descs *d) {
  fake_lib *f = user;
  int *live = d->p[0];
  CHECK(live && *live == 1 && d->i[1] == kind, "destroy of a live descriptor of its kind");
  if (live) *live = 0;
  f->destroyed++;
}

static lmx_dnn_conv_args conv_of(int64_t N, int64_t H) {
  int64_t in[] = {H, 7}, k[] = {3, 2}, s[] = {1, 1}, p[] = {1, 0}, o[] = {H, 6};
  lmx_dnn_conv_req r = {LMX_FLOAT32, 2, 0, 1, N, 4, 6, 1, geom(2, in, k, s, p, NULL, o)};
  lmx_dnn_conv_args a;
  char why[200];
  CHECK(lmx_dnn_conv_derive(&r, &a, why, sizeof why) == LMX_DNN_USE, "%s", why);
  return a;
}

static void cache_cases(void) {
  static fake_lib f;
  static lmx_dnn_cache c;
  lmx_dnn_cache_init(&c, fake_create, fake_destroy, &f);
  lmx_dnn_descs *d1, *d2, *d3;
  lmx_dnn_conv_args a = conv_of(2, 8), b = conv_of(2, 8), r = conv_of(3, 8);
  CHECK(lmx_dnn_cache_get(&c, 0, &a, sizeof a, &d1) == 0 && f.created == 1 && c.misses == 1,
        "first call: a miss that creates");
  CHECK(lmx_dnn_cache_get(&c, 0, &b, sizeof b, &d2) == 0 && d2 == d1 && f.created == 1 &&
            c.hits == 1, "the same arguments derived again: a hit, nothing created");
  CHECK(lmx_dnn_cache_get(&c, 1, &b, sizeof b, &d3) == 0 && d3 != d1 && f.created == 2,
        "another kind with the same bytes: its own entry");
  CHECK(lmx_dnn_cache_get(&c, 0, &r, sizeof r, &d3) == 0 && d3 != d1 && f.created == 3 &&
            d3->i[0] == 3, "a reshaped batch (N 3): a new entry");
  CHECK(lmx_dnn_cache_get(&c, 0, &a, sizeof a, &d2) == 0 && d2 == d1 && d2->i[0] == 1,
        "back to the first shape: still cached");
  CHECK(lmx_dnn_cache_size(&c) == 3 && f.destroyed == 0, "three entries, none destroyed");
  /* a failing create: the code comes back, nothing is stored */
  lmx_dnn_conv_args e = conv_of(5, 8);
  f.fail_next = 7;
  CHECK(lmx_dnn_cache_get(&c, 0, &e, sizeof e, &d3) == 7 && d3 == NULL &&
            lmx_dnn_cache_size(&c) == 3, "create's failure code, no entry");
  f.fail_next = 0;
  unsigned char big[LMX_DNN_CACHE_KEY + 1] = {0};
  CHECK(lmx_dnn_cache_get(&c, 0, big, sizeof big, &d3) == -1, "key too long");
  CHECK((int)sizeof(lmx_dnn_conv_args) <= LMX_DNN_CACHE_KEY &&
            (int)sizeof(lmx_dnn_pool_args) <= LMX_DNN_CACHE_KEY, "derived arguments fit a key");
  /* fill the cache: the least recently used entry (kind 1) goes first, then the N 3 one */
  for (int n = 0; n < LMX_DNN_CACHE_SLOTS - 3; n++) {
    lmx_dnn_conv_args k = conv_of(10 + n, 8);
    CHECK(lmx_dnn_cache_get(&c, 0, &k, sizeof k, &d3) == 0, "fill %d", n);
  }
  CHECK(lmx_dnn_cache_size(&c) == LMX_DNN_CACHE_SLOTS && c.evictions == 0, "full, no eviction");
  CHECK(lmx_dnn_cache_get(&c, 0, &a, sizeof a, &d2) == 0 && d2 == d1, "touch the first entry");
  lmx_dnn_conv_args k = conv_of(1000, 9); /* a shape the fill did not use */
  CHECK(lmx_dnn_cache_get(&c, 0, &k, sizeof k, &d3) == 0 && c.evictions == 1 &&
            f.destroyed == 1 && f.live[2] == 0 && f.live[1] == 1,
        "eviction destroys the least recently used (kind 1), not the first one just used");
  int created = f.created;
  CHECK(lmx_dnn_cache_get(&c, 0, &r, sizeof r, &d3) == 0 && f.created == created &&
            d3->i[0] == 3, "the N 3 entry was used more recently than the kind 1 one: kept");
  CHECK(lmx_dnn_cache_get(&c, 1, &b, sizeof b, &d3) == 0 && f.created == created + 1 &&
            c.evictions == 2, "the evicted configuration is made again");
  /* clear: everything destroyed once, usable after */
  lmx_dnn_cache_clear(&c);
  CHECK(lmx_dnn_cache_size(&c) == 0 && f.destroyed == f.created, "clear destroys all (%d of %d)",
        f.destroyed, f.created);
  int alive = 0;
  for (int i = 1; i <= f.created; i++) alive += f.live[i];
  CHECK(alive == 0, "%d descriptors left alive", alive);
  CHECK(lmx_dnn_cache_get(&c, 0, &a, sizeof a, &d1) == 0 && lmx_dnn_cache_size(&c) == 1,
        "usable after clear");
  lmx_dnn_cache_clear(&c);
  CHECK(f.destroyed == f.created, "second clear");
}

/* ---- the fused RNN (cudnn_rnn_args.h) ---------------------------------------------- */

static lmx_dnn_rnn_req rnn_req(int mode, int64_t L, int64_t D, int64_t In, int64_t H) {
  lmx_dnn_rnn_req r = {LMX_FLOAT32, mode, L, D, 3, 2, In, H, 0.0};
  return r;
}

static double sigm(double v) { return 1 / (1 + exp(-v)); }

/* cuDNN's documented cell equations over the blocks lmx_dnn_rnn_block names, for every
 * layer and direction: y [T, N, D·H], hy / cy [L·D, N, H]. w: MXNet's vector. */
static void rnn_reference(const lmx_dnn_rnn_args *a, const double *x, const double *w,
                          const double *h0, const double *c0, double *y, double *hy, double *cy) {
  int L = a->layers, D = a->bidirectional + 1, T = a->seq, N = a->batch, H = a->hidden;
  int G = a->gates;
  static double in[64 * 16], out[64 * 16];
  memcpy(in, x, sizeof(double) * (size_t)(T * N * a->input));
  for (int l = 0; l < L; l++) {
    int ind = l ? D * H : a->input;
    for (int d = 0; d < D; d++) {
      int pl = l * D + d;
      double h[16 * 8], c[16 * 8];
      memcpy(h, h0 + pl * N * H, sizeof(double) * (size_t)(N * H));
      memcpy(c, c0 + pl * N * H, sizeof(double) * (size_t)(N * H));
      for (int s = 0; s < T; s++) {
        int t = d ? T - 1 - s : s;
        double hn[16 * 8];
        for (int n = 0; n < N; n++)
          for (int j = 0; j < H; j++) {
            double px[4], ph[4];
            for (int g = 0; g < G; g++) {
              int64_t o, rows, cols;
              lmx_dnn_rnn_block(a, pl, g, 0, &o, &rows, &cols);
              px[g] = 0;
              for (int k = 0; k < ind; k++)
                px[g] += w[o + j * cols + k] * in[(t * N + n) * ind + k];
              lmx_dnn_rnn_block(a, pl, g, 1, &o, &rows, &cols);
              px[g] += w[o + j];
              lmx_dnn_rnn_block(a, pl, G + g, 0, &o, &rows, &cols);
              ph[g] = 0;
              for (int k = 0; k < H; k++) ph[g] += w[o + j * cols + k] * h[n * H + k];
              lmx_dnn_rnn_block(a, pl, G + g, 1, &o, &rows, &cols);
              ph[g] += w[o + j];
            }
            double *cc = &c[n * H + j], v;
            if (a->cell == LMX_DNN_RNN_RELU) v = fmax(0, px[0] + ph[0]);
            else if (a->cell == LMX_DNN_RNN_TANH) v = tanh(px[0] + ph[0]);
            else if (a->cell == LMX_DNN_RNN_LSTM) { /* i, f, c', o */
              *cc = sigm(px[1] + ph[1]) * *cc + sigm(px[0] + ph[0]) * tanh(px[2] + ph[2]);
              v = sigm(px[3] + ph[3]) * tanh(*cc);
            } else { /* r, z, h': h' = tanh(Wx + bW + r (Rh + bR)) */
              double rr = sigm(px[0] + ph[0]), z = sigm(px[1] + ph[1]);
              v = (1 - z) * tanh(px[2] + rr * ph[2]) + z * h[n * H + j];
            }
            hn[n * H + j] = v;
            out[(t * N + n) * D * H + d * H + j] = v;
          }
        memcpy(h, hn, sizeof(double) * (size_t)(N * H));
      }
      memcpy(hy + pl * N * H, h, sizeof(double) * (size_t)(N * H));
      memcpy(cy + pl * N * H, c, sizeof(double) * (size_t)(N * H));
    }
    memcpy(in, out, sizeof(double) * (size_t)(T * N * D * H));
  }
  memcpy(y, out, sizeof(double) * (size_t)(T * N * D * H));
}

static void rnn_cases(void) {
  char why[200];
  lmx_dnn_rnn_args a;
  static const char *const names[] = {"rnn_relu", "rnn_tanh", "lstm", "gru"};
  /* the parameter count is the CPU kernel's, and the blocks tile it exactly */
  for (int mode = 0; mode < 4; mode++)
    for (int L = 1; L <= 3; L++)
      for (int D = 1; D <= 2; D++) {
        lmx_dnn_rnn_req r = rnn_req(mode, L, D, 5, 3);
        CHECK(lmx_dnn_rnn_derive(&r, &a, why, sizeof why) == LMX_DNN_USE, "%s", why);
        int64_t G = mode == 2 ? 4 : mode == 3 ? 3 : 1;
        lmx_cpu_rnn cr = {mode, LMX_FLOAT32, L, D, 3, 2, 5, 3, G, 0};
        CHECK(a.nparams == lmx_cpu_rnn_param_size(&cr), "%s L%d D%d: %lld vs the CPU's %lld",
              names[mode], L, D, (long long)a.nparams, (long long)lmx_cpu_rnn_param_size(&cr));
        static unsigned char hit[4096];
        memset(hit, 0, sizeof hit);
        int64_t covered = 0, offs[512];
        int bad = 0;
        for (int k = 0; k < 2 * a.nblocks; k++) {
          int pl, lin, bias;
          int64_t o, rows, cols;
          lmx_dnn_rnn_block_at(&a, k, &pl, &lin, &bias);
          CHECK(lmx_dnn_rnn_block(&a, pl, lin, bias, &o, &rows, &cols) == 0, "block %d", k);
          offs[k] = o;
          for (int64_t e = o; e < o + rows * cols; e++) bad += e < 0 || e >= a.nparams || hit[e]++;
          covered += rows * cols;
        }
        CHECK(!bad && covered == a.nparams, "%s L%d D%d: blocks overlap or leave gaps", names[mode],
              L, D);
        CHECK(lmx_dnn_rnn_same_layout(&a, offs, (size_t)a.nparams * 4), "MXNet's own offsets");
        offs[a.nblocks] += 1; /* a bias elsewhere */
        CHECK(!lmx_dnn_rnn_same_layout(&a, offs, (size_t)a.nparams * 4), "a moved block");
        offs[a.nblocks] -= 1;
        CHECK(!lmx_dnn_rnn_same_layout(&a, offs, (size_t)a.nparams * 4 + 256), "padded space");
      }
  /* LSTM, 2 layers, bidirectional, In 3, H 2: offsets by hand */
  lmx_dnn_rnn_req r = rnn_req(LMX_DNN_RNN_LSTM, 2, 2, 3, 2);
  CHECK(lmx_dnn_rnn_derive(&r, &a, why, sizeof why) == LMX_DNN_USE && a.nparams == 240 &&
            a.gates == 4 && a.nblocks == 32 && a.x_vec == 3 && a.y_vec == 4 &&
            dims_are(a.h_dim, 3, (int[]){4, 2, 2}) && dims_are(a.h_stride, 3, (int[]){4, 2, 1}),
        "lstm 2x2: %s", why);
  int64_t o, rows, cols;
  lmx_dnn_rnn_block(&a, 0, 1, 0, &o, &rows, &cols); /* layer 0 forward, W of f */
  CHECK(o == 6 && rows == 2 && cols == 3, "W_f %lld", (long long)o);
  lmx_dnn_rnn_block(&a, 0, 4, 0, &o, &rows, &cols); /* R of i after Wx (8 x 3) */
  CHECK(o == 24 && cols == 2, "R_i %lld", (long long)o);
  lmx_dnn_rnn_block(&a, 1, 0, 0, &o, &rows, &cols); /* reverse direction's W_i */
  CHECK(o == 40 && cols == 3, "reverse W_i %lld", (long long)o);
  lmx_dnn_rnn_block(&a, 2, 7, 0, &o, &rows, &cols); /* layer 1 fwd R_o: 80 + 32 + 3·4 */
  CHECK(o == 124 && cols == 2, "layer 1 R_o %lld", (long long)o);
  lmx_dnn_rnn_block(&a, 0, 0, 1, &o, &rows, &cols); /* biases start after 176 weights */
  CHECK(o == 176 && rows == 2 && cols == 1, "b_W_i %lld", (long long)o);
  lmx_dnn_rnn_block(&a, 3, 6, 1, &o, &rows, &cols); /* last pl, R bias of o-1 = c' gate */
  CHECK(o == 176 + 3 * 16 + 8 + 4, "b_R_c %lld", (long long)o);
  CHECK(lmx_dnn_rnn_block(&a, 4, 0, 0, &o, &rows, &cols) == -1 &&
            lmx_dnn_rnn_block(&a, 0, 8, 1, &o, &rows, &cols) == -1, "out of range");
  /* refusals */
  r = rnn_req(LMX_DNN_RNN_GRU, 2, 1, 3, 2);
  r.dt = LMX_FLOAT64;
  CHECK(lmx_dnn_rnn_derive(&r, &a, why, sizeof why) == LMX_DNN_REFUSE && strstr(why, "float64"),
        "%s", why);
  r.dt = LMX_FLOAT32, r.p = 0.3;
  CHECK(lmx_dnn_rnn_derive(&r, &a, why, sizeof why) == LMX_DNN_REFUSE &&
            strstr(why, "dropout p=0.3"), "%s", why);
  r.L = 1;
  CHECK(lmx_dnn_rnn_derive(&r, &a, why, sizeof why) == LMX_DNN_USE, "one layer: no dropout");
  r.N = 0;
  CHECK(lmx_dnn_rnn_derive(&r, &a, why, sizeof why) == LMX_DNN_REFUSE && strstr(why, "empty"),
        "%s", why);
  /* the workspace plan */
  r = rnn_req(LMX_DNN_RNN_LSTM, 2, 2, 3, 2);
  lmx_dnn_rnn_derive(&r, &a, why, sizeof why);
  lmx_dnn_rnn_ws w;
  size_t extra = lmx_dnn_rnn_ws_extra(&a);
  CHECK(extra == 256 + 2 * 1024 + 256 + 2 * 256, "extra %zu", extra);
  CHECK(lmx_dnn_rnn_fit(&a, 4096, 500, 1000, 400, 960, 0, &w, why, sizeof why) ==
            LMX_DNN_USE && w.seq == 0 && w.work == 256 && w.wspace == 1280 &&
            w.dwspace == 2304 && w.dx == 3328 && w.dhx == 3584 && w.dcx == 3840 &&
            w.need == 4096, "plan: %s", why);
  CHECK(lmx_dnn_rnn_fit(&a, 2048, 500, 1000, 400, 960, 1, &w, why, sizeof why) == LMX_DNN_USE &&
            w.dx == 1280 && w.need == 2048 && w.wspace == 0, "same layout: no weight spaces");
  CHECK(lmx_dnn_rnn_fit(&a, 2047, 500, 1000, 400, 960, 1, &w, why, sizeof why) ==
            LMX_DNN_REFUSE && strstr(why, "2048 needed"), "%s", why);
  CHECK(lmx_dnn_rnn_fit(&a, 1 << 20, 399, 1000, 400, 960, 1, &w, why, sizeof why) ==
            LMX_DNN_REFUSE && strstr(why, "reserve of 400"), "%s", why);
  /* the mapping means what cuDNN computes: its cell equations over the named blocks give
   * the CPU kernel's output, for every mode, 2 layers, both directions */
  for (int mode = 0; mode < 4; mode++) {
    r = rnn_req(mode, 2, 2, 3, 2);
    lmx_dnn_rnn_derive(&r, &a, why, sizeof why);
    lmx_cpu_rnn cr = {mode, LMX_FLOAT64, 2, 2, 3, 2, 3, 2, a.gates, 0};
    static double x[18], wt[400], h0[16], c0[16], y[24], hy[16], cy[16], ry[24], rhy[16], rcy[16];
    static double rs[4096], ws[4096];
    CHECK(lmx_cpu_rnn_reserve(&cr) <= 4096 && lmx_cpu_rnn_ws(&cr) <= 4096, "scratch sizes");
    for (int i = 0; i < 18; i++) x[i] = sin(i * 0.7 + mode);
    for (int i = 0; i < a.nparams; i++) wt[i] = 0.5 * cos(i * 0.37 + mode);
    for (int i = 0; i < 16; i++) h0[i] = 0.3 * sin(i + 1.0), c0[i] = 0.2 * cos(i * 2.0);
    CHECK(lmx_cpu_rnn_fwd(&cr, x, wt, h0, mode == 2 ? c0 : NULL, y, hy, mode == 2 ? cy : NULL,
                          rs, ws) == 0, "cpu forward");
    rnn_reference(&a, x, wt, h0, c0, ry, rhy, rcy);
    double worst = 0;
    for (int i = 0; i < 24; i++) worst = fmax(worst, fabs(y[i] - ry[i]));
    for (int i = 0; i < 16; i++) worst = fmax(worst, fabs(hy[i] - rhy[i]));
    for (int i = 0; mode == 2 && i < 16; i++) worst = fmax(worst, fabs(cy[i] - rcy[i]));
    CHECK(a.nparams <= 400, "parameters %lld", (long long)a.nparams);
    CHECK(worst < 1e-12, "%s: cuDNN's equations over the mapped blocks differ by %g", names[mode],
          worst);
  }
}

#ifdef LUAMX_HAVE_CUDNN
static void loader_cases(void) {
  const char *env = getenv("LUAMX_CUDNN");
  void *h = NULL;
  int off = env && strcmp(env, "0") == 0;
  int present = lmx_cuda_lib_open(LMX_LIB_CUDNN, &h) == LMX_OK;
  CHECK(lmx_cu_dnn_ready() == (!off && present), "ready %d (LUAMX_CUDNN %s, library %s)",
        lmx_cu_dnn_ready(), env ? env : "unset", present ? "present" : "missing");
  CHECK(lmx_cu_dnn_bn_min_eps() >= 0 && lmx_cu_dnn_bn_min_eps() <= 1e-5, "min eps %g",
        lmx_cu_dnn_bn_min_eps());
  CHECK(strcmp(lmx_cu_dnn_status_str(0), "") == 0, "no text for 0");
}
#endif

int main(void) {
#ifdef LUAMX_HAVE_CUDNN
  loader_cases();
#endif
  conv_cases();
  pool_cases();
  bn_cases();
  cache_cases();
  rnn_cases();
  return check_summary();
}
