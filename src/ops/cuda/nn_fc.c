/* nn_fc.c — CUDA glue of the GEMM operators: FullyConnected, dot, batch_dot (the CPU
 * glue's src/ops/cpu/nn_fc.c with device launchers). Dims come from nn_plan.c, shared
 * with the CPU; products are cuBLAS calls (kernels/cuda/gemm.cu), the bias a broadcast
 * kernel and its gradient a column sum. float32, float64 and float16 (float32 compute).
 * FullyConnected's products may instead run through cuBLASLt with the bias fused
 * (forward: the BIAS epilogue; backward: BGRADB gives the bias gradient with the weight
 * gradient), as kernels/cuda/blaslt_args.h's lmx_lt_choose decides from
 * LUAMX_CUBLASLT (0 / 1 / auto), the dtype and the dims; it uses the op's workspace.
 * Each FullyConnected writes the executor step's note (debug_str's "Kernel:" line, through
 * dnn.h's lmx_cudnn_note): "cuBLASLt (<epilogue>)" or "cuBLAS (<why>)" per product.
 */
#include <stdlib.h>

#include <stdio.h>

#include "dnn.h"
#include "nn_util.h"
#include "../nn_plan.h"

/* The cuBLASLt mode of LUAMX_CUBLASLT (blaslt_args.h), read at each call (a getenv) so a
 * process can switch; a value other than 0, 1 or auto is an error naming the op. */
enum { LMX_FC_PATH_CAP = 96 }; /* one product's path in the note */

static int lt_mode(const lmx_op_ctx *c, int *mode) {
  const char *e = getenv("LUAMX_CUBLASLT");
  if (lmx_lt_parse_mode(e, mode) == 0) return LMX_OK;
  return lmx_op_fail(c, LMX_ERR_ARG, "environment LUAMX_CUBLASLT: expected 0, 1 or auto, "
                     "got '%s'", e);
}

static int lt_opts(const lmx_op_ctx *c, lmx_cu_lt_opts *o, lmx_cu_lt_ran *ran) {
  LMX_TRY(lt_mode(c, &o->mode));
  o->ws = c->workspace, o->ws_bytes = c->workspace ? c->workspace_bytes : 0;
  o->ran = ran;
  return LMX_OK;
}

/* One product's path for the note: "cuBLASLt (<epilogue>)" or "cuBLAS (<why>)" */
static void path_str(char *buf, size_t len, const lmx_cu_lt_ran *r) {
  static const char *const epi[] = {"no epilogue", "BIAS", "BGRADB"};
  if (r->lt)
    snprintf(buf, len, "cuBLASLt (%s)", epi[r->epi >= 0 && r->epi <= 2 ? r->epi : 0]);
  else
    snprintf(buf, len, "cuBLAS (%s)", r->why ? r->why : "unknown");
}

/* cuBLASLt's workspace when it may run (mode not 0; a bad mode asks for none and is
 * reported by the kernels) */
size_t lmx_cuda_ws_FullyConnected(const lmx_op_ctx *c, const lmx_shape *in,
                                  const lmx_shape *out) {
  (void)c, (void)in, (void)out;
  int mode;
  return lmx_lt_parse_mode(getenv("LUAMX_CUBLASLT"), &mode) == 0 && mode != LMX_LT_OFF
             ? (size_t)LMX_LT_WS_BYTES
             : 0;
}

int lmx_cuda_fwd_FullyConnected(const lmx_op_ctx *c, const lmx_tensor *in,
                                const lmx_tensor *out, const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_fc_dims d = {0};
  LMX_TRY(lmx_cunn_check_float(c, &in[0], 1, "input 'data'"));
  LMX_TRY(lmx_fc_plan(c, in, &d));
  LMX_TRY(lmx_glue_check_size(c, &out[0], d.m * d.n, "output"));
  if (out[0].dtype != in[0].dtype) return lmx_cunn_check_float(c, &out[0], 0, "output");
  lmx_cu_lt_opts o;
  lmx_cu_lt_ran ran = {0, 0, NULL};
  LMX_TRY(lt_opts(c, &o, c->note ? &ran : NULL));
  LMX_CU_TRY(c, lmx_cu_fc_fwd_lt(LMX_CU_S(c), &o, in[0].dtype, d.m, d.k, d.n, out[0].data,
                                 in[0].data, in[1].data, d.bias ? in[2].data : NULL,
                                 req[0] == LMX_REQ_ADD),
             "lmx_cu_fc_fwd_lt");
  if (c->note) {
    char p[LMX_FC_PATH_CAP];
    path_str(p, sizeof p, &ran);
    (void)lmx_cudnn_note(c, "%s", p);
  }
  return LMX_OK;
}

int lmx_cuda_bwd_FullyConnected(const lmx_op_ctx *c, const lmx_tensor *og,
                                const lmx_tensor *in, const lmx_tensor *out,
                                const lmx_tensor *ig, const int *req, const lmx_tensor *aux) {
  (void)out, (void)aux;
  lmx_fc_dims d = {0};
  LMX_TRY(lmx_cunn_check_float(c, &in[0], 1, "input 'data'"));
  LMX_TRY(lmx_fc_plan(c, in, &d));
  LMX_TRY(lmx_glue_check_size(c, &og[0], d.m * d.n, "output gradient"));
  int dt = in[0].dtype, nin = d.bias ? 3 : 2;
  for (int i = 0; i < nin; i++)
    if (req[i] != LMX_REQ_NULL)
      LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, dt, "input gradient"));
  lmx_cu_stream s = LMX_CU_S(c);
  lmx_cu_lt_opts o;
  lmx_cu_lt_ran ran = {0, 0, NULL};
  char pd[LMX_FC_PATH_CAP] = "", pw[LMX_FC_PATH_CAP] = "";
  LMX_TRY(lt_opts(c, &o, c->note ? &ran : NULL));
  if (req[0]) {
    LMX_CU_TRY(c, lmx_cu_fc_bwd_data_lt(s, &o, dt, d.m, d.k, d.n, ig[0].data, og[0].data,
                                        in[1].data, req[0] == LMX_REQ_ADD),
               "lmx_cu_fc_bwd_data_lt");
    if (c->note) path_str(pd, sizeof pd, &ran);
  }
  /* the weight gradient and the bias gradient: one cuBLASLt call (BGRADB) where it fuses */
  void *gb = d.bias && req[2] ? ig[2].data : NULL;
  if (req[1] || gb) {
    LMX_CU_TRY(c, lmx_cu_fc_bwd_weight_lt(s, &o, dt, d.m, d.k, d.n, req[1] ? ig[1].data : NULL,
                                          og[0].data, in[0].data, req[1] == LMX_REQ_ADD, gb,
                                          gb && req[2] == LMX_REQ_ADD),
               "lmx_cu_fc_bwd_weight_lt");
    if (c->note && req[1]) path_str(pw, sizeof pw, &ran);
    if (c->note && !req[1]) snprintf(pw, sizeof pw, "the column sum kernel");
  }
  if (c->note)
    (void)lmx_cudnn_note(c, "%s%s%s%s%s", pd[0] ? "data gradient: " : "", pd,
                         pd[0] && pw[0] ? "; " : "",
                         !pw[0] ? "" : req[1] ? "weight gradient: " : "bias gradient: ", pw);
  return LMX_OK;
}

/* ---- dot / batch_dot ------------------------------------------------------------------ */

static int mm_check(const lmx_op_ctx *c, const lmx_tensor *in, int batched, lmx_mm_dims *d) {
  LMX_TRY(lmx_cunn_check_float(c, &in[0], 1, "input 'lhs'"));
  if (in[1].dtype != in[0].dtype)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "input 'rhs': expected %s like 'lhs', got %s",
                       lmx_dtype_str(in[0].dtype), lmx_dtype_str(in[1].dtype));
  return lmx_mm_plan(c, in, batched, d);
}

static int mm_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                  const int *req, int batched) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_mm_dims d = {0};
  LMX_TRY(mm_check(c, in, batched, &d));
  LMX_TRY(lmx_glue_check_size(c, &out[0], d.batch * d.m * d.n, "output"));
  if (out[0].dtype != in[0].dtype) return lmx_cunn_check_float(c, &out[0], 0, "output");
  LMX_CU_TRY(c, lmx_cu_batch_gemm(LMX_CU_S(c), in[0].dtype, d.batch, d.ta, d.tb, d.m, d.n, d.k,
                                  in[0].data, in[1].data, out[0].data, req[0] == LMX_REQ_ADD),
             "lmx_cu_batch_gemm");
  return LMX_OK;
}

/* The CPU glue's gradient products, flag for flag. */
static int mm_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                  const lmx_tensor *ig, const int *req, int batched) {
  lmx_mm_dims d = {0};
  LMX_TRY(mm_check(c, in, batched, &d));
  LMX_TRY(lmx_glue_check_size(c, &og[0], d.batch * d.m * d.n, "output gradient"));
  int dt = in[0].dtype;
  for (int i = 0; i < 2; i++)
    if (req[i] != LMX_REQ_NULL)
      LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, dt, "input gradient"));
  const void *A = in[0].data, *B = in[1].data, *G = og[0].data;
  lmx_cu_stream s = LMX_CU_S(c);
  if (req[0]) { /* dA = G op(B)ᵀ, stored as A is */
    int acc = req[0] == LMX_REQ_ADD;
    if (!d.ta)
      LMX_CU_TRY(c, lmx_cu_batch_gemm(s, dt, d.batch, 0, !d.tb, d.m, d.k, d.n, G, B,
                                      ig[0].data, acc), "lmx_cu_batch_gemm");
    else
      LMX_CU_TRY(c, lmx_cu_batch_gemm(s, dt, d.batch, d.tb, 1, d.k, d.m, d.n, B, G,
                                      ig[0].data, acc), "lmx_cu_batch_gemm");
  }
  if (req[1]) { /* dB = op(A)ᵀ G, stored as B is */
    int acc = req[1] == LMX_REQ_ADD;
    if (!d.tb)
      LMX_CU_TRY(c, lmx_cu_batch_gemm(s, dt, d.batch, !d.ta, 0, d.k, d.n, d.m, A, G,
                                      ig[1].data, acc), "lmx_cu_batch_gemm");
    else
      LMX_CU_TRY(c, lmx_cu_batch_gemm(s, dt, d.batch, 1, d.ta, d.n, d.k, d.m, G, A,
                                      ig[1].data, acc), "lmx_cu_batch_gemm");
  }
  return LMX_OK;
}

int lmx_cuda_fwd_dot(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, const lmx_tensor *aux) {
  (void)aux;
  return mm_fwd(c, in, out, req, 0);
}

int lmx_cuda_bwd_dot(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                     const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                     const lmx_tensor *aux) {
  (void)out, (void)aux;
  return mm_bwd(c, og, in, ig, req, 0);
}

int lmx_cuda_fwd_batch_dot(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  (void)aux;
  return mm_fwd(c, in, out, req, 1);
}

int lmx_cuda_bwd_batch_dot(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                           const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                           const lmx_tensor *aux) {
  (void)out, (void)aux;
  return mm_bwd(c, og, in, ig, req, 1);
}
