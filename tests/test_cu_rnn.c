/* test_cu_rnn.c — the CUDA fused RNN (kernels/cuda/rnn.cu) against the CPU kernel in the
 * simulator build: rnn_relu, rnn_tanh, lstm and gru, two layers, one and two directions,
 * with and without inter-layer dropout masks, odd sizes; forward outputs, states and the
 * reserve, and every gradient (x, packed weights and biases, h0, c0) from head gradients
 * on y, hy and cy. Prints "N passed, N failed"; exits non-zero on failure. */
#include "../kernels/cpu/cpu_kernels.h"
#include "cu_test_util.h"
#include "luamx.h"

#ifdef LUAMX_CUDA_SIM
#include "../kernels/cuda/cu_rnn.h"

static const char *names[] = {"rnn_relu", "rnn_tanh", "lstm", "gru"};

static void one(int mode, int64_t D, int drop, unsigned *s) {
  static const int gates[] = {1, 1, 4, 3};
  lmx_cpu_rnn r = {mode, LMX_FLOAT32, 2, D, 5, 3, 7, 6, gates[mode], drop};
  int64_t np = lmx_cpu_rnn_param_size(&r), nr = lmx_cpu_rnn_reserve(&r);
  int64_t nw = (int64_t)lmx_cpu_rnn_ws(&r), nx = r.T * r.N * r.In, ny = r.T * r.N * r.D * r.H;
  int64_t nh = r.L * r.D * r.N * r.H;
  float *x = rnd(nx, s), *w = rnd(np, s), *h0 = rnd(nh, s), *c0 = rnd(nh, s);
  for (int64_t i = 0; i < np; i++) w[i] *= 0.5f;
  float *rs[2], *ws[2], *y[2], *hy[2], *cy[2], *dx[2], *dw[2], *dh0[2], *dc0[2];
  float *dy = rnd(ny, s), *dhy = rnd(nh, s), *dcy = rnd(nh, s);
  for (int k = 0; k < 2; k++) {
    rs[k] = rnd(nr, s), ws[k] = rnd(nw, s), y[k] = rnd(ny, s), hy[k] = rnd(nh, s);
    cy[k] = rnd(nh, s), dx[k] = calloc((size_t)nx, 4), dw[k] = calloc((size_t)np, 4);
    dh0[k] = calloc((size_t)nh, 4), dc0[k] = calloc((size_t)nh, 4);
  }
  if (drop) { /* masks: the first (L-1)·T·N·D·H elements of the reserve */
    int64_t nm = (r.L - 1) * ny;
    for (int64_t i = 0; i < nm; i++) rs[0][i] = rs[1][i] = (i * 7 % 5 == 0) ? 0.0f : 1.25f;
  }
  int rc = lmx_cu_rnn_fwd(NULL, &r, x, w, h0, c0, y[1], hy[1], cy[1], rs[1], ws[1]);
  lmx_cpu_rnn_fwd(&r, x, w, h0, c0, y[0], hy[0], cy[0], rs[0], ws[0]);
  int lstm = mode == LMX_RNN_LSTM;
  /* rnn_relu / rnn_tanh leave the reserve's C part (at its end) unwritten */
  int64_t nrc = mode == LMX_RNN_LSTM || mode == LMX_RNN_GRU ? nr : nr - r.L * r.D * r.T * r.N * r.H;
  CHECK(rc == 0 && reldiff(y[1], y[0], ny) < 1e-5 && reldiff(hy[1], hy[0], nh) < 1e-5 &&
            (!lstm || reldiff(cy[1], cy[0], nh) < 1e-5) && reldiff(rs[1], rs[0], nrc) < 1e-5,
        "%s D%lld drop%d forward: rc %d y %g hy %g rs %g", names[mode], (long long)D, drop, rc,
        reldiff(y[1], y[0], ny), reldiff(hy[1], hy[0], nh), reldiff(rs[1], rs[0], nrc));
  for (int k = 0; k < 2; k++) {
    lmx_cpu_rnn_grad g = {dy, dhy, lstm ? dcy : NULL, dx[k], dw[k], dh0[k], dc0[k]};
    if (k) rc = lmx_cu_rnn_bwd(NULL, &r, x, w, h0, c0, rs[0], &g, ws[k]);
    else lmx_cpu_rnn_bwd(&r, x, w, h0, c0, rs[0], &g, ws[k]);
  }
  CHECK(rc == 0 && reldiff(dx[1], dx[0], nx) < 1e-4 && reldiff(dw[1], dw[0], np) < 1e-4 &&
            reldiff(dh0[1], dh0[0], nh) < 1e-4 && (!lstm || reldiff(dc0[1], dc0[0], nh) < 1e-4),
        "%s D%lld drop%d backward: rc %d dx %g dw %g dh0 %g dc0 %g", names[mode], (long long)D,
        drop, rc, reldiff(dx[1], dx[0], nx), reldiff(dw[1], dw[0], np),
        reldiff(dh0[1], dh0[0], nh), reldiff(dc0[1], dc0[0], nh));
  /* no head gradients at all: only the recurrence's zeros */
  lmx_cpu_rnn_grad g0 = {NULL, NULL, NULL, dx[1], dw[1], NULL, NULL};
  rc = lmx_cu_rnn_bwd(NULL, &r, x, w, h0, c0, rs[0], &g0, ws[1]);
  CHECK(rc == 0, "%s backward without head gradients: rc %d", names[mode], rc);
  for (int k = 0; k < 2; k++)
    free(rs[k]), free(ws[k]), free(y[k]), free(hy[k]), free(cy[k]), free(dx[k]), free(dw[k]),
        free(dh0[k]), free(dc0[k]);
  free(x), free(w), free(h0), free(c0), free(dy), free(dhy), free(dcy);
}

static void test_rnn(void) {
  unsigned s = 41;
  for (int mode = 0; mode < 4; mode++)
    for (int64_t D = 1; D <= 2; D++)
      for (int drop = 0; drop < 2; drop++) one(mode, D, drop, &s);
  lmx_cpu_rnn r = {LMX_RNN_LSTM, LMX_FLOAT16, 1, 1, 1, 1, 1, 1, 4, 0};
  CHECK(lmx_cu_rnn_fwd(NULL, &r, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) == -1,
        "float16 rnn accepted");
}
#endif

int main(void) {
#ifdef LUAMX_CUDA_SIM
  test_rnn();
#else
  printf("CUDA RNN launchers not run (no simulator in this build)\n");
#endif
  return check_summary();
}
