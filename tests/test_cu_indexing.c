/* test_cu_indexing.c — the CUDA indexing kernels (kernels/cuda/indexing.cu) on the
 * simulator against host references that follow the CPU glue's loops (src/ops/cpu/
 * indexing.c, sequence.c; it has no kernel functions to call): take in the three modes
 * with out-of-range, negative, fractional and NaN indices of several dtypes (raise mode
 * must flag them and still read in bounds), take's scatter backward with repeated
 * indices (bit-identical in float32 / float64), one_hot, where (same shape and row
 * condition) and its gradients, SequenceMask / Last / Reverse with and without lengths on
 * both axes, req ADD, float16. Sizes are random and not multiples of the block, rows
 * longer than a block included. Prints "N passed, N failed". */
#ifndef LUAMX_CUDA_SIM
#include <stdio.h>

int main(void) {
  printf("skipped: needs the CUDA simulator build (-DLUAMX_CUDA=SIM)\n");
  return 0;
}
#else
#include "cu_check.h"
#include "../kernels/cuda/cuda_kernels.h"

static const int FLOATS[3] = {LMX_FLOAT32, LMX_FLOAT64, LMX_FLOAT16};

/* a random index value around [0, A): mostly valid, some out of range / fractional / NaN */
static double rand_index(int64_t A, int wild) {
  double u = urand(0, 1);
  if (!wild || u < 0.7) return (double)irand(A);
  if (u < 0.8) return (double)irand(A) + 0.5;
  if (u < 0.9) return -1.0 - (double)irand(2 * A + 1);
  if (u < 0.97) return (double)(A + irand(2 * A + 1));
  return NAN;
}

static void *index_buf(int idt, int64_t K, int64_t A, int wild) {
  void *p = calloc((size_t)(K + 2), 8);
  for (int64_t k = 0; k < K; k++) {
    double v = rand_index(A, wild && (idt == LMX_FLOAT32 || idt == LMX_FLOAT64) ? 1 : 0);
    if (wild && idt != LMX_FLOAT32 && idt != LMX_FLOAT64 && urand(0, 1) < 0.2)
      v = urand(0, 1) < 0.5 ? -1.0 - (double)irand(A + 1) : (double)(A + irand(A + 1));
    if (idt == LMX_UINT8 || idt == LMX_INT8) v = fmod(fabs(v), 100);
    lmx_store_f64(p, idt, k, v);
  }
  return p;
}

/* the CPU glue's pick(); returns -1 where raise mode fails */
static int64_t ref_pick(const void *idx, int idt, int64_t k, int64_t A, int mode) {
  double v = lmx_load_f64(idx, idt, k);
  int64_t i = isfinite(v) ? (int64_t)v : 0;
  if (i >= 0 && i < A) return i;
  if (mode == LMX_CU_TAKE_WRAP) return ((i % A) + A) % A;
  if (mode == LMX_CU_TAKE_RAISE) return -1;
  return i < 0 ? 0 : A - 1;
}

static void test_take(void) {
  static const int IDT[4] = {LMX_FLOAT32, LMX_INT32, LMX_INT64, LMX_FLOAT16};
  for (int it = 0; it < 60; it++) {
    int dt = it % 4 == 3 ? LMX_INT32 : FLOATS[it % 3], idt = IDT[irand(4)];
    int mode = (int)irand(3);
    int64_t outer = 1 + irand(3), A = 1 + irand(9), inner = 1 + irand(it % 5 == 0 ? 300 : 20);
    int64_t K = irand(12);
    size_t es = (size_t)lmx_dtype_size(dt);
    void *a = rand_buf(dt, outer * A * inner, -4, 4), *idx = index_buf(idt, K, A, 1);
    void *out = calloc((size_t)(outer * K * inner + 1), es), *ref = calloc((size_t)(outer * K * inner + 1), es);
    int want_bad = 0;
    lmx_cu_raise_word w = {0, -1, 0};
    lmx_cu_raise r = {&w, 41};
    for (int64_t k = 0; k < K; k++) {
      int64_t i = ref_pick(idx, idt, k, A, mode);
      if (i < 0) want_bad = 1, i = ref_pick(idx, idt, k, A, LMX_CU_TAKE_CLIP);
      for (int64_t o = 0; o < outer; o++)
        memcpy((char *)ref + (size_t)((o * K + k) * inner) * es,
               (char *)a + (size_t)((o * A + i) * inner) * es, (size_t)inner * es);
    }
    int rc = lmx_cu_take(NULL, dt, idt, outer, A, inner, K, out, a, idx, mode, r);
    CHECK(rc == 0, "take rc %d", rc);
    CHECK(memcmp(out, ref, (size_t)(outer * K * inner) * es) == 0,
          "take dt %d idt %d mode %d outer %lld A %lld inner %lld K %lld", dt, idt, mode,
          (long long)outer, (long long)A, (long long)inner, (long long)K);
    int bad = w.tag != 0;
    CHECK(bad == want_bad, "raise word %d, expected %d (mode %d)", bad, want_bad, mode);
    if (bad) { /* the word names this launch and one of the bad indices */
      CHECK(w.tag == 41, "raise word tag %llu", w.tag);
      CHECK(w.pos >= 0 && w.pos < K && ref_pick(idx, idt, w.pos, A, mode) < 0 &&
                (w.value < 0 || w.value >= A), "raise word names index %lld at %lld", w.value, w.pos);
    }
    free(a), free(idx), free(out), free(ref);
  }
  /* unsupported index dtype / mode, empty axis */
  float x[4] = {0}, y[4] = {0}, i0[1] = {0};
  lmx_cu_raise none = {NULL, 0};
  CHECK(lmx_cu_take(NULL, LMX_FLOAT32, 9, 1, 4, 1, 1, y, x, i0, 0, none) == -1, "bad idt");
  CHECK(lmx_cu_take(NULL, LMX_FLOAT32, LMX_FLOAT32, 1, 4, 1, 1, y, x, i0, 7, none) == -1, "bad mode");
  CHECK(lmx_cu_take(NULL, LMX_FLOAT32, LMX_FLOAT32, 1, 0, 1, 1, y, x, i0, 0, none) == -1, "A 0");
  CHECK(lmx_cu_take(NULL, 11, LMX_FLOAT32, 1, 4, 1, 1, y, x, i0, 0, none) == -1, "bad dt");
}

static void test_take_bwd(void) {
  for (int it = 0; it < 60; it++) {
    int dt = FLOATS[it % 3], idt = it % 2 ? LMX_FLOAT32 : LMX_INT64;
    int mode = (int)irand(3), acc = (int)irand(2);
    int64_t outer = 1 + irand(3), A = 1 + irand(7), inner = 1 + irand(it % 7 == 0 ? 400 : 30);
    int64_t K = irand(25); /* more indices than rows: repeats */
    int64_t na = outer * A * inner;
    void *g = rand_buf(dt, outer * K * inner, -2, 2), *idx = index_buf(idt, K, A, 1);
    void *ga = rand_buf(dt, na, -1, 1), *ref = calloc((size_t)(na + 1), 8);
    memcpy(ref, ga, (size_t)na * (size_t)lmx_dtype_size(dt));
    /* the CPU glue's loop: zero (WRITE), then k outer, o inner, one rounding per add */
    if (!acc)
      for (int64_t e = 0; e < na; e++) lmx_store_f64(ref, dt, e, 0);
    for (int64_t k = 0; k < K; k++) {
      int64_t i = ref_pick(idx, idt, k, A, mode);
      if (i < 0) i = ref_pick(idx, idt, k, A, LMX_CU_TAKE_CLIP);
      for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
          int64_t d = (o * A + i) * inner + j, s = (o * K + k) * inner + j;
          if (dt == LMX_FLOAT64)
            lmx_store_f64(ref, dt, d, lmx_load_f64(ref, dt, d) + lmx_load_f64(g, dt, s));
          else
            lmx_store_f64(ref, dt, d, (double)((float)lmx_load_f64(ref, dt, d) +
                                               (float)lmx_load_f64(g, dt, s)));
        }
    }
    int rc = lmx_cu_take_bwd(NULL, dt, idt, outer, A, inner, K, ga, g, idx, mode, acc);
    CHECK(rc == 0, "take_bwd rc %d", rc);
    CHECK(memcmp(ga, ref, (size_t)na * (size_t)lmx_dtype_size(dt)) == 0,
          "take_bwd dt %d mode %d acc %d outer %lld A %lld inner %lld K %lld: err %g", dt, mode,
          acc, (long long)outer, (long long)A, (long long)inner, (long long)K,
          max_err(dt, na, ga, ref));
    free(g), free(idx), free(ga), free(ref);
  }
  float x[4] = {0}, y[4] = {0}, i0[1] = {0};
  CHECK(lmx_cu_take_bwd(NULL, LMX_INT32, LMX_FLOAT32, 1, 4, 1, 1, y, x, i0, 0, 0) == -1,
        "integer gradient refused");
}

static void test_one_hot(void) {
  static const int ODT[4] = {LMX_FLOAT32, LMX_INT32, LMX_FLOAT16, LMX_UINT8};
  for (int it = 0; it < 30; it++) {
    int odt = ODT[it % 4], idt = it % 3 ? LMX_FLOAT32 : LMX_INT32;
    int64_t K = irand(20), depth = 1 + irand(it % 6 == 0 ? 600 : 12);
    void *idx = index_buf(idt, K, depth, 1);
    double on = (double)(1 + irand(5)), off = (double)irand(2);
    void *out = rand_buf(odt, K * depth, 0, 9), *ref = calloc((size_t)(K * depth + 1), 8);
    for (int64_t e = 0; e < K * depth; e++) lmx_store_f64(ref, odt, e, off);
    for (int64_t k = 0; k < K; k++) {
      double v = lmx_load_f64(idx, idt, k);
      if (v >= 0 && v < (double)depth) lmx_store_f64(ref, odt, k * depth + (int64_t)v, on);
    }
    CHECK(lmx_cu_one_hot(NULL, odt, idt, K, depth, out, idx, on, off) == 0, "one_hot rc");
    CHECK(memcmp(out, ref, (size_t)(K * depth) * (size_t)lmx_dtype_size(odt)) == 0,
          "one_hot odt %d K %lld depth %lld", odt, (long long)K, (long long)depth);
    free(idx), free(out), free(ref);
  }
}

static void test_where(void) {
  for (int it = 0; it < 40; it++) {
    int dt = FLOATS[it % 3], cdt = it % 2 ? LMX_FLOAT32 : LMX_UINT8, acc = (int)irand(2);
    int64_t rows = 1 + irand(9), row = it % 4 ? 1 + irand(it % 8 == 1 ? 300 : 7) : 1;
    int64_t n = rows * row, nc = row == 1 ? n : rows;
    void *cond = calloc((size_t)(nc + 1), 8);
    for (int64_t i = 0; i < nc; i++) lmx_store_f64(cond, cdt, i, irand(3) == 0 ? 0 : (double)irand(3));
    void *x = rand_buf(dt, n, -3, 3), *y = rand_buf(dt, n, -3, 3), *g = rand_buf(dt, n, -3, 3);
    void *out = rand_buf(dt, n, -1, 1), *ref = calloc((size_t)(n + 1), 8);
    memcpy(ref, out, (size_t)n * (size_t)lmx_dtype_size(dt));
    for (int64_t i = 0; i < n; i++) {
      int c = lmx_load_f64(cond, cdt, i / row) != 0;
      double v = lmx_load_f64(c ? x : y, dt, i);
      if (acc) v += lmx_load_f64(ref, dt, i);
      lmx_store_f64(ref, dt, i, v);
    }
    CHECK(lmx_cu_where(NULL, dt, cdt, n, row, out, cond, x, y, acc) == 0, "where rc");
    CHECK(max_err(dt, n, out, ref) <= tol_of(dt), "where dt %d row %lld acc %d: err %g", dt,
          (long long)row, acc, max_err(dt, n, out, ref));
    for (int side = 1; side <= 2; side++) {
      void *gs = rand_buf(dt, n, -1, 1), *gr = calloc((size_t)(n + 1), 8);
      memcpy(gr, gs, (size_t)n * (size_t)lmx_dtype_size(dt));
      for (int64_t i = 0; i < n; i++) {
        int c = lmx_load_f64(cond, cdt, i / row) != 0;
        double v = (c == (side == 1)) ? lmx_load_f64(g, dt, i) : 0.0;
        if (acc) v += lmx_load_f64(gr, dt, i);
        lmx_store_f64(gr, dt, i, v);
      }
      CHECK(lmx_cu_where_bwd(NULL, dt, cdt, n, row, side, gs, g, cond, acc) == 0, "where_bwd rc");
      CHECK(max_err(dt, n, gs, gr) <= tol_of(dt), "where_bwd side %d dt %d: err %g", side, dt,
            max_err(dt, n, gs, gr));
      free(gs), free(gr);
    }
    free(cond), free(x), free(y), free(g), free(out), free(ref);
  }
}

/* ---- Sequence* references (the CPU glue's seq_len and block loops) ---------------------- */

typedef struct {
  int64_t T, N, R;
  int axis;
  const void *len;
  int ldt;
} seqg;

static int64_t ref_len(const seqg *q, int64_t b, int64_t lo) {
  int64_t L = q->T;
  if (q->len) {
    double v = lmx_load_f64(q->len, q->ldt, b);
    L = v != v ? 0 : v > (double)q->T ? q->T : (int64_t)v;
  }
  return L < lo ? (lo <= q->T ? lo : q->T) : L;
}

static int64_t ref_at(const seqg *q, int64_t t, int64_t b, int64_t r) {
  return (q->axis == 0 ? t * q->N + b : b * q->T + t) * q->R + r;
}

static void add_or_set(void *p, int dt, int64_t i, double v, int acc) {
  lmx_store_f64(p, dt, i, acc ? lmx_load_f64(p, dt, i) + v : v);
}

static void test_sequence(void) {
  for (int it = 0; it < 60; it++) {
    int dt = FLOATS[it % 3], acc = (int)irand(2), ldt = it % 2 ? LMX_FLOAT32 : LMX_INT32;
    seqg q = {1 + irand(6), 1 + irand(5), 1 + irand(it % 9 == 0 ? 280 : 6), (int)irand(2), NULL,
              ldt};
    int64_t n = q.T * q.N * q.R;
    void *len = calloc((size_t)(q.N + 1), 8);
    for (int64_t b = 0; b < q.N; b++) {
      double u = urand(0, 1);
      double v = u < 0.6 ? (double)irand(q.T + 1) : u < 0.75 ? (double)(q.T + 3) : u < 0.9 ? -2.0
                 : ldt == LMX_FLOAT32 ? (u < 0.95 ? NAN : 1.5) : 0.0;
      lmx_store_f64(len, ldt, b, v);
    }
    if (it % 4 == 0) q.len = NULL;
    else q.len = len;
    const void *lp = q.len;
    void *x = rand_buf(dt, n, -3, 3), *g = rand_buf(dt, q.N * q.R, -3, 3);
    double value = it % 3 ? -1.5 : 0.0;
    /* SequenceMask */
    void *out = rand_buf(dt, n, -1, 1), *ref = calloc((size_t)(n + 1), 8);
    memcpy(ref, out, (size_t)n * (size_t)lmx_dtype_size(dt));
    for (int64_t b = 0; b < q.N; b++)
      for (int64_t t = 0; t < q.T; t++)
        for (int64_t r = 0; r < q.R; r++) {
          int64_t e = ref_at(&q, t, b, r);
          add_or_set(ref, dt, e, t < ref_len(&q, b, 0) ? lmx_load_f64(x, dt, e) : value, acc);
        }
    CHECK(lmx_cu_seq_mask(NULL, dt, ldt, q.axis, q.T, q.N, q.R, out, x, lp, value, acc) == 0,
          "seq_mask rc");
    CHECK(max_err(dt, n, out, ref) <= tol_of(dt), "seq_mask dt %d axis %d acc %d: err %g", dt,
          q.axis, acc, max_err(dt, n, out, ref));
    /* SequenceMask in place (the gradient pass reads and writes the same buffer) */
    memcpy(ref, x, (size_t)n * (size_t)lmx_dtype_size(dt));
    for (int64_t b = 0; b < q.N; b++)
      for (int64_t t = ref_len(&q, b, 0); t < q.T; t++)
        for (int64_t r = 0; r < q.R; r++) lmx_store_f64(ref, dt, ref_at(&q, t, b, r), 0);
    void *xi = calloc((size_t)(n + 1), 8);
    memcpy(xi, x, (size_t)n * (size_t)lmx_dtype_size(dt));
    CHECK(lmx_cu_seq_mask(NULL, dt, ldt, q.axis, q.T, q.N, q.R, xi, xi, lp, 0.0, 0) == 0, "rc");
    CHECK(max_err(dt, n, xi, ref) == 0, "seq_mask in place dt %d", dt);
    /* SequenceReverse */
    memcpy(ref, out, (size_t)n * (size_t)lmx_dtype_size(dt));
    for (int64_t b = 0; b < q.N; b++) {
      int64_t L = ref_len(&q, b, 0);
      for (int64_t t = 0; t < q.T; t++)
        for (int64_t r = 0; r < q.R; r++)
          add_or_set(ref, dt, ref_at(&q, t, b, r),
                     lmx_load_f64(x, dt, ref_at(&q, t < L ? L - 1 - t : t, b, r)), acc);
    }
    CHECK(lmx_cu_seq_reverse(NULL, dt, ldt, q.axis, q.T, q.N, q.R, out, x, lp, acc) == 0,
          "seq_reverse rc");
    CHECK(max_err(dt, n, out, ref) <= tol_of(dt), "seq_reverse dt %d axis %d: err %g", dt,
          q.axis, max_err(dt, n, out, ref));
    CHECK(lmx_cu_seq_reverse(NULL, dt, ldt, q.axis, q.T, q.N, q.R, x, x, lp, 0) == -1,
          "reverse in place refused");
    /* SequenceLast and its gradient */
    void *last = rand_buf(dt, q.N * q.R, -1, 1), *lref = calloc((size_t)(q.N * q.R + 1), 8);
    memcpy(lref, last, (size_t)(q.N * q.R) * (size_t)lmx_dtype_size(dt));
    for (int64_t b = 0; b < q.N; b++)
      for (int64_t r = 0; r < q.R; r++)
        add_or_set(lref, dt, b * q.R + r, lmx_load_f64(x, dt, ref_at(&q, ref_len(&q, b, 1) - 1, b, r)),
                   acc);
    CHECK(lmx_cu_seq_last(NULL, dt, ldt, q.axis, q.T, q.N, q.R, last, x, lp, acc) == 0, "rc");
    CHECK(max_err(dt, q.N * q.R, last, lref) <= tol_of(dt), "seq_last dt %d axis %d", dt, q.axis);
    memcpy(ref, out, (size_t)n * (size_t)lmx_dtype_size(dt));
    if (!acc)
      for (int64_t e = 0; e < n; e++) lmx_store_f64(ref, dt, e, 0);
    for (int64_t b = 0; b < q.N; b++)
      for (int64_t r = 0; r < q.R; r++) {
        int64_t e = ref_at(&q, ref_len(&q, b, 1) - 1, b, r);
        lmx_store_f64(ref, dt, e, lmx_load_f64(ref, dt, e) + lmx_load_f64(g, dt, b * q.R + r));
      }
    CHECK(lmx_cu_seq_last_bwd(NULL, dt, ldt, q.axis, q.T, q.N, q.R, out, g, lp, acc) == 0, "rc");
    CHECK(max_err(dt, n, out, ref) <= tol_of(dt), "seq_last_bwd dt %d axis %d acc %d", dt,
          q.axis, acc);
    free(len), free(x), free(g), free(out), free(ref), free(xi), free(last), free(lref);
  }
  float d[4] = {0};
  CHECK(lmx_cu_seq_last(NULL, LMX_FLOAT32, LMX_FLOAT32, 0, 0, 2, 2, d, d, NULL, 0) == -1,
        "empty sequence axis refused");
  CHECK(lmx_cu_seq_mask(NULL, LMX_FLOAT32, LMX_FLOAT32, 2, 1, 2, 2, d, d, NULL, 0, 0) == -1,
        "axis 2 refused");
}

CU_TEST_MAIN_BEGIN
  test_take();
  test_take_bwd();
  test_one_hot();
  test_where();
  test_sequence();
CU_TEST_MAIN_END
#endif
