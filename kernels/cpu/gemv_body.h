/* gemv_body.h — the small-m float32 FullyConnected kernels of gemv.c, written once and
 * included once per vector ISA. The includer defines:
 *   V            the vector type; VL its float lanes
 *   ISA          the target attribute of every function here
 *   F(name)      the name with the ISA's suffix
 *   VZERO(), VLOAD(p), VTAIL(p, left) (the first left < VL floats, the rest zero),
 *   VFMA(a, b, c) = a * b + c,
 *   RED8(a0..a7, s)  s[0..7] = the lane sums of a0..a7 (RED4 likewise for four),
 *   NR2          rows of w per block at m >= 2: 8 with 32 vector registers, else 4.
 *
 * Every output is one dot product: x's row against w's row, VL lanes accumulated along k
 * in order (the tail of k masked), the lanes summed by RED*. The block a row falls in
 * does not change its sum (every slot of RED* pairs lanes alike), so results do not
 * depend on the thread count or on which rows are blocked together.
 */

/* s[0..7] = x · rows w[0..7] (each k floats, rows at stride k): m = 1. Eight rows in flight
 * keep both FMA pipes busy through the 4-cycle latency with one accumulator per row, and
 * each x vector is loaded once for eight weight vectors. */
static ISA void F(dot1x8)(int64_t k, const float *x, const float *const *w, float *s) {
  V a0 = VZERO(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  const float *w0 = w[0], *w1 = w[1], *w2 = w[2], *w3 = w[3];
  const float *w4 = w[4], *w5 = w[5], *w6 = w[6], *w7 = w[7];
  int64_t p = 0;
  for (; p + VL <= k; p += VL) {
    V xv = VLOAD(x + p);
    a0 = VFMA(VLOAD(w0 + p), xv, a0), a1 = VFMA(VLOAD(w1 + p), xv, a1);
    a2 = VFMA(VLOAD(w2 + p), xv, a2), a3 = VFMA(VLOAD(w3 + p), xv, a3);
    a4 = VFMA(VLOAD(w4 + p), xv, a4), a5 = VFMA(VLOAD(w5 + p), xv, a5);
    a6 = VFMA(VLOAD(w6 + p), xv, a6), a7 = VFMA(VLOAD(w7 + p), xv, a7);
  }
  if (p < k) {
    int64_t l = k - p;
    V xv = VTAIL(x + p, l);
    a0 = VFMA(VTAIL(w0 + p, l), xv, a0), a1 = VFMA(VTAIL(w1 + p, l), xv, a1);
    a2 = VFMA(VTAIL(w2 + p, l), xv, a2), a3 = VFMA(VTAIL(w3 + p, l), xv, a3);
    a4 = VFMA(VTAIL(w4 + p, l), xv, a4), a5 = VFMA(VTAIL(w5 + p, l), xv, a5);
    a6 = VFMA(VTAIL(w6 + p, l), xv, a6), a7 = VFMA(VTAIL(w7 + p, l), xv, a7);
  }
  RED8(a0, a1, a2, a3, a4, a5, a6, a7, s);
}

#if NR2 == 4
/* s[r][c] = row x[r] · row w[c], r < 2, c < 4: m >= 2, two rows of x share each weight
 * load (8 accumulators: they and the loads fit AVX2's 16 registers). */
static ISA void F(dot2x4)(int64_t k, const float *const *x, const float *const *w, float s[2][4]) {
  V a0 = VZERO(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  const float *x0 = x[0], *x1 = x[1], *w0 = w[0], *w1 = w[1], *w2 = w[2], *w3 = w[3];
  int64_t p = 0;
  for (; p + VL <= k; p += VL) {
    V u = VLOAD(x0 + p), v = VLOAD(x1 + p), t;
    t = VLOAD(w0 + p), a0 = VFMA(t, u, a0), b0 = VFMA(t, v, b0);
    t = VLOAD(w1 + p), a1 = VFMA(t, u, a1), b1 = VFMA(t, v, b1);
    t = VLOAD(w2 + p), a2 = VFMA(t, u, a2), b2 = VFMA(t, v, b2);
    t = VLOAD(w3 + p), a3 = VFMA(t, u, a3), b3 = VFMA(t, v, b3);
  }
  if (p < k) {
    int64_t l = k - p;
    V u = VTAIL(x0 + p, l), v = VTAIL(x1 + p, l), t;
    t = VTAIL(w0 + p, l), a0 = VFMA(t, u, a0), b0 = VFMA(t, v, b0);
    t = VTAIL(w1 + p, l), a1 = VFMA(t, u, a1), b1 = VFMA(t, v, b1);
    t = VTAIL(w2 + p, l), a2 = VFMA(t, u, a2), b2 = VFMA(t, v, b2);
    t = VTAIL(w3 + p, l), a3 = VFMA(t, u, a3), b3 = VFMA(t, v, b3);
  }
  RED4(a0, a1, a2, a3, s[0]);
  RED4(b0, b1, b2, b3, s[1]);
}

#else
/* The same with 8 rows of w (16 accumulators: for AVX-512's 32 registers), so as many
 * weight rows stream at once as at m = 1. */
#define STEP2(LD, c) t = LD(w[c] + p), a[c] = VFMA(t, u, a[c]), b[c] = VFMA(t, v, b[c])
static ISA void F(dot2x8)(int64_t k, const float *const *x, const float *const *w, float s[2][8]) {
  V a[8], b[8];
  for (int c = 0; c < 8; c++) a[c] = b[c] = VZERO();
  const float *x0 = x[0], *x1 = x[1];
  int64_t p = 0;
  for (; p + VL <= k; p += VL) {
    V u = VLOAD(x0 + p), v = VLOAD(x1 + p), t;
    STEP2(VLOAD, 0), STEP2(VLOAD, 1), STEP2(VLOAD, 2), STEP2(VLOAD, 3);
    STEP2(VLOAD, 4), STEP2(VLOAD, 5), STEP2(VLOAD, 6), STEP2(VLOAD, 7);
  }
  if (p < k) {
    int64_t l = k - p;
#define TL(q) VTAIL(q, l)
    V u = TL(x0 + p), v = TL(x1 + p), t;
    STEP2(TL, 0), STEP2(TL, 1), STEP2(TL, 2), STEP2(TL, 3);
    STEP2(TL, 4), STEP2(TL, 5), STEP2(TL, 6), STEP2(TL, 7);
#undef TL
  }
  RED8(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], s[0]);
  RED8(b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], s[1]);
}
#undef STEP2
#endif

/* Rows [j0, j1) of y (j0 a multiple of the block), every row of x: m = 1 in blocks of 8
 * rows of w, m >= 2 in blocks of NR2 rows of w by 2 of x. Blocks past the end of x or w
 * repeat its last row (the extra sums are dropped), so there is one kernel per case. */
static ISA void F(rows)(int64_t m, int64_t k, int64_t n, int64_t j0, int64_t j1, float *y,
                        const float *x, const float *w, const float *b, int acc) {
  if (m == 1) {
    for (int64_t j = j0; j < j1; j += 8) {
      const float *wr[8];
      float s[8];
      for (int c = 0; c < 8; c++) wr[c] = w + (j + c < n ? j + c : n - 1) * k;
      F(dot1x8)(k, x, wr, s);
      for (int c = 0; c < 8 && j + c < j1; c++) finish(y + j + c, s[c], b, j + c, acc);
    }
    return;
  }
  /* j outer: a block of NR2 weight rows stays in L1 while every pair of x
   * rows passes over it, so w streams from memory once */
  for (int64_t j = j0; j < j1; j += NR2) {
    const float *wr[NR2];
    for (int c = 0; c < NR2; c++) wr[c] = w + (j + c < n ? j + c : n - 1) * k;
    for (int64_t i = 0; i < m; i += 2) {
      const float *xr[2] = {x + i * k, x + (i + 1 < m ? i + 1 : i) * k};
      float s[2][NR2];
#if NR2 == 8
      F(dot2x8)(k, xr, wr, s);
#else
      F(dot2x4)(k, xr, wr, s);
#endif
      for (int r = 0; r < 2 && i + r < m; r++)
        for (int c = 0; c < NR2 && j + c < j1; c++)
          finish(y + (i + r) * n + j + c, s[r][c], b, j + c, acc);
    }
  }
}
