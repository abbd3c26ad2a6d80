/* recordio.h — dmlc-core's RecordIO format (MXNet's .rec files): reading records at
 * byte offsets of an open file and writing them.
 *
 * A record on disk is one or more parts; each part is the magic 0xced7230a, a uint32
 * lrec = cflag << 29 | length (little-endian, as dmlc writes them on every platform
 * MXNet supports), `length` bytes and zero padding to a multiple of 4. cflag 0 is a
 * whole record; a record whose bytes hold the magic at a 4-aligned offset is written
 * in parts split there (1 first, 2 middle, 3 last) and the magic between parts is
 * dropped, to be restored by the reader.
 *
 * The reader takes its input as untrusted: a bad magic, an unknown or out-of-order
 * cflag, a length past the end of the file or a truncated header fail with
 * LMX_ERR_FORMAT and a message naming the file and byte offset. Reads use pread on a
 * descriptor, so threads may read one file at once with their own lmx_rio_buf.
 */
#ifndef LMX_IO_RECORDIO_H
#define LMX_IO_RECORDIO_H

#include <stddef.h>
#include <stdint.h>

enum { LMX_RIO_MAGIC = (int)0xced7230a };
enum { LMX_RIO_MAX_PART = (1 << 29) - 1 };

/* A growable byte buffer (lmx_alloc'ed); one per reading thread. */
typedef struct lmx_rio_buf {
  unsigned char *p;
  size_t len, cap;
} lmx_rio_buf;

void lmx_rio_buf_free(lmx_rio_buf *b);

/* Reads the record at byte offset off of fd (file size `size`, name `path` for
 * messages) into b (b->len its length). *next: the offset after it. *got: 0 at the end
 * of the file (off == size), 1 otherwise. */
int lmx_rio_read_at(int fd, const char *path, uint64_t size, uint64_t off, lmx_rio_buf *b,
                    uint64_t *next, int *got);

/* Appends one record to fd (its current end is *pos, advanced past it). */
int lmx_rio_write(int fd, const char *path, uint64_t *pos, const void *data, size_t len);

#endif
