/* test_recordio.c — the RecordIO format layer (src/io/recordio.c) and the augmentation
 * functions (src/io/image_aug.c): records with the magic at aligned and unaligned
 * offsets round-trip and are split as dmlc-core splits them; every allocation failure
 * while reading is a clean LMX_ERR_NOMEM with nothing leaked; the resize size rule,
 * resize at the same size, and crop + mirror + normalize on hand-made pixels.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/status.h"
#include "io/image_aug.h"
#include "io/recordio.h"
#include "luamx.h"

static const unsigned char MAGIC[4] = {0x0a, 0x23, 0xd7, 0xce};

static void test_roundtrip(void) {
  FILE *tf = tmpfile(); /* the layer takes a descriptor; the path only names it */
  const char *path = "test.rec";
  CHECK(tf != NULL);
  if (!tf) return;
  int fd = fileno(tf);
  unsigned char recs[4][40];
  size_t lens[4] = {0, 13, 40, 24};
  for (int r = 0; r < 4; r++)
    for (size_t i = 0; i < lens[r]; i++) recs[r][i] = (unsigned char)(r * 31 + i * 7);
  memcpy(recs[2] + 8, MAGIC, 4);  /* aligned: split */
  memcpy(recs[2] + 36, MAGIC, 4); /* aligned, at the very end: split, empty last part */
  memcpy(recs[3] + 2, MAGIC, 4);  /* unaligned: kept */
  uint64_t pos = 0, offs[5];
  for (int r = 0; r < 4; r++) {
    offs[r] = pos;
    CHECK(lmx_rio_write(fd, path, &pos, recs[r], lens[r]) == LMX_OK);
  }
  offs[4] = pos;
  /* record 2: parts of 8, 24 and 0 bytes, each with an 8-byte header */
  CHECK(offs[3] - offs[2] == 8 + 8 + 8 + 24 + 8, "got %llu", (unsigned long long)(offs[3] - offs[2]));
  lmx_rio_buf b = {0};
  uint64_t next;
  int got;
  for (int r = 0; r < 4; r++) {
    CHECK(lmx_rio_read_at(fd, path, pos, offs[r], &b, &next, &got) == LMX_OK, "%s", lmx_errmsg());
    CHECK(got == 1 && b.len == lens[r] && memcmp(b.p, recs[r], lens[r]) == 0, "record %d", r);
    CHECK(next == offs[r + 1]);
  }
  CHECK(lmx_rio_read_at(fd, path, pos, pos, &b, &next, &got) == LMX_OK && got == 0);
  CHECK(lmx_rio_read_at(fd, path, pos, 2, &b, &next, &got) == LMX_ERR_FORMAT);
  CHECK(strstr(lmx_errmsg(), "offset 2 is not a record start") != NULL, "%s", lmx_errmsg());
  lmx_rio_buf_free(&b);

  /* every allocation of a read fails in turn: a clean NOMEM, then success, no leak */
  int64_t live0, live1;
  lmx_debug_alloc_stats(&live0, NULL, NULL);
  int failures = 0;
  for (int n = 1; n < 20; n++) {
    lmx_rio_buf t = {0};
    lmx_debug_alloc_fail_at(n);
    int rc = lmx_rio_read_at(fd, path, pos, offs[2], &t, &next, &got);
    lmx_debug_alloc_fail_at(0);
    if (rc != LMX_OK) {
      failures++;
      CHECK(rc == LMX_ERR_NOMEM && strstr(lmx_errmsg(), path) != NULL, "%s", lmx_errmsg());
    } else {
      CHECK(t.len == lens[2] && memcmp(t.p, recs[2], lens[2]) == 0);
    }
    lmx_rio_buf_free(&t);
  }
  CHECK(failures >= 1);
  lmx_debug_alloc_stats(&live1, NULL, NULL);
  CHECK(live0 == live1, "live blocks %lld -> %lld", (long long)live0, (long long)live1);
  fclose(tf);
}

static void test_aug(void) {
  int nh, nw;
  lmx_aug_resize_dims(6, 8, 3, &nh, &nw);
  CHECK(nh == 3 && nw == 4);
  lmx_aug_resize_dims(8, 6, 3, &nh, &nw);
  CHECK(nh == 4 && nw == 3);
  lmx_aug_resize_dims(7, 10, 4, &nh, &nw); /* 4 * 10 / 7 = 5.71 -> 5 */
  CHECK(nh == 4 && nw == 5);
  unsigned char src[2 * 3 * 3], dst[2 * 3 * 3];
  for (int i = 0; i < 18; i++) src[i] = (unsigned char)(i * 13);
  lmx_aug_resize(src, 2, 3, 3, dst, 2, 3);
  CHECK(memcmp(src, dst, sizeof src) == 0, "same size is a copy");
  /* 2x2 BGR -> 1x2 window at (1, 0), mirrored, planar RGB, (v - mean) * scale / std */
  const unsigned char px[2 * 2 * 3] = {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60};
  const float mean[3] = {1, 2, 3}, stdv[3] = {1, 2, 4};
  float out[6];
  lmx_aug_crop_normalize(px, 2, 3, 1, 0, 1, 2, 1, mean, stdv, 2.0f, out);
  /* row 1: pixels (B,G,R) = (10,20,30), (40,50,60); mirrored: x0 <- pixel 1 */
  const float want[6] = {(60 - 1) * 2.0f, (30 - 1) * 2.0f, (50 - 2) * 1.0f,
                         (20 - 2) * 1.0f, (40 - 3) * 0.5f, (10 - 3) * 0.5f};
  for (int i = 0; i < 6; i++) CHECK(out[i] == want[i], "out[%d] = %g, want %g", i, (double)out[i], (double)want[i]);
}

int main(void) {
  test_roundtrip();
  test_aug();
  return check_summary();
}
