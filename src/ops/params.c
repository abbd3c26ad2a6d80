/* params.c — declarative parameter parsing and MXNet-canonical formatting.
 *
 * An op's parameters are a table of lmx_param_field rows; a parsed block is the op's
 * param struct, allocated with lmx_alloc, defaults applied first, then each key/value.
 * Accepted string forms follow dmlc::Parameter as driven from Python: ints "3"; floats
 * "0.5", "1e-3", "inf"; bools True/False/true/false/1/0; enums by name; tuples "(2, 2)",
 * "(2,)", "[2,2]", "()" and a bare "2" (a 1-tuple); "None" where a field is optional.
 * Keys "__x__" are attributes, skipped. Formatting gives Python's str() of the value:
 * "128", "True", "(2, 2)", "(2,)", shortest round-trip floats ("0.5", "0.001", "1e-05"),
 * enum names, "None". Strings are the only fields owning memory (freed by params_free).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

#include "op_impl.h"

typedef struct {
  const lmx_op *op;
  const char *node;
  const lmx_param_field *f;
} pctx;

static int pfail(const pctx *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int pfail(const pctx *p, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (p->node && p->node[0])
    return lmx_fail(LMX_ERR_ARG, "%s '%s': parameter '%s': %s", p->op->name, p->node,
                    p->f->name, msg);
  return lmx_fail(LMX_ERR_ARG, "%s: parameter '%s': %s", p->op->name, p->f->name, msg);
}

static const char *skip_ws(const char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\n') s++;
  return s;
}

/* Parses a whole token [s, e) as an int64; 0 on success. */
static int parse_i64(const char *s, const char *e, int64_t *out) {
  char tmp[64];
  while (s < e && (*s == ' ' || *s == '\t')) s++;
  while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
  size_t n = (size_t)(e - s);
  if (n == 0 || n >= sizeof tmp) return -1;
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  if (n > 1 && (tmp[n - 1] == 'L' || tmp[n - 1] == 'l')) tmp[--n] = '\0'; /* Python 2 long */
  char *end;
  errno = 0;
  long long v = strtoll(tmp, &end, 10);
  if (*end || errno) return -1;
  *out = v;
  return 0;
}

static int parse_f64(const char *s, const char *e, double *out) {
  char tmp[64];
  while (s < e && (*s == ' ' || *s == '\t')) s++;
  while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
  size_t n = (size_t)(e - s);
  if (n == 0 || n >= sizeof tmp) return -1;
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  char *end;
  double v = strtod(tmp, &end);
  if (*end) return -1;
  *out = v;
  return 0;
}

static int is_none(const char *s, const char *e) {
  while (s < e && *s == ' ') s++;
  while (e > s && e[-1] == ' ') e--;
  return e - s == 4 && memcmp(s, "None", 4) == 0;
}

/* Splits a tuple "(a, b)" / "[a,b]" / "a" into at most LMX_MAX_NDIM items and calls
 * `item` on each. Returns the count, -1 on bad syntax, -2 when too long. */
typedef int (*item_fn)(const char *s, const char *e, int i, void *dst);
static int parse_tuple(const char *v, item_fn item, void *dst) {
  const char *s = skip_ws(v);
  char close = 0;
  if (*s == '(') close = ')';
  if (*s == '[') close = ']';
  if (close) s++;
  const char *end = s + strlen(s);
  while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n')) end--;
  if (close) {
    if (end == s || end[-1] != close) return -1;
    end--;
  }
  int n = 0;
  const char *p = skip_ws(s);
  if (p == end) return close ? 0 : -1;
  while (p < end) {
    const char *q = p;
    while (q < end && *q != ',') q++;
    if (q == p || skip_ws(p) == q) {
      if (q == end && n > 0) break; /* trailing comma "(2,)" */
      return -1;
    }
    if (n >= LMX_MAX_NDIM) return -2;
    if (item(p, q, n, dst) != 0) return -1;
    n++;
    p = q < end ? q + 1 : q;
    if (q < end && skip_ws(p) == end) break;
  }
  if (!close && n != 1) return n > 1 ? n : -1;
  return n;
}

static int item_int(const char *s, const char *e, int i, void *dst) {
  return parse_i64(s, e, &((lmx_shape *)dst)->dim[i]);
}
static int item_opt_int(const char *s, const char *e, int i, void *dst) {
  if (is_none(s, e)) {
    ((lmx_shape *)dst)->dim[i] = LMX_PARAM_NONE_INT;
    return 0;
  }
  return parse_i64(s, e, &((lmx_shape *)dst)->dim[i]);
}
static int item_float(const char *s, const char *e, int i, void *dst) {
  return parse_f64(s, e, &((lmx_ftuple *)dst)->v[i]);
}

static int check_bounds(const pctx *p, double v) {
  const lmx_param_field *f = p->f;
  if (f->lo < f->hi && !(v >= f->lo && v <= f->hi)) /* NaN is out of every range */
    return pfail(p, "value %.17g is out of range [%g, %g]", v, f->lo, f->hi);
  return LMX_OK;
}

static int enum_index(const char *choices, const char *v) {
  size_t n = strlen(v);
  int i = 0;
  for (const char *c = choices; *c; i++) {
    const char *bar = strchr(c, '|');
    size_t len = bar ? (size_t)(bar - c) : strlen(c);
    if (len == n && memcmp(c, v, n) == 0) return i;
    if (!bar) break;
    c = bar + 1;
  }
  return -1;
}

static int parse_bool(const pctx *p, const char *v, int *out) {
  const char *s = skip_ws(v);
  if (!strcmp(s, "True") || !strcmp(s, "true") || !strcmp(s, "1")) *out = 1;
  else if (!strcmp(s, "False") || !strcmp(s, "false") || !strcmp(s, "0")) *out = 0;
  else return pfail(p, "expected a boolean (True, False, true, false, 1, 0), got '%s'", v);
  return LMX_OK;
}

static int parse_shape_field(const pctx *p, const char *v, lmx_shape *out, int opt_items) {
  lmx_shape t = {0, {0}};
  if (is_none(v, v + strlen(v))) {
    if (!p->f->def || strcmp(p->f->def, "None") != 0)
      return pfail(p, "expected a tuple of integers, got 'None' (the parameter is not "
                      "optional)");
    out->ndim = -1;
    return LMX_OK;
  }
  int n = parse_tuple(v, opt_items ? item_opt_int : item_int, &t);
  if (n == -2) return pfail(p, "tuple '%s' has more than %d entries", v, LMX_MAX_NDIM);
  if (n < 0)
    return pfail(p, "expected a tuple of integers%s like (2, 2) or 2, got '%s'",
                 opt_items ? " or None" : "", v);
  t.ndim = n;
  for (int i = 0; i < n; i++)
    if (t.dim[i] != LMX_PARAM_NONE_INT) LMX_TRY(check_bounds(p, (double)t.dim[i]));
  *out = t;
  return LMX_OK;
}

static int parse_floats_field(const pctx *p, const char *v, lmx_ftuple *out) {
  lmx_ftuple t = {0, {0}};
  if (is_none(v, v + strlen(v)) && p->f->def && !strcmp(p->f->def, "None")) {
    out->n = -1;
    return LMX_OK;
  }
  int n = parse_tuple(v, item_float, &t);
  if (n < 0) return pfail(p, "expected a tuple of numbers like (0.5, 1.0), got '%s'", v);
  t.n = n;
  *out = t;
  return LMX_OK;
}

static int parse_scalar(const pctx *p, const char *v, char *dst) {
  const char *end = v + strlen(v);
  switch (p->f->type) {
  case LMX_PT_OPT_INT:
    if (is_none(v, end)) {
      *(int64_t *)dst = LMX_PARAM_NONE_INT;
      return LMX_OK;
    }
    /* fall through */
  case LMX_PT_INT: {
    int64_t x;
    if (parse_i64(v, end, &x) != 0) return pfail(p, "expected an integer, got '%s'", v);
    LMX_TRY(check_bounds(p, (double)x));
    *(int64_t *)dst = x;
    return LMX_OK;
  }
  case LMX_PT_OPT_FLOAT:
    if (is_none(v, end)) {
      *(double *)dst = NAN;
      return LMX_OK;
    }
    /* fall through */
  default: {
    double x;
    if (parse_f64(v, end, &x) != 0) return pfail(p, "expected a number, got '%s'", v);
    LMX_TRY(check_bounds(p, x));
    *(double *)dst = x;
    return LMX_OK;
  }
  }
}

static int parse_enum(const pctx *p, const char *v, int *out) {
  int k = enum_index(p->f->choices, v);
  if (k < 0) {
    char list[256];
    size_t n = 0;
    for (const char *c = p->f->choices; *c && n + 3 < sizeof list; c++)
      n += (size_t)snprintf(list + n, sizeof list - n, *c == '|' ? ", " : "%c", *c);
    return pfail(p, "expected one of %s, got '%s'", list, v);
  }
  *out = k;
  return LMX_OK;
}

static int parse_dtype(const pctx *p, const char *v, int *out) {
  if (is_none(v, v + strlen(v)) && p->f->def && !strcmp(p->f->def, "None")) {
    *out = -1;
    return LMX_OK;
  }
  for (int i = 0; i < LMX_NUM_DTYPES; i++) {
    if (!strcmp(v, lmx_dtype_str(i))) {
      *out = i;
      return LMX_OK;
    }
  }
  return pfail(p, "expected a dtype (float32, float64, float16, uint8, int32, int8, int64, "
                  "bfloat16), "
                  "got '%s'", v);
}

static int parse_field(const pctx *p, const char *v, void *block) {
  char *dst = (char *)block + p->f->offset;
  switch (p->f->type) {
  case LMX_PT_BOOL: return parse_bool(p, v, (int *)dst);
  case LMX_PT_OPT_BOOL:
    if (is_none(v, v + strlen(v))) {
      *(int *)dst = -1;
      return LMX_OK;
    }
    return parse_bool(p, v, (int *)dst);
  case LMX_PT_ENUM: return parse_enum(p, v, (int *)dst);
  case LMX_PT_SHAPE: return parse_shape_field(p, v, (lmx_shape *)dst, 0);
  case LMX_PT_OPT_INTS: return parse_shape_field(p, v, (lmx_shape *)dst, 1);
  case LMX_PT_FLOATS: return parse_floats_field(p, v, (lmx_ftuple *)dst);
  case LMX_PT_DTYPE: return parse_dtype(p, v, (int *)dst);
  case LMX_PT_STRING: {
    char *s = lmx_strdup(v);
    if (!s) return lmx_fail_nomem("parameter string", strlen(v) + 1);
    lmx_free(*(char **)dst);
    *(char **)dst = s;
    return LMX_OK;
  }
  default: return parse_scalar(p, v, dst);
  }
}

static int is_attr_key(const char *k) {
  size_t n = strlen(k);
  return n >= 4 && k[0] == '_' && k[1] == '_' && k[n - 1] == '_' && k[n - 2] == '_';
}

static int find_field(const lmx_op *op, const char *key) {
  for (int j = 0; j < op->num_params; j++)
    if (!strcmp(op->params[j].name, key)) return j;
  return -1;
}

static int fail_unknown(const lmx_op *op, const char *node, const char *key) {
  char known[512];
  size_t n = 0;
  known[0] = '\0';
  for (int j = 0; j < op->num_params && n + 2 < sizeof known; j++)
    n += (size_t)snprintf(known + n, sizeof known - n, j ? ", %s" : "%s", op->params[j].name);
  const char *lead = op->num_params ? "known: " : "it takes no parameters";
  if (node && node[0])
    return lmx_fail(LMX_ERR_ARG, "%s '%s': unknown parameter '%s' (%s%s)", op->name, node,
                    key, lead, known);
  return lmx_fail(LMX_ERR_ARG, "%s: unknown parameter '%s' (%s%s)", op->name, key, lead,
                  known);
}

/* Applies defaults; marks required fields in `seen` as missing (0). */
static int apply_defaults(const lmx_op *op, const char *node, void *block) {
  for (int j = 0; j < op->num_params; j++) {
    const lmx_param_field *f = &op->params[j];
    if (!f->def) continue;
    pctx p = {op, node, f};
    LMX_TRY(parse_field(&p, f->def, block));
  }
  return LMX_OK;
}

static int parse_all(const lmx_op *op, const char *node, const char *const *keys,
                     const char *const *vals, int n, void *block) {
  unsigned char seen[64] = {0};
  LMX_TRY(apply_defaults(op, node, block));
  for (int i = 0; i < n; i++) {
    if (!keys[i] || is_attr_key(keys[i])) continue;
    int j = find_field(op, keys[i]);
    if (j < 0) return fail_unknown(op, node, keys[i]);
    pctx p = {op, node, &op->params[j]};
    if (!vals[i]) return pfail(&p, "value must not be NULL");
    LMX_TRY(parse_field(&p, vals[i], block));
    if (j < 64) seen[j] = 1;
  }
  for (int j = 0; j < op->num_params && j < 64; j++) {
    if (op->params[j].def || seen[j]) continue;
    if (node && node[0])
      return lmx_fail(LMX_ERR_ARG, "%s '%s': required parameter '%s' is missing", op->name,
                      node, op->params[j].name);
    return lmx_fail(LMX_ERR_ARG, "%s: required parameter '%s' is missing", op->name,
                    op->params[j].name);
  }
  if (op->param_check) {
    lmx_op_ctx c = {.op = op, .param = block, .node = node};
    LMX_TRY(op->param_check(&c, block));
  }
  return LMX_OK;
}

int lmx_op_params_parse(const lmx_op *op, const char *node, const char *const *keys,
                        const char *const *vals, int n, void **out) {
  if (!op || !out || n < 0 || (n > 0 && (!keys || !vals)))
    return lmx_fail(LMX_ERR_ARG, "lmx_op_params_parse: bad arguments");
  if (op->param_parse) return op->param_parse(op, node, keys, vals, n, out);
  size_t size = op->param_size ? op->param_size : 1;
  void *block = lmx_calloc(1, size);
  if (!block) return lmx_fail_nomem("operator parameters", size);
  int rc = parse_all(op, node, keys, vals, n, block);
  if (rc != LMX_OK) {
    lmx_op_params_free(op, block);
    return rc;
  }
  *out = block;
  return LMX_OK;
}

int lmx_op_params_set_number(const lmx_op *op, void *param, const char *key, double v) {
  int j = find_field(op, key);
  if (j < 0) return fail_unknown(op, NULL, key);
  pctx p = {op, NULL, &op->params[j]};
  char *dst = (char *)param + p.f->offset;
  int t = p.f->type;
  if (t != LMX_PT_FLOAT && t != LMX_PT_OPT_FLOAT && t != LMX_PT_INT && t != LMX_PT_OPT_INT)
    return pfail(&p, "not a numeric parameter; prepare a new call to change it");
  if ((t == LMX_PT_INT || t == LMX_PT_OPT_INT) && v != floor(v))
    return pfail(&p, "expected an integer, got %g", v);
  if ((t == LMX_PT_INT || t == LMX_PT_OPT_INT) && !(fabs(v) < 0x1p63))
    return pfail(&p, "value %g is out of the int64 range", v);
  LMX_TRY(check_bounds(&p, v));
  if (t == LMX_PT_FLOAT || t == LMX_PT_OPT_FLOAT) *(double *)dst = v;
  else *(int64_t *)dst = (int64_t)v;
  return LMX_OK;
}

void lmx_op_params_free(const lmx_op *op, void *param) {
  if (!param) return;
  if (op && op->param_free) {
    op->param_free(param);
    return;
  }
  for (int j = 0; op && j < op->num_params; j++)
    if (op->params[j].type == LMX_PT_STRING)
      lmx_free(*(char **)((char *)param + op->params[j].offset));
  lmx_free(param);
}

/* ---- formatting --------------------------------------------------------------------- */

/* Python's repr of a float: shortest digits that round-trip; fixed notation for
 * exponents in [-4, 16) with at least one decimal; otherwise "1e-05" / "1.5e+16". */
static void format_double(double v, char *buf, size_t cap) {
  if (isnan(v)) { snprintf(buf, cap, "nan"); return; }
  if (isinf(v)) { snprintf(buf, cap, v < 0 ? "-inf" : "inf"); return; }
  char e[40];
  int prec = 1;
  for (; prec <= 17; prec++) {
    snprintf(e, sizeof e, "%.*e", prec - 1, v);
    if (strtod(e, NULL) == v) break;
  }
  int exp10 = atoi(strchr(e, 'e') + 1);
  if (exp10 >= -4 && exp10 < 16) {
    int decimals = prec - 1 - exp10;
    snprintf(buf, cap, "%.*f", decimals > 0 ? decimals : 0, v);
    if (!strchr(buf, '.')) strncat(buf, ".0", cap - strlen(buf) - 1);
  } else {
    snprintf(buf, cap, "%s", e);
  }
}

static void format_tuple(const lmx_shape *s, int opt, char *buf, size_t cap) {
  if (s->ndim < 0) { snprintf(buf, cap, "None"); return; }
  size_t n = (size_t)snprintf(buf, cap, "(");
  for (int i = 0; i < s->ndim && n < cap; i++) {
    if (opt && s->dim[i] == LMX_PARAM_NONE_INT)
      n += (size_t)snprintf(buf + n, cap - n, i ? ", None" : "None");
    else
      n += (size_t)snprintf(buf + n, cap - n, i ? ", %lld" : "%lld", (long long)s->dim[i]);
  }
  if (n < cap) snprintf(buf + n, cap - n, s->ndim == 1 ? ",)" : ")");
}

static void format_ftuple(const lmx_ftuple *t, char *buf, size_t cap) {
  if (t->n < 0) { snprintf(buf, cap, "None"); return; }
  size_t n = (size_t)snprintf(buf, cap, "(");
  for (int i = 0; i < t->n && n < cap; i++) {
    char one[40];
    format_double(t->v[i], one, sizeof one);
    n += (size_t)snprintf(buf + n, cap - n, i ? ", %s" : "%s", one);
  }
  if (n < cap) snprintf(buf + n, cap - n, t->n == 1 ? ",)" : ")");
}

static void format_enum(const char *choices, int k, char *buf, size_t cap) {
  const char *c = choices;
  for (int i = 0; i < k && c; i++) {
    c = strchr(c, '|');
    if (c) c++;
  }
  if (!c) { snprintf(buf, cap, "%d", k); return; }
  const char *bar = strchr(c, '|');
  int len = bar ? (int)(bar - c) : (int)strlen(c);
  snprintf(buf, cap, "%.*s", len, c);
}

void lmx_op_param_format(const lmx_param_field *f, const void *param, char *buf, size_t cap) {
  if (!buf || cap == 0) return;
  const char *src = (const char *)param + f->offset;
  switch (f->type) {
  case LMX_PT_INT: snprintf(buf, cap, "%lld", (long long)*(const int64_t *)src); break;
  case LMX_PT_OPT_INT: {
    int64_t v = *(const int64_t *)src;
    if (v == LMX_PARAM_NONE_INT) snprintf(buf, cap, "None");
    else snprintf(buf, cap, "%lld", (long long)v);
    break;
  }
  case LMX_PT_OPT_FLOAT:
    if (isnan(*(const double *)src)) { snprintf(buf, cap, "None"); break; }
    /* fall through */
  case LMX_PT_FLOAT: format_double(*(const double *)src, buf, cap); break;
  case LMX_PT_BOOL: snprintf(buf, cap, *(const int *)src ? "True" : "False"); break;
  case LMX_PT_OPT_BOOL: {
    int b = *(const int *)src;
    snprintf(buf, cap, b < 0 ? "None" : b ? "True" : "False");
    break;
  }
  case LMX_PT_ENUM: format_enum(f->choices, *(const int *)src, buf, cap); break;
  case LMX_PT_SHAPE: format_tuple((const lmx_shape *)src, 0, buf, cap); break;
  case LMX_PT_OPT_INTS: format_tuple((const lmx_shape *)src, 1, buf, cap); break;
  case LMX_PT_FLOATS: format_ftuple((const lmx_ftuple *)src, buf, cap); break;
  case LMX_PT_DTYPE: {
    int dt = *(const int *)src;
    snprintf(buf, cap, "%s", dt < 0 ? "None" : lmx_dtype_str(dt));
    break;
  }
  case LMX_PT_STRING: {
    const char *s = *(const char *const *)src;
    snprintf(buf, cap, "%s", s ? s : "None");
    break;
  }
  }
}
