/* lowp_stage.c — float16 / bfloat16 operators on the CPU through float32 staging.
 *
 * FullyConnected, Convolution, Deconvolution and Pooling have float32/float64 kernels only.
 * For a call whose data is float16 or bfloat16 (MXNet 1.9 runs these ops in bfloat16 on
 * the CPU and accepts float16 computed in float32) the glue hands the call here:
 * every low-precision input, output and gradient gets a float32 twin in the workspace,
 * inputs are widened (exact), the float32 glue runs on the twins, and each output is
 * rounded back once. So a low-precision result is the float32 result rounded once (req
 * ADD: the sum is formed in float32 and rounded once too).
 *
 * Workspace layout (64-byte aligned parts), one call's worth:
 *   [ inner workspace of the float32 call | in[0..nin) | out[0..nout) |
 *     out_grad[0..nout) | in_grad[0..nin) ]
 * where only the low-precision tensors take room. The size comes from the dtypes the
 * workspace query passes (lmx_op_ctx.dtypes): float32/float64 calls get exactly the
 * inner workspace, so float32 graphs do not grow. A query without dtypes (NULL) cannot
 * know and answers the inner size; a low-precision call then fails on the workspace
 * check with the bytes it needed instead of writing past the buffer.
 *
 * Tensors passed with data NULL (not needed by backward) stay NULL. Aux states pass
 * through untouched. Every tensor of a staged call must have the data's dtype.
 */
#include <string.h>

#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../op_impl.h"
#include "cpu_ops.h"

enum { STAGE_MAX = 16, STAGE_ALIGN = 64 };

int lmx_cpu_is_lowp(int dt) {
  return dt == LMX_FLOAT16 || dt == LMX_BFLOAT16;
}

int lmx_cpu_check_float_lowp(const lmx_op_ctx *c, const lmx_tensor *t, const char *what) {
  if (t->dtype == LMX_FLOAT32 || t->dtype == LMX_FLOAT64 || lmx_cpu_is_lowp(t->dtype))
    return LMX_OK;
  return lmx_cpu_fail_dtype_ew(c, t, what);
}

static size_t align_up(size_t b) {
  return (b + STAGE_ALIGN - 1) / STAGE_ALIGN * STAGE_ALIGN;
}

static size_t f32_bytes(const lmx_shape *s) {
  size_t n = 1;
  for (int i = 0; i < s->ndim; i++) n *= (size_t)(s->dim[i] > 0 ? s->dim[i] : 0);
  return align_up(n * sizeof(float));
}

/* Inner workspace of the float32 call with these shapes (dtypes all float32 where low). */
static size_t inner_ws(const lmx_op_ctx *c, lmx_workspace_fn inner, const lmx_shape *in,
                       const lmx_shape *out, const int *dts, int n) {
  if (!inner) return 0;
  int d32[2 * STAGE_MAX];
  lmx_op_ctx ci = *c;
  if (dts && n <= 2 * STAGE_MAX) {
    for (int i = 0; i < n; i++) d32[i] = lmx_cpu_is_lowp(dts[i]) ? LMX_FLOAT32 : dts[i];
    ci.dtypes = d32;
  }
  return align_up(inner(&ci, in, out));
}

size_t lmx_cpu_lowp_ws(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out,
                       lmx_workspace_fn inner) {
  int nin = lmx_op_num_inputs(c->op, c->param), nout = lmx_op_num_outputs(c->op, c->param);
  const int *dt = c->dtypes;
  if (!dt || nin > STAGE_MAX || nout > STAGE_MAX) return inner ? inner(c, in, out) : 0;
  size_t stage = 0;
  for (int i = 0; i < nin; i++)
    if (lmx_cpu_is_lowp(dt[i])) stage += 2 * f32_bytes(&in[i]); /* value and gradient */
  for (int j = 0; j < nout; j++)
    if (lmx_cpu_is_lowp(dt[nin + j])) stage += 2 * f32_bytes(&out[j]);
  if (!stage) return inner ? inner(c, in, out) : 0;
  return inner_ws(c, inner, in, out, dt, nin + nout) + stage;
}

/* ---- staging ------------------------------------------------------------------------ */

typedef struct {
  const lmx_op_ctx *c;
  char *next; /* the free part of the workspace */
  int lowdt;  /* the data's dtype: every tensor of the call has it */
} stager;

static int64_t count(const lmx_tensor *t) {
  return lmx_glue_size(t);
}

/* Every tensor of a staged call has the data's dtype (FullyConnected, Convolution and
 * Pooling take one dtype throughout); a tensor without data is not read. */
static int check_dtype(stager *s, const lmx_tensor *t, const char *what, int i) {
  if (!t->data || t->dtype == s->lowdt) return LMX_OK;
  char nm[64];
  if (!strcmp(what, "input")) {
    lmx_op_in_name(s->c, i, nm, sizeof nm);
    return lmx_op_fail(s->c, LMX_ERR_DTYPE, "input '%s': expected %s like 'data', got %s", nm,
                       lmx_dtype_str(s->lowdt), lmx_dtype_str(t->dtype));
  }
  return lmx_op_fail(s->c, LMX_ERR_DTYPE, "%s %d: expected %s like 'data', got %s", what, i,
                     lmx_dtype_str(s->lowdt), lmx_dtype_str(t->dtype));
}

/* t32 <- a float32 twin of t in the workspace (widened when `load`), or t itself. */
static void stage(stager *s, const lmx_tensor *t, lmx_tensor *t32, int load) {
  *t32 = *t;
  if (!lmx_cpu_is_lowp(t->dtype)) return;
  t32->dtype = LMX_FLOAT32;
  if (!t->data) return;
  t32->data = s->next;
  s->next += f32_bytes(&t->shape);
  if (load) lmx_cpu_convert(t32->data, LMX_FLOAT32, t->data, t->dtype, count(t));
}

/* The rounding back: t <- t32 (once). */
static void unstage(const lmx_tensor *t, const lmx_tensor *t32, int req) {
  if (req == LMX_REQ_NULL || !t->data || t->data == t32->data) return;
  lmx_cpu_convert(t->data, t->dtype, t32->data, LMX_FLOAT32, count(t));
}

/* Carves the inner workspace and checks the whole call fits; ci gets the inner part. */
static int begin(stager *s, const lmx_op_ctx *c, lmx_op_ctx *ci, lmx_workspace_fn inner,
                 const lmx_tensor *in, int nin, const lmx_tensor *out, int nout, int grads) {
  s->c = c, s->lowdt = in[0].dtype;
  if (nin > STAGE_MAX || nout > STAGE_MAX)
    return lmx_op_fail(c, LMX_ERR_ARG,
                       "float16/bfloat16 staging: at most %d inputs and "
                       "outputs, got %d and %d",
                       STAGE_MAX, nin, nout);
  lmx_shape is[STAGE_MAX], os[STAGE_MAX];
  int dts[2 * STAGE_MAX];
  size_t stage_b = 0;
  for (int i = 0; i < nin; i++) {
    LMX_TRY(check_dtype(s, &in[i], "input", i));
    is[i] = in[i].shape, dts[i] = in[i].dtype;
    if (lmx_cpu_is_lowp(in[i].dtype)) stage_b += (grads ? 2 : 1) * f32_bytes(&in[i].shape);
  }
  for (int j = 0; j < nout; j++) {
    LMX_TRY(check_dtype(s, &out[j], "output", j));
    os[j] = out[j].shape, dts[nin + j] = out[j].dtype;
    if (lmx_cpu_is_lowp(out[j].dtype)) stage_b += (grads ? 2 : 1) * f32_bytes(&out[j].shape);
  }
  lmx_op_ctx q = *c;
  q.dtypes = dts;
  size_t inner_b = inner_ws(&q, inner, is, os, dts, nin + nout);
  LMX_TRY(lmx_glue_check_ws(c, inner_b + stage_b));
  *ci = *c;
  ci->workspace = inner_b ? c->workspace : NULL;
  ci->workspace_bytes = inner_b;
  s->next = (char *)c->workspace + inner_b;
  return LMX_OK;
}

static int out_req(int req) {
  return req == LMX_REQ_INPLACE ? LMX_REQ_WRITE : req;
}

int lmx_cpu_lowp_fwd(const lmx_op_ctx *c, lmx_forward_fn f, lmx_workspace_fn inner,
                     const lmx_tensor *in, const lmx_tensor *out, const int *req,
                     const lmx_tensor *aux) {
  int nin = lmx_op_num_inputs(c->op, c->param), nout = lmx_op_num_outputs(c->op, c->param);
  stager s;
  lmx_op_ctx ci;
  LMX_TRY(begin(&s, c, &ci, inner, in, nin, out, nout, 0));
  lmx_tensor in32[STAGE_MAX], out32[STAGE_MAX];
  int req32[STAGE_MAX];
  for (int i = 0; i < nin; i++) stage(&s, &in[i], &in32[i], 1);
  for (int j = 0; j < nout; j++) {
    req32[j] = out_req(req[j]);
    stage(&s, &out[j], &out32[j], req[j] == LMX_REQ_ADD);
  }
  LMX_TRY(f(&ci, in32, out32, req32, aux));
  for (int j = 0; j < nout; j++) unstage(&out[j], &out32[j], req[j]);
  return LMX_OK;
}

int lmx_cpu_lowp_bwd(const lmx_op_ctx *c, lmx_backward_fn f, lmx_workspace_fn inner,
                     const lmx_tensor *og, const lmx_tensor *in, const lmx_tensor *out,
                     const lmx_tensor *ig, const int *req, const lmx_tensor *aux) {
  int nin = lmx_op_num_inputs(c->op, c->param), nout = lmx_op_num_outputs(c->op, c->param);
  stager s;
  lmx_op_ctx ci;
  LMX_TRY(begin(&s, c, &ci, inner, in, nin, out, nout, 1));
  for (int j = 0; j < nout; j++) LMX_TRY(check_dtype(&s, &og[j], "output gradient", j));
  for (int i = 0; i < nin; i++)
    if (req[i] != LMX_REQ_NULL) LMX_TRY(check_dtype(&s, &ig[i], "input gradient", i));
  lmx_tensor in32[STAGE_MAX], out32[STAGE_MAX], og32[STAGE_MAX], ig32[STAGE_MAX];
  int req32[STAGE_MAX];
  for (int i = 0; i < nin; i++) stage(&s, &in[i], &in32[i], 1);
  for (int j = 0; j < nout; j++) stage(&s, &out[j], &out32[j], 1);
  for (int j = 0; j < nout; j++) stage(&s, &og[j], &og32[j], 1);
  for (int i = 0; i < nin; i++) {
    req32[i] = out_req(req[i]);
    if (req[i] == LMX_REQ_NULL)
      ig32[i] = (lmx_tensor){NULL, ig[i].shape, LMX_FLOAT32};
    else
      stage(&s, &ig[i], &ig32[i], req[i] == LMX_REQ_ADD);
  }
  LMX_TRY(f(&ci, og32, in32, out32, ig32, req32, aux));
  for (int i = 0; i < nin; i++) unstage(&ig[i], &ig32[i], req[i]);
  return LMX_OK;
}
