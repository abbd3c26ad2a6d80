/* fuzz_csv.c — libFuzzer target for the CSV parser of mx.io.CSVIter, lmx_csv_parse.
 *
 * The first input byte picks the row width (1..8), the rest is the file's text. Every
 * input must be accepted or refused with LMX_ERR_FORMAT and a message naming the file
 * and a line number within the text. An accepted text gives a float64 array of shape
 * (rows, width) where rows is the number of lines that are not all white space
 * (counted here independently); writing the values back as CSV ("%.17g", which
 * strtod reads back exactly) and parsing that gives the same values bit for bit
 * (NaNs compare as NaNs: their payloads are not kept by the text form).
 */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "luamx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                \
  do {                                                                                          \
    if (!(c)) {                                                                                 \
      fprintf(stderr, "fuzz_csv: check failed at line %d: %s (last error: %s)\n", __LINE__, #c, \
              lmx_last_error());                                                                \
      abort();                                                                                  \
    }                                                                                           \
  } while (0)

/* Lines (split at '\n') holding a byte that is not white space, and all lines. */
static int64_t count_rows(const char *p, size_t n, int64_t *lines) {
  int64_t rows = 0, all = 0;
  int seen = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i == n || p[i] == '\n') {
      if (i < n || (n && p[n - 1] != '\n')) all++;
      rows += seen;
      seen = 0;
    } else if (!isspace((unsigned char)p[i])) {
      seen = 1;
    }
  }
  *lines = all;
  return rows;
}

static lmx_ndarray *parse_ok(const char *p, size_t n, int64_t width, int64_t *rows) {
  lmx_ndarray *a = NULL;
  CHECK(lmx_csv_parse(p, n, width, "data_csv back.csv", &a) == LMX_OK);
  int64_t dims[LMX_MAX_NDIM];
  int ndim, dtype;
  CHECK(lmx_ndarray_shape(a, dims, LMX_MAX_NDIM, &ndim) == LMX_OK && ndim == 2);
  CHECK(dims[1] == width);
  CHECK(lmx_ndarray_dtype(a, &dtype) == LMX_OK && dtype == LMX_FLOAT64);
  *rows = dims[0];
  return a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int64_t width = 1 + data[0] % 8;
  const char *text = (const char *)data + 1;
  size_t n = size - 1;
  lmx_ndarray *a = NULL;
  int rc = lmx_csv_parse(text, n, width, "data_csv fuzz.csv", &a);
  int64_t lines, rows = count_rows(text, n, &lines);
  if (rc != LMX_OK) {
    CHECK(rc == LMX_ERR_FORMAT && a == NULL);
    const char *msg = lmx_last_error();
    long long line = -1;
    CHECK(sscanf(msg, "data_csv fuzz.csv line %lld: ", &line) == 1);
    CHECK(line >= 1 && line <= lines);
    CHECK(strstr(msg, "is not a number") || strstr(msg, "values, got"));
    return 0;
  }
  int64_t dims[LMX_MAX_NDIM], got_rows;
  int ndim;
  CHECK(lmx_ndarray_shape(a, dims, LMX_MAX_NDIM, &ndim) == LMX_OK && ndim == 2);
  CHECK(dims[0] == rows && dims[1] == width);
  void *pv;
  CHECK(lmx_ndarray_data(a, &pv) == LMX_OK);
  const double *v = pv;
  size_t cap = (size_t)(rows * width) * 26 + 1, len = 0;
  char *out = malloc(cap);
  CHECK(out);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < width; c++)
      len += (size_t)snprintf(out + len, cap - len, "%.17g%c", v[r * width + c],
                              c + 1 < width ? ',' : '\n');
  lmx_ndarray *b = parse_ok(out, len, width, &got_rows);
  CHECK(got_rows == rows);
  void *pw;
  CHECK(lmx_ndarray_data(b, &pw) == LMX_OK);
  const double *w = pw;
  for (int64_t i = 0; i < rows * width; i++)
    CHECK(isnan(v[i]) ? isnan(w[i]) : memcmp(&v[i], &w[i], sizeof(double)) == 0);
  free(out);
  lmx_ndarray_free(b);
  lmx_ndarray_free(a);
  return 0;
}
