/* random.cu — uniform, normal and Dropout-mask draws from the Philox4x32-10 stream of
 * lmx_philox.h. One thread per element evaluates the counter block its element needs
 * (the block's other words are its neighbours' draws), so the values depend on (seed,
 * offset, index) only and equal what the host computes with the same header. float16
 * outputs use the float32 stream and round to nearest even.
 */
#include "cu_random.h"
#include "cu_util.cuh"

enum { RND_UNIFORM, RND_NORMAL, RND_MASK };

template <typename T, int KIND>
__global__ void k_random(int64_t n, T *p, double a, double b, uint64_t seed, uint64_t offset,
                         int wide) {
  LMX_CU_GRID_LOOP(i, n) {
    double v;
    if (KIND == RND_NORMAL) {
      v = a + b * lmx_philox_normal(wide, seed, offset, i);
    } else {
      double u = lmx_philox_uniform(wide, seed, offset, i);
      v = KIND == RND_UNIFORM ? a + (b - a) * u : (u < a ? 0.0 : b);
    }
    lmx_cu_st(p, i, v);
  }
}

template <int KIND>
static int rnd_launch(lmx_cu_stream s, int dt, int64_t n, void *p, double a, double b,
                      uint64_t seed, uint64_t offset) {
  LMX_CU_DISPATCH_FLOAT(dt, return -1, {
    if (n <= 0) return 0;
    LMX_LAUNCH((k_random<T, KIND>), lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, n, (T *)p, a, b,
               seed, offset, dt == LMX_FLOAT64);
    return lmx_cu_last_error();
  });
  return -1;
}

int lmx_cu_random_uniform(lmx_cu_stream s, int dt, int64_t n, void *p, double lo, double hi,
                          uint64_t seed, uint64_t offset) {
  return rnd_launch<RND_UNIFORM>(s, dt, n, p, lo, hi, seed, offset);
}

int lmx_cu_random_normal(lmx_cu_stream s, int dt, int64_t n, void *p, double mean, double std,
                         uint64_t seed, uint64_t offset) {
  return rnd_launch<RND_NORMAL>(s, dt, n, p, mean, std, seed, offset);
}

int lmx_cu_dropout_mask(lmx_cu_stream s, int dt, int64_t n, void *mask, double prob,
                        uint64_t seed, uint64_t offset) {
  if (!(prob >= 0 && prob < 1)) return -1;
  return rnd_launch<RND_MASK>(s, dt, n, mask, prob, 1.0 / (1.0 - prob), seed, offset);
}
