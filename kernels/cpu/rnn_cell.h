/* rnn_cell.h — the per-step cell math of rnn.c (private; included once by rnn.c).
 *
 * cell_fwd: g[N, G·H] holds the input projection Wx x of this step, hg[N, G·H] the
 * recurrent one Wh h'. The biases are added here, the activations are stored back into
 * g (lstm i f g o, gru r z n, rnn h), c written (lstm cell, gru Whn h' + bhn) and h
 * written with leading dimension D·H into the layer output. cell_bwd turns dh (w->dh:
 * the recurrent gradient carried from the later step) plus this step's output gradient
 * into dxg (gradient of Wx x + bx) and dhs (of Wh h' + bh; the same array as dxg for
 * lstm and rnn), leaves gru's direct part z dh in w->dh (the caller adds dhs Wh) and
 * lstm's dc' in w->dc.
 * One function per mode and dtype, branch-free rows over j with restrict pointers, so
 * GCC vectorises them (the exp/tanh of cpu_math.h for float32, libm for float64), cloned
 * per vector width (LMX_SIMD_CLONES).
 */
#define SIG(v) (1 / (1 + XEXP(-(v))))

#define DEF_CELL(T, S)                                                                       \
  LMX_SIMD_CLONES static void lstm_fwd_##S(int64_t N, int64_t H, int64_t ldy, T *restrict g, \
                                           const T *restrict hg, const T *restrict bx,       \
                                           const T *restrict bh, const T *restrict cp,       \
                                           T *restrict c, T *restrict h) {                   \
    for (int64_t n = 0; n < N; n++) {                                                        \
      T *restrict gn = g + n * 4 * H;                                                        \
      const T *restrict hn = hg + n * 4 * H, *restrict cpn = cp + n * H;                     \
      T *restrict cn = c + n * H, *restrict yn = h + n * ldy;                                \
      for (int64_t j = 0; j < H; j++) {                                                      \
        T i = SIG(gn[j] + hn[j] + (bx[j] + bh[j]));                                          \
        T f = SIG(gn[H + j] + hn[H + j] + (bx[H + j] + bh[H + j]));                          \
        T gg = XTANH(gn[2 * H + j] + hn[2 * H + j] + (bx[2 * H + j] + bh[2 * H + j]));       \
        T o = SIG(gn[3 * H + j] + hn[3 * H + j] + (bx[3 * H + j] + bh[3 * H + j]));          \
        T cv = f * cpn[j] + i * gg;                                                          \
        gn[j] = i, gn[H + j] = f, gn[2 * H + j] = gg, gn[3 * H + j] = o;                     \
        cn[j] = cv;                                                                          \
        yn[j] = o * XTANH(cv);                                                               \
      }                                                                                      \
    }                                                                                        \
  }                                                                                          \
  LMX_SIMD_CLONES static void gru_fwd_##S(int64_t N, int64_t H, int64_t ldy, T *restrict g,  \
                                          const T *restrict hg, const T *restrict bx,        \
                                          const T *restrict bh, const T *restrict hp,        \
                                          int64_t ldh, T *restrict c, T *restrict h) {       \
    for (int64_t n = 0; n < N; n++) {                                                        \
      T *restrict gn = g + n * 3 * H;                                                        \
      const T *restrict hn = hg + n * 3 * H, *restrict hpn = hp + n * ldh;                   \
      T *restrict cn = c + n * H, *restrict yn = h + n * ldy;                                \
      for (int64_t j = 0; j < H; j++) {                                                      \
        T rr = SIG(gn[j] + hn[j] + (bx[j] + bh[j]));                                         \
        T z = SIG(gn[H + j] + hn[H + j] + (bx[H + j] + bh[H + j]));                          \
        T hl = hn[2 * H + j] + bh[2 * H + j];                                                \
        T nn = XTANH(gn[2 * H + j] + bx[2 * H + j] + rr * hl);                               \
        gn[j] = rr, gn[H + j] = z, gn[2 * H + j] = nn;                                       \
        cn[j] = hl;                                                                          \
        yn[j] = (1 - z) * nn + z * hpn[j];                                                   \
      }                                                                                      \
    }                                                                                        \
  }                                                                                          \
  LMX_SIMD_CLONES static void rnn_fwd_##S(int64_t N, int64_t H, int64_t ldy, int tanh_act,   \
                                          T *restrict g, const T *restrict hg,               \
                                          const T *restrict bx, const T *restrict bh,        \
                                          T *restrict h) {                                   \
    for (int64_t n = 0; n < N; n++) {                                                        \
      T *restrict gn = g + n * H, *restrict yn = h + n * ldy;                                \
      const T *restrict hn = hg + n * H;                                                     \
      if (tanh_act)                                                                          \
        for (int64_t j = 0; j < H; j++) gn[j] = yn[j] = XTANH(gn[j] + hn[j] + (bx[j] + bh[j])); \
      else                                                                                   \
        for (int64_t j = 0; j < H; j++) {                                                    \
          T a = gn[j] + hn[j] + (bx[j] + bh[j]);                                             \
          gn[j] = yn[j] = a > 0 ? a : 0;                                                     \
        }                                                                                    \
    }                                                                                        \
  }                                                                                          \
  LMX_SIMD_CLONES static void lstm_bwd_##S(int64_t N, int64_t H, int64_t ldy,                \
                                           const T *restrict g, const T *restrict c,         \
                                           const T *restrict cp, const T *restrict dy,       \
                                           const T *restrict dh, T *restrict dc,             \
                                           T *restrict dx) {                                 \
    for (int64_t n = 0; n < N; n++) {                                                        \
      const T *restrict gn = g + n * 4 * H, *restrict cn = c + n * H;                        \
      const T *restrict cpn = cp + n * H, *restrict dyn = dy + n * ldy;                      \
      const T *restrict dhn = dh + n * H;                                                    \
      T *restrict dcn = dc + n * H, *restrict dxn = dx + n * 4 * H;                          \
      for (int64_t j = 0; j < H; j++) {                                                      \
        T i = gn[j], f = gn[H + j], gg = gn[2 * H + j], o = gn[3 * H + j];                   \
        T dhv = dhn[j] + dyn[j], tc = XTANH(cn[j]);                                          \
        T dct = dcn[j] + dhv * o * (1 - tc * tc);                                            \
        dxn[j] = dct * gg * i * (1 - i);                                                     \
        dxn[H + j] = dct * cpn[j] * f * (1 - f);                                             \
        dxn[2 * H + j] = dct * i * (1 - gg * gg);                                            \
        dxn[3 * H + j] = dhv * tc * o * (1 - o);                                             \
        dcn[j] = dct * f;                                                                    \
      }                                                                                      \
    }                                                                                        \
  }                                                                                          \
  LMX_SIMD_CLONES static void gru_bwd_##S(int64_t N, int64_t H, int64_t ldy,                 \
                                          const T *restrict g, const T *restrict c,          \
                                          const T *restrict hp, int64_t ldh,                 \
                                          const T *restrict dy, T *restrict dh,              \
                                          T *restrict dx, T *restrict dH) {                  \
    for (int64_t n = 0; n < N; n++) {                                                        \
      const T *restrict gn = g + n * 3 * H, *restrict cn = c + n * H;                        \
      const T *restrict hpn = hp + n * ldh, *restrict dyn = dy + n * ldy;                    \
      T *restrict dhn = dh + n * H, *restrict dxn = dx + n * 3 * H, *restrict dHn = dH + n * 3 * H; \
      for (int64_t j = 0; j < H; j++) {                                                      \
        T rr = gn[j], z = gn[H + j], nn = gn[2 * H + j], hl = cn[j];                         \
        T dhv = dhn[j] + dyn[j];                                                             \
        T dan = dhv * (1 - z) * (1 - nn * nn);                                               \
        T dr = dan * hl * rr * (1 - rr), dz = dhv * (hpn[j] - nn) * z * (1 - z);             \
        dxn[j] = dHn[j] = dr;                                                                \
        dxn[H + j] = dHn[H + j] = dz;                                                        \
        dxn[2 * H + j] = dan;                                                                \
        dHn[2 * H + j] = dan * rr;                                                           \
        dhn[j] = dhv * z;                                                                    \
      }                                                                                      \
    }                                                                                        \
  }                                                                                          \
  LMX_SIMD_CLONES static void rnn_bwd_##S(int64_t N, int64_t H, int64_t ldy, int tanh_act,   \
                                          const T *restrict g, const T *restrict dy,         \
                                          const T *restrict dh, T *restrict dx) {            \
    for (int64_t n = 0; n < N; n++) {                                                        \
      const T *restrict gn = g + n * H, *restrict dyn = dy + n * ldy, *restrict dhn = dh + n * H; \
      T *restrict dxn = dx + n * H;                                                          \
      if (tanh_act)                                                                          \
        for (int64_t j = 0; j < H; j++) dxn[j] = (dhn[j] + dyn[j]) * (1 - gn[j] * gn[j]);    \
      else                                                                                   \
        for (int64_t j = 0; j < H; j++) dxn[j] = gn[j] > 0 ? dhn[j] + dyn[j] : 0;            \
    }                                                                                        \
  }
DEF_CELL(float, f32)
DEF_CELL(double, f64)

static void cell_fwd(const rnn_ws *w, void *g, const void *hg, const void *bx, const void *bh,
                     const void *hp, int64_t ldh, const void *cp, void *c, void *h) {
  const lmx_cpu_rnn *r = w->r;
  int f = r->dt == LMX_FLOAT32, th = r->mode == LMX_RNN_TANH;
  int64_t N = r->N, H = r->H, ldy = w->DH;
  switch (r->mode) {
    case LMX_RNN_LSTM:
      if (f) lstm_fwd_f32(N, H, ldy, g, hg, bx, bh, cp, c, h);
      else lstm_fwd_f64(N, H, ldy, g, hg, bx, bh, cp, c, h);
      break;
    case LMX_RNN_GRU:
      if (f) gru_fwd_f32(N, H, ldy, g, hg, bx, bh, hp, ldh, c, h);
      else gru_fwd_f64(N, H, ldy, g, hg, bx, bh, hp, ldh, c, h);
      break;
    default:
      if (f) rnn_fwd_f32(N, H, ldy, th, g, hg, bx, bh, h);
      else rnn_fwd_f64(N, H, ldy, th, g, hg, bx, bh, h);
  }
}

static void cell_bwd(const rnn_ws *w, const void *g, const void *c, const void *hp, int64_t ldh,
                     const void *cp, const void *dy, void *dxg, void *dhs) {
  const lmx_cpu_rnn *r = w->r;
  int f = r->dt == LMX_FLOAT32, th = r->mode == LMX_RNN_TANH;
  int64_t N = r->N, H = r->H, ldy = w->DH;
  switch (r->mode) {
    case LMX_RNN_LSTM:
      if (f) lstm_bwd_f32(N, H, ldy, g, c, cp, dy, (const float *)w->dh, (float *)w->dc, dxg);
      else lstm_bwd_f64(N, H, ldy, g, c, cp, dy, (const double *)w->dh, (double *)w->dc, dxg);
      break;
    case LMX_RNN_GRU:
      if (f) gru_bwd_f32(N, H, ldy, g, c, hp, ldh, dy, (float *)w->dh, dxg, dhs);
      else gru_bwd_f64(N, H, ldy, g, c, hp, ldh, dy, (double *)w->dh, dxg, dhs);
      break;
    default:
      if (f) rnn_bwd_f32(N, H, ldy, th, g, dy, (const float *)w->dh, dxg);
      else rnn_bwd_f64(N, H, ldy, th, g, dy, (const double *)w->dh, dxg);
  }
}
