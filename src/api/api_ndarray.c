/* api_ndarray.c — NDArray entry points (argument checks; work in src/tensor). */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "../tensor/arith.h"
#include "../tensor/dtype.h"
#include "../tensor/ndarray.h"
#include "../tensor/random.h"
#include "api.h"

int lmx_ndarray_new(const int64_t *dims, int ndim, int dtype, int dev_type, int dev_id,
                    lmx_ndarray **out) {
  LMX_ENTER();
  LMX_NEED(out, "lmx_ndarray_new", "out");
  lmx_shape s;
  LMX_TRY(lmx_shape_make(&s, dims, ndim, "NDArray"));
  return lmx_nd_create(&s, dtype, dev_type, dev_id, 1, out);
}

int lmx_ndarray_free(lmx_ndarray *arr) {
  lmx_nd_release(arr);
  return LMX_OK;
}

int lmx_ndarray_retain(lmx_ndarray *arr) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_ndarray_retain", "arr");
  lmx_ref_inc(&arr->rc);
  return LMX_OK;
}

int lmx_ndarray_shape(const lmx_ndarray *arr, int64_t *dims, int cap, int *ndim) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_ndarray_shape", "arr");
  LMX_NEED(ndim, "lmx_ndarray_shape", "ndim");
  if (cap > 0) LMX_NEED(dims, "lmx_ndarray_shape", "dims");
  for (int i = 0; i < arr->shape.ndim && i < cap; i++) dims[i] = arr->shape.dim[i];
  *ndim = arr->shape.ndim;
  return LMX_OK;
}

int lmx_ndarray_size(const lmx_ndarray *arr, int64_t *size) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_ndarray_size", "arr");
  LMX_NEED(size, "lmx_ndarray_size", "size");
  *size = lmx_nd_size(arr);
  return LMX_OK;
}

double lmx_ndarray_nbytes(const lmx_ndarray *arr) {
  return arr ? (double)lmx_nd_bytes(arr) : 0.0;
}

static _Atomic long long g_held; /* bytes of the handles held by the front end */

double lmx_ndarray_hold(const lmx_ndarray *arr) {
  long long b = arr ? (long long)lmx_nd_bytes(arr) : 0;
  return (double)(atomic_fetch_add_explicit(&g_held, b, memory_order_relaxed) + b);
}

void lmx_ndarray_drop(lmx_ndarray *arr) {
  if (!arr) return;
  atomic_fetch_sub_explicit(&g_held, (long long)lmx_nd_bytes(arr), memory_order_relaxed);
  lmx_nd_release(arr);
}

double lmx_ndarray_held(void) { return (double)atomic_load_explicit(&g_held, memory_order_relaxed); }

int lmx_ndarray_dtype(const lmx_ndarray *arr, int *dtype) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_ndarray_dtype", "arr");
  LMX_NEED(dtype, "lmx_ndarray_dtype", "dtype");
  *dtype = arr->dtype;
  return LMX_OK;
}

int lmx_ndarray_context(const lmx_ndarray *arr, int *dev_type, int *dev_id) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_ndarray_context", "arr");
  LMX_NEED(dev_type, "lmx_ndarray_context", "dev_type");
  LMX_NEED(dev_id, "lmx_ndarray_context", "dev_id");
  *dev_type = arr->st->dev_type;
  *dev_id = arr->st->dev_id;
  return LMX_OK;
}

int lmx_ndarray_data(const lmx_ndarray *arr, void **data) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_ndarray_data", "arr");
  LMX_NEED(data, "lmx_ndarray_data", "data");
  if (!lmx_nd_is_cpu(arr))
    return lmx_fail(LMX_ERR_DEVICE, "data: the array is on gpu(%d); only CPU arrays expose a "
                    "pointer (copy it to cpu first)", arr->st->dev_id);
  *data = lmx_nd_ptr(arr);
  return LMX_OK;
}

int lmx_ndarray_describe(const lmx_ndarray *arr, char *buf, int cap) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_ndarray_describe", "arr");
  LMX_NEED(buf, "lmx_ndarray_describe", "buf");
  if (cap <= 0) return lmx_fail(LMX_ERR_ARG, "lmx_ndarray_describe: cap must be > 0");
  lmx_nd_describe(arr, buf, (size_t)cap);
  return LMX_OK;
}

int lmx_ndarray_reshape(lmx_ndarray *arr, const int64_t *dims, int ndim, lmx_ndarray **out) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_ndarray_reshape", "arr");
  LMX_NEED(out, "lmx_ndarray_reshape", "out");
  if (ndim < 0 || ndim > LMX_MAX_NDIM)
    return lmx_fail(LMX_ERR_ARG, "reshape: ndim must be in 0..%d, got %d", LMX_MAX_NDIM, ndim);
  if (ndim > 0) LMX_NEED(dims, "lmx_ndarray_reshape", "dims");
  int64_t d[LMX_MAX_NDIM];
  int infer = -1;
  int64_t known = 1;
  char sa[LMX_SHAPE_STRCAP];
  for (int i = 0; i < ndim; i++) {
    d[i] = dims[i];
    if (d[i] == 0) {
      if (i >= arr->shape.ndim)
        return lmx_fail(LMX_ERR_SHAPE, "reshape: dim %d is 0 (copy) but the array %s has only "
                        "%d dims", i + 1, lmx_shape_str(&arr->shape, sa), arr->shape.ndim);
      d[i] = arr->shape.dim[i];
    }
    if (d[i] == -1) {
      if (infer >= 0) return lmx_fail(LMX_ERR_SHAPE, "reshape: only one dim may be -1");
      infer = i;
    } else if (d[i] < 0) {
      return lmx_fail(LMX_ERR_SHAPE, "reshape: dim %d must be >= -1, got %lld", i + 1,
                      (long long)d[i]);
    } else if (lmx_shape_mul(known, d[i], &known)) {
      return lmx_fail(LMX_ERR_SHAPE, "reshape: shape is too large (dim %d = %lld makes the "
                      "product of the dims exceed %lld)", i + 1, (long long)d[i],
                      (long long)LMX_SHAPE_MAXSIZE);
    }
  }
  int64_t size = lmx_nd_size(arr);
  if (infer >= 0) {
    if (known == 0 || size % known != 0)
      return lmx_fail(LMX_ERR_SHAPE, "reshape: cannot infer dim %d: size %lld of %s is not a "
                      "multiple of %lld", infer + 1, (long long)size,
                      lmx_shape_str(&arr->shape, sa), (long long)known);
    d[infer] = size / known;
  }
  lmx_shape s;
  LMX_TRY(lmx_shape_make(&s, d, ndim, "reshape"));
  if (lmx_shape_size(&s) != size) {
    char sb[LMX_SHAPE_STRCAP];
    return lmx_fail(LMX_ERR_SHAPE, "reshape: cannot reshape array of shape %s (size %lld) to %s "
                    "(size %lld)", lmx_shape_str(&arr->shape, sa), (long long)size,
                    lmx_shape_str(&s, sb), (long long)lmx_shape_size(&s));
  }
  return lmx_nd_view(arr, &s, arr->offset, out);
}

int lmx_ndarray_slice(lmx_ndarray *arr, int64_t begin, int64_t end, lmx_ndarray **out) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_ndarray_slice", "arr");
  LMX_NEED(out, "lmx_ndarray_slice", "out");
  char sa[LMX_SHAPE_STRCAP];
  if (arr->shape.ndim < 1)
    return lmx_fail(LMX_ERR_SHAPE, "slice: a 0-dim array has no rows to slice");
  int64_t rows = arr->shape.dim[0];
  if (begin < 0 || end < begin || end > rows)
    return lmx_fail(LMX_ERR_ARG, "slice: rows [%lld, %lld) are out of range for shape %s (0 <= "
                    "begin <= end <= %lld)", (long long)begin, (long long)end,
                    lmx_shape_str(&arr->shape, sa), (long long)rows);
  lmx_shape s = arr->shape;
  s.dim[0] = end - begin;
  int64_t row = rows ? lmx_nd_size(arr) / rows : 0;
  size_t off = arr->offset + (size_t)(begin * row) * (size_t)lmx_dtype_size(arr->dtype);
  return lmx_nd_view(arr, &s, off, out);
}

int lmx_ndarray_copyto(const lmx_ndarray *src, lmx_ndarray *dst) {
  LMX_ENTER();
  LMX_NEED(src, "lmx_ndarray_copyto", "src");
  LMX_NEED(dst, "lmx_ndarray_copyto", "dst");
  if (!lmx_shape_equal(&src->shape, &dst->shape)) {
    char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
    return lmx_fail(LMX_ERR_SHAPE, "copyto: source shape %s and target shape %s differ",
                    lmx_shape_str(&src->shape, a), lmx_shape_str(&dst->shape, b));
  }
  return lmx_nd_copy(src, dst);
}

/* Runs fn on a host copy of arr (arr itself when on the CPU), then writes back when
 * `write` is set. Lets table transfers work on any device. */
static int with_host(lmx_ndarray *arr, int load, int write,
                     void (*fn)(lmx_ndarray *h, void *ctx), void *ctx) {
  if (lmx_nd_is_cpu(arr)) {
    fn(arr, ctx);
    return LMX_OK;
  }
  lmx_ndarray *h;
  LMX_TRY(lmx_nd_create(&arr->shape, arr->dtype, LMX_CPU, 0, 0, &h));
  int rc = load ? lmx_nd_copy(arr, h) : LMX_OK;
  if (rc == LMX_OK) fn(h, ctx);
  if (rc == LMX_OK && write) rc = lmx_nd_copy(h, arr);
  lmx_nd_release(h);
  return rc;
}

/* A fill runs on the array's own device (its `fill` primitive, queued on its stream). */
int lmx_ndarray_fill(lmx_ndarray *arr, double value) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_ndarray_fill", "arr");
  return lmx_device_fill(arr->st->dev, arr->st->dev_id, lmx_nd_ptr(arr), arr->dtype,
                         lmx_nd_size(arr), value);
}

/* Host tables <-> a host copy of the array: conversions on the CPU. */
static void do_set(lmx_ndarray *h, void *ctx) {
  lmx_cpu_device.convert(0, lmx_nd_ptr(h), h->dtype, ctx, LMX_FLOAT64, lmx_nd_size(h));
}
static void do_get(lmx_ndarray *h, void *ctx) {
  lmx_cpu_device.convert(0, ctx, LMX_FLOAT64, lmx_nd_ptr(h), h->dtype, lmx_nd_size(h));
}

static int check_count(const lmx_ndarray *arr, int64_t n, const char *fn) {
  if (n != lmx_nd_size(arr)) {
    char s[LMX_SHAPE_STRCAP];
    return lmx_fail(LMX_ERR_SHAPE, "%s: got %lld values for an array of shape %s (size %lld)", fn,
                    (long long)n, lmx_shape_str(&arr->shape, s), (long long)lmx_nd_size(arr));
  }
  return LMX_OK;
}

int lmx_ndarray_set_f64(lmx_ndarray *arr, const double *values, int64_t n) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_ndarray_set_f64", "arr");
  if (n > 0) LMX_NEED(values, "lmx_ndarray_set_f64", "values");
  LMX_TRY(check_count(arr, n, "set"));
  return with_host(arr, 0, 1, do_set, (void *)values);
}

int lmx_ndarray_get_f64(const lmx_ndarray *arr, double *values, int64_t n) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_ndarray_get_f64", "arr");
  if (n > 0) LMX_NEED(values, "lmx_ndarray_get_f64", "values");
  LMX_TRY(check_count(arr, n, "get"));
  return with_host((lmx_ndarray *)arr, 1, 0, do_get, values);
}

int lmx_ndarray_wait_to_read(const lmx_ndarray *arr) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_ndarray_wait_to_read", "arr");
  return arr->st->dev->sync(arr->st->dev_id);
}

int lmx_waitall(void) {
  LMX_ENTER();
  for (int i = 0; i < lmx_num_gpus(); i++) {
    const lmx_device_ops *d;
    LMX_TRY(lmx_device_lookup(LMX_GPU, i, &d));
    LMX_TRY(d->sync(i));
  }
  return LMX_OK;
}

/* ---- random ---- */

int lmx_random_seed(uint64_t seed) {
  LMX_ENTER();
  lmx_rng_seed(seed);
  return LMX_OK;
}

int lmx_random_get_state(uint64_t *state, int n) {
  LMX_ENTER();
  LMX_NEED(state, "lmx_random_get_state", "state");
  if (n < LMX_RANDOM_STATE_WORDS)
    return lmx_fail(LMX_ERR_ARG, "lmx_random_get_state: n must be >= %d, got %d",
                    LMX_RANDOM_STATE_WORDS, n);
  lmx_rng_get_state(state);
  return LMX_OK;
}

int lmx_random_set_state(const uint64_t *state, int n) {
  LMX_ENTER();
  LMX_NEED(state, "lmx_random_set_state", "state");
  if (n != LMX_RANDOM_STATE_WORDS)
    return lmx_fail(LMX_ERR_ARG, "lmx_random_set_state: n must be %d, got %d",
                    LMX_RANDOM_STATE_WORDS, n);
  if (lmx_rng_set_state(state) != 0)
    return lmx_fail(LMX_ERR_ARG, "lmx_random_set_state: state words 1..4 (the CPU "
                    "generator) are all zero, which is no state the generator can be in");
  return LMX_OK;
}

typedef struct {
  int normal;
  double a, b;
} rand_args;

static void do_rand(lmx_ndarray *h, void *ctx) {
  rand_args *r = ctx;
  if (r->normal) lmx_rng_fill_normal(lmx_nd_ptr(h), h->dtype, lmx_nd_size(h), r->a, r->b);
  else lmx_rng_fill_uniform(lmx_nd_ptr(h), h->dtype, lmx_nd_size(h), r->a, r->b);
}

static int random_fill(lmx_ndarray *arr, int normal, double a, double b, const char *fn) {
  if (!lmx_dtype_is_float(arr->dtype))
    return lmx_fail(LMX_ERR_DTYPE,
                    "%s: dtype must be float16, bfloat16, float32 or float64, got %s", fn,
                    lmx_dtype_str(arr->dtype));
  const lmx_device_ops *d = arr->st->dev;
  if (d->random) { /* the device's counter-based generator, on its stream */
    uint64_t seed, offset, n = (uint64_t)lmx_nd_size(arr);
    lmx_rng_device_key(n, &seed, &offset);
    return d->random(arr->st->dev_id, normal ? LMX_RAND_NORMAL : LMX_RAND_UNIFORM, arr->dtype,
                     (int64_t)n, lmx_nd_ptr(arr), a, b, seed, offset);
  }
  rand_args r = {normal, a, b}; /* the global generator, on the host */
  return with_host(arr, 0, 1, do_rand, &r);
}

int lmx_random_uniform(lmx_ndarray *arr, double low, double high) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_random_uniform", "arr");
  if (!(low <= high))
    return lmx_fail(LMX_ERR_ARG, "random.uniform: low (%g) must be <= high (%g)", low, high);
  return random_fill(arr, 0, low, high, "random.uniform");
}

int lmx_random_normal(lmx_ndarray *arr, double mean, double std) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_random_normal", "arr");
  if (!(std >= 0)) return lmx_fail(LMX_ERR_ARG, "random.normal: std must be >= 0, got %g", std);
  return random_fill(arr, 1, mean, std, "random.normal");
}

/* ---- arithmetic ---- */

int lmx_ndarray_binary(int op, const lmx_ndarray *a, const lmx_ndarray *b, lmx_ndarray **out) {
  LMX_ENTER();
  LMX_NEED(a, "lmx_ndarray_binary", "a");
  LMX_NEED(b, "lmx_ndarray_binary", "b");
  LMX_NEED(out, "lmx_ndarray_binary", "out");
  return lmx_nd_binary(op, a, b, out);
}

int lmx_ndarray_scalar(int op, const lmx_ndarray *a, double s, int reverse, lmx_ndarray **out) {
  LMX_ENTER();
  LMX_NEED(a, "lmx_ndarray_scalar", "a");
  LMX_NEED(out, "lmx_ndarray_scalar", "out");
  return lmx_nd_scalar(op, a, s, reverse, out);
}

int lmx_ndarray_dot(const lmx_ndarray *a, const lmx_ndarray *b, lmx_ndarray **out) {
  LMX_ENTER();
  LMX_NEED(a, "lmx_ndarray_dot", "a");
  LMX_NEED(b, "lmx_ndarray_dot", "b");
  LMX_NEED(out, "lmx_ndarray_dot", "out");
  return lmx_nd_dot(a, b, out);
}
