/* gemm_dnnl.c — float32 matrix products on oneDNN's matmul primitive, opened at run time.
 *
 * bench/gemm_libs.c measured oneDNN 2.6 (Debian's libdnnl2) ahead of OpenBLAS 0.3.21 at
 * most of the workloads' GEMMs (small m, tall-skinny weight gradients; bench/README.md
 * has the table), so lmx_cpu_gemm_ld routes those float32 products here.
 *
 * libdnnl.so.2 is optional: dlopen'ed (RTLD_LOCAL) on the first product that would use
 * it (LUAMX_DNNL_LIB names another file); when it is absent, or the build had no oneDNN header, every product stays on
 * OpenBLAS and lmx_gemm_dnnl_status says why. oneDNN's OpenMP build runs on libgomp, the
 * pool OpenBLAS and luamx's loops use.
 *
 * No buffer allocated per call: a primitive (and its memory objects, stream and scratchpad,
 * the scratchpad owned here: dnnl_scratchpad_mode_user) is created once per shape,
 * transposes, leading dimensions, alpha, beta and thread count, and kept in a small
 * per-thread cache (a primitive's memory objects take the buffers by handle at each
 * call, so they cannot be shared between threads). dnnl_sgemm, the BLAS-like call,
 * would be simpler but mallocs its packing buffers at every call (1 per call on one
 * thread, 3-5 on two; counted with an interposed malloc). dnnl_primitive_execute itself
 * still mallocs and frees about 7 small blocks per call (its C++ argument map and
 * execution context, counted the same way): the engine's own allocations stay 0.
 */
#define _GNU_SOURCE
#include "gemm_route.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef LMX_HAVE_DNNL_H
#include <oneapi/dnnl/dnnl.h>

#define DNNL_FNS(X)                                                                          \
  X(dnnl_engine_create) X(dnnl_stream_create) X(dnnl_stream_destroy) X(dnnl_stream_wait)   \
  X(dnnl_memory_desc_init_by_strides) X(dnnl_matmul_desc_init) X(dnnl_primitive_attr_create) \
  X(dnnl_primitive_attr_destroy) X(dnnl_primitive_attr_set_scratchpad_mode)                 \
  X(dnnl_primitive_attr_set_output_scales) X(dnnl_post_ops_create) X(dnnl_post_ops_destroy) \
  X(dnnl_post_ops_append_sum) X(dnnl_post_ops_append_eltwise)                               \
  X(dnnl_primitive_attr_set_post_ops)                                                       \
  X(dnnl_primitive_desc_create) X(dnnl_primitive_desc_destroy) X(dnnl_primitive_desc_query_md) \
  X(dnnl_memory_desc_get_size) X(dnnl_primitive_create) X(dnnl_primitive_destroy)           \
  X(dnnl_memory_create) X(dnnl_memory_destroy) X(dnnl_memory_set_data_handle)               \
  X(dnnl_primitive_execute) X(dnnl_version)

static struct {
#define DECL(f) __typeof__(f) *f;
  DNNL_FNS(DECL)
#undef DECL
  dnnl_engine_t engine;
} D;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_ok;
static char g_why[256] = "oneDNN not loaded yet";
static pthread_key_t g_key;

enum { CACHE = 64 }; /* W3 binds six buckets: a few dozen shapes per thread */
typedef struct {
  int used, failed, ta, tb, threads;
  int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  int bias, act; /* epilogue: a bias row added, then LMX_GEMM_ACT_* */
  dnnl_primitive_t prim;
  dnnl_memory_t mem[5]; /* src, weights, dst, scratchpad, bias */
  size_t scratch;
} entry;
typedef struct {
  dnnl_stream_t stream;
  void *scratch;
  size_t scratch_size;
  int next;
  entry e[CACHE];
} thread_cache;
static __thread thread_cache *t_cache;

static void entry_free(entry *e) {
  if (!e->used) return;
  for (int i = 0; i < 5; i++)
    if (e->mem[i]) D.dnnl_memory_destroy(e->mem[i]);
  if (e->prim) D.dnnl_primitive_destroy(e->prim);
  memset(e, 0, sizeof *e);
}

static void cache_free(void *p) {
  thread_cache *c = p;
  for (int i = 0; i < CACHE; i++) entry_free(&c->e[i]);
  if (c->stream) D.dnnl_stream_destroy(c->stream);
  free(c->scratch);
  free(c);
}

static void load(void) {
  const char *lib = getenv("LUAMX_DNNL_LIB"); /* another file, or one that is not there */
  if (!lib || !*lib) lib = "libdnnl.so.2";
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(g_why, sizeof g_why, "%s could not be loaded: %s", lib, e ? e : "?");
    return;
  }
#define LOAD(f)                                                          \
  if (!(*(void **)&D.f = dlsym(h, #f))) {                                \
    snprintf(g_why, sizeof g_why, "%s lacks the function %s", lib, #f); \
    return;                                                              \
  }
  DNNL_FNS(LOAD)
#undef LOAD
  const dnnl_version_t *v = D.dnnl_version();
  if (v->major != 2) {
    snprintf(g_why, sizeof g_why, "%s is oneDNN %d.%d, this build speaks the 2.x API", lib,
             v->major, v->minor);
    return;
  }
  if (D.dnnl_engine_create(&D.engine, dnnl_cpu, 0) != dnnl_success) {
    snprintf(g_why, sizeof g_why, "oneDNN %d.%d: no CPU engine", v->major, v->minor);
    return;
  }
  if (pthread_key_create(&g_key, cache_free)) {
    snprintf(g_why, sizeof g_why, "pthread_key_create failed");
    return;
  }
  snprintf(g_why, sizeof g_why, "oneDNN %d.%d.%d (%s)", v->major, v->minor, v->patch, lib);
  g_ok = 1;
}

int lmx_gemm_dnnl_available(void) {
  pthread_once(&g_once, load);
  return g_ok;
}

const char *lmx_gemm_dnnl_status(void) {
  pthread_once(&g_once, load);
  return g_why;
}

static thread_cache *cache(void) {
  if (t_cache) return t_cache;
  thread_cache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  if (D.dnnl_stream_create(&c->stream, D.engine, dnnl_stream_default_flags) != dnnl_success) {
    free(c);
    return NULL;
  }
  pthread_setspecific(g_key, c);
  return t_cache = c;
}

/* oneDNN's eltwise post-op for an LMX_GEMM_ACT_* (0 for none) */
static dnnl_alg_kind_t act_alg(int act) {
  switch (act) {
    case LMX_GEMM_ACT_RELU: return dnnl_eltwise_relu;
    case LMX_GEMM_ACT_TANH: return dnnl_eltwise_tanh;
    case LMX_GEMM_ACT_SIGMOID: return dnnl_eltwise_logistic;
    case LMX_GEMM_ACT_SOFTRELU: return dnnl_eltwise_soft_relu;
    default: return dnnl_alg_kind_undef;
  }
}

/* A primitive for the product, with memory objects and the scratchpad size. 0 on success.
 * The post-ops run in order on each output element while it is in registers: the sum
 * (beta C), then the activation; the bias is the matmul's own (added before both). */
static int entry_make(entry *e) {
  dnnl_memory_desc_t a, b, c, bi;
  dnnl_dims_t da = {e->m, e->k}, db = {e->k, e->n}, dc = {e->m, e->n}, dbi = {1, e->n};
  dnnl_dims_t sa = {e->ta ? 1 : e->lda, e->ta ? e->lda : 1};
  dnnl_dims_t sb = {e->tb ? 1 : e->ldb, e->tb ? e->ldb : 1}, sc = {e->ldc, 1}, sbi = {e->n, 1};
  dnnl_matmul_desc_t md;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t po = NULL;
  dnnl_primitive_desc_t pd = NULL;
  int bad = D.dnnl_memory_desc_init_by_strides(&a, 2, da, dnnl_f32, sa) ||
            D.dnnl_memory_desc_init_by_strides(&b, 2, db, dnnl_f32, sb) ||
            D.dnnl_memory_desc_init_by_strides(&c, 2, dc, dnnl_f32, sc) ||
            D.dnnl_memory_desc_init_by_strides(&bi, 2, dbi, dnnl_f32, sbi) ||
            D.dnnl_matmul_desc_init(&md, &a, &b, e->bias ? &bi : NULL, &c) ||
            D.dnnl_primitive_attr_create(&attr) ||
            D.dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (!bad && e->alpha != 1.0f)
    bad = D.dnnl_primitive_attr_set_output_scales(attr, 1, 0, &e->alpha) != dnnl_success;
  if (!bad && (e->beta != 0.0f || e->act)) {
    bad = D.dnnl_post_ops_create(&po) ||
          (e->beta != 0.0f && D.dnnl_post_ops_append_sum(po, e->beta)) ||
          (e->act && D.dnnl_post_ops_append_eltwise(po, 1.0f, act_alg(e->act), 0.0f, 0.0f)) ||
          D.dnnl_primitive_attr_set_post_ops(attr, po);
  }
  if (!bad) bad = D.dnnl_primitive_desc_create(&pd, &md, attr, D.engine, NULL) != dnnl_success;
  if (!bad) {
    const dnnl_memory_desc_t *s = D.dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    e->scratch = s ? D.dnnl_memory_desc_get_size(s) : 0;
    bad = D.dnnl_primitive_create(&e->prim, pd) ||
          D.dnnl_memory_create(&e->mem[0], &a, D.engine, DNNL_MEMORY_NONE) ||
          D.dnnl_memory_create(&e->mem[1], &b, D.engine, DNNL_MEMORY_NONE) ||
          D.dnnl_memory_create(&e->mem[2], &c, D.engine, DNNL_MEMORY_NONE) ||
          (e->scratch && D.dnnl_memory_create(&e->mem[3], s, D.engine, DNNL_MEMORY_NONE)) ||
          (e->bias && D.dnnl_memory_create(&e->mem[4], &bi, D.engine, DNNL_MEMORY_NONE));
  }
  if (pd) D.dnnl_primitive_desc_destroy(pd);
  if (po) D.dnnl_post_ops_destroy(po);
  if (attr) D.dnnl_primitive_attr_destroy(attr);
  return bad;
}

int lmx_gemm_dnnl_ep(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                     float *C, int64_t ldc, int threads, const float *bias, int act) {
  if (!lmx_gemm_dnnl_available()) return -1;
  if (act && act_alg(act) == dnnl_alg_kind_undef) return -1;
  thread_cache *c = cache();
  if (!c) return -1;
  entry *e = NULL, key = {1, 0, ta, tb, threads, m, n, k, lda, ldb, ldc, alpha, beta,
                          bias != NULL, act, NULL, {0}, 0};
  for (int i = 0; i < CACHE && !e; i++) {
    entry *x = &c->e[i];
    if (x->used && x->m == m && x->n == n && x->k == k && x->ta == ta && x->tb == tb &&
        x->lda == lda && x->ldb == ldb && x->ldc == ldc && x->alpha == alpha &&
        x->beta == beta && x->threads == threads && x->bias == key.bias && x->act == act)
      e = x;
  }
  if (!e) {
    e = &c->e[c->next];
    c->next = (c->next + 1) % CACHE;
    entry_free(e);
    *e = key;
    if (entry_make(e)) { /* keep the key: this product goes to OpenBLAS without retrying */
      entry_free(e);
      *e = key;
      e->failed = 1;
    }
  }
  if (e->failed) return -1;
  if (e->scratch > c->scratch_size) {
    size_t sz = (e->scratch + 4095) & ~(size_t)4095;
    void *p = aligned_alloc(64, sz);
    if (!p) return -1;
    free(c->scratch);
    c->scratch = p, c->scratch_size = sz;
  }
  D.dnnl_memory_set_data_handle(e->mem[0], (void *)A);
  D.dnnl_memory_set_data_handle(e->mem[1], (void *)B);
  D.dnnl_memory_set_data_handle(e->mem[2], C);
  dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, e->mem[0]},
                             {DNNL_ARG_WEIGHTS, e->mem[1]},
                             {DNNL_ARG_DST, e->mem[2]}};
  int nargs = 3;
  if (e->mem[3]) {
    D.dnnl_memory_set_data_handle(e->mem[3], c->scratch);
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, e->mem[3]};
  }
  if (e->mem[4]) {
    D.dnnl_memory_set_data_handle(e->mem[4], (void *)bias);
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, e->mem[4]};
  }
  if (D.dnnl_primitive_execute(e->prim, c->stream, nargs, args) != dnnl_success) return -1;
  return D.dnnl_stream_wait(c->stream) == dnnl_success ? 0 : -1;
}

#else /* built without oneDNN's header */

int lmx_gemm_dnnl_available(void) { return 0; }
const char *lmx_gemm_dnnl_status(void) {
  return "luamx was built without oneDNN's header (apt-get install libdnnl-dev, rebuild)";
}
int lmx_gemm_dnnl_ep(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                     float *C, int64_t ldc, int threads, const float *bias, int act) {
  (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)A, (void)lda, (void)B;
  (void)ldb, (void)beta, (void)C, (void)ldc, (void)threads, (void)bias, (void)act;
  return -1;
}
#endif
