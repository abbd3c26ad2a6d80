/* test_bfloat16.c — the bfloat16 dtype (MXNet code 12): the float32 -> bfloat16
 * rounding against an independent reference (the nearer of the two neighbouring
 * bfloat16 values, measured in double, ties to the even one) over every upper half
 * of the float32 bit patterns with the lower halves that decide rounding, the exact
 * widening, NaN and infinity handling, the dtype table, the CPU conversion, fill and
 * value load/store paths, and the float16/bfloat16 elementwise kernels (float32
 * inside). Prints "N passed, N failed" and exits non-zero on failure. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../kernels/cpu/cpu_kernels.h"
#include "core/status.h"
#include "luamx.h"
#include "tensor/dtype.h"

#include "check.h"

static float f_of(uint32_t x) {
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static uint32_t bits_of(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  return x;
}

/* The value of a non-NaN bfloat16 magnitude pattern, with 0x7f80 read as 2^128 (the
 * value IEEE rounding compares against when a result overflows to infinity). */
static double mag_value(uint32_t b) {
  if (b == 0x7f80u) return ldexp(1.0, 128);
  return (double)f_of(b << 16);
}

/* Reference rounding of a non-NaN float32 bit pattern. */
static uint16_t ref_round(uint32_t x) {
  uint32_t sign = x & 0x80000000u, mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) return (uint16_t)((sign | mag) >> 16); /* infinity */
  uint32_t lo = mag >> 16, hi = lo + 1;
  double v = (double)f_of(mag), dlo = v - mag_value(lo), dhi = mag_value(hi) - v;
  uint32_t r = dlo < dhi ? lo : dhi < dlo ? hi : (lo & 1u) ? hi : lo;
  return (uint16_t)((sign >> 16) | r);
}

static void test_rounding_sweep(void) {
  /* lower halves: exact, just above exact, just below / at / just above the midpoint,
   * just below the next value, and a few others */
  static const uint32_t lows[] = {0x0000, 0x0001, 0x3fff, 0x7ffe, 0x7fff, 0x8000,
                                  0x8001, 0xc000, 0xfffe, 0xffff};
  int bad = 0, nan_bad = 0, checked = 0;
  for (uint32_t up = 0; up < 0x10000u; up++)
    for (unsigned k = 0; k < sizeof lows / sizeof lows[0]; k++) {
      uint32_t x = (up << 16) | lows[k];
      uint16_t got = lmx_f32_to_bf16(f_of(x));
      if ((x & 0x7fffffffu) > 0x7f800000u) { /* NaN: stays NaN, sign kept, made quiet */
        float back = lmx_bf16_to_f32(got);
        if (!isnan(back) || (got & 0x8000u) != ((x >> 16) & 0x8000u) || !(got & 0x40u))
          nan_bad++;
        continue;
      }
      checked++;
      if (got != ref_round(x)) {
        if (bad < 5) CHECK(0, "x=0x%08x got 0x%04x want 0x%04x", x, got, ref_round(x));
        bad++;
      }
    }
  CHECK(bad == 0, "%d of %d patterns round wrong", bad, checked);
  CHECK(nan_bad == 0, "%d NaN patterns lost their NaN-ness, sign or quiet bit", nan_bad);
}

static void test_classes(void) {
  /* widening is exact and narrowing it back is the identity (NaNs aside) */
  int bad = 0;
  for (uint32_t b = 0; b < 0x10000u; b++) {
    float f = lmx_bf16_to_f32((uint16_t)b);
    if (bits_of(f) != b << 16) bad++;
    if (!isnan(f) && lmx_f32_to_bf16(f) != b) bad++;
  }
  CHECK(bad == 0, "%d bfloat16 values do not round-trip", bad);

  CHECK(lmx_f32_to_bf16(1.0f) == 0x3f80);
  CHECK(lmx_f32_to_bf16(-2.0f) == 0xc000);
  CHECK(lmx_f32_to_bf16(INFINITY) == 0x7f80 && lmx_f32_to_bf16(-INFINITY) == 0xff80);
  CHECK(lmx_f32_to_bf16(0.0f) == 0x0000 && lmx_f32_to_bf16(-0.0f) == 0x8000);
  /* ties: 1 + 2^-8 is halfway between 1 (even) and 1 + 2^-7 (odd): down;
   * 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): up */
  CHECK(lmx_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);
  CHECK(lmx_f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);
  CHECK(lmx_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-23f) == 0x3f81); /* past the tie: up */
  /* the largest finite float32 and the tie just below it overflow to infinity; the
   * largest bfloat16 (0x7f7f) survives */
  CHECK(lmx_f32_to_bf16(f_of(0x7f7fffffu)) == 0x7f80);
  CHECK(lmx_f32_to_bf16(f_of(0x7f7f8000u)) == 0x7f80);
  CHECK(lmx_f32_to_bf16(f_of(0x7f7f7fffu)) == 0x7f7f);
  CHECK(lmx_f32_to_bf16(-f_of(0x7f7f8000u)) == 0xff80);
  /* subnormals round, they are not flushed: the least float32 subnormal goes to 0, the
   * least bfloat16 subnormal (2^-133) stays, and 1.5 of it ties up to the even 2 */
  CHECK(lmx_f32_to_bf16(f_of(0x00000001u)) == 0x0000);
  CHECK(lmx_f32_to_bf16(0x1p-133f) == 0x0001);
  CHECK(lmx_f32_to_bf16(0x1.8p-133f) == 0x0002);
  CHECK(lmx_f32_to_bf16(f_of(0x007fffffu)) == 0x0080); /* up into the least normal */
  /* NaN: a signalling NaN becomes quiet; a NaN whose payload sits in the low half only
   * does not become infinity */
  CHECK(lmx_f32_to_bf16(f_of(0x7f800001u)) == 0x7fc0);
  CHECK(lmx_f32_to_bf16(f_of(0xffc00000u)) == 0xffc0);
  CHECK(isnan(lmx_bf16_to_f32(lmx_f32_to_bf16(NAN))));
}

static void test_table(void) {
  int dt = -1;
  CHECK(LMX_BFLOAT16 == 12);
  CHECK(lmx_dtype_from_name("bfloat16", &dt) == LMX_OK && dt == LMX_BFLOAT16);
  CHECK(strcmp(lmx_dtype_name(LMX_BFLOAT16), "bfloat16") == 0);
  CHECK(lmx_dtype_size(LMX_BFLOAT16) == 2);
  CHECK(lmx_dtype_valid(LMX_BFLOAT16) && lmx_dtype_is_float(LMX_BFLOAT16));
  for (int gap = LMX_INT64 + 1; gap < LMX_BFLOAT16; gap++) {
    CHECK(!lmx_dtype_valid(gap) && lmx_dtype_name(gap) == NULL && lmx_dtype_size(gap) == 0,
          "code %d", gap);
  }
  CHECK(!lmx_dtype_valid(LMX_NUM_DTYPES) && lmx_dtype_name(LMX_NUM_DTYPES) == NULL);
  int64_t dims[1] = {3};
  lmx_ndarray *arr = NULL;
  CHECK(lmx_ndarray_new(dims, 1, 9, LMX_CPU, 0, &arr) == LMX_ERR_ARG && arr == NULL);
  CHECK(strstr(lmx_errmsg(), "unknown dtype code 9 (expected 0..6 or 12)") != NULL);
  CHECK(lmx_ndarray_new(dims, 1, LMX_BFLOAT16, LMX_CPU, 0, &arr) == LMX_OK);
  CHECK(lmx_ndarray_dtype(arr, &dt) == LMX_OK && dt == LMX_BFLOAT16);
  lmx_ndarray_free(arr);
  CHECK(lmx_dtype_from_name("bool", &dt) == LMX_ERR_ARG);
  CHECK(strstr(lmx_errmsg(), "unknown dtype 'bool' (expected one of float32, float64, "
                             "float16, uint8, int32, int8, int64, bfloat16)") != NULL);
}

static void test_cpu_paths(void) {
  enum { N = 9 };
  const float src[N] = {1.0f, -2.5f, 3.14159f, 1e-40f, 1e38f, 3.39e38f, -0.0f, 1.0f + 0x1p-8f,
                        0x1p-133f};
  uint16_t b[N], want[N];
  float back[N];
  for (int i = 0; i < N; i++) want[i] = lmx_f32_to_bf16(src[i]);
  lmx_cpu_convert(b, LMX_BFLOAT16, src, LMX_FLOAT32, N);
  CHECK(memcmp(b, want, sizeof b) == 0, "float32 -> bfloat16 differs from the scalar rounding");
  lmx_cpu_convert(back, LMX_FLOAT32, b, LMX_BFLOAT16, N);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += bits_of(back[i]) != (uint32_t)want[i] << 16;
  CHECK(bad == 0, "bfloat16 -> float32 not exact");
  /* through double (the generic path: float64, integers, float16) */
  double d[N];
  lmx_cpu_convert(d, LMX_FLOAT64, b, LMX_BFLOAT16, N);
  uint16_t b2[N];
  lmx_cpu_convert(b2, LMX_BFLOAT16, d, LMX_FLOAT64, N);
  CHECK(memcmp(b, b2, sizeof b) == 0, "bfloat16 -> float64 -> bfloat16 not the identity");
  int32_t ints[3] = {7, -300, 65535};
  uint16_t bi[3];
  lmx_cpu_convert(bi, LMX_BFLOAT16, ints, LMX_INT32, 3);
  CHECK(lmx_bf16_to_f32(bi[0]) == 7 && lmx_bf16_to_f32(bi[1]) == -300 &&
        lmx_bf16_to_f32(bi[2]) == 65536); /* 65535 needs 16 bits: rounds up to 2^16 */
  uint16_t fl[5];
  lmx_cpu_fill(fl, LMX_BFLOAT16, 5, 0.1);
  CHECK(fl[0] == 0x3dcd && fl[4] == 0x3dcd, "fill 0.1 gave 0x%04x", fl[0]);
  lmx_store_f64(fl, LMX_BFLOAT16, 1, -1e300);
  CHECK(fl[1] == 0xff80 && lmx_load_f64(fl, LMX_BFLOAT16, 1) == -INFINITY);
  CHECK(lmx_load_f64(fl, LMX_BFLOAT16, 0) == (double)0.10009765625f);
}

/* The half-precision elementwise paths: the float32 kernel on the widened inputs, rounded
 * once; across chunk boundaries (n = 1100), accumulating, and in place. */
static void test_elementwise_half(void) {
  enum { N = 1100 };
  static float x32[N], y32[N], o32[N], acc32[N];
  static uint16_t xh[N], yh[N], oh[N], want[N];
  static const int dts[2] = {LMX_FLOAT16, LMX_BFLOAT16};
  for (int t = 0; t < 2; t++) {
    int dt = dts[t], bad = 0;
    for (int i = 0; i < N; i++) {
      lmx_store_f64(xh, dt, i, -3.0 + 6.0 * ((i * 37) % N) / N);
      lmx_store_f64(yh, dt, i, 0.5 + 2.0 * ((i * 11) % N) / N);
    }
    lmx_cpu_convert(x32, LMX_FLOAT32, xh, dt, N);
    lmx_cpu_convert(y32, LMX_FLOAT32, yh, dt, N);
    /* unary forward, then accumulate into the result */
    CHECK(lmx_cpu_unary(LMX_UN_TANH, dt, N, oh, xh, 0) == 0);
    lmx_cpu_unary(LMX_UN_TANH, LMX_FLOAT32, N, o32, x32, 0);
    lmx_cpu_convert(want, dt, o32, LMX_FLOAT32, N);
    bad += memcmp(oh, want, sizeof oh) != 0;
    lmx_cpu_convert(acc32, LMX_FLOAT32, oh, dt, N);
    CHECK(lmx_cpu_ew_binary(LMX_BIN_MUL, dt, N, oh, xh, yh, 1) == 0);
    lmx_cpu_ew_binary(LMX_BIN_MUL, LMX_FLOAT32, N, acc32, x32, y32, 1);
    lmx_cpu_convert(want, dt, acc32, LMX_FLOAT32, N);
    bad += 2 * (memcmp(oh, want, sizeof oh) != 0);
    /* in place: x <- x * 1.7 (scalar op), and the unary backward with NULL x */
    memcpy(oh, xh, sizeof oh);
    CHECK(lmx_cpu_scalar_op(LMX_SC_MUL, dt, N, oh, oh, 1.7, 0) == 0);
    lmx_cpu_scalar_op(LMX_SC_MUL, LMX_FLOAT32, N, o32, x32, 1.7, 0);
    lmx_cpu_convert(want, dt, o32, LMX_FLOAT32, N);
    bad += 4 * (memcmp(oh, want, sizeof oh) != 0);
    CHECK(lmx_cpu_unary_bwd(LMX_UN_EXP, dt, N, oh, xh, NULL, yh, 0) == 0);
    lmx_cpu_unary_bwd(LMX_UN_EXP, LMX_FLOAT32, N, o32, x32, NULL, y32, 0);
    lmx_cpu_convert(want, dt, o32, LMX_FLOAT32, N);
    bad += 8 * (memcmp(oh, want, sizeof oh) != 0);
    /* scale with accumulation (add_n, the device add) */
    memcpy(oh, yh, sizeof oh);
    CHECK(lmx_cpu_scale(dt, N, oh, xh, 1.0, 1) == 0);
    for (int i = 0; i < N; i++) o32[i] = y32[i] + x32[i];
    lmx_cpu_convert(want, dt, o32, LMX_FLOAT32, N);
    bad += 16 * (memcmp(oh, want, sizeof oh) != 0);
    CHECK(bad == 0, "%s: mismatch mask %d", lmx_dtype_str(dt), bad);
  }
  uint8_t u[4] = {0};
  CHECK(lmx_cpu_unary(LMX_UN_EXP, LMX_UINT8, 4, u, u, 0) == -1);
  CHECK(lmx_cpu_half_map(LMX_FLOAT32, 4, u, 0, 0, NULL, NULL, NULL) == -1);
}

int main(void) {
  test_rounding_sweep();
  test_classes();
  test_table();
  test_cpu_paths();
  test_elementwise_half();
  return check_summary();
}
