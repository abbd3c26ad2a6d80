/* sort.c — topk, sort and argsort (issue 14), with their own kernels (kernels/cpu/sort.c,
 * kernels/cuda/sort.cu; glue src/ops/{cpu,cuda}/sort.c).
 *
 * Each sorts rows along `axis` (None: the flattened array) in descending or ascending
 * order; ties keep their original order (the lower index first) in both directions.
 * topk returns the first k of each row as values, indices (in `dtype`), a 0/1 mask of
 * the input's shape, or both values and indices; sort returns the sorted values, argsort
 * the indices. The values' gradient scatters the head gradient back to the picked
 * positions (zero elsewhere); indices and masks have no gradient, as in MXNet.
 * MXNet 1.9: src/operator/tensor/ordering_op(-inl.h) (TopKParam, SortParam, ArgSortParam).
 */
#include "glue.h"
#include "op_impl.h"
#include "sort_params.h"

enum { G = LMX_NEEDS_OUT_GRADS };

extern const lmx_op lmx_op_topk, lmx_op_sort, lmx_op_argsort;

#define DTYPE_DOC                                                                             \
  "DType of the output indices when ret_typ is \"indices\" or \"both\". An error will be "   \
  "raised if the selected data type cannot precisely represent the indices."

static const lmx_param_field topk_fields[] = {
    LMX_PF(lmx_sort_param, axis, LMX_PT_OPT_INT, "-1", NULL, 0, 0,
           "Axis along which to choose the top k indices. If not given, the flattened array "
           "is used. Default is -1."),
    LMX_PF(lmx_sort_param, k, LMX_PT_INT, "1", NULL, -1e9, 1e18,
           "Number of top elements to select, should be always smaller than or equal to the "
           "element number in the given axis. A global sort is performed if set k < 1."),
    LMX_PF(lmx_sort_param, ret_typ, LMX_PT_ENUM, "indices", LMX_TOPK_CHOICES, 0, 0,
           "The return type.\n \"value\" means to return the top k values, \"indices\" means "
           "to return the indices of the top k values, \"mask\" means to return a mask array "
           "containing 0 and 1. 1 means the top k values. \"both\" means to return a list of "
           "both values and indices of top k elements."),
    LMX_PF(lmx_sort_param, is_ascend, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Whether to choose k largest or k smallest elements. Top K largest elements will "
           "be chosen if set to false."),
    LMX_PF(lmx_sort_param, dtype, LMX_PT_DTYPE, "float32", NULL, 0, 0,
           DTYPE_DOC),
};

static const lmx_param_field sort_fields[] = {
    LMX_PF(lmx_sort_param, axis, LMX_PT_OPT_INT, "-1", NULL, 0, 0,
           "Axis along which to choose sort the input tensor. If not given, the flattened "
           "array is used. Default is -1."),
    LMX_PF(lmx_sort_param, is_ascend, LMX_PT_BOOL, "True", NULL, 0, 0,
           "Whether to sort in ascending or descending order."),
};

static const lmx_param_field argsort_fields[] = {
    LMX_PF(lmx_sort_param, axis, LMX_PT_OPT_INT, "-1", NULL, 0, 0,
           "Axis along which to sort the input tensor. If not given, the flattened array is "
           "used. Default is -1."),
    LMX_PF(lmx_sort_param, is_ascend, LMX_PT_BOOL, "True", NULL, 0, 0,
           "Whether to sort in ascending or descending order."),
    LMX_PF(lmx_sort_param, dtype, LMX_PT_DTYPE, "float32", NULL, 0, 0,
           "DType of the output indices. It is only valid when ret_typ is \"indices\" or "
           "\"both\". An error will be raised if the selected data type cannot precisely "
           "represent the indices."),
};

/* What a call returns: topk's ret_typ, sort's values, argsort's indices. */
static int mode_of(const lmx_op *op, const lmx_sort_param *p) {
  return op == &lmx_op_topk ? p->ret_typ : op == &lmx_op_sort ? LMX_TOPK_VALUE
                                                               : LMX_TOPK_INDICES;
}

/* MXNet's index dtypes: float16, float32, float64, int32, int64, uint8 */
static int sort_check(const lmx_op_ctx *c, void *param) {
  const lmx_sort_param *p = param;
  int d = p->dtype;
  if (c->op == &lmx_op_sort) return LMX_OK;
  if (d != LMX_FLOAT16 && d != LMX_FLOAT32 && d != LMX_FLOAT64 && d != LMX_INT32 &&
      d != LMX_INT64 && d != LMX_UINT8)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'dtype': expected one of float16, float32, "
                       "float64, int32, int64, uint8, got %s",
                       d < 0 ? "None" : lmx_dtype_str(d));
  return LMX_OK;
}

static int topk_num_outputs(const void *param) {
  return param && ((const lmx_sort_param *)param)->ret_typ == LMX_TOPK_BOTH ? 2 : 1;
}

static void topk_output_name(const void *param, int i, char *buf, size_t cap) {
  snprintf(buf, cap, "%s", topk_num_outputs(param) == 2 ? (i ? "indices" : "value")
                                                        : "output");
}

/* the row length along the axis and its index (-1: None, flattened) */
static int row_of(const lmx_op_ctx *c, const lmx_shape *s, int *a, int64_t *n) {
  const lmx_sort_param *p = c->param;
  if (p->axis == LMX_PARAM_NONE_INT) return *a = -1, *n = lmx_shape_size(s), LMX_OK;
  if (s->ndim < 1) return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data' has no dims");
  LMX_TRY(lmx_op_axis(c, "axis", p->axis, s->ndim, a));
  *n = s->dim[*a];
  return LMX_OK;
}

static int k_of(const lmx_op_ctx *c, int64_t n, int64_t *k) {
  const lmx_sort_param *p = c->param;
  *k = c->op != &lmx_op_topk || p->k < 1 ? n : p->k;
  if (*k > n)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "parameter 'k': expected at most %lld (the length "
                       "of the sorted axis), got %lld", (long long)n, (long long)*k);
  return LMX_OK;
}

static int sort_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                            int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)aux, (void)naux;
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  int a;
  int64_t n, k;
  LMX_TRY(row_of(c, &in[0], &a, &n));
  LMX_TRY(k_of(c, n, &k));
  lmx_shape o = in[0];
  if (mode_of(c->op, c->param) != LMX_TOPK_MASK) {
    if (a < 0) o = LMX_SHP(k);
    else o.dim[a] = k;
  }
  for (int i = 0; i < nout; i++) LMX_TRY(lmx_out_assign(c, out, i, &o));
  return LMX_OK;
}

static int sort_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout,
                           int *aux, int naux) {
  (void)nin, (void)aux, (void)naux;
  const lmx_sort_param *p = c->param;
  int m = mode_of(c->op, p);
  int idx = m == LMX_TOPK_INDICES ? 0 : m == LMX_TOPK_BOTH ? 1 : -1;
  if (idx >= 0) LMX_TRY(lmx_dtype_assign(c, &out[idx], p->dtype, "output 'indices'"));
  if (idx == 0 || nout < 1) return LMX_OK;
  if (in[0] < 0 && out[0] >= 0) in[0] = out[0];
  return in[0] < 0 ? LMX_OK : lmx_dtype_assign(c, &out[0], in[0], "output");
}

/* the largest index dtype dt holds exactly (MXNet refuses a dtype that cannot) */
static double index_limit(int dt) {
  switch (dt) {
  case LMX_FLOAT16: return 2048;
  case LMX_UINT8: return 255;
  case LMX_INT8: return 127;
  case LMX_FLOAT32: return 16777216;
  case LMX_INT32: return 2147483647.0;
  default: return 9007199254740992.0;
  }
}

int lmx_sort_make_plan(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *out,
                       int nout, int bwd, lmx_sort_plan *p) {
  int a;
  p->mode = mode_of(c->op, c->param);
  p->asc = ((const lmx_sort_param *)c->param)->is_ascend;
  LMX_TRY(row_of(c, &x->shape, &a, &p->n));
  LMX_TRY(k_of(c, p->n, &p->k));
  if (a < 0) p->outer = 1, p->inner = 1;
  else p->outer = lmx_glue_outer(&x->shape, a), p->inner = lmx_glue_inner(&x->shape, a);
  const char *xn = "input 'data'";
  LMX_TRY(lmx_glue_check_size(c, x, lmx_glue_size(x), xn));
  int64_t want = p->mode == LMX_TOPK_MASK ? p->outer * p->n * p->inner
                                          : p->outer * p->k * p->inner;
  for (int i = 0; i < nout; i++) {
    const char *on = bwd ? "output gradient" : i ? "output 'indices'" : "output";
    LMX_TRY(lmx_glue_check_size(c, &out[i], want, on));
    int is_idx = !bwd && (p->mode == LMX_TOPK_INDICES || (p->mode == LMX_TOPK_BOTH && i == 1));
    if (is_idx && (double)(p->n - 1) > index_limit(out[i].dtype))
      return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'dtype': %s cannot represent the indices "
                         "of an axis of length %lld exactly; expected a wider dtype",
                         lmx_dtype_str(out[i].dtype), (long long)p->n);
    int vals = p->mode == LMX_TOPK_MASK || (i == 0 && (p->mode == LMX_TOPK_VALUE ||
                                                       p->mode == LMX_TOPK_BOTH));
    if (vals && out[i].dtype != x->dtype)
      return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected %s like %s, got %s", on,
                         lmx_dtype_str(x->dtype), xn, lmx_dtype_str(out[i].dtype));
  }
  return LMX_OK;
}

const lmx_op lmx_op_topk = {
    .name = "topk",
    .doc = "Returns the indices of the top k elements in an input array along the given "
           "axis (by default the last axis; None: the flattened array). ret_typ chooses what "
           "is returned: the values, the indices (in dtype), a 0/1 mask of the input's shape, "
           "or both values and indices. Ties keep their original order (the lower index "
           "first). Only the values have a gradient (scattered back to the picked "
           "positions).",
    LMX_PARAMS(topk_fields, lmx_sort_param),
    .param_check = sort_check,
    .num_outputs = topk_num_outputs,
    .output_name = topk_output_name,
    .infer_shape = sort_infer_shape,
    .infer_type = sort_infer_type,
    .backward_needs = G | LMX_NEEDS_INPUTS, /* the order is recomputed from the input */
};

const lmx_op lmx_op_sort = {
    .name = "sort",
    .doc = "Returns a sorted copy of an input array along the given axis (by default the last "
           "axis; None: the flattened array), ascending unless is_ascend is false. Ties keep "
           "their original order. The gradient goes back to each value's original position.",
    LMX_PARAMS(sort_fields, lmx_sort_param),
    .param_check = sort_check,
    .infer_shape = sort_infer_shape,
    .infer_type = sort_infer_type,
    .backward_needs = G | LMX_NEEDS_INPUTS,
};

const lmx_op lmx_op_argsort = {
    .name = "argsort",
    .doc = "Returns the indices that would sort an input array along the given axis (by "
           "default the last axis; None: the flattened array), in dtype. Ties keep their "
           "original order (the lower index first). No gradient, as in MXNet.",
    LMX_PARAMS(argsort_fields, lmx_sort_param),
    .param_check = sort_check,
    .infer_shape = sort_infer_shape,
    .infer_type = sort_infer_type,
};
