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
  return check_summary();
}
