/* api_runtime.c — what the engine runs on: the BLAS it was linked with, as the BLAS
 * reports itself (the CPU features and the kernel choice are in core/cpu_isa.c). */
#define _GNU_SOURCE
#include <cblas.h>
#include <dlfcn.h>
#include <omp.h>

#include "../../kernels/cpu/gemm_route.h"
#include "../../kernels/cpu/cpu_kernels.h"
#include "../ops/cpu/conv_algo.h"
#include "../ops/cpu/cpu_ops.h"
#include "api.h"

int lmx_blas_info(const char **corename, const char **config, const char **path,
                  int *threads) {
  LMX_ENTER();
  if (corename) *corename = openblas_get_corename();
  if (config) *config = openblas_get_config();
  if (threads) *threads = openblas_get_num_threads();
  if (path) {
    Dl_info info;
    *path = dladdr((void *)cblas_sgemm, &info) && info.dli_fname ? info.dli_fname : "";
  }
  return LMX_OK;
}

int lmx_cpu_num_threads(void) { return omp_get_max_threads(); }

const char *lmx_cpu_bf16_fc_path(void) { return lmx_cpu_fc_bf16_path(); }

int lmx_cpu_bf16_force_fallback(int force) {
  LMX_ENTER();
  lmx_cpu_fc_bf16_force_fallback(force);
  return LMX_OK;
}

/* Parses a GEMM mode name for the API function fn; fails naming fn and the argument. */
static int mode_arg(const char *fn, const char *mode, int *md) {
  *md = lmx_gemm_mode_parse(mode);
  if (*md < 0)
    return lmx_fail(LMX_ERR_ARG,
                    "%s: argument 'mode': expected 'auto', 'openblas' or 'dnnl', got '%s'", fn,
                    mode ? mode : "(null)");
  return LMX_OK;
}

int lmx_cpu_gemm_choice(int dtype, int ta, int tb, int64_t m, int64_t n, int64_t k, int threads,
                        const char *mode, int have_dnnl, int avx512, const char **lib) {
  LMX_ENTER();
  if (!lib) return lmx_fail(LMX_ERR_ARG, "lmx_cpu_gemm_choice: argument 'lib' must not be NULL");
  int md;
  LMX_TRY(mode_arg("lmx_cpu_gemm_choice", mode, &md));
  if (m < 0 || n < 0 || k < 0)
    return lmx_fail(LMX_ERR_ARG,
                    "lmx_cpu_gemm_choice: sizes must be >= 0, got m=%lld n=%lld k=%lld",
                    (long long)m, (long long)n, (long long)k);
  if (avx512 < 0) avx512 = lmx_gemm_cpu_avx512();
  int l = lmx_gemm_choose(dtype, ta != 0, tb != 0, m, n, k, threads, md, have_dnnl != 0,
                          avx512 != 0);
  *lib = l == LMX_GEMM_LIB_DNNL ? "dnnl" : "openblas";
  return LMX_OK;
}

int lmx_cpu_gemm_set_mode(const char *mode) {
  LMX_ENTER();
  int md;
  LMX_TRY(mode_arg("lmx_cpu_gemm_set_mode", mode, &md));
  lmx_gemm_set_mode(md);
  return LMX_OK;
}

int lmx_cpu_gemm_info(const char **mode, const char **source, int *dnnl,
                      const char **dnnl_status) {
  LMX_ENTER();
  if (mode) *mode = lmx_gemm_mode_name(lmx_gemm_mode());
  if (source) *source = lmx_gemm_mode_source();
  if (dnnl) *dnnl = lmx_gemm_dnnl_available();
  if (dnnl_status) *dnnl_status = lmx_gemm_dnnl_status();
  return LMX_OK;
}

int lmx_cpu_fc_force_blas(int force) {
  LMX_ENTER();
  lmx_cpu_fc_small_force_blas(force);
  return LMX_OK;
}

int lmx_cpu_conv_set_algo(const char *algo) {
  LMX_ENTER();
  int a = lmx_conv_algo_parse(algo);
  if (a < 0)
    return lmx_fail(LMX_ERR_ARG,
                    "lmx_cpu_conv_set_algo: argument 'algo': expected 'auto', 'gemm', "
                    "'winograd', 'winograd2' or 'winograd4', got '%s'", algo ? algo : "(null)");
  lmx_conv_algo_set(a);
  return LMX_OK;
}

int lmx_cpu_conv_info(const char **algo, const char **source) {
  LMX_ENTER();
  if (algo) *algo = lmx_conv_algo_name();
  if (source) *source = lmx_conv_algo_source();
  return LMX_OK;
}

int lmx_cpu_conv_min_tiles(int avx512, int64_t *tiles) {
  LMX_ENTER();
  if (tiles) *tiles = lmx_conv_wino_min_tiles(avx512 < 0 ? -1 : avx512 != 0);
  return LMX_OK;
}
