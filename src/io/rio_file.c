/* rio_file.c — the lmx_recordio handle of the public API: one RecordIO file open for
 * sequential reading (with tell/seek for indexed access) or for writing.
 *
 * A reader remembers the file size at open and never reads past it; a record it
 * returns is borrowed from the handle's buffer until the next read, seek or free. A
 * writer creates or truncates the file and appends; free closes it (fsync is left to
 * the OS, as dmlc does). One handle is used by one thread at a time.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../api/api.h"
#include "../core/alloc.h"
#include "recordio.h"

struct lmx_recordio {
  int fd, mode;
  char *path;
  uint64_t size, pos; /* reader: file size, next record offset; writer: end */
  lmx_rio_buf buf;
};

int lmx_recordio_open(const char *path, int mode, lmx_recordio **out) {
  LMX_ENTER();
  LMX_NEED(path, "lmx_recordio_open", "path");
  LMX_NEED(out, "lmx_recordio_open", "out");
  if (mode != LMX_RECORDIO_READ && mode != LMX_RECORDIO_WRITE)
    return lmx_fail(LMX_ERR_ARG, "lmx_recordio_open: %s: mode must be %d (read) or %d (write), got %d",
                    path, LMX_RECORDIO_READ, LMX_RECORDIO_WRITE, mode);
  int fd = mode == LMX_RECORDIO_READ ? open(path, O_RDONLY | O_CLOEXEC)
                                     : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return lmx_fail(LMX_ERR_IO, "RecordIO: cannot open %s for %s: %s", path,
                    mode == LMX_RECORDIO_READ ? "reading" : "writing", strerror(errno));
  struct stat st;
  int e = fstat(fd, &st) != 0 ? errno : 0; /* errno only when fstat itself failed */
  if (e || (mode == LMX_RECORDIO_READ && !S_ISREG(st.st_mode))) {
    close(fd);
    return lmx_fail(LMX_ERR_IO, "RecordIO: %s is not a regular file%s%s", path, e ? ": " : "",
                    e ? strerror(e) : "");
  }
  lmx_recordio *r = lmx_calloc(1, sizeof *r);
  char *p = r ? lmx_strdup(path) : NULL;
  if (!p) {
    lmx_free(r);
    close(fd);
    return lmx_fail_nomem("RecordIO handle", sizeof *r);
  }
  r->fd = fd, r->mode = mode, r->path = p;
  r->size = mode == LMX_RECORDIO_READ ? (uint64_t)st.st_size : 0;
  *out = r;
  return LMX_OK;
}

int lmx_recordio_free(lmx_recordio *r) {
  if (!r) return LMX_OK;
  int rc = close(r->fd) == 0 ? LMX_OK
                             : lmx_fail(LMX_ERR_IO, "RecordIO %s: close failed: %s", r->path,
                                        strerror(errno));
  lmx_rio_buf_free(&r->buf);
  lmx_free(r->path);
  lmx_free(r);
  return rc;
}

int lmx_recordio_write(lmx_recordio *r, const void *data, size_t size) {
  LMX_ENTER();
  LMX_NEED(r, "lmx_recordio_write", "r");
  if (size) LMX_NEED(data, "lmx_recordio_write", "data");
  if (r->mode != LMX_RECORDIO_WRITE)
    return lmx_fail(LMX_ERR_STATE, "RecordIO %s: write on a file opened for reading", r->path);
  return lmx_rio_write(r->fd, r->path, &r->pos, size ? data : "", size);
}

int lmx_recordio_read(lmx_recordio *r, const void **data, size_t *size, int *got) {
  LMX_ENTER();
  LMX_NEED(r, "lmx_recordio_read", "r");
  LMX_NEED(data, "lmx_recordio_read", "data");
  LMX_NEED(size, "lmx_recordio_read", "size");
  LMX_NEED(got, "lmx_recordio_read", "got");
  if (r->mode != LMX_RECORDIO_READ)
    return lmx_fail(LMX_ERR_STATE, "RecordIO %s: read on a file opened for writing", r->path);
  uint64_t next;
  int g;
  LMX_TRY(lmx_rio_read_at(r->fd, r->path, r->size, r->pos, &r->buf, &next, &g));
  r->pos = next;
  *data = r->buf.p;
  *size = r->buf.len;
  *got = g;
  return LMX_OK;
}

int lmx_recordio_tell(const lmx_recordio *r, uint64_t *pos) {
  LMX_ENTER();
  LMX_NEED(r, "lmx_recordio_tell", "r");
  LMX_NEED(pos, "lmx_recordio_tell", "pos");
  *pos = r->pos;
  return LMX_OK;
}

int lmx_recordio_seek(lmx_recordio *r, uint64_t pos) {
  LMX_ENTER();
  LMX_NEED(r, "lmx_recordio_seek", "r");
  if (r->mode != LMX_RECORDIO_READ)
    return lmx_fail(LMX_ERR_STATE, "RecordIO %s: seek on a file opened for writing", r->path);
  if (pos > r->size || pos % 4 != 0)
    return lmx_fail(LMX_ERR_ARG,
                    "RecordIO %s: seek to offset %llu: expected a multiple of 4 within the file "
                    "(size %llu)",
                    r->path, (unsigned long long)pos, (unsigned long long)r->size);
  r->pos = pos;
  return LMX_OK;
}
