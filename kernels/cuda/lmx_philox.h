/* lmx_philox.h — Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1,
 * 2, 3", SC'11; Random123's reference constants) and the draws built on it, as inline
 * functions usable from host C, host C++ and CUDA device code alike, so a test (or the
 * CPU) computes exactly the stream a kernel produces.
 *
 * The stream of a call is fixed by (seed, offset) and the element index alone, never by
 * the launch configuration: element i of a float32 / float16 draw takes word i % 4 of the
 * block philox(counter = offset + i / 4, key = seed); a float64 draw takes two words per
 * value, so element i reads block offset + i / 2, words 2 (i % 2) and 2 (i % 2) + 1. A
 * call uses lmx_philox_blocks(dt, n) counter blocks; the caller advances its offset by
 * that much so the next call draws fresh numbers.
 * Uniform: float32 (w >> 8) 2^-24 in [0, 1); float64 53 bits in [0, 1). Normal:
 * Box-Muller on the pair of uniforms of elements 2j, 2j + 1 (u1 shifted into (0, 1]),
 * cos for the even element and sin for the odd one, computed in double.
 */
#ifndef LMX_KERNELS_CUDA_PHILOX_H
#define LMX_KERNELS_CUDA_PHILOX_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__) || defined(__host__)
#define LMX_PHILOX_HD __host__ __device__
#else
#define LMX_PHILOX_HD
#endif

typedef struct {
  uint32_t v[4];
} lmx_philox4;

/* One Philox4x32 with R rounds of counter ctr[4] under key key[2]. */
static inline LMX_PHILOX_HD lmx_philox4 lmx_philox4x32_r(int R, const uint32_t *ctr,
                                                         const uint32_t *key) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
  for (int r = 0; r < R; r++) {
    if (r > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  lmx_philox4 out;
  out.v[0] = c0, out.v[1] = c1, out.v[2] = c2, out.v[3] = c3;
  return out;
}

/* Philox4x32-10 of counter block `block` (64 bits in words 0 and 1) under seed. */
static inline LMX_PHILOX_HD lmx_philox4 lmx_philox_block(uint64_t seed, uint64_t block) {
  uint32_t ctr[4], key[2];
  ctr[0] = (uint32_t)block, ctr[1] = (uint32_t)(block >> 32), ctr[2] = 0, ctr[3] = 0;
  key[0] = (uint32_t)seed, key[1] = (uint32_t)(seed >> 32);
  return lmx_philox4x32_r(10, ctr, key);
}

/* Counter blocks a draw of n elements uses: n / 4 rounded up for float32 / float16
 * (wide = 0), n / 2 rounded up for float64 (wide = 1). */
static inline LMX_PHILOX_HD uint64_t lmx_philox_blocks(int wide, int64_t n) {
  if (n <= 0) return 0;
  return wide ? ((uint64_t)n + 1) / 2 : ((uint64_t)n + 3) / 4;
}

static inline LMX_PHILOX_HD double lmx_philox_u24(uint32_t w) {
  return (double)(w >> 8) * (1.0 / 16777216.0);
}
static inline LMX_PHILOX_HD double lmx_philox_u53(uint32_t a, uint32_t b) {
  return ((double)(a >> 5) * 67108864.0 + (double)(b >> 6)) * (1.0 / 9007199254740992.0);
}

/* Uniform [0, 1) of element i (wide: the float64 stream). */
static inline LMX_PHILOX_HD double lmx_philox_uniform(int wide, uint64_t seed, uint64_t offset,
                                                      int64_t i) {
  if (wide) {
    lmx_philox4 r = lmx_philox_block(seed, offset + (uint64_t)i / 2);
    int k = (int)(i % 2) * 2;
    return lmx_philox_u53(r.v[k], r.v[k + 1]);
  }
  lmx_philox4 r = lmx_philox_block(seed, offset + (uint64_t)i / 4);
  return lmx_philox_u24(r.v[i % 4]);
}

/* Standard normal of element i: Box-Muller on the uniforms of elements i & ~1 and
 * (i & ~1) + 1 (the first shifted into (0, 1] so its log is finite). */
static inline LMX_PHILOX_HD double lmx_philox_normal(int wide, uint64_t seed, uint64_t offset,
                                                     int64_t i) {
  int64_t j = i - (i % 2);
  double step = wide ? 1.0 / 9007199254740992.0 : 1.0 / 16777216.0;
  double u1 = lmx_philox_uniform(wide, seed, offset, j) + step;
  double u2 = lmx_philox_uniform(wide, seed, offset, j + 1);
  double r = sqrt(-2.0 * log(u1)), t = 6.283185307179586 * u2;
  return i % 2 ? r * sin(t) : r * cos(t);
}

#endif
