/* cpu_math.h — private to the CPU kernels: float32 exp and tanh written so the compiler
 * vectorises loops that call them (glibc's expf/tanhf are scalar calls at -O3 without
 * -ffast-math, which would cap sigmoid/tanh/softmax far below memory bandwidth).
 *
 * lmx_fexpf: Cody-Waite range reduction x = n ln2 + r, a degree-6 polynomial for e^r
 * (Cephes expf coefficients, ~1 ulp on the normal range), 2^n built in the exponent
 * bits without a float->int conversion (see lmx_fexp_reduce); measured max error 1.33
 * ulp. Inputs are clamped to [-87.3, 88.37] (results stay finite and normal; beyond, the
 * true value under/overflows, and sigmoid saturates the same way); NaN propagates.
 * lmx_ftanhf: the same reduction gives e^{2|x|} - 1 without cancellation, and tanh is
 * one division of it, sign restored (measured max relative error 1.8e-7 over all
 * floats). It costs about 21 vector operations, half of a polynomial-near-0 version
 * that evaluates both branches and blends (64K floats, one thread: 11 us instead of 20).
 * XEXP / XTANH pick these for float and libm's exp / tanh for double (_Generic), so the
 * one expression in each X-macro row serves both siblings.
 */
#ifndef LMX_KERNELS_CPU_MATH_H
#define LMX_KERNELS_CPU_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* e^c = 2^n (1 + em): returns em = e^r - 1 (r = c - n ln2, |r| <= ln2/2) and sets *scale
 * to 2^n. c must already be clamped to [-87.3, 88.37] (or NaN, which propagates to em).
 * n is rounded by adding 1.5 * 2^23: it then sits in the low mantissa bits of tm, so 2^n
 * is built with unsigned integer arithmetic on those bits (defined for every input, NaN
 * included) and no float->int conversion is needed, which lets loops vectorise at full
 * width. em is returned rather than e^r so tanh gets e^u - 1 without cancellation. */
static inline float lmx_fexp_reduce(float c, float *scale) {
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
  uint32_t bits = (tb - 0x4B400000u + 127u) << 23;
  memcpy(scale, &bits, sizeof *scale);
  return p * z + r;
}

static inline float lmx_fexpf(float x) {
  float c = x < -87.3f ? -87.3f : x;
  c = c > 88.37f ? 88.37f : c; /* NaN stays NaN and propagates through r and p */
  float scale, em = lmx_fexp_reduce(c, &scale);
  return (em + 1.0f) * scale;
}

/* tanh|x| = E / (E + 2) with E = e^{2|x|} - 1 = 2^n em + (2^n - 1): one reduction, one
 * division, no cancellation near 0 (E is em there, accurate to ~1 ulp relative), so no
 * separate small-argument polynomial and no second branch to blend. 2|x| is clamped at
 * 40, where E + 2 rounds to E and the result is exactly 1. The sign is or-ed back in
 * from x's bits (so -0 stays -0 and NaN stays NaN). */
static inline float lmx_ftanhf(float x) {
  float u = 2.0f * fabsf(x);
  u = u > 40.0f ? 40.0f : u;
  float s, em = lmx_fexp_reduce(u, &s);
  float e = s * em + (s - 1.0f);
  float t = e / (e + 2.0f);
  uint32_t tb, xb;
  memcpy(&tb, &t, sizeof tb);
  memcpy(&xb, &x, sizeof xb);
  tb |= xb & 0x80000000u;
  memcpy(&t, &tb, sizeof t);
  return t;
}

#define XEXP(v) _Generic((v), float: lmx_fexpf, default: exp)(v)
#define XTANH(v) _Generic((v), float: lmx_ftanhf, default: tanh)(v)

#endif
