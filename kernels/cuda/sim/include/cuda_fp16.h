/* cuda_fp16.h — the CUDA simulator's stand-in: __half as IEEE binary16 storage with
 * round-to-nearest-even conversions (the same results as the GPU's cvt.rn.f16.f32).
 * Arithmetic on __half is done by converting to float, as kernels here always do. */
#ifndef LMX_SIM_CUDA_FP16_H
#define LMX_SIM_CUDA_FP16_H

#ifdef __cplusplus
#include <stdint.h>
#include <string.h>

struct __half {
  uint16_t __x;
  __half() = default;
  constexpr explicit __half(uint16_t bits, int) : __x(bits) {}
};

static inline __half __float2half_rn(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t a = x & 0x7fffffffu;
  uint16_t h;
  if (a > 0x7f800000u) {
    h = (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN stays NaN */
  } else if (a >= 0x477ff000u) {
    h = (uint16_t)(sign | 0x7c00u); /* overflow (and inf) */
  } else if (a < 0x38800000u) { /* subnormal or zero in half */
    if (a < 0x33000000u) {
      h = sign;
    } else {
      uint32_t mant = (a & 0x7fffffu) | 0x800000u;
      int shift = 126 - (int)(a >> 23);
      uint32_t v = mant >> shift, rem = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1);
      if (rem > mid || (rem == mid && (v & 1u))) v++;
      h = (uint16_t)(sign | v);
    }
  } else {
    uint32_t v = (a >> 13) - (112u << 10), rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (v & 1u))) v++;
    h = (uint16_t)(sign | v);
  }
  return __half(h, 0);
}
static inline __half __float2half(float f) { return __float2half_rn(f); }

static inline float __half2float(__half h) {
  uint32_t sign = (uint32_t)(h.__x & 0x8000u) << 16, e = (h.__x >> 10) & 0x1fu,
           m = h.__x & 0x3ffu, x;
  if (e == 0) {
    if (m == 0) {
      x = sign;
    } else { /* subnormal: normalise */
      int k = 0;
      while (!(m & 0x400u)) { m <<= 1; k++; }
      x = sign | ((uint32_t)(113 - k) << 23) | ((m & 0x3ffu) << 13);
    }
  } else if (e == 31) {
    x = sign | 0x7f800000u | (m << 13);
  } else {
    x = sign | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline __half __ushort_as_half(unsigned short b) { return __half(b, 0); }
#endif

#endif
