/* random.h — the global random generator (xoshiro256**, seeded through splitmix64).
 *
 * One stream for the whole process, serialized by a mutex, so the same seed gives the
 * same numbers in the same order of calls. Random operators (Dropout, uniform, normal)
 * draw from it too. lmx_rng_fill_* draw a whole buffer under one lock.
 * Devices with a counter-based generator (Philox on the GPU: the device table's `random`
 * primitive, and GPU kernels of random ops) draw from a key (seed, offset) instead:
 * lmx_rng_device_key hands out consecutive offsets after each seed, so a seed gives the
 * same draws on every run there too (not the CPU's draws).
 */
#ifndef LMX_TENSOR_RANDOM_H
#define LMX_TENSOR_RANDOM_H

#include <stdint.h>

void lmx_rng_seed(uint64_t seed);
/* p[n] of dtype dt (floating) <- U[lo, hi) */
void lmx_rng_fill_uniform(void *p, int dt, int64_t n, double lo, double hi);
/* p[n] of dtype dt (floating) <- N(mean, std^2) */
void lmx_rng_fill_normal(void *p, int dt, int64_t n, double mean, double std);
/* The key of the next n counter-based draws: the last seed (0 before any) and the offset
 * where they start; advances the offset by n (under the lock). */
void lmx_rng_device_key(uint64_t n, uint64_t *seed, uint64_t *offset);
/* The whole state: the 4 xoshiro words, the seed and the offset of counter-based draws
 * (LMX_RANDOM_STATE_WORDS in luamx.h). set returns -1 (and changes nothing) for four
 * zero xoshiro words. */
void lmx_rng_get_state(uint64_t st[6]);
int lmx_rng_set_state(const uint64_t st[6]);

#endif
