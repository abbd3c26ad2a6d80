/* dtype.h — element types: names, sizes, and conversion of single values.
 *
 * Codes are MXNet's (LMX_FLOAT32 = 0, ... in luamx.h), so they are also the codes stored
 * in .params files and JSON `__dtype__` attributes. float16 and bfloat16 are storage only:
 * arithmetic converts to float32 (IEEE binary16, and bfloat16 = the top 16 bits of a
 * float32; both round to nearest even on the way down). Codes 7..11 are gaps (MXNet
 * types luamx does not support): lmx_dtype_valid is false for them.
 */
#ifndef LMX_TENSOR_DTYPE_H
#define LMX_TENSOR_DTYPE_H

#include <stdint.h>

#include "../luamx.h"

static inline int lmx_dtype_valid(int dt) {
  return (dt >= 0 && dt <= LMX_INT64) || dt == LMX_BFLOAT16;
}
static inline int lmx_dtype_is_float(int dt) {
  return dt == LMX_FLOAT32 || dt == LMX_FLOAT64 || dt == LMX_FLOAT16 || dt == LMX_BFLOAT16;
}

/* Name or "dtype(<code>)" for unknown codes (a static string per valid code, so it is
 * safe in messages). */
const char *lmx_dtype_str(int dt);

uint16_t lmx_f32_to_f16(float f);
float lmx_f16_to_f32(uint16_t h);

/* bfloat16: round to nearest, ties to even, on the float32 bits (as MXNet's mshadow
 * bfloat16 does): overflow rounds to +-inf, subnormals round (they are not flushed), and a
 * NaN stays a NaN with its sign and top payload bits, made quiet. Widening is exact. */
static inline uint16_t lmx_f32_to_bf16(float f) {
  uint32_t x;
  __builtin_memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}
static inline float lmx_bf16_to_f32(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  __builtin_memcpy(&f, &x, 4);
  return f;
}

/* Reads element i of a typed buffer as a double, and writes a double into one
 * (integers truncate toward zero and saturate at the type's range; NaN becomes 0). */
double lmx_load_f64(const void *p, int dt, int64_t i);
void lmx_store_f64(void *p, int dt, int64_t i, double v);

#endif
