/* arith.c — imperative arithmetic (see arith.h). The work runs on the operands' own
 * device through its table's primitives (binary, scalar, gemm: src/device/device.h);
 * results are created there. */
#include "arith.h"

#include "../core/status.h"
#include "dtype.h"

static const char *const g_opname[LMX_NUM_BINOPS] = {"add", "subtract", "multiply", "divide",
                                                     "power", "maximum", "minimum"};

static int check_op(int op) {
  if (op < 0 || op >= LMX_NUM_BINOPS)
    return lmx_fail(LMX_ERR_ARG, "unknown arithmetic op code %d (expected 0..%d)", op,
                    LMX_NUM_BINOPS - 1);
  return LMX_OK;
}

static int check_pair(const lmx_ndarray *a, const lmx_ndarray *b, const char *what) {
  if (a->dtype != b->dtype)
    return lmx_fail(LMX_ERR_DTYPE, "%s: operands have different dtypes (%s and %s); use astype",
                    what, lmx_dtype_str(a->dtype), lmx_dtype_str(b->dtype));
  if (a->st->dev_type != b->st->dev_type || a->st->dev_id != b->st->dev_id)
    return lmx_fail(LMX_ERR_DEVICE, "%s: operands are on different contexts (%s(%d) and %s(%d))",
                    what, a->st->dev->name, a->st->dev_id, b->st->dev->name, b->st->dev_id);
  return LMX_OK;
}

/* Hands the result over, or releases it when the device failed. */
static int finish(int rc, lmx_ndarray *o, lmx_ndarray **out) {
  if (rc != LMX_OK) {
    lmx_nd_release(o);
    return rc;
  }
  *out = o;
  return LMX_OK;
}

int lmx_nd_binary(int op, const lmx_ndarray *a, const lmx_ndarray *b, lmx_ndarray **out) {
  LMX_TRY(check_op(op));
  const char *what = g_opname[op];
  LMX_TRY(check_pair(a, b, what));
  lmx_shape os;
  LMX_TRY(lmx_shape_broadcast(&a->shape, &b->shape, &os, what));
  lmx_ndarray *o;
  LMX_TRY(lmx_nd_create(&os, a->dtype, a->st->dev_type, a->st->dev_id, 0, &o));
  int64_t as[LMX_MAX_NDIM], bs[LMX_MAX_NDIM];
  for (int d = 0; d < os.ndim; d++) {
    int ia = d - (os.ndim - a->shape.ndim), ib = d - (os.ndim - b->shape.ndim);
    as[d] = ia >= 0 ? a->shape.dim[ia] : 1;
    bs[d] = ib >= 0 ? b->shape.dim[ib] : 1;
  }
  int rc = lmx_device_binary(o->st->dev, o->st->dev_id, op, a->dtype, os.ndim, os.dim,
                             lmx_nd_ptr(o), as, lmx_nd_ptr(a), bs, lmx_nd_ptr(b));
  return finish(rc, o, out);
}

int lmx_nd_scalar(int op, const lmx_ndarray *a, double s, int reverse, lmx_ndarray **out) {
  LMX_TRY(check_op(op));
  lmx_ndarray *o;
  LMX_TRY(lmx_nd_create(&a->shape, a->dtype, a->st->dev_type, a->st->dev_id, 0, &o));
  int rc = lmx_device_scalar(o->st->dev, o->st->dev_id, op, a->dtype, lmx_nd_size(a),
                             lmx_nd_ptr(o), lmx_nd_ptr(a), s, reverse);
  return finish(rc, o, out);
}

int lmx_nd_dot(const lmx_ndarray *a, const lmx_ndarray *b, lmx_ndarray **out) {
  LMX_TRY(check_pair(a, b, "dot"));
  if (a->dtype != LMX_FLOAT32 && a->dtype != LMX_FLOAT64)
    return lmx_fail(LMX_ERR_DTYPE, "dot: dtype %s is not supported (float32 or float64)",
                    lmx_dtype_str(a->dtype));
  char sa[LMX_SHAPE_STRCAP], sb[LMX_SHAPE_STRCAP];
  if (a->shape.ndim < 1 || b->shape.ndim < 1)
    return lmx_fail(LMX_ERR_SHAPE, "dot: operands must have at least 1 dim, got %s and %s",
                    lmx_shape_str(&a->shape, sa), lmx_shape_str(&b->shape, sb));
  int64_t k = a->shape.dim[a->shape.ndim - 1];
  if (b->shape.dim[0] != k)
    return lmx_fail(LMX_ERR_SHAPE,
                    "dot: shapes %s and %s are not aligned (last dim of a %lld != first dim of b "
                    "%lld)",
                    lmx_shape_str(&a->shape, sa), lmx_shape_str(&b->shape, sb), (long long)k,
                    (long long)b->shape.dim[0]);
  lmx_shape os = {0, {0}};
  for (int d = 0; d + 1 < a->shape.ndim; d++) os.dim[os.ndim++] = a->shape.dim[d];
  if (os.ndim + b->shape.ndim - 1 > LMX_MAX_NDIM)
    return lmx_fail(LMX_ERR_SHAPE, "dot: result of %s and %s has more than %d dims",
                    lmx_shape_str(&a->shape, sa), lmx_shape_str(&b->shape, sb), LMX_MAX_NDIM);
  for (int d = 1; d < b->shape.ndim; d++) os.dim[os.ndim++] = b->shape.dim[d];
  if (os.ndim == 0) os.dim[os.ndim++] = 1; /* inner product of two vectors */
  int64_t m = k ? lmx_nd_size(a) / k : 0, n = k ? lmx_nd_size(b) / k : 0;
  if (k == 0) { /* an empty inner dim: the product is all zeros */
    m = 1;
    for (int d = 0; d + 1 < a->shape.ndim; d++) m *= a->shape.dim[d];
  }
  lmx_ndarray *o;
  LMX_TRY(lmx_nd_create(&os, a->dtype, a->st->dev_type, a->st->dev_id, 1, &o));
  int rc = LMX_OK;
  if (k > 0)
    rc = lmx_device_gemm(o->st->dev, o->st->dev_id, a->dtype, 0, 0, m, n, k, 1.0, lmx_nd_ptr(a),
                         lmx_nd_ptr(b), 0.0, lmx_nd_ptr(o));
  return finish(rc, o, out);
}
