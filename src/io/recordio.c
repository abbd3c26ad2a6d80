/* recordio.c — the RecordIO record format (see recordio.h). */
#include "recordio.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "../core/alloc.h"
#include "../core/status.h"

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16), p[3] = (unsigned char)(v >> 24);
}

void lmx_rio_buf_free(lmx_rio_buf *b) {
  lmx_free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

static int reserve(lmx_rio_buf *b, size_t need, const char *path) {
  if (need <= b->cap) return LMX_OK;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < need) cap *= 2;
  unsigned char *p = lmx_realloc(b->p, cap);
  if (!p) return lmx_fail_prefix(lmx_fail_nomem("RecordIO record", cap), "%s: ", path);
  b->p = p, b->cap = cap;
  return LMX_OK;
}

static int read_full(int fd, const char *path, uint64_t off, void *dst, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = pread(fd, (char *)dst + done, n - done, (off_t)(off + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      return lmx_fail(LMX_ERR_IO, "RecordIO %s: read at offset %llu failed: %s", path,
                      (unsigned long long)(off + done), strerror(errno));
    if (r == 0)
      return lmx_fail(LMX_ERR_FORMAT, "RecordIO %s: offset %llu: file ends early", path,
                      (unsigned long long)(off + done));
    done += (size_t)r;
  }
  return LMX_OK;
}

int lmx_rio_read_at(int fd, const char *path, uint64_t size, uint64_t off, lmx_rio_buf *b,
                    uint64_t *next, int *got) {
  b->len = 0;
  *got = 0;
  if (off == size) {
    *next = off;
    return LMX_OK;
  }
  if (off % 4 != 0 || off > size)
    return lmx_fail(LMX_ERR_FORMAT,
                    "RecordIO %s: offset %llu is not a record start (file size %llu; records "
                    "start at multiples of 4)",
                    path, (unsigned long long)off, (unsigned long long)size);
  uint64_t pos = off;
  for (int part = 0;; part++) {
    unsigned char hdr[8];
    if (size - pos < 8)
      return lmx_fail(LMX_ERR_FORMAT,
                      "RecordIO %s: offset %llu: truncated record header (%llu bytes left, "
                      "need 8)",
                      path, (unsigned long long)pos, (unsigned long long)(size - pos));
    LMX_TRY(read_full(fd, path, pos, hdr, 8));
    uint32_t magic = le32(hdr), lrec = le32(hdr + 4);
    if (magic != (uint32_t)LMX_RIO_MAGIC)
      return lmx_fail(LMX_ERR_FORMAT,
                      "RecordIO %s: offset %llu: bad magic 0x%08x (expected 0xced7230a): not "
                      "a RecordIO file, or a corrupt one",
                      path, (unsigned long long)pos, magic);
    uint32_t cflag = lrec >> 29, len = lrec & (uint32_t)LMX_RIO_MAX_PART;
    if (cflag > 3 || (part == 0 && cflag >= 2) || (part > 0 && cflag < 2))
      return lmx_fail(LMX_ERR_FORMAT,
                      "RecordIO %s: offset %llu: continuation flag %u %s", path,
                      (unsigned long long)pos, cflag,
                      cflag > 3 ? "is not 0..3"
                      : part == 0 ? "continues a record that was never started"
                                  : "starts a new record inside a split one");
    uint64_t padded = ((uint64_t)len + 3) & ~(uint64_t)3;
    if (padded > size - pos - 8)
      return lmx_fail(LMX_ERR_FORMAT,
                      "RecordIO %s: offset %llu: record length %u runs past the end of the "
                      "file (%llu bytes left): truncated or corrupt",
                      path, (unsigned long long)pos, len, (unsigned long long)(size - pos - 8));
    size_t need = b->len + len + (cflag == 1 || cflag == 2 ? 4 : 0);
    LMX_TRY(reserve(b, need ? need : 1, path));
    if (len) LMX_TRY(read_full(fd, path, pos + 8, b->p + b->len, len));
    b->len += len;
    pos += 8 + padded;
    if (cflag == 0 || cflag == 3) break;
    put_le32(b->p + b->len, (uint32_t)LMX_RIO_MAGIC);
    b->len += 4;
  }
  *next = pos;
  *got = 1;
  return LMX_OK;
}

static int write_full(int fd, const char *path, uint64_t *pos, const void *src, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = pwrite(fd, (const char *)src + done, n - done, (off_t)(*pos + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return lmx_fail(LMX_ERR_IO, "RecordIO %s: write at offset %llu failed: %s", path,
                      (unsigned long long)(*pos + done), r < 0 ? strerror(errno) : "no progress");
    done += (size_t)r;
  }
  *pos += n;
  return LMX_OK;
}

static int write_part(int fd, const char *path, uint64_t *pos, uint32_t cflag,
                      const unsigned char *p, uint32_t n) {
  unsigned char hdr[8];
  put_le32(hdr, (uint32_t)LMX_RIO_MAGIC);
  put_le32(hdr + 4, cflag << 29 | n);
  LMX_TRY(write_full(fd, path, pos, hdr, 8));
  if (n) LMX_TRY(write_full(fd, path, pos, p, n));
  static const unsigned char zero[4];
  uint32_t pad = (4 - (n & 3)) & 3;
  return pad ? write_full(fd, path, pos, zero, pad) : LMX_OK;
}

int lmx_rio_write(int fd, const char *path, uint64_t *pos, const void *data, size_t len) {
  if (len > (size_t)LMX_RIO_MAX_PART)
    return lmx_fail(LMX_ERR_ARG,
                    "RecordIO %s: a record holds at most 2^29-1 = %d bytes, got %zu", path,
                    LMX_RIO_MAX_PART, len);
  const unsigned char *p = data;
  unsigned char magic[4];
  put_le32(magic, (uint32_t)LMX_RIO_MAGIC);
  size_t start = 0;
  for (size_t i = 0; i + 4 <= len; i += 4) {
    if (memcmp(p + i, magic, 4) != 0) continue;
    LMX_TRY(write_part(fd, path, pos, start == 0 ? 1u : 2u, p + start, (uint32_t)(i - start)));
    start = i + 4;
  }
  return write_part(fd, path, pos, start == 0 ? 0u : 3u, p + start, (uint32_t)(len - start));
}
