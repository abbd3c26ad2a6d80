/* custom.c — the operator "Custom": operators written in the host language (MXNet's
 * mx.operator.CustomOp / CustomOpProp, src/operator/custom/custom.cc).
 *
 * Parameters: op_type plus any key/value strings. The declarative table cannot parse
 * them, so the descriptor brings its own param_parse: it hands op_type and the user's
 * strings to the host's create callback (luamx.h, lmx_custom_callbacks), which answers
 * with a prop id, the input/output/aux names and what backward reads. The parsed block
 * keeps those, so counts, names and backward_needs are plain reads; the node's attrs
 * keep the strings, so JSON is written exactly as MXNet writes Custom nodes.
 * Freeing a block never calls the host (frees may run inside Lua's garbage collector):
 * the id goes on a released list the host drains (lmx_custom_take_released).
 *
 * Inference calls the host once input 0's shape (dtype) is known; unknown inputs are
 * passed as unknown, and the host's answers are merged with lmx_shape_assign, so a
 * contradiction is the usual "expected ..., got ..." message naming the node.
 * Running lends the tensors as NDArrays over the executor's memory (lmx_nd_borrow, no
 * copy), calls the host, then revokes the loan. (The array headers are the one thing
 * an operator's run allocates: the host needs handles, and the op runs host code anyway.) A host failure becomes
 * "Custom '<node>' (op_type '<t>'): forward: <host message>"; nothing in the engine's
 * state depends on the host having finished, so the executor stays usable.
 * Threads: every host call goes through lmx_relay_call, so it runs on the thread that
 * called the engine even when a group's worker thread runs the kernel (relay.h).
 * Memory planning: no in-place pairs and no backward in-place pairs, so outputs never
 * share an input's buffer. CSE never merges two Custom nodes (the host's op may keep
 * state): flags RANDOM | MUTATES_AUX.
 */
#include <pthread.h>

#include "../core/relay.h"
#include "../tensor/ndarray.h"
#include "custom.h"
#include "op_impl.h"

enum { MAX_LIST = 1024 };

typedef struct {
  char *op_type;
  int64_t prop;
  int nin, nout, naux;
  char **names; /* nin + nout + naux, in that order */
  unsigned needs;
} custom_param;

static lmx_custom_callbacks g_cb;
static int g_installed;

static pthread_mutex_t g_dead_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t *g_dead;
static int g_ndead, g_capdead;

void lmx_custom_install(const lmx_custom_callbacks *cb) {
  if (cb) g_cb = *cb;
  g_installed = cb != NULL;
}

int lmx_custom_take_released(int64_t *ids, int cap) {
  pthread_mutex_lock(&g_dead_mu);
  int n = g_ndead < cap ? g_ndead : cap;
  if (n > 0) memcpy(ids, g_dead + (g_ndead - n), (size_t)n * sizeof *ids);
  g_ndead -= n;
  if (g_ndead == 0) { /* drained: give the list back, so idle hosts hold no block */
    lmx_free(g_dead);
    g_dead = NULL, g_capdead = 0;
  }
  pthread_mutex_unlock(&g_dead_mu);
  return n;
}

static void note_released(int64_t id) {
  pthread_mutex_lock(&g_dead_mu);
  if (g_ndead == g_capdead) {
    int cap = g_capdead ? 2 * g_capdead : 64;
    int64_t *d = lmx_realloc(g_dead, (size_t)cap * sizeof *d);
    if (d) g_dead = d, g_capdead = cap;
  }
  /* Out of memory: the host keeps that prop until it exits (a leak, never a crash). */
  if (g_ndead < g_capdead) g_dead[g_ndead++] = id;
  pthread_mutex_unlock(&g_dead_mu);
}

static void custom_free(void *param) {
  custom_param *p = param;
  if (!p) return;
  if (p->prop > 0) note_released(p->prop);
  for (int i = 0; p->names && i < p->nin + p->nout + p->naux; i++) lmx_free(p->names[i]);
  lmx_free(p->names);
  lmx_free(p->op_type);
  lmx_free(p);
}

/* "Custom 'node' (op_type 't')", or "Custom (op_type 't')" for an unnamed node (an
 * imperative call): the head of every message. */
static const char *who(char *buf, size_t cap, const char *node, const char *type) {
  if (node && node[0]) snprintf(buf, cap, "Custom '%s' (op_type '%s')", node, type);
  else snprintf(buf, cap, "Custom (op_type '%s')", type);
  return buf;
}
#define WHO(node, type) who((char[320]){0}, 320, (node), (type))

/* ---- parsing ------------------------------------------------------------------------ */

static int is_attr_key(const char *k) {
  size_t n = strlen(k);
  return n >= 4 && k[0] == '_' && k[1] == '_' && k[n - 1] == '_' && k[n - 2] == '_';
}

typedef struct {
  const char *op_type, *node;
  int n;
  const char *const *keys, *const *vals;
  lmx_custom_info *info;
} create_arg;

static int call_create(void *a) {
  create_arg *x = a;
  return g_cb.create(x->op_type, x->node, x->n, x->keys, x->vals, x->info);
}

/* Splits info->names ("a,b,c") into p->names; checks the count. */
static int take_names(const char *node, const char *type, const lmx_custom_info *info,
                      custom_param *p) {
  int total = p->nin + p->nout + p->naux;
  p->names = lmx_calloc((size_t)total + 1, sizeof *p->names);
  if (!p->names) return lmx_fail_nomem("Custom operator names", (size_t)total * sizeof(char *));
  const char *s = info->names ? info->names : "";
  int k = 0;
  while (*s && k < total) {
    const char *e = strchr(s, ',');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    p->names[k] = lmx_alloc(len + 1);
    if (!p->names[k]) return lmx_fail_nomem("a Custom operator name", len + 1);
    memcpy(p->names[k], s, len);
    p->names[k][len] = '\0';
    k++;
    s += len + (e ? 1 : 0);
  }
  if (k != total || *s)
    return lmx_fail(LMX_ERR_INTERNAL,
                    "%s: the host listed the wrong number of names (expected %d, got '%s')",
                    WHO(node, type), total, info->names ? info->names : "");
  return LMX_OK;
}

static int custom_parse(const lmx_op *op, const char *node, const char *const *keys,
                        const char *const *vals, int n, void **out) {
  (void)op;
  const char *nm = node ? node : "";
  char head[300]; /* "Custom 'node'" or "Custom" */
  snprintf(head, sizeof head, nm[0] ? "Custom '%s'" : "Custom%s", nm);
  const char *type = NULL;
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (!keys[i] || is_attr_key(keys[i])) continue;
    if (!vals[i])
      return lmx_fail(LMX_ERR_ARG, "%s: parameter '%s': value must not be NULL", head, keys[i]);
    if (!strcmp(keys[i], "op_type")) type = vals[i];
    else m++;
  }
  if (!type)
    return lmx_fail(LMX_ERR_ARG, "%s: required parameter 'op_type' is missing", head);
  if (!g_installed)
    return lmx_fail(LMX_ERR_STATE,
                    "%s: no host serves Custom operators (load the Lua module luamx and "
                    "register the op with mx.operator.register)", WHO(nm, type));
  const int mu = m; /* the user's strings: keys at kv[0..mu), values at kv[mu + 1 ...] */
  const char **kv = lmx_alloc((size_t)(2 * mu + 2) * sizeof *kv);
  custom_param *p = lmx_calloc(1, sizeof *p);
  if (!kv || !p) {
    lmx_free(kv), lmx_free(p);
    return lmx_fail_nomem("Custom operator parameters", sizeof *p);
  }
  m = 0;
  for (int i = 0; i < n; i++) {
    if (!keys[i] || is_attr_key(keys[i]) || !strcmp(keys[i], "op_type")) continue;
    kv[m] = keys[i], kv[mu + 1 + m] = vals[i];
    m++;
  }
  lmx_custom_info info = {0};
  create_arg a = {type, nm, mu, kv, kv + mu + 1, &info};
  int rc = lmx_relay_call(call_create, &a);
  lmx_free(kv);
  if (rc != LMX_OK) {
    lmx_free(p);
    return lmx_fail_prefix(rc, "%s: ", WHO(nm, type));
  }
  p->prop = info.prop;
  p->nin = info.num_inputs, p->nout = info.num_outputs, p->naux = info.num_aux;
  p->needs = (unsigned)info.needs & 7u;
  if (info.prop <= 0 || p->nin < 0 || p->nin > MAX_LIST || p->nout < 1 || p->nout > MAX_LIST ||
      p->naux < 0 || p->naux > MAX_LIST) {
    int64_t id = p->prop;
    p->prop = id > 0 ? id : 0;
    p->nin = p->nout = p->naux = 0;
    custom_free(p);
    return lmx_fail(LMX_ERR_INTERNAL,
                    "%s: the host answered prop %lld with %d inputs, %d outputs, %d aux states "
                    "(expected a prop > 0, 1..%d outputs)",
                    WHO(nm, type), (long long)id, info.num_inputs, info.num_outputs, info.num_aux,
                    MAX_LIST);
  }
  p->op_type = lmx_strdup(type);
  rc = p->op_type ? take_names(nm, type, &info, p) : lmx_fail_nomem("op_type", strlen(type) + 1);
  if (rc != LMX_OK) {
    custom_free(p);
    return rc;
  }
  *out = p;
  return LMX_OK;
}

/* ---- structure ------------------------------------------------------------------------ */

#define CP(param) ((const custom_param *)(param))

static int custom_num_inputs(const void *param) { return param ? CP(param)->nin : 0; }
static int custom_num_outputs(const void *param) { return param ? CP(param)->nout : 1; }
static int custom_num_aux(const void *param) { return param ? CP(param)->naux : 0; }

static void name_at(const void *param, int k, int count, int i, char *buf, size_t cap) {
  const char *s = param && i >= 0 && i < count ? CP(param)->names[k + i] : "?";
  snprintf(buf, cap, "%s", s);
}
static void custom_input_name(const void *param, int i, char *buf, size_t cap) {
  name_at(param, 0, custom_num_inputs(param), i, buf, cap);
}
static void custom_output_name(const void *param, int i, char *buf, size_t cap) {
  name_at(param, custom_num_inputs(param), custom_num_outputs(param), i, buf, cap);
}
static void custom_aux_name(const void *param, int i, char *buf, size_t cap) {
  name_at(param, param ? CP(param)->nin + CP(param)->nout : 0, custom_num_aux(param), i, buf,
          cap);
}

_Static_assert((int)LMX_NEEDS_INPUTS == (int)LMX_CUSTOM_NEEDS_INPUTS &&
                   (int)LMX_NEEDS_OUTPUTS == (int)LMX_CUSTOM_NEEDS_OUTPUTS &&
                   (int)LMX_NEEDS_OUT_GRADS == (int)LMX_CUSTOM_NEEDS_OUT_GRADS,
               "backward_needs bits");
static unsigned custom_backward_needs(const void *param) {
  return param ? CP(param)->needs : (LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS);
}

/* ---- inference -------------------------------------------------------------------------- */

typedef struct {
  int64_t prop;
  int n;
  int *ndim;
  int64_t *dims;
  int *dtypes;
} infer_arg;

static int call_infer_shape(void *a) {
  infer_arg *x = a;
  return g_cb.infer_shape(x->prop, x->n, x->ndim, x->dims);
}
static int call_infer_type(void *a) {
  infer_arg *x = a;
  return g_cb.infer_type(x->prop, x->n, x->dtypes);
}

static void slot_what(const custom_param *p, int k, char *buf, size_t cap) {
  const char *kind = k < p->nin ? "input" : k < p->nin + p->nout ? "output" : "aux state";
  snprintf(buf, cap, "%s '%s'", kind, p->names[k]);
}

static int custom_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                              int nout, lmx_shape *aux, int naux) {
  const custom_param *p = c->param;
  if (nin > 0 && !lmx_shape_known(&in[0])) return LMX_OK; /* not yet */
  int n = nin + nout + naux;
  lmx_shape *slot[3] = {in, out, aux};
  int cnt[3] = {nin, nout, naux};
  int *ndim = lmx_calloc((size_t)n + 1, sizeof *ndim);
  int64_t *dims = lmx_calloc(((size_t)n + 1) * LMX_MAX_NDIM, sizeof *dims);
  if (!ndim || !dims) {
    lmx_free(ndim), lmx_free(dims);
    return lmx_fail_nomem("Custom shape inference", (size_t)n * LMX_MAX_NDIM * 8);
  }
  for (int i = 0; i < nin; i++) {
    if (!lmx_shape_known(&in[i])) continue;
    ndim[i] = in[i].ndim;
    for (int d = 0; d < in[i].ndim; d++) dims[i * LMX_MAX_NDIM + d] = in[i].dim[d];
  }
  infer_arg a = {p->prop, n, ndim, dims, NULL};
  int rc = lmx_relay_call(call_infer_shape, &a);
  if (rc != LMX_OK)
    rc = lmx_fail_prefix(rc, "%s: infer_shape: ", WHO(c->node, p->op_type));
  for (int g = 0, k = 0; rc == LMX_OK && g < 3; g++) {
    for (int i = 0; rc == LMX_OK && i < cnt[g]; i++, k++) {
      if (ndim[k] < 0 || ndim[k] > LMX_MAX_NDIM) {
        char what[96];
        slot_what(p, k, what, sizeof what);
        rc = lmx_fail(LMX_ERR_SHAPE, "%s: infer_shape: %s: expected 0..%d dimensions, got %d",
                      WHO(c->node, p->op_type), what,
                      LMX_MAX_NDIM, ndim[k]);
        break;
      }
      if (ndim[k] == 0) continue;
      lmx_shape s = {ndim[k], {0}};
      for (int d = 0; d < ndim[k]; d++) s.dim[d] = dims[k * LMX_MAX_NDIM + d];
      char what[96];
      slot_what(p, k, what, sizeof what);
      rc = lmx_shape_assign(c, &slot[g][i], &s, what);
    }
  }
  lmx_free(ndim), lmx_free(dims);
  return rc;
}

static int custom_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                             int naux) {
  const custom_param *p = c->param;
  if (nin > 0 && in[0] < 0) return LMX_OK;
  int n = nin + nout + naux;
  int *dt = lmx_alloc(((size_t)n + 1) * sizeof *dt);
  if (!dt) return lmx_fail_nomem("Custom type inference", (size_t)n * sizeof *dt);
  for (int i = 0; i < n; i++) dt[i] = i < nin ? in[i] : -1;
  infer_arg a = {p->prop, n, NULL, NULL, dt};
  int rc = lmx_relay_call(call_infer_type, &a);
  if (rc != LMX_OK)
    rc = lmx_fail_prefix(rc, "%s: infer_type: ", WHO(c->node, p->op_type));
  int *slot[3] = {in, out, aux};
  int cnt[3] = {nin, nout, naux};
  for (int g = 0, k = 0; rc == LMX_OK && g < 3; g++) {
    for (int i = 0; rc == LMX_OK && i < cnt[g]; i++, k++) {
      if (dt[k] < 0) continue;
      char what[96];
      slot_what(p, k, what, sizeof what);
      if (dt[k] >= LMX_NUM_DTYPES)
        rc = lmx_fail(LMX_ERR_DTYPE, "%s: infer_type: %s: unknown dtype code %d",
                      WHO(c->node, p->op_type), what, dt[k]);
      else
        rc = lmx_dtype_assign(c, &slot[g][i], dt[k], what);
    }
  }
  lmx_free(dt);
  return rc;
}

/* ---- running -------------------------------------------------------------------------- */

typedef struct {
  const lmx_op_ctx *c;
  int bwd;
  const int *req;
  lmx_ndarray **arr;
} run_arg;

static int call_run(void *a) {
  run_arg *x = a;
  const custom_param *p = x->c->param;
  if (x->bwd)
    return g_cb.backward(p->prop, x->c->is_train, x->c->dev_type, x->c->dev_id, x->req, x->arr);
  return g_cb.forward(p->prop, x->c->is_train, x->c->dev_type, x->c->dev_id, x->req, x->arr);
}

/* Lends the tensors of `groups` to the host and runs forward (bwd 0) or backward.
 * Groups whose bit is clear in `lend` are passed as NULL: backward gets only what the
 * prop declared (the planner may have reused the other buffers already). */
static int run(const lmx_op_ctx *c, int bwd, const lmx_tensor *const *groups, const int *cnt,
               int ngroups, unsigned lend, const int *req) {
  const custom_param *p = c->param;
  const char *node = c->node ? c->node : "";
  const char *what = bwd ? "backward" : "forward";
  if (!g_installed)
    return lmx_fail(LMX_ERR_STATE, "%s: %s: no host serves Custom operators any more",
                    WHO(node, p->op_type), what);
  int n = 0;
  for (int g = 0; g < ngroups; g++) n += cnt[g];
  lmx_ndarray **arr = lmx_calloc((size_t)n + 1, sizeof *arr);
  if (!arr) return lmx_fail_nomem("Custom operator arrays", (size_t)n * sizeof *arr);
  int rc = LMX_OK;
  for (int g = 0, k = 0; g < ngroups && rc == LMX_OK; g++) {
    for (int i = 0; i < cnt[g] && rc == LMX_OK; i++, k++) {
      const lmx_tensor *t = &groups[g][i];
      if (t->data && (lend >> g & 1u)) rc = lmx_nd_borrow(t->data, &t->shape, t->dtype, c->dev_type, c->dev_id, &arr[k]);
    }
  }
  if (rc == LMX_OK) {
    run_arg a = {c, bwd, req, arr};
    rc = lmx_relay_call(call_run, &a);
    if (rc != LMX_OK)
      rc = lmx_fail_prefix(rc, "%s: %s: ", WHO(node, p->op_type), what);
  }
  for (int k = 0; k < n; k++) {
    lmx_nd_revoke(arr[k]);
    lmx_nd_release(arr[k]);
  }
  lmx_free(arr);
  return rc;
}

int lmx_custom_forward(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                       const int *req, const lmx_tensor *aux) {
  const custom_param *p = c->param;
  const lmx_tensor *g[3] = {in, out, aux};
  int cnt[3] = {p->nin, p->nout, p->naux};
  return run(c, 0, g, cnt, 3, 7u, req);
}

int lmx_custom_backward(const lmx_op_ctx *c, const lmx_tensor *out_grad, const lmx_tensor *in,
                        const lmx_tensor *out, const lmx_tensor *in_grad, const int *req,
                        const lmx_tensor *aux) {
  const custom_param *p = c->param;
  const lmx_tensor *g[5] = {out_grad, in, out, in_grad, aux};
  int cnt[5] = {p->nout, p->nin, p->nout, p->nin, p->naux};
  unsigned lend = 8u | 16u; /* input gradients and aux states always */
  if (p->needs & LMX_NEEDS_OUT_GRADS) lend |= 1u;
  if (p->needs & LMX_NEEDS_INPUTS) lend |= 2u;
  if (p->needs & LMX_NEEDS_OUTPUTS) lend |= 4u;
  return run(c, 1, g, cnt, 5, lend, req);
}

/* ---- the descriptor -------------------------------------------------------------------- */

typedef struct {
  const char *op_type;
} custom_doc_param;

static const lmx_param_field custom_fields[] = {
    LMX_PF(custom_doc_param, op_type, LMX_PT_STRING, NULL, NULL, 0, 0,
           "Name of the custom operator, as given to mx.operator.register. Every other "
           "key/value string is handed to the operator's prop."),
};

const lmx_op lmx_op_Custom = {
    .name = "Custom",
    .doc = "An operator written in Lua: mx.operator.register(op_type, prop) (MXNet's "
           "CustomOp). Parameters: op_type and the prop's own string arguments.",
    LMX_PARAMS(custom_fields, custom_doc_param),
    .param_parse = custom_parse,
    .param_free = custom_free,
    .num_inputs = custom_num_inputs,
    .input_name = custom_input_name,
    .num_outputs = custom_num_outputs,
    .output_name = custom_output_name,
    .num_aux = custom_num_aux,
    .aux_name = custom_aux_name,
    .infer_shape = custom_infer_shape,
    .infer_type = custom_infer_type,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
    .backward_needs_of = custom_backward_needs,
    .flags = LMX_OPF_RANDOM | LMX_OPF_MUTATES_AUX | LMX_OPF_CALLS_HOST,
};
