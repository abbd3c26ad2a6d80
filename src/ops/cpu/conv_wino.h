/* conv_wino.h — the Winograd path of CPU Convolution (conv_wino.c). */
#ifndef LMX_OPS_CPU_CONV_WINO_H
#define LMX_OPS_CPU_CONV_WINO_H

#include <stddef.h>

#include "../../../kernels/cpu/cpu_kernels.h"
#include "../nn_plan.h"

#include "conv_algo.h"

/* Workspace bytes of the Winograd path for d, 0 when it does not take d. */
size_t lmx_conv_wino_ws(const lmx_conv_dims *d);
/* y (+)= conv(x, w) + bias (bias may be NULL), then the epilogue ep over each chunk's planes
 * (ep may be NULL), on the Winograd path: 1 when it ran, 0 when it does not take d or ws
 * (ws_bytes) is too small (nothing written; run the GEMM path). */
int lmx_conv_wino_fwd(const lmx_conv_dims *d, const void *x, const void *w, const void *bias,
                      void *y, int acc, const lmx_cpu_ep *ep, void *ws, size_t ws_bytes);
/* gx (+)= the data gradient and gw (+)= the weight gradient from dy (either may be NULL;
 * accx / accw: added); 1 when it ran, 0 as above. */
int lmx_conv_wino_bwd(const lmx_conv_dims *d, const void *x, const void *w, const void *dy,
                      void *gx, int accx, void *gw, int accw, void *ws, size_t ws_bytes);

#endif
