/* cudnn_rnn_exec.cu — the fused RNN through cuDNN 9 (cu_dnn.h: lmx_cu_dnn_rnn_fwd / _bwd),
 * for the configurations lmx_dnn_rnn_derive accepted. Real CUDA builds with cudnn.h only;
 * the loader, handles, locks and descriptor cache are cudnn_exec.cu's (cudnn_exec.cuh).
 *
 * One cache entry per configuration (its lmx_dnn_rnn_args) holds the RNN descriptor
 * (standard algorithm, double bias, linear input, FMA math, projection = hidden), a
 * dropout descriptor with p = 0 and no states (cuDNN would draw other masks than luamx:
 * configurations with inter-layer dropout are refused before), the packed
 * sequence-major x / y data descriptors with every length T, the [L·D, N, H] state
 * descriptor, two descriptors for weight queries, and cuDNN's workspace / reserve /
 * weight-space sizes. At a configuration's first call cudnnGetRNNWeightParams tells
 * whether cuDNN's weight space is MXNet's layout (cudnn_rnn_args.h); if so the op's
 * parameter array and its gradient are used as cuDNN's weight spaces, else the blocks
 * are copied to and from weight spaces in the workspace. cuDNN's reserve space and the
 * last layer's output (which cuDNN's backward reads) live in the op's reserve output.
 * The forward always runs in training mode (it fills the reserve, so a backward may follow
 * a forward of any pass, as on the own path). A forward that cuDNN declines (NOT_SUPPORTED) marks the entry, so its backward
 * declines too; once a forward ran, every backward failure is an error.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cudnn.h>

#include "../../src/luamx.h"
#include "cu_convert.h"
#include "cu_dnn.h"
#include "cu_elementwise.h"
#include "cudnn_cache.h"
#include "cudnn_exec.cuh"
#include "cuda_common.cuh"

/* ---- RNN -------------------------------------------------------------------------- */

/* a packed 3-D descriptor (hx / cx [L·D, N, H]; empty ones for weight queries) */
static cudnnTensorDescriptor_t tdesc3(const int *dim, const int *stride) {
  cudnnTensorDescriptor_t d = NULL;
  if (D.CreateTensorDescriptor(&d) != CUDNN_STATUS_SUCCESS) return NULL;
  if (dim && D.SetTensorNdDescriptor(d, CUDNN_DATA_FLOAT, 3, dim, stride) != CUDNN_STATUS_SUCCESS) {
    D.DestroyTensorDescriptor(d);
    return NULL;
  }
  return d;
}

static cudnnRNNDataDescriptor_t rnn_data(const lmx_dnn_rnn_args *a, int vec, const int *lens) {
  cudnnRNNDataDescriptor_t d = NULL;
  if (D.CreateRNNDataDescriptor(&d) != CUDNN_STATUS_SUCCESS) return NULL;
  if (D.SetRNNDataDescriptor(d, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, a->seq,
                             a->batch, vec, lens, NULL) != CUDNN_STATUS_SUCCESS) {
    D.DestroyRNNDataDescriptor(d);
    return NULL;
  }
  return d;
}

/* The descriptors of one RNN configuration, and cuDNN's sizes for it (made once: the
 * sequence-length array on the host is the only other allocation). */
int lmx_dnn_rnn_create(cudnnHandle_t h, const lmx_dnn_rnn_args *a, lmx_dnn_descs *e) {
  cudnnDropoutDescriptor_t drop = NULL;
  cudnnRNNDescriptor_t rnn = NULL;
  if (!h || D.CreateDropoutDescriptor(&drop) != CUDNN_STATUS_SUCCESS) return -1;
  e->p[P_DROP] = drop;
  if (D.SetDropoutDescriptor(drop, h, 0.f, NULL, 0, 0) != CUDNN_STATUS_SUCCESS) return -1;
  if (D.CreateRNNDescriptor(&rnn) != CUDNN_STATUS_SUCCESS) return -1;
  e->p[P_RNN] = rnn;
  static const cudnnRNNMode_t cell[] = {CUDNN_RNN_RELU, CUDNN_RNN_TANH, CUDNN_LSTM, CUDNN_GRU};
  if (D.SetRNNDescriptor_v8(rnn, CUDNN_RNN_ALGO_STANDARD, cell[a->cell], CUDNN_RNN_DOUBLE_BIAS,
                            a->bidirectional ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL,
                            CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH,
                            a->input, a->hidden, a->hidden, a->layers, drop,
                            CUDNN_RNN_PADDED_IO_DISABLED) != CUDNN_STATUS_SUCCESS)
    return -1;
  int *lens = (int *)malloc((size_t)a->batch * sizeof(int));
  if (!lens) return -1;
  for (int i = 0; i < a->batch; i++) lens[i] = a->seq;
  e->p[P_RX] = rnn_data(a, a->x_vec, lens);
  e->p[P_RY] = rnn_data(a, a->y_vec, lens);
  free(lens);
  e->p[P_RH] = tdesc3(a->h_dim, a->h_stride);
  e->p[P_RM] = tdesc3(NULL, NULL), e->p[P_RB] = tdesc3(NULL, NULL);
  if (!e->p[P_RX] || !e->p[P_RY] || !e->p[P_RH] || !e->p[P_RM] || !e->p[P_RB]) return -1;
  size_t ws = 0, rs = 0, wsp = 0;
  cudnnRNNDataDescriptor_t xd = (cudnnRNNDataDescriptor_t)e->p[P_RX];
  if (D.GetRNNTempSpaceSizes(h, rnn, CUDNN_FWD_MODE_TRAINING, xd, &ws, &rs) !=
          CUDNN_STATUS_SUCCESS ||
      D.GetRNNWeightSpaceSize(h, rnn, &wsp) != CUDNN_STATUS_SUCCESS)
    return -1;
  e->i[I_WS] = (long long)ws, e->i[I_RESERVE] = (long long)rs, e->i[I_WSPACE] = (long long)wsp;
  e->i[I_SAME] = -1;
  return 0;
}

void lmx_dnn_rnn_destroy(lmx_dnn_descs *e) {
  if (e->p[P_RNN]) D.DestroyRNNDescriptor((cudnnRNNDescriptor_t)e->p[P_RNN]);
  if (e->p[P_DROP]) D.DestroyDropoutDescriptor((cudnnDropoutDescriptor_t)e->p[P_DROP]);
  if (e->p[P_RX]) D.DestroyRNNDataDescriptor((cudnnRNNDataDescriptor_t)e->p[P_RX]);
  if (e->p[P_RY]) D.DestroyRNNDataDescriptor((cudnnRNNDataDescriptor_t)e->p[P_RY]);
  lmx_dnn_tfree((cudnnTensorDescriptor_t)e->p[P_RH]);
  lmx_dnn_tfree((cudnnTensorDescriptor_t)e->p[P_RM]);
  lmx_dnn_tfree((cudnnTensorDescriptor_t)e->p[P_RB]);
}

/* cuDNN's address of block k (lmx_dnn_rnn_block_at) in the weight space at base, or NULL */
static char *rnn_block_addr(cudnnHandle_t h, const lmx_dnn_descs *e, const lmx_dnn_rnn_args *a,
                            int k, const void *base) {
  int pl, lin, bias;
  lmx_dnn_rnn_block_at(a, k, &pl, &lin, &bias);
  void *m = NULL, *b = NULL;
  if (D.GetRNNWeightParams(h, (cudnnRNNDescriptor_t)e->p[P_RNN], pl, (size_t)e->i[I_WSPACE], base,
                           lin, (cudnnTensorDescriptor_t)e->p[P_RM], &m,
                           (cudnnTensorDescriptor_t)e->p[P_RB], &b) != CUDNN_STATUS_SUCCESS)
    return NULL;
  return (char *)(bias ? b : m);
}

/* Whether cuDNN's weight space is MXNet's layout (asked once per entry, with the
 * parameter array as the base address: cuDNN only computes addresses). */
static int rnn_same(cudnnHandle_t h, lmx_dnn_descs *e, const lmx_dnn_rnn_args *a, const void *w) {
  if (e->i[I_SAME] >= 0) return (int)e->i[I_SAME];
  int n = 2 * a->nblocks, same = 1;
  for (int k = 0; k < n && same; k++) {
    int pl, lin, bias;
    int64_t off, rows, cols;
    lmx_dnn_rnn_block_at(a, k, &pl, &lin, &bias);
    lmx_dnn_rnn_block(a, pl, lin, bias, &off, &rows, &cols);
    char *p = rnn_block_addr(h, e, a, k, w);
    same = p && p - (const char *)w == (ptrdiff_t)(off * (int64_t)sizeof(float));
  }
  e->i[I_SAME] = same && (size_t)e->i[I_WSPACE] == (size_t)a->nparams * sizeof(float);
  return (int)e->i[I_SAME];
}

/* Copies every block between MXNet's vector mx and cuDNN's weight space cu: to cuDNN
 * (to_cudnn), or back into mx (adding when acc). 0 or an error code. */
static int rnn_blocks(lmx_cu_stream s, cudnnHandle_t h, const lmx_dnn_descs *e,
                      const lmx_dnn_rnn_args *a, void *mx, void *cu, int to_cudnn, int acc) {
  for (int k = 0; k < 2 * a->nblocks; k++) {
    int pl, lin, bias;
    int64_t off, rows, cols;
    lmx_dnn_rnn_block_at(a, k, &pl, &lin, &bias);
    lmx_dnn_rnn_block(a, pl, lin, bias, &off, &rows, &cols);
    char *c = rnn_block_addr(h, e, a, k, cu), *m = (char *)mx + off * (int64_t)sizeof(float);
    if (!c) return LMX_CU_DNN_SKIP;
    int rc = to_cudnn ? (int)cudaMemcpyAsync(c, m, (size_t)(rows * cols) * sizeof(float),
                                             cudaMemcpyDeviceToDevice, (cudaStream_t)s)
                      : lmx_cu_scale(s, LMX_FLOAT32, rows * cols, m, c, 1.0, acc);
    if (rc) return rc;
  }
  return 0;
}

static int say(char *why, size_t len, const char *text) {
  if (why && len) snprintf(why, len, "%s", text);
  return LMX_CU_DNN_SKIP;
}

typedef struct {
  lmx_dnn_session ss;
  lmx_dnn_descs *e;
  lmx_dnn_rnn_ws w;
  int same;
  size_t y_at; /* byte offset of y in the op's reserve */
} rnn_call;

/* Locks the device, finds the configuration's descriptors and plans the workspace; 0,
 * or LMX_CU_DNN_SKIP (unlocked) with why. */
static int rnn_begin(lmx_cu_stream s, const lmx_dnn_rnn_args *a, const void *w, size_t ws_bytes,
                     size_t reserve_bytes, rnn_call *rc, char *why, size_t len) {
  if (lmx_dnn_begin(s, &rc->ss)) return say(why, len, "cuDNN is not usable on this device");
  rc->e = lmx_dnn_descs_of(&rc->ss, K_RNN, a, sizeof *a);
  if (!rc->e) {
    lmx_dnn_end(&rc->ss);
    return say(why, len, "cuDNN refused the RNN descriptors of this configuration");
  }
  if (rc->e->i[I_DECLINED]) { /* its forward got NOT_SUPPORTED: the own path, both ways */
    lmx_dnn_end(&rc->ss);
    return say(why, len, "cuDNN answered NOT_SUPPORTED for this configuration");
  }
  rc->same = rnn_same(rc->ss.h, rc->e, a, w);
  size_t y_bytes = (size_t)a->seq * (size_t)a->batch * (size_t)a->y_vec * sizeof(float);
  rc->y_at = ((size_t)rc->e->i[I_RESERVE] + 255) / 256 * 256;
  /* cuDNN's reserve, then y, must fit the op's reserve */
  if (lmx_dnn_rnn_fit(a, ws_bytes, reserve_bytes, (size_t)rc->e->i[I_WS], rc->y_at + y_bytes,
                      (size_t)rc->e->i[I_WSPACE], rc->same, &rc->w, why, len) != LMX_DNN_USE) {
    lmx_dnn_end(&rc->ss);
    return LMX_CU_DNN_SKIP;
  }
  return 0;
}

static int rnn_status(cudnnStatus_t st, int wrote, char *why, size_t len) {
  if (st == CUDNN_STATUS_SUCCESS) return 0;
  if (lmx_dnn_not_supported(st) && !wrote) return say(why, len, "cuDNN answered NOT_SUPPORTED");
  return lmx_dnn_st_rc(st);
}

extern "C" int lmx_cu_dnn_rnn_fwd(lmx_cu_stream s, const lmx_dnn_rnn_args *a,
                                  const lmx_cu_dnn_rnn_fwd_io *io, char *why, size_t len) {
  rnn_call c;
  int rc = rnn_begin(s, a, io->w, io->ws_bytes, io->reserve_bytes, &c, why, len);
  if (rc) return rc;
  char *ws = (char *)io->ws, *res = (char *)io->reserve;
  int32_t *lens = (int32_t *)(ws + c.w.seq);
  const void *wspace = io->w;
  void *y = res + c.y_at;
  rc = lmx_cu_fill(s, lens, LMX_INT32, a->batch, (double)a->seq);
  if (!rc && !c.same) {
    wspace = ws + c.w.wspace;
    rc = rnn_blocks(s, c.ss.h, c.e, a, (void *)io->w, ws + c.w.wspace, 1, 0);
  }
  if (!rc) {
    cudnnStatus_t st = D.RNNForward(
        c.ss.h, (cudnnRNNDescriptor_t)c.e->p[P_RNN],
        CUDNN_FWD_MODE_TRAINING, lens,
        (cudnnRNNDataDescriptor_t)c.e->p[P_RX], io->x, (cudnnRNNDataDescriptor_t)c.e->p[P_RY], y,
        (cudnnTensorDescriptor_t)c.e->p[P_RH], io->hx, io->hy,
        (cudnnTensorDescriptor_t)c.e->p[P_RH], io->cx, io->cy, (size_t)c.e->i[I_WSPACE], wspace,
        (size_t)c.e->i[I_WS], ws + c.w.work, (size_t)c.e->i[I_RESERVE], res);
    rc = rnn_status(st, 0, why, len);
    if (rc == LMX_CU_DNN_SKIP) c.e->i[I_DECLINED] = 1; /* so its backward declines too */
  }
  if (!rc && io->y)
    rc = (int)cudaMemcpyAsync(io->y, y, (size_t)a->seq * a->batch * a->y_vec * sizeof(float),
                              cudaMemcpyDeviceToDevice, (cudaStream_t)s);
  lmx_dnn_end(&c.ss);
  return rc;
}

extern "C" int lmx_cu_dnn_rnn_bwd(lmx_cu_stream s, const lmx_dnn_rnn_args *a,
                                  const lmx_cu_dnn_rnn_bwd_io *io, char *why, size_t len) {
  rnn_call c;
  int rc = rnn_begin(s, a, io->w, io->ws_bytes, io->reserve_bytes, &c, why, len);
  if (rc) return rc;
  char *ws = (char *)io->ws, *res = (char *)io->reserve;
  int32_t *lens = (int32_t *)(ws + c.w.seq);
  const void *wspace = io->w;
  const void *y = res + c.y_at;
  size_t hn = (size_t)a->h_dim[0] * a->batch * a->hidden;
  /* targets cuDNN writes directly, or scratch that is added (or dropped) afterwards */
  void *dx = io->dx && !io->acc_dx ? io->dx : (void *)(ws + c.w.dx);
  void *dhx = io->dhx && io->acc_dhx ? (void *)(ws + c.w.dhx) : io->dhx;
  void *dcx = io->dcx && io->acc_dcx ? (void *)(ws + c.w.dcx) : io->dcx;
  rc = lmx_cu_fill(s, lens, LMX_INT32, a->batch, (double)a->seq);
  if (!rc && !c.same) {
    wspace = ws + c.w.wspace;
    rc = rnn_blocks(s, c.ss.h, c.e, a, (void *)io->w, ws + c.w.wspace, 1, 0);
  }
  if (!rc) {
    cudnnStatus_t st = D.RNNBackwardData_v8(
        c.ss.h, (cudnnRNNDescriptor_t)c.e->p[P_RNN], lens, (cudnnRNNDataDescriptor_t)c.e->p[P_RY],
        y, io->dy, (cudnnRNNDataDescriptor_t)c.e->p[P_RX], dx,
        (cudnnTensorDescriptor_t)c.e->p[P_RH], io->hx, io->dhy, dhx,
        (cudnnTensorDescriptor_t)c.e->p[P_RH], io->cx, io->dcy, dcx, (size_t)c.e->i[I_WSPACE],
        wspace, (size_t)c.e->i[I_WS], ws + c.w.work, (size_t)c.e->i[I_RESERVE], res);
    rc = rnn_status(st, 1, why, len); /* the reserve is cuDNN's: no own fallback now */
  }
  /* the weight gradient: cuDNN 9 adds (CUDNN_WGRAD_MODE_ADD) into the target, which the
   * glue zeroed for req 'write' where it is MXNet's own array */
  if (!rc && io->dw) {
    void *dwspace = c.same ? io->dw : (void *)(ws + c.w.dwspace);
    if (!c.same)
      rc = (int)cudaMemsetAsync(dwspace, 0, (size_t)c.e->i[I_WSPACE], (cudaStream_t)s);
    if (!rc) {
      cudnnStatus_t st = D.RNNBackwardWeights_v8(
          c.ss.h, (cudnnRNNDescriptor_t)c.e->p[P_RNN], CUDNN_WGRAD_MODE_ADD, lens,
          (cudnnRNNDataDescriptor_t)c.e->p[P_RX], io->x, (cudnnTensorDescriptor_t)c.e->p[P_RH],
          io->hx, (cudnnRNNDataDescriptor_t)c.e->p[P_RY], y, (size_t)c.e->i[I_WSPACE], dwspace,
          (size_t)c.e->i[I_WS], ws + c.w.work, (size_t)c.e->i[I_RESERVE], res);
      rc = rnn_status(st, 1, why, len);
    }
    if (!rc && !c.same) rc = rnn_blocks(s, c.ss.h, c.e, a, io->dw, dwspace, 0, 1);
  }
  size_t xn = (size_t)a->seq * a->batch * a->input;
  if (!rc && io->dx && io->acc_dx)
    rc = lmx_cu_scale(s, LMX_FLOAT32, (int64_t)xn, io->dx, dx, 1.0, 1);
  if (!rc && io->dhx && io->acc_dhx)
    rc = lmx_cu_scale(s, LMX_FLOAT32, (int64_t)hn, io->dhx, dhx, 1.0, 1);
  if (!rc && io->dcx && io->acc_dcx)
    rc = lmx_cu_scale(s, LMX_FLOAT32, (int64_t)hn, io->dcx, dcx, 1.0, 1);
  lmx_dnn_end(&c.ss);
  return rc;
}
