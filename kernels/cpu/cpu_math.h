/* cpu_math.h — private to the CPU kernels: float32 exp and tanh written so the compiler
 * vectorises loops that call them (glibc's expf/tanhf are scalar calls at -O3 without
 * -ffast-math, which would cap sigmoid/tanh/softmax far below memory bandwidth).
 *
 * lmx_fexpf: Cody-Waite range reduction x = n ln2 + r, a degree-6 polynomial for e^r
 * (Cephes expf coefficients, ~1 ulp on the normal range), 2^n built in the exponent
 * bits without a float->int conversion (see the body); measured max error 1.33 ulp. Inputs are clamped to [-87.3, 88.37] (results stay
 * finite and normal; beyond, the true value under/overflows, and sigmoid/tanh saturate
 * the same way); NaN propagates.
 * lmx_ftanhf: odd polynomial for |x| < 0.625 (no cancellation near 0), else
 * 1 - 2 / (e^{2|x|} + 1) with the sign restored (max error ~2 ulp).
 * XEXP / XTANH pick these for float and libm's exp / tanh for double (_Generic), so the
 * one expression in each X-macro row serves both siblings.
 */
#ifndef LMX_KERNELS_CPU_MATH_H
#define LMX_KERNELS_CPU_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float lmx_fexpf(float x) {
  float c = x < -87.3f ? -87.3f : x;
  c = c > 88.37f ? 88.37f : c; /* NaN stays NaN and propagates through r and p */
  /* Round t = c / ln2 to an integer n by adding 1.5 * 2^23: n then sits in the low
   * mantissa bits of tm, so 2^n is built with unsigned integer arithmetic on those bits
   * (defined for every input, NaN included) and no float->int conversion is needed,
   * which lets the loop vectorise at full width. */
  float tm = c * 1.44269504088896341f + 12582912.0f;
  float n = tm - 12582912.0f;
  uint32_t tb;
  memcpy(&tb, &tm, sizeof tb);
  float r = c - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float z = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * z + r + 1.0f;
  uint32_t bits = (tb - 0x4B400000u + 127u) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

static inline float lmx_ftanhf(float x) {
  float a = fabsf(x), z = x * x;
  float s = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
              1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
  float big = 1.0f - 2.0f / (lmx_fexpf(2.0f * a) + 1.0f);
  big = x < 0 ? -big : big;
  return a < 0.625f ? s : big;
}

#define XEXP(v) _Generic((v), float: lmx_fexpf, default: exp)(v)
#define XTANH(v) _Generic((v), float: lmx_ftanhf, default: tanh)(v)

#endif
