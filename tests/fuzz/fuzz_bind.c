/* fuzz_bind.c — libFuzzer target for the JSON -> bind path: a symbol loaded from
 * arbitrary bytes is bound on the CPU with the shapes the input carries (its
 * variables' "__shape__" attributes; "__dtype__" for dtypes), run forward and backward.
 *
 * Invariants beyond "no crash, no leak":
 *  - when shape inference over the whole graph fails, simple_bind fails too, with a
 *    message; when it succeeds (and the graph is small enough to run quickly: at most
 *    2^18 elements over every node output and argument), simple_bind either succeeds or
 *    fails with a message, and a bound executor's outputs have the inferred shapes;
 *  - forward (inference mode) twice with the same random seed gives the same bytes;
 *  - backward with head gradients of ones either runs or fails with a message, and the
 *    executor still runs forward afterwards.
 * Run with OMP_NUM_THREADS=1 (one core per fuzzer; see docs/fuzzing.md).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "luamx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                 \
  do {                                                                                           \
    if (!(c)) {                                                                                  \
      fprintf(stderr, "fuzz_bind: check failed at line %d: %s (last error: %s)\n", __LINE__, #c, \
              lmx_last_error());                                                                 \
      abort();                                                                                   \
    }                                                                                            \
  } while (0)

enum { CAP = 1024, MAX_ELEMS = 1 << 18 };
static int g_ndim[CAP];
static int64_t g_dims[(size_t)CAP * LMX_MAX_NDIM];

static int has_message(void) {
  return lmx_last_error()[0] != 0;
}

/* Elements over every slot of an inference result, saturating at MAX_ELEMS + 1. */
static int64_t total_elems(int slots) {
  int64_t total = 0;
  for (int k = 0; k < slots && total <= MAX_ELEMS; k++) {
    int64_t e = 1;
    for (int d = 0; d < g_ndim[k]; d++) {
      int64_t x = g_dims[(size_t)k * LMX_MAX_NDIM + d];
      if (x > MAX_ELEMS || (e && x > MAX_ELEMS / e)) return MAX_ELEMS + 1;
      e *= x;
    }
    total += e;
  }
  return total;
}

/* A CPU copy of every output's bytes, NUL-separated into one buffer. */
static unsigned char *snapshot(lmx_executor *e, int nout, size_t *len) {
  size_t cap = 64, n = 0;
  unsigned char *buf = malloc(cap);
  CHECK(buf);
  for (int i = 0; i < nout; i++) {
    lmx_ndarray *o;
    CHECK(lmx_executor_array(e, LMX_EXEC_OUTPUTS, i, &o) == LMX_OK);
    int64_t sz;
    int dt;
    void *p;
    CHECK(lmx_ndarray_size(o, &sz) == LMX_OK && lmx_ndarray_dtype(o, &dt) == LMX_OK);
    CHECK(lmx_ndarray_data(o, &p) == LMX_OK);
    size_t b = (size_t)sz * (size_t)lmx_dtype_size(dt);
    while (n + b > cap) cap *= 2;
    buf = realloc(buf, cap);
    CHECK(buf);
    if (b) memcpy(buf + n, p, b);
    n += b;
    lmx_ndarray_free(o);
  }
  *len = n;
  return buf;
}

static void run(lmx_symbol *s, int nargs) {
  lmx_binder *b;
  CHECK(lmx_binder_new(s, LMX_CPU, 0, &b) == LMX_OK);
  lmx_executor *e = NULL;
  int rc = lmx_binder_simple_bind(b, &e);
  lmx_binder_free(b);
  if (rc != LMX_OK) {
    CHECK(e == NULL && has_message());
    return;
  }
  int nout;
  CHECK(lmx_executor_count(e, LMX_EXEC_OUTPUTS, &nout) == LMX_OK);
  for (int i = 0; i < nout; i++) { /* outputs have the inferred shapes */
    lmx_ndarray *o;
    int64_t dims[LMX_MAX_NDIM];
    int nd;
    CHECK(lmx_executor_array(e, LMX_EXEC_OUTPUTS, i, &o) == LMX_OK);
    CHECK(lmx_ndarray_shape(o, dims, LMX_MAX_NDIM, &nd) == LMX_OK);
    CHECK(nd == g_ndim[nargs + i]);
    CHECK(memcmp(dims, &g_dims[(size_t)(nargs + i) * LMX_MAX_NDIM], (size_t)nd * 8) == 0);
    lmx_ndarray_free(o);
  }
  lmx_random_seed(7);
  if (lmx_executor_forward(e, 0) != LMX_OK) {
    CHECK(has_message());
    lmx_executor_free(e);
    return;
  }
  size_t n1, n2;
  unsigned char *a = snapshot(e, nout, &n1);
  lmx_random_seed(7);
  CHECK(lmx_executor_forward(e, 0) == LMX_OK);
  unsigned char *c = snapshot(e, nout, &n2);
  CHECK(n1 == n2 && (n1 == 0 || memcmp(a, c, n1) == 0));
  free(a);
  free(c);
  if (lmx_executor_forward(e, 1) == LMX_OK) {
    lmx_ndarray **heads = calloc((size_t)nout + 1, sizeof *heads);
    CHECK(heads);
    for (int i = 0; i < nout; i++) {
      lmx_ndarray *o;
      int64_t dims[LMX_MAX_NDIM];
      int nd, dt;
      CHECK(lmx_executor_array(e, LMX_EXEC_OUTPUTS, i, &o) == LMX_OK);
      CHECK(lmx_ndarray_shape(o, dims, LMX_MAX_NDIM, &nd) == LMX_OK);
      CHECK(lmx_ndarray_dtype(o, &dt) == LMX_OK);
      if (lmx_ndarray_new(dims, nd, dt, LMX_CPU, 0, &heads[i]) == LMX_OK)
        lmx_ndarray_fill(heads[i], 1);
      lmx_ndarray_free(o);
    }
    if (lmx_executor_backward(e, heads, nout, 1) != LMX_OK) CHECK(has_message());
    for (int i = 0; i < nout; i++) lmx_ndarray_free(heads[i]);
    free(heads);
  } else {
    CHECK(has_message());
  }
  CHECK(lmx_executor_forward(e, 0) == LMX_OK); /* still usable */
  lmx_executor_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lmx_symbol *s = NULL, *in = NULL;
  if (lmx_symbol_from_json((const char *)data, size, &s) != LMX_OK) return 0;
  int nargs, nout, naux, complete = 0;
  const char *const *items;
  CHECK(lmx_symbol_list(s, LMX_SYM_ARGUMENTS, &nargs, &items) == LMX_OK);
  CHECK(lmx_symbol_list(s, LMX_SYM_OUTPUTS, &nout, &items) == LMX_OK);
  CHECK(lmx_symbol_list(s, LMX_SYM_AUX_STATES, &naux, &items) == LMX_OK);
  if (nargs + nout + naux > CAP) goto done;
  /* every node's output must be small: inference over the internals decides */
  if (lmx_symbol_get_internals(s, &in) != LMX_OK) goto done;
  int iargs, iout, iaux;
  CHECK(lmx_symbol_list(in, LMX_SYM_ARGUMENTS, &iargs, &items) == LMX_OK);
  CHECK(lmx_symbol_list(in, LMX_SYM_OUTPUTS, &iout, &items) == LMX_OK);
  CHECK(lmx_symbol_list(in, LMX_SYM_AUX_STATES, &iaux, &items) == LMX_OK);
  if (iargs + iout + iaux > CAP) goto done;
  if (lmx_symbol_infer_shape(in, 0, NULL, NULL, NULL, 0, CAP, g_ndim, g_dims, &complete) !=
      LMX_OK) {
    CHECK(has_message());
    /* the same graph cannot be bound either */
    lmx_binder *b;
    lmx_executor *e = NULL;
    CHECK(lmx_binder_new(s, LMX_CPU, 0, &b) == LMX_OK);
    CHECK(lmx_binder_simple_bind(b, &e) != LMX_OK && e == NULL && has_message());
    lmx_binder_free(b);
    lmx_executor_free(e);
    goto done;
  }
  if (total_elems(iargs + iout + iaux) > MAX_ELEMS) goto done;
  CHECK(lmx_symbol_infer_shape(s, 0, NULL, NULL, NULL, 0, CAP, g_ndim, g_dims, &complete) ==
        LMX_OK);
  CHECK(complete);
  run(s, nargs);
done:
  lmx_symbol_free(in);
  lmx_symbol_free(s);
  return 0;
}
