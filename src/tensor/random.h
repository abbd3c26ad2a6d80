/* random.h — the global random generator (xoshiro256**, seeded through splitmix64).
 *
 * One stream for the whole process, serialized by a mutex, so the same seed gives the
 * same numbers in the same order of calls. Random operators (Dropout, uniform, normal)
 * draw from it too. lmx_rng_fill_* draw a whole buffer under one lock.
 */
#ifndef LMX_TENSOR_RANDOM_H
#define LMX_TENSOR_RANDOM_H

#include <stdint.h>

void lmx_rng_seed(uint64_t seed);
/* p[n] of dtype dt (floating) <- U[lo, hi) */
void lmx_rng_fill_uniform(void *p, int dt, int64_t n, double lo, double hi);
/* p[n] of dtype dt (floating) <- N(mean, std^2) */
void lmx_rng_fill_normal(void *p, int dt, int64_t n, double mean, double std);

#endif
