/* refcount.h — atomic reference counts for engine objects.
 *
 * Every object that a handle can point at starts with a count of 1 (the creator's
 * reference). lmx_ref_dec returns 1 when the count reached zero: the caller then
 * destroys the object. Dependents (views, executors, symbols) hold references to what
 * they use, so hosts may release handles in any order.
 */
#ifndef LMX_CORE_REFCOUNT_H
#define LMX_CORE_REFCOUNT_H

#include <stdatomic.h>

typedef atomic_int lmx_refcount;

static inline void lmx_ref_init(lmx_refcount *r) { atomic_init(r, 1); }
static inline void lmx_ref_inc(lmx_refcount *r) {
  atomic_fetch_add_explicit(r, 1, memory_order_relaxed);
}
static inline int lmx_ref_dec(lmx_refcount *r) {
  return atomic_fetch_sub_explicit(r, 1, memory_order_acq_rel) == 1;
}

#endif
