/* api_files.c — NDArray-list file entry points (argument checks; work in
 * src/tensor/ndfile.c), atomic writes of any bytes (src/core/atomic_file.c), file
 * checksums (zlib's crc32), which checkpoint manifests record, and the IDX / CSV dataset
 * parsers (src/io/datafile.c). An lmx_ndlist is reference counted like every other
 * handle; lmx_ndlist_get hands out new references to its arrays, so they outlive the list. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../core/alloc.h"
#include "../core/atomic_file.h"
#include "../io/datafile.h"
#include "../tensor/ndfile.h"
#include "api.h"

int lmx_ndarray_save(const char *path, lmx_ndarray *const *arrays, const char *const *names,
                     int n) {
  LMX_ENTER();
  LMX_NEED(path, "lmx_ndarray_save", "path");
  if (!path[0]) return lmx_fail(LMX_ERR_ARG, "lmx_ndarray_save: path must not be empty");
  if (n < 0) return lmx_fail(LMX_ERR_ARG, "lmx_ndarray_save: n must be >= 0, got %d", n);
  if (n > 0) LMX_NEED(arrays, "lmx_ndarray_save", "arrays");
  for (int i = 0; i < n; i++) {
    if (!arrays[i])
      return lmx_fail(LMX_ERR_ARG, "lmx_ndarray_save: %s: arrays[%d] is NULL", path, i);
    if (names && !names[i])
      return lmx_fail(LMX_ERR_ARG, "lmx_ndarray_save: %s: names[%d] is NULL", path, i);
  }
  return lmx_ndfile_save(path, arrays, names, n);
}

int lmx_ndarray_load(const char *path, lmx_ndlist **out) {
  LMX_ENTER();
  LMX_NEED(path, "lmx_ndarray_load", "path");
  LMX_NEED(out, "lmx_ndarray_load", "out");
  if (!path[0]) return lmx_fail(LMX_ERR_ARG, "lmx_ndarray_load: path must not be empty");
  return lmx_ndfile_load(path, out);
}

int lmx_ndarray_load_buffer(const void *data, size_t size, const char *name,
                            lmx_ndlist **out) {
  LMX_ENTER();
  LMX_NEED(out, "lmx_ndarray_load_buffer", "out");
  if (size > 0) LMX_NEED(data, "lmx_ndarray_load_buffer", "data");
  return lmx_ndfile_load_buffer(size > 0 ? data : "", size, name ? name : "<buffer>", out);
}

int lmx_ndlist_free(lmx_ndlist *list) {
  lmx_ndlist_release(list);
  return LMX_OK;
}

int lmx_ndlist_size(const lmx_ndlist *list, int *n, int *has_names) {
  LMX_ENTER();
  LMX_NEED(list, "lmx_ndlist_size", "list");
  LMX_NEED(n, "lmx_ndlist_size", "n");
  LMX_NEED(has_names, "lmx_ndlist_size", "has_names");
  *n = list->n;
  *has_names = list->has_names;
  return LMX_OK;
}

/* name may be NULL when the caller does not want it. */
int lmx_ndlist_get(const lmx_ndlist *list, int i, lmx_ndarray **arr, const char **name) {
  LMX_ENTER();
  LMX_NEED(list, "lmx_ndlist_get", "list");
  LMX_NEED(arr, "lmx_ndlist_get", "arr");
  if (i < 0 || i >= list->n)
    return lmx_fail(LMX_ERR_ARG, "lmx_ndlist_get: index %d is out of range (the list has %d "
                    "arrays)", i, list->n);
  lmx_ref_inc(&list->arrays[i]->rc);
  *arr = list->arrays[i];
  if (name) *name = list->has_names ? list->names[i] : NULL;
  return LMX_OK;
}

int lmx_file_write_atomic(const char *path, const void *data, size_t len) {
  LMX_ENTER();
  LMX_NEED(path, "lmx_file_write_atomic", "path");
  if (!path[0]) return lmx_fail(LMX_ERR_ARG, "lmx_file_write_atomic: path must not be empty");
  if (len > 0) LMX_NEED(data, "lmx_file_write_atomic", "data");
  return lmx_atomic_write_file(path, len > 0 ? data : "", len);
}

int lmx_file_clean_temporaries(const char *path, int *removed) {
  LMX_ENTER();
  LMX_NEED(path, "lmx_file_clean_temporaries", "path");
  if (!path[0])
    return lmx_fail(LMX_ERR_ARG, "lmx_file_clean_temporaries: path must not be empty");
  return lmx_atomic_clean_stale(path, removed);
}

enum { CRC_CHUNK = 1 << 16 };

static int crc_fd(const char *path, int fd, unsigned char *buf, uint32_t *crc, int64_t *size) {
  struct stat st;
  if (fstat(fd, &st) != 0)
    return lmx_fail(LMX_ERR_IO, "lmx_file_crc32: %s: cannot stat: %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode))
    return lmx_fail(LMX_ERR_IO, "lmx_file_crc32: %s: not a regular file", path);
  uLong c = crc32(0L, Z_NULL, 0);
  int64_t total = 0;
  for (;;) {
    ssize_t k = read(fd, buf, CRC_CHUNK);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0)
      return lmx_fail(LMX_ERR_IO, "lmx_file_crc32: %s: read error: %s", path, strerror(errno));
    if (k == 0) break;
    c = crc32(c, buf, (uInt)k);
    total += k;
  }
  *crc = (uint32_t)c;
  *size = total;
  return LMX_OK;
}

int lmx_file_crc32(const char *path, uint32_t *crc, int64_t *size) {
  LMX_ENTER();
  LMX_NEED(path, "lmx_file_crc32", "path");
  LMX_NEED(crc, "lmx_file_crc32", "crc");
  LMX_NEED(size, "lmx_file_crc32", "size");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return lmx_fail(LMX_ERR_IO, "lmx_file_crc32: %s: cannot open for reading: %s", path,
                    strerror(errno));
  unsigned char *buf = lmx_alloc(CRC_CHUNK);
  int rc = buf ? crc_fd(path, fd, buf, crc, size)
               : lmx_fail_prefix(lmx_fail_nomem("the read buffer", CRC_CHUNK), "lmx_file_crc32: %s: ", path);
  lmx_free(buf);
  close(fd);
  return rc;
}

int lmx_idx_parse(const void *data, size_t size, int want_ndim, const char *name,
                  int64_t *dims, int64_t *offset) {
  LMX_ENTER();
  LMX_NEED(dims, "lmx_idx_parse", "dims");
  LMX_NEED(offset, "lmx_idx_parse", "offset");
  if (size > 0) LMX_NEED(data, "lmx_idx_parse", "data");
  if (want_ndim < 1 || want_ndim > LMX_MAX_NDIM)
    return lmx_fail(LMX_ERR_ARG, "lmx_idx_parse: want_ndim must be in 1..%d, got %d",
                    LMX_MAX_NDIM, want_ndim);
  return lmx_idx_parse_buffer(size > 0 ? data : "", size, want_ndim, name ? name : "<buffer>",
                              dims, offset);
}

int lmx_csv_parse(const void *data, size_t size, int64_t width, const char *name,
                  lmx_ndarray **out) {
  LMX_ENTER();
  LMX_NEED(out, "lmx_csv_parse", "out");
  if (size > 0) LMX_NEED(data, "lmx_csv_parse", "data");
  if (width < 1)
    return lmx_fail(LMX_ERR_ARG, "lmx_csv_parse: width must be >= 1, got %lld", (long long)width);
  return lmx_csv_parse_buffer(size > 0 ? data : "", size, width, name ? name : "<buffer>", out);
}
