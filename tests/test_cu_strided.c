/* test_cu_strided.c — the CUDA strided kernels (kernels/cuda/strided.cu) on the simulator
 * against kernels/cpu/strided.c and binary.c: transposes and slices (every dtype, req
 * ADD), broadcasting binary ops and their gradients (every op, both sides), reductions of
 * every kind over random axis sets (the one-thread and the one-block-per-output paths,
 * empty axes, req ADD), sums of 2^22 elements into 1 and 3 outputs (the split path: many
 * blocks per output, exact and deterministic), their gradients, argmax / argmin with ties, and the array
 * layer's broadcast op in all 7 dtypes. Random shapes of 1 to 5 dims, sizes not a
 * multiple of the block. Prints "N passed, N failed". */
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
#include "lmx_sim.h"

static int64_t volume(int nd, const int64_t *s) {
  int64_t v = 1;
  for (int d = 0; d < nd; d++) v *= s[d];
  return v;
}

static int rand_shape(int64_t *s, int maxnd, int64_t maxdim) {
  int nd = 1 + (int)irand(maxnd);
  for (int d = 0; d < nd; d++) s[d] = 1 + irand(maxdim);
  return nd;
}

/* strides of an operand of shape s (1 where broadcast) over nd output dims */
static void bstrides(int nd, const int64_t *s, int64_t *st) {
  int64_t a = 1;
  for (int d = nd - 1; d >= 0; d--) st[d] = s[d] == 1 ? 0 : a, a *= s[d];
}

static void test_copies(void) {
  for (int it = 0; it < 120; it++)
    for (int dt = 0; dt <= LMX_INT64; dt++) {
      int64_t sh[LMX_MAX_NDIM], big[LMX_MAX_NDIM], off[LMX_MAX_NDIM];
      int nd = rand_shape(sh, 5, 7);
      int perm[LMX_MAX_NDIM];
      for (int d = 0; d < nd; d++) perm[d] = d;
      for (int d = nd - 1; d > 0; d--) {
        int j = (int)irand(d + 1), t = perm[d];
        perm[d] = perm[j], perm[j] = t;
      }
      /* source: a slice [off, off + sh) of a bigger array, read transposed by perm */
      for (int d = 0; d < nd; d++) big[d] = sh[d] + irand(3), off[d] = irand(big[d] - sh[d] + 1);
      int64_t bst[LMX_MAX_NDIM], sst[LMX_MAX_NDIM], dsh[LMX_MAX_NDIM], dst_[LMX_MAX_NDIM];
      lmx_cpu_contig_strides(nd, big, bst);
      int64_t base = 0;
      for (int d = 0; d < nd; d++) base += off[d] * bst[d];
      /* walk the destination's (permuted) index space */
      for (int d = 0; d < nd; d++) dsh[d] = sh[perm[d]], sst[d] = bst[perm[d]];
      lmx_cpu_contig_strides(nd, dsh, dst_);
      int64_t nb = volume(nd, big), n = volume(nd, sh);
      size_t es = (size_t)lmx_dtype_size(dt);
      void *src = rand_buf(dt, nb, -50, 50);
      int acc = dt <= LMX_FLOAT64 ? it % 2 : 0;
      void *dc = rand_buf(dt, n, -1, 1), *dg = calloc((size_t)n + 1, 8);
      memcpy(dg, dc, (size_t)n * es);
      const char *sp = (const char *)src + base * es;
      CHECK(lmx_cpu_strided_copy(dt, nd, dsh, dc, dst_, sp, sst, acc) == 0, "cpu");
      CHECK(lmx_cu_strided_copy(NULL, dt, nd, dsh, dg, dst_, sp, sst, acc) == 0, "dt %d", dt);
      CHECK(max_err(dt, n, dg, dc) == 0, "strided copy dt %d nd %d acc %d", dt, nd, acc);
      /* the backward direction: scatter into the slice of a big gradient */
      void *gc = rand_buf(dt, nb, -1, 1), *gg = calloc((size_t)nb + 1, 8);
      memcpy(gg, gc, (size_t)nb * es);
      lmx_cpu_strided_copy(dt, nd, dsh, (char *)gc + base * es, sst, dc, dst_, acc);
      CHECK(lmx_cu_strided_copy(NULL, dt, nd, dsh, (char *)gg + base * es, sst, dc, dst_, acc) == 0,
            "scatter");
      CHECK(max_err(dt, nb, gg, gc) == 0, "strided scatter dt %d nd %d acc %d", dt, nd, acc);
      free(src), free(dc), free(dg), free(gc), free(gg);
    }
  /* transposes big enough for several shared-memory tiles, batched, every dtype */
  for (int dt = 0; dt <= LMX_INT64; dt++)
    for (int acc = 0; acc < 2; acc++) {
      int64_t sh[3] = {3, 45, 70}, dsh[3] = {3, 70, 45}, sst[3] = {45 * 70, 1, 45}, dst_[3];
      int ok = dt <= LMX_FLOAT64 || !acc;
      if (!ok) continue;
      lmx_cpu_contig_strides(3, dsh, dst_);
      int64_t n = sh[0] * sh[1] * sh[2];
      void *src = rand_buf(dt, n, -50, 50), *dc = rand_buf(dt, n, -1, 1);
      void *dg = calloc((size_t)n + 1, 8);
      memcpy(dg, dc, (size_t)n * (size_t)lmx_dtype_size(dt));
      lmx_cpu_strided_copy(dt, 3, dsh, dc, dst_, src, sst, acc);
      CHECK(lmx_cu_strided_copy(NULL, dt, 3, dsh, dg, dst_, src, sst, acc) == 0, "tile");
      CHECK(max_err(dt, n, dg, dc) == 0, "tiled transpose dt %d acc %d", dt, acc);
      free(src), free(dc), free(dg);
    }
  int64_t z[2] = {3, 0}, st[2] = {0, 1};
  CHECK(lmx_cu_strided_copy(NULL, LMX_FLOAT32, 2, z, NULL, st, NULL, st, 0) == 0, "empty copy");
  CHECK(lmx_cu_strided_copy(NULL, LMX_INT32, 2, z, NULL, st, NULL, st, 1) == -1, "int32 acc");
  CHECK(lmx_cu_strided_copy(NULL, LMX_FLOAT32, 9, z, NULL, st, NULL, st, 0) == -1, "ndim 9");
}

/* random output shape and operand shapes with broadcast axes */
static int bc_shapes(int64_t *os, int64_t *as, int64_t *bs) {
  int nd = rand_shape(os, 5, 6);
  for (int d = 0; d < nd; d++) {
    as[d] = irand(3) == 0 ? 1 : os[d];
    bs[d] = irand(3) == 0 ? 1 : os[d];
  }
  return nd;
}

static void test_bcast(void) {
  static const int dts[] = {LMX_FLOAT32, LMX_FLOAT64, LMX_FLOAT16};
  for (int it = 0; it < 60; it++)
    for (int di = 0; di < 3; di++)
      for (int op = LMX_BC_ADD; op <= LMX_BC_LE; op++) {
        int dt = dts[di], cdt = dt == LMX_FLOAT16 ? LMX_FLOAT32 : dt;
        int64_t os[LMX_MAX_NDIM], as[LMX_MAX_NDIM], bs[LMX_MAX_NDIM];
        int64_t ast[LMX_MAX_NDIM], bst[LMX_MAX_NDIM];
        int nd = bc_shapes(os, as, bs);
        bstrides(nd, as, ast), bstrides(nd, bs, bst);
        int64_t n = volume(nd, os), na = volume(nd, as), nb = volume(nd, bs);
        int acc = it % 2;
        void *a = rand_buf(dt, na, 0.2, 2), *b = rand_buf(dt, nb, 0.2, 2);
        if (it % 3 == 0) memcpy(b, a, (size_t)lmx_dtype_size(dt)); /* a tie */
        void *oc = rand_buf(dt, n, -1, 1), *og = calloc((size_t)n + 1, 8);
        memcpy(og, oc, (size_t)n * (size_t)lmx_dtype_size(dt));
        /* the CPU reference runs in float32 on the widened float16 values */
        void *ac = calloc((size_t)na, 8), *bc = calloc((size_t)nb, 8), *ocw = calloc((size_t)n, 8);
        lmx_cpu_convert(ac, cdt, a, dt, na), lmx_cpu_convert(bc, cdt, b, dt, nb);
        lmx_cpu_convert(ocw, cdt, oc, dt, n);
        CHECK(lmx_cpu_bcast_binary(op, cdt, nd, os, ocw, ac, ast, bc, bst, acc) == 0, "cpu");
        lmx_cpu_convert(oc, dt, ocw, cdt, n);
        CHECK(lmx_cu_bcast_binary(NULL, op, dt, nd, os, og, a, ast, b, bst, acc) == 0, "bc");
        CHECK(max_err(dt, n, og, oc) <= tol_of(dt), "bcast op %d dt %d acc %d: %g", op, dt, acc,
              max_err(dt, n, og, oc));
        if (dt != LMX_FLOAT16) {
          void *g = rand_buf(dt, n, -1, 1);
          for (int side = 0; side < 2; side++) {
            int64_t nd_ = side ? nb : na;
            const int64_t *dstr = side ? bst : ast;
            void *gc = rand_buf(dt, nd_, -1, 1), *gg = calloc((size_t)nd_ + 1, 8);
            memcpy(gg, gc, (size_t)nd_ * (size_t)lmx_dtype_size(dt));
            lmx_cpu_bcast_binary_grad(op, side, dt, nd, os, gc, dstr, nd_, g, a, ast, b, bst, acc);
            CHECK(lmx_cu_bcast_binary_grad(NULL, op, side, dt, nd, os, gg, dstr, nd_, g, a, ast,
                                           b, bst, acc) == 0, "bcg");
            double tol = dt == LMX_FLOAT64 ? 1e-11 : 1e-4;
            CHECK(max_err(dt, nd_, gg, gc) <= tol, "bcast grad op %d side %d dt %d acc %d: %g",
                  op, side, dt, acc, max_err(dt, nd_, gg, gc));
            free(gc), free(gg);
          }
          free(g);
        }
        free(a), free(b), free(oc), free(og), free(ac), free(bc), free(ocw);
      }
  /* the array layer's broadcast op, every dtype */
  for (int it = 0; it < 20; it++)
    for (int dt = 0; dt <= LMX_INT64; dt++)
      for (int op = 0; op < LMX_NUM_BINOPS; op++) {
        int64_t os[LMX_MAX_NDIM], as[LMX_MAX_NDIM], bs[LMX_MAX_NDIM];
        int nd = bc_shapes(os, as, bs);
        int64_t n = volume(nd, os);
        void *a = rand_buf(dt, volume(nd, as), 1, 6), *b = rand_buf(dt, volume(nd, bs), 1, 6);
        void *oc = calloc((size_t)n + 1, 8), *og = calloc((size_t)n + 1, 8);
        lmx_cpu_binary(op, dt, nd, os, oc, as, a, bs, b);
        CHECK(lmx_cu_binary(NULL, op, dt, nd, os, og, as, a, bs, b) == 0, "binary");
        double e = max_err(dt, n, og, oc);
        /* exact but for float16 (the CPU computes in double) and pow (libm's vs CUDA's) */
        int exact = dt != LMX_FLOAT16 && op != LMX_BIN_POW;
        CHECK(exact ? e == 0 : e <= tol_of(dt), "array binary op %d dt %d: %g", op, dt, e);
        free(a), free(b), free(oc), free(og);
      }
  int64_t os[1] = {4}, st[1] = {1};
  CHECK(lmx_cu_bcast_binary(NULL, 99, LMX_FLOAT32, 1, os, NULL, NULL, st, NULL, st, 0) == -1, "op");
  CHECK(lmx_cu_bcast_binary(NULL, 0, LMX_INT8, 1, os, NULL, NULL, st, NULL, st, 0) == -1, "dt");
}

/* random reduction: shape, axis mask -> ystr, ysize */
static int red_plan(int64_t *sh, int64_t *ystr, int64_t *ysize, int big) {
  int nd;
  if (big == 1) nd = 2, sh[0] = 1 + irand(4), sh[1] = 65 + irand(400);          /* rows */
  else if (big == 2) nd = 3, sh[0] = 1 + irand(3), sh[1] = 70 + irand(200), sh[2] = 1 + irand(5);
  else nd = rand_shape(sh, 4, 9);
  if (irand(10) == 0) sh[irand(nd)] = 0; /* an empty axis */
  int64_t acc = 1;
  int any = 0;
  for (int d = nd - 1; d >= 0; d--) {
    int red = big ? d == 1 : irand(2) == 0;
    any |= red;
    ystr[d] = red ? 0 : acc;
    if (!red) acc *= sh[d];
  }
  (void)any;
  *ysize = acc;
  return nd;
}

/* Few outputs (1, 3) over 2^22 elements: the split path gives each output many blocks
 * (checked through the simulator's thread count: one block per output would be 256
 * threads each), and the result equals the CPU's exactly (values k/8, |k| <= 4: every
 * partial sum is exact in float32) and bit for bit from run to run on random values. */
static void test_reduce_split(void) {
  const int64_t N = (int64_t)1 << 22;
  for (int dti = 0; dti < 2; dti++)
    for (int outs = 1; outs <= 3; outs += 2)
      for (int cols = 0; cols < 2 && (outs > 1 || !cols); cols++) {
        int dt = dti ? LMX_FLOAT16 : LMX_FLOAT32;
        int64_t per = N / outs, n = per * outs, sh[2], ystr[2]; /* about 2^22 in all */
        int nd = outs == 1 ? 1 : 2;
        if (outs == 1) sh[0] = N, ystr[0] = 0;
        else if (cols) sh[0] = per, sh[1] = outs, ystr[0] = 0, ystr[1] = 1;
        else sh[0] = outs, sh[1] = per, ystr[0] = 1, ystr[1] = 0;
        float *xf = malloc((size_t)n * 4), yf[3], yc[3];
        void *x = malloc((size_t)n * 4), *yg = calloc(3, 4), *yg2 = calloc(3, 4);
        for (int64_t i = 0; i < n; i++) xf[i] = (float)((i * 7919 + i / 5) % 9 - 4) / 8.0f;
        lmx_cpu_convert(x, dt, xf, LMX_FLOAT32, n);
        lmx_cpu_reduce(LMX_RED_SUM, LMX_FLOAT32, nd, sh, xf, yf, ystr, outs, 1, 0);
        lmx_cpu_convert(yc, dt, yf, LMX_FLOAT32, outs); /* float16: the exact sum rounded */
        long long l0, t0, b0, l1, t1, b1;
        lmx_sim_stats(&l0, &t0, &b0);
        CHECK(lmx_cu_reduce(NULL, LMX_RED_SUM, dt, nd, sh, x, yg, ystr, outs, 1, 0) == 0,
              "split sum rc");
        lmx_sim_stats(&l1, &t1, &b1);
        CHECK(memcmp(yg, yc, (size_t)outs * (size_t)lmx_dtype_size(dt)) == 0,
              "split sum dt %d outs %d cols %d: %g, cpu %g", dt, outs, cols,
              lmx_load_f64(yg, dt, 0), lmx_load_f64(yc, dt, 0));
        CHECK(t1 - t0 >= 64 * 256 * outs, "split sum dt %d outs %d cols %d: %lld threads",
              dt, outs, cols, t1 - t0);
        /* random values: close to a float64 reference, identical on a second run; req ADD
         * (float32's serial CPU sum of 2^22 values is itself off by ~1e-3 here) */
        for (int64_t i = 0; i < n; i++) xf[i] = (float)(((i * 2654435761u) >> 7) % 20001) / 1e4f - 1;
        lmx_cpu_convert(x, dt, xf, LMX_FLOAT32, n);
        lmx_cpu_convert(xf, LMX_FLOAT32, x, dt, n);
        double mean[3] = {0, 0, 0}, norm[3] = {0, 0, 0};
        for (int64_t i = 0; i < n; i++) {
          int o = outs == 1 ? 0 : cols ? (int)(i % outs) : (int)(i / per);
          mean[o] += xf[i], norm[o] += (double)xf[i] * xf[i];
        }
        double sc = 1.0 / (double)per;
        CHECK(lmx_cu_reduce(NULL, LMX_RED_MEAN, dt, nd, sh, x, yg, ystr, outs, sc, 0) == 0, "rc");
        CHECK(lmx_cu_reduce(NULL, LMX_RED_MEAN, dt, nd, sh, x, yg2, ystr, outs, sc, 0) == 0, "rc");
        CHECK(memcmp(yg, yg2, (size_t)outs * (size_t)lmx_dtype_size(dt)) == 0,
              "split mean differs between runs (dt %d outs %d cols %d)", dt, outs, cols);
        for (int o = 0; o < outs; o++)
          CHECK(fabs(lmx_load_f64(yg, dt, o) - mean[o] * sc) <= (dti ? 1e-3 : 1e-6), "split "
                "mean dt %d outs %d cols %d: %g, float64 %g", dt, outs, cols,
                lmx_load_f64(yg, dt, o), mean[o] * sc);
        CHECK(lmx_cu_reduce(NULL, LMX_RED_MEAN, dt, nd, sh, x, yg2, ystr, outs, sc, 1) == 0, "rc");
        for (int o = 0; o < outs; o++)
          CHECK(fabs(lmx_load_f64(yg2, dt, o) - 2 * lmx_load_f64(yg, dt, o)) <= (dti ? 2e-3 : 1e-6),
                "split mean req add dt %d outs %d", dt, outs);
        /* norm2 through the same two passes */
        CHECK(lmx_cu_reduce(NULL, LMX_RED_NORM2, dt, nd, sh, x, yg, ystr, outs, 1, 0) == 0, "rc");
        for (int o = 0; o < outs; o++)
          CHECK(fabs(lmx_load_f64(yg, dt, o) - sqrt(norm[o])) <= (dti ? 1e-3 : 1e-5) * sqrt(norm[o]),
                "split norm2 dt %d: %g, float64 %g", dt, lmx_load_f64(yg, dt, o), sqrt(norm[o]));
        free(xf), free(x), free(yg), free(yg2);
      }
}

static void test_reduce(void) {
  for (int it = 0; it < 90; it++)
    for (int di = 0; di < 2; di++)
      for (int kind = LMX_RED_SUM; kind <= LMX_RED_NORM2; kind++) {
        int dt = di ? LMX_FLOAT64 : LMX_FLOAT32;
        int64_t sh[LMX_MAX_NDIM], ystr[LMX_MAX_NDIM], ysize;
        int nd = red_plan(sh, ystr, &ysize, it % 3);
        int64_t n = volume(nd, sh);
        int lin = kind == LMX_RED_SUM || kind == LMX_RED_MEAN, acc = lin && it % 2;
        double lo = kind == LMX_RED_PROD ? 0.9 : -1, hi = kind == LMX_RED_PROD ? 1.1 : 1;
        void *x = rand_buf(dt, n, lo, hi);
        double scale = kind == LMX_RED_MEAN && n ? (double)ysize / (double)n : 1.0;
        void *yc = rand_buf(dt, ysize, -1, 1), *yg = calloc((size_t)ysize + 1, 8);
        memcpy(yg, yc, (size_t)ysize * (size_t)lmx_dtype_size(dt));
        lmx_cpu_reduce(kind, dt, nd, sh, x, yc, ystr, ysize, scale, acc);
        CHECK(lmx_cu_reduce(NULL, kind, dt, nd, sh, x, yg, ystr, ysize, scale, acc) == 0, "red");
        double tol = dt == LMX_FLOAT64 ? 1e-12 : 1e-5;
        CHECK(max_err(dt, ysize, yg, yc) <= tol, "reduce kind %d dt %d nd %d acc %d: %g", kind,
              dt, nd, acc, max_err(dt, ysize, yg, yc));
        /* gradient from the CPU's forward output */
        void *y = calloc((size_t)ysize + 1, 8), *g = rand_buf(dt, ysize, -1, 1);
        lmx_cpu_reduce(kind, dt, nd, sh, x, y, ystr, ysize, scale, 0);
        void *gc = rand_buf(dt, n, -1, 1), *gg = calloc((size_t)n + 1, 8);
        memcpy(gg, gc, (size_t)n * (size_t)lmx_dtype_size(dt));
        int bacc = it % 2;
        lmx_cpu_reduce_bwd(kind, dt, nd, sh, gc, x, g, y, ystr, scale, bacc);
        CHECK(lmx_cu_reduce_bwd(NULL, kind, dt, nd, sh, gg, x, g, y, ystr, scale, bacc) == 0, "rb");
        CHECK(max_err(dt, n, gg, gc) <= tol, "reduce bwd kind %d dt %d: %g", kind, dt,
              max_err(dt, n, gg, gc));
        free(x), free(yc), free(yg), free(y), free(g), free(gc), free(gg);
      }
  /* float16: float accumulation, compared with the CPU's float32 on the widened input */
  for (int it = 0; it < 30; it++) {
    int64_t sh[LMX_MAX_NDIM], ystr[LMX_MAX_NDIM], ysize;
    int nd = red_plan(sh, ystr, &ysize, it % 3);
    int64_t n = volume(nd, sh);
    void *x = rand_buf(LMX_FLOAT16, n, -1, 1), *xf = calloc((size_t)n + 1, 4);
    lmx_cpu_convert(xf, LMX_FLOAT32, x, LMX_FLOAT16, n);
    void *yf = calloc((size_t)ysize + 1, 4), *yh = calloc((size_t)ysize + 1, 2);
    void *yg = calloc((size_t)ysize + 1, 2);
    lmx_cpu_reduce(LMX_RED_SUM, LMX_FLOAT32, nd, sh, xf, yf, ystr, ysize, 1, 0);
    lmx_cpu_convert(yh, LMX_FLOAT16, yf, LMX_FLOAT32, ysize);
    CHECK(lmx_cu_reduce(NULL, LMX_RED_SUM, LMX_FLOAT16, nd, sh, x, yg, ystr, ysize, 1, 0) == 0,
          "float16 reduce");
    CHECK(max_err(LMX_FLOAT16, ysize, yg, yh) <= 2e-3, "float16 sum: %g",
          max_err(LMX_FLOAT16, ysize, yg, yh));
    free(x), free(xf), free(yf), free(yh), free(yg);
  }
  /* NaN propagates through max, as on the CPU */
  {
    float x[300], y = 0;
    int64_t sh[1] = {300}, ys[1] = {0};
    for (int i = 0; i < 300; i++) x[i] = (float)i;
    x[123] = NAN;
    CHECK(lmx_cu_reduce(NULL, LMX_RED_MAX, LMX_FLOAT32, 1, sh, x, &y, ys, 1, 1, 0) == 0, "nan");
    CHECK(isnan(y), "max over a NaN gives %g", y);
  }
  /* argmax / argmin with ties (first index wins) */
  for (int it = 0; it < 40; it++)
    for (int di = 0; di < 2; di++)
      for (int want_min = 0; want_min < 2; want_min++) {
        int dt = di ? LMX_FLOAT64 : LMX_FLOAT32;
        int64_t outer = 1 + irand(5), len = 1 + irand(70), inner = 1 + irand(6);
        int64_t n = outer * len * inner;
        void *x = calloc((size_t)n, 8);
        for (int64_t i = 0; i < n; i++) lmx_store_f64(x, dt, i, (double)irand(4));
        void *yc = calloc((size_t)(outer * inner), 8), *yg = calloc((size_t)(outer * inner), 8);
        lmx_cpu_argmax(want_min, dt, outer, len, inner, x, yc);
        CHECK(lmx_cu_argmax(NULL, want_min, dt, outer, len, inner, x, yg) == 0, "argmax");
        CHECK(max_err(dt, outer * inner, yg, yc) == 0, "argmax min %d dt %d", want_min, dt);
        free(x), free(yc), free(yg);
      }
  int64_t sh[1] = {4}, ys[1] = {0};
  CHECK(lmx_cu_reduce(NULL, 42, LMX_FLOAT32, 1, sh, NULL, NULL, ys, 1, 1, 0) == -1, "kind");
  CHECK(lmx_cu_reduce(NULL, LMX_RED_SUM, LMX_INT64, 1, sh, NULL, NULL, ys, 1, 1, 0) == -1, "dt");
  CHECK(lmx_cu_reduce_bwd(NULL, LMX_RED_MAX, LMX_FLOAT32, 1, sh, NULL, NULL, NULL, NULL, ys, 1,
                          0) == -1, "max gradient without x / y refused");
  CHECK(lmx_cu_argmax(NULL, 0, LMX_FLOAT32, 1, 0, 1, NULL, NULL) == -1, "empty axis refused");
}

CU_TEST_MAIN_BEGIN
  test_copies();
  test_bcast();
  test_reduce();
  test_reduce_split();
CU_TEST_MAIN_END
#endif
