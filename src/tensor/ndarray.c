/* ndarray.c — creation, views and copies of NDArrays (see ndarray.h).
 * Copies go through the device tables (src/device/device.h): same-dtype copies are the
 * devices' copy entries; a dtype-converting copy on one device is that device's
 * `convert` primitive (queued on its stream); across devices it stages through a host
 * buffer and converts on the CPU side. */
#include "ndarray.h"

#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "dtype.h"

/* The header's size in a packed cpu block: the data after it stays 64-byte aligned. */
enum { ST_PACKED_HDR = (sizeof(lmx_storage) + 63) / 64 * 64 };

/* Room for an array header between a packed storage header and its data (lmx_nd_create
 * puts the array's own header there). */
enum { ND_PACKED_HDR = (sizeof(lmx_ndarray) + 63) / 64 * 64 };

/* Host arrays up to this size get their storage header and data in one allocation, and
 * an array made by lmx_nd_create its header too (an imperative call's output is one
 * block). Larger ones keep the device table's allocation. */
#define ST_PACKED_MAX ((size_t)1 << 20)

/* New storage; a packed one leaves `extra` bytes (0 or ND_PACKED_HDR) after its header. */
static int storage_new(int dev_type, int dev_id, size_t bytes, int zero, size_t extra,
                       lmx_storage **out) {
  const lmx_device_ops *dev;
  LMX_TRY(lmx_device_lookup(dev_type, dev_id, &dev));
  int packed = dev_type == LMX_CPU && bytes <= ST_PACKED_MAX;
  lmx_storage *st = lmx_alloc(packed ? ST_PACKED_HDR + extra + bytes : sizeof *st);
  if (!st && packed) return lmx_fail_nomem("array storage on cpu", bytes);
  if (!st) return lmx_fail_nomem("array storage header", sizeof *st);
  st->ptr = NULL;
  st->packed = packed;
  int rc = LMX_OK;
  if (packed) st->ptr = (unsigned char *)st + ST_PACKED_HDR + extra;
  else rc = dev->alloc(dev_id, bytes, &st->ptr);
  if (rc == LMX_OK && zero) rc = dev->zero(dev_id, st->ptr, bytes);
  if (rc != LMX_OK) {
    if (st->ptr && !packed && rc != LMX_ERR_NOMEM) dev->release(dev_id, st->ptr);
    lmx_free(st);
    return rc;
  }
  lmx_ref_init(&st->rc);
  st->dev_type = dev_type;
  st->dev_id = dev_id;
  st->dev = dev;
  st->bytes = bytes;
  st->borrowed = 0;
  *out = st;
  return LMX_OK;
}

static void storage_release(lmx_storage *st) {
  if (st && lmx_ref_dec(&st->rc)) {
    if (!st->borrowed && !st->packed) st->dev->release(st->dev_id, st->ptr);
    lmx_free(st);
  }
}

int lmx_nd_create(const lmx_shape *shape, int dtype, int dev_type, int dev_id, int zero,
                  lmx_ndarray **out) {
  if (!lmx_dtype_valid(dtype))
    return lmx_fail(LMX_ERR_ARG, "unknown dtype code %d (expected 0..%d or %d)", dtype,
                    LMX_INT64, LMX_BFLOAT16);
  LMX_TRY(lmx_shape_check(shape, "NDArray"));
  size_t bytes;
  if (lmx_mul_size((size_t)lmx_shape_size(shape), (size_t)lmx_dtype_size(dtype), &bytes)) {
    char s[LMX_SHAPE_STRCAP];
    return lmx_fail(LMX_ERR_SHAPE, "array of shape %s is too large", lmx_shape_str(shape, s));
  }
  lmx_storage *st = NULL;
  int rc = storage_new(dev_type, dev_id, bytes, zero, ND_PACKED_HDR, &st);
  if (rc != LMX_OK) {
    if (rc == LMX_ERR_NOMEM && dev_type != LMX_CPU) { /* keep the device's account */
      char s[LMX_SHAPE_STRCAP];
      return lmx_fail_prefix(rc, "array of shape %s %s: ", lmx_shape_str(shape, s),
                             lmx_dtype_str(dtype));
    }
    if (rc == LMX_ERR_NOMEM) {
      char s[LMX_SHAPE_STRCAP];
      return lmx_fail(LMX_ERR_NOMEM, "out of memory allocating an array of shape %s %s (%zu bytes)",
                      lmx_shape_str(shape, s), lmx_dtype_str(dtype), bytes);
    }
    return rc;
  }
  lmx_ndarray *a;
  if (st->packed) { /* the header in the storage's block, freed with the storage */
    a = (lmx_ndarray *)((unsigned char *)st + ST_PACKED_HDR);
    a->embedded = 1;
  } else {
    a = lmx_alloc(sizeof *a);
    if (!a) {
      storage_release(st);
      return lmx_fail_nomem("an NDArray header", sizeof *a);
    }
    a->embedded = 0;
  }
  a->st = st;
  lmx_ref_init(&a->rc);
  a->offset = 0;
  a->shape = *shape;
  a->dtype = dtype;
  a->ag = NULL, a->ag_index = 0;
  *out = a;
  return LMX_OK;
}

int lmx_nd_view(lmx_ndarray *src, const lmx_shape *shape, size_t offset, lmx_ndarray **out) {
  lmx_ndarray *a = lmx_alloc(sizeof *a);
  if (!a) return lmx_fail_nomem("an NDArray view header", sizeof *a);
  lmx_ref_init(&a->rc);
  lmx_ref_inc(&src->st->rc);
  a->st = src->st;
  a->offset = offset;
  a->shape = *shape;
  a->dtype = src->dtype;
  a->ag = NULL, a->ag_index = 0;
  a->embedded = 0;
  *out = a;
  return LMX_OK;
}

int lmx_nd_borrow(void *ptr, const lmx_shape *shape, int dtype, int dev_type, int dev_id,
                  lmx_ndarray **out) {
  const lmx_device_ops *dev;
  LMX_TRY(lmx_shape_check(shape, "NDArray"));
  LMX_TRY(lmx_device_lookup(dev_type, dev_id, &dev));
  lmx_ndarray *a = lmx_alloc(sizeof *a);
  lmx_storage *st = lmx_alloc(sizeof *st);
  if (!a || !st) {
    lmx_free(a), lmx_free(st);
    return lmx_fail_nomem("a borrowed NDArray header", sizeof *a + sizeof *st);
  }
  lmx_ref_init(&st->rc);
  st->dev_type = dev_type, st->dev_id = dev_id, st->dev = dev;
  st->ptr = ptr;
  st->bytes = (size_t)lmx_shape_size(shape) * (size_t)lmx_dtype_size(dtype);
  st->borrowed = 1;
  st->packed = 0;
  lmx_ref_init(&a->rc);
  a->st = st;
  a->offset = 0;
  a->shape = *shape;
  a->dtype = dtype;
  a->ag = NULL, a->ag_index = 0;
  a->embedded = 0;
  *out = a;
  return LMX_OK;
}

void lmx_nd_revoke(lmx_ndarray *a) {
  if (!a || !a->st->borrowed) return;
  lmx_storage *st = a->st;
  if (atomic_load(&st->rc) == 1 && atomic_load(&a->rc) == 1) return; /* nothing escaped */
  void *own = NULL;
  if (st->dev_type == LMX_CPU && st->dev->alloc(st->dev_id, st->bytes, &own) == LMX_OK) {
    if (st->bytes) memcpy(own, st->ptr, st->bytes);
    st->ptr = own;
    st->borrowed = 0; /* released with the storage from now on */
    return;
  }
  lmx_clear_error();
  st->ptr = NULL;
  st->bytes = 0;
}

void lmx_nd_release(lmx_ndarray *a) {
  if (a && lmx_ref_dec(&a->rc)) {
    lmx_ag_ref_release(a->ag);
    int embedded = a->embedded; /* read first: the storage may take the header along */
    storage_release(a->st);
    if (!embedded) lmx_free(a);
  }
}

int lmx_nd_copy(const lmx_ndarray *src, lmx_ndarray *dst) {
  int64_t n = lmx_nd_size(src);
  if (n != lmx_nd_size(dst)) {
    char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
    return lmx_fail(LMX_ERR_SHAPE, "copyto: source shape %s and target shape %s differ",
                    lmx_shape_str(&src->shape, a), lmx_shape_str(&dst->shape, b));
  }
  if (n == 0) return LMX_OK;
  const lmx_storage *s = src->st, *d = dst->st;
  int s_cpu = s->dev_type == LMX_CPU, d_cpu = d->dev_type == LMX_CPU;
  if (src->dtype == dst->dtype) {
    size_t bytes = lmx_nd_bytes(src);
    if (s_cpu && d_cpu) return lmx_cpu_device.copy(0, lmx_nd_ptr(dst), lmx_nd_ptr(src), bytes, 0);
    if (!s_cpu && !d_cpu && s->dev_id == d->dev_id)
      return d->dev->copy(d->dev_id, lmx_nd_ptr(dst), lmx_nd_ptr(src), bytes, LMX_COPY_D2D);
    if (!s_cpu && !d_cpu && s->dev == d->dev && d->dev->copy_peer) /* two GPUs */
      return d->dev->copy_peer(d->dev_id, lmx_nd_ptr(dst), s->dev_id, lmx_nd_ptr(src), bytes);
    if (s_cpu) return d->dev->copy(d->dev_id, lmx_nd_ptr(dst), lmx_nd_ptr(src), bytes, LMX_COPY_H2D);
    if (d_cpu) return s->dev->copy(s->dev_id, lmx_nd_ptr(dst), lmx_nd_ptr(src), bytes, LMX_COPY_D2H);
  }
  if (src->dtype != dst->dtype && (s_cpu ? d_cpu : (s->dev_type == d->dev_type &&
                                                   s->dev_id == d->dev_id)))
    return lmx_device_convert(d->dev, d->dev_id, lmx_nd_ptr(dst), dst->dtype, lmx_nd_ptr(src),
                              src->dtype, n);
  /* Different devices (a dtype change, or two different GPUs): stage through host memory,
   * converting there. */
  lmx_ndarray *hs = NULL, *hd = NULL;
  int rc = LMX_OK;
  const lmx_ndarray *csrc = src;
  if (!s_cpu) {
    rc = lmx_nd_create(&src->shape, src->dtype, LMX_CPU, 0, 0, &hs);
    if (rc == LMX_OK) rc = lmx_nd_copy(src, hs);
    csrc = hs;
  }
  lmx_ndarray *cdst = dst;
  if (rc == LMX_OK && !d_cpu) {
    rc = lmx_nd_create(&dst->shape, dst->dtype, LMX_CPU, 0, 0, &hd);
    cdst = hd;
  }
  if (rc == LMX_OK)
    rc = lmx_device_convert(&lmx_cpu_device, 0, lmx_nd_ptr(cdst), cdst->dtype, lmx_nd_ptr(csrc),
                            csrc->dtype, n);
  if (rc == LMX_OK && hd) rc = lmx_nd_copy(hd, dst);
  lmx_nd_release(hs);
  lmx_nd_release(hd);
  return rc;
}

void lmx_nd_describe(const lmx_ndarray *a, char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = '\0';
  for (int i = 0; i < a->shape.ndim && at < cap; i++)
    at += (size_t)snprintf(buf + at, cap - at, i ? "x%lld" : "%lld", (long long)a->shape.dim[i]);
  if (a->shape.ndim == 0 && at < cap) at += (size_t)snprintf(buf + at, cap - at, "scalar");
  if (at < cap)
    snprintf(buf + at, cap - at, " %s @%s(%d)", lmx_dtype_str(a->dtype), a->st->dev->name,
             a->st->dev_id);
}
