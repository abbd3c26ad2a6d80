/* cu_util.cuh — private to K1's .cu files: element types, loads and stores through the
 * compute type, the float16 conversions, launch geometry and a deterministic block
 * reduction.
 *
 * float16 is storage only (struct lmx_h16, the IEEE binary16 bits): loads widen to float
 * exactly, stores round to nearest even with the CPU's own bit routine
 * (src/tensor/dtype.c lmx_f32_to_f16, copied here as a __host__ __device__ function), so
 * device and CPU agree bit for bit, NaN payloads included. Integer dtypes compute in
 * double and store with the CPU's rule (NaN -> 0, saturate at the type's range, truncate
 * toward zero), so conversions and arithmetic on them match lmx_store_f64 exactly.
 * Launch geometry is fixed (256 threads, a grid capped at LMX_CU_MAX_BLOCKS): it depends
 * on n only, never on the device, so every reduction sums in the same order everywhere.
 */
#ifndef LMX_KERNELS_CU_UTIL_CUH
#define LMX_KERNELS_CU_UTIL_CUH

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda_common.cuh"
#include "../../src/luamx.h"

struct lmx_h16 {
  uint16_t b;
};
/* 16-byte aligned group of four floats: one 128-bit load or store under nvcc */
struct alignas(16) lmx_f4 {
  float v[4];
};

enum { LMX_CU_THREADS = 256, LMX_CU_MAX_BLOCKS = 4096 };

static inline unsigned lmx_cu_blocks(int64_t work) {
  int64_t b = (work + LMX_CU_THREADS - 1) / LMX_CU_THREADS;
  const int64_t most = LMX_CU_MAX_BLOCKS;
  return (unsigned)(b < 1 ? 1 : b > most ? most : b);
}

#define LMX_CU_GRID_LOOP(i, n)                                                            \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);               \
       i += (int64_t)blockDim.x * gridDim.x)

/* ---- float16 bits <-> float (bit-exact with src/tensor/dtype.c) --------------------- */

__host__ __device__ static inline uint16_t lmx_cu_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (absx < 0x38800000u) {
    if (absx < 0x33000000u) return sign;
    uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)(absx >> 23);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t h = ((absx >> 13) - (112u << 10));
  uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}

__host__ __device__ static inline float lmx_cu_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
  if (e == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      int k = -1;
      do {
        k++;
        mant <<= 1;
      } while (!(mant & 0x400u));
      x = sign | ((uint32_t)(127 - 15 - k) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (e == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((e + 112u) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* ---- compute type and loads / stores ------------------------------------------------ */

template <typename T> struct lmx_cu_acc { typedef double type; };
template <> struct lmx_cu_acc<float> { typedef float type; };
template <> struct lmx_cu_acc<lmx_h16> { typedef float type; };

__host__ __device__ static inline double lmx_cu_clampd(double v, double lo, double hi) {
  if (v != v) return 0;
  return v < lo ? lo : v > hi ? hi : v;
}

__host__ __device__ static inline float lmx_cu_ld(const float *p, int64_t i) { return p[i]; }
__host__ __device__ static inline double lmx_cu_ld(const double *p, int64_t i) { return p[i]; }
__host__ __device__ static inline float lmx_cu_ld(const lmx_h16 *p, int64_t i) {
  return lmx_cu_f16_to_f32(p[i].b);
}
__host__ __device__ static inline double lmx_cu_ld(const uint8_t *p, int64_t i) { return p[i]; }
__host__ __device__ static inline double lmx_cu_ld(const int8_t *p, int64_t i) { return p[i]; }
__host__ __device__ static inline double lmx_cu_ld(const int32_t *p, int64_t i) { return p[i]; }
__host__ __device__ static inline double lmx_cu_ld(const int64_t *p, int64_t i) {
  return (double)p[i];
}

__host__ __device__ static inline void lmx_cu_st(float *p, int64_t i, double v) { p[i] = (float)v; }
__host__ __device__ static inline void lmx_cu_st(float *p, int64_t i, float v) { p[i] = v; }
__host__ __device__ static inline void lmx_cu_st(double *p, int64_t i, double v) { p[i] = v; }
__host__ __device__ static inline void lmx_cu_st(lmx_h16 *p, int64_t i, float v) {
  p[i].b = lmx_cu_f32_to_f16(v);
}
__host__ __device__ static inline void lmx_cu_st(lmx_h16 *p, int64_t i, double v) {
  p[i].b = lmx_cu_f32_to_f16((float)v);
}
__host__ __device__ static inline void lmx_cu_st(uint8_t *p, int64_t i, double v) {
  p[i] = (uint8_t)lmx_cu_clampd(v, 0, 255);
}
__host__ __device__ static inline void lmx_cu_st(int8_t *p, int64_t i, double v) {
  p[i] = (int8_t)lmx_cu_clampd(v, -128, 127);
}
__host__ __device__ static inline void lmx_cu_st(int32_t *p, int64_t i, double v) {
  p[i] = (int32_t)lmx_cu_clampd(v, -2147483648.0, 2147483647.0);
}
__host__ __device__ static inline void lmx_cu_st(int64_t *p, int64_t i, double v) {
  p[i] = (int64_t)lmx_cu_clampd(v, -9223372036854775808.0, 9223372036854774784.0);
}

static inline int lmx_cu_aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* Calls BODY with T bound to the element type of dtype dt (any of the 7); `bad` runs for
 * an unknown code. */
#define LMX_CU_DISPATCH_ALL(dt, bad, ...)                                                 \
  switch (dt) {                                                                           \
    case LMX_FLOAT32: { typedef float T; (void)sizeof(T); __VA_ARGS__; } break;           \
    case LMX_FLOAT64: { typedef double T; (void)sizeof(T); __VA_ARGS__; } break;          \
    case LMX_FLOAT16: { typedef lmx_h16 T; (void)sizeof(T); __VA_ARGS__; } break;         \
    case LMX_UINT8: { typedef uint8_t T; (void)sizeof(T); __VA_ARGS__; } break;           \
    case LMX_INT32: { typedef int32_t T; (void)sizeof(T); __VA_ARGS__; } break;           \
    case LMX_INT8: { typedef int8_t T; (void)sizeof(T); __VA_ARGS__; } break;             \
    case LMX_INT64: { typedef int64_t T; (void)sizeof(T); __VA_ARGS__; } break;           \
    default: bad;                                                                         \
  }
/* The same for the floating dtypes (float32, float64, float16). */
#define LMX_CU_DISPATCH_FLOAT(dt, bad, ...)                                               \
  switch (dt) {                                                                           \
    case LMX_FLOAT32: { typedef float T; (void)sizeof(T); __VA_ARGS__; } break;           \
    case LMX_FLOAT64: { typedef double T; (void)sizeof(T); __VA_ARGS__; } break;          \
    case LMX_FLOAT16: { typedef lmx_h16 T; (void)sizeof(T); __VA_ARGS__; } break;         \
    default: bad;                                                                         \
  }

/* Reports a bad input value at flat position pos to the raise word (cu_base.h): the
 * first launch and thread that claims the word records where and what; later ones leave
 * it. Nothing when r.word is NULL. */
__device__ static inline void lmx_cu_raise_set(lmx_cu_raise r, int64_t pos, int64_t value) {
  if (r.word && atomicCAS(&r.word->tag, 0ULL, r.tag) == 0ULL) {
    r.word->pos = (long long)pos;
    r.word->value = (long long)value;
  }
}

/* ---- deterministic block reduction -------------------------------------------------- */

/* Combines v across the block (blockDim.x a multiple of 32, at most 1024) with MERGE,
 * always in the same tree order; every thread gets the result. `sh` holds 32 values.
 * The caller must not reuse sh before a __syncthreads after this returns. */
template <typename C, typename M>
__device__ static inline C lmx_cu_block_reduce(C v, C *sh) {
  unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v = M::merge(v, __shfl_down_sync(0xffffffffu, v, o));
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  unsigned nw = blockDim.x >> 5;
  if (warp == 0) {
    v = lane < nw ? sh[lane] : M::template identity<C>();
    for (int o = 16; o > 0; o >>= 1) v = M::merge(v, __shfl_down_sync(0xffffffffu, v, o));
    if (lane == 0) sh[0] = v;
  }
  __syncthreads();
  return sh[0];
}

#endif
