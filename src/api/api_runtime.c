/* api_runtime.c — what the engine runs on: the BLAS it was linked with, as the BLAS
 * reports itself (the CPU features and the kernel choice are in core/cpu_isa.c). */
#define _GNU_SOURCE
#include <cblas.h>
#include <dlfcn.h>
#include <omp.h>

#include "../../kernels/cpu/cpu_kernels.h"
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

int lmx_cpu_fc_force_blas(int force) {
  LMX_ENTER();
  lmx_cpu_fc_small_force_blas(force);
  return LMX_OK;
}
