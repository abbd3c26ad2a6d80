/* cuda_libs.c — dlopen of the optional CUDA libraries (see cuda_libs.h).
 *
 * Handles are opened with RTLD_NOW | RTLD_LOCAL (their symbols stay out of the global
 * namespace, so two CUDA versions in one process do not collide) and never closed: the
 * libraries keep threads and driver state that outlive any one caller. A mutex makes
 * the first open of each library happen once.
 */
#include "cuda_libs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../core/status.h"
#ifdef LUAMX_CUDA_SIM
#include <string.h>

#include "lmx_sim.h"
#endif

typedef struct lib_info {
  const char *name, *soname, *package;
} lib_info;

/* Packages: NVIDIA's CUDA apt repository (Debian/Ubuntu) names; the toolkit installer
 * puts the same sonames under /usr/local/cuda/lib64. */
static const lib_info g_libs[LMX_NUM_CUDA_LIBS] = {
    [LMX_LIB_CUBLAS] = {"cuBLAS", "libcublas.so.13", "libcublas-13-0"},
    [LMX_LIB_CUBLASLT] = {"cuBLASLt", "libcublasLt.so.13", "libcublas-13-0"},
    [LMX_LIB_CUDNN] = {"cuDNN", "libcudnn.so.9", "libcudnn9-cuda-13"},
    [LMX_LIB_NCCL] = {"NCCL", "libnccl.so.2", "libnccl2"},
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static void *g_handle[LMX_NUM_CUDA_LIBS];

const char *lmx_cuda_lib_name(int lib) {
  return lib >= 0 && lib < LMX_NUM_CUDA_LIBS ? g_libs[lib].name : "?";
}

const char *lmx_cuda_lib_soname(int lib) {
  return lib >= 0 && lib < LMX_NUM_CUDA_LIBS ? g_libs[lib].soname : "?";
}

int lmx_cuda_lib_open_soname(const char *soname, const char *what, const char *package,
                             void **handle) {
  void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  char first[256];
  const char *e = h ? NULL : dlerror();
  snprintf(first, sizeof first, "%s", e ? e : "not found");
  const char *home = getenv("CUDA_HOME");
  const char *dirs[] = {home && *home ? home : NULL, "/usr/local/cuda"};
  for (int i = 0; !h && i < 2; i++) {
    if (!dirs[i]) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/lib64/%s", dirs[i], soname);
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) dlerror(); /* keep the first reason, which names the soname */
  }
  if (!h)
    return lmx_fail(LMX_ERR_NOTFOUND,
                    "%s (%s) is not installed or not on the library path: %s; install the "
                    "package %s (NVIDIA's CUDA repository) or the CUDA toolkit, or add the "
                    "directory holding %s to LD_LIBRARY_PATH",
                    what, soname, first, package, soname);
  *handle = h;
  return LMX_OK;
}

int lmx_cuda_lib_open(int lib, void **handle) {
  if (lib < 0 || lib >= LMX_NUM_CUDA_LIBS)
    return lmx_fail(LMX_ERR_ARG, "optional CUDA library id %d is unknown (expected 0..%d)", lib,
                    LMX_NUM_CUDA_LIBS - 1);
  pthread_mutex_lock(&g_mu);
  int rc = LMX_OK;
  if (!g_handle[lib]) {
    const lib_info *L = &g_libs[lib];
    rc = lmx_cuda_lib_open_soname(L->soname, L->name, L->package, &g_handle[lib]);
  }
  if (rc == LMX_OK) *handle = g_handle[lib];
  pthread_mutex_unlock(&g_mu);
  return rc;
}

#ifdef LUAMX_CUDA_SIM
/* The simulator build's NCCL is kernels/cuda/sim/sim_nccl.cc (a real libnccl would want
 * real GPUs). LUAMX_SIM_NCCL=missing makes it look uninstalled, for the specs of the
 * error path: the open is tried under a soname that cannot exist, so the message is the
 * loader's own. */
static int sim_nccl_sym(const char *name, void **fn) {
  const char *m = getenv("LUAMX_SIM_NCCL");
  if (m && strcmp(m, "missing") == 0) {
    void *h;
    const lib_info *L = &g_libs[LMX_LIB_NCCL];
    return lmx_cuda_lib_open_soname("libnccl.so.2 (simulated as missing: LUAMX_SIM_NCCL)",
                                    L->name, L->package, &h);
  }
  void *p = lmx_sim_nccl_symbol(name);
  if (!p)
    return lmx_fail(LMX_ERR_NOTFOUND, "NCCL (simulated) has no symbol %s", name);
  *fn = p;
  return LMX_OK;
}
#endif

int lmx_cuda_lib_sym(int lib, const char *name, void **fn) {
#ifdef LUAMX_CUDA_SIM
  if (lib == LMX_LIB_NCCL) return sim_nccl_sym(name, fn);
#endif
  void *h;
  LMX_TRY(lmx_cuda_lib_open(lib, &h));
  dlerror();
  void *p = dlsym(h, name);
  if (!p)
    return lmx_fail(LMX_ERR_NOTFOUND, "%s (%s) has no symbol %s: the installed library is "
                    "older than this build expects", g_libs[lib].name, g_libs[lib].soname, name);
  *fn = p;
  return LMX_OK;
}
