/* random.c — xoshiro256** under a mutex (see random.h). Uniform floats use the top 24
 * (float32) or 53 (float64) bits; normals use the Box-Muller transform on pairs. */
#include "random.h"

#include <math.h>
#include <pthread.h>

#include "dtype.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_s[4] = {0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull,
                          0x2545f4914f6cdd1dull};

static uint64_t g_seed, g_offset; /* counter-based draws (lmx_rng_device_key) */

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next_u64(void) {
  uint64_t r = rotl(g_s[1] * 5, 7) * 9, t = g_s[1] << 17;
  g_s[2] ^= g_s[0];
  g_s[3] ^= g_s[1];
  g_s[1] ^= g_s[2];
  g_s[0] ^= g_s[3];
  g_s[2] ^= t;
  g_s[3] = rotl(g_s[3], 45);
  return r;
}

static double next_unit(void) { return (double)(next_u64() >> 11) * 0x1.0p-53; } /* [0,1) */

void lmx_rng_seed(uint64_t seed) {
  pthread_mutex_lock(&g_lock);
  g_seed = seed, g_offset = 0;
  uint64_t z = seed;
  for (int i = 0; i < 4; i++) {
    z += 0x9e3779b97f4a7c15ull;
    uint64_t x = z;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    g_s[i] = x ^ (x >> 31);
  }
  pthread_mutex_unlock(&g_lock);
}

void lmx_rng_fill_uniform(void *p, int dt, int64_t n, double lo, double hi) {
  pthread_mutex_lock(&g_lock);
  if (dt == LMX_FLOAT32) {
    float *d = p;
    float flo = (float)lo, span = (float)(hi - lo);
    for (int64_t i = 0; i < n; i++) {
      float v = flo + span * ((float)(next_u64() >> 40) * 0x1.0p-24f);
      d[i] = v < (float)hi || hi == lo ? v : flo; /* keep [lo, hi) after rounding */
    }
  } else {
    for (int64_t i = 0; i < n; i++) lmx_store_f64(p, dt, i, lo + (hi - lo) * next_unit());
  }
  pthread_mutex_unlock(&g_lock);
}

void lmx_rng_fill_normal(void *p, int dt, int64_t n, double mean, double std) {
  pthread_mutex_lock(&g_lock);
  for (int64_t i = 0; i < n; i += 2) {
    double u1 = 1.0 - next_unit(), u2 = next_unit(); /* u1 in (0,1] */
    double r = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
    lmx_store_f64(p, dt, i, mean + std * r * cos(th));
    if (i + 1 < n) lmx_store_f64(p, dt, i + 1, mean + std * r * sin(th));
  }
  pthread_mutex_unlock(&g_lock);
}

void lmx_rng_device_key(uint64_t n, uint64_t *seed, uint64_t *offset) {
  pthread_mutex_lock(&g_lock);
  *seed = g_seed, *offset = g_offset;
  g_offset += n;
  pthread_mutex_unlock(&g_lock);
}

void lmx_rng_get_state(uint64_t st[6]) {
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < 4; i++) st[i] = g_s[i];
  st[4] = g_seed, st[5] = g_offset;
  pthread_mutex_unlock(&g_lock);
}

int lmx_rng_set_state(const uint64_t st[6]) {
  if ((st[0] | st[1] | st[2] | st[3]) == 0) return -1;
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < 4; i++) g_s[i] = st[i];
  g_seed = st[4], g_offset = st[5];
  pthread_mutex_unlock(&g_lock);
  return 0;
}
