/* winograd4.c — the arithmetic of Winograd's F(4x4, 3x3) (Lavin & Gray 2016, points 0,
 * ±1, ±2, ∞; winograd.c has the rest):
 *   Bᵀ = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0;
 *         0 4 0 -5 0 1]
 *   G  = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
 *   Aᵀ = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
 * 36 positions, tiles of 4x4 outputs from 6x6 inputs: 36 multiply-adds per 16 outputs
 * against 144 direct. Rounds more than F(2x2) (the ±2 points; about 1e-5 relative in
 * float32). Each map and its transpose (for the gradients) as a 1-D step on small arrays. */
#include "cpu_kernels.h"
#include "cpu_par.h"
#include "winograd_xf.h"

/* Bᵀ and B = (Bᵀ)ᵀ */
#define W4_BT(a, b)                                                                         \
  {                                                                                         \
    float p_ = a[4] - 4 * a[2], q_ = a[3] - 4 * a[1], r_ = a[4] - a[2], s_ = a[3] - a[1];   \
    b[0] = 4 * a[0] - 5 * a[2] + a[4], b[1] = p_ + q_, b[2] = p_ - q_;                      \
    b[3] = r_ + 2 * s_, b[4] = r_ - 2 * s_, b[5] = 4 * a[1] - 5 * a[3] + a[5];              \
  }
#define W4_B(a, b)                                                                          \
  {                                                                                         \
    float e_ = a[2] - a[1], f_ = a[4] - a[3], p_ = a[1] + a[2], q_ = a[3] + a[4];           \
    b[0] = 4 * a[0], b[1] = 4 * e_ + 2 * f_ + 4 * a[5], b[2] = -5 * a[0] - 4 * p_ - q_;     \
    b[3] = -e_ - 2 * f_ - 5 * a[5], b[4] = a[0] + p_ + q_, b[5] = a[5];                     \
  }
/* Aᵀ (6 -> 4) and A (4 -> 6) */
#define W4_AT(a, b)                                                                         \
  {                                                                                         \
    float p_ = a[1] + a[2], q_ = a[1] - a[2], r_ = a[3] + a[4], s_ = a[3] - a[4];           \
    b[0] = a[0] + p_ + r_, b[1] = q_ + 2 * s_, b[2] = p_ + 4 * r_, b[3] = q_ + 8 * s_ + a[5]; \
  }
#define W4_A(a, b)                                                                          \
  {                                                                                         \
    float p_ = a[0] + a[2], q_ = a[1] + a[3], r_ = a[0] + 4 * a[2], s_ = 2 * a[1] + 8 * a[3]; \
    b[0] = a[0], b[1] = p_ + q_, b[2] = p_ - q_, b[3] = r_ + s_, b[4] = r_ - s_, b[5] = a[3]; \
  }
/* G (3 -> 6) and Gᵀ (6 -> 3) */
#define W4_G(a, b)                                                                          \
  {                                                                                         \
    float s_ = a[0] + a[2], p_ = 0.25f * a[0] + a[2], h_ = 0.5f * a[1];                     \
    b[0] = 0.25f * a[0], b[1] = -K6 * (s_ + a[1]), b[2] = -K6 * (s_ - a[1]);                \
    b[3] = K6 * (p_ + h_), b[4] = K6 * (p_ - h_), b[5] = a[2];                              \
  }
#define W4_GT(a, b)                                                                         \
  {                                                                                         \
    float m_ = a[1] + a[2], d_ = a[2] - a[1], q_ = a[3] + a[4], e_ = a[3] - a[4];           \
    b[0] = 0.25f * a[0] - K6 * m_ + (K6 / 4) * q_, b[1] = K6 * d_ + (K6 / 2) * e_;          \
    b[2] = -K6 * m_ + K6 * q_ + a[5];                                                       \
  }
static const float K6 = 1.0f / 6;

LMX_WINO_2D(wt4, 3, 6, W4_G)
LMX_WINO_2D(wt4_adj, 6, 3, W4_GT)
LMX_WINO_2D(in4, 6, 6, W4_BT)
LMX_WINO_2D(in4_adj, 6, 6, W4_B)
LMX_WINO_2D(out4, 6, 4, W4_AT)
LMX_WINO_2D(out4_adj, 4, 6, W4_A)

const lmx_wino_xf lmx_wino_xf4 = {wt4, wt4_adj, in4, in4_adj, out4, out4_adj};
