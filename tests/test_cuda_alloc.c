/* test_cuda_alloc.c — the device caching allocator (src/device/caching_alloc.c) over a
 * fake backend: host memory with a byte capacity, counting raw calls. Runs in every
 * build (the cache knows nothing of CUDA): reuse without raw allocations, size classes,
 * out of memory (cache emptied, retried, then the message), recovery, no growth of raw
 * allocations over many small alloc/free cycles, host fault injection in the cache's own
 * tables. Also the optional-library loader's error path (src/device/cuda_libs.c), which
 * needs no GPU. Prints "N passed, N failed" and exits non-zero on failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "device/caching_alloc.h"
#include "device/cuda_libs.h"
#include "luamx.h"

#include "check.h"

/* The fake device: capacity bytes, raw calls counted; blocks are host memory. */
typedef struct fake {
  size_t capacity, used;
  int raw_allocs, raw_frees, fail_other;
} fake;

static int fake_alloc(void *ctx, size_t bytes, void **out) {
  fake *f = ctx;
  if (f->fail_other) return lmx_fail(LMX_ERR_DEVICE, "fake: device lost");
  if (bytes > f->capacity - f->used) return LMX_ERR_NOMEM;
  void *p = malloc(bytes);
  if (!p) return LMX_ERR_NOMEM;
  memset(p, 0x5A, bytes < 64 ? bytes : 64);
  f->used += bytes;
  f->raw_allocs++;
  *out = p;
  return LMX_OK;
}

/* The fake needs each block's size on free; keep a tiny side table. */
enum { MAXB = 4096 };
static void *g_ptr[MAXB];
static size_t g_size[MAXB];

static int tracked_alloc(void *ctx, size_t bytes, void **out) {
  int rc = fake_alloc(ctx, bytes, out);
  if (rc != LMX_OK) return rc;
  for (int i = 0; i < MAXB; i++)
    if (!g_ptr[i]) {
      g_ptr[i] = *out, g_size[i] = bytes;
      return LMX_OK;
    }
  return lmx_fail(LMX_ERR_INTERNAL, "fake: side table full");
}

static void tracked_free(void *ctx, void *p) {
  fake *f = ctx;
  for (int i = 0; i < MAXB; i++)
    if (g_ptr[i] == p) {
      f->used -= g_size[i];
      g_ptr[i] = NULL;
      break;
    }
  f->raw_frees++;
  free(p);
}

static int fake_info(void *ctx, size_t *fr, size_t *tot) {
  fake *f = ctx;
  *fr = f->capacity - f->used;
  *tot = f->capacity;
  return LMX_OK;
}

static lmx_cache *make(fake *f, size_t capacity) {
  memset(f, 0, sizeof *f);
  f->capacity = capacity;
  lmx_cache_backend be = {f, tracked_alloc, tracked_free, fake_info};
  lmx_cache *c = NULL;
  CHECK(lmx_cache_new(&be, "gpu(7)", &c) == LMX_OK);
  return c;
}

static void test_rounding(void) {
  CHECK(lmx_cache_round(0) == 512);
  CHECK(lmx_cache_round(1) == 512);
  CHECK(lmx_cache_round(512) == 512);
  CHECK(lmx_cache_round(513) == 1024);
  CHECK(lmx_cache_round(1 << 20) == 1 << 20);
  CHECK(lmx_cache_round((1 << 20) + 1) == 2 << 20);
  CHECK(lmx_cache_round((5 << 20) + 3) == 6 << 20);
  CHECK(lmx_cache_round(SIZE_MAX - 3) == SIZE_MAX);
}

static void test_reuse(void) {
  fake f;
  lmx_cache *c = make(&f, 64 << 20);
  lmx_cache_stats s;
  void *a = NULL, *b = NULL;
  CHECK(lmx_cache_alloc(c, 1000, &a) == LMX_OK && a);
  CHECK(f.raw_allocs == 1 && f.used == 1024);
  lmx_cache_release(c, a);
  lmx_cache_get_stats(c, &s);
  CHECK(s.in_use == 0 && s.cached == 1024 && s.cached_blocks == 1 && s.peak == 1024);
  /* Same size class again: the same block, no raw allocation. */
  CHECK(lmx_cache_alloc(c, 1010, &b) == LMX_OK && b == a);
  CHECK(f.raw_allocs == 1);
  lmx_cache_get_stats(c, &s);
  CHECK(s.cache_hits == 1 && s.raw_allocs == 1 && s.requests == 2 && s.in_use == 1024);
  CHECK(s.cached == 0 && s.live_blocks == 1);
  /* Another small class does not take it (exact class for small blocks). */
  lmx_cache_release(c, b);
  void *d = NULL;
  CHECK(lmx_cache_alloc(c, 2000, &d) == LMX_OK && d != a && f.raw_allocs == 2);
  lmx_cache_release(c, d);
  /* Large: a 3 MiB request gets a 4 MiB block; 2.5 MiB (also the 4 MiB class) reuses
   * it; 1.5 MiB (the 2 MiB class) takes the cached 4 MiB block too (within 2 MiB of
   * slack) rather than a raw allocation. */
  void *L = NULL, *L2 = NULL;
  CHECK(lmx_cache_alloc(c, 3 << 20, &L) == LMX_OK && f.raw_allocs == 3);
  lmx_cache_release(c, L);
  CHECK(lmx_cache_alloc(c, (5 << 19), &L2) == LMX_OK && L2 == L && f.raw_allocs == 3);
  lmx_cache_release(c, L2);
  CHECK(lmx_cache_alloc(c, (3 << 19), &L2) == LMX_OK && L2 == L && f.raw_allocs == 3);
  lmx_cache_get_stats(c, &s);
  CHECK(s.in_use == 4 << 20);
  lmx_cache_release(c, L2);
  /* 10 MiB blocks do not serve 2 MiB requests (slack is max(2 MiB, size/8)). */
  void *big = NULL, *small = NULL;
  CHECK(lmx_cache_alloc(c, 10 << 20, &big) == LMX_OK);
  lmx_cache_release(c, big);
  int before = f.raw_allocs;
  CHECK(lmx_cache_alloc(c, (2 << 20) - 5 + (1 << 20), &small) == LMX_OK); /* 4 MiB class */
  CHECK(small == L && f.raw_allocs == before); /* the cached 4 MiB block, not the 10 MiB */
  lmx_cache_release(c, small);
  /* Freeing an unknown pointer or NULL changes nothing. */
  int x;
  lmx_cache_get_stats(c, &s);
  lmx_cache_release(c, &x);
  lmx_cache_release(c, NULL);
  lmx_cache_stats s2;
  lmx_cache_get_stats(c, &s2);
  CHECK(s2.cached == s.cached && s2.in_use == s.in_use && f.raw_frees == 0);
  size_t freed = lmx_cache_empty(c);
  CHECK(freed == (size_t)(1024 + 2048 + (4 << 20) + (10 << 20)) && f.used == 0);
  lmx_cache_get_stats(c, &s);
  CHECK(s.cached == 0 && s.cached_blocks == 0 && s.raw_frees == 4 && f.raw_frees == 4);
  lmx_cache_free(c);
}

static void test_oom(void) {
  fake f;
  lmx_cache *c = make(&f, 16 << 20); /* 16 MiB device */
  void *a = NULL, *b = NULL, *d = NULL;
  CHECK(lmx_cache_alloc(c, 6 << 20, &a) == LMX_OK);
  CHECK(lmx_cache_alloc(c, 6 << 20, &b) == LMX_OK);
  lmx_cache_release(c, b); /* 6 MiB cached, 6 in use, 4 free on the device */
  /* 8 MiB does not fit in the 4 free: the cache is emptied and the call retried. */
  CHECK(lmx_cache_alloc(c, 8 << 20, &d) == LMX_OK && d);
  lmx_cache_stats s;
  lmx_cache_get_stats(c, &s);
  CHECK(s.oom_retries == 1 && s.cached == 0 && s.in_use == 14 << 20 && s.ooms == 0);
  CHECK(f.raw_frees == 1);
  /* Now nothing fits: the error names the bytes, the device and what is held. */
  void *e = NULL;
  int rc = lmx_cache_alloc(c, 5 << 20, &e);
  CHECK(rc == LMX_ERR_NOMEM && e == NULL);
  const char *m = lmx_errmsg();
  CHECK(strstr(m, "gpu(7): out of memory allocating 5.00 MiB (5242880 bytes") != NULL);
  CHECK(strstr(m, "14.00 MiB in use in 2 blocks") != NULL);
  CHECK(strstr(m, "0 B cached") != NULL);
  CHECK(strstr(m, "device free 2.00 MiB of 16.00 MiB") != NULL);
  CHECK(strstr(m, "retried") == NULL); /* nothing was cached, so no retry */
  lmx_cache_get_stats(c, &s);
  CHECK(s.ooms == 1 && s.oom_retries == 1);
  /* With something cached the message says the cache was emptied first. */
  lmx_cache_release(c, d); /* 8 MiB cached */
  rc = lmx_cache_alloc(c, 12 << 20, &e);
  CHECK(rc == LMX_ERR_NOMEM);
  CHECK(strstr(lmx_errmsg(), "the cache was emptied and the allocation retried") != NULL);
  CHECK(strstr(lmx_errmsg(), "6.00 MiB in use in 1 blocks and 0 B cached") != NULL);
  /* Recovery: free, allocate again. */
  lmx_cache_release(c, a);
  CHECK(lmx_cache_alloc(c, 12 << 20, &e) == LMX_OK && e);
  lmx_cache_release(c, e);
  /* A backend error other than out of memory is passed through, no retry. */
  f.fail_other = 1;
  rc = lmx_cache_alloc(c, 1 << 30, &e);
  CHECK(rc == LMX_ERR_DEVICE && strstr(lmx_errmsg(), "fake: device lost") != NULL);
  f.fail_other = 0;
  /* An absurd request fails cleanly. */
  rc = lmx_cache_alloc(c, SIZE_MAX - 1, &e);
  CHECK(rc == LMX_ERR_NOMEM && strstr(lmx_errmsg(), "out of memory allocating") != NULL);
  lmx_cache_free(c);
  CHECK(f.used == 0);
}

/* Many small allocations and frees in a steady pattern: raw allocations stop growing
 * after the first round (no leak through the cache). */
static void test_no_growth(void) {
  fake f;
  lmx_cache *c = make(&f, 256 << 20);
  enum { N = 300 };
  void *p[N];
  int after_first = 0;
  for (int round = 0; round < 20; round++) {
    for (int i = 0; i < N; i++) CHECK(lmx_cache_alloc(c, (size_t)(i % 37) * 100 + 1, &p[i]) == 0);
    for (int i = N - 1; i >= 0; i -= 2) lmx_cache_release(c, p[i]); /* odd ones first */
    for (int i = N - 2; i >= 0; i -= 2) lmx_cache_release(c, p[i]);
    if (round == 0) after_first = f.raw_allocs;
  }
  lmx_cache_stats s;
  lmx_cache_get_stats(c, &s);
  CHECK(f.raw_allocs == after_first && s.raw_allocs == after_first);
  CHECK(s.in_use == 0 && s.live_blocks == 0 && s.cache_hits == 19 * N);
  CHECK(s.cached == (int64_t)f.used);
  lmx_cache_free(c);
  CHECK(f.used == 0 && f.raw_frees == after_first);
}

/* The cache's own host tables fail to grow: the allocation fails with a message and
 * loses nothing; a release that cannot be recorded goes straight to the backend. */
static void test_host_faults(void) {
  fake f;
  lmx_cache *c = make(&f, 64 << 20);
  void *p = NULL;
  lmx_debug_alloc_fail_at(1); /* the first live-table growth */
  CHECK(lmx_cache_alloc(c, 100, &p) == LMX_ERR_NOMEM);
  CHECK(strstr(lmx_errmsg(), "device block table") != NULL && f.raw_allocs == 0);
  CHECK(lmx_cache_alloc(c, 100, &p) == LMX_OK);
  lmx_debug_alloc_fail_at(1); /* the first cached-list growth */
  lmx_cache_release(c, p);
  lmx_cache_stats s;
  lmx_cache_get_stats(c, &s);
  CHECK(s.in_use == 0 && s.cached == 0 && f.raw_frees == 1 && f.used == 0);
  lmx_debug_alloc_fail_at(0);
  lmx_cache_free(c);
}

static void test_bytes_str(void) {
  char b[32];
  CHECK(strcmp(lmx_cache_bytes_str(0, b, sizeof b), "0 B") == 0);
  CHECK(strcmp(lmx_cache_bytes_str(1536, b, sizeof b), "1.50 KiB") == 0);
  CHECK(strcmp(lmx_cache_bytes_str(3LL << 30, b, sizeof b), "3.00 GiB") == 0);
}

/* The loader's missing-library message (no GPU needed). */
static void test_libs(void) {
  void *h = NULL;
  int rc = lmx_cuda_lib_open_soname("libluamx-no-such-lib.so.9", "FakeLib", "libfake9-cuda-13",
                                    &h);
  CHECK(rc == LMX_ERR_NOTFOUND && h == NULL);
  const char *m = lmx_errmsg();
  CHECK(strstr(m, "FakeLib (libluamx-no-such-lib.so.9) is not installed") != NULL);
  CHECK(strstr(m, "libfake9-cuda-13") != NULL);
  CHECK(strcmp(lmx_cuda_lib_name(LMX_LIB_CUBLAS), "cuBLAS") == 0);
  CHECK(strcmp(lmx_cuda_lib_soname(LMX_LIB_CUDNN), "libcudnn.so.9") == 0);
  CHECK(strcmp(lmx_cuda_lib_soname(LMX_LIB_NCCL), "libnccl.so.2") == 0);
  CHECK(lmx_cuda_lib_open(99, &h) == LMX_ERR_ARG);
  /* A real library when present (the CUDA toolkit on the development machines): its
   * symbols resolve; a missing symbol is an error naming it and the library. */
  rc = lmx_cuda_lib_open(LMX_LIB_CUBLAS, &h);
  if (rc == LMX_OK) {
    void *fn = NULL;
    CHECK(lmx_cuda_lib_sym(LMX_LIB_CUBLAS, "cublasCreate_v2", &fn) == LMX_OK && fn);
    rc = lmx_cuda_lib_sym(LMX_LIB_CUBLAS, "cublasNoSuchFunction", &fn);
    CHECK(rc == LMX_ERR_NOTFOUND &&
          strstr(lmx_errmsg(), "cublasNoSuchFunction") && strstr(lmx_errmsg(), "cuBLAS"));
  } else {
    CHECK(rc == LMX_ERR_NOTFOUND && strstr(lmx_errmsg(), "libcublas.so.13") != NULL);
    printf("cuBLAS not installed here: symbol lookup not checked\n");
  }
}

int main(void) {
  test_rounding();
  test_reuse();
  test_oom();
  test_no_growth();
  test_host_faults();
  test_bytes_str();
  test_libs();
  return check_summary();
}
