/* test_autograd.c — the imperative tape through the C API (lmx_autograd_*): a small
 * recorded graph (FullyConnected -> tanh -> sum, a variable used twice) gives the
 * gradients computed by hand; the graph's memory is released with its arrays, also after
 * a backward without retain_graph and its "freed" error; every host allocation of
 * record + backward + export is made to fail in turn (lmx_debug_alloc_fail_at), and each
 * failure must return an error, leak nothing and leave the tape usable.
 * Prints "N passed, N failed"; exits 1 on any failure. */
#include <math.h>
#include <string.h>

#include "luamx.h"

#include "check.h"

static lmx_ndarray *arr(const int64_t *dims, int nd, const float *v) {
  lmx_ndarray *a = NULL;
  if (lmx_ndarray_new(dims, nd, LMX_FLOAT32, LMX_CPU, 0, &a) != LMX_OK) return NULL;
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= dims[i];
  float *p;
  lmx_ndarray_data(a, (void **)&p);
  memcpy(p, v, (size_t)n * sizeof *p);
  return a;
}

static const float *vals(lmx_ndarray *a) {
  void *p;
  lmx_ndarray_data(a, &p);
  return p;
}

static int call(const char *op, int nk, const char *const *k, const char *const *v, int nin,
                lmx_ndarray **in, lmx_ndarray **out) {
  int nout = 1;
  *out = NULL;
  return lmx_imperative_invoke(op, nk, k, v, nin, in, &nout, out, 1);
}

/* y = sum(tanh(FC(x, w, b)) * x0) with x (1,2), w (2,2), b (2); x is used twice. */
typedef struct {
  lmx_ndarray *x, *w, *b;
} vars;

static int forward(const vars *v, lmx_ndarray **y) {
  const char *k[] = {"num_hidden"}, *val[] = {"2"};
  lmx_ndarray *in[3] = {v->x, v->w, v->b}, *fc = NULL, *t = NULL, *m = NULL;
  int rc = call("FullyConnected", 1, k, val, 3, in, &fc);
  if (rc == LMX_OK) rc = call("tanh", 0, NULL, NULL, 1, &fc, &t);
  lmx_ndarray *in2[2] = {t, v->x};
  if (rc == LMX_OK) rc = call("elemwise_mul", 0, NULL, NULL, 2, in2, &m);
  if (rc == LMX_OK) rc = call("sum", 0, NULL, NULL, 1, &m, y);
  lmx_ndarray_free(fc);
  lmx_ndarray_free(t);
  lmx_ndarray_free(m);
  return rc;
}

static int make_vars(vars *v) {
  int64_t d12[2] = {1, 2}, d22[2] = {2, 2}, d2[1] = {2};
  float xv[2] = {0.5f, -1.0f}, wv[4] = {0.1f, 0.2f, -0.3f, 0.4f}, bv[2] = {0.05f, -0.1f};
  v->x = arr(d12, 2, xv), v->w = arr(d22, 2, wv), v->b = arr(d2, 1, bv);
  if (!v->x || !v->w || !v->b) return LMX_ERR_NOMEM;
  int rc = lmx_autograd_mark(v->x, 1, NULL);
  if (rc == LMX_OK) rc = lmx_autograd_mark(v->w, 1, NULL);
  if (rc == LMX_OK) rc = lmx_autograd_mark(v->b, 1, NULL);
  return rc;
}

static void free_vars(vars *v) {
  lmx_ndarray_free(v->x);
  lmx_ndarray_free(v->w);
  lmx_ndarray_free(v->b);
}

static void test_values(void) {
  vars v;
  make_vars(&v);
  lmx_autograd_set_state(1, 1, NULL, NULL);
  lmx_ndarray *y = NULL;
  CHECK(forward(&v, &y) == LMX_OK, "%s", lmx_last_error());
  lmx_autograd_set_state(0, 0, NULL, NULL);
  CHECK(lmx_autograd_backward(1, &y, NULL, 0, NULL, NULL, 0, 1) == LMX_OK, "%s", lmx_last_error());
  const float *x = vals(v.x), *w = vals(v.w), *b = vals(v.b);
  lmx_ndarray *g;
  lmx_autograd_get_grad(v.x, &g, NULL);
  const float *gx = vals(g);
  float h[2], dh[2], ex[2] = {0, 0};
  for (int j = 0; j < 2; j++) {
    h[j] = tanhf(x[0] * w[2 * j] + x[1] * w[2 * j + 1] + b[j]);
    dh[j] = x[j] * (1 - h[j] * h[j]); /* d y / d fc_j */
    ex[j] += h[j];                    /* the direct use of x */
  }
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) ex[i] += dh[j] * w[2 * j + i];
  CHECK(fabsf(gx[0] - ex[0]) < 1e-5f && fabsf(gx[1] - ex[1]) < 1e-5f, "got %g %g, want %g %g",
        gx[0], gx[1], ex[0], ex[1]);
  lmx_ndarray_free(g);
  lmx_autograd_get_grad(v.b, &g, NULL);
  CHECK(fabsf(vals(g)[0] - dh[0]) < 1e-5f && fabsf(vals(g)[1] - dh[1]) < 1e-5f);
  lmx_ndarray_free(g);
  /* a second backward through the freed graph names an operator of the path */
  CHECK(lmx_autograd_backward(1, &y, NULL, 0, NULL, NULL, 0, 1) == LMX_ERR_STATE);
  CHECK(strstr(lmx_last_error(), "freed by an earlier backward") != NULL, "%s", lmx_last_error());
  lmx_ndarray_free(y);
  free_vars(&v);
}

/* q = sum(x * BlockGrad(u)); the gradients of q for {x, u}: x's is reached (BlockGrad(u)),
 * u's is not (zeros, a fresh array made after x's was handed out). */
static int unreached(const vars *v) {
  int64_t d12[2] = {1, 2};
  float uv[2] = {2, 3};
  lmx_ndarray *u = arr(d12, 2, uv), *bg = NULL, *m = NULL, *q = NULL, *g[2] = {NULL, NULL};
  if (!u) return LMX_ERR_NOMEM;
  int rc = lmx_autograd_mark(u, 1, NULL);
  lmx_autograd_set_state(1, 1, NULL, NULL);
  if (rc == LMX_OK) rc = call("BlockGrad", 0, NULL, NULL, 1, &u, &bg);
  lmx_ndarray *in[2] = {v->x, bg}, *vs[2] = {v->x, u};
  if (rc == LMX_OK) rc = call("elemwise_mul", 0, NULL, NULL, 2, in, &m);
  if (rc == LMX_OK) rc = call("sum", 0, NULL, NULL, 1, &m, &q);
  lmx_autograd_set_state(0, 0, NULL, NULL);
  if (rc == LMX_OK) rc = lmx_autograd_backward(1, &q, NULL, 2, vs, g, 0, 1);
  if (rc == LMX_OK && (vals(g[0])[0] != 2 || vals(g[0])[1] != 3 || vals(g[1])[0] != 0 ||
                       vals(g[1])[1] != 0))
    rc = LMX_ERR_INTERNAL;
  else if (rc != LMX_OK && (g[0] || g[1]))
    rc = LMX_ERR_INTERNAL; /* a failed call hands out no gradient */
  lmx_ndarray_free(g[0]);
  lmx_ndarray_free(g[1]);
  lmx_ndarray_free(q);
  lmx_ndarray_free(m);
  lmx_ndarray_free(bg);
  lmx_ndarray_free(u);
  return rc;
}

/* One complete round: record, backward (retained), export, backward again. */
static int round_trip(void) {
  vars v;
  lmx_ndarray *y = NULL;
  int rc = make_vars(&v);
  lmx_autograd_set_state(1, 1, NULL, NULL);
  if (rc == LMX_OK) rc = forward(&v, &y);
  lmx_autograd_set_state(0, 0, NULL, NULL);
  if (rc == LMX_OK) rc = lmx_autograd_backward(1, &y, NULL, 0, NULL, NULL, 1, 1);
  lmx_ag_graph *gr = NULL;
  if (rc == LMX_OK) rc = lmx_autograd_export(1, &y, &gr);
  if (rc == LMX_OK) {
    int nn, nh;
    const int *hn, *hi;
    lmx_autograd_graph_size(gr, &nn, &nh, &hn, &hi);
    rc = nn == 7 && nh == 1 && hn[0] == nn - 1 ? LMX_OK : LMX_ERR_INTERNAL;
  }
  lmx_autograd_graph_free(gr);
  lmx_ndarray *gx = NULL;
  if (rc == LMX_OK) rc = lmx_autograd_backward(1, &y, NULL, 1, &v.w, &gx, 0, 1);
  lmx_ndarray_free(gx);
  if (rc == LMX_OK) rc = unreached(&v);
  lmx_ndarray_free(y);
  free_vars(&v);
  lmx_autograd_set_state(0, 0, NULL, NULL);
  return rc;
}

static void test_faults(void) {
  int64_t blocks0, blocks1;
  CHECK(round_trip() == LMX_OK, "%s", lmx_last_error());
  lmx_debug_alloc_stats(&blocks0, NULL, NULL);
  int failed = 0, n;
  for (n = 1; n < 2000; n++) {
    lmx_debug_alloc_fail_at(n);
    int rc = round_trip();
    lmx_debug_alloc_fail_at(0);
    lmx_debug_alloc_stats(&blocks1, NULL, NULL);
    if (blocks1 != blocks0) {
      CHECK(blocks1 == blocks0, "allocation %d failing leaks %lld blocks", n,
            (long long)(blocks1 - blocks0));
      break;
    }
    if (rc == LMX_OK) break; /* past the last allocation */
    if (rc != LMX_ERR_NOMEM) {
      CHECK(rc == LMX_ERR_NOMEM, "allocation %d: status %d: %s", n, rc, lmx_last_error());
      break;
    }
    failed++;
  }
  CHECK(failed > 20, "only %d allocations were exercised", failed);
  CHECK(round_trip() == LMX_OK, "the tape is usable after the faults: %s", lmx_last_error());
}

static void test_leaks(void) {
  int64_t b0, b1;
  for (int warm = 0; warm < 2; warm++) { /* first calls may set up lasting state */
    vars w;
    lmx_ndarray *y0 = NULL;
    make_vars(&w);
    lmx_autograd_set_state(1, 1, NULL, NULL);
    forward(&w, &y0);
    lmx_autograd_set_state(0, 0, NULL, NULL);
    lmx_ndarray_free(y0);
    free_vars(&w);
  }
  lmx_debug_alloc_stats(&b0, NULL, NULL);
  vars v;
  make_vars(&v);
  lmx_autograd_set_state(1, 1, NULL, NULL);
  lmx_ndarray *y = NULL;
  CHECK(forward(&v, &y) == LMX_OK);
  lmx_autograd_set_state(0, 0, NULL, NULL);
  int kind;
  const char *op;
  lmx_autograd_info(y, &kind, &op);
  CHECK(kind == 0 && strcmp(op, "sum") == 0);
  lmx_ndarray *d = NULL;
  CHECK(lmx_autograd_detach(y, &d) == LMX_OK);
  lmx_autograd_info(d, &kind, NULL);
  CHECK(kind == -1);
  lmx_ndarray_free(d);
  lmx_ndarray_free(y); /* no backward: the graph goes with its last array */
  free_vars(&v);
  lmx_debug_alloc_stats(&b1, NULL, NULL);
  CHECK(b1 == b0, "%lld blocks left", (long long)(b1 - b0));
  /* arguments */
  CHECK(lmx_autograd_backward(0, NULL, NULL, 0, NULL, NULL, 0, 1) == LMX_ERR_ARG);
  CHECK(lmx_autograd_mark(NULL, 1, NULL) == LMX_ERR_ARG);
  int64_t d2[1] = {2};
  float z[2] = {0, 0};
  lmx_ndarray *a = arr(d2, 1, z);
  CHECK(lmx_autograd_mark(a, 2, NULL) == LMX_ERR_ARG);
  CHECK(strstr(lmx_last_error(), "grad_req") != NULL);
  CHECK(lmx_autograd_backward(1, &a, NULL, 0, NULL, NULL, 0, 1) == LMX_ERR_STATE);
  lmx_ndarray_free(a);
}

int main(void) {
  test_values();
  test_leaks();
  test_faults();
  return check_summary();
}
