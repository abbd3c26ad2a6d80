/* rnn_cell.h — the per-step cell math of rnn.c (private; included once by rnn.c).
 *
 * cell_fwd: gates g[N, G·H] hold the input projection Wx x of this step; hg[N, G·H] the
 * recurrent one Wh h'. The biases are added here, the activations are stored back into g
 * (lstm i f g o, gru r z n, rnn h), and c / h written (h with leading dimension DH into
 * the layer output). cell_bwd turns dh (w->dh, carried across steps, plus this step's
 * output gradient) into dXg (gradient of Wx x + bx) and w->dHg (of Wh h' + bh), leaves
 * the direct part of dh' in w->dh and (lstm) dc' in w->dc.
 * One float32 and one float64 sibling per function from one macro.
 */
/* XEXP / XTANH (cpu_math.h) use the inlined float32 exp/tanh for float and libm for
 * double; plain exp/tanh here would send every float32 gate through double libm calls. */
#define SIG(v) (1 / (1 + XEXP(-(v))))

#define DEF_CELL(T, S)                                                                     \
  static void cell_fwd_##S(const rnn_ws *w, T *g, const T *hg, const T *bx, const T *bh,   \
                           const T *hp, int64_t ldh, const T *cp, T *c, T *h) {            \
    const lmx_cpu_rnn *r = w->r;                                                           \
    int64_t H = r->H, GH = w->GH, DH = w->DH;                                              \
    for (int64_t n = 0; n < r->N; n++) {                                                   \
      T *gn = g + n * GH;                                                                  \
      const T *hn = hg + n * GH;                                                           \
      for (int64_t j = 0; j < H; j++) {                                                    \
        T hv;                                                                              \
        if (r->mode == LMX_RNN_LSTM) {                                                     \
          T i = SIG(gn[j] + bx[j] + hn[j] + bh[j]);                                        \
          T f = SIG(gn[H + j] + bx[H + j] + hn[H + j] + bh[H + j]);                        \
          T gg = XTANH(gn[2 * H + j] + bx[2 * H + j] + hn[2 * H + j] + bh[2 * H + j]);      \
          T o = SIG(gn[3 * H + j] + bx[3 * H + j] + hn[3 * H + j] + bh[3 * H + j]);        \
          T cv = f * cp[n * H + j] + i * gg;                                               \
          gn[j] = i, gn[H + j] = f, gn[2 * H + j] = gg, gn[3 * H + j] = o;                 \
          c[n * H + j] = cv;                                                               \
          hv = o * XTANH(cv);                                                               \
        } else if (r->mode == LMX_RNN_GRU) {                                               \
          T rr = SIG(gn[j] + bx[j] + hn[j] + bh[j]);                                       \
          T z = SIG(gn[H + j] + bx[H + j] + hn[H + j] + bh[H + j]);                        \
          T hl = hn[2 * H + j] + bh[2 * H + j];                                            \
          T nn = XTANH(gn[2 * H + j] + bx[2 * H + j] + rr * hl);                            \
          gn[j] = rr, gn[H + j] = z, gn[2 * H + j] = nn;                                   \
          c[n * H + j] = hl;                                                               \
          hv = (1 - z) * nn + z * hp[n * ldh + j];                                         \
        } else {                                                                           \
          T a = gn[j] + bx[j] + hn[j] + bh[j];                                             \
          hv = r->mode == LMX_RNN_TANH ? XTANH(a) : (a > 0 ? a : 0);                        \
          gn[j] = hv;                                                                      \
        }                                                                                  \
        h[n * DH + j] = hv;                                                                \
      }                                                                                    \
    }                                                                                      \
  }                                                                                        \
  static void cell_bwd_##S(const rnn_ws *w, const T *g, const T *c, const T *hp,           \
                           int64_t ldh, const T *cp, const T *dy, T *dxg) {                \
    const lmx_cpu_rnn *r = w->r;                                                           \
    int64_t H = r->H, GH = w->GH, DH = w->DH;                                              \
    T *dh = (T *)w->dh, *dc = (T *)w->dc, *dhg = (T *)w->dHg;                              \
    for (int64_t n = 0; n < r->N; n++) {                                                   \
      const T *gn = g + n * GH;                                                            \
      T *dx = dxg + n * GH, *dH = dhg + n * GH;                                            \
      for (int64_t j = 0; j < H; j++) {                                                    \
        T dhv = dh[n * H + j] + dy[n * DH + j];                                            \
        if (r->mode == LMX_RNN_LSTM) {                                                     \
          T i = gn[j], f = gn[H + j], gg = gn[2 * H + j], o = gn[3 * H + j];               \
          T tc = XTANH(c[n * H + j]);                                                       \
          T dct = dc[n * H + j] + dhv * o * (1 - tc * tc);                                 \
          dx[j] = dct * gg * i * (1 - i);                                                  \
          dx[H + j] = dct * cp[n * H + j] * f * (1 - f);                                   \
          dx[2 * H + j] = dct * i * (1 - gg * gg);                                         \
          dx[3 * H + j] = dhv * tc * o * (1 - o);                                          \
          for (int q = 0; q < 4; q++) dH[q * H + j] = dx[q * H + j];                       \
          dc[n * H + j] = dct * f;                                                         \
          dh[n * H + j] = 0;                                                               \
        } else if (r->mode == LMX_RNN_GRU) {                                               \
          T rr = gn[j], z = gn[H + j], nn = gn[2 * H + j], hl = c[n * H + j];              \
          T h1 = hp[n * ldh + j];                                                          \
          T dan = dhv * (1 - z) * (1 - nn * nn);                                           \
          dx[j] = dan * hl * rr * (1 - rr);                                                \
          dx[H + j] = dhv * (h1 - nn) * z * (1 - z);                                       \
          dx[2 * H + j] = dan;                                                             \
          dH[j] = dx[j], dH[H + j] = dx[H + j], dH[2 * H + j] = dan * rr;                  \
          dh[n * H + j] = dhv * z;                                                         \
        } else {                                                                           \
          T hv = gn[j];                                                                    \
          T da = r->mode == LMX_RNN_TANH ? dhv * (1 - hv * hv) : (hv > 0 ? dhv : 0);       \
          dx[j] = dH[j] = da;                                                              \
          dh[n * H + j] = 0;                                                               \
        }                                                                                  \
      }                                                                                    \
    }                                                                                      \
  }
DEF_CELL(float, f32)
DEF_CELL(double, f64)

static void cell_fwd(const rnn_ws *w, void *g, const void *hg, const void *bx, const void *bh,
                     const void *hp, int64_t ldh, const void *cp, void *c, void *h) {
  if (w->r->dt == LMX_FLOAT32) cell_fwd_f32(w, g, hg, bx, bh, hp, ldh, cp, c, h);
  else cell_fwd_f64(w, g, hg, bx, bh, hp, ldh, cp, c, h);
}

static void cell_bwd(const rnn_ws *w, const void *g, const void *c, const void *hp, int64_t ldh,
                     const void *cp, const void *dy, void *dxg) {
  if (w->r->dt == LMX_FLOAT32) cell_bwd_f32(w, g, c, hp, ldh, cp, dy, dxg);
  else cell_bwd_f64(w, g, c, hp, ldh, cp, dy, dxg);
}
