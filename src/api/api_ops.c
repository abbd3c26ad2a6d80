/* api_ops.c — operator introspection and single-op inference (luamx.h "operators").
 *
 * Entry points check arguments and translate indices to descriptors; the work is done
 * by src/ops (params.c parses, the op's infer_shape/infer_type deduce). lmx_op_infer runs
 * the shape rule a few rounds (forward and backward deductions feed each other, as the
 * graph pass's fixed point would) and then the type rule, into caller buffers.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../ops/kernel.h"
#include "../ops/op_impl.h"
#include "api.h"

static int op_at(const char *fn, int index, const lmx_op **op) {
  *op = lmx_op_at(index);
  if (!*op)
    return lmx_fail(LMX_ERR_ARG, "%s: operator index %d out of range [0, %d)", fn, index,
                    lmx_op_count());
  return LMX_OK;
}

int lmx_op_registry_size(int *count) {
  LMX_ENTER();
  LMX_NEED(count, "lmx_op_registry_size", "count");
  *count = lmx_op_count();
  return LMX_OK;
}

int lmx_op_get_name(int i, const char **name) {
  LMX_ENTER();
  LMX_NEED(name, "lmx_op_get_name", "name");
  const lmx_op *op;
  LMX_TRY(op_at("lmx_op_get_name", i, &op));
  *name = op->name;
  return LMX_OK;
}

/* Edit distance, capped (names are short). */
static int edit_distance(const char *a, const char *b) {
  int la = (int)strlen(a), lb = (int)strlen(b), row[64];
  if (la > 62 || lb > 62) return 99;
  for (int j = 0; j <= lb; j++) row[j] = j;
  for (int i = 1; i <= la; i++) {
    int prev = row[0];
    row[0] = i;
    for (int j = 1; j <= lb; j++) {
      int cur = row[j];
      int sub = prev + ((a[i - 1] | 32) != (b[j - 1] | 32));
      int best = row[j] + 1 < row[j - 1] + 1 ? row[j] + 1 : row[j - 1] + 1;
      row[j] = sub < best ? sub : best;
      prev = cur;
    }
  }
  return row[lb];
}

int lmx_op_lookup(const char *name, int *index) {
  LMX_ENTER();
  LMX_NEED(name, "lmx_op_lookup", "name");
  LMX_NEED(index, "lmx_op_lookup", "index");
  const lmx_op *op = lmx_op_find(name);
  if (op) {
    *index = lmx_op_index(op);
    return LMX_OK;
  }
  char hint[256] = "";
  size_t n = 0;
  for (int i = 0; i < lmx_op_count() && n + 64 < sizeof hint; i++) {
    const char *cand = lmx_op_at(i)->name;
    if (edit_distance(name, cand) <= 2)
      n += (size_t)snprintf(hint + n, sizeof hint - n, "%s%s", n ? ", " : "", cand);
  }
  if (n) return lmx_fail(LMX_ERR_NOTFOUND, "unknown operator '%s' (did you mean %s?)", name, hint);
  return lmx_fail(LMX_ERR_NOTFOUND, "unknown operator '%s'", name);
}

int lmx_op_alias(int i, int *count, const char **alias, int *index) {
  LMX_ENTER();
  if (count) *count = lmx_op_alias_count();
  if (i == -1) return LMX_OK;
  const lmx_op *target = NULL;
  const char *a = lmx_op_alias_at(i, &target);
  if (!a)
    return lmx_fail(LMX_ERR_ARG, "lmx_op_alias: alias index %d out of range [0, %d)", i,
                    lmx_op_alias_count());
  if (alias) *alias = a;
  if (index) *index = lmx_op_index(target);
  return LMX_OK;
}

int lmx_op_info(int index, const char **name, const char **doc, const char **hint,
                int *num_params, int *flags) {
  LMX_ENTER();
  const lmx_op *op;
  LMX_TRY(op_at("lmx_op_info", index, &op));
  if (name) *name = op->name;
  if (doc) *doc = op->doc ? op->doc : "";
  if (hint) {
    /* static per-op hint: op->hint or a lower-cased copy kept in a registry-sized table */
    static char lowered[512][48];
    if (op->hint) *hint = op->hint;
    else if (index < 512) *hint = lmx_op_hint_of(op, NULL, lowered[index], sizeof lowered[0]);
    else *hint = op->name;
  }
  if (num_params) *num_params = op->num_params;
  if (flags) *flags = (int)op->flags;
  return LMX_OK;
}

int lmx_op_kernels(int index, int dev_type, int *forward, int *backward) {
  LMX_ENTER();
  const lmx_op *op;
  LMX_TRY(op_at("lmx_op_kernels", index, &op));
  const lmx_kernel *k = lmx_op_kernel(op, dev_type);
  if (forward) *forward = k != NULL;
  if (backward) *backward = k && k->backward;
  return LMX_OK;
}

int lmx_op_hint(const char *called, char *buf, int cap) {
  LMX_ENTER();
  LMX_NEED(called, "lmx_op_hint", "called");
  LMX_NEED(buf, "lmx_op_hint", "buf");
  if (cap < 1) return lmx_fail(LMX_ERR_ARG, "lmx_op_hint: cap must be >= 1, got %d", cap);
  const lmx_op *op = lmx_op_find(called);
  if (!op) return lmx_fail(LMX_ERR_NOTFOUND, "unknown operator '%s'", called);
  lmx_op_hint_of(op, called, buf, (size_t)cap);
  return LMX_OK;
}

int lmx_op_param_info(int index, int j, const char **name, int *type, const char **def,
                      const char **choices, const char **doc) {
  LMX_ENTER();
  const lmx_op *op;
  LMX_TRY(op_at("lmx_op_param_info", index, &op));
  if (j < 0 || j >= op->num_params)
    return lmx_fail(LMX_ERR_ARG, "lmx_op_param_info: %s has %d parameters, index %d is out of "
                    "range", op->name, op->num_params, j);
  const lmx_param_field *f = &op->params[j];
  if (name) *name = f->name;
  if (type) *type = (int)f->type;
  if (def) *def = f->def;
  if (choices) *choices = f->choices;
  if (doc) *doc = f->doc ? f->doc : "";
  return LMX_OK;
}

_Static_assert((int)LMX_PT_OPT_BOOL == (int)LMX_PARAM_OPT_BOOL &&
                   (int)LMX_PT_OPT_INTS == (int)LMX_PARAM_OPT_INTS &&
                   (int)LMX_PT_DTYPE == (int)LMX_PARAM_DTYPE,
               "lmx_param_type and LMX_PARAM_* must agree");
_Static_assert((int)LMX_OPF_UPDATE == (int)LMX_OPFLAG_UPDATE && (int)LMX_OPF_LOSS == (int)LMX_OPFLAG_LOSS,
               "op flags and LMX_OPFLAG_* must agree");

static int parse_for(const char *fn, int index, const char *node, int n,
                     const char *const *keys, const char *const *vals, const lmx_op **op,
                     void **param) {
  LMX_TRY(op_at(fn, index, op));
  if (n < 0 || (n > 0 && (!keys || !vals)))
    return lmx_fail(LMX_ERR_ARG, "%s: keys and vals must hold n = %d strings", fn, n);
  return lmx_op_params_parse(*op, node, keys, vals, n, param);
}

static int join_names(const lmx_op *op, const void *param, int kind, int count, char *buf,
                      int cap) {
  size_t need = 1, at = 0;
  char nm[128];
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < count; i++) {
      if (kind == 0) lmx_op_input_name(op, param, i, nm, sizeof nm);
      else if (kind == 1) lmx_op_output_name(op, param, i, nm, sizeof nm);
      else lmx_op_aux_name(op, param, i, nm, sizeof nm);
      size_t len = strlen(nm) + (i ? 1 : 0);
      if (pass == 0) need += len;
      else at += (size_t)snprintf(buf + at, (size_t)cap - at, "%s%s", i ? "," : "", nm);
    }
    if (pass == 0 && need > (size_t)cap)
      return lmx_fail(LMX_ERR_ARG, "lmx_op_io_names: buffer of %d bytes is too small, %zu "
                      "needed", cap, need);
    if (pass == 0) buf[0] = '\0';
  }
  return LMX_OK;
}

int lmx_op_io_names(int index, int n, const char *const *keys, const char *const *vals,
                    int kind, char *buf, int cap, int *count, int *visible) {
  LMX_ENTER();
  LMX_NEED(buf, "lmx_op_io_names", "buf");
  LMX_NEED(count, "lmx_op_io_names", "count");
  if (kind < 0 || kind > 2)
    return lmx_fail(LMX_ERR_ARG, "lmx_op_io_names: kind must be 0 (inputs), 1 (outputs) or "
                    "2 (aux), got %d", kind);
  const lmx_op *op;
  void *param = NULL;
  LMX_TRY(parse_for("lmx_op_io_names", index, NULL, n, keys, vals, &op, &param));
  int cnt = kind == 0 ? lmx_op_num_inputs(op, param)
            : kind == 1 ? lmx_op_num_outputs(op, param) : lmx_op_num_aux(op, param);
  int rc = join_names(op, param, kind, cnt, buf, cap);
  if (rc == LMX_OK) {
    *count = cnt;
    if (visible) *visible = lmx_op_num_visible_outputs(op, param);
  }
  lmx_op_params_free(op, param);
  return rc;
}

typedef struct {
  lmx_shape in[32], out[8], aux[8];
  int tin[32], tout[8], taux[8];
  int nin, nout, naux;
} infer_state;

static int infer_load(const lmx_op_ctx *c, infer_state *st, int nin, const int *in_ndims,
                      const int64_t *in_dims, const int *in_dtypes) {
  if (st->nin > 32 || st->nout > 8 || st->naux > 8)
    return lmx_op_fail(c, LMX_ERR_UNSUPPORTED, "lmx_op_infer handles at most 32 inputs, 8 "
                       "outputs and 8 aux states");
  if (nin != st->nin)
    return lmx_op_fail(c, LMX_ERR_ARG, "expected %d input shapes for these parameters, got %d",
                       st->nin, nin);
  if (nin > 0 && (!in_ndims || !in_dims))
    return lmx_fail(LMX_ERR_ARG, "lmx_op_infer: in_ndims and in_dims must not be NULL");
  memset(st->in, 0, sizeof st->in);
  memset(st->out, 0, sizeof st->out);
  memset(st->aux, 0, sizeof st->aux);
  for (int i = 0; i < 32; i++) st->tin[i] = -1;
  for (int i = 0; i < 8; i++) st->tout[i] = st->taux[i] = -1;
  for (int i = 0; i < nin; i++) {
    if (in_ndims[i] < 0 || in_ndims[i] > LMX_MAX_NDIM)
      return lmx_op_fail(c, LMX_ERR_ARG, "input %d: ndim %d out of range [0, %d]", i,
                         in_ndims[i], LMX_MAX_NDIM);
    st->in[i].ndim = in_ndims[i];
    for (int d = 0; d < in_ndims[i]; d++) {
      st->in[i].dim[d] = in_dims[i * LMX_MAX_NDIM + d];
      if (st->in[i].dim[d] < 0)
        return lmx_op_fail(c, LMX_ERR_ARG, "input %d: negative dim %lld", i,
                           (long long)st->in[i].dim[d]);
    }
    st->tin[i] = in_dtypes ? in_dtypes[i] : -1;
  }
  return LMX_OK;
}

static int infer_run(const lmx_op_ctx *c, infer_state *st) {
  for (int round = 0; round < 3; round++)
    LMX_TRY(lmx_op_infer_shape(c, st->in, st->nin, st->out, st->nout, st->aux, st->naux));
  return lmx_op_infer_type(c, st->tin, st->nin, st->tout, st->nout, st->taux, st->naux);
}

static void infer_store(const infer_state *st, int *ndims, int64_t *dims, int *dtypes) {
  int slot = 0;
  const lmx_shape *lists[3] = {st->in, st->out, st->aux};
  const int *types[3] = {st->tin, st->tout, st->taux};
  int counts[3] = {st->nin, st->nout, st->naux};
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < counts[k]; i++, slot++) {
      ndims[slot] = lists[k][i].ndim;
      for (int d = 0; d < LMX_MAX_NDIM; d++)
        dims[slot * LMX_MAX_NDIM + d] = d < lists[k][i].ndim ? lists[k][i].dim[d] : 0;
      if (dtypes) dtypes[slot] = types[k][i];
    }
  }
}

int lmx_op_infer(int index, const char *node, int n, const char *const *keys,
                 const char *const *vals, int nin, const int *in_ndims,
                 const int64_t *in_dims, const int *in_dtypes, int cap, int *counts,
                 int *ndims, int64_t *dims, int *dtypes) {
  LMX_ENTER();
  LMX_NEED(counts, "lmx_op_infer", "counts");
  LMX_NEED(ndims, "lmx_op_infer", "ndims");
  LMX_NEED(dims, "lmx_op_infer", "dims");
  const lmx_op *op;
  void *param = NULL;
  LMX_TRY(parse_for("lmx_op_infer", index, node, n, keys, vals, &op, &param));
  infer_state *st = lmx_calloc(1, sizeof *st);
  if (!st) {
    lmx_op_params_free(op, param);
    return lmx_fail_nomem("lmx_op_infer state", sizeof *st);
  }
  lmx_op_ctx c = {.op = op, .param = param, .node = node};
  st->nin = lmx_op_num_inputs(op, param);
  st->nout = lmx_op_num_outputs(op, param);
  st->naux = lmx_op_num_aux(op, param);
  int total = st->nin + st->nout + st->naux, rc;
  if (cap < total)
    rc = lmx_fail(LMX_ERR_ARG, "lmx_op_infer: %s needs %d slots (%d inputs, %d outputs, %d "
                  "aux), cap is %d", op->name, total, st->nin, st->nout, st->naux, cap);
  else rc = infer_load(&c, st, nin, in_ndims, in_dims, in_dtypes);
  if (rc == LMX_OK) rc = infer_run(&c, st);
  if (rc == LMX_OK) {
    infer_store(st, ndims, dims, dtypes);
    counts[0] = st->nin, counts[1] = st->nout, counts[2] = st->naux;
    counts[3] = lmx_op_num_visible_outputs(op, param);
  }
  lmx_free(st);
  lmx_op_params_free(op, param);
  return rc;
}
