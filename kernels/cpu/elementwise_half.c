/* elementwise_half.c — float16 and bfloat16 elementwise math computed in float32.
 *
 * The arrays are walked in chunks that fit stack buffers (no allocation): each input
 * chunk widens exactly to float32, the destination chunk widens too when accumulating,
 * the float32 kernel runs on the chunk, and the result rounds to nearest even once on
 * the way back (dtype.h's conversions). A destination that aliases an input is safe: a
 * chunk is read whole before it is written. MXNet computes these dtypes in float32 the
 * same way (mshadow's half_t and bf16_t arithmetic widens to float).
 */
#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"

enum { CHUNK = 512, MAX_IN = 3 };

static void widen(float *d, int dt, const void *s, int64_t m) {
  lmx_cpu_convert(d, LMX_FLOAT32, s, dt, m);
}

int lmx_cpu_half_map(int dt, int64_t n, void *out, int acc, int nin, const void *const *in,
                     lmx_half_fn fn, const void *ctx) {
  if ((dt != LMX_FLOAT16 && dt != LMX_BFLOAT16) || nin < 0 || nin > MAX_IN) return -1;
  float ob[CHUNK], ib[MAX_IN][CHUNK];
  const float *ip[MAX_IN];
  for (int64_t at = 0; at < n; at += CHUNK) {
    int64_t m = n - at < CHUNK ? n - at : CHUNK;
    for (int k = 0; k < nin; k++) {
      ip[k] = NULL;
      if (!in[k]) continue;
      widen(ib[k], dt, (const uint16_t *)in[k] + at, m);
      ip[k] = ib[k];
    }
    if (acc) widen(ob, dt, (uint16_t *)out + at, m);
    if (fn(ctx, m, ob, ip, acc) != 0) return -1;
    lmx_cpu_convert((uint16_t *)out + at, dt, ob, LMX_FLOAT32, m);
  }
  return 0;
}
