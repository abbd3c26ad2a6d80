/* ndfile.c — MXNet NDArray-list files: the writer and the untrusted-input reader.
 *
 * Layout (MXNET-SEMANTICS §4, all integers little-endian): uint64 0x112, uint64 0,
 * uint64 N, N array records, uint64 K (0 or N), K names (uint64 length + bytes).
 *
 * Writer. Every array with ndim >= 1 is a V2 record (magic 0xF993FAC9, storage type 0,
 * shape, the array's real context, dtype, element bytes taken from a CPU copy). A 0-d
 * array cannot be a V2 record, where ndim 0 means "none", so it is written as a V3
 * (numpy-shape) record, whose ndim 0 is a scalar; MXNet reads such a file only in
 * numpy-shape mode, which is also the only mode in which it has 0-d arrays. Writes are
 * atomic: the bytes go to <path>.tmp.<pid>.<counter> in the same directory, which is
 * fsync'ed, closed and renamed over path; on any failure the temporary is removed and
 * an existing file at path is left untouched.
 *
 * Reader. The whole file is read into one buffer (its size checked first) and parsed
 * with a bounds-checked cursor: no read ever passes the end, and every count, ndim,
 * dim, dtype, device type, storage type and length is validated before it is used to
 * size anything. N is capped by the bytes that remain (every record takes at least 4),
 * so a hostile count cannot cause a huge allocation; data sizes are checked against the
 * remaining bytes before the array is created. Trailing bytes are an error. Records:
 *   V0 (no magic: the first word is a uint32 ndim, then uint32 dims), V1 (0xF993FAC8:
 *   int32 ndim + int64 dims), V2 (0xF993FAC9: storage type first), V3 (0xF993FACA: as
 *   V2 with numpy-shape semantics). MXNet loads V3 only in numpy-shape mode; luamx has
 *   no such mode and loads V3 records anyway, except that an unknown dim (-1) is an
 *   error naming the array. "None" arrays (V0/V1/V2 ndim 0, V3 ndim -1) load as empty
 *   float32 arrays of shape (0,). Sparse storage types give LMX_ERR_UNSUPPORTED. Every
 *   array is created on cpu(0), whatever context the file records (GPU included).
 * Errors name the file (path or buffer name), the array or name index, and what was
 * wrong; on any error everything allocated so far is freed.
 *
 * Element bytes are copied as they lie in memory, so this file assumes a little-endian
 * host (checked at compile time); header fields are encoded byte by byte.
 */
#include "ndfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "dtype.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ndfile.c copies element bytes as they lie in memory: little-endian hosts only"
#endif

#define LIST_MAGIC 0x112ull
#define V1_MAGIC 0xF993FAC8u
#define V2_MAGIC 0xF993FAC9u
#define V3_MAGIC 0xF993FACAu

enum { STYPE_UNDEF = -1, STYPE_DENSE = 0, STYPE_ROW_SPARSE = 1, STYPE_CSR = 2 };
enum { DEV_CPU = 1, DEV_GPU = 2, DEV_CPU_PINNED = 3, DEV_CPU_SHARED = 5 };
enum { MIN_RECORD_BYTES = 4, WBUF_CAP = 1 << 16 };

/* ================================================================== the list === */

void lmx_ndlist_release(lmx_ndlist *l) {
  if (!l || !lmx_ref_dec(&l->rc)) return;
  for (int i = 0; l->arrays && i < l->n; i++) lmx_nd_release(l->arrays[i]);
  for (int i = 0; l->names && i < l->n; i++) lmx_free(l->names[i]);
  lmx_free(l->arrays);
  lmx_free(l->names);
  lmx_free(l);
}

/* ================================================================ the reader === */

typedef struct {
  const unsigned char *p;
  size_t size, pos;
  const char *file;
  int arr;  /* array index for messages, or -1 */
  int name; /* name index for messages, or -1 */
} cursor;

static int perr(const cursor *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fails with "<file>: [array i: | name i: ]<message>". */
static int perr(const cursor *c, int status, const char *fmt, ...) {
  char msg[640];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (c->arr >= 0) return lmx_fail(status, "%s: array %d: %s", c->file, c->arr, msg);
  if (c->name >= 0) return lmx_fail(status, "%s: name %d: %s", c->file, c->name, msg);
  return lmx_fail(status, "%s: %s", c->file, msg);
}

/* Prefixes the file and index to a message set by a lower layer (out of memory). */
static int pprefix(const cursor *c, int status) {
  if (c->arr >= 0) return lmx_fail_prefix(status, "%s: array %d: ", c->file, c->arr);
  if (c->name >= 0) return lmx_fail_prefix(status, "%s: name %d: ", c->file, c->name);
  return lmx_fail_prefix(status, "%s: ", c->file);
}

static int need(const cursor *c, uint64_t bytes, const char *what) {
  if (bytes <= c->size - c->pos) return LMX_OK;
  return perr(c, LMX_ERR_FORMAT, "truncated %s (need %llu bytes at offset %zu, file has %zu)",
              what, (unsigned long long)bytes, c->pos, c->size);
}

static uint64_t get_le(const unsigned char *b, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | b[i];
  return v;
}

static int rd_u32(cursor *c, uint32_t *v, const char *what) {
  LMX_TRY(need(c, 4, what));
  *v = (uint32_t)get_le(c->p + c->pos, 4);
  c->pos += 4;
  return LMX_OK;
}

static int rd_i32(cursor *c, int32_t *v, const char *what) {
  uint32_t u;
  LMX_TRY(rd_u32(c, &u, what));
  memcpy(v, &u, sizeof *v);
  return LMX_OK;
}

static int rd_u64(cursor *c, uint64_t *v, const char *what) {
  LMX_TRY(need(c, 8, what));
  *v = get_le(c->p + c->pos, 8);
  c->pos += 8;
  return LMX_OK;
}

static int rd_i64(cursor *c, int64_t *v, const char *what) {
  uint64_t u;
  LMX_TRY(rd_u64(c, &u, what));
  memcpy(v, &u, sizeof *v);
  return LMX_OK;
}

/* Dense (0) and undefined (-1, only for "none" arrays: checked by the caller) pass. */
static int check_stype(const cursor *c, int32_t stype) {
  if (stype == STYPE_DENSE || stype == STYPE_UNDEF) return LMX_OK;
  if (stype == STYPE_ROW_SPARSE || stype == STYPE_CSR)
    return perr(c, LMX_ERR_UNSUPPORTED, "sparse storage type %s (%d) is not supported; only "
                "dense arrays load (convert it with tostype('default') before saving)",
                stype == STYPE_CSR ? "csr" : "row_sparse", (int)stype);
  return perr(c, LMX_ERR_FORMAT, "unknown storage type %d (expected 0 dense, 1 row_sparse or "
              "2 csr)", (int)stype);
}

/* Shape of one record (the magic, or for V0 the ndim, is already read as `first`).
 * Sets *none for the "none" array (V0/V1/V2 ndim 0, V3 ndim -1). */
static int read_shape(cursor *c, int version, uint32_t first, lmx_shape *s, int *none) {
  int64_t ndim = first;
  if (version > 0) {
    int32_t v;
    LMX_TRY(rd_i32(c, &v, "ndim"));
    ndim = v;
  }
  *none = ndim == (version == 3 ? -1 : 0);
  if (*none) return LMX_OK;
  if (ndim < 0 || ndim > LMX_MAX_NDIM)
    return perr(c, LMX_ERR_FORMAT, "ndim %lld is out of range (0..%d)%s", (long long)ndim,
                LMX_MAX_NDIM, version == 0 ? " (no known array magic, so the record was read "
                "as V0, whose first word is the ndim)" : "");
  memset(s, 0, sizeof *s);
  s->ndim = (int)ndim;
  for (int i = 0; i < s->ndim; i++) {
    int64_t d;
    if (version == 0) {
      uint32_t u;
      LMX_TRY(rd_u32(c, &u, "dims"));
      d = u;
    } else {
      LMX_TRY(rd_i64(c, &d, "dims"));
    }
    if (d == -1 && version == 3)
      return perr(c, LMX_ERR_FORMAT, "dim %d is unknown (-1): an array whose shape is not "
                  "fully known cannot be loaded", i + 1);
    if (d < 0) return perr(c, LMX_ERR_FORMAT, "dim %d is negative (%lld)", i + 1, (long long)d);
    s->dim[i] = d;
  }
  return LMX_OK;
}

/* Context (validated, then dropped: arrays load on cpu(0)) and dtype code. */
static int read_ctx_dtype(cursor *c, int *dtype) {
  int32_t dev_type, dev_id, dt;
  LMX_TRY(rd_i32(c, &dev_type, "context"));
  LMX_TRY(rd_i32(c, &dev_id, "context"));
  if (dev_type != DEV_CPU && dev_type != DEV_GPU && dev_type != DEV_CPU_PINNED &&
      dev_type != DEV_CPU_SHARED)
    return perr(c, LMX_ERR_FORMAT, "unknown device type %d (expected 1 cpu, 2 gpu, "
                "3 cpu_pinned or 5 cpu_shared)", (int)dev_type);
  if (dev_id < 0) return perr(c, LMX_ERR_FORMAT, "device id %d is negative", (int)dev_id);
  LMX_TRY(rd_i32(c, &dt, "dtype"));
  static const char *const other[] = {"bool", "int16", "uint16", "uint32", "uint64"};
  if (dt > LMX_INT64 && dt < LMX_BFLOAT16)
    return perr(c, LMX_ERR_UNSUPPORTED, "dtype %s (code %d) is not supported",
                other[dt - LMX_INT64 - 1], (int)dt);
  if (!lmx_dtype_valid(dt))
    return perr(c, LMX_ERR_FORMAT, "unknown dtype code %d (expected 0..%d or %d)", (int)dt,
                LMX_INT64, LMX_BFLOAT16);
  *dtype = dt;
  return LMX_OK;
}

/* Bytes of the array's data; fails when the element count overflows. The product of
 * the non-zero dims is checked too: a zero dim makes the array empty, but (0, 2^62, 4)
 * must not load, as a reduction over its first axis would give (2^62, 4), whose size
 * wraps. */
static int data_bytes(const cursor *c, const lmx_shape *s, int dtype, uint64_t *bytes) {
  int64_t n = 1, nonzero = 1;
  for (int i = 0; i < s->ndim; i++) {
    int64_t d = s->dim[i];
    if (d > 0 && nonzero > INT64_MAX / 16 / d) {
      char buf[LMX_SHAPE_STRCAP];
      return perr(c, LMX_ERR_FORMAT, "shape %s is too large (the element count overflows)",
                  lmx_shape_str(s, buf));
    }
    if (d > 0) nonzero *= d;
    n *= d;
  }
  *bytes = (uint64_t)n * (uint64_t)lmx_dtype_size(dtype);
  return LMX_OK;
}

static int make_array(cursor *c, const lmx_shape *s, int dtype, lmx_ndarray **out) {
  int rc = lmx_nd_create(s, dtype, LMX_CPU, 0, 0, out);
  return rc == LMX_OK ? LMX_OK : pprefix(c, rc);
}

/* One array record, any version. */
static int read_record(cursor *c, lmx_ndarray **out) {
  uint32_t magic;
  LMX_TRY(rd_u32(c, &magic, "array magic"));
  int version = magic == V1_MAGIC ? 1 : magic == V2_MAGIC ? 2 : magic == V3_MAGIC ? 3 : 0;
  int32_t stype = STYPE_DENSE;
  if (version >= 2) {
    LMX_TRY(rd_i32(c, &stype, "storage type"));
    LMX_TRY(check_stype(c, stype));
  }
  lmx_shape s;
  int none = 0, dtype = LMX_FLOAT32;
  LMX_TRY(read_shape(c, version, magic, &s, &none));
  if (none) {
    lmx_shape empty = {1, {0}};
    return make_array(c, &empty, LMX_FLOAT32, out);
  }
  if (stype == STYPE_UNDEF)
    return perr(c, LMX_ERR_FORMAT, "storage type is undefined (-1) but the array has a shape");
  LMX_TRY(read_ctx_dtype(c, &dtype));
  uint64_t bytes = 0;
  LMX_TRY(data_bytes(c, &s, dtype, &bytes));
  LMX_TRY(need(c, bytes, "data"));
  LMX_TRY(make_array(c, &s, dtype, out));
  if (bytes) memcpy(lmx_nd_ptr(*out), c->p + c->pos, (size_t)bytes);
  c->pos += (size_t)bytes;
  return LMX_OK;
}

static int read_name(cursor *c, char **out) {
  uint64_t len;
  LMX_TRY(rd_u64(c, &len, "name length"));
  LMX_TRY(need(c, len, "name"));
  const unsigned char *src = c->p + c->pos;
  if (memchr(src, 0, (size_t)len))
    return perr(c, LMX_ERR_FORMAT, "the name contains a NUL byte");
  char *s = lmx_alloc((size_t)len + 1);
  if (!s) return pprefix(c, lmx_fail_nomem("a name", (size_t)len + 1));
  memcpy(s, src, (size_t)len);
  s[len] = '\0';
  c->pos += (size_t)len;
  *out = s;
  return LMX_OK;
}

/* Header and array count; allocates l->arrays. */
static int read_header(cursor *c, lmx_ndlist *l) {
  uint64_t magic, reserved, n;
  LMX_TRY(rd_u64(c, &magic, "header"));
  if (magic != LIST_MAGIC)
    return perr(c, LMX_ERR_FORMAT, "bad magic 0x%llx (expected 0x112): not an MXNet "
                "NDArray-list file", (unsigned long long)magic);
  LMX_TRY(rd_u64(c, &reserved, "header"));
  LMX_TRY(rd_u64(c, &n, "array count"));
  size_t room = c->size - c->pos;
  uint64_t fit = room < 8 ? 0 : (room - 8) / MIN_RECORD_BYTES;
  if (n > fit || n > INT_MAX)
    return perr(c, LMX_ERR_FORMAT, "array count %llu is impossible: %zu bytes follow at offset "
                "%zu and each array takes at least %d (truncated or corrupt file)",
                (unsigned long long)n, room, c->pos, MIN_RECORD_BYTES);
  if (n == 0) return LMX_OK;
  l->arrays = lmx_calloc((size_t)n, sizeof *l->arrays);
  if (!l->arrays) return pprefix(c, lmx_fail_nomem("the array list", (size_t)n * sizeof(void *)));
  l->n = (int)n;
  return LMX_OK;
}

static int read_names(cursor *c, lmx_ndlist *l) {
  uint64_t k;
  LMX_TRY(rd_u64(c, &k, "name count"));
  if (k != 0 && k != (uint64_t)l->n)
    return perr(c, LMX_ERR_FORMAT, "name count %llu must be 0 (a list) or %d (the array count)",
                (unsigned long long)k, l->n);
  if (k == 0) return LMX_OK;
  l->names = lmx_calloc((size_t)k, sizeof *l->names);
  if (!l->names) return pprefix(c, lmx_fail_nomem("the name list", (size_t)k * sizeof(char *)));
  l->has_names = 1;
  for (int i = 0; i < l->n; i++) {
    c->name = i;
    LMX_TRY(read_name(c, &l->names[i]));
  }
  c->name = -1;
  return LMX_OK;
}

static int parse(cursor *c, lmx_ndlist *l) {
  LMX_TRY(read_header(c, l));
  for (int i = 0; i < l->n; i++) {
    c->arr = i;
    LMX_TRY(read_record(c, &l->arrays[i]));
  }
  c->arr = -1;
  LMX_TRY(read_names(c, l));
  if (c->pos != c->size)
    return perr(c, LMX_ERR_FORMAT, "%zu bytes of trailing garbage at offset %zu (file has %zu)",
                c->size - c->pos, c->pos, c->size);
  return LMX_OK;
}

int lmx_ndfile_load_buffer(const void *data, size_t size, const char *name, lmx_ndlist **out) {
  cursor c = {data, size, 0, name, -1, -1};
  lmx_ndlist *l = lmx_calloc(1, sizeof *l);
  if (!l) return pprefix(&c, lmx_fail_nomem("an NDArray list", sizeof *l));
  lmx_ref_init(&l->rc);
  int rc = parse(&c, l);
  if (rc != LMX_OK) {
    lmx_ndlist_release(l);
    return rc;
  }
  *out = l;
  return LMX_OK;
}

/* Reads the whole regular file at path into an engine-allocated buffer. */
static int read_file(const char *path, unsigned char **out, size_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return lmx_fail(LMX_ERR_IO, "%s: cannot open for reading: %s", path, strerror(errno));
  struct stat st;
  int rc = LMX_OK;
  unsigned char *buf = NULL;
  if (fstat(fd, &st) != 0) rc = lmx_fail(LMX_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
  else if (!S_ISREG(st.st_mode)) rc = lmx_fail(LMX_ERR_IO, "%s: not a regular file", path);
  else if (st.st_size < 0 || (uint64_t)st.st_size > (uint64_t)(SIZE_MAX / 2))
    rc = lmx_fail(LMX_ERR_IO, "%s: file is too large (%lld bytes)", path, (long long)st.st_size);
  size_t n = rc == LMX_OK ? (size_t)st.st_size : 0, got = 0;
  if (rc == LMX_OK && !(buf = lmx_alloc(n ? n : 1)))
    rc = lmx_fail_prefix(lmx_fail_nomem("a read buffer", n), "%s: ", path);
  while (rc == LMX_OK && got < n) {
    ssize_t k = read(fd, buf + got, n - got);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) rc = lmx_fail(LMX_ERR_IO, "%s: read error: %s", path, strerror(errno));
    else if (k == 0)
      rc = lmx_fail(LMX_ERR_IO, "%s: the file shrank while being read (%zu of %zu bytes)", path,
                    got, n);
    else got += (size_t)k;
  }
  close(fd);
  if (rc != LMX_OK) {
    lmx_free(buf);
    return rc;
  }
  *out = buf;
  *size = n;
  return LMX_OK;
}

int lmx_ndfile_load(const char *path, lmx_ndlist **out) {
  unsigned char *buf = NULL;
  size_t size = 0;
  LMX_TRY(read_file(path, &buf, &size));
  int rc = lmx_ndfile_load_buffer(buf, size, path, out);
  lmx_free(buf);
  return rc;
}

/* ================================================================ the writer === */

typedef struct {
  int fd;
  int created; /* the temporary exists and must go on failure */
  unsigned char *buf;
  size_t len;
  const char *path, *tmp;
} writer;

static atomic_ullong g_tmp_counter;

static int werr(const writer *w, const char *what) {
  return lmx_fail(LMX_ERR_IO, "%s: %s temporary file %s: %s", w->path, what, w->tmp,
                  strerror(errno));
}

static int write_all(writer *w, const unsigned char *p, size_t n) {
  while (n > 0) {
    ssize_t k = write(w->fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return werr(w, "cannot write");
    p += k;
    n -= (size_t)k;
  }
  return LMX_OK;
}

static int w_flush(writer *w) {
  int rc = write_all(w, w->buf, w->len);
  w->len = 0;
  return rc;
}

static int w_put(writer *w, const void *p, size_t n) {
  if (n > WBUF_CAP - w->len) LMX_TRY(w_flush(w));
  if (n >= WBUF_CAP) return write_all(w, p, n);
  memcpy(w->buf + w->len, p, n);
  w->len += n;
  return LMX_OK;
}

static int w_le(writer *w, uint64_t v, int bytes) {
  unsigned char b[8];
  for (int i = 0; i < bytes; i++) b[i] = (unsigned char)(v >> (8 * i));
  return w_put(w, b, (size_t)bytes);
}

static int w_u32(writer *w, uint32_t v) { return w_le(w, v, 4); }
static int w_i32(writer *w, int32_t v) { return w_le(w, (uint32_t)v, 4); }
static int w_u64(writer *w, uint64_t v) { return w_le(w, v, 8); }

/* One record: V2, or V3 for a 0-d array (see the top of the file). */
static int write_record(writer *w, const lmx_ndarray *a) {
  const lmx_ndarray *src = a;
  lmx_ndarray *host = NULL;
  if (!lmx_nd_is_cpu(a)) {
    LMX_TRY(lmx_nd_create(&a->shape, a->dtype, LMX_CPU, 0, 0, &host));
    int rc = lmx_nd_copy(a, host);
    if (rc != LMX_OK) {
      lmx_nd_release(host);
      return rc;
    }
    src = host;
  }
  int rc = w_u32(w, a->shape.ndim == 0 ? V3_MAGIC : V2_MAGIC);
  if (rc == LMX_OK) rc = w_i32(w, STYPE_DENSE);
  if (rc == LMX_OK) rc = w_i32(w, a->shape.ndim);
  for (int i = 0; rc == LMX_OK && i < a->shape.ndim; i++) rc = w_u64(w, (uint64_t)a->shape.dim[i]);
  if (rc == LMX_OK) rc = w_i32(w, a->st->dev_type);
  if (rc == LMX_OK) rc = w_i32(w, a->st->dev_id);
  if (rc == LMX_OK) rc = w_i32(w, a->dtype);
  if (rc == LMX_OK) rc = w_put(w, lmx_nd_ptr(src), lmx_nd_bytes(src));
  lmx_nd_release(host);
  return rc;
}

static int write_body(writer *w, lmx_ndarray *const *arrays, const char *const *names, int n) {
  LMX_TRY(w_u64(w, LIST_MAGIC));
  LMX_TRY(w_u64(w, 0));
  LMX_TRY(w_u64(w, (uint64_t)n));
  for (int i = 0; i < n; i++) {
    int rc = write_record(w, arrays[i]);
    if (rc != LMX_OK && rc != LMX_ERR_IO) return lmx_fail_prefix(rc, "%s: array %d: ", w->path, i);
    LMX_TRY(rc);
  }
  LMX_TRY(w_u64(w, names ? (uint64_t)n : 0));
  for (int i = 0; names && i < n; i++) {
    size_t len = strlen(names[i]);
    LMX_TRY(w_u64(w, len));
    LMX_TRY(w_put(w, names[i], len));
  }
  return w_flush(w);
}

/* Creates the temporary, writes everything, syncs and closes it. */
static int write_temp(writer *w, lmx_ndarray *const *arrays, const char *const *names, int n) {
  w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (w->fd < 0) return werr(w, "cannot create");
  w->created = 1;
  int rc = write_body(w, arrays, names, n);
  if (rc == LMX_OK && fsync(w->fd) != 0) rc = werr(w, "cannot sync");
  if (close(w->fd) != 0 && rc == LMX_OK) rc = werr(w, "cannot close");
  w->fd = -1;
  return rc;
}

/* Best effort: make the rename durable. Reuses the temporary's name buffer. */
static void sync_dir(char *tmp) {
  char *slash = strrchr(tmp, '/');
  const char *dir = ".";
  if (slash == tmp) dir = "/";
  else if (slash) {
    *slash = '\0';
    dir = tmp;
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
}

int lmx_ndfile_save(const char *path, lmx_ndarray *const *arrays, const char *const *names,
                    int n) {
  size_t cap = strlen(path) + 64;
  char *tmp = lmx_alloc(cap);
  if (!tmp) return lmx_fail_prefix(lmx_fail_nomem("the temporary file name", cap), "%s: ", path);
  snprintf(tmp, cap, "%s.tmp.%ld.%llu", path, (long)getpid(),
           (unsigned long long)atomic_fetch_add(&g_tmp_counter, 1));
  writer w = {-1, 0, NULL, 0, path, tmp};
  int rc = LMX_OK;
  w.buf = lmx_alloc(WBUF_CAP);
  if (!w.buf) rc = lmx_fail_prefix(lmx_fail_nomem("the write buffer", WBUF_CAP), "%s: ", path);
  if (rc == LMX_OK) rc = write_temp(&w, arrays, names, n);
  if (rc == LMX_OK && rename(tmp, path) != 0)
    rc = lmx_fail(LMX_ERR_IO, "%s: cannot rename temporary file %s over it: %s", path, tmp,
                  strerror(errno));
  if (rc != LMX_OK && w.created) unlink(tmp);
  if (rc == LMX_OK) sync_dir(tmp);
  lmx_free(w.buf);
  lmx_free(tmp);
  return rc;
}
