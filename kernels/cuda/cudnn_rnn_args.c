/* cudnn_rnn_args.c — the fused RNN operator's cuDNN arguments, parameter mapping and
 * workspace plan (cudnn_rnn_args.h). Plain C, compiled in every build, tested on the CPU. */
#include "cudnn_rnn_args.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../../src/luamx.h"
#include "cudnn_args.h"

static int refuse(char *why, size_t len, const char *fmt, ...) {
  if (why && len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
  }
  return LMX_DNN_REFUSE;
}

static int fits(int64_t v) { return v > 0 && v <= INT_MAX; }

int lmx_dnn_rnn_derive(const lmx_dnn_rnn_req *r, lmx_dnn_rnn_args *a, char *why, size_t len) {
  if (why && len) why[0] = 0;
  memset(a, 0, sizeof *a);
  if (r->dt != LMX_FLOAT32)
    return refuse(why, len, "%s (cuDNN's RNN is used for float32)",
                  r->dt == LMX_FLOAT64 ? "float64" : "a dtype other than float32");
  if (r->mode < LMX_DNN_RNN_RELU || r->mode > LMX_DNN_RNN_GRU)
    return refuse(why, len, "unknown mode %d", r->mode);
  if (r->D != 1 && r->D != 2) return refuse(why, len, "%lld directions", (long long)r->D);
  if (r->p > 0 && r->L > 1)
    return refuse(why, len, "inter-layer dropout p=%g (cuDNN would draw its own masks)", r->p);
  int64_t G = r->mode == LMX_DNN_RNN_LSTM ? 4 : r->mode == LMX_DNN_RNN_GRU ? 3 : 1;
  if (!fits(r->L) || !fits(r->T) || !fits(r->N) || !fits(r->In) || !fits(r->H) ||
      !fits(r->L * r->D * r->N * r->H) || !fits(r->T * r->N * (r->In > r->D * r->H ? r->In
                                                                   : r->D * r->H)) ||
      !fits(G * r->H * (r->In > r->D * r->H ? r->In : r->D * r->H)))
    return refuse(why, len, "an empty dim, or a dim or element count beyond cuDNN's int");
  a->cell = r->mode, a->bidirectional = r->D == 2, a->data_type = LMX_DNN_FLOAT;
  a->layers = (int)r->L, a->input = (int)r->In, a->hidden = (int)r->H;
  a->seq = (int)r->T, a->batch = (int)r->N, a->gates = (int)G;
  a->x_vec = (int)r->In, a->y_vec = (int)(r->D * r->H);
  a->h_dim[0] = (int)(r->L * r->D), a->h_dim[1] = (int)r->N, a->h_dim[2] = (int)r->H;
  a->h_stride[0] = (int)(r->N * r->H), a->h_stride[1] = (int)r->H, a->h_stride[2] = 1;
  a->nblocks = (int)(r->L * r->D * 2 * G);
  int64_t w = 0, GH = G * r->H;
  for (int64_t l = 0; l < r->L; l++) w += r->D * GH * ((l ? r->D * r->H : r->In) + r->H);
  a->nparams = w + r->L * r->D * 2 * GH;
  return LMX_DNN_USE;
}

static int64_t in_dim(const lmx_dnn_rnn_args *a, int layer) {
  return layer == 0 ? a->input : (int64_t)(a->bidirectional + 1) * a->hidden;
}

int lmx_dnn_rnn_block(const lmx_dnn_rnn_args *a, int pl, int lin, int bias, int64_t *off,
                      int64_t *rows, int64_t *cols) {
  int D = a->bidirectional + 1, G = a->gates;
  int64_t H = a->hidden, GH = G * H;
  if (pl < 0 || pl >= a->layers * D || lin < 0 || lin >= 2 * G) return -1;
  int rec = lin >= G, g = lin % G;
  if (bias) {
    int64_t o = a->nparams - (int64_t)a->layers * D * 2 * GH; /* the biases start here */
    *off = o + (int64_t)pl * 2 * GH + rec * GH + g * H;
    *rows = H, *cols = 1;
    return 0;
  }
  int64_t o = 0;
  for (int k = 0; k < pl; k++) o += GH * (in_dim(a, k / D) + H);
  int64_t in = in_dim(a, pl / D);
  if (rec) o += GH * in;
  *cols = rec ? H : in;
  *rows = H;
  *off = o + g * H * *cols;
  return 0;
}

void lmx_dnn_rnn_block_at(const lmx_dnn_rnn_args *a, int k, int *pl, int *lin, int *bias) {
  int per = 2 * a->gates;
  *bias = k >= a->nblocks;
  if (*bias) k -= a->nblocks;
  *pl = k / per, *lin = k % per;
}

int lmx_dnn_rnn_same_layout(const lmx_dnn_rnn_args *a, const int64_t *got_off,
                            size_t wspace_bytes) {
  if (wspace_bytes != (size_t)a->nparams * sizeof(float)) return 0;
  for (int k = 0; k < 2 * a->nblocks; k++) {
    int pl, lin, bias;
    int64_t off, rows, cols;
    lmx_dnn_rnn_block_at(a, k, &pl, &lin, &bias);
    if (lmx_dnn_rnn_block(a, pl, lin, bias, &off, &rows, &cols) || got_off[k] != off) return 0;
  }
  return 1;
}

static size_t up256(size_t v) { return (v + 255) / 256 * 256; }

static size_t seq_bytes(const lmx_dnn_rnn_args *a) { return up256((size_t)a->batch * 4); }
static size_t dx_bytes(const lmx_dnn_rnn_args *a) {
  return up256((size_t)a->seq * (size_t)a->batch * (size_t)a->input * sizeof(float));
}
static size_t h_bytes(const lmx_dnn_rnn_args *a) {
  return up256((size_t)a->h_dim[0] * (size_t)a->batch * (size_t)a->hidden * sizeof(float));
}

size_t lmx_dnn_rnn_ws_extra(const lmx_dnn_rnn_args *a) {
  return seq_bytes(a) + 2 * up256((size_t)a->nparams * sizeof(float)) + dx_bytes(a) +
         2 * h_bytes(a);
}

int lmx_dnn_rnn_fit(const lmx_dnn_rnn_args *a, size_t ws_bytes, size_t reserve_bytes,
                    size_t cudnn_ws, size_t cudnn_reserve, size_t wspace_bytes, int same,
                    lmx_dnn_rnn_ws *w, char *why, size_t len) {
  if (why && len) why[0] = 0;
  memset(w, 0, sizeof *w);
  if (cudnn_reserve > reserve_bytes)
    return refuse(why, len, "cuDNN's reserve of %zu bytes exceeds the op's %zu", cudnn_reserve,
                  reserve_bytes);
  size_t at = 0;
  w->seq = at, at += seq_bytes(a);
  w->work = at, at += up256(cudnn_ws);
  if (!same) {
    w->wspace = at, at += up256(wspace_bytes);
    w->dwspace = at, at += up256(wspace_bytes);
  }
  w->dx = at, at += dx_bytes(a);
  w->dhx = at, at += h_bytes(a);
  w->dcx = at, at += h_bytes(a);
  w->need = at;
  if (at > ws_bytes)
    return refuse(why, len, "workspace %zu bytes, %zu needed (cuDNN's own %zu)", ws_bytes, at,
                  cudnn_ws);
  return LMX_DNN_USE;
}
