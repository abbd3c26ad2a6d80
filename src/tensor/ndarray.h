/* ndarray.h — engine-internal view of NDArrays and their storage.
 *
 * An lmx_ndarray is (storage, byte offset, shape, dtype). Storage is reference counted
 * and owns one device allocation; every array (including views made by reshape and
 * slice) holds one reference to its storage, so storage outlives all of its views no
 * matter in which order handles are released. Arrays are always contiguous (C order):
 * reshape and first-axis slices are the only views, and both keep contiguity.
 *
 * Invariant: offset + size * dtype_size <= storage->bytes.
 */
#ifndef LMX_TENSOR_NDARRAY_H
#define LMX_TENSOR_NDARRAY_H

#include <stddef.h>

#include "../core/refcount.h"
#include "../device/device.h"
#include "shape.h"

typedef struct lmx_storage {
  lmx_refcount rc;
  int dev_type, dev_id;
  const lmx_device_ops *dev;
  void *ptr;
  size_t bytes;
  int borrowed; /* memory owned by someone else (lmx_nd_borrow): never released here */
  int packed;   /* cpu: ptr lies in this header's own allocation (one block per array) */
} lmx_storage;

/* An array's autograd entry (src/exec/autograd.c): a reference-counted tape node that
 * produced the array (or the variable it is), released with the array. The tensor layer
 * only holds and drops the reference; everything else is the autograd layer's. */
typedef struct lmx_ag_ref {
  lmx_refcount rc;
  void (*destroy)(struct lmx_ag_ref *self);
} lmx_ag_ref;

static inline void lmx_ag_ref_release(lmx_ag_ref *r) {
  if (r && lmx_ref_dec(&r->rc)) r->destroy(r);
}

struct lmx_ndarray {
  lmx_refcount rc;
  lmx_storage *st;
  size_t offset; /* bytes from st->ptr */
  lmx_shape shape;
  int dtype;
  lmx_ag_ref *ag; /* NULL: not recorded (autograd entry; views and copies start NULL) */
  int ag_index;   /* which output of that node the array is */
  int embedded;   /* the header lies in its storage's block (a small host array made by
                     lmx_nd_create): the block goes with the storage, not with it */
};

/* New contiguous array; zeroed when zero != 0. */
int lmx_nd_create(const lmx_shape *shape, int dtype, int dev_type, int dev_id, int zero,
                  lmx_ndarray **out);

/* A new array header over the same storage (a view). */
int lmx_nd_view(lmx_ndarray *src, const lmx_shape *shape, size_t offset, lmx_ndarray **out);

void lmx_nd_release(lmx_ndarray *a);

/* An array over memory the engine owns elsewhere (an executor's buffer handed to a host
 * callback): no copy, and releasing it never frees `ptr`. lmx_nd_revoke ends the loan
 * before the lender's memory may change hands: when nothing but the caller's reference
 * holds the storage it does nothing; when the host kept the array or a view of it, the
 * storage gets its own copy of the bytes (a snapshot, CPU only; elsewhere, or out of
 * memory, it is emptied: 0 bytes, NULL), so no kept handle ever reads memory that was
 * given back. */
int lmx_nd_borrow(void *ptr, const lmx_shape *shape, int dtype, int dev_type, int dev_id,
                  lmx_ndarray **out);
void lmx_nd_revoke(lmx_ndarray *a);

static inline void *lmx_nd_ptr(const lmx_ndarray *a) { return (char *)a->st->ptr + a->offset; }
static inline int64_t lmx_nd_size(const lmx_ndarray *a) { return lmx_shape_size(&a->shape); }
static inline size_t lmx_nd_bytes(const lmx_ndarray *a) {
  return (size_t)lmx_nd_size(a) * (size_t)lmx_dtype_size(a->dtype);
}
static inline int lmx_nd_is_cpu(const lmx_ndarray *a) { return a->st->dev_type == LMX_CPU; }

/* Copy with dtype conversion across devices (shapes must have equal sizes). */
int lmx_nd_copy(const lmx_ndarray *src, lmx_ndarray *dst);

/* "2x3 float32 @cpu(0)" */
void lmx_nd_describe(const lmx_ndarray *a, char *buf, size_t cap);

#endif
