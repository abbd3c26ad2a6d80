/* winograd2.c — the arithmetic of Winograd's F(2x2, 3x3) (winograd.c has the rest):
 *   Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; ½ ½ ½; ½ -½ ½; 0 0 1],
 *   Aᵀ = [1 1 1 0; 0 1 -1 -1];
 * 16 positions, tiles of 2x2 outputs from 4x4 inputs. Each map and its transpose (for the
 * gradients) as a 1-D step on small arrays. */
#include "cpu_kernels.h"
#include "cpu_par.h"
#include "winograd_xf.h"

/* Bᵀ and B = (Bᵀ)ᵀ */
#define W2_BT(a, b) { b[0] = a[0] - a[2], b[1] = a[1] + a[2], b[2] = a[2] - a[1], b[3] = a[1] - a[3]; }
#define W2_B(a, b) { b[0] = a[0], b[1] = a[1] - a[2] + a[3], b[2] = a[1] + a[2] - a[0], b[3] = -a[3]; }
/* Aᵀ (4 -> 2) and A (2 -> 4) */
#define W2_AT(a, b) { b[0] = a[0] + a[1] + a[2], b[1] = a[1] - a[2] - a[3]; }
#define W2_A(a, b) { b[0] = a[0], b[1] = a[0] + a[1], b[2] = a[0] - a[1], b[3] = -a[1]; }
/* G (3 -> 4) and Gᵀ (4 -> 3) */
#define W2_G(a, b)                                                                          \
  {                                                                                         \
    float h_ = 0.5f * (a[0] + a[2]), k_ = 0.5f * a[1];                                      \
    b[0] = a[0], b[1] = h_ + k_, b[2] = h_ - k_, b[3] = a[2];                               \
  }
#define W2_GT(a, b)                                                                         \
  {                                                                                         \
    float h_ = 0.5f * (a[1] + a[2]), k_ = 0.5f * (a[1] - a[2]);                             \
    b[0] = a[0] + h_, b[1] = k_, b[2] = h_ + a[3];                                          \
  }

LMX_WINO_2D(wt2, 3, 4, W2_G)
LMX_WINO_2D(wt2_adj, 4, 3, W2_GT)
LMX_WINO_2D(in2, 4, 4, W2_BT)
LMX_WINO_2D(in2_adj, 4, 4, W2_B)
LMX_WINO_2D(out2, 4, 2, W2_AT)
LMX_WINO_2D(out2_adj, 2, 4, W2_A)

const lmx_wino_xf lmx_wino_xf2 = {wt2, wt2_adj, in2, in2_adj, out2, out2_adj};
