/* test_gradcheck.c — the shared finite-difference gradient checker for every operator
 * with CPU kernels (float64).
 *
 * Each case names an op, its parameters (MXNet strings), the shape of every input and
 * how to draw it ('u' uniform [-1, 1], 'a' away from 0 (|x| in [0.2, 1], random sign:
 * keeps relu/abs/max off their kinks), 'p' positive [0.5, 1.5], 'l' integer labels /
 * indices in [0, K), 'n' int32 lengths in [0, K] (softmax's 'length'; no gradient is
 * checked, its gradient buffer is int32 too), 'c' constant 1 (states that must stay
 * fixed), 'z' zeros, 'g' in [1.5, 2.5], 'h' in [-0.5, 0.5]). For each
 * case the checker
 *  1. runs forward, then backward with a random head gradient, passing data only for
 *     what the descriptor's backward_needs asks for (so a kernel that reads more fails);
 *  2. compares every input gradient (except 'l'/'c' inputs) with central differences of
 *     sum(out * head) over up to 24 elements per input (|a-n| <= 1e-6 + 1e-5 max(|a|,|n|));
 *  3. runs backward again with req ADD into buffers holding known values (must give
 *     values + gradient), and with req NULL (buffers must be untouched);
 *  4. for each in-place pair of the descriptor, runs forward with the output over the
 *     input and compares with the out-of-place result.
 * Loss ops (LMX_OPF_LOSS) skip step 2 (their gradient is not that of sum(out*head); the
 * Lua spec checks them against known values) but still run 3 and 4. Random ops reseed
 * the global generator before every forward, so each forward draws the same mask.
 * A second table feeds kernels malformed tensors directly (wrong shapes, dtypes, sizes,
 * missing workspace, out-of-range indices) and asserts the error message.
 * Devices: --device gpu:N runs the same checks on gpu(N)'s kernels; --agree compares
 * every backend that has a case's op with the CPU (gradcheck_device.h).
 * Prints "N passed, N failed"; exits 1 on any failure.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "device/device.h"
#include "luamx.h"
#include "ops/kernel.h"
#include "ops/op.h"
#include "tensor/random.h"
#include "tensor/shape.h"

static int g_pass, g_fail;

typedef struct {
  const char *op, *params, *shapes, *kinds;
  int K;        /* label range for 'l' inputs */
  int is_train;
} gc_case;

enum { MAXT = 16 };

typedef struct {
  const lmx_op *op;
  const lmx_kernel *kern; /* the op's CPU kernel row */
  void *param;
  lmx_op_ctx c;
  int nin, nout, naux, nvis;
  lmx_tensor in[MAXT], out[MAXT], aux[MAXT], og[MAXT], ig[MAXT];
  double *head[MAXT];
  const gc_case *k;
} gc_run;

typedef struct {
  int type, id;
  const lmx_device_ops *dev;
  int mirror; /* copy through device buffers even on the CPU (--agree-self) */
} gc_dev;

static gc_dev g_dev = {LMX_CPU, 0, &lmx_cpu_device, 0}; /* where the FD checks run (--device) */
static const gc_dev g_cpu_dev = {LMX_CPU, 0, &lmx_cpu_device, 0};
static int g_skipped; /* cases not run on g_dev (no kernel or no float64 there) */

static double urand(void) { return (double)rand() / ((double)RAND_MAX + 1.0); }

static int parse_kv(const char *s, char keys[][64], char vals[][64], const char **kp,
                    const char **vp) {
  int n = 0;
  while (s && *s) {
    const char *e = strchr(s, ';'), *eq = strchr(s, '=');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if (!eq || (size_t)(eq - s) > len) break;
    snprintf(keys[n], 64, "%.*s", (int)(eq - s), s);
    snprintf(vals[n], 64, "%.*s", (int)(len - (size_t)(eq - s) - 1), eq + 1);
    kp[n] = keys[n], vp[n] = vals[n];
    n++;
    s = e ? e + 1 : NULL;
  }
  return n;
}

static int parse_shapes(const char *s, lmx_shape *sh) {
  int n = 0;
  while (*s) {
    if (*s != '(') { s++; continue; }
    s++;
    lmx_shape x = {0, {0}};
    while (*s && *s != ')') {
      char *e;
      long v = strtol(s, &e, 10);
      if (e == s) { s++; continue; }
      x.dim[x.ndim++] = v;
      s = e;
    }
    sh[n++] = x;
    if (*s) s++;
  }
  return n;
}

static double *alloc_t(lmx_tensor *t, const lmx_shape *s) {
  int64_t n = lmx_shape_size(s);
  t->shape = *s;
  t->dtype = LMX_FLOAT64;
  t->data = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
  return t->data;
}

static void fill_input(double *p, int64_t n, char kind, int K) {
  for (int64_t i = 0; i < n; i++) {
    double u = urand();
    switch (kind) {
      case 'a': p[i] = (0.2 + 0.8 * u) * (urand() < 0.5 ? -1 : 1); break;
      case 'p': p[i] = 0.5 + u; break;
      case 'l': p[i] = (double)(int)(u * K); break;
      case 'n': p[i] = (double)(int)(u * (K + 1)); break;
      case 'c': p[i] = 1.0; break;
      case 'z': p[i] = 0.0; break;
      case 'g': p[i] = 1.5 + u; break;   /* above 1 (arccosh) */
      case 'h': p[i] = u - 0.5; break;   /* [-0.5, 0.5] (erfinv, arcsin, arctanh) */
      case 's': p[i] = 2.6 * u - 1.3; break; /* sampler grids, partly outside [-1, 1] */
      case 'r': /* rois (batch index in [-1, K): -1 is ignored; x1 y1 x2 y2 in [-2, 14]) */
        p[i] = i % 5 == 0 ? (double)(int)(u * (K + 1)) - 1
               : i % 5 < 3 ? -2 + 8 * u : p[i - 2] + 1 + 7 * u;
        break;
      default: p[i] = 2 * u - 1;
    }
  }
}

static void fail(const gc_run *r, const char *what, const char *msg) {
  g_fail++;
  fprintf(stderr, "FAIL %s {%s} %s: %s\n", r->k->op, r->k->params, what, msg);
}

static int setup(gc_run *r, const gc_case *k) {
  memset(r, 0, sizeof *r);
  r->k = k;
  r->op = lmx_op_find(k->op);
  if (!r->op) return fail(r, "lookup", "unknown op"), -1;
  char keys[16][64], vals[16][64];
  const char *kp[16], *vp[16];
  int np = parse_kv(k->params, keys, vals, kp, vp);
  if (lmx_op_params_parse(r->op, "gc", kp, vp, np, &r->param) != LMX_OK)
    return fail(r, "params", lmx_errmsg()), -1;
  r->c = (lmx_op_ctx){.op = r->op, .param = r->param, .node = "gc", .is_train = k->is_train,
                      .dev_type = LMX_CPU};
  r->nin = lmx_op_num_inputs(r->op, r->param);
  r->nout = lmx_op_num_outputs(r->op, r->param);
  r->nvis = lmx_op_num_visible_outputs(r->op, r->param);
  r->naux = lmx_op_num_aux(r->op, r->param);
  lmx_shape is[MAXT] = {{0}}, os[MAXT] = {{0}}, as[MAXT] = {{0}};
  if (parse_shapes(k->shapes, is) != r->nin) return fail(r, "case", "wrong number of shapes"), -1;
  if (lmx_op_infer_shape(&r->c, is, r->nin, os, r->nout, as, r->naux) != LMX_OK)
    return fail(r, "infer_shape", lmx_errmsg()), -1;
  for (int i = 0; i < r->nin; i++) {
    double *p = alloc_t(&r->in[i], &is[i]);
    fill_input(p, lmx_shape_size(&is[i]), k->kinds[i], k->K);
    alloc_t(&r->ig[i], &is[i]);
    if (k->kinds[i] == 'n') { /* lengths as int32 (the gradient buffer keeps 8 bytes each) */
      int64_t m = lmx_shape_size(&is[i]);
      int32_t *q = calloc((size_t)(m > 0 ? m : 1), sizeof *q);
      for (int64_t j = 0; j < m; j++) q[j] = (int32_t)p[j];
      free(p);
      r->in[i].data = q;
      r->in[i].dtype = r->ig[i].dtype = LMX_INT32;
    }
  }
  for (int i = 0; i < r->nout; i++) {
    alloc_t(&r->out[i], &os[i]);
    double *h = alloc_t(&r->og[i], &os[i]);
    for (int64_t j = 0; j < lmx_shape_size(&os[i]); j++) h[j] = i < r->nvis ? 2 * urand() - 1 : 0;
    r->head[i] = h;
  }
  for (int i = 0; i < r->naux; i++) {
    double *p = alloc_t(&r->aux[i], &as[i]);
    fill_input(p, lmx_shape_size(&as[i]), i % 2 ? 'p' : 'u', 1); /* mean / var */
  }
  r->kern = lmx_op_kernel(r->op, g_dev.type); /* workspaces: per call, in dev_call */
  return 0;
}

static void teardown(gc_run *r) {
  for (int i = 0; i < r->nin; i++) free(r->in[i].data), free(r->ig[i].data);
  for (int i = 0; i < r->nout; i++) free(r->out[i].data), free(r->og[i].data);
  for (int i = 0; i < r->naux; i++) free(r->aux[i].data);
  if (r->param) lmx_op_params_free(r->op, r->param);
}

static int grad_input(const gc_run *r, int i) {
  char k = r->k->kinds[i];
  return k != 'l' && k != 'c' && k != 'n' && k != 'r'; /* rois: a zero gradient */
}

#include "gradcheck_device.h"

static int forward(gc_run *r, const lmx_tensor *out) {
  int req[MAXT];
  for (int i = 0; i < MAXT; i++) req[i] = LMX_REQ_WRITE;
  lmx_rng_seed(1234);
  return dev_call(r, &g_dev, r->kern, NULL, r->in, out, NULL, r->aux, req);
}

static double objective(gc_run *r) {
  if (forward(r, r->out) != LMX_OK) return NAN;
  double s = 0;
  for (int i = 0; i < r->nvis; i++) {
    const double *o = r->out[i].data;
    for (int64_t j = 0; j < lmx_shape_size(&r->out[i].shape); j++) s += o[j] * r->head[i][j];
  }
  return s;
}

/* Backward with the tensors backward_needs asks for (others get data NULL). */
static int backward(gc_run *r, const int *req) {
  lmx_tensor in[MAXT], out[MAXT], og[MAXT];
  unsigned needs = r->op->backward_needs;
  int loss = (r->op->flags & LMX_OPF_LOSS) != 0;
  for (int i = 0; i < r->nin; i++) {
    in[i] = r->in[i];
    if (!(needs & LMX_NEEDS_INPUTS)) in[i].data = NULL;
  }
  for (int i = 0; i < r->nout; i++) {
    out[i] = r->out[i], og[i] = r->og[i];
    if (!(needs & LMX_NEEDS_OUTPUTS)) out[i].data = NULL;
    if (!(needs & LMX_NEEDS_OUT_GRADS) && !loss) og[i].data = NULL;
  }
  return dev_call(r, &g_dev, r->kern, og, in, out, r->ig, r->aux, req);
}

static void check_fd(gc_run *r) {
  for (int i = 0; i < r->nin; i++) {
    if (!grad_input(r, i)) continue;
    double *x = r->in[i].data, *g = r->ig[i].data;
    int64_t n = lmx_shape_size(&r->in[i].shape), bad = 0;
    for (int t = 0; t < 24 && t < n; t++) {
      int64_t j = n <= 24 ? t : (int64_t)(urand() * (double)n);
      double x0 = x[j], eps = 1e-6;
      x[j] = x0 + eps;
      double fp = objective(r);
      x[j] = x0 - eps;
      double fm = objective(r);
      x[j] = x0;
      double num = (fp - fm) / (2 * eps), an = g[j];
      if (!(fabs(an - num) <= 1e-6 + 1e-5 * fmax(fabs(an), fabs(num)))) {
        if (!bad++) {
          char m[160];
          snprintf(m, sizeof m, "input %d elem %lld: analytic %.9g numeric %.9g", i,
                   (long long)j, an, num);
          fail(r, "gradient", m);
        }
      }
    }
    if (!bad) g_pass++;
  }
  objective(r); /* restore the outputs for the caller */
}

static void check_req(gc_run *r, double **g1) {
  int req[MAXT];
  for (int i = 0; i < r->nin; i++) req[i] = grad_input(r, i) ? LMX_REQ_ADD : LMX_REQ_NULL;
  for (int i = 0; i < r->nin; i++) {
    double *g = r->ig[i].data;
    for (int64_t j = 0; j < lmx_shape_size(&r->ig[i].shape); j++) g[j] = 0.25 * (double)(j % 7);
  }
  if (backward(r, req) != LMX_OK) return fail(r, "backward ADD", lmx_errmsg());
  int ok = 1;
  for (int i = 0; i < r->nin; i++) {
    if (!grad_input(r, i)) continue;
    double *g = r->ig[i].data;
    for (int64_t j = 0; j < lmx_shape_size(&r->ig[i].shape); j++)
      if (fabs(g[j] - (0.25 * (double)(j % 7) + g1[i][j])) > 1e-9 * (1 + fabs(g1[i][j]))) ok = 0;
  }
  if (ok) g_pass++;
  else fail(r, "req ADD", "accumulated gradient differs from values + gradient");
  for (int i = 0; i < r->nin; i++) req[i] = LMX_REQ_NULL;
  for (int i = 0; i < r->nin; i++) memset(r->ig[i].data, 0x5a, (size_t)lmx_shape_size(&r->ig[i].shape) * 8);
  if (backward(r, req) != LMX_OK) return fail(r, "backward NULL", lmx_errmsg());
  ok = 1;
  for (int i = 0; i < r->nin; i++) {
    const unsigned char *b = r->ig[i].data;
    for (size_t j = 0; j < (size_t)lmx_shape_size(&r->ig[i].shape) * 8; j++) ok &= b[j] == 0x5a;
  }
  if (ok) g_pass++;
  else fail(r, "req NULL", "a gradient buffer was written");
}

static void check_inplace(gc_run *r) {
  for (int p = 0; p < r->op->num_inplace; p++) {
    int i = r->op->inplace[p][0], o = r->op->inplace[p][1];
    if (i >= r->nin || o >= r->nout) continue;
    if (lmx_shape_size(&r->in[i].shape) != lmx_shape_size(&r->out[o].shape)) continue;
    int64_t n = lmx_shape_size(&r->out[o].shape);
    if (forward(r, r->out) != LMX_OK) return fail(r, "forward", lmx_errmsg());
    double *ref = malloc((size_t)n * 8), *save = malloc((size_t)n * 8);
    memcpy(ref, r->out[o].data, (size_t)n * 8);
    memcpy(save, r->in[i].data, (size_t)n * 8);
    lmx_tensor out[MAXT];
    memcpy(out, r->out, sizeof out);
    out[o].data = r->in[i].data; /* output over input i */
    out[o].shape = r->out[o].shape;
    int rc = forward(r, out);
    int ok = rc == LMX_OK && memcmp(ref, r->in[i].data, (size_t)n * 8) == 0;
    memcpy(r->in[i].data, save, (size_t)n * 8);
    free(ref), free(save);
    if (ok) g_pass++;
    else fail(r, "in-place", rc == LMX_OK ? "result differs from out-of-place" : lmx_errmsg());
  }
}

static void run_case(const gc_case *k) {
  gc_run r;
  if (setup(&r, k) != 0) return teardown(&r);
  if (!r.kern && g_dev.type != LMX_CPU) { /* not on this device: counted, not failed */
    g_skipped++;
    return teardown(&r);
  }
  if (!r.kern) {
    fail(&r, "forward", "no CPU kernel");
    return teardown(&r);
  }
  int frc = forward(&r, r.out);
  if (frc == LMX_ERR_DTYPE && g_dev.type != LMX_CPU) { /* the device has no float64 */
    g_skipped++;
    return teardown(&r);
  }
  if (frc != LMX_OK) {
    fail(&r, "forward", lmx_errmsg());
    return teardown(&r);
  }
  g_pass++;
  if (r.kern->backward && !(r.op->flags & LMX_OPF_NO_GRAD)) {
    int req[MAXT];
    for (int i = 0; i < MAXT; i++) req[i] = LMX_REQ_WRITE;
    if (backward(&r, req) != LMX_OK) {
      fail(&r, "backward", lmx_errmsg());
      return teardown(&r);
    }
    double *g1[MAXT];
    for (int i = 0; i < r.nin; i++) {
      size_t b = (size_t)lmx_shape_size(&r.ig[i].shape) * 8;
      g1[i] = malloc(b ? b : 8);
      memcpy(g1[i], r.ig[i].data, b);
    }
    if (!(r.op->flags & LMX_OPF_LOSS)) check_fd(&r);
    check_req(&r, g1);
    for (int i = 0; i < r.nin; i++) free(g1[i]);
  }
  check_inplace(&r);
  teardown(&r);
}

#include "gradcheck_cases.h"

/* ---- bad inputs reaching a kernel directly: errors with messages, never a crash ------- */

typedef struct {
  const char *op, *params;
  int nin;
  lmx_shape in[4];
  int dtype[4]; /* 0: float64 */
  int nout;
  lmx_shape out[3];
  const char *expect; /* fragment of the message */
} bad_case;

static void run_bad(const bad_case *b) {
  const lmx_op *op = lmx_op_find(b->op);
  char keys[16][64], vals[16][64];
  const char *kp[16], *vp[16];
  void *param = NULL;
  int np = parse_kv(b->params, keys, vals, kp, vp);
  if (!op || lmx_op_params_parse(op, "bad", kp, vp, np, &param) != LMX_OK) {
    g_fail++;
    fprintf(stderr, "FAIL bad-input case %s: setup: %s\n", b->op, lmx_errmsg());
    return;
  }
  lmx_op_ctx c = {.op = op, .param = param, .node = "bad", .dev_type = LMX_CPU};
  lmx_tensor in[4], out[3], aux[2];
  double *buf = calloc(4096, sizeof(double));
  for (int i = 0; i < 4096; i++) buf[i] = 5.0; /* indices: out of range for small dims */
  for (int i = 0; i < 4; i++)
    in[i] = (lmx_tensor){buf, b->in[i], b->dtype[i] ? b->dtype[i] : LMX_FLOAT64};
  for (int i = 0; i < 3; i++) out[i] = (lmx_tensor){buf + 2048, b->out[i], LMX_FLOAT64};
  for (int i = 0; i < 2; i++) aux[i] = (lmx_tensor){buf + 3072, {1, {4}}, LMX_FLOAT64};
  int req[4] = {1, 1, 1, 1};
  const lmx_kernel *kern = lmx_op_kernel(op, LMX_CPU);
  int rc = kern ? kern->forward(&c, in, out, req, aux) : LMX_ERR_UNSUPPORTED;
  const char *msg = lmx_errmsg();
  if (rc != LMX_OK && strstr(msg, b->expect) && strstr(msg, b->op)) {
    g_pass++;
  } else {
    g_fail++;
    fprintf(stderr, "FAIL bad-input %s {%s}: rc %d, message '%s', expected '%s'\n", b->op,
            b->params, rc, msg, b->expect);
  }
  free(buf);
  lmx_op_params_free(op, param);
}

static void check_bad_inputs(void) {
  static const bad_case cases[] = {
      /* normalisation and vision (issue 14, ops14c) */
      {"LRN", "nsize=3", 1, {{4, {1, 3, 2, 2}}}, {LMX_INT32}, 2,
       {{4, {1, 3, 2, 2}}, {4, {1, 3, 2, 2}}},
       "input 'data': expected float32 or float64 on the CPU, got int32"},
      {"LRN", "nsize=3", 1, {{4, {1, 3, 2, 2}}}, {0}, 2, {{4, {1, 3, 2, 2}}, {4, {1, 3, 2, 1}}},
       "output 'tmp_norm': expected shape (1,3,2,2), got (1,3,2,1)"},
      {"GroupNorm", "num_groups=2", 3, {{3, {2, 4, 3}}, {1, {4}}, {1, {2}}}, {0}, 3,
       {{3, {2, 4, 3}}, {2, {2, 2}}, {2, {2, 2}}}, "input 'gamma': expected shape (2,), got (4,)"},
      {"GroupNorm", "num_groups=3", 3, {{3, {2, 4, 3}}, {1, {3}}, {1, {3}}}, {0}, 3,
       {{3, {2, 4, 3}}, {2, {2, 3}}, {2, {2, 3}}}, "4 channels are not divisible by num_groups 3"},
      {"Pad", "mode=edge;pad_width=(0,0,0,0,1,1,1,1)", 1, {{4, {1, 1, 2, 2}}}, {0}, 1,
       {{4, {1, 1, 4, 3}}}, "output: expected shape (1,1,4,4), got (1,1,4,3)"},
      {"UpSampling", "scale=2;sample_type=nearest;num_args=2", 2,
       {{4, {1, 1, 2, 2}}, {4, {1, 1, 3, 3}}}, {0, 0}, 1, {{4, {1, 2, 4, 4}}},
       "input 'arg1': (1,1,3,3) does not upsample by a whole factor"},
      {"Convolution", "kernel=(3, 3);num_filter=2;num_group=2", 3,
       {{4, {1, 2, 5, 5}}, {4, {2, 2, 3, 3}}, {1, {2}}}, {0}, 1, {{4, {1, 2, 3, 3}}},
       "input 'weight': expected shape (2,1,3,3), got (2,2,3,3)"},
      {"Crop", "num_args=1;h_w=(3, 3)", 1, {{4, {1, 1, 2, 5}}}, {0}, 1, {{4, {1, 1, 3, 3}}},
       "a (3, 3) crop at offset (0, 0) does not fit inside (1,1,2,5)"},
      {"FullyConnected", "num_hidden=4", 3, {{2, {3, 5}}, {2, {4, 6}}, {1, {4}}}, {0}, 1,
       {{2, {3, 4}}}, "input 'weight': expected shape (4,5), got (4,6)"},
      {"FullyConnected", "num_hidden=4", 3, {{2, {3, 5}}, {2, {4, 5}}, {1, {4}}}, {0}, 1,
       {{2, {3, 3}}}, "output: expected 12 elements, got 9"},
      {"FullyConnected", "num_hidden=4", 3, {{2, {3, 5}}, {2, {4, 5}}, {1, {4}}},
       {LMX_INT32}, 1, {{2, {3, 4}}},
       "input 'data': expected float32, float64, float16 or bfloat16 on the CPU, got int32"},
      {"Convolution", "kernel=(3, 3);num_filter=2", 3, {{4, {1, 1, 5, 5}}, {4, {2, 1, 2, 2}}, {1, {2}}},
       {0}, 1, {{4, {1, 2, 3, 3}}}, "input 'weight': expected shape (2,1,3,3), got (2,1,2,2)"},
      {"Convolution", "kernel=(3, 3);num_filter=2", 3, {{4, {1, 1, 5, 5}}, {4, {2, 1, 3, 3}}, {1, {2}}},
       {0}, 1, {{4, {1, 2, 4, 4}}}, "spatial dim 0: sizes 5 -> 4 do not match kernel 3"},
      {"Convolution", "kernel=(3, 3);num_filter=2", 3, {{4, {1, 1, 5, 5}}, {4, {2, 1, 3, 3}}, {1, {2}}},
       {0}, 1, {{4, {1, 2, 3, 3}}}, "workspace: expected at least"},
      {"Pooling", "kernel=(2, 2)", 1, {{2, {4, 4}}}, {0}, 1, {{2, {3, 3}}},
       "input 'data': expected 3-D to 5-D data"},
      {"SoftmaxOutput", "", 2, {{2, {2, 3}}, {1, {2}}}, {0}, 1, {{2, {3, 2}}},
       "output: expected shape (2,3), got (3,2)"},
      {"take", "mode=raise", 2, {{2, {2, 3}}, {1, {1}}}, {0}, 1, {{2, {1, 3}}},
       "out of range [0, 2)"},
      {"Concat", "num_args=2;dim=1", 2, {{2, {2, 3}}, {2, {3, 1}}}, {0}, 1, {{2, {2, 4}}},
       "input 'arg1': expected 2 elements, got 3"},
      {"BatchNorm", "", 3, {{2, {4, 3}}, {1, {2}}, {1, {3}}}, {0}, 3, {{2, {4, 3}}, {1, {3}}, {1, {3}}},
       "input 'gamma': expected 3 elements, got 2"},
      {"RNN", "mode=lstm;state_size=2;num_layers=1", 4,
       {{3, {2, 1, 3}}, {1, {10}}, {3, {1, 1, 2}}, {3, {1, 1, 2}}}, {0}, 1, {{3, {2, 1, 2}}},
       "input 'parameters': expected shape (56,), got (10,)"},
      {"broadcast_add", "", 2, {{2, {2, 3}}, {1, {4}}}, {0}, 1, {{2, {2, 3}}},
       "input 'rhs' (4,) does not broadcast to (2,3)"},
      {"elemwise_add", "", 2, {{1, {3}}, {1, {4}}}, {0}, 1, {{1, {3}}},
       "input 'rhs': expected 3 elements, got 4"},
      {"transpose", "axes=(0, 0)", 1, {{2, {2, 3}}}, {0}, 1, {{2, {2, 2}}},
       "parameter 'axes': repeated axis"},
      /* math family (ops14a) */
      {"_hypot", "", 2, {{1, {3}}, {1, {4}}}, {0}, 1, {{1, {3}}},
       "input 'rhs': expected 3 elements, got 4"},
      {"log1p", "", 1, {{2, {2, 3}}}, {LMX_INT32}, 1, {{2, {2, 3}}},
       "output: expected int32, got float64"},
      {"hard_sigmoid", "", 1, {{2, {2, 3}}}, {0}, 1, {{2, {2, 2}}},
       "output: expected 6 elements, got 4"},
      {"broadcast_mod", "", 2, {{2, {2, 3}}, {1, {4}}}, {0}, 1, {{2, {2, 3}}},
       "input 'rhs' (4,) does not broadcast to (2,3)"},
      {"nansum", "axis=1", 1, {{2, {2, 3}}}, {0}, 1, {{1, {2}}}, "workspace: expected at least"},
      {"moments", "axes=(3,)", 1, {{2, {2, 3}}}, {0}, 2, {{1, {2}}, {1, {2}}},
       "parameter 'axes': axis 3 is out of range"},
      {"softmin", "", 1, {{2, {2, 3}}}, {0}, 1, {{2, {2, 3}}}, "workspace: expected at least"},
      /* issue 14: losses and small linear algebra (ops14d); every input element is 5 */
      {"softmax_cross_entropy", "", 2, {{2, {2, 3}}, {1, {2}}}, {0}, 1, {{1, {1}}},
       "input 'label': expected class indices in [0, 3), got 5 at row 0"},
      {"softmax_cross_entropy", "", 2, {{2, {2, 3}}, {1, {3}}}, {0}, 1, {{1, {1}}},
       "input 'label': expected shape (2,), got 1-D with first dim 3"},
      {"softmax_cross_entropy", "", 2, {{2, {2, 6}}, {1, {2}}}, {0}, 1, {{1, {2}}},
       "output: expected shape (1,), got (2,)"},
      {"_contrib_div_sqrt_dim", "", 1, {{2, {2, 3}}}, {0}, 1, {{2, {3, 2}}},
       "output: expected shape (2,3), got (3,2)"},
      {"_linalg_gemm2", "", 2, {{2, {2, 3}}, {2, {4, 5}}}, {0}, 1, {{2, {2, 5}}},
       "input 'B': expected 3 rows (the inner dim of op(A)), got 4"},
      {"_linalg_gemm", "", 3, {{2, {2, 3}}, {2, {3, 4}}, {2, {2, 5}}}, {0}, 1, {{2, {2, 4}}},
       "input 'C': expected shape (2,4), got (2,5)"},
      {"_linalg_gemm2", "axis=1", 2, {{2, {2, 3}}, {2, {3, 2}}}, {0}, 1, {{2, {2, 2}}},
       "parameter 'axis': expected an axis in [-2, 1) that is not the last, got 1"},
      {"khatri_rao", "num_args=2", 2, {{2, {2, 3}}, {2, {4, 5}}}, {0}, 1, {{2, {8, 3}}},
       "input 'arg1': expected shape (4,3), got (4,5)"},
      /* ordering (issue 14, ops14e) */
      {"topk", "k=2;ret_typ=value", 1, {{2, {3, 4}}}, {0}, 1, {{2, {3, 3}}},
       "output: expected 6 elements, got 9"},
      {"topk", "k=5", 1, {{2, {3, 4}}}, {0}, 1, {{2, {3, 5}}},
       "parameter 'k': expected at most 4 (the length of the sorted axis), got 5"},
      {"topk", "k=2;ret_typ=both", 1, {{2, {3, 4}}}, {0}, 2, {{2, {3, 2}}, {2, {3, 1}}},
       "output 'indices': expected 6 elements, got 3"},
      {"sort", "axis=2", 1, {{2, {3, 4}}}, {0}, 1, {{2, {3, 4}}},
       "parameter 'axis': axis 2 is out of range"},
      {"argsort", "axis=None", 1, {{2, {3, 4}}}, {0}, 1, {{1, {11}}},
       "output: expected 12 elements, got 11"},
      {"sort", "", 1, {{2, {3, 4}}}, {LMX_INT32}, 1, {{2, {3, 4}}},
       "output: expected int32 like input 'data', got float64"},
      /* detection (issue 14, det14) */
      {"_contrib_box_nms", "", 1, {{2, {3, 6}}}, {0}, 2, {{2, {3, 6}}, {2, {3, 1}}},
       "workspace: expected at least"},
      {"_contrib_box_nms", "", 1, {{2, {3, 6}}}, {0}, 2, {{2, {3, 6}}, {2, {3, 2}}},
       "output 1: expected shape (3,1), got (3,2)"},
      {"_contrib_box_nms", "coord_start=3", 1, {{2, {3, 6}}}, {0}, 2,
       {{2, {3, 6}}, {2, {3, 1}}}, "parameter 'coord_start': expected coordinates [3, 6]"},
      {"_contrib_box_iou", "", 2, {{2, {3, 4}}, {2, {2, 5}}}, {0}, 1, {{2, {3, 2}}},
       "input 'rhs': expected at least 2-D with a last dim of 4"},
      {"_contrib_box_iou", "", 2, {{2, {3, 4}}, {2, {2, 4}}}, {LMX_INT32, LMX_INT32}, 1,
       {{2, {3, 2}}}, "input 'lhs': expected float32 or float64 on the CPU, got int32"},
      {"_contrib_MultiBoxPrior", "", 1, {{3, {1, 3, 4}}}, {0}, 1, {{3, {1, 12, 4}}},
       "input 'data': expected at least 4-D"},
      {"_contrib_MultiBoxTarget", "", 3, {{3, {1, 4, 4}}, {3, {2, 1, 5}}, {3, {2, 3, 5}}}, {0},
       3, {{2, {2, 16}}, {2, {2, 16}}, {2, {2, 4}}}, "input 'cls_pred': expected (2, "
       "num_classes > 0, 4), got (2,3,5)"},
      {"_contrib_MultiBoxDetection", "", 3, {{3, {1, 3, 4}}, {2, {1, 15}}, {3, {1, 4, 4}}},
       {0}, 1, {{3, {1, 4, 6}}}, "input 'loc_pred': expected (1,16), got (1,15)"},
      {"_contrib_bipartite_matching", "threshold=0", 1, {{2, {3, 4}}}, {0}, 2,
       {{1, {3}}, {1, {3}}}, "output 1: expected shape ("},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_bad(&cases[i]);
}

/* Every registered operator has at least one case, or is listed here with the reason it
 * has no gradient to check; a new operator without either fails the suite. */
static const char *const g_no_gradient[] = {
    /* no inputs: nothing to differentiate (values checked in ops_forward_spec) */
    "_zeros", "_ones", "_full",
    /* optimizer updates: not differentiable in MXNet either; each is checked against
     * hand-computed values in optimizer_spec (ftrl, signum, signsgd and ftml_update in
     * optimizer_more_spec) */
    "sgd_update", "sgd_mom_update", "nag_mom_update", "adam_update", "rmsprop_update",
    "adagrad_update", "ftrl_update", "signum_update", "signsgd_update", "ftml_update",
    /* multi-precision updates (float16 weights only, so no float64 case): checked against
     * the formulas, and gpu(0) against the CPU, in mp_update_spec */
    "mp_sgd_update", "mp_sgd_mom_update", "mp_nag_mom_update",
    /* LAMB's fused update (issue 17): not differentiable; hand-worked steps and a scalar
     * reference in spec/optimizer_lamb_spec.lua (mp_ ones with float16 weights, gpu(0)
     * against the CPU there; the plain ones also in the forward-only cases above) */
    "lamb_update_phase1", "lamb_update_phase2", "mp_lamb_update_phase1",
    "mp_lamb_update_phase2",
    /* operators written in Lua: forward and backward are the host's code; the engine's
     * part (lending arrays, requests, undeclared arrays) is checked in test_custom.c and
     * spec/operator_spec.lua (a Lua softmax against SoftmaxOutput's gradients) */
    "Custom",
    /* tensor manipulation (issue 14): no inputs (_arange, _eye), or an int64 shape for an
     * output (shape_array, size_array); values checked in spec/ops_manip_spec.lua, the
     * devices compared by their forward-only cases */
    "_arange", "_eye", "shape_array", "size_array",
    /* no gradient in MXNet either; int32 indices (values, and gpu(0) against the CPU, in
     * spec/ops_manip_spec.lua) */
    "batch_take",
    /* ordering (issue 14, ops14e): indices have no gradient in MXNet either; values and
     * ties in spec/ops_sort_spec.lua, the devices compared by its forward-only cases */
    "argsort",
    /* detection (issue 14, det14): MXNet back-propagates zeros through these although
     * their outputs vary with the inputs (IoU, regression targets, decoded boxes); values
     * in spec/ops_detect_spec.lua, the devices compared by their forward-only cases */
    "_contrib_box_iou", "_contrib_MultiBoxTarget", "_contrib_MultiBoxDetection", NULL};

static void check_coverage(int ncases) {
  int nops = 0;
  if (lmx_op_registry_size(&nops) != LMX_OK || nops <= 0) {
    fprintf(stderr, "operator registry is empty\n");
    g_fail++;
    return;
  }
  for (int i = 0; i < nops; i++) {
    const char *name = NULL;
    if (lmx_op_get_name(i, &name) != LMX_OK || !name) continue;
    int found = 0;
    for (int c = 0; c < ncases && !found; c++) found = strcmp(g_cases[c].op, name) == 0;
    for (int j = 0; g_no_gradient[j] && !found; j++) found = strcmp(g_no_gradient[j], name) == 0;
    if (found) {
      g_pass++;
    } else {
      fprintf(stderr, "operator %s has no gradient-check case\n", name);
      g_fail++;
    }
  }
}

/* test_gradcheck [--device cpu|gpu[:N]] [--agree | --agree-self]: see the top and
 * gradcheck_device.h. */
int main(int argc, char **argv) {
  int agree = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--agree") == 0) {
      agree = 1;
    } else if (strcmp(argv[i], "--agree-self") == 0) { /* the agree machinery, cpu vs cpu(1) */
      agree = 1;
      g_dev = (gc_dev){LMX_CPU, 1, &lmx_cpu_device, 1};
    } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      if (parse_device(argv[++i], &g_dev) != 0) {
        printf("device %s: %s: skipped\n", argv[i], lmx_errmsg());
        return 0;
      }
    } else {
      fprintf(stderr, "usage: %s [--device cpu|gpu[:N]] [--agree | --agree-self]\n", argv[0]);
      return 2;
    }
  }
  srand(7);
  int n = (int)(sizeof g_cases / sizeof g_cases[0]);
  int nf = (int)(sizeof g_fwd_cases / sizeof g_fwd_cases[0]);
  if (agree) {
    if (g_dev.type == LMX_CPU && !g_dev.mirror &&
        (lmx_num_gpus() == 0 || parse_device("gpu:0", &g_dev) != 0)) {
      printf("backends agree: no GPU context (%d GPUs): skipped\n", lmx_num_gpus());
      return 0;
    }
    run_agree(g_cases, n, g_fwd_cases, nf);
  } else {
    for (int i = 0; i < n; i++) run_case(&g_cases[i]);
    if (g_dev.type == LMX_CPU) check_bad_inputs();
    check_coverage(n);
    printf("%d cases on %s(%d), %d skipped (no kernel or no float64 there)\n", n,
           g_dev.dev->name, g_dev.id, g_skipped);
  }
  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
