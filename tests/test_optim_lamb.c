/* test_optim_lamb.c — LAMB's CPU kernels (kernels/cpu/optim_lamb.c) against a scalar
 * double reference of MXNet 1.9's LambUpdatePhaseOne/TwoKernel written here: float32 and
 * float64, write and add requests, phase two in place, the multi-precision phase one
 * across its 2048-element blocks (sizes 0, 1, 2047, 2048, 2049, 5000), bounds and the
 * zero-norm rule, and -1 for an unsupported dtype. The operators, the optimizer and the
 * CUDA kernels are checked in spec/optimizer_lamb_spec.lua. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/cpu/cpu_kernels.h"
#include "check.h"
#include "tensor/dtype.h"

static double frand(void) { return (double)rand() / RAND_MAX * 2 - 1; }

/* one phase-one element in double; m, v updated */
static double ref1(const lmx_cpu_lamb1 *u, double w, double g, double *m, double *v) {
  g *= u->rescale;
  if (u->clip >= 0) g = g > u->clip ? u->clip : g < -u->clip ? -u->clip : g;
  *m = u->beta1 * *m + (1 - u->beta1) * g;
  *v = u->beta2 * *v + (1 - u->beta2) * g * g;
  double mh = *m, vh = *v;
  if (u->bias_correction) mh /= 1 - u->beta1_t, vh /= 1 - u->beta2_t;
  return mh / (sqrt(vh) + u->epsilon) + u->wd * w;
}

static int near(double a, double b, double tol) { return fabs(a - b) <= tol * fmax(1, fabs(b)); }

static void phase1_cases(void) {
  lmx_cpu_lamb1 u = {.beta1 = 0.8, .beta2 = 0.99, .epsilon = 1e-4, .wd = 0.05, .rescale = 1.5,
                     .clip = 0.6, .beta1_t = pow(0.8, 3), .beta2_t = pow(0.99, 3),
                     .bias_correction = 1};
  enum { N = 37 };
  for (int bc = 0; bc < 2; bc++) {
    u.bias_correction = bc;
    double rm[N], rv[N], want[N];
    float wf[N], gf[N], mf[N], vf[N], of[N];
    for (int i = 0; i < N; i++) {
      wf[i] = (float)frand(), gf[i] = (float)frand(), mf[i] = (float)(0.1 * frand());
      vf[i] = (float)(0.01 * (frand() + 1));
      rm[i] = mf[i], rv[i] = vf[i];
      want[i] = ref1(&u, wf[i], gf[i], &rm[i], &rv[i]);
      of[i] = -7.0f; /* overwritten (write request) */
    }
    CHECK(lmx_cpu_lamb_phase1(LMX_FLOAT32, &u, N, of, wf, gf, mf, vf, 0) == 0);
    for (int i = 0; i < N; i++) {
      CHECK(near(of[i], want[i], 1e-5), "f32 %d: %g vs %g", i, of[i], want[i]);
      CHECK(near(mf[i], rm[i], 1e-6) && near(vf[i], rv[i], 1e-5), "f32 states %d", i);
    }
    /* float64 with the add request: the reference plus the 0.5 already there */
    double w2[N], g2[N], m2[N], v2[N], o2[N];
    for (int i = 0; i < N; i++) {
      w2[i] = frand(), g2[i] = frand(), m2[i] = 0.1 * frand(), v2[i] = 0.01 * (frand() + 1);
      o2[i] = 0.5;
    }
    double m3[N], v3[N];
    memcpy(m3, m2, sizeof m2), memcpy(v3, v2, sizeof v2);
    CHECK(lmx_cpu_lamb_phase1(LMX_FLOAT64, &u, N, o2, w2, g2, m2, v2, 1) == 0);
    for (int i = 0; i < N; i++) {
      double r = ref1(&u, w2[i], g2[i], &m3[i], &v3[i]);
      CHECK(near(o2[i], 0.5 + r, 1e-13), "f64 add %d", i);
      CHECK(near(m2[i], m3[i], 1e-15) && near(v2[i], v3[i], 1e-15), "f64 states %d", i);
    }
  }
  CHECK(lmx_cpu_lamb_phase1(LMX_INT32, &u, 1, NULL, NULL, NULL, NULL, NULL, 0) == -1);
}

static void phase2_cases(void) {
  /* weight (3, 4), g (1, -2), lr 0.1: rate = 0.1 * r1'/r2 */
  struct {
    double r1, r2, lo, hi, rate;
  } cs[] = {
      {5, 1, -1, -1, 0.5},  {5, 2, -1, -1, 0.25}, {5, 1, -1, 2, 0.2}, {5, 1, 10, -1, 1.0},
      {0.5, 1, 1, 4, 0.1},  {0, 1, -1, -1, 0.1},  {5, 0, -1, -1, 0.1}, {5, 1, -1, 0, 0.1},
      {5, 1, 0, -1, 0.5},
  };
  for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
    lmx_cpu_lamb2 u = {0.1, cs[k].lo, cs[k].hi};
    double w[2] = {3, 4}, g[2] = {1, -2}, r1 = cs[k].r1, r2 = cs[k].r2;
    float wf[2] = {3, 4}, gf[2] = {1, -2}, r1f = (float)r1, r2f = (float)r2;
    CHECK(lmx_cpu_lamb_phase2(LMX_FLOAT64, &u, 2, w, w, g, &r1, &r2, 0) == 0); /* in place */
    CHECK(lmx_cpu_lamb_phase2(LMX_FLOAT32, &u, 2, wf, wf, gf, &r1f, &r2f, 0) == 0);
    double e0 = 3 - cs[k].rate, e1 = 4 + 2 * cs[k].rate;
    CHECK(near(w[0], e0, 1e-14) && near(w[1], e1, 1e-14), "case %zu: %g %g", k, w[0], w[1]);
    CHECK(near(wf[0], e0, 1e-6) && near(wf[1], e1, 1e-6), "case %zu f32", k);
  }
  lmx_cpu_lamb2 u = {0.1, -1, -1};
  double w = 1, g = 1, r1 = 2, r2 = 4, out = 10;
  CHECK(lmx_cpu_lamb_phase2(LMX_FLOAT64, &u, 1, &out, &w, &g, &r1, &r2, 1) == 0);
  CHECK(near(out, 10 + 1 - 0.05, 1e-14), "add: %g", out);
  CHECK(lmx_cpu_lamb_phase2(LMX_FLOAT16, &u, 1, &out, &w, &g, &r1, &r2, 0) == -1);
}

/* the multi-precision phase one over sizes around its block size */
static void phase1_mp_cases(void) {
  lmx_cpu_lamb1 u = {.beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-6, .wd = 0.01, .rescale = 1,
                     .clip = -1, .beta1_t = 0.9, .beta2_t = 0.999, .bias_correction = 1};
  static const int64_t sizes[] = {0, 1, 2047, 2048, 2049, 5000};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    int64_t n = sizes[k];
    size_t cap = (size_t)(n ? n : 1);
    uint16_t *g16 = malloc(cap * sizeof *g16);
    float *w32 = malloc(cap * sizeof *w32), *m = malloc(cap * sizeof *m);
    float *v = malloc(cap * sizeof *v), *out = malloc(cap * sizeof *out);
    double *rm = malloc(cap * sizeof *rm), *rv = malloc(cap * sizeof *rv);
    for (int64_t i = 0; i < n; i++) {
      g16[i] = lmx_f32_to_f16((float)frand());
      w32[i] = (float)frand(), m[i] = 0, v[i] = 0, rm[i] = 0, rv[i] = 0;
    }
    CHECK(lmx_cpu_lamb_phase1_mp(&u, n, out, w32, g16, m, v, 0) == 0);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
      double want = ref1(&u, w32[i], lmx_f16_to_f32(g16[i]), &rm[i], &rv[i]);
      if (!near(out[i], want, 1e-5) || !near(m[i], rm[i], 1e-6)) bad++;
    }
    CHECK(bad == 0, "n = %lld: %d elements differ", (long long)n, bad);
    free(g16), free(w32), free(m), free(v), free(out), free(rm), free(rv);
  }
}

int main(void) {
  srand(17);
  phase1_cases();
  phase2_cases();
  phase1_mp_cases();
  return check_summary();
}
