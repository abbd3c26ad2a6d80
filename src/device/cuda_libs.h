/* cuda_libs.h — the optional CUDA libraries (cuBLAS, cuBLASLt, cuDNN, NCCL), opened at
 * run time on first use.
 *
 * libluamx links the CUDA runtime statically and nothing else of CUDA, so it loads and
 * runs on the CPU on a machine with no NVIDIA driver and no CUDA library (a spec checks
 * the library's DT_NEEDED entries). The kernel helpers that call cuBLAS/cuDNN and the
 * NCCL kvstore get those libraries here: lmx_cuda_lib_sym(LMX_LIB_CUBLAS,
 * "cublasSgemm_v2", &fn) opens libcublas.so.13 the first time (by soname, through the
 * dynamic loader's search path, then $CUDA_HOME/lib64 and /usr/local/cuda/lib64) and
 * returns the symbol; callers keep the pointer (look it up once, at first use of the
 * device, never per call). A library that is missing is an LMX_ERR_NOTFOUND naming the
 * library, its soname, the loader's reason and the package to install; asking again
 * retries (a library installed meanwhile is found).
 *
 * Compiled in every build (it uses only dlopen), so its error path is tested without
 * CUDA. Thread safety: all functions may be called from any thread.
 */
#ifndef LMX_DEVICE_CUDA_LIBS_H
#define LMX_DEVICE_CUDA_LIBS_H

#ifdef __cplusplus /* also included by kernels/cuda (C++) */
extern "C" {
#endif

enum { LMX_LIB_CUBLAS, LMX_LIB_CUBLASLT, LMX_LIB_CUDNN, LMX_LIB_NCCL, LMX_NUM_CUDA_LIBS };

/* "cuBLAS", "cuBLASLt", "cuDNN", "NCCL"; "?" for an unknown id. */
const char *lmx_cuda_lib_name(int lib);
/* "libcublas.so.13", "libcublasLt.so.13", "libcudnn.so.9", "libnccl.so.2"; "?" otherwise. */
const char *lmx_cuda_lib_soname(int lib);

/* Opens lib (once; later calls return the same handle) into *handle: LMX_OK,
 * LMX_ERR_NOTFOUND ("cuDNN (libcudnn.so.9) is not installed or not on the library path:
 * <dlerror>; install <package> ..."), LMX_ERR_ARG for an unknown id. */
int lmx_cuda_lib_open(int lib, void **handle);

/* Opens lib if needed and looks up symbol name into *fn: LMX_OK, the open's error, or
 * LMX_ERR_NOTFOUND naming the symbol and the library (an older library than expected). */
int lmx_cuda_lib_sym(int lib, const char *name, void **fn);

/* The open itself for a given soname (not cached), named in messages as `what` with the
 * package hint `package`. Used by lmx_cuda_lib_open and by tests. */
int lmx_cuda_lib_open_soname(const char *soname, const char *what, const char *package,
                             void **handle);

#ifdef __cplusplus
}
#endif

#endif
