/* api_symbol.c — Symbol entry points: argument checks only; the work is in src/graph
 * (nodes, composition, listings, JSON) and src/passes (inference). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/alloc.h"
#include "../core/atomic_file.h"
#include "../graph/graph.h"
#include "../passes/infer_symbol.h"
#include "../tensor/dtype.h"
#include "api.h"

#define NEED_SYM(s, fn) LMX_NEED(s, fn, "sym")

int lmx_symbol_variable(const char *name, lmx_symbol **out) {
  LMX_ENTER();
  LMX_NEED(name, "lmx_symbol_variable", "name");
  LMX_NEED(out, "lmx_symbol_variable", "out");
  return lmx_sym_variable(name, out);
}

int lmx_symbol_new_op(const char *op_name, const char *node_name, int n,
                      const char *const *keys, const char *const *vals, lmx_symbol **out) {
  LMX_ENTER();
  LMX_NEED(op_name, "lmx_symbol_new_op", "op_name");
  LMX_NEED(out, "lmx_symbol_new_op", "out");
  if (n < 0) return lmx_fail(LMX_ERR_ARG, "lmx_symbol_new_op: n = %d is negative", n);
  if (n > 0) {
    LMX_NEED(keys, "lmx_symbol_new_op", "keys");
    LMX_NEED(vals, "lmx_symbol_new_op", "vals");
  }
  return lmx_sym_new_op(op_name, node_name, n, keys, vals, out);
}

int lmx_symbol_compose(lmx_symbol *sym, int n, const char *const *names,
                       lmx_symbol *const *inputs) {
  LMX_ENTER();
  NEED_SYM(sym, "lmx_symbol_compose");
  if (n < 0) return lmx_fail(LMX_ERR_ARG, "lmx_symbol_compose: n = %d is negative", n);
  if (n > 0) LMX_NEED(inputs, "lmx_symbol_compose", "inputs");
  for (int i = 0; i < n; i++) {
    if (!inputs[i]) return lmx_fail(LMX_ERR_ARG, "lmx_symbol_compose: input %d is NULL", i);
  }
  return lmx_sym_compose(sym, n, names, inputs);
}

int lmx_symbol_free(lmx_symbol *sym) {
  lmx_sym_release(sym);
  return LMX_OK;
}

int lmx_symbol_retain(lmx_symbol *sym) {
  LMX_ENTER();
  NEED_SYM(sym, "lmx_symbol_retain");
  lmx_sym_retain(sym);
  return LMX_OK;
}

int lmx_symbol_copy(const lmx_symbol *sym, lmx_symbol **out) {
  LMX_ENTER();
  NEED_SYM(sym, "lmx_symbol_copy");
  LMX_NEED(out, "lmx_symbol_copy", "out");
  return lmx_sym_copy(sym, out);
}

int lmx_symbol_group(int n, lmx_symbol *const *syms, lmx_symbol **out) {
  LMX_ENTER();
  LMX_NEED(out, "lmx_symbol_group", "out");
  if (n < 0) return lmx_fail(LMX_ERR_ARG, "lmx_symbol_group: n = %d is negative", n);
  if (n > 0) LMX_NEED(syms, "lmx_symbol_group", "syms");
  for (int i = 0; i < n; i++)
    if (!syms[i]) return lmx_fail(LMX_ERR_ARG, "lmx_symbol_group: symbol %d is NULL", i);
  return lmx_sym_group(n, syms, out);
}

int lmx_symbol_num_outputs(const lmx_symbol *sym, int *n) {
  LMX_ENTER();
  NEED_SYM(sym, "lmx_symbol_num_outputs");
  LMX_NEED(n, "lmx_symbol_num_outputs", "n");
  *n = sym->nout;
  return LMX_OK;
}

int lmx_symbol_get_output(const lmx_symbol *sym, int i, lmx_symbol **out) {
  LMX_ENTER();
  NEED_SYM(sym, "lmx_symbol_get_output");
  LMX_NEED(out, "lmx_symbol_get_output", "out");
  return lmx_sym_output(sym, i, out);
}

int lmx_symbol_get_internals(const lmx_symbol *sym, lmx_symbol **out) {
  LMX_ENTER();
  NEED_SYM(sym, "lmx_symbol_get_internals");
  LMX_NEED(out, "lmx_symbol_get_internals", "out");
  return lmx_sym_internals(sym, out);
}

int lmx_symbol_get_children(const lmx_symbol *sym, lmx_symbol **out) {
  LMX_ENTER();
  NEED_SYM(sym, "lmx_symbol_get_children");
  LMX_NEED(out, "lmx_symbol_get_children", "out");
  return lmx_sym_children(sym, out);
}

int lmx_symbol_name(const lmx_symbol *sym, const char **name) {
  LMX_ENTER();
  NEED_SYM(sym, "lmx_symbol_name");
  LMX_NEED(name, "lmx_symbol_name", "name");
  *name = lmx_sym_name(sym);
  return LMX_OK;
}

int lmx_symbol_list(lmx_symbol *sym, int kind, int *n, const char *const **items) {
  LMX_ENTER();
  NEED_SYM(sym, "lmx_symbol_list");
  LMX_NEED(n, "lmx_symbol_list", "n");
  LMX_NEED(items, "lmx_symbol_list", "items");
  LMX_TRY(lmx_sym_list(sym, kind));
  *n = sym->nlist;
  *items = (const char *const *)sym->list;
  return LMX_OK;
}

int lmx_symbol_get_attr(lmx_symbol *sym, const char *key, const char **value) {
  LMX_ENTER();
  NEED_SYM(sym, "lmx_symbol_get_attr");
  LMX_NEED(key, "lmx_symbol_get_attr", "key");
  LMX_NEED(value, "lmx_symbol_get_attr", "value");
  return lmx_sym_get_attr(sym, key, value);
}

int lmx_symbol_set_attr(lmx_symbol *sym, const char *key, const char *value) {
  LMX_ENTER();
  NEED_SYM(sym, "lmx_symbol_set_attr");
  LMX_NEED(key, "lmx_symbol_set_attr", "key");
  LMX_NEED(value, "lmx_symbol_set_attr", "value");
  return lmx_sym_set_attr(sym, key, value);
}

int lmx_attr_scope_push(int n, const char *const *keys, const char *const *vals) {
  LMX_ENTER();
  if (n < 0) return lmx_fail(LMX_ERR_ARG, "lmx_attr_scope_push: n = %d is negative", n);
  if (n > 0) {
    LMX_NEED(keys, "lmx_attr_scope_push", "keys");
    LMX_NEED(vals, "lmx_attr_scope_push", "vals");
  }
  return lmx_scope_push(n, keys, vals);
}

int lmx_attr_scope_pop(void) {
  LMX_ENTER();
  return lmx_scope_pop();
}

int lmx_name_next(const char *hint, char *buf, int cap) {
  LMX_ENTER();
  LMX_NEED(hint, "lmx_name_next", "hint");
  LMX_NEED(buf, "lmx_name_next", "buf");
  if (cap <= 0) return lmx_fail(LMX_ERR_ARG, "lmx_name_next: cap = %d must be positive", cap);
  return lmx_names_next(hint, buf, (size_t)cap);
}

int lmx_name_reset(void) {
  LMX_ENTER();
  lmx_names_reset();
  return LMX_OK;
}

int lmx_name_manager_new(const char *prefix, lmx_name_manager **out) {
  LMX_ENTER();
  LMX_NEED(out, "lmx_name_manager_new", "out");
  return lmx_names_manager_new(prefix, out);
}

int lmx_name_manager_free(lmx_name_manager *m) {
  lmx_names_manager_release(m);
  return LMX_OK;
}

int lmx_name_manager_enter(lmx_name_manager *m) {
  LMX_ENTER();
  LMX_NEED(m, "lmx_name_manager_enter", "m");
  return lmx_names_enter(m);
}

int lmx_name_manager_exit(void) {
  LMX_ENTER();
  return lmx_names_exit();
}

int lmx_name_manager_next(lmx_name_manager *m, const char *hint, char *buf, int cap) {
  LMX_ENTER();
  LMX_NEED(hint, "lmx_name_manager_next", "hint");
  LMX_NEED(buf, "lmx_name_manager_next", "buf");
  if (cap <= 0) return lmx_fail(LMX_ERR_ARG, "lmx_name_manager_next: cap = %d must be positive", cap);
  return lmx_names_get(m, hint, buf, (size_t)cap);
}

int lmx_symbol_infer_shape(lmx_symbol *sym, int n, const char *const *keys, const int *ndim,
                           const int64_t *dims, int partial, int cap, int *out_ndim,
                           int64_t *out_dims, int *complete) {
  LMX_ENTER();
  const char *fn = "lmx_symbol_infer_shape";
  NEED_SYM(sym, fn);
  LMX_NEED(out_ndim, fn, "out_ndim");
  LMX_NEED(out_dims, fn, "out_dims");
  LMX_NEED(complete, fn, "complete");
  if (n < 0 || cap < 0) return lmx_fail(LMX_ERR_ARG, "%s: negative count", fn);
  if (n > 0) {
    LMX_NEED(ndim, fn, "ndim");
    LMX_NEED(dims, fn, "dims");
  }
  lmx_shape *given = lmx_calloc((size_t)n + 1, sizeof *given);
  lmx_shape *res = lmx_calloc((size_t)cap + 1, sizeof *res);
  int rc = (!given || !res) ? lmx_fail_nomem("shape inference", ((size_t)n + cap) * sizeof *res)
                            : LMX_OK;
  for (int i = 0; i < n && rc == LMX_OK; i++) {
    if (ndim[i] < 0) continue; /* unknown */
    char what[96];
    snprintf(what, sizeof what, "infer_shape: shape of '%s'", keys && keys[i] ? keys[i] : "?");
    rc = lmx_shape_make(&given[i], dims + (size_t)i * LMX_MAX_NDIM, ndim[i], what);
  }
  int comp = 0;
  if (rc == LMX_OK)
    rc = lmx_infer_symbol_shapes(sym, n, keys, given, partial, cap, res, &comp);
  for (int k = 0; rc == LMX_OK && k < cap; k++) {
    out_ndim[k] = res[k].ndim;
    for (int d = 0; d < res[k].ndim; d++) out_dims[(size_t)k * LMX_MAX_NDIM + d] = res[k].dim[d];
  }
  if (rc == LMX_OK) *complete = comp;
  lmx_free(given);
  lmx_free(res);
  return rc;
}

int lmx_symbol_infer_type(lmx_symbol *sym, int n, const char *const *keys, const int *dtypes,
                          int partial, int cap, int *out_dtypes, int *complete) {
  LMX_ENTER();
  const char *fn = "lmx_symbol_infer_type";
  NEED_SYM(sym, fn);
  LMX_NEED(out_dtypes, fn, "out_dtypes");
  LMX_NEED(complete, fn, "complete");
  if (n < 0 || cap < 0) return lmx_fail(LMX_ERR_ARG, "%s: negative count", fn);
  if (n > 0) LMX_NEED(dtypes, fn, "dtypes");
  for (int i = 0; i < n; i++)
    if (dtypes[i] != -1 && !lmx_dtype_valid(dtypes[i]))
      return lmx_fail(LMX_ERR_ARG, "%s: dtype %d of input %d is not a dtype code", fn,
                      dtypes[i], i);
  int *res = lmx_alloc(((size_t)cap + 1) * sizeof *res);
  if (!res) return lmx_fail_nomem("type inference", (size_t)cap * sizeof *res);
  int comp = 0;
  int rc = lmx_infer_symbol_types(sym, n, keys, dtypes, partial, cap, res, &comp);
  if (rc == LMX_OK) {
    memcpy(out_dtypes, res, (size_t)cap * sizeof *res);
    *complete = comp;
  }
  lmx_free(res);
  return rc;
}

int lmx_symbol_tojson(lmx_symbol *sym, const char **json) {
  LMX_ENTER();
  NEED_SYM(sym, "lmx_symbol_tojson");
  LMX_NEED(json, "lmx_symbol_tojson", "json");
  LMX_TRY(lmx_sym_tojson(sym));
  *json = lmx_sbuf_str(&sym->text);
  return LMX_OK;
}

int lmx_symbol_debug_str(lmx_symbol *sym, const char **text) {
  LMX_ENTER();
  NEED_SYM(sym, "lmx_symbol_debug_str");
  LMX_NEED(text, "lmx_symbol_debug_str", "text");
  LMX_TRY(lmx_sym_debug_str(sym));
  *text = lmx_sbuf_str(&sym->text);
  return LMX_OK;
}

int lmx_symbol_save(lmx_symbol *sym, const char *path) {
  LMX_ENTER();
  NEED_SYM(sym, "lmx_symbol_save");
  LMX_NEED(path, "lmx_symbol_save", "path");
  LMX_TRY(lmx_sym_tojson(sym));
  int rc = lmx_atomic_write_file(path, lmx_sbuf_str(&sym->text), sym->text.len);
  return rc == LMX_OK ? LMX_OK : lmx_fail_prefix(rc, "lmx_symbol_save: ");
}

int lmx_symbol_from_json(const char *text, size_t len, lmx_symbol **out) {
  LMX_ENTER();
  LMX_NEED(text, "lmx_symbol_from_json", "text");
  LMX_NEED(out, "lmx_symbol_from_json", "out");
  return lmx_sym_from_json(text, len, out);
}

int lmx_symbol_load(const char *path, lmx_symbol **out) {
  LMX_ENTER();
  LMX_NEED(path, "lmx_symbol_load", "path");
  LMX_NEED(out, "lmx_symbol_load", "out");
  FILE *f = fopen(path, "rb");
  if (!f) return lmx_fail(LMX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  lmx_sbuf sb = LMX_SBUF_INIT;
  char chunk[65536];
  size_t got;
  while ((got = fread(chunk, 1, sizeof chunk, f)) > 0 && !sb.failed && sb.len < ((size_t)257 << 20))
    lmx_sbuf_addn(&sb, chunk, got);
  int err = ferror(f);
  fclose(f);
  int rc;
  if (err) rc = lmx_fail(LMX_ERR_IO, "cannot read '%s'", path);
  else if (sb.failed) rc = lmx_fail_nomem("symbol file text", sb.len);
  else rc = lmx_sym_from_json(lmx_sbuf_str(&sb), sb.len, out);
  if (rc != LMX_OK && !err && !sb.failed) rc = lmx_fail_prefix(rc, "'%s': ", path);
  lmx_sbuf_release(&sb);
  return rc;
}
