/* test_cu_elementwise.c — the CUDA elementwise, convert, optimizer and random kernels
 * (kernels/cuda) run on the simulator against the CPU primitives they mirror: every
 * unary / scalar / binary op forward and backward, scale, copy-add, sum of n, clip's
 * gradient, the array scalar op, conversions between all 7 dtypes (float16 bit-exact
 * with the CPU, exhaustively from float16 and on every rounding boundary to it), fills,
 * the six optimizer rules and multi-precision, Philox4x32-10 against Random123's
 * known-answer vectors and the device draws against the host computation of the same
 * stream. Sizes 0, 1, 3, a block +- 1, and a long odd one; req ADD; in place; pointers
 * off the 16-byte alignment (the one-by-one path). Prints "N passed, N failed". */
#ifndef LUAMX_CUDA_SIM
#include <stdio.h>

int main(void) {
  printf("skipped: needs the CUDA simulator build (-DLUAMX_CUDA=SIM)\n");
  return 0;
}
#else
#include "cu_check.h"
#include "../kernels/cpu/cpu_kernels.h"
#include "../kernels/cuda/cuda_kernels.h"

static const int64_t k_sizes[] = {0, 1, 3, 255, 257, 1027};
enum { NSIZES = sizeof k_sizes / sizeof k_sizes[0] };
static const int k_fdt[] = {LMX_FLOAT32, LMX_FLOAT64};

/* input range of op (positive where the op or its gradient needs it) */
static void un_range(int op, double *lo, double *hi) {
  *lo = -3, *hi = 3;
  if (op == LMX_UN_LOG || op == LMX_UN_SQRT || op == LMX_UN_RSQRT || op == LMX_UN_RECIP)
    *lo = 0.2;
}

/* Runs one comparison: the kernel (kern) vs the CPU (cpu) on copies of the same
 * destination contents. */
#define SAME_DEST(dt, n, dst_cpu, dst_gpu)                                                \
  void *dst_cpu = rand_buf(dt, n, -1, 1), *dst_gpu = calloc((size_t)(n) + 2, 8);          \
  memcpy(dst_gpu, dst_cpu, (size_t)(n) * (size_t)lmx_dtype_size(dt))

static void test_unary(void) {
  for (int di = 0; di < 2; di++)
    for (int op = 0; op < LMX_NUM_UNOPS; op++)
      for (int si = 0; si < NSIZES; si++)
        for (int acc = 0; acc < 2; acc++) {
          int dt = k_fdt[di];
          int64_t n = k_sizes[si];
          double lo, hi;
          un_range(op, &lo, &hi);
          void *x = rand_buf(dt, n, lo, hi), *g = rand_buf(dt, n, -1, 1);
          SAME_DEST(dt, n, yc, yg);
          CHECK(lmx_cpu_unary(op, dt, n, yc, x, acc) == 0, "cpu");
          CHECK(lmx_cu_unary(NULL, op, dt, n, yg, x, acc) == 0, "op %d", op);
          CHECK(max_err(dt, n, yg, yc) <= tol_of(dt), "unary %d dt %d n %ld acc %d: %g", op,
                dt, (long)n, acc, max_err(dt, n, yg, yc));
          /* backward reads the forward output y = f(x) */
          void *y = calloc((size_t)n + 2, 8);
          lmx_cpu_unary(op, dt, n, y, x, 0);
          SAME_DEST(dt, n, gc, gg);
          CHECK(lmx_cpu_unary_bwd(op, dt, n, gc, g, x, y, acc) == 0, "cpu");
          CHECK(lmx_cu_unary_bwd(NULL, op, dt, n, gg, g, x, y, acc) == 0, "op %d", op);
          CHECK(max_err(dt, n, gg, gc) <= tol_of(dt), "unary bwd %d dt %d n %ld acc %d: %g",
                op, dt, (long)n, acc, max_err(dt, n, gg, gc));
          /* in place, and off the 16-byte alignment */
          if (!acc && n) {
            size_t es = (size_t)lmx_dtype_size(dt);
            memcpy((char *)yg + es, x, (size_t)n * es);
            CHECK(lmx_cu_unary(NULL, op, dt, n, (char *)yg + es, (char *)yg + es, 0) == 0, "x");
            lmx_cpu_unary(op, dt, n, yc, x, 0);
            CHECK(max_err(dt, n, (char *)yg + es, yc) <= tol_of(dt), "in-place unary %d", op);
          }
          free(x), free(g), free(y), free(yc), free(yg), free(gc), free(gg);
        }
  /* float16: float math on the widened inputs, rounded (as the CPU's float32 result) */
  for (int op = 0; op < LMX_NUM_UNOPS; op++) {
    int64_t n = 1027;
    double lo, hi;
    un_range(op, &lo, &hi);
    void *x = rand_buf(LMX_FLOAT16, n, lo, hi), *y = calloc((size_t)n, 2);
    float *xf = calloc((size_t)n, 4), *yf = calloc((size_t)n, 4);
    lmx_cpu_convert(xf, LMX_FLOAT32, x, LMX_FLOAT16, n);
    lmx_cpu_unary(op, LMX_FLOAT32, n, yf, xf, 0);
    void *yh = calloc((size_t)n, 2);
    lmx_cpu_convert(yh, LMX_FLOAT16, yf, LMX_FLOAT32, n);
    CHECK(lmx_cu_unary(NULL, op, LMX_FLOAT16, n, y, x, 0) == 0, "f16 op %d", op);
    CHECK(max_err(LMX_FLOAT16, n, y, yh) <= tol_of(LMX_FLOAT16), "f16 unary %d: %g", op,
          max_err(LMX_FLOAT16, n, y, yh));
    free(x), free(y), free(xf), free(yf), free(yh);
  }
  CHECK(lmx_cu_unary(NULL, LMX_NUM_UNOPS, LMX_FLOAT32, 4, NULL, NULL, 0) == -1, "bad op");
  CHECK(lmx_cu_unary(NULL, LMX_UN_EXP, LMX_INT32, 4, NULL, NULL, 0) == -1, "bad dtype");
}

static void test_scalar_binary(void) {
  for (int di = 0; di < 2; di++)
    for (int si = 0; si < NSIZES; si++)
      for (int acc = 0; acc < 2; acc++) {
        int dt = k_fdt[di];
        int64_t n = k_sizes[si];
        for (int op = 0; op < LMX_NUM_SCOPS; op++) {
          double s = op == LMX_SC_RPOW ? 1.7 : 0.37;
          void *x = rand_buf(dt, n, 0.1, 2), *g = rand_buf(dt, n, -1, 1);
          if (n > 2) lmx_store_f64(x, dt, 1, s); /* ties for max / min / comparisons */
          void *y = calloc((size_t)n + 2, 8);
          lmx_cpu_scalar_op(op, dt, n, y, x, s, 0);
          SAME_DEST(dt, n, yc, yg);
          lmx_cpu_scalar_op(op, dt, n, yc, x, s, acc);
          CHECK(lmx_cu_scalar_op(NULL, op, dt, n, yg, x, s, acc) == 0, "sc %d", op);
          CHECK(max_err(dt, n, yg, yc) <= tol_of(dt), "scalar %d dt %d n %ld: %g", op, dt,
                (long)n, max_err(dt, n, yg, yc));
          SAME_DEST(dt, n, gc, gg);
          lmx_cpu_scalar_bwd(op, dt, n, gc, g, x, y, s, acc);
          CHECK(lmx_cu_scalar_bwd(NULL, op, dt, n, gg, g, x, y, s, acc) == 0, "scb %d", op);
          CHECK(max_err(dt, n, gg, gc) <= tol_of(dt), "scalar bwd %d dt %d n %ld: %g", op,
                dt, (long)n, max_err(dt, n, gg, gc));
          free(x), free(g), free(y), free(yc), free(yg), free(gc), free(gg);
        }
        for (int op = 0; op < LMX_NUM_BINOPS; op++) {
          void *a = rand_buf(dt, n, 0.1, 2), *b = rand_buf(dt, n, 0.1, 2);
          void *g = rand_buf(dt, n, -1, 1);
          if (n > 2) memcpy(b, a, (size_t)lmx_dtype_size(dt)); /* a tie */
          SAME_DEST(dt, n, oc, og);
          lmx_cpu_ew_binary(op, dt, n, oc, a, b, acc);
          CHECK(lmx_cu_ew_binary(NULL, op, dt, n, og, a, b, acc) == 0, "bin %d", op);
          CHECK(max_err(dt, n, og, oc) <= tol_of(dt), "binary %d dt %d n %ld: %g", op, dt,
                (long)n, max_err(dt, n, og, oc));
          for (int side = 0; side < 2; side++) {
            SAME_DEST(dt, n, gc, gg);
            lmx_cpu_ew_binary_bwd(op, side, dt, n, gc, g, a, b, acc);
            CHECK(lmx_cu_ew_binary_bwd(NULL, op, side, dt, n, gg, g, a, b, acc) == 0, "bb");
            CHECK(max_err(dt, n, gg, gc) <= tol_of(dt), "binary bwd %d side %d dt %d: %g",
                  op, side, dt, max_err(dt, n, gg, gc));
            free(gc), free(gg);
          }
          /* in place: out aliases a */
          if (!acc) {
            void *ag = calloc((size_t)n + 2, 8);
            memcpy(ag, a, (size_t)n * (size_t)lmx_dtype_size(dt));
            CHECK(lmx_cu_ew_binary(NULL, op, dt, n, ag, ag, b, 0) == 0, "in place");
            CHECK(max_err(dt, n, ag, oc) <= tol_of(dt), "in-place binary %d", op);
            free(ag);
          }
          free(a), free(b), free(g), free(oc), free(og);
        }
      }
}

static void test_copies_sums(void) {
  { /* the GPU has no bfloat16 kernels: every entry point says so (-1), none writes */
    uint16_t x[4] = {0x3f80, 0x4000, 0, 0}, y[4] = {0};
    const void *xs[1] = {x};
    CHECK(lmx_cu_scale(NULL, LMX_BFLOAT16, 4, y, x, 1.0, 0) == -1, "bfloat16 copy");
    CHECK(lmx_cu_fill(NULL, y, LMX_BFLOAT16, 4, 1.0) == -1, "bfloat16 fill");
    CHECK(lmx_cu_convert(NULL, y, LMX_BFLOAT16, x, LMX_FLOAT16, 2) == -1, "to bfloat16");
    CHECK(lmx_cu_sum_n(NULL, LMX_BFLOAT16, 4, y, xs, 1, 0) == -1, "bfloat16 sum_n");
    CHECK(y[0] == 0 && y[1] == 0, "bfloat16 calls wrote nothing");
  }
  for (int dt = 0; dt <= LMX_INT64; dt++)
    for (int si = 0; si < NSIZES; si++) {
      int64_t n = k_sizes[si];
      void *x = rand_buf(dt, n, -100, 100), *y = calloc((size_t)n + 2, 8);
      CHECK(lmx_cu_scale(NULL, dt, n, y, x, 1.0, 0) == 0, "copy dt %d", dt);
      CHECK(memcmp(x, y, (size_t)n * (size_t)lmx_dtype_size(dt)) == 0, "copy dt %d n %ld", dt,
            (long)n);
      int fl = dt == LMX_FLOAT32 || dt == LMX_FLOAT64;
      CHECK((lmx_cu_scale(NULL, dt, n, y, x, 2.0, 1) == 0) == (fl || dt == LMX_FLOAT16),
            "scale support dt %d", dt);
      free(x), free(y);
    }
  for (int di = 0; di < 2; di++)
    for (int si = 0; si < NSIZES; si++)
      for (int acc = 0; acc < 2; acc++) {
        int dt = k_fdt[di];
        int64_t n = k_sizes[si];
        void *x = rand_buf(dt, n, -1, 1);
        SAME_DEST(dt, n, yc, yg);
        lmx_cpu_scale(dt, n, yc, x, 2.5, acc);
        CHECK(lmx_cu_scale(NULL, dt, n, yg, x, 2.5, acc) == 0, "scale");
        /* not bit-exact: either side may fuse alpha * x + y into one FMA */
        CHECK(max_err(dt, n, yg, yc) <= tol_of(dt), "scale dt %d n %ld acc %d", dt, (long)n,
              acc);
        /* sum of n, the CPU's add_n order: exact */
        for (int ns = 1; ns <= 6; ns++) {
          void *src[6];
          for (int k = 0; k < ns; k++) src[k] = rand_buf(dt, n, -1, 1);
          SAME_DEST(dt, n, sc, sg);
          lmx_cpu_scale(dt, n, sc, src[0], 1.0, acc);
          for (int k = 1; k < ns; k++) lmx_cpu_scale(dt, n, sc, src[k], 1.0, 1);
          CHECK(lmx_cu_sum_n(NULL, dt, n, sg, (const void *const *)src, ns, acc) == 0, "sum_n");
          CHECK(memcmp(sc, sg, (size_t)n * (size_t)lmx_dtype_size(dt)) == 0,
                "sum_n dt %d n %ld ns %d acc %d", dt, (long)n, ns, acc);
          /* in place: dst is the first source (the gradient-sum case) */
          if (!acc && ns > 1) {
            memcpy(sg, src[0], (size_t)n * (size_t)lmx_dtype_size(dt));
            void *alias[6];
            memcpy(alias, src, sizeof alias);
            alias[0] = sg;
            CHECK(lmx_cu_sum_n(NULL, dt, n, sg, (const void *const *)alias, ns, 0) == 0, "sum");
            CHECK(memcmp(sc, sg, (size_t)n * (size_t)lmx_dtype_size(dt)) == 0,
                  "in-place sum_n dt %d ns %d", dt, ns);
          }
          for (int k = 0; k < ns; k++) free(src[k]);
          free(sc), free(sg);
        }
        /* clip's gradient against the CPU glue's formula (double comparisons) */
        {
          double lo = -0.3, hi = 0.45;
          void *g = rand_buf(dt, n, -1, 1);
          SAME_DEST(dt, n, gc, gg);
          for (int64_t i = 0; i < n; i++) {
            double xv = lmx_load_f64(x, dt, i);
            double v = (xv >= lo && xv <= hi) ? lmx_load_f64(g, dt, i) : 0.0;
            if (acc) v += lmx_load_f64(gc, dt, i);
            lmx_store_f64(gc, dt, i, v);
          }
          CHECK(lmx_cu_clip_bwd(NULL, dt, n, gg, g, x, lo, hi, acc) == 0, "clip");
          CHECK(max_err(dt, n, gg, gc) == 0, "clip bwd dt %d n %ld", dt, (long)n);
          free(g), free(gc), free(gg);
        }
        free(x), free(yc), free(yg);
      }
  CHECK(lmx_cu_sum_n(NULL, LMX_INT32, 4, NULL, NULL, 1, 0) == -1, "sum_n int32 refused");
  /* the array layer's scalar op: every dtype, both orders, vs lmx_cpu_scalar (exact
   * except float16, which the CPU computes in double) */
  for (int dt = 0; dt <= LMX_INT64; dt++)
    for (int op = 0; op < LMX_NUM_BINOPS; op++)
      for (int rev = 0; rev < 2; rev++) {
        int64_t n = 300;
        void *a = rand_buf(dt, n, 1, 9), *oc = calloc((size_t)n, 8), *og = calloc((size_t)n, 8);
        double s = dt == LMX_FLOAT32 || dt == LMX_FLOAT64 || dt == LMX_FLOAT16 ? 1.3 : 3;
        lmx_cpu_scalar(op, dt, n, oc, a, s, rev);
        CHECK(lmx_cu_scalar(NULL, op, dt, n, og, a, s, rev) == 0, "scalar");
        double e = max_err(dt, n, og, oc);
        CHECK(dt == LMX_FLOAT16 ? e <= tol_of(dt) : e == 0, "array scalar op %d dt %d rev %d: %g",
              op, dt, rev, e);
        free(a), free(oc), free(og);
      }
}

static void test_convert_fill(void) {
  /* special and range-edge values in every dtype */
  static const double vals[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.7, -3.7, 127.0, 128.0,
                                255.5, 256.0, -129.0, 65504.0, 65520.0, 1e6, -1e9, 3e9,
                                1e19, -1e19, 6e-8, 1e-40, INFINITY, -INFINITY, NAN};
  enum { NV = sizeof vals / sizeof vals[0] };
  for (int st = 0; st <= LMX_INT64; st++) {
    void *src = calloc(NV + 1000, 8);
    for (int i = 0; i < NV; i++) lmx_store_f64(src, st, i, vals[i]);
    for (int i = NV; i < NV + 1000; i++) lmx_store_f64(src, st, i, urand(-300, 300));
    for (int dt = 0; dt <= LMX_INT64; dt++) {
      void *dc = calloc(NV + 1000, 8), *dg = calloc(NV + 1000, 8);
      lmx_cpu_convert(dc, dt, src, st, NV + 1000);
      CHECK(lmx_cu_convert(NULL, dg, dt, src, st, NV + 1000) == 0, "convert");
      CHECK(memcmp(dc, dg, (size_t)(NV + 1000) * (size_t)lmx_dtype_size(dt)) == 0,
            "convert %s -> %s differs from the CPU", lmx_dtype_str(st), lmx_dtype_str(dt));
      free(dc), free(dg);
    }
    free(src);
  }
  CHECK(lmx_cu_convert(NULL, NULL, 9, NULL, 0, 4) == -1, "bad dtype refused");
  /* float16 -> float32: every one of the 65536 patterns, bit for bit */
  {
    uint16_t *h = malloc(65536 * 2);
    float *fc = malloc(65536 * 4), *fg = malloc(65536 * 4);
    for (int i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    lmx_cpu_convert(fc, LMX_FLOAT32, h, LMX_FLOAT16, 65536);
    CHECK(lmx_cu_convert(NULL, fg, LMX_FLOAT32, h, LMX_FLOAT16, 65536) == 0, "f16->f32");
    CHECK(memcmp(fc, fg, 65536 * 4) == 0, "float16 -> float32 differs from the CPU");
    /* float32 -> float16 at every rounding boundary: for each float16 value, the float32
     * midpoint to its successor and its two float32 neighbours, plus the value itself */
    int64_t m = 65536 * 4;
    uint32_t *fb = malloc((size_t)m * 4);
    for (int i = 0; i < 65536; i++) {
      float a = lmx_f16_to_f32((uint16_t)i);
      uint32_t ab;
      memcpy(&ab, &a, 4);
      float b = lmx_f16_to_f32((uint16_t)(i + 1 > 65535 ? i : i + 1));
      float mid = (float)(((double)a + (double)b) / 2);
      uint32_t mb;
      memcpy(&mb, &mid, 4);
      fb[4 * i] = ab, fb[4 * i + 1] = mb, fb[4 * i + 2] = mb + 1, fb[4 * i + 3] = mb - 1;
    }
    uint16_t *hc = malloc((size_t)m * 2), *hg = malloc((size_t)m * 2);
    lmx_cpu_convert(hc, LMX_FLOAT16, fb, LMX_FLOAT32, m);
    CHECK(lmx_cu_convert(NULL, hg, LMX_FLOAT16, fb, LMX_FLOAT32, m) == 0, "f32->f16");
    CHECK(memcmp(hc, hg, (size_t)m * 2) == 0, "float32 -> float16 boundaries differ");
    /* and the shared routine over a stride of all 2^32 float32 patterns */
    int bad = 0;
    for (uint64_t u = 0; u < (1ull << 32); u += 251) {
      float f;
      uint32_t b32 = (uint32_t)u;
      memcpy(&f, &b32, 4);
      bad += lmx_cu_host_f32_to_f16(f) != lmx_f32_to_f16(f);
    }
    CHECK(bad == 0, "%d float32 patterns round differently", bad);
    free(h), free(fc), free(fg), free(fb), free(hc), free(hg);
  }
  /* fill: every dtype, values that convert, saturate, truncate, NaN */
  static const double fills[] = {1.5, -3.7, 300, -1e10, NAN, 65519.0, 1e-8};
  for (int dt = 0; dt <= LMX_INT64; dt++)
    for (unsigned k = 0; k < sizeof fills / sizeof fills[0]; k++)
      for (int si = 0; si < NSIZES; si++) {
        int64_t n = k_sizes[si];
        void *pc = calloc((size_t)n + 1, 8), *pg = calloc((size_t)n + 1, 8);
        lmx_cpu_fill(pc, dt, n, fills[k]);
        CHECK(lmx_cu_fill(NULL, pg, dt, n, fills[k]) == 0, "fill");
        CHECK(memcmp(pc, pg, (size_t)(n + 1) * (size_t)lmx_dtype_size(dt)) == 0,
              "fill %s with %g, n %ld", lmx_dtype_str(dt), fills[k], (long)n);
        free(pc), free(pg);
      }
}

static void test_optim(void) {
  static const int nst[] = {0, 1, 1, 2, 1, 1, 2, 1, 0};
  for (int rule = LMX_UPD_SGD; rule <= LMX_UPD_SIGNSGD; rule++)
    for (int di = 0; di < 2; di++)
      for (int acc = 0; acc < 2; acc++)
        for (int clip = 0; clip < 2; clip++) {
          int dt = k_fdt[di];
          int64_t n = 1027;
          lmx_cpu_upd u = {rule, 0.1, 0.01, 0.5, clip ? 0.3 : -1, 0.9, 0.9, 0.999, 1e-8, 0.95,
                           rule == LMX_UPD_RMSPROP ? 0.7 : -1, 0.05, 1.0, 0.02, 0, NULL};
          void *w = rand_buf(dt, n, -1, 1), *g = rand_buf(dt, n, -2, 2);
          void *s0c = rand_buf(dt, n, 0, 1), *s1c = rand_buf(dt, n, 0, 1);
          void *s0g = calloc((size_t)n, 8), *s1g = calloc((size_t)n, 8);
          memcpy(s0g, s0c, (size_t)n * 8), memcpy(s1g, s1c, (size_t)n * 8);
          SAME_DEST(dt, n, oc, og);
          lmx_cpu_update(dt, &u, n, oc, w, g, s0c, s1c, acc);
          CHECK(lmx_cu_update(NULL, dt, &u, n, og, w, g, nst[rule] ? s0g : NULL,
                              nst[rule] > 1 ? s1g : NULL, acc) == 0, "update");
          /* FTRL's z grows to ~|w|/lr: compare it at float32's relative precision */
          double tol = dt == LMX_FLOAT64 ? (rule == LMX_UPD_FTRL ? 1e-13 : 1e-14)
                                         : (rule == LMX_UPD_FTRL ? 1e-5 : 1e-6);
          CHECK(max_err(dt, n, og, oc) <= tol, "rule %d dt %d acc %d clip %d: %g", rule, dt, acc,
                clip, max_err(dt, n, og, oc));
          CHECK(max_err(dt, n, s0g, s0c) <= tol && max_err(dt, n, s1g, s1c) <= tol,
                "states of rule %d dt %d", rule, dt);
          /* in place: out is w */
          if (!acc) {
            void *wg = calloc((size_t)n, 8);
            memcpy(wg, w, (size_t)n * 8);
            memcpy(s0g, s0c, (size_t)n * 8), memcpy(s1g, s1c, (size_t)n * 8);
            void *s0r = calloc((size_t)n, 8), *s1r = calloc((size_t)n, 8);
            memcpy(s0r, s0c, (size_t)n * 8), memcpy(s1r, s1c, (size_t)n * 8);
            lmx_cpu_update(dt, &u, n, oc, w, g, s0r, s1r, 0);
            lmx_cu_update(NULL, dt, &u, n, wg, wg, g, s0g, s1g, 0);
            CHECK(max_err(dt, n, wg, oc) <= tol, "in-place rule %d", rule);
            free(wg), free(s0r), free(s1r);
          }
          /* multi-precision: float32 master weights and states, float16 weight / grad */
          if (dt == LMX_FLOAT32) {
            void *g16 = calloc((size_t)n, 2), *o16 = calloc((size_t)n, 2);
            void *o16c = calloc((size_t)n, 2);
            lmx_cpu_convert(g16, LMX_FLOAT16, g, LMX_FLOAT32, n);
            float *gw = calloc((size_t)n, 4), *m32c = calloc((size_t)n, 4);
            float *m32g = calloc((size_t)n, 4), *ref = calloc((size_t)n, 4);
            lmx_cpu_convert(gw, LMX_FLOAT32, g16, LMX_FLOAT16, n);
            memcpy(m32c, w, (size_t)n * 4), memcpy(m32g, w, (size_t)n * 4);
            void *t0c = rand_buf(dt, n, 0, 1), *t1c = rand_buf(dt, n, 0, 1);
            void *t0g = calloc((size_t)n, 4), *t1g = calloc((size_t)n, 4);
            memcpy(t0g, t0c, (size_t)n * 4), memcpy(t1g, t1c, (size_t)n * 4);
            lmx_cpu_update(LMX_FLOAT32, &u, n, ref, m32c, gw, t0c, t1c, 0);
            memcpy(m32c, ref, (size_t)n * 4);
            lmx_cpu_convert(o16c, LMX_FLOAT16, ref, LMX_FLOAT32, n);
            CHECK(lmx_cu_update_mp(NULL, &u, n, o16, g16, t0g, t1g, m32g, 0) == 0, "mp");
            CHECK(max_err(LMX_FLOAT32, n, m32g, m32c) <= 1e-6, "mp master rule %d: %g", rule,
                  max_err(LMX_FLOAT32, n, m32g, m32c));
            CHECK(max_err(LMX_FLOAT16, n, o16, o16c) <= 1e-3, "mp float16 out rule %d", rule);
            free(g16), free(o16), free(o16c), free(gw), free(m32c), free(m32g), free(ref);
            free(t0c), free(t1c), free(t0g), free(t1g);
          }
          free(w), free(g), free(s0c), free(s1c), free(s0g), free(s1g), free(oc), free(og);
        }
  /* FTML: three states, the third (z) through u.s2 */
  for (int di = 0; di < 2; di++)
    for (int clip = 0; clip < 2; clip++) {
      int dt = k_fdt[di];
      int64_t n = 515;
      void *w = rand_buf(dt, n, -1, 1), *g = rand_buf(dt, n, -2, 2);
      void *dc = rand_buf(dt, n, 0.5, 1.5), *vc = rand_buf(dt, n, 0.5, 1.5), *zc = rand_buf(dt, n, -1, 1);
      void *dg = calloc((size_t)n, 8), *vg = calloc((size_t)n, 8), *zg = calloc((size_t)n, 8);
      void *oc = calloc((size_t)n, 8), *og = calloc((size_t)n, 8);
      memcpy(dg, dc, (size_t)n * 8), memcpy(vg, vc, (size_t)n * 8), memcpy(zg, zc, (size_t)n * 8);
      lmx_cpu_upd f = {LMX_UPD_FTML, 0.05, 0.02, 0.5, clip ? 0.3 : -1, 0, 0.6, 0.999, 1e-8, 0, -1,
                       0, 0, 0, 3, zc};
      lmx_cpu_update(dt, &f, n, oc, w, g, dc, vc, 0);
      f.s2 = zg;
      CHECK(lmx_cu_update(NULL, dt, &f, n, og, w, g, dg, vg, 0) == 0, "ftml update");
      double tol = dt == LMX_FLOAT64 ? 1e-12 : 1e-5;
      CHECK(max_err(dt, n, og, oc) <= tol && max_err(dt, n, zg, zc) <= tol &&
            max_err(dt, n, dg, dc) <= tol && max_err(dt, n, vg, vc) <= tol,
            "ftml dt %d clip %d: %g", dt, clip, max_err(dt, n, og, oc));
      f.s2 = NULL;
      CHECK(lmx_cu_update(NULL, dt, &f, n, og, w, g, dg, vg, 0) == -1, "ftml without z refused");
      free(w), free(g), free(dc), free(vc), free(zc), free(dg), free(vg), free(zg), free(oc),
          free(og);
    }
  lmx_cpu_upd u = {LMX_UPD_SGD_MOM, 0.1, 0, 1, -1, 0.9, 0, 0, 0, 0, -1, 0, 0, 0, 0, NULL};
  CHECK(lmx_cu_update(NULL, LMX_FLOAT32, &u, 4, NULL, NULL, NULL, NULL, NULL, 0) == -1,
        "a missing momentum state is refused");
  CHECK(lmx_cu_update(NULL, LMX_INT32, &u, 4, NULL, NULL, NULL, NULL, NULL, 0) == -1,
        "int32 refused");
}

static void test_random(void) {
  /* Random123 tests/kat_vectors, philox4x32 10 */
  static const uint32_t kat[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
       0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
       0x94fdcceb, 0x5001e420, 0x24126ea1}};
  for (int k = 0; k < 3; k++) {
    lmx_philox4 r = lmx_philox4x32_r(10, kat[k], kat[k] + 4);
    CHECK(memcmp(r.v, kat[k] + 6, 16) == 0, "philox4x32-10 known answer %d: %08x %08x %08x %08x",
          k, r.v[0], r.v[1], r.v[2], r.v[3]);
  }
  /* device draws equal the host computation of the same stream */
  static const int dts[] = {LMX_FLOAT32, LMX_FLOAT64, LMX_FLOAT16};
  for (int di = 0; di < 3; di++)
    for (int si = 0; si < NSIZES; si++) {
      int dt = dts[di], wide = dt == LMX_FLOAT64;
      int64_t n = k_sizes[si];
      uint64_t seed = 0x123456789abcull, off = 77;
      void *u = calloc((size_t)n + 1, 8), *z = calloc((size_t)n + 1, 8);
      void *mk = calloc((size_t)n + 1, 8), *ref = calloc((size_t)n + 1, 8);
      CHECK(lmx_cu_random_uniform(NULL, dt, n, u, -2, 3, seed, off) == 0, "uniform");
      CHECK(lmx_cu_random_normal(NULL, dt, n, z, 1, 2, seed, off) == 0, "normal");
      CHECK(lmx_cu_dropout_mask(NULL, dt, n, mk, 0.3, seed, off) == 0, "mask");
      for (int64_t i = 0; i < n; i++)
        lmx_store_f64(ref, dt, i, -2 + 5 * lmx_philox_uniform(wide, seed, off, i));
      CHECK(max_err(dt, n, u, ref) == 0, "uniform stream dt %d n %ld", dt, (long)n);
      for (int64_t i = 0; i < n; i++)
        lmx_store_f64(ref, dt, i, 1 + 2 * lmx_philox_normal(wide, seed, off, i));
      CHECK(max_err(dt, n, z, ref) <= tol_of(dt), "normal stream dt %d n %ld", dt, (long)n);
      for (int64_t i = 0; i < n; i++)
        lmx_store_f64(ref, dt, i, lmx_philox_uniform(wide, seed, off, i) < 0.3 ? 0 : 1 / 0.7);
      CHECK(max_err(dt, n, mk, ref) == 0, "mask stream dt %d n %ld", dt, (long)n);
      free(u), free(z), free(mk), free(ref);
    }
  /* moments of a long draw; another offset or seed gives other numbers */
  int64_t n = 1 << 16;
  float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4), *c = malloc((size_t)n * 4);
  lmx_cu_random_normal(NULL, LMX_FLOAT32, n, a, 0, 1, 5, 0);
  lmx_cu_random_normal(NULL, LMX_FLOAT32, n, b, 0, 1, 5, lmx_philox_blocks(0, n));
  lmx_cu_random_normal(NULL, LMX_FLOAT32, n, c, 0, 1, 6, 0);
  double m = 0, v = 0;
  int same_b = 0, same_c = 0;
  for (int64_t i = 0; i < n; i++) m += a[i], v += (double)a[i] * a[i];
  for (int64_t i = 0; i < n; i++) same_b += a[i] == b[i], same_c += a[i] == c[i];
  m /= (double)n, v = v / (double)n - m * m;
  CHECK(fabs(m) < 0.02 && fabs(v - 1) < 0.03, "normal moments: mean %g var %g", m, v);
  CHECK(same_b < 4 && same_c < 4, "streams overlap: %d %d equal draws", same_b, same_c);
  lmx_cu_random_uniform(NULL, LMX_FLOAT32, n, a, 0, 1, 5, 0);
  m = 0;
  double lo = 1, hi = 0;
  for (int64_t i = 0; i < n; i++) m += a[i], lo = a[i] < lo ? a[i] : lo, hi = a[i] > hi ? a[i] : hi;
  CHECK(fabs(m / (double)n - 0.5) < 0.01 && lo >= 0 && hi < 1, "uniform: mean %g range [%g, %g]",
        m / (double)n, lo, hi);
  CHECK(lmx_cu_dropout_mask(NULL, LMX_FLOAT32, 4, a, 1.0, 1, 0) == -1, "p = 1 refused");
  CHECK(lmx_cu_random_uniform(NULL, LMX_INT32, 4, a, 0, 1, 1, 0) == -1, "int32 refused");
  free(a), free(b), free(c);
}

CU_TEST_MAIN_BEGIN
  test_unary();
  test_scalar_binary();
  test_copies_sums();
  test_convert_fill();
  test_optim();
  test_random();
CU_TEST_MAIN_END
#endif
