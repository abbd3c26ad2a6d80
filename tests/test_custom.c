/* test_custom.c — the engine side of operators written in the host language, with C
 * callbacks standing in for Lua: the relay that runs a worker's call on the owner's
 * thread (status and message carried back), borrowed arrays and their revocation, the
 * operator "Custom" through lmx_imperative_invoke / lmx_imperative_backward (kwargs
 * handed to the host, undeclared backward arrays not lent, req add), its parse errors
 * (missing op_type, no host, a host that refuses or answers nonsense) and the released
 * prop list. The Lua side is spec/operator_spec.lua. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/relay.h"
#include "core/status.h"
#include "luamx.h"
#include "ops/op.h"
#include "tensor/ndarray.h"

#include "check.h"

/* ---- relay -------------------------------------------------------------------------- */

static pthread_t g_owner;

typedef struct {
  lmx_relay *r;
  int fail;
  int rc;
  char msg[256];
  int ran_on_owner;
} job;

static int on_owner(void *arg) {
  job *j = arg;
  j->ran_on_owner = pthread_equal(pthread_self(), g_owner);
  if (j->fail) return lmx_fail(LMX_ERR_SHAPE, "relayed failure %d", j->fail);
  return LMX_OK;
}

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_fin = PTHREAD_COND_INITIALIZER;
static int g_pending;

static void *worker(void *arg) {
  job *j = arg;
  lmx_relay_bind_thread(j->r);
  lmx_clear_error();
  j->rc = lmx_relay_call(on_owner, j);
  snprintf(j->msg, sizeof j->msg, "%s", lmx_errmsg());
  pthread_mutex_lock(&g_mu);
  if (--g_pending == 0) pthread_cond_signal(&g_fin);
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

static void test_relay(void) {
  g_owner = pthread_self();
  lmx_relay r;
  lmx_relay_init(&r, &g_mu, &g_fin);
  job jobs[3] = {{&r, 0, -1, "", 0}, {&r, 7, -1, "", 0}, {&r, 0, -1, "", 0}};
  pthread_t th[3];
  g_pending = 3;
  for (int i = 0; i < 3; i++) CHECK(pthread_create(&th[i], NULL, worker, &jobs[i]) == 0);
  pthread_mutex_lock(&g_mu);
  int served = 0;
  while (g_pending > 0 || r.head) {
    if (lmx_relay_serve(&r)) served++;
    else pthread_cond_wait(&g_fin, &g_mu);
  }
  pthread_mutex_unlock(&g_mu);
  for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
  CHECK(served >= 1);
  for (int i = 0; i < 3; i++) CHECK(jobs[i].ran_on_owner, "job %d ran on a worker", i);
  CHECK(jobs[0].rc == LMX_OK && jobs[2].rc == LMX_OK);
  CHECK(jobs[1].rc == LMX_ERR_SHAPE);
  CHECK(strcmp(jobs[1].msg, "relayed failure 7") == 0, "%s", jobs[1].msg);
  lmx_relay_destroy(&r);
  /* no relay bound: a direct call */
  job direct = {NULL, 0, -1, "", 0};
  CHECK(lmx_relay_call(on_owner, &direct) == LMX_OK && direct.ran_on_owner);
}

/* ---- borrowed arrays ------------------------------------------------------------------ */

static void test_borrow(void) {
  float buf[6] = {1, 2, 3, 4, 5, 6};
  lmx_shape s = {2, {2, 3}};
  lmx_ndarray *a = NULL, *kept = NULL;
  CHECK(lmx_nd_borrow(buf, &s, LMX_FLOAT32, LMX_CPU, 0, &a) == LMX_OK);
  double v[6];
  CHECK(lmx_ndarray_get_f64(a, v, 6) == LMX_OK && v[5] == 6);
  CHECK(lmx_nd_ptr(a) == (void *)buf);
  lmx_nd_revoke(a); /* nothing else holds it: still the lender's memory */
  CHECK(lmx_nd_ptr(a) == (void *)buf);
  lmx_nd_release(a); /* must not free buf (ASan would report it) */
  CHECK(buf[0] == 1);

  /* a view kept past the loan gets a snapshot, not the lender's memory */
  CHECK(lmx_nd_borrow(buf, &s, LMX_FLOAT32, LMX_CPU, 0, &a) == LMX_OK);
  lmx_shape row = {1, {3}};
  CHECK(lmx_nd_view(a, &row, 3 * sizeof(float), &kept) == LMX_OK);
  lmx_nd_revoke(a);
  lmx_nd_release(a);
  buf[3] = -1;
  CHECK(lmx_ndarray_get_f64(kept, v, 3) == LMX_OK && v[0] == 4 && v[2] == 6);
  CHECK(lmx_nd_ptr(kept) != (void *)(buf + 3));
  lmx_nd_release(kept); /* frees the snapshot (the leak check at the end counts it) */
}

/* ---- the Custom operator with C callbacks ----------------------------------------------- */

static int64_t g_next_prop;
static int g_fail_forward, g_saw_in_grad_inputs, g_kwargs, g_forward_calls;
static char g_factor[32];

static int cb_create(const char *op_type, const char *node, int n, const char *const *keys,
                     const char *const *vals, lmx_custom_info *info) {
  (void)node;
  if (!strcmp(op_type, "refuse")) return lmx_custom_fail(LMX_ERR_ARG, "refused by the host");
  if (!strcmp(op_type, "no_outputs")) {
    info->prop = ++g_next_prop, info->num_inputs = 1, info->num_outputs = 0;
    info->names = "data";
    return 0;
  }
  if (!strcmp(op_type, "short_names")) {
    info->prop = ++g_next_prop, info->num_inputs = 1, info->num_outputs = 1;
    info->names = "data";
    return 0;
  }
  g_kwargs = n;
  g_factor[0] = '\0';
  for (int i = 0; i < n; i++)
    if (!strcmp(keys[i], "factor")) snprintf(g_factor, sizeof g_factor, "%s", vals[i]);
  info->prop = ++g_next_prop, info->num_inputs = 1, info->num_outputs = 1, info->num_aux = 0;
  info->needs = LMX_CUSTOM_NEEDS_OUT_GRADS; /* y = 2x: backward reads only the head gradient */
  info->names = "data,output";
  return 0;
}

static int cb_infer_shape(int64_t prop, int n, int *ndim, int64_t *dims) {
  (void)prop;
  if (n != 2) return lmx_custom_fail(LMX_ERR_INTERNAL, "expected 2 slots");
  ndim[1] = ndim[0];
  for (int d = 0; d < ndim[0]; d++) dims[LMX_MAX_NDIM + d] = dims[d];
  return 0;
}

static int cb_infer_type(int64_t prop, int n, int *dtypes) {
  (void)prop, (void)n;
  dtypes[1] = dtypes[0];
  return 0;
}

static int cb_forward(int64_t prop, int is_train, int dev_type, int dev_id, const int *req,
                      lmx_ndarray *const *arrays) {
  (void)prop, (void)is_train, (void)dev_type, (void)dev_id, (void)req;
  g_forward_calls++;
  if (g_fail_forward) return lmx_custom_fail(0, "forward refused");
  float *x, *y;
  int64_t size;
  lmx_ndarray_data(arrays[0], (void **)&x);
  lmx_ndarray_data(arrays[1], (void **)&y);
  lmx_ndarray_size(arrays[0], &size);
  for (int64_t i = 0; i < size; i++) y[i] = 2 * x[i];
  return 0;
}

static int cb_backward(int64_t prop, int is_train, int dev_type, int dev_id, const int *req,
                       lmx_ndarray *const *arrays) {
  (void)prop, (void)is_train, (void)dev_type, (void)dev_id;
  /* out_grad, input (not declared), output (not declared), input gradient */
  g_saw_in_grad_inputs = arrays[1] != NULL || arrays[2] != NULL;
  float *og, *ig;
  int64_t size;
  lmx_ndarray_data(arrays[0], (void **)&og);
  lmx_ndarray_data(arrays[3], (void **)&ig);
  lmx_ndarray_size(arrays[3], &size);
  for (int64_t i = 0; i < size; i++) ig[i] = (req[0] == LMX_REQ_ADD ? ig[i] : 0) + 2 * og[i];
  return 0;
}

static const lmx_custom_callbacks g_cbs = {cb_create, cb_infer_shape, cb_infer_type, cb_forward,
                                           cb_backward};

static lmx_ndarray *vec(const double *v, int n) {
  int64_t d = n;
  lmx_ndarray *a = NULL;
  lmx_ndarray_new(&d, 1, LMX_FLOAT32, LMX_CPU, 0, &a);
  lmx_ndarray_set_f64(a, v, n);
  return a;
}

static void test_parse_errors(void) {
  const lmx_op *op = lmx_op_find("Custom");
  CHECK(op != NULL);
  void *p = NULL;
  const char *k1[] = {"factor"}, *v1[] = {"2"};
  CHECK(lmx_op_params_parse(op, "c1", k1, v1, 1, &p) == LMX_ERR_ARG);
  CHECK(strcmp(lmx_errmsg(), "Custom 'c1': required parameter 'op_type' is missing") == 0, "%s",
        lmx_errmsg());
  const char *k2[] = {"op_type"}, *v2[] = {"twice"};
  CHECK(lmx_custom_set_callbacks(NULL) == LMX_OK);
  CHECK(lmx_op_params_parse(op, "c2", k2, v2, 1, &p) == LMX_ERR_STATE);
  CHECK(strstr(lmx_errmsg(), "Custom 'c2' (op_type 'twice'): no host serves Custom operators") ==
            lmx_errmsg(), "%s", lmx_errmsg());
  lmx_custom_callbacks half = g_cbs;
  half.backward = NULL;
  CHECK(lmx_custom_set_callbacks(&half) == LMX_ERR_ARG);
  CHECK(lmx_custom_set_callbacks(&g_cbs) == LMX_OK);
  v2[0] = "refuse";
  CHECK(lmx_op_params_parse(op, "c3", k2, v2, 1, &p) == LMX_ERR_ARG);
  CHECK(strcmp(lmx_errmsg(), "Custom 'c3' (op_type 'refuse'): refused by the host") == 0, "%s",
        lmx_errmsg());
  v2[0] = "no_outputs";
  CHECK(lmx_op_params_parse(op, NULL, k2, v2, 1, &p) == LMX_ERR_INTERNAL);
  CHECK(strstr(lmx_errmsg(), "Custom (op_type 'no_outputs'): the host answered prop") ==
            lmx_errmsg(), "%s", lmx_errmsg());
  v2[0] = "short_names";
  CHECK(lmx_op_params_parse(op, "c4", k2, v2, 1, &p) == LMX_ERR_INTERNAL);
  CHECK(strcmp(lmx_errmsg(), "Custom 'c4' (op_type 'short_names'): the host listed the wrong "
                             "number of names (expected 2, got 'data')") == 0, "%s", lmx_errmsg());
  /* the props of failed parses are released too */
  int64_t ids[8];
  int n = 0;
  CHECK(lmx_custom_released(ids, 8, &n) == LMX_OK && n == 2, "n = %d", n);
}

static void test_imperative(void) {
  double x[3] = {1, -2, 3};
  lmx_ndarray *in = vec(x, 3), *out[1] = {NULL};
  const char *keys[] = {"op_type", "factor", "__ctx_group__"}, *vals[] = {"twice", "2.5", "g"};
  int nout = 1;
  CHECK(lmx_imperative_invoke("Custom", 3, keys, vals, 1, &in, &nout, out, 0) == LMX_OK, "%s",
        lmx_errmsg());
  CHECK(g_kwargs == 1 && strcmp(g_factor, "2.5") == 0); /* op_type and attributes not passed */
  double y[3];
  CHECK(nout == 1 && lmx_ndarray_get_f64(out[0], y, 3) == LMX_OK);
  CHECK(y[0] == 2 && y[1] == -4 && y[2] == 6);

  double ogv[3] = {1, 10, 100}, start[3] = {1, 1, 1};
  lmx_ndarray *og = vec(ogv, 3), *ig = vec(start, 3);
  int req = LMX_REQ_ADD;
  CHECK(lmx_imperative_backward("Custom", 3, keys, vals, 1, &in, 1, out, &og, &ig, &req, 0) ==
            LMX_OK, "%s", lmx_errmsg());
  CHECK(!g_saw_in_grad_inputs); /* not declared: not lent */
  CHECK(lmx_ndarray_get_f64(ig, y, 3) == LMX_OK && y[0] == 3 && y[1] == 21 && y[2] == 201);

  g_fail_forward = 1;
  nout = 1;
  lmx_ndarray *out2[1] = {out[0]};
  CHECK(lmx_imperative_invoke("Custom", 2, keys, vals, 1, &in, &nout, out2, 0) == LMX_ERR_ARG);
  CHECK(strcmp(lmx_last_error(), "Custom (op_type 'twice'): forward: forward refused") == 0, "%s",
        lmx_last_error());
  g_fail_forward = 0;
  int calls = g_forward_calls;
  CHECK(lmx_imperative_invoke("Custom", 2, keys, vals, 1, &in, &nout, out2, 0) == LMX_OK);
  CHECK(g_forward_calls == calls + 1);

  int64_t ids[64];
  int n = 0;
  CHECK(lmx_custom_released(ids, 64, &n) == LMX_OK && n >= 3, "n = %d", n);
  CHECK(lmx_custom_released(ids, 64, &n) == LMX_OK && n == 0);
  CHECK(lmx_custom_released(ids, 0, &n) == LMX_ERR_ARG);
  lmx_ndarray_free(in), lmx_ndarray_free(out[0]), lmx_ndarray_free(og), lmx_ndarray_free(ig);
  lmx_custom_set_callbacks(NULL);
}

int main(void) {
  int64_t blocks0, blocks1;
  lmx_debug_alloc_stats(&blocks0, NULL, NULL);
  test_relay();
  test_borrow();
  test_parse_errors();
  test_imperative();
  lmx_debug_alloc_stats(&blocks1, NULL, NULL);
  CHECK(blocks1 == blocks0, "%lld blocks leaked", (long long)(blocks1 - blocks0));
  return check_summary();
}
