/* test_core.c — unit tests of engine internals the Lua specs cannot reach directly:
 * the allocator's accounting and fault injection, float16 conversion (exhaustively),
 * shape helpers and the containers. Prints "N passed, N failed" and exits non-zero on
 * failure. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "core/vec.h"
#include "luamx.h"
#include "tensor/dtype.h"
#include "tensor/shape.h"

#include "check.h"

static void test_alloc(void) {
  int64_t blocks0, bytes0, blocks1, bytes1;
  lmx_debug_alloc_stats(&blocks0, &bytes0, NULL);
  void *p = lmx_alloc(100);
  CHECK(p != NULL && ((uintptr_t)p % 64) == 0);
  lmx_debug_alloc_stats(&blocks1, &bytes1, NULL);
  CHECK(blocks1 == blocks0 + 1 && bytes1 == bytes0 + 100);
  p = lmx_realloc(p, 1000);
  lmx_debug_alloc_stats(&blocks1, &bytes1, NULL);
  CHECK(blocks1 == blocks0 + 1 && bytes1 == bytes0 + 1000);
  lmx_free(p);
  lmx_free(NULL);
  lmx_debug_alloc_stats(&blocks1, &bytes1, NULL);
  CHECK(blocks1 == blocks0 && bytes1 == bytes0);

  lmx_debug_alloc_fail_at(2);
  void *a = lmx_alloc(8), *b = lmx_alloc(8), *c = lmx_alloc(8);
  CHECK(a != NULL && b == NULL && c != NULL);
  lmx_free(a);
  lmx_free(c);
  CHECK(lmx_debug_alloc_fail_at(-1) == LMX_ERR_ARG);
  CHECK(lmx_calloc(SIZE_MAX / 2, 4) == NULL);

  lmx_debug_alloc_set_poison(1);
  unsigned char *q = lmx_alloc(16);
  CHECK(q[0] == 0xA5 && q[15] == 0xA5);
  lmx_free(q);
  lmx_debug_alloc_set_poison(0);
}

/* The block cache: a freed block comes back for a request of its capacity (and only
 * of it), is not live meanwhile, is not a new allocation, and steps aside for fault
 * injection; switching it off gives the kept blocks back. */
static void test_alloc_cache(void) {
  int64_t hits0, hits1, kept, kept_bytes, blocks0, blocks1, total0, total1;
  int on0 = -1;
  CHECK(lmx_debug_alloc_cache(1, &on0, NULL, NULL, NULL) == LMX_OK); /* on under ASan too */
  CHECK(on0 == 0 || on0 == 1);
  CHECK(lmx_debug_alloc_cache(2, NULL, NULL, NULL, NULL) == LMX_ERR_ARG);
  CHECK(strstr(lmx_errmsg(), "lmx_debug_alloc_cache: on must be -1, 0 or 1, got 2") != NULL);

  unsigned char *p = lmx_alloc(1000);
  memset(p, 7, 1000);
  lmx_debug_alloc_stats(&blocks0, NULL, &total0);
  lmx_free(p);
  lmx_debug_alloc_cache(-1, NULL, NULL, &kept, &kept_bytes);
  CHECK(kept >= 1 && kept_bytes >= 1024 + 64);
  lmx_debug_alloc_stats(&blocks1, NULL, NULL);
  CHECK(blocks1 == blocks0 - 1); /* kept, but not live */

  unsigned char *other = lmx_alloc(2000); /* another capacity: not the kept block */
  CHECK(other != p);
  lmx_debug_alloc_cache(-1, NULL, &hits0, NULL, NULL);
  unsigned char *q = lmx_alloc(990); /* 990 and 1000 both round up to 1024 */
  lmx_debug_alloc_cache(-1, NULL, &hits1, NULL, NULL);
  lmx_debug_alloc_stats(&blocks1, NULL, &total1);
  CHECK(q == p && hits1 == hits0 + 1);
  CHECK(total1 == total0 + 1); /* only `other` came from malloc */
  CHECK(blocks1 == blocks0 + 1);
  lmx_free(q);
  unsigned char *c = lmx_calloc(1, 1000); /* a reused block is zeroed by calloc */
  int zero = 1;
  for (int i = 0; i < 1000; i++) zero &= c[i] == 0;
  CHECK(c == p && zero);
  lmx_free(c);

  lmx_debug_alloc_fail_at(1); /* an armed fault reaches malloc: nothing is handed out */
  CHECK(lmx_alloc(1000) == NULL);
  lmx_debug_alloc_fail_at(0);

  lmx_debug_alloc_set_poison(1); /* both fills apply to kept blocks */
  unsigned char *r = lmx_alloc(1000);
  CHECK(r == p && r[0] == 0xA5 && r[999] == 0xA5);
  lmx_free(r);
  CHECK(p[0] == 0xDD && p[999] == 0xDD); /* kept: still mapped, so readable here */
  lmx_debug_alloc_set_poison(0);

  lmx_free(other);
  lmx_debug_alloc_stats(&blocks1, NULL, NULL);
  CHECK(blocks1 == blocks0 - 1);
  CHECK(lmx_debug_alloc_cache(0, NULL, NULL, &kept, &kept_bytes) == LMX_OK);
  CHECK(kept == 0 && kept_bytes == 0);
  lmx_debug_alloc_stats(NULL, NULL, &total0);
  void *s = lmx_alloc(1000); /* off: straight from malloc */
  lmx_debug_alloc_stats(NULL, NULL, &total1);
  CHECK(total1 == total0 + 1);
  lmx_free(s);
  lmx_debug_alloc_cache(-1, NULL, NULL, &kept, NULL);
  CHECK(kept == 0);
  lmx_debug_alloc_cache(on0, NULL, NULL, NULL, NULL);
}

static void test_half(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = lmx_f16_to_f32((uint16_t)h);
    if (isnan(f)) continue;
    if (lmx_f32_to_f16(f) != h) bad++;
  }
  CHECK(bad == 0);
  CHECK(lmx_f32_to_f16(1.0f) == 0x3c00);
  CHECK(lmx_f32_to_f16(65504.0f) == 0x7bff);
  CHECK(lmx_f32_to_f16(65520.0f) == 0x7c00);  /* rounds to infinity */
  CHECK(lmx_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00); /* tie to even */
  CHECK(isnan(lmx_f16_to_f32(lmx_f32_to_f16(NAN))));
}

static void test_shape(void) {
  lmx_shape a, b, o;
  int64_t da[] = {3, 1}, db[] = {4};
  CHECK(lmx_shape_make(&a, da, 2, "t") == LMX_OK);
  CHECK(lmx_shape_make(&b, db, 1, "t") == LMX_OK);
  CHECK(lmx_shape_broadcast(&a, &b, &o, "t") == LMX_OK && o.ndim == 2 && o.dim[1] == 4);
  char buf[LMX_SHAPE_STRCAP];
  CHECK(strcmp(lmx_shape_str(&o, buf), "(3,4)") == 0);
  CHECK(strcmp(lmx_shape_str(&b, buf), "(4,)") == 0);
  int64_t neg[] = {2, -3};
  CHECK(lmx_shape_make(&a, neg, 2, "t") == LMX_ERR_ARG);
  CHECK(strstr(lmx_errmsg(), "dim 2 must be >= 0, got -3") != NULL);
  int64_t big[] = {INT64_MAX / 2, 4};
  CHECK(lmx_shape_make(&a, big, 2, "t") == LMX_ERR_SHAPE);
}

static void test_containers(void) {
  lmx_vec v = LMX_VEC_INIT(int);
  for (int i = 0; i < 100; i++) CHECK(lmx_vec_push(&v, &i) == LMX_OK);
  CHECK(v.len == 100 && LMX_VEC_AT(&v, int, 99) == 99);
  lmx_vec_release(&v);
  lmx_sbuf sb = LMX_SBUF_INIT;
  for (int i = 0; i < 100; i++) lmx_sbuf_addf(&sb, "%d,", i);
  CHECK(strncmp(lmx_sbuf_str(&sb), "0,1,2,", 6) == 0 && sb.len == 290);
  lmx_sbuf_release(&sb);
  lmx_fail(LMX_ERR_SHAPE, "inner");
  lmx_fail_prefix(LMX_ERR_SHAPE, "outer: ");
  CHECK(strcmp(lmx_errmsg(), "outer: inner") == 0);
}

int main(void) {
  test_alloc();
  test_alloc_cache();
  test_half();
  test_shape();
  test_containers();
  return check_summary();
}
