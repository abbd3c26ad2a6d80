/* dtype.h — element types: names, sizes, and conversion of single values.
 *
 * Codes are MXNet's (LMX_FLOAT32 = 0, ... in luamx.h), so they are also the codes stored
 * in .params files and JSON `__dtype__` attributes. float16 is storage only: arithmetic
 * converts to float32 (IEEE binary16, round-to-nearest-even on the way down).
 */
#ifndef LMX_TENSOR_DTYPE_H
#define LMX_TENSOR_DTYPE_H

#include <stdint.h>

#include "../luamx.h"

static inline int lmx_dtype_valid(int dt) { return dt >= 0 && dt < LMX_NUM_DTYPES; }
static inline int lmx_dtype_is_float(int dt) {
  return dt == LMX_FLOAT32 || dt == LMX_FLOAT64 || dt == LMX_FLOAT16;
}

/* Name or "dtype(<code>)" for unknown codes (a static string per valid code, so it is
 * safe in messages). */
const char *lmx_dtype_str(int dt);

uint16_t lmx_f32_to_f16(float f);
float lmx_f16_to_f32(uint16_t h);

/* Reads element i of a typed buffer as a double, and writes a double into one
 * (integers truncate toward zero and saturate at the type's range; NaN becomes 0). */
double lmx_load_f64(const void *p, int dt, int64_t i);
void lmx_store_f64(void *p, int dt, int64_t i, double v);

#endif
