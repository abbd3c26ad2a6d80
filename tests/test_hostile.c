/* test_hostile.c — engine-level cases from a hostile-input campaign, in C where the Lua
 * layer would refuse them first: shape-size overflow hidden behind a zero dim (the
 * nonzero dims are checked whatever the zeros), the checked helpers, and an executor
 * freed from inside its own monitor callback and gradient hook (forward and backward
 * hold a reference, so the free only drops the caller's and the run completes; the
 * sanitizer build reports any use after free). Prints "N passed, N failed" and exits
 * non-zero on failure. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "luamx.h"
#include "tensor/shape.h"

#include "check.h"

static int has(const char *needle) { return strstr(lmx_errmsg(), needle) != NULL; }

static void test_shape_overflow(void) {
  lmx_shape s;
  int64_t zero_big[] = {0, (int64_t)1 << 62, 4};
  CHECK(lmx_shape_make(&s, zero_big, 3, "t") == LMX_ERR_SHAPE);
  CHECK(has("t: shape is too large (dim 2 = 4611686018427387904 makes the product of the "
            "nonzero dims exceed 576460752303423487)"), "%s", lmx_errmsg());
  int64_t zero_prod[] = {0, (int64_t)1 << 40, (int64_t)1 << 20};
  CHECK(lmx_shape_make(&s, zero_prod, 3, "t") == LMX_ERR_SHAPE);
  CHECK(has("t: shape is too large (dim 3 = 1048576 makes"), "%s", lmx_errmsg());
  int64_t big_zero[] = {(int64_t)1 << 62, 0};
  CHECK(lmx_shape_make(&s, big_zero, 2, "t") == LMX_ERR_SHAPE);
  int64_t ok_zero[] = {0, (int64_t)1 << 40, 1 << 10};
  CHECK(lmx_shape_make(&s, ok_zero, 3, "t") == LMX_OK && lmx_shape_size(&s) == 0);
  /* a shape built in place (as a reduction drops the zero dim) */
  lmx_shape r = {2, {(int64_t)1 << 62, 4}};
  CHECK(lmx_shape_check(&r, "sum") == LMX_ERR_SHAPE && has("sum: shape is too large"));
  CHECK(lmx_shape_size(&r) == INT64_MAX); /* saturates: every allocation refuses it */
  lmx_shape z = {3, {(int64_t)1 << 62, 0, 4}};
  CHECK(lmx_shape_size(&z) == 0);
  int64_t m = -1;
  CHECK(lmx_shape_mul((int64_t)1 << 29, (int64_t)1 << 29, &m) == 0 && m == (int64_t)1 << 58);
  CHECK(lmx_shape_mul((int64_t)1 << 30, (int64_t)1 << 30, &m) != 0);
  CHECK(lmx_shape_mul(-1, 2, &m) != 0);
  CHECK(lmx_shape_mul(0, INT64_MAX, &m) == 0 && m == 0);
  /* broadcasting two checked shapes can still overflow */
  lmx_shape a = {2, {(int64_t)1 << 40, 1}}, b = {2, {1, (int64_t)1 << 40}}, o;
  CHECK(lmx_shape_broadcast(&a, &b, &o, "broadcast_add") == LMX_ERR_SHAPE);
  CHECK(has("broadcast_add: shape is too large"), "%s", lmx_errmsg());
}

static void test_ndarray_api(void) {
  lmx_ndarray *arr = NULL;
  int64_t zero_big[] = {0, (int64_t)1 << 62, 4};
  CHECK(lmx_ndarray_new(zero_big, 3, LMX_FLOAT32, LMX_CPU, 0, &arr) == LMX_ERR_SHAPE);
  CHECK(has("NDArray: shape is too large"), "%s", lmx_errmsg());
  int64_t d[] = {2, 3};
  CHECK(lmx_ndarray_new(d, 2, LMX_FLOAT32, LMX_CPU, 0, &arr) == LMX_OK);
  lmx_ndarray *v = NULL;
  int64_t huge[] = {(int64_t)1 << 62, 0};
  CHECK(lmx_ndarray_reshape(arr, huge, 2, &v) == LMX_ERR_SHAPE);
  CHECK(has("reshape: shape is too large (dim 1 = 4611686018427387904 makes the product of "
            "the dims exceed 576460752303423487)"), "%s", lmx_errmsg());
  int64_t copy[] = {(int64_t)1 << 58, 0}; /* 0 copies dim 2 (3): 3 * 2^58 is too large */
  CHECK(lmx_ndarray_reshape(arr, copy, 2, &v) == LMX_ERR_SHAPE);
  CHECK(has("reshape: shape is too large (dim 2 = 3 makes"), "%s", lmx_errmsg());
  int64_t inf[] = {-1, (int64_t)1 << 62, 4};
  CHECK(lmx_ndarray_reshape(arr, inf, 3, &v) == LMX_ERR_SHAPE && has("reshape: shape is too large"));
  lmx_ndarray_free(arr);
}

/* y = a * b + a, bound on cpu with gradients. */
static lmx_executor *bind_small(lmx_ndarray **keep) {
  lmx_symbol *a = NULL, *b = NULL, *mul = NULL, *add = NULL;
  lmx_symbol_variable("a", &a);
  lmx_symbol_variable("b", &b);
  lmx_symbol_new_op("elemwise_mul", "mul", 0, NULL, NULL, &mul);
  lmx_symbol *in1[2] = {a, b};
  lmx_symbol_compose(mul, 2, NULL, in1);
  lmx_symbol_new_op("elemwise_add", "add", 0, NULL, NULL, &add);
  lmx_symbol *in2[2] = {mul, a};
  lmx_symbol_compose(add, 2, NULL, in2);
  int64_t two = 2;
  for (int i = 0; i < 4; i++) lmx_ndarray_new(&two, 1, LMX_FLOAT32, LMX_CPU, 0, &keep[i]);
  lmx_binder *bd = NULL;
  lmx_executor *x = NULL;
  lmx_binder_new(add, LMX_CPU, 0, &bd);
  lmx_binder_set_arg(bd, "a", -1, keep[0], keep[2], LMX_GRAD_WRITE);
  lmx_binder_set_arg(bd, "b", -1, keep[1], keep[3], LMX_GRAD_WRITE);
  CHECK(lmx_binder_bind(bd, &x) == LMX_OK, "%s", lmx_errmsg());
  lmx_binder_free(bd);
  lmx_symbol_free(a), lmx_symbol_free(b), lmx_symbol_free(mul), lmx_symbol_free(add);
  return x;
}

typedef struct {
  lmx_executor *x;
  int calls;
} victim;

static void free_from_monitor(const char *name, lmx_ndarray *arr, void *user) {
  (void)name, (void)arr;
  victim *v = user;
  if (v->calls++ == 0) lmx_executor_free(v->x); /* the first output: more calls follow */
}

static int free_from_hook(int step, const int *args, int n, void *user) {
  (void)step, (void)args, (void)n;
  victim *v = user;
  if (v->calls++ == 0) lmx_executor_free(v->x);
  return 0;
}

static void test_free_in_callback(void) {
  int64_t live0, live1;
  lmx_debug_alloc_stats(&live0, NULL, NULL);
  lmx_ndarray *keep[4];
  victim v = {bind_small(keep), 0};
  if (v.x) {
    CHECK(lmx_executor_set_monitor(v.x, free_from_monitor, &v, 1) == LMX_OK);
    CHECK(lmx_executor_forward(v.x, 1) == LMX_OK, "%s", lmx_errmsg());
    CHECK(v.calls > 1, "the monitor ran %d times", v.calls); /* kept running after the free */
  }
  for (int i = 0; i < 4; i++) lmx_ndarray_free(keep[i]);
  lmx_debug_alloc_stats(&live1, NULL, NULL); /* the executor went when forward returned */
  CHECK(live1 == live0, "%lld allocations leaked", (long long)(live1 - live0));

  v.x = bind_small(keep), v.calls = 0;
  if (v.x) {
    CHECK(lmx_executor_forward(v.x, 1) == LMX_OK);
    CHECK(lmx_executor_set_grad_hook(v.x, free_from_hook, &v) == LMX_OK);
    lmx_ndarray *hg = NULL;
    int64_t two = 2;
    lmx_ndarray_new(&two, 1, LMX_FLOAT32, LMX_CPU, 0, &hg);
    CHECK(lmx_executor_backward(v.x, &hg, 1, 1) == LMX_OK, "%s", lmx_errmsg());
    CHECK(v.calls >= 1);
    lmx_ndarray_free(hg);
  }
  for (int i = 0; i < 4; i++) lmx_ndarray_free(keep[i]);
  lmx_debug_alloc_stats(&live1, NULL, NULL);
  CHECK(live1 == live0, "%lld allocations leaked", (long long)(live1 - live0));
}

int main(void) {
  test_shape_overflow();
  test_ndarray_api();
  test_free_in_callback();
  return check_summary();
}
