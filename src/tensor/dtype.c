/* dtype.c — dtype table and value conversion (see dtype.h). */
#include "dtype.h"

#include <math.h>
#include <string.h>

#include "../core/status.h"

static const struct {
  const char *name;
  int size;
} g_dtypes[LMX_NUM_DTYPES] = {
    [LMX_FLOAT32] = {"float32", 4}, [LMX_FLOAT64] = {"float64", 8},
    [LMX_FLOAT16] = {"float16", 2}, [LMX_UINT8] = {"uint8", 1},
    [LMX_INT32] = {"int32", 4},     [LMX_INT8] = {"int8", 1},
    [LMX_INT64] = {"int64", 8},     [LMX_BFLOAT16] = {"bfloat16", 2},
};

const char *lmx_dtype_name(int dt) { return lmx_dtype_valid(dt) ? g_dtypes[dt].name : NULL; }

int lmx_dtype_size(int dt) { return lmx_dtype_valid(dt) ? g_dtypes[dt].size : 0; }

const char *lmx_dtype_str(int dt) {
  return lmx_dtype_valid(dt) ? g_dtypes[dt].name : "unknown dtype";
}

int lmx_dtype_from_name(const char *name, int *dtype) {
  if (!name || !dtype) return lmx_fail(LMX_ERR_ARG, "dtype: name and out must not be NULL");
  for (int i = 0; i < LMX_NUM_DTYPES; i++) {
    if (g_dtypes[i].name && strcmp(name, g_dtypes[i].name) == 0) {
      *dtype = i;
      return LMX_OK;
    }
  }
  return lmx_fail(LMX_ERR_ARG,
                  "unknown dtype '%s' (expected one of float32, float64, float16, uint8, "
                  "int32, int8, int64, bfloat16)",
                  name);
}

uint16_t lmx_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) /* inf or nan */
    return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
  if (absx < 0x38800000u) {                                     /* subnormal or zero */
    if (absx < 0x33000000u) return sign;                       /* below half the least subnormal */
    uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)(absx >> 23); /* 14..24: value = mant * 2^(e-150), unit 2^-24 */
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t h = ((absx >> 13) - (112u << 10)); /* rebias exponent 127 -> 15 */
  uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}

float lmx_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else { /* subnormal: normalise */
      int e = -1;
      do {
        e++;
        mant <<= 1;
      } while (!(mant & 0x400u));
      x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}

double lmx_load_f64(const void *p, int dt, int64_t i) {
  switch (dt) {
    case LMX_FLOAT32: return ((const float *)p)[i];
    case LMX_FLOAT64: return ((const double *)p)[i];
    case LMX_FLOAT16: return lmx_f16_to_f32(((const uint16_t *)p)[i]);
    case LMX_UINT8: return ((const uint8_t *)p)[i];
    case LMX_INT32: return ((const int32_t *)p)[i];
    case LMX_INT8: return ((const int8_t *)p)[i];
    case LMX_INT64: return (double)((const int64_t *)p)[i];
    case LMX_BFLOAT16: return lmx_bf16_to_f32(((const uint16_t *)p)[i]);
    default: return 0;
  }
}

static double clampd(double v, double lo, double hi) {
  if (isnan(v)) return 0;
  return v < lo ? lo : v > hi ? hi : v;
}

void lmx_store_f64(void *p, int dt, int64_t i, double v) {
  switch (dt) {
    case LMX_FLOAT32: ((float *)p)[i] = (float)v; break;
    case LMX_FLOAT64: ((double *)p)[i] = v; break;
    case LMX_FLOAT16: ((uint16_t *)p)[i] = lmx_f32_to_f16((float)v); break;
    case LMX_UINT8: ((uint8_t *)p)[i] = (uint8_t)clampd(v, 0, 255); break;
    case LMX_INT32: ((int32_t *)p)[i] = (int32_t)clampd(v, -2147483648.0, 2147483647.0); break;
    case LMX_INT8: ((int8_t *)p)[i] = (int8_t)clampd(v, -128, 127); break;
    case LMX_INT64:
      ((int64_t *)p)[i] = (int64_t)clampd(v, -9223372036854775808.0, 9223372036854774784.0);
      break;
    case LMX_BFLOAT16: ((uint16_t *)p)[i] = lmx_f32_to_bf16((float)v); break;
    default: break;
  }
}
