/* fuzz_params.c — libFuzzer target for the NDArray-list reader (.params, .states and
 * .buckets files all use it: lmx_ndarray_load_buffer).
 *
 * Every input must either load or fail with a status and a message that names the
 * buffer; a sparse storage marker must give LMX_ERR_UNSUPPORTED naming the storage type.
 * A loaded list must hold sane arrays (ndim within LMX_MAX_NDIM, sizes that fit the
 * input, CPU arrays of a known dtype), and survive a round trip through the writer:
 * save -> load gives the same count, names, shapes, dtypes and element bytes, and a
 * second save writes the same file byte for byte (V0/V1/V3 inputs are rewritten as V2,
 * a 0-d array as V3, so the first save normalises and the second must be a fixed point).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "luamx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "fuzz_params: check failed at line %d: %s (last error: %s)\n", __LINE__, #c, \
              lmx_last_error());                                                                   \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

static char g_dir[256];

static void remove_dir(void) {
  rmdir(g_dir);
}

static void setup_dir(void) {
  if (g_dir[0]) return;
  const char *base = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/fuzz_params.XXXXXX", base && base[0] ? base : "/tmp");
  if (!mkdtemp(g_dir)) abort();
  atexit(remove_dir);
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  CHECK(f);
  CHECK(fseek(f, 0, SEEK_END) == 0);
  long len = ftell(f);
  CHECK(len >= 0);
  rewind(f);
  unsigned char *b = malloc((size_t)len + 1);
  CHECK(b);
  CHECK(fread(b, 1, (size_t)len, f) == (size_t)len);
  fclose(f);
  *n = (size_t)len;
  return b;
}

/* Saves the list to path; returns 0 when the writer refused it (it must say why). */
static int save_list(const lmx_ndlist *l, const char *path) {
  int n, has_names;
  CHECK(lmx_ndlist_size(l, &n, &has_names) == LMX_OK);
  lmx_ndarray **arrs = calloc((size_t)n + 1, sizeof *arrs);
  const char **names = calloc((size_t)n + 1, sizeof *names);
  CHECK(arrs && names);
  for (int i = 0; i < n; i++) CHECK(lmx_ndlist_get(l, i, &arrs[i], &names[i]) == LMX_OK);
  int rc = lmx_ndarray_save(path, arrs, has_names ? names : NULL, n);
  if (rc != LMX_OK) CHECK(strstr(lmx_last_error(), path) != NULL);
  for (int i = 0; i < n; i++) lmx_ndarray_free(arrs[i]);
  free(arrs);
  free(names);
  return rc == LMX_OK;
}

static void check_array(lmx_ndarray *a, size_t input_size) {
  int64_t dims[LMX_MAX_NDIM], size;
  int ndim, dtype, dt, di;
  CHECK(lmx_ndarray_shape(a, dims, LMX_MAX_NDIM, &ndim) == LMX_OK);
  CHECK(ndim >= 0 && ndim <= LMX_MAX_NDIM);
  CHECK(lmx_ndarray_size(a, &size) == LMX_OK);
  /* every dim product is far from overflowing, zero dims or not (a reduction over a
   * zero dim must never make a shape whose size wraps) */
  int64_t prod = 1, nonzero = 1;
  for (int d = 0; d < ndim; d++) {
    CHECK(dims[d] >= 0);
    if (dims[d] > 0) {
      CHECK(nonzero <= INT64_MAX / 16 / dims[d]);
      nonzero *= dims[d];
    }
    prod *= dims[d];
  }
  CHECK(prod == size);
  CHECK(lmx_ndarray_dtype(a, &dtype) == LMX_OK);
  CHECK(lmx_dtype_name(dtype) != NULL && lmx_dtype_size(dtype) > 0);
  /* the bytes came from the input */
  CHECK((uint64_t)size * (uint64_t)lmx_dtype_size(dtype) <= input_size);
  CHECK(lmx_ndarray_context(a, &dt, &di) == LMX_OK && dt == 1 && di == 0);
}

static void same_lists(const lmx_ndlist *a, const lmx_ndlist *b) {
  int na, nb, ha, hb;
  CHECK(lmx_ndlist_size(a, &na, &ha) == LMX_OK && lmx_ndlist_size(b, &nb, &hb) == LMX_OK);
  CHECK(na == nb && ha == hb);
  for (int i = 0; i < na; i++) {
    lmx_ndarray *x, *y;
    const char *sx, *sy;
    CHECK(lmx_ndlist_get(a, i, &x, &sx) == LMX_OK && lmx_ndlist_get(b, i, &y, &sy) == LMX_OK);
    CHECK(ha ? (sx && sy && strcmp(sx, sy) == 0) : (!sx && !sy));
    int64_t dx[LMX_MAX_NDIM], dy[LMX_MAX_NDIM], size;
    int nx, ny, tx, ty;
    CHECK(lmx_ndarray_shape(x, dx, LMX_MAX_NDIM, &nx) == LMX_OK);
    CHECK(lmx_ndarray_shape(y, dy, LMX_MAX_NDIM, &ny) == LMX_OK);
    CHECK(nx == ny && memcmp(dx, dy, (size_t)nx * sizeof *dx) == 0);
    CHECK(lmx_ndarray_dtype(x, &tx) == LMX_OK && lmx_ndarray_dtype(y, &ty) == LMX_OK && tx == ty);
    CHECK(lmx_ndarray_size(x, &size) == LMX_OK);
    void *px, *py;
    CHECK(lmx_ndarray_data(x, &px) == LMX_OK && lmx_ndarray_data(y, &py) == LMX_OK);
    size_t bytes = (size_t)size * (size_t)lmx_dtype_size(tx);
    CHECK(bytes == 0 || memcmp(px, py, bytes) == 0);
    lmx_ndarray_free(x);
    lmx_ndarray_free(y);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  setup_dir();
  lmx_ndlist *l = NULL;
  int rc = lmx_ndarray_load_buffer(data, size, "fuzz.params", &l);
  if (rc != LMX_OK) {
    CHECK(l == NULL);
    const char *msg = lmx_last_error();
    CHECK(msg && strstr(msg, "fuzz.params") != NULL);
    CHECK(rc == LMX_ERR_FORMAT || rc == LMX_ERR_UNSUPPORTED || rc == LMX_ERR_NOMEM);
    if (rc == LMX_ERR_UNSUPPORTED) CHECK(strstr(msg, "sparse") || strstr(msg, "not supported"));
    return 0;
  }
  int n, has_names;
  CHECK(lmx_ndlist_size(l, &n, &has_names) == LMX_OK);
  CHECK(n >= 0 && (size_t)n <= size);
  for (int i = 0; i < n; i++) {
    lmx_ndarray *a;
    const char *name;
    CHECK(lmx_ndlist_get(l, i, &a, &name) == LMX_OK);
    CHECK(has_names ? name != NULL : name == NULL);
    check_array(a, size);
    lmx_ndarray_free(a);
  }
  lmx_ndarray *dummy;
  CHECK(lmx_ndlist_get(l, n, &dummy, NULL) == LMX_ERR_ARG);

  char p1[300], p2[300];
  snprintf(p1, sizeof p1, "%s/a.params", g_dir);
  snprintf(p2, sizeof p2, "%s/b.params", g_dir);
  if (save_list(l, p1)) {
    lmx_ndlist *back = NULL;
    CHECK(lmx_ndarray_load(p1, &back) == LMX_OK);
    same_lists(l, back);
    CHECK(save_list(back, p2));
    size_t n1, n2;
    unsigned char *b1 = slurp(p1, &n1), *b2 = slurp(p2, &n2);
    CHECK(n1 == n2 && memcmp(b1, b2, n1) == 0);
    free(b1);
    free(b2);
    lmx_ndlist_free(back);
    unlink(p2);
  }
  unlink(p1);
  lmx_ndlist_free(l);
  return 0;
}
