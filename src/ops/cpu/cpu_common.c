/* cpu_common.c — helpers shared by the CPU glue files: parameters read by name through
 * the op's field table, and the checks that stand between a tensor and a kernel.
 *
 * Reading by name costs a short linear scan over a handful of fields (tens of ns) and
 * keeps the glue independent of the param structs, which are private to the
 * descriptor files and may change layout.
 */
#include <math.h>
#include <string.h>

#include "../../core/status.h"
#include "../../tensor/dtype.h"
#include "../op_impl.h"
#include "cpu_ops.h"

static const lmx_param_field *find_field(const lmx_op_ctx *c, const char *name,
                                         const char **src) {
  if (!c || !c->op || !c->param) return NULL;
  for (int i = 0; i < c->op->num_params; i++) {
    const lmx_param_field *f = &c->op->params[i];
    if (strcmp(f->name, name) == 0) {
      *src = (const char *)c->param + f->offset;
      return f;
    }
  }
  return NULL;
}

double lmx_cpu_pnum(const lmx_op_ctx *c, const char *name, double def) {
  const char *p;
  const lmx_param_field *f = find_field(c, name, &p);
  if (!f) return def;
  switch (f->type) {
    case LMX_PT_INT: return (double)*(const int64_t *)p;
    case LMX_PT_OPT_INT: {
      int64_t v = *(const int64_t *)p;
      return v == LMX_PARAM_NONE_INT ? def : (double)v;
    }
    case LMX_PT_FLOAT: return *(const double *)p;
    case LMX_PT_OPT_FLOAT: {
      double v = *(const double *)p;
      return isnan(v) ? def : v;
    }
    case LMX_PT_BOOL:
    case LMX_PT_ENUM: return (double)*(const int *)p;
    case LMX_PT_DTYPE:
    case LMX_PT_OPT_BOOL: {
      int v = *(const int *)p;
      return v < 0 ? def : (double)v;
    }
    default: return def;
  }
}

int64_t lmx_cpu_pint(const lmx_op_ctx *c, const char *name, int64_t def) {
  return (int64_t)lmx_cpu_pnum(c, name, (double)def);
}

int lmx_cpu_penum(const lmx_op_ctx *c, const char *name, const char *choice) {
  const char *p;
  const lmx_param_field *f = find_field(c, name, &p);
  if (!f || f->type != LMX_PT_ENUM || !f->choices) return 0;
  int k = *(const int *)p;
  const char *s = f->choices;
  size_t len = strlen(choice);
  for (int i = 0; i < k && s; i++) {
    s = strchr(s, '|');
    if (s) s++;
  }
  return s && strncmp(s, choice, len) == 0 && (s[len] == '|' || s[len] == '\0');
}

lmx_shape lmx_cpu_pshape(const lmx_op_ctx *c, const char *name) {
  const char *p;
  lmx_shape none = {-1, {0}};
  const lmx_param_field *f = find_field(c, name, &p);
  if (!f || (f->type != LMX_PT_SHAPE && f->type != LMX_PT_OPT_INTS)) return none;
  lmx_shape s;
  memcpy(&s, p, sizeof s);
  return s;
}

lmx_ftuple lmx_cpu_pfloats(const lmx_op_ctx *c, const char *name) {
  const char *p;
  lmx_ftuple none = {-1, {0}};
  const lmx_param_field *f = find_field(c, name, &p);
  if (!f || f->type != LMX_PT_FLOATS) return none;
  lmx_ftuple t;
  memcpy(&t, p, sizeof t);
  return t;
}

int lmx_cpu_fail_dtype(const lmx_op_ctx *c, const lmx_tensor *t, const char *what) {
  return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected float32 or float64 on the CPU, got %s",
                     what, lmx_dtype_str(t->dtype));
}

int lmx_cpu_check_float(const lmx_op_ctx *c, const lmx_tensor *t, const char *what) {
  if (t->dtype != LMX_FLOAT32 && t->dtype != LMX_FLOAT64) return lmx_cpu_fail_dtype(c, t, what);
  return LMX_OK;
}

int lmx_cpu_fail_req_add(const lmx_op_ctx *c, const char *what) {
  return lmx_op_fail(c, LMX_ERR_UNSUPPORTED,
                     "%s: req 'add' is not supported for this forward output on the CPU", what);
}

void lmx_cpu_zero_grad(const lmx_tensor *t, int req) {
  if (req == LMX_REQ_NULL || req == LMX_REQ_ADD || !t->data) return;
  size_t n = (size_t)lmx_glue_size(t) * (size_t)lmx_dtype_size(t->dtype);
  memset(t->data, 0, n);
}

