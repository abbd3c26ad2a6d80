/* sort.c — CPU glue of topk, sort and argsort (src/ops/sort.c) over the kernels of
 * kernels/cpu/sort.c; the row geometry comes from lmx_sort_make_plan. The forward takes
 * any dtype; the values' gradient float32 / float64 (topk's indices and mask get a zero
 * gradient, as MXNet's zero-gradient nodes; argsort has none).
 */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../core/status.h"
#include "../op_impl.h"
#include "../sort_params.h"
#include "cpu_ops.h"

static int fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
               const int *req, int nout) {
  lmx_sort_plan p;
  LMX_TRY(lmx_sort_make_plan(c, &in[0], out, nout, 0, &p));
  void *val = NULL, *idx = NULL, *mask = NULL;
  int idt = LMX_FLOAT32, acc = 0;
  for (int i = 0; i < nout; i++) {
    if (req[i] == LMX_REQ_NULL) continue;
    int is_idx = p.mode == LMX_TOPK_INDICES || (p.mode == LMX_TOPK_BOTH && i == 1);
    if (req[i] == LMX_REQ_ADD) {
      if (is_idx || p.mode == LMX_TOPK_MASK)
        return lmx_cpu_fail_req_add(c, is_idx ? "output 'indices'" : "output");
      LMX_TRY(lmx_cpu_check_float(c, &out[i], "output"));
      acc = 1;
    }
    if (is_idx) idx = out[i].data, idt = out[i].dtype;
    else if (p.mode == LMX_TOPK_MASK) mask = out[i].data;
    else val = out[i].data;
  }
  if (lmx_cpu_topk(in[0].dtype, idt, p.outer, p.n, p.inner, p.k, p.asc, in[0].data, val, idx,
                   mask, acc))
    return lmx_fail_nomem("sort row buffer", (size_t)p.n * 16);
  return LMX_OK;
}

static int bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
               const lmx_tensor *ig, const int *req) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_sort_plan p;
  LMX_TRY(lmx_sort_make_plan(c, &in[0], og, 0, 1, &p));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, in[0].dtype, "input gradient"));
  LMX_TRY(lmx_cpu_check_float(c, &ig[0], "input gradient"));
  if (p.mode == LMX_TOPK_INDICES || p.mode == LMX_TOPK_MASK) {
    lmx_cpu_zero_grad(&ig[0], req[0]);
    return LMX_OK;
  }
  LMX_TRY(lmx_sort_make_plan(c, &in[0], og, 1, 1, &p));
  if (lmx_cpu_topk_bwd(in[0].dtype, p.outer, p.n, p.inner, p.k, p.asc, in[0].data,
                       ig[0].data, og[0].data, req[0] == LMX_REQ_ADD))
    return lmx_fail_nomem("sort row buffer", (size_t)p.n * 16);
  return LMX_OK;
}

int lmx_cpu_fwd_topk(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, const lmx_tensor *aux) {
  (void)aux;
  return fwd(c, in, out, req, lmx_op_num_outputs(c->op, c->param));
}

int lmx_cpu_bwd_topk(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                     const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                     const lmx_tensor *aux) {
  (void)out, (void)aux;
  return bwd(c, og, in, ig, req);
}

int lmx_cpu_fwd_sort(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, const lmx_tensor *aux) {
  (void)aux;
  return fwd(c, in, out, req, 1);
}

int lmx_cpu_bwd_sort(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                     const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                     const lmx_tensor *aux) {
  (void)out, (void)aux;
  return bwd(c, og, in, ig, req);
}

int lmx_cpu_fwd_argsort(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req, const lmx_tensor *aux) {
  (void)aux;
  return fwd(c, in, out, req, 1);
}
