/* fuzz_idx.c — libFuzzer target for the IDX (MNIST) header parser, lmx_idx_parse, which
 * mx.io.MNISTIter calls on its image (3 dims) and label (1 dim) files.
 *
 * The input is parsed as both. Every input must be accepted or refused with
 * LMX_ERR_FORMAT and a message that starts with the file's name. An accepted input
 * must be exactly what an IDX writer would make of the dims it reports: the header
 * rebuilt from the dims equals the input's header, and the data that follows is
 * exactly prod(dims) bytes (which is what makes the iterator's pointer arithmetic over
 * the data safe).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "luamx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                \
  do {                                                                                          \
    if (!(c)) {                                                                                 \
      fprintf(stderr, "fuzz_idx: check failed at line %d: %s (last error: %s)\n", __LINE__, #c, \
              lmx_last_error());                                                                \
      abort();                                                                                  \
    }                                                                                           \
  } while (0)

static void one(const uint8_t *data, size_t size, int ndim) {
  int64_t dims[LMX_MAX_NDIM], off = -1;
  int rc = lmx_idx_parse(data, size, ndim, "image file fuzz.idx", dims, &off);
  if (rc != LMX_OK) {
    CHECK(rc == LMX_ERR_FORMAT);
    CHECK(strncmp(lmx_last_error(), "image file fuzz.idx: ", 21) == 0);
    return;
  }
  CHECK(off == 4 + 4 * ndim && (size_t)off <= size);
  uint8_t header[4 + 4 * LMX_MAX_NDIM] = {0, 0, 0x08, (uint8_t)ndim};
  unsigned __int128 count = 1;
  for (int i = 0; i < ndim; i++) {
    CHECK(dims[i] >= 0 && dims[i] <= UINT32_MAX);
    for (int b = 0; b < 4; b++) header[4 + 4 * i + b] = (uint8_t)(dims[i] >> (24 - 8 * b));
    count *= (uint64_t)dims[i];
  }
  CHECK(memcmp(header, data, (size_t)off) == 0);
  CHECK(count == size - (size_t)off);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  one(data, size, 1);
  one(data, size, 3);
  /* the argument check: an impossible ndim is refused before any byte is read */
  int64_t dims[1], off;
  CHECK(lmx_idx_parse(data, size, 0, "x", dims, &off) == LMX_ERR_ARG);
  return 0;
}
