/* infer_util.c — shape/dtype merging and the default inference rules.
 *
 * Convention (op.h): ndim 0 = nothing known, a dim of 0 = unknown, dtype -1 = unknown.
 * lmx_shape_assign merges: an unknown slot takes the deduced shape; known dims must
 * agree, otherwise the message names the op, node, slot and both shapes. The default
 * type rule is MXNet's ElemwiseType: one dtype shared by every input, output and aux,
 * propagated in both directions.
 */
#include <stdarg.h>

#include "op_impl.h"

lmx_shape lmx_shp(int ndim, const int64_t *dims) {
  lmx_shape s = {ndim, {0}};
  for (int i = 0; i < ndim && i < LMX_MAX_NDIM; i++) s.dim[i] = dims[i];
  return s;
}

const char *lmx_op_label(const lmx_op_ctx *c, char *buf, size_t cap) {
  const char *name = c && c->op ? c->op->name : "operator";
  if (c && c->node && c->node[0])
    snprintf(buf, cap, "%s '%s'", name, c->node);
  else
    snprintf(buf, cap, "%s", name);
  return buf;
}

int lmx_op_fail(const lmx_op_ctx *c, int status, const char *fmt, ...) {
  char label[256], msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return lmx_fail(status, "%s: %s", lmx_op_label(c, label, sizeof label), msg);
}

int lmx_shape_known(const lmx_shape *s) {
  if (s->ndim <= 0) return 0;
  for (int i = 0; i < s->ndim; i++)
    if (s->dim[i] <= 0) return 0;
  return 1;
}

int lmx_shape_assign(const lmx_op_ctx *c, lmx_shape *slot, const lmx_shape *expected,
                     const char *what) {
  if (expected->ndim <= 0) return LMX_OK;
  if (slot->ndim <= 0) {
    *slot = *expected;
    return LMX_OK;
  }
  lmx_shape merged = *slot;
  int ok = slot->ndim == expected->ndim;
  for (int i = 0; ok && i < slot->ndim; i++) {
    if (expected->dim[i] == 0) continue;
    if (slot->dim[i] == 0) merged.dim[i] = expected->dim[i];
    else if (slot->dim[i] != expected->dim[i]) ok = 0;
  }
  if (!ok) {
    char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
    return lmx_op_fail(c, LMX_ERR_SHAPE, "%s: expected shape %s, got %s", what,
                       lmx_shape_str(expected, a), lmx_shape_str(slot, b));
  }
  *slot = merged;
  return LMX_OK;
}

int lmx_dtype_assign(const lmx_op_ctx *c, int *slot, int expected, const char *what) {
  if (expected < 0) return LMX_OK;
  if (*slot < 0) {
    *slot = expected;
    return LMX_OK;
  }
  if (*slot != expected)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected %s, got %s", what,
                       lmx_dtype_str(expected), lmx_dtype_str(*slot));
  return LMX_OK;
}

const char *lmx_op_in_name(const lmx_op_ctx *c, int i, char *buf, size_t cap) {
  lmx_op_input_name(c->op, c->param, i, buf, cap);
  return buf;
}

/* 1 when lmx_shape_assign(slot, e) would fail: the helpers below name the slot (a
 * snprintf and a name lookup) only then, since imperative calls infer on every call. */
static int shape_conflicts(const lmx_shape *slot, const lmx_shape *e) {
  if (e->ndim <= 0 || slot->ndim <= 0) return 0;
  if (slot->ndim != e->ndim) return 1;
  for (int i = 0; i < slot->ndim; i++)
    if (e->dim[i] != 0 && slot->dim[i] != 0 && slot->dim[i] != e->dim[i]) return 1;
  return 0;
}

static int dtype_conflicts(int slot, int expected) {
  return expected >= 0 && slot >= 0 && slot != expected;
}

/* The slot's label for a message: kind 0 input, 1 output, 2 aux. */
static const char *slot_what(const lmx_op_ctx *c, int kind, int i, char *what, size_t cap) {
  char nm[64];
  if (kind == 0) lmx_op_in_name(c, i, nm, sizeof nm);
  else if (kind == 1) lmx_op_output_name(c->op, c->param, i, nm, sizeof nm);
  else lmx_op_aux_name(c->op, c->param, i, nm, sizeof nm);
  snprintf(what, cap, "%s '%s'", kind == 0 ? "input" : kind == 1 ? "output" : "aux", nm);
  return what;
}

static int slot_shape(const lmx_op_ctx *c, int kind, lmx_shape *s, int i, const lmx_shape *e) {
  char what[96];
  if (!shape_conflicts(&s[i], e)) return lmx_shape_assign(c, &s[i], e, "");
  return lmx_shape_assign(c, &s[i], e, slot_what(c, kind, i, what, sizeof what));
}

static int slot_dtype(const lmx_op_ctx *c, int kind, int *t, int i, int dt) {
  char what[96];
  if (!dtype_conflicts(t[i], dt)) return lmx_dtype_assign(c, &t[i], dt, "");
  return lmx_dtype_assign(c, &t[i], dt, slot_what(c, kind, i, what, sizeof what));
}

int lmx_in_assign(const lmx_op_ctx *c, lmx_shape *in, int i, const lmx_shape *e) {
  return slot_shape(c, 0, in, i, e);
}

int lmx_out_assign(const lmx_op_ctx *c, lmx_shape *out, int i, const lmx_shape *e) {
  return slot_shape(c, 1, out, i, e);
}

int lmx_aux_assign(const lmx_op_ctx *c, lmx_shape *aux, int i, const lmx_shape *e) {
  return slot_shape(c, 2, aux, i, e);
}

int lmx_op_axis(const lmx_op_ctx *c, const char *pname, int64_t axis, int ndim, int *out) {
  if (axis < -ndim || axis >= ndim)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter '%s': axis %lld is out of range for %d-D "
                       "input (valid: %d..%d)", pname, (long long)axis, ndim, -ndim,
                       ndim - 1);
  *out = (int)(axis < 0 ? axis + ndim : axis);
  return LMX_OK;
}

/* Merges every known slot into one shape (first known wins the message's "expected"),
 * then writes it back into all slots. */
int lmx_infer_same_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                         int nout) {
  lmx_shape m = {0, {0}};
  for (int i = 0; i < nin; i++) {
    if (in[i].ndim <= 0) continue;
    LMX_TRY(lmx_in_assign(c, in, i, &m));
    m = in[i];
  }
  for (int i = 0; i < nout; i++) {
    if (out[i].ndim <= 0) continue;
    LMX_TRY(lmx_out_assign(c, out, i, &m));
    m = out[i];
  }
  for (int i = 0; i < nin; i++) LMX_TRY(lmx_in_assign(c, in, i, &m));
  for (int i = 0; i < nout; i++) LMX_TRY(lmx_out_assign(c, out, i, &m));
  return LMX_OK;
}

/* Every shape a rule sees or derives must pass lmx_shape_check: the rules multiply and add
 * dims, and a size that overflows would allocate a buffer smaller than the kernels index. */
static int check_all(const lmx_op_ctx *c, const lmx_shape *s, int n, int kind) {
  char nm[64], label[160], what[256];
  for (int i = 0; i < n; i++) {
    if (lmx_shape_check(&s[i], "") == LMX_OK) continue;
    if (kind == 0) lmx_op_in_name(c, i, nm, sizeof nm);
    else if (kind == 1) lmx_op_output_name(c->op, c->param, i, nm, sizeof nm);
    else snprintf(nm, sizeof nm, "%d", i + 1);
    snprintf(what, sizeof what, "%s: %s '%s'", lmx_op_label(c, label, sizeof label),
             kind == 0 ? "input" : kind == 1 ? "output" : "aux", nm);
    return lmx_shape_check(&s[i], what);
  }
  return LMX_OK;
}

int lmx_op_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out, int nout,
                       lmx_shape *aux, int naux) {
  LMX_TRY(check_all(c, in, nin, 0));
  LMX_TRY(check_all(c, aux, naux, 2));
  if (c->op->infer_shape) LMX_TRY(c->op->infer_shape(c, in, nin, out, nout, aux, naux));
  else LMX_TRY(lmx_infer_same_shape(c, in, nin, out, nout));
  LMX_TRY(check_all(c, in, nin, 0));
  LMX_TRY(check_all(c, aux, naux, 2));
  return check_all(c, out, nout, 1);
}

static int find_known(const int *v, int n) {
  for (int i = 0; i < n; i++)
    if (v[i] >= 0) return v[i];
  return -1;
}

int lmx_infer_type_inputs_same(const lmx_op_ctx *c, int *in, int nin, int *out, int nout,
                               int out_dt) {
  int dt = find_known(in, nin);
  for (int i = 0; i < nin; i++) LMX_TRY(slot_dtype(c, 0, in, i, dt));
  for (int i = 0; i < nout; i++) LMX_TRY(slot_dtype(c, 1, out, i, out_dt));
  return LMX_OK;
}

static int default_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                        int naux) {
  int dt = find_known(in, nin);
  if (dt < 0) dt = find_known(out, nout);
  if (dt < 0) dt = find_known(aux, naux);
  if (dt < 0) return LMX_OK;
  for (int i = 0; i < nin; i++) LMX_TRY(slot_dtype(c, 0, in, i, dt));
  for (int i = 0; i < nout; i++) LMX_TRY(slot_dtype(c, 1, out, i, dt));
  for (int i = 0; i < naux; i++) LMX_TRY(slot_dtype(c, 2, aux, i, dt));
  return LMX_OK;
}

int lmx_op_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                      int naux) {
  if (c->op->infer_type) return c->op->infer_type(c, in, nin, out, nout, aux, naux);
  return default_type(c, in, nin, out, nout, aux, naux);
}
