/* dnn_rnn.c — the cuDNN branch of the fused RNN operator's CUDA glue (rnn.c).
 *
 * rnn.c calls these after its checks, in every CUDA build. The request of
 * kernels/cuda/cudnn_rnn_args.h comes from the glue's lmx_cpu_rnn and p, not from the
 * pass (forward and backward must decide alike); lmx_dnn_rnn_derive decides, and
 * cudnn_rnn_exec.cu runs cuDNN 9's
 * cudnnRNNForward / cudnnRNNBackwardData_v8 / cudnnRNNBackwardWeights_v8 with MXNet's
 * parameter vector mapped to cuDNN's weight space. Workspace and reserve come from the
 * executor's plan (the op's workspace, which lmx_cudnn_rnn_ws enlarges in builds with
 * cuDNN, and the op's reserve output); nothing is allocated per call. Forward and
 * backward decide alike for one configuration (the same derive, the same fit), because
 * the backward reads the reserve its forward wrote, in cuDNN's format or the own one.
 * LMX_CUDNN_OWN sends the caller to the own cell kernels; every call writes the step's
 * note. RNN has no cudnn_off parameter in MXNet: LUAMX_CUDNN=0 is the switch.
 */
#include "dnn.h"

#include <string.h>

#ifdef LUAMX_HAVE_CUDNN
#include "../../../kernels/cuda/cu_dnn.h"
#include "../op_params.h"

/* the arguments (LMX_OK) or LMX_CUDNN_OWN with the note */
static int rnn_args(const lmx_op_ctx *c, const lmx_cpu_rnn *r, lmx_dnn_rnn_args *a) {
  if (lmx_cudnn_unavailable(c, 0)) return LMX_CUDNN_OWN;
  const lmx_rnn_param *p = c->param;
  lmx_dnn_rnn_req q = {r->dt, r->mode, r->L, r->D, r->T, r->N, r->In, r->H, p->p};
  char why[160];
  if (lmx_dnn_rnn_derive(&q, a, why, sizeof why) != LMX_DNN_USE)
    return lmx_cudnn_note(c, "own kernels (cuDNN refuses: %s)", why);
  return LMX_OK;
}

static size_t bytes_of(const lmx_tensor *t) {
  return t->data ? (size_t)lmx_glue_size(t) * (size_t)lmx_dtype_size(t->dtype) : 0;
}

static int result(const lmx_op_ctx *c, int rc, const char *why, const char *what) {
  if (rc == 0) {
    lmx_cudnn_note(c, "cuDNN");
    return LMX_OK;
  }
  if (rc == LMX_CU_DNN_SKIP) return lmx_cudnn_note(c, "own kernels (cuDNN declined: %s)", why);
  lmx_cudnn_note(c, "cuDNN failed");
  if (rc >= LMX_CU_DNN_ESTATUS)
    return lmx_op_fail(c, LMX_ERR_DEVICE, "cuDNN %s on gpu(%d): status %d (%s)", what,
                       c->dev_id, rc - LMX_CU_DNN_ESTATUS, lmx_cu_dnn_status_str(rc));
  return lmx_cuda_fail(c, rc, what);
}

int lmx_cudnn_rnn_fwd(const lmx_op_ctx *c, const lmx_cpu_rnn *r, const lmx_tensor *in,
                      const lmx_tensor *out, const int *req, int nv) {
  lmx_dnn_rnn_args a;
  if (rnn_args(c, r, &a)) return LMX_CUDNN_OWN;
  int lstm = r->mode == LMX_RNN_LSTM, states = nv > 1;
  lmx_cu_dnn_rnn_fwd_io io = {
      .x = in[0].data, .w = in[1].data, .hx = in[2].data, .cx = lstm ? in[3].data : NULL,
      .y = req[0] ? out[0].data : NULL,
      .hy = states && req[1] ? out[1].data : NULL,
      .cy = states && lstm && req[2] ? out[2].data : NULL,
      .reserve = out[nv].data, .ws = c->workspace,
      .reserve_bytes = bytes_of(&out[nv]), .ws_bytes = c->workspace ? c->workspace_bytes : 0};
  char why[200] = "";
  return result(c, lmx_cu_dnn_rnn_fwd(LMX_CU_S(c), &a, &io, why, sizeof why), why,
                "RNN forward");
}

int lmx_cudnn_rnn_bwd(const lmx_op_ctx *c, const lmx_cpu_rnn *r, const lmx_tensor *og,
                      const lmx_tensor *in, const lmx_tensor *out, const lmx_tensor *ig,
                      const int *req, int nv) {
  lmx_dnn_rnn_args a;
  if (rnn_args(c, r, &a)) return LMX_CUDNN_OWN;
  int lstm = r->mode == LMX_RNN_LSTM, states = nv > 1;
  lmx_cu_dnn_rnn_bwd_io io = {
      .x = in[0].data, .w = in[1].data, .hx = in[2].data, .cx = lstm ? in[3].data : NULL,
      .reserve = out[nv].data, .dy = og[0].data,
      .dhy = states ? og[1].data : NULL, .dcy = states && lstm ? og[2].data : NULL,
      .dx = req[0] ? ig[0].data : NULL, .dw = req[1] ? ig[1].data : NULL,
      .dhx = req[2] ? ig[2].data : NULL, .dcx = lstm && req[3] ? ig[3].data : NULL,
      .acc_dx = req[0] == LMX_REQ_ADD, .acc_dw = req[1] == LMX_REQ_ADD,
      .acc_dhx = req[2] == LMX_REQ_ADD, .acc_dcx = lstm && req[3] == LMX_REQ_ADD,
      .ws = c->workspace, .reserve_bytes = bytes_of(&out[nv]),
      .ws_bytes = c->workspace ? c->workspace_bytes : 0};
  /* cuDNN adds the weight gradient: zero it first for 'write' */
  if (io.dw && !io.acc_dw)
    LMX_CU_TRY(c, lmx_cu_fill(LMX_CU_S(c), io.dw, LMX_FLOAT32, lmx_glue_size(&ig[1]), 0.0),
               "lmx_cu_fill");
  char why[200] = "";
  return result(c, lmx_cu_dnn_rnn_bwd(LMX_CU_S(c), &a, &io, why, sizeof why), why,
                "RNN backward");
}

size_t lmx_cudnn_rnn_ws(const lmx_cpu_rnn *r) {
  lmx_dnn_rnn_req q = {LMX_FLOAT32, r->mode, r->L, r->D, r->T, r->N, r->In, r->H, 0.0};
  lmx_dnn_rnn_args a;
  if (lmx_dnn_rnn_derive(&q, &a, NULL, 0) != LMX_DNN_USE) return 0;
  /* cuDNN's own workspace is known only from cuDNN: room for the gate values of every
   * step, layer and direction, twice, and 4 MiB; a configuration that needs more is
   * declined at its first call (and says so in debug_str) */
  size_t gates = (size_t)(r->T * r->N * r->G * r->H * r->L * r->D) * sizeof(float);
  return lmx_dnn_rnn_ws_extra(&a) + 2 * gates + ((size_t)4 << 20);
}

#else /* no cuDNN in this build: the note says why, the own kernels run */

int lmx_cudnn_rnn_fwd(const lmx_op_ctx *c, const lmx_cpu_rnn *r, const lmx_tensor *in,
                      const lmx_tensor *out, const int *req, int nv) {
  (void)r, (void)in, (void)out, (void)req, (void)nv;
  (void)lmx_cudnn_unavailable(c, 0); /* writes the note */
  return LMX_CUDNN_OWN;
}

int lmx_cudnn_rnn_bwd(const lmx_op_ctx *c, const lmx_cpu_rnn *r, const lmx_tensor *og,
                      const lmx_tensor *in, const lmx_tensor *out, const lmx_tensor *ig,
                      const int *req, int nv) {
  (void)og, (void)ig;
  return lmx_cudnn_rnn_fwd(c, r, in, out, req, nv);
}

size_t lmx_cudnn_rnn_ws(const lmx_cpu_rnn *r) {
  (void)r;
  return 0;
}

#endif
