/* convert.cu — dtype conversion between the 7 dtypes and fills.
 *
 * Conversion mirrors kernels/cpu/convert.c exactly: the value goes through double
 * (float16 widened exactly through float), and the store applies lmx_store_f64's rule
 * (cu_util.cuh): float16 from (float)v with the CPU's round-to-nearest-even bit routine,
 * integers saturated and truncated, NaN to 0. The CPU's fast paths (float32 <-> float64,
 * float16 <-> float32) give the same values as the double route, so one kernel per pair
 * serves. Same dtype is a plain element copy. A fill converts the value once on the host
 * with the same store and replicates its bytes.
 */
#include "cu_convert.h"
#include "cu_util.cuh"

template <typename D, typename S>
__global__ void k_convert(int64_t n, D *dst, const S *src) {
  /* through the source's compute type, not always double: float16 -> float32 must keep a
   * signalling NaN's bits (a float -> double conversion would quiet it), as the CPU does */
  typedef typename lmx_cu_acc<S>::type A;
  LMX_CU_GRID_LOOP(i, n) lmx_cu_st(dst, i, (A)lmx_cu_ld(src, i));
}

template <typename U>
__global__ void k_fill(int64_t n, U *p, U v) {
  LMX_CU_GRID_LOOP(i, n) p[i] = v;
}

template <typename U>
__global__ void k_copy_bits(int64_t n, U *o, const U *x) {
  LMX_CU_GRID_LOOP(i, n) o[i] = x[i];
}

template <typename D>
static int convert_from(lmx_cu_stream s, D *dst, const void *src, int st, int64_t n) {
  unsigned g = lmx_cu_blocks(n);
  switch (st) {
#define CV(CODE, S)                                                                       \
  case CODE: LMX_LAUNCH((k_convert<D, S>), g, LMX_CU_THREADS, 0, s, n, dst, (const S *)src); break;
    CV(LMX_FLOAT32, float)
    CV(LMX_FLOAT64, double)
    CV(LMX_FLOAT16, lmx_h16)
    CV(LMX_UINT8, uint8_t)
    CV(LMX_INT32, int32_t)
    CV(LMX_INT8, int8_t)
    CV(LMX_INT64, int64_t)
#undef CV
    default: return -1;
  }
  return lmx_cu_last_error();
}

static int esize(int dt) {
  switch (dt) {
    case LMX_FLOAT32: case LMX_INT32: return 4;
    case LMX_FLOAT64: case LMX_INT64: return 8;
    case LMX_FLOAT16: return 2;
    case LMX_UINT8: case LMX_INT8: return 1;
    default: return 0;
  }
}

template <typename U>
static int copy_bits(lmx_cu_stream s, void *dst, const void *src, int64_t n) {
  LMX_LAUNCH(k_copy_bits<U>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, n, (U *)dst,
             (const U *)src);
  return lmx_cu_last_error();
}

int lmx_cu_convert(lmx_cu_stream s, void *dst, int dt, const void *src, int st, int64_t n) {
  int es = esize(dt);
  if (!es || !esize(st)) return -1;
  if (n <= 0) return 0;
  if (dt == st) {
    if (dst == src) return 0;
    return es == 1 ? copy_bits<uint8_t>(s, dst, src, n)
           : es == 2 ? copy_bits<uint16_t>(s, dst, src, n)
           : es == 4 ? copy_bits<uint32_t>(s, dst, src, n)
                     : copy_bits<uint64_t>(s, dst, src, n);
  }
  LMX_CU_DISPATCH_ALL(dt, return -1, return convert_from<T>(s, (T *)dst, src, st, n));
  return -1;
}

template <typename U>
static int fill_bits(lmx_cu_stream s, void *p, int64_t n, const void *bits) {
  U v;
  memcpy(&v, bits, sizeof v);
  LMX_LAUNCH(k_fill<U>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, n, (U *)p, v);
  return lmx_cu_last_error();
}

int lmx_cu_fill(lmx_cu_stream s, void *p, int dt, int64_t n, double value) {
  int es = esize(dt);
  if (!es) return -1;
  if (n <= 0) return 0;
  unsigned char bits[8];
  LMX_CU_DISPATCH_ALL(dt, return -1, {
    T one[1];
    lmx_cu_st(one, 0, value);
    memcpy(bits, one, sizeof(T));
  });
  return es == 1 ? fill_bits<uint8_t>(s, p, n, bits)
         : es == 2 ? fill_bits<uint16_t>(s, p, n, bits)
         : es == 4 ? fill_bits<uint32_t>(s, p, n, bits)
                   : fill_bits<uint64_t>(s, p, n, bits);
}

uint16_t lmx_cu_host_f32_to_f16(float f) { return lmx_cu_f32_to_f16(f); }
float lmx_cu_host_f16_to_f32(uint16_t h) { return lmx_cu_f16_to_f32(h); }
