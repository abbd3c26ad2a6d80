/* convert.c — dtype conversion and fills. Fast paths for the common pairs; the rest
 * goes value by value through double (exact for every supported integer range except
 * int64 above 2^53, which MXNet also converts through floating point). */
#include <string.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"

void lmx_cpu_convert(void *dst, int dt, const void *src, int st, int64_t n) {
  if (dt == st) {
    memmove(dst, src, (size_t)n * (size_t)lmx_dtype_size(dt));
    return;
  }
  if (dt == LMX_FLOAT64 && st == LMX_FLOAT32) {
    double *d = dst;
    const float *s = src;
    for (int64_t i = 0; i < n; i++) d[i] = s[i];
  } else if (dt == LMX_FLOAT32 && st == LMX_FLOAT64) {
    float *d = dst;
    const double *s = src;
    for (int64_t i = 0; i < n; i++) d[i] = (float)s[i];
  } else if (dt == LMX_FLOAT32 && st == LMX_FLOAT16) {
    float *d = dst;
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++) d[i] = lmx_f16_to_f32(s[i]);
  } else if (dt == LMX_FLOAT16 && st == LMX_FLOAT32) {
    uint16_t *d = dst;
    const float *s = src;
    for (int64_t i = 0; i < n; i++) d[i] = lmx_f32_to_f16(s[i]);
  } else if (dt == LMX_FLOAT32 && st == LMX_BFLOAT16) {
    float *d = dst;
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++) d[i] = lmx_bf16_to_f32(s[i]);
  } else if (dt == LMX_BFLOAT16 && st == LMX_FLOAT32) {
    uint16_t *d = dst;
    const float *s = src;
    for (int64_t i = 0; i < n; i++) d[i] = lmx_f32_to_bf16(s[i]);
  } else {
    for (int64_t i = 0; i < n; i++) lmx_store_f64(dst, dt, i, lmx_load_f64(src, st, i));
  }
}

void lmx_cpu_fill(void *p, int dt, int64_t n, double value) {
  if (n <= 0) return;
  if (dt == LMX_FLOAT32) {
    float v = (float)value, *d = p;
    for (int64_t i = 0; i < n; i++) d[i] = v;
    return;
  }
  if (dt == LMX_FLOAT64) {
    double *d = p;
    for (int64_t i = 0; i < n; i++) d[i] = value;
    return;
  }
  /* store once, then replicate the element bytes */
  size_t es = (size_t)lmx_dtype_size(dt);
  lmx_store_f64(p, dt, 0, value);
  for (int64_t i = 1; i < n; i++) memcpy((char *)p + (size_t)i * es, p, es);
}
