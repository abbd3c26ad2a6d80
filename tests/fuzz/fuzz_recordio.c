/* fuzz_recordio.c — libFuzzer target for the RecordIO reader (lmx_recordio_read).
 *
 * The input is written to an anonymous file (memfd) and read record by record through
 * the public API until the end or an error. Every input must end cleanly: records that
 * fit inside the file, or a status with a message naming the file and an offset, no
 * crash and no leak. Each record is then written back with lmx_recordio_write and read
 * again: the round trip must give the same bytes (which exercises the writer's split at
 * embedded magic numbers with whatever the input holds).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "luamx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void roundtrip(const void *rec, size_t n) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", memfd_create("fuzz_rt", 0));
  int fd = atoi(path + strlen("/proc/self/fd/"));
  lmx_recordio *w, *r;
  if (lmx_recordio_open(path, LMX_RECORDIO_WRITE, &w) == LMX_OK) {
    if (lmx_recordio_write(w, rec, n) != LMX_OK) abort();
    lmx_recordio_free(w);
    const void *back;
    size_t m;
    int got;
    if (lmx_recordio_open(path, LMX_RECORDIO_READ, &r) != LMX_OK) abort();
    if (lmx_recordio_read(r, &back, &m, &got) != LMX_OK || !got || m != n ||
        (n && memcmp(back, rec, n) != 0))
      abort();
    lmx_recordio_free(r);
  }
  close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("fuzz_rec", 0);
  if (fd < 0) return 0;
  if (size && write(fd, data, size) != (ssize_t)size) {
    close(fd);
    return 0;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  lmx_recordio *r;
  if (lmx_recordio_open(path, LMX_RECORDIO_READ, &r) == LMX_OK) {
    for (int i = 0; i < 1000; i++) {
      const void *rec;
      size_t n;
      int got;
      if (lmx_recordio_read(r, &rec, &n, &got) != LMX_OK) {
        if (!strstr(lmx_last_error(), "offset")) abort(); /* errors name the offset */
        break;
      }
      if (!got) break;
      if (n > size) abort(); /* a record never holds more than the file */
      roundtrip(rec, n);
    }
    lmx_recordio_free(r);
  }
  close(fd);
  return 0;
}
