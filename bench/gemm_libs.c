/* bench/gemm_libs.c — sgemm GFLOP/s of OpenBLAS, oneDNN, BLIS and libxsmm at every GEMM
 * of the workloads (issue 13: can a library beat OpenBLAS at these shapes?). A
 * benchmark, not a test: nothing asserts, but every library's result is compared with
 * OpenBLAS's once per shape and the largest relative difference printed.
 *
 *   cc -O2 -fopenmp -DHAVE_XSMM -o gemm_libs bench/gemm_libs.c \
 *      /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0 -lxsmm -ldl -lm
 *   OPENBLAS_CORETYPE=Cooperlake OMP_NUM_THREADS=1 ./gemm_libs [rounds] [ms per timing] [set]
 *
 * Give OpenBLAS the core type luamx picks (mx.runtime.features().blas.corename).
 * LUAMX_BENCH_CLOCK=cpu times in process CPU time (for one thread on a shared machine;
 * with more threads it would count every thread's time), else wall time.
 *
 * Row-major products C(m x n) = op(A) op(B) with luamx's transposes (FullyConnected:
 * forward (0,1), input gradient (0,0), weight gradient (1,0)). The libraries:
 *   openblas  cblas_sgemm (the library luamx links; its OpenMP build)
 *   dnnl      oneDNN's dnnl_sgemm (row-major BLAS-like call)
 *   dnnl_mm   oneDNN's matmul primitive, created once per shape (strides give the
 *             transposes), executed with the buffers set by handle
 *   blis      BLIS's typed API bli_sgemm (strides; BLIS takes its small/skinny "sup"
 *             path by itself below its thresholds), threads = OMP_NUM_THREADS
 *   xsmm      libxsmm_sgemm (dispatches JIT kernels for small products, else BLAS)
 *   xsmm_jit  one libxsmm JIT kernel per thread (rows of C split over the OpenMP
 *             threads), when libxsmm generates one for the shape ("-" otherwise)
 * oneDNN and BLIS are opened with dlopen (BLIS exports BLAS symbols of its own, as
 * OpenBLAS does). Rounds interleave the libraries; each figure is the median over the
 * rounds, with the lowest and highest in brackets. Prints one line per shape, and
 *   RESULT GEMMLIB <set>_<lib>_gflops <rate over the set's products>
 */
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef HAVE_XSMM
#include <libxsmm.h>
#endif

void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc);

typedef struct {
  const char *set;
  int m, n, k, ta, tb;
} shape;

/* W1 (MLP 784-512-512-10, batch 128): forward, input and weight gradients; W5 b128 runs
 * the forward ones. W3 (LSTM LM, 32 x 35 tokens, 200 units, 10000 words): the decoder,
 * the gate products over all steps (input) and per step (recurrent), the fused RNN op's
 * weight gradients (kernels/cpu/rnn.c). W2 (LeNet b64): the im2col GEMMs of
 * bench/sgemm.lua. Z1 (ResNet-18, CIFAR form, inference at batch 1): the im2col GEMMs
 * W · col of its convolutions on 16x16 planes and smaller (3x3, the strided 3x3 and the 1x1
 * projections), which the Winograd path leaves to GEMM at batch 1. The optional third
 * argument runs one set. */
static const shape g_shapes[] = {
    {"W1", 128, 512, 784, 0, 1}, {"W1", 128, 512, 512, 0, 1}, {"W1", 128, 10, 512, 0, 1},
    {"W1", 128, 512, 512, 0, 0}, {"W1", 128, 512, 10, 0, 0},  {"W1", 512, 784, 128, 1, 0},
    {"W1", 512, 512, 128, 1, 0}, {"W1", 10, 512, 128, 1, 0},  {"W3", 1120, 10000, 200, 0, 1},
    {"W3", 1120, 200, 10000, 0, 0}, {"W3", 10000, 200, 1120, 1, 0}, {"W3", 1120, 800, 200, 0, 1},
    {"W3", 32, 800, 200, 0, 1},  {"W3", 32, 200, 800, 0, 0},  {"W3", 1120, 200, 800, 0, 0},
    {"W3", 800, 200, 1088, 1, 0}, {"W3", 800, 200, 32, 1, 0}, {"W3", 800, 200, 1120, 1, 0},
    {"W2", 20, 36864, 25, 0, 0}, {"W2", 50, 4096, 500, 0, 0}, {"W2", 64, 500, 800, 0, 1},
    {"W2", 64, 10, 500, 0, 1},   {"W2", 20, 25, 36864, 0, 1}, {"W2", 50, 500, 4096, 0, 1},
    {"W2", 500, 800, 64, 1, 0},  {"W2", 10, 500, 64, 1, 0},   {"W2", 500, 4096, 50, 1, 0},
    {"W2", 64, 800, 500, 0, 0},  {"W2", 64, 500, 10, 0, 0},
    {"Z1", 128, 256, 576, 0, 0}, {"Z1", 128, 256, 1152, 0, 0}, {"Z1", 128, 256, 64, 0, 0},
    {"Z1", 256, 64, 1152, 0, 0}, {"Z1", 256, 64, 2304, 0, 0}, {"Z1", 256, 64, 128, 0, 0},
    {"Z1", 512, 16, 2304, 0, 0}, {"Z1", 512, 16, 4608, 0, 0}, {"Z1", 512, 16, 256, 0, 0},
};
enum { NSETS = 4 };
static const char *const g_sets[NSETS] = {"W1", "W3", "W2", "Z1"};
static int set_of(const shape *s) {
  for (int i = 0; i < NSETS; i++)
    if (!strcmp(s->set, g_sets[i])) return i;
  return 0;
}
enum { NSHAPES = sizeof g_shapes / sizeof g_shapes[0] };

enum { L_OPENBLAS, L_DNNL, L_DNNL_MM, L_BLIS, L_XSMM, L_XSMM_JIT, NLIBS };
static const char *const g_lib_names[NLIBS] = {"openblas", "dnnl", "dnnl_mm", "blis", "xsmm",
                                               "xsmm_jit"};

/* ---- oneDNN through dlopen (the C API of 2.6) ---- */
typedef int64_t dim_t_;
typedef struct {
  char opaque[1024];
} md_t; /* dnnl_memory_desc_t is a plain struct well below 1 KiB in 2.x */
typedef struct {
  char opaque[4096];
} matmul_desc_t;
typedef struct {
  int arg;
  void *memory;
} exec_arg_t;
static struct {
  int (*sgemm)(char, char, dim_t_, dim_t_, dim_t_, float, const float *, dim_t_, const float *,
               dim_t_, float, float *, dim_t_);
  int (*engine_create)(void **, int, size_t);
  int (*stream_create)(void **, void *, unsigned);
  int (*md_init_by_strides)(md_t *, int, const dim_t_ *, int, const dim_t_ *);
  int (*matmul_desc_init)(matmul_desc_t *, const md_t *, const md_t *, const md_t *, const md_t *);
  int (*pd_create)(void **, const void *, const void *, void *, const void *);
  int (*prim_create)(void **, const void *);
  int (*memory_create)(void **, const md_t *, void *, void *);
  int (*memory_set)(void *, void *);
  int (*execute)(const void *, void *, int, const exec_arg_t *);
  int (*stream_wait)(void *);
  void *engine, *stream;
} D;

static int dnnl_open(void) {
  void *h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) return 0;
#define SYM(f, s) *(void **)&D.f = dlsym(h, s)
  SYM(sgemm, "dnnl_sgemm");
  SYM(engine_create, "dnnl_engine_create");
  SYM(stream_create, "dnnl_stream_create");
  SYM(md_init_by_strides, "dnnl_memory_desc_init_by_strides");
  SYM(matmul_desc_init, "dnnl_matmul_desc_init");
  SYM(pd_create, "dnnl_primitive_desc_create");
  SYM(prim_create, "dnnl_primitive_create");
  SYM(memory_create, "dnnl_memory_create");
  SYM(memory_set, "dnnl_memory_set_data_handle");
  SYM(execute, "dnnl_primitive_execute");
  SYM(stream_wait, "dnnl_stream_wait");
#undef SYM
  if (!D.sgemm || !D.execute) return 0;
  /* dnnl_cpu = 1, dnnl_stream_default_flags = 0x4 (in_order) */
  if (D.engine_create(&D.engine, 1, 0) || D.stream_create(&D.stream, D.engine, 0x4)) return 0;
  return 1;
}

typedef struct {
  void *prim, *mem[3];
} dnnl_mm;
static dnnl_mm g_mm[NSHAPES];

static int dnnl_mm_make(dnnl_mm *p, const shape *s) {
  md_t a, b, c;
  dim_t_ da[2] = {s->m, s->k}, db[2] = {s->k, s->n}, dc[2] = {s->m, s->n};
  dim_t_ sa[2], sb[2], sc[2] = {s->n, 1};
  int64_t lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
  if (s->ta) sa[0] = 1, sa[1] = lda; else sa[0] = lda, sa[1] = 1;
  if (s->tb) sb[0] = 1, sb[1] = ldb; else sb[0] = ldb, sb[1] = 1;
  const int f32 = 3; /* dnnl_f32 */
  matmul_desc_t md;
  void *pd;
  if (D.md_init_by_strides(&a, 2, da, f32, sa) || D.md_init_by_strides(&b, 2, db, f32, sb) ||
      D.md_init_by_strides(&c, 2, dc, f32, sc) || D.matmul_desc_init(&md, &a, &b, NULL, &c) ||
      D.pd_create(&pd, &md, NULL, D.engine, NULL) || D.prim_create(&p->prim, pd))
    return 0;
  return !D.memory_create(&p->mem[0], &a, D.engine, NULL) &&
         !D.memory_create(&p->mem[1], &b, D.engine, NULL) &&
         !D.memory_create(&p->mem[2], &c, D.engine, NULL);
}

/* ---- BLIS through dlopen ---- */
static struct {
  void (*sgemm)(int, int, int64_t, int64_t, int64_t, const float *, const float *, int64_t,
                int64_t, const float *, int64_t, int64_t, const float *, float *, int64_t,
                int64_t);
  void (*set_threads)(int64_t);
  char *(*arch_string)(int);
  int (*arch_id)(void);
} Bl;

static int blis_open(void) {
  void *h = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!h) return 0;
  *(void **)&Bl.sgemm = dlsym(h, "bli_sgemm");
  *(void **)&Bl.set_threads = dlsym(h, "bli_thread_set_num_threads");
  *(void **)&Bl.arch_string = dlsym(h, "bli_arch_string");
  *(void **)&Bl.arch_id = dlsym(h, "bli_arch_query_id");
  return Bl.sgemm && Bl.set_threads;
}

/* ---- the calls ---- */
static float *g_a, *g_b, *g_c;
static const float ONE = 1.0f, ZERO = 0.0f;
#ifdef HAVE_XSMM
static libxsmm_smmfunction g_jit[NSHAPES];
static int g_jit_rows[NSHAPES];
#endif

static void run(int lib, int si) {
  const shape *s = &g_shapes[si];
  int m = s->m, n = s->n, k = s->k, lda = s->ta ? m : k, ldb = s->tb ? k : n;
  switch (lib) {
    case L_OPENBLAS:
      cblas_sgemm(101, s->ta ? 112 : 111, s->tb ? 112 : 111, m, n, k, 1, g_a, lda, g_b, ldb, 0,
                  g_c, n);
      break;
    case L_DNNL:
      D.sgemm(s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', m, n, k, 1, g_a, lda, g_b, ldb, 0, g_c, n);
      break;
    case L_DNNL_MM: {
      dnnl_mm *p = &g_mm[si];
      D.memory_set(p->mem[0], g_a);
      D.memory_set(p->mem[1], g_b);
      D.memory_set(p->mem[2], g_c);
      exec_arg_t args[3] = {{1, p->mem[0]}, {33, p->mem[1]}, {17, p->mem[2]}}; /* SRC WEIGHTS DST */
      D.execute(p->prim, D.stream, 3, args);
      D.stream_wait(D.stream);
      break;
    }
    case L_BLIS: {
      /* row-major: row stride ld, column stride 1; BLIS_TRANSPOSE = 0x08 */
      Bl.sgemm(s->ta ? 8 : 0, s->tb ? 8 : 0, m, n, k, &ONE, g_a, lda, 1, g_b, ldb, 1, &ZERO, g_c,
               n, 1);
      break;
    }
#ifdef HAVE_XSMM
    case L_XSMM: {
      /* column-major: C' = op(B)' op(A)' */
      libxsmm_blasint M = n, N = m, K = k, la = ldb, lb = lda, lc = n;
      char tA = s->tb ? 'T' : 'N', tB = s->ta ? 'T' : 'N';
      libxsmm_sgemm(&tA, &tB, &M, &N, &K, &ONE, g_b, &la, g_a, &lb, &ZERO, g_c, &lc);
      break;
    }
    case L_XSMM_JIT: {
      libxsmm_smmfunction f = g_jit[si];
      int rows = g_jit_rows[si];
#pragma omp parallel for schedule(static)
      for (int r0 = 0; r0 < m; r0 += rows) {
        const float *a = s->ta ? g_a + r0 : g_a + (int64_t)r0 * lda;
        f(g_b, a, g_c + (int64_t)r0 * n);
      }
      break;
    }
#endif
    default:
      break;
  }
}

static int usable(int lib, int si) {
  switch (lib) {
    case L_OPENBLAS: return 1;
    case L_DNNL: return D.sgemm != NULL;
    case L_DNNL_MM: return g_mm[si].prim != NULL;
    case L_BLIS: return Bl.sgemm != NULL;
#ifdef HAVE_XSMM
    case L_XSMM: return 1;
    case L_XSMM_JIT: return g_jit[si] != NULL;
#endif
    default: return 0;
  }
}

static clockid_t g_clock = CLOCK_MONOTONIC;
static double now(void) {
  struct timespec t;
  clock_gettime(g_clock, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 5;
  double ms = argc > 2 ? atof(argv[2]) : 40;
  const char *only = argc > 3 ? argv[3] : NULL;
  int threads = omp_get_max_threads();
  const char *clk = getenv("LUAMX_BENCH_CLOCK");
  if (clk && !strcmp(clk, "cpu")) g_clock = CLOCK_PROCESS_CPUTIME_ID;
  if (rounds < 1 || rounds > 100) rounds = 5;
  size_t big = 0;
  for (int i = 0; i < NSHAPES; i++) {
    size_t a = (size_t)g_shapes[i].m * g_shapes[i].k, b = (size_t)g_shapes[i].k * g_shapes[i].n,
           c = (size_t)g_shapes[i].m * g_shapes[i].n;
    if (a > big) big = a;
    if (b > big) big = b;
    if (c > big) big = c;
  }
  g_a = aligned_alloc(64, big * 4), g_b = aligned_alloc(64, big * 4), g_c = aligned_alloc(64, big * 4);
  float *ref = malloc(big * 4);
  srand(1);
  for (size_t i = 0; i < big; i++) g_a[i] = rand() / (float)RAND_MAX - 0.5f, g_b[i] = rand() / (float)RAND_MAX - 0.5f;

  int have_dnnl = dnnl_open(), have_blis = blis_open();
  if (have_blis) Bl.set_threads(threads);
  printf("# clock %s; ", g_clock == CLOCK_MONOTONIC ? "wall" : "process CPU");
  printf("# threads %d; oneDNN %s; BLIS %s (arch %s); libxsmm %s\n", threads,
         have_dnnl ? "yes" : "not found", have_blis ? "yes" : "not found",
         have_blis && Bl.arch_string ? Bl.arch_string(Bl.arch_id()) : "-",
#ifdef HAVE_XSMM
         "yes"
#else
         "not built"
#endif
  );
  for (int i = 0; i < NSHAPES && have_dnnl; i++)
    if (!dnnl_mm_make(&g_mm[i], &g_shapes[i])) g_mm[i].prim = NULL;
#ifdef HAVE_XSMM
  libxsmm_init();
  for (int i = 0; i < NSHAPES; i++) {
    const shape *s = &g_shapes[i];
    int rows = (s->m + threads - 1) / threads;
    libxsmm_blasint M = s->n, N = rows, K = s->k, la = s->tb ? s->k : s->n,
                    lb = s->ta ? s->m : s->k, lc = s->n;
    int flags = (s->tb ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) | (s->ta ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
    g_jit_rows[i] = rows;
    /* the split must cover m exactly with equal parts (one kernel per shape) */
    g_jit[i] = s->m % threads ? NULL
                              : libxsmm_smmdispatch(M, N, K, &la, &lb, &lc, &ONE, &ZERO, &flags, NULL);
  }
#endif

  double tot_flop[NSETS] = {0}, tot_time[NLIBS][NSETS] = {{0}};
  int set_ok[NLIBS][NSETS];
  for (int l = 0; l < NLIBS; l++) for (int s = 0; s < NSETS; s++) set_ok[l][s] = 1;
  printf("%-3s %6s %6s %6s %2s%2s | maxrel vs openblas | GFLOP/s median [min max] per library\n",
         "set", "m", "n", "k", "ta", "tb");
  for (int si = 0; si < NSHAPES; si++) {
    const shape *s = &g_shapes[si];
    int set = set_of(s);
    if (only && strcmp(only, s->set)) continue;
    double flop = 2.0 * s->m * s->n * s->k;
    tot_flop[set] += flop;
    /* correctness against OpenBLAS, and warm-up */
    run(L_OPENBLAS, si);
    memcpy(ref, g_c, (size_t)s->m * s->n * 4);
    double relerr[NLIBS] = {0};
    int reps[NLIBS];
    for (int l = 0; l < NLIBS; l++) {
      if (!usable(l, si)) { reps[l] = 0; continue; }
      memset(g_c, 0, (size_t)s->m * s->n * 4);
      run(l, si);
      double num = 0, den = 0;
      for (int64_t i = 0; i < (int64_t)s->m * s->n; i++)
        num = fmax(num, fabs(g_c[i] - ref[i])), den = fmax(den, fabs(ref[i]));
      relerr[l] = num / (den > 0 ? den : 1);
      double t0 = now();
      run(l, si);
      double one = now() - t0;
      reps[l] = (int)(ms * 1e-3 / (one > 1e-7 ? one : 1e-7));
      if (reps[l] < 2) reps[l] = 2;
    }
    double rate[NLIBS][100];
    for (int r = 0; r < rounds; r++)
      for (int l = 0; l < NLIBS; l++) {
        if (!reps[l]) continue;
        double t0 = now();
        for (int i = 0; i < reps[l]; i++) run(l, si);
        double dt = (now() - t0) / reps[l];
        rate[l][r] = flop / dt * 1e-9;
      }
    printf("%-3s %6d %6d %6d %2d%2d |", s->set, s->m, s->n, s->k, s->ta, s->tb);
    for (int l = 1; l < NLIBS; l++) printf(" %s %.0e", g_lib_names[l], relerr[l]);
    printf(" |");
    for (int l = 0; l < NLIBS; l++) {
      if (!reps[l]) { printf(" %s -", g_lib_names[l]); set_ok[l][set] = 0; continue; }
      qsort(rate[l], rounds, sizeof(double), cmp);
      double med = rate[l][rounds / 2];
      tot_time[l][set] += flop / (med * 1e9);
      printf(" %s %.0f [%.0f %.0f]", g_lib_names[l], med, rate[l][0], rate[l][rounds - 1]);
    }
    printf("\n");
    fflush(stdout);
  }
  for (int s = 0; s < NSETS; s++)
    for (int l = 0; l < NLIBS; l++)
      if (set_ok[l][s] && tot_time[l][s] > 0)
        printf("RESULT GEMMLIB %s_%s_%dt_gflops %.1f\n", g_sets[s], g_lib_names[l], threads,
               tot_flop[s] / tot_time[l][s] * 1e-9);
  free(ref);
  return 0;
}
