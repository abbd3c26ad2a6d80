/* datafile.c — parsers for the dataset files the data iterators read: MNIST's IDX
 * files (mx.io.MNISTIter) and CSV files of numbers (mx.io.CSVIter).
 *
 * Both take the file's bytes from memory and treat them as untrusted: every read is
 * bounded by the size, every count is checked for overflow before it sizes anything,
 * and every error is LMX_ERR_FORMAT with a message "<name>: ..." (IDX) or
 * "<name> line <n>: ..." (CSV) saying what was wrong. They live in C, not in the Lua
 * iterators that call them, so that the libFuzzer targets (tests/fuzz) run them with
 * coverage feedback and the sanitizers watch every byte they touch.
 *
 * IDX: big-endian header, bytes 0 and 1 zero, byte 2 the element type (only 0x08,
 * unsigned byte, is accepted), byte 3 the number of dims, then one uint32 per dim; the
 * data that follows must be exactly prod(dims) bytes.
 *
 * CSV: lines end at '\n' (a '\r' before it is dropped); lines holding only white space
 * are skipped; fields are separated by ',' and each must be one number as C's strtod
 * reads it in the "C" locale (surrounding white space allowed; decimal, exponent, hex,
 * inf and nan forms), as Lua's tonumber took them before. Every line holds `width`
 * numbers. The values go to a float64 array of shape (rows, width).
 */
#define _GNU_SOURCE
#include "datafile.h"

#include <ctype.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../tensor/ndarray.h"
#include "../tensor/shape.h"

/* ================================================================= IDX files === */

int lmx_idx_parse_buffer(const unsigned char *p, size_t size, int want_ndim, const char *name,
                         int64_t *dims, int64_t *offset) {
  if (size < 4) return lmx_fail(LMX_ERR_FORMAT, "%s: truncated header (%zu bytes)", name, size);
  if (p[0] != 0 || p[1] != 0)
    return lmx_fail(LMX_ERR_FORMAT, "%s: bad magic number (not an IDX file)", name);
  if (p[2] != 0x08)
    return lmx_fail(LMX_ERR_FORMAT, "%s: element type 0x%02x is not unsigned byte (0x08)", name,
                    p[2]);
  if (p[3] != want_ndim)
    return lmx_fail(LMX_ERR_FORMAT, "%s: expected %d dimensions (magic 0x%08x), got %d", name,
                    want_ndim, 0x800 + want_ndim, p[3]);
  size_t off = 4 + 4 * (size_t)want_ndim;
  if (size < off)
    return lmx_fail(LMX_ERR_FORMAT, "%s: truncated header (%zu bytes, expected %zu)", name, size,
                    off);
  uint64_t count = 1;
  int overflow = 0;
  char shape[LMX_MAX_NDIM * 11 + 1] = "";
  for (int i = 0; i < want_ndim; i++) {
    const unsigned char *b = p + 4 + 4 * i;
    uint32_t d = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    dims[i] = d;
    overflow |= __builtin_mul_overflow(count, (uint64_t)d, &count);
    snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%u", i ? "x" : "", d);
  }
  /* a zero dim makes the data empty whatever the others say */
  for (int i = 0; i < want_ndim; i++)
    if (dims[i] == 0) count = 0, overflow = 0;
  size_t have = size - off;
  if (overflow || count != have) {
    int trunc = overflow || count > have;
    if (overflow)
      return lmx_fail(LMX_ERR_FORMAT,
                      "%s: truncated: dimensions %s need more than 2^64 data "
                      "bytes, got %zu",
                      name, shape, have);
    return lmx_fail(LMX_ERR_FORMAT, "%s: %s: expected %llu data bytes for dimensions %s, got %zu",
                    name, trunc ? "truncated" : "trailing bytes", (unsigned long long)count, shape,
                    have);
  }
  *offset = (int64_t)off;
  return LMX_OK;
}

/* ================================================================= CSV files === */

/* The field quoted for a message: printable ASCII as is (with " and \ escaped), other
 * bytes as \ddd, at most 48 bytes of it. */
static void quote_field(const char *f, size_t n, char *out, size_t cap) {
  size_t o = 0;
  out[o++] = '"';
  for (size_t i = 0; i < n && i < 48 && o + 6 < cap; i++) {
    unsigned char ch = (unsigned char)f[i];
    if (ch == '"' || ch == '\\')
      o += (size_t)snprintf(out + o, cap - o, "\\%c", ch);
    else if (ch >= 32 && ch < 127)
      out[o++] = (char)ch;
    else
      o += (size_t)snprintf(out + o, cap - o, "\\%u", ch);
  }
  if (n > 48 && o + 4 < cap) o += (size_t)snprintf(out + o, cap - o, "...");
  out[o++] = '"';
  out[o] = 0;
}

typedef struct {
  const char *name;
  locale_t c_locale;
  char small[128];
  char *big; /* heap copy for a field longer than `small` */
  size_t big_cap;
} csv_state;

/* One field to a number; LMX_ERR_FORMAT naming the line when it is not exactly one. */
static int parse_field(csv_state *s, const char *f, size_t n, int64_t line, double *v) {
  char *buf = s->small;
  if (n >= sizeof s->small) {
    if (n >= s->big_cap) {
      char *nb = lmx_realloc(s->big, n + 1);
      if (!nb)
        return lmx_fail_prefix(lmx_fail_nomem("a CSV field", n + 1), "%s line %lld: ", s->name,
                               (long long)line);
      s->big = nb;
      s->big_cap = n + 1;
    }
    buf = s->big;
  }
  memcpy(buf, f, n);
  buf[n] = 0;
  char *end = buf;
  int nul = memchr(f, 0, n) != NULL;
  double x = nul ? 0 : strtod_l(buf, &end, s->c_locale);
  while (end > buf && *end && isspace((unsigned char)*end)) end++;
  if (nul || end == buf || *end) {
    char q[200];
    quote_field(f, n, q, sizeof q);
    return lmx_fail(LMX_ERR_FORMAT, "%s line %lld: %s is not a number", s->name, (long long)line,
                    q);
  }
  *v = x;
  return LMX_OK;
}

/* One pass over the text: validates every line and counts the rows; with out != NULL
 * also stores the values. */
static int csv_scan(csv_state *s, const char *p, size_t size, int64_t width, double *out,
                    int64_t *rows) {
  int64_t line = 0, nrow = 0;
  size_t pos = 0;
  while (pos < size) {
    const char *nl = memchr(p + pos, '\n', size - pos);
    size_t end = nl ? (size_t)(nl - p) : size, len = end - pos;
    const char *l = p + pos;
    pos = nl ? end + 1 : size;
    line++;
    if (len && l[len - 1] == '\r') len--;
    int blank = 1;
    for (size_t i = 0; i < len && blank; i++) blank = isspace((unsigned char)l[i]) != 0;
    if (blank) continue;
    int64_t count = 0;
    size_t f = 0;
    for (;;) {
      const char *comma = memchr(l + f, ',', len - f);
      size_t fe = comma ? (size_t)(comma - l) : len;
      double v = 0;
      LMX_TRY(parse_field(s, l + f, fe - f, line, &v));
      if (out && count < width) out[nrow * width + count] = v;
      count++;
      if (!comma) break;
      f = fe + 1;
    }
    if (count != width)
      return lmx_fail(LMX_ERR_FORMAT, "%s line %lld: expected %lld values, got %lld", s->name,
                      (long long)line, (long long)width, (long long)count);
    nrow++;
  }
  *rows = nrow;
  return LMX_OK;
}

int lmx_csv_parse_buffer(const char *p, size_t size, int64_t width, const char *name,
                         lmx_ndarray **out) {
  csv_state s = {.name = name};
  s.c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
  if (!s.c_locale) return lmx_fail(LMX_ERR_NOMEM, "%s: cannot create the C locale", name);
  int64_t rows;
  int rc = csv_scan(&s, p, size, width, NULL, &rows);
  lmx_shape shape;
  if (rc == LMX_OK) rc = lmx_shape_make(&shape, (int64_t[]){rows, width}, 2, name);
  lmx_ndarray *arr = NULL;
  if (rc == LMX_OK) rc = lmx_nd_create(&shape, LMX_FLOAT64, LMX_CPU, 0, 0, &arr);
  if (rc == LMX_OK) rc = csv_scan(&s, p, size, width, lmx_nd_ptr(arr), &rows);
  lmx_free(s.big);
  freelocale(s.c_locale);
  if (rc != LMX_OK) {
    lmx_nd_release(arr);
    return rc;
  }
  *out = arr;
  return LMX_OK;
}
