/* cu_convert.h — CUDA launchers for dtype conversion and fills (kernels/cpu/convert.c).
 * Device pointers; stream first; return 0, a cudaError_t code, or -1 for a bad dtype. */
#ifndef LMX_KERNELS_CU_CONVERT_H
#define LMX_KERNELS_CU_CONVERT_H

#include "cu_base.h"

LMX_CU_BEGIN

/* dst[n] (dtype dt) <- src[n] (dtype st), any of the 7 dtypes each way, with the CPU's
 * rules bit for bit: through double, float16 rounded to nearest even from float (so a
 * float64 value rounds to float first, as lmx_store_f64 does), integers truncated toward
 * zero and saturated, NaN to integer 0. dst and src must not overlap unless dt == st
 * and dst == src. */
int lmx_cu_convert(lmx_cu_stream s, void *dst, int dt, const void *src, int st, int64_t n);

/* p[n] (dtype dt) <- value converted as lmx_store_f64 converts it */
int lmx_cu_fill(lmx_cu_stream s, void *p, int dt, int64_t n, double value);

/* Host helpers (no launch): the float16 bits of f rounded to nearest even, and the float
 * of float16 bits — the same routines the kernels run, for tests and the glue. */
uint16_t lmx_cu_host_f32_to_f16(float f);
float lmx_cu_host_f16_to_f32(uint16_t h);

LMX_CU_END

#endif
