/* manip.c — CPU kernels of the generator operators (_arange, _contrib_arange_like):
 * values computed in double, stored in any dtype through lmx_cpu_convert in chunks. */
#include "cpu_kernels.h"

void lmx_cpu_range(int dt, int64_t n, void *y, double start, double step, int64_t repeat) {
  enum { CH = 256 };
  double buf[CH];
  int64_t es = lmx_dtype_size(dt);
  for (int64_t i0 = 0; i0 < n; i0 += CH) {
    int64_t m = n - i0 < CH ? n - i0 : CH;
    for (int64_t j = 0; j < m; j++) buf[j] = start + (double)((i0 + j) / repeat) * step;
    lmx_cpu_convert((char *)y + i0 * es, dt, buf, LMX_FLOAT64, m);
  }
}
