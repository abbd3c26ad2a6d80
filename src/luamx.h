/* luamx.h — the public C API of the luamx engine, and the only public header.
 *
 * This header is the contract, and deliberately one file (STYLE.md: "the only public
 * header"): it is long because every function carries its documentation, in sections
 * that follow the layers (core, NDArrays, files, operators, symbols, executors,
 * training, imperative calls). It is also the source of the Lua binding: the build
 * preprocesses it with LMX_CDEF defined and embeds the result in the library, and the
 * Lua module hands that text to ffi.cdef. So it must stay inside what LuaJIT's FFI
 * parses: enum constants (never #define constants), int status returns, distinct
 * opaque handle types, no structs by value, no varargs.
 *
 * Conventions (every function below follows them unless its comment says otherwise):
 *  - Return an int status: LMX_OK (0) or one of the LMX_ERR_* codes. On failure the
 *    calling thread's message (lmx_last_error) names the operator, node, argument,
 *    and the expected and actual values; out-parameters are left untouched and every
 *    handle passed in stays valid and unchanged.
 *  - Handles are reference counted. A function that returns a handle through `**out`
 *    gives the caller one reference, released with the matching *_free. Objects that
 *    depend on others hold references to them, so handles may be freed in any order
 *    (garbage-collected hosts finalize in arbitrary order). *_free(NULL) is a no-op.
 *  - Strings returned as `const char **` are borrowed from the handle named in the
 *    comment and live as long as it does. Lists are written to caller buffers.
 *  - Thread safety: distinct handles may be used from distinct threads at once. One
 *    handle must not be used from two threads at once unless its comment says so.
 *    The error message is per thread. Reference counts are atomic.
 *  - Indices are 0-based; shapes are int64 dims, row-major (C order).
 */
#ifndef LUAMX_H
#define LUAMX_H

#ifndef LMX_CDEF
#include <stddef.h>
#include <stdint.h>
#define LMX_API __attribute__((visibility("default")))
#else
#define LMX_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ===================================================================== version === */

/* Header version, checked against lmx_version() by the binding. */
enum { LMX_VERSION_MAJOR = 0, LMX_VERSION_MINOR = 1, LMX_VERSION_PATCH = 0 };
enum { LMX_VERSION = 100 }; /* MAJOR*10000 + MINOR*100 + PATCH */

/* Returns LMX_VERSION as compiled into the library. Never fails. */
LMX_API int lmx_version(void);

/* The ffi.cdef text of this header as compiled into the library (preprocessed with
 * LMX_CDEF, NUL-terminated, static storage). Never fails, never NULL. */
LMX_API const char *lmx_cdef(void);

/* ================================================================ status codes === */

/* X-macro: name, value, short description. The binding and messages use all three. */
#define LMX_STATUS_LIST(X)                                                              \
  X(LMX_OK, 0, "ok")                                                                   \
  X(LMX_ERR_ARG, 1, "invalid argument")                                                \
  X(LMX_ERR_SHAPE, 2, "shape mismatch")                                                \
  X(LMX_ERR_DTYPE, 3, "dtype mismatch")                                                \
  X(LMX_ERR_NOMEM, 4, "out of memory")                                                 \
  X(LMX_ERR_IO, 5, "input/output error")                                               \
  X(LMX_ERR_FORMAT, 6, "malformed file or text")                                       \
  X(LMX_ERR_DEVICE, 7, "device unavailable")                                           \
  X(LMX_ERR_STATE, 8, "invalid state")                                                 \
  X(LMX_ERR_NOTFOUND, 9, "not found")                                                  \
  X(LMX_ERR_UNSUPPORTED, 10, "unsupported")                                            \
  X(LMX_ERR_INTERNAL, 11, "internal error")

#define LMX_STATUS_ENUM_(name, value, desc) name = value,
enum { LMX_STATUS_LIST(LMX_STATUS_ENUM_) LMX_STATUS_COUNT_ };
#undef LMX_STATUS_ENUM_

/* The calling thread's message for its last failed call ("" if none). The pointer is
 * valid until the next failing call on the same thread. Never NULL. */
LMX_API const char *lmx_last_error(void);

/* Short name of a status code ("LMX_ERR_SHAPE"); "unknown status" otherwise. */
LMX_API const char *lmx_status_string(int status);

/* =================================================== allocator (tests, debugging) === */

/* Counters of the engine's host allocator, for leak checks in tests.
 * out: live_blocks, live_bytes (allocated and not yet freed), total_allocs (blocks
 * malloc made since start: a block handed out again by the block cache, see
 * lmx_debug_alloc_cache, is not counted). Any out pointer may be NULL. Thread-safe.
 * Never fails. */
LMX_API int lmx_debug_alloc_stats(int64_t *live_blocks, int64_t *live_bytes,
                                  int64_t *total_allocs);

/* Fault injection: make the Nth host allocation from now fail (n >= 1), then succeed
 * again; n = 0 disables. Thread-safe. LMX_ERR_ARG for n < 0. */
LMX_API int lmx_debug_alloc_fail_at(int64_t n);

/* Distinct allocation sites (the code addresses that called the allocator) at which an
 * injected failure (lmx_debug_alloc_fail_at) has struck since start or the last reset:
 * *sites gets the count (sites may be NULL); reset = 1 then forgets them. A site past
 * the table's 4096 slots counts each time it is hit. Thread-safe. Never fails. */
LMX_API int lmx_debug_alloc_sites(int64_t *sites, int reset);

/* The allocator's block cache (src/core/alloc.c: freed blocks of up to 16 MB are kept
 * per capacity and handed out again, so steady eager steps call malloc for nothing):
 * on = 1 switches it on (the default, except under AddressSanitizer), 0 off and gives
 * every kept block back, -1 leaves it as it is. out (each may be NULL): was_on (1 when
 * it was on before the call), hits (requests served from the cache since start),
 * kept_blocks and kept_bytes (what it holds now, headers included). Kept blocks are not
 * live in lmx_debug_alloc_stats, and a reuse is not counted in its total_allocs.
 * Thread-safe. LMX_ERR_ARG for another `on`. */
LMX_API int lmx_debug_alloc_cache(int on, int *was_on, int64_t *hits, int64_t *kept_blocks,
                                  int64_t *kept_bytes);

/* Poison fresh blocks with 0xA5 and freed blocks with 0xDD (on = 1) or not (on = 0).
 * On by default when the library was built with LUAMX_DEBUG_ALLOC. */
LMX_API int lmx_debug_alloc_set_poison(int on);

/* ==================================================== dtypes and devices === */

/* dtype codes are MXNet's (mshadow type flags), as stored in .params files. Codes 7..11
 * (MXNet's bool, int16, uint16, uint32, uint64) are not supported: lmx_dtype_name returns
 * NULL for them. LMX_NUM_DTYPES is one past the largest supported code. */
enum {
  LMX_FLOAT32 = 0,
  LMX_FLOAT64 = 1,
  LMX_FLOAT16 = 2,
  LMX_UINT8 = 3,
  LMX_INT32 = 4,
  LMX_INT8 = 5,
  LMX_INT64 = 6,
  LMX_BFLOAT16 = 12,
  LMX_NUM_DTYPES = 13
};

/* Device types are MXNet's codes. */
enum { LMX_CPU = 1, LMX_GPU = 2 };

/* The largest number of dimensions of an array. */
enum { LMX_MAX_NDIM = 8 };

/* dtype name ("float32") of a code; NULL for an unknown code. Never fails. */
LMX_API const char *lmx_dtype_name(int dtype);

/* dtype code of a name ("float32", "float16", "int64", ...). LMX_ERR_ARG (message lists
 * the known names) for an unknown name. */
LMX_API int lmx_dtype_from_name(const char *name, int *dtype);

/* Size in bytes of one element; 0 for an unknown code. Never fails. */
LMX_API int lmx_dtype_size(int dtype);

/* Number of usable GPUs (0 when the library was built without CUDA or none is
 * present). Never fails. */
LMX_API int lmx_num_gpus(void);

/* Checks that a context exists: LMX_ERR_DEVICE with a message otherwise
 * (gpu(0) with no GPU, negative ids, unknown device types). */
LMX_API int lmx_context_check(int dev_type, int dev_id);

/* Indices of lmx_gpu_memory_info's figures. Bytes of the caching allocator are rounded
 * block sizes (requests round up to 512 B, above 1 MiB to 2 MiB). */
enum {
  LMX_GPUMEM_FREE = 0,      /* device free bytes (cudaMemGetInfo), as MXNet's first value */
  LMX_GPUMEM_TOTAL,         /* device total bytes */
  LMX_GPUMEM_IN_USE,        /* bytes of blocks held by arrays and executors */
  LMX_GPUMEM_CACHED,        /* bytes of freed blocks the allocator keeps for reuse */
  LMX_GPUMEM_PEAK,          /* highest IN_USE since the device was first used */
  LMX_GPUMEM_LIVE_BLOCKS,   /* blocks held */
  LMX_GPUMEM_CACHED_BLOCKS, /* blocks cached */
  LMX_GPUMEM_REQUESTS,      /* allocations served */
  LMX_GPUMEM_CACHE_HITS,    /* of which from the cache */
  LMX_GPUMEM_RAW_ALLOCS,    /* cudaMalloc calls that succeeded (cache misses) */
  LMX_GPUMEM_RAW_FREES,     /* blocks given back with cudaFree */
  LMX_GPUMEM_OOM_RETRIES,   /* out of memory answered by emptying the cache and retrying */
  LMX_GPUMEM_OOMS,          /* allocations that failed even after the retry */
  LMX_GPUMEM_NUM_FIGURES
};

/* Memory figures of gpu(dev_id) into figures[0..n) (n >= 1; at most
 * LMX_GPUMEM_NUM_FIGURES are written), indexed by LMX_GPUMEM_*. Allocator figures are 0
 * for a device nothing was allocated on yet. LMX_ERR_DEVICE for a GPU that is not
 * present (the message says why), LMX_ERR_ARG for n < 1. Thread-safe. */
LMX_API int lmx_gpu_memory_info(int dev_id, int64_t *figures, int n);

/* Gives the blocks gpu(dev_id)'s caching allocator keeps for reuse back to the device
 * (cudaFree); arrays in use are not touched. out_bytes (may be NULL): bytes released.
 * LMX_ERR_DEVICE for a GPU that is not present. Thread-safe. */
LMX_API int lmx_gpu_empty_cache(int dev_id, int64_t *out_bytes);

/* ======================================================= CPU features and BLAS === */

/* The CPU's vector extensions, as bits of a uint64_t feature set: X(name, bit, text).
 * A bit means "usable": the CPU reports it (cpuid) and, for the AVX, AVX-512 and AMX
 * families, the OS saves the registers it needs (XCR0 via xgetbv); LMX_CPU_OS_YMM,
 * _OS_ZMM and _OS_AMX are those OS bits themselves. AMX additionally needs a per-process
 * permission on Linux (arch_prctl), which is not asked for. */
#define LMX_CPU_FEATURE_LIST(X)                                                         \
  X(LMX_CPU_SSE3, 0, "sse3")                                                           \
  X(LMX_CPU_SSSE3, 1, "ssse3")                                                         \
  X(LMX_CPU_SSE4_1, 2, "sse4_1")                                                       \
  X(LMX_CPU_SSE4_2, 3, "sse4_2")                                                       \
  X(LMX_CPU_AVX, 4, "avx")                                                             \
  X(LMX_CPU_F16C, 5, "f16c")                                                           \
  X(LMX_CPU_FMA, 6, "fma")                                                             \
  X(LMX_CPU_AVX2, 7, "avx2")                                                           \
  X(LMX_CPU_AVX512F, 8, "avx512f")                                                     \
  X(LMX_CPU_AVX512CD, 9, "avx512cd")                                                   \
  X(LMX_CPU_AVX512BW, 10, "avx512bw")                                                  \
  X(LMX_CPU_AVX512DQ, 11, "avx512dq")                                                  \
  X(LMX_CPU_AVX512VL, 12, "avx512vl")                                                  \
  X(LMX_CPU_AVX512_VNNI, 13, "avx512_vnni")                                            \
  X(LMX_CPU_AVX512_BF16, 14, "avx512_bf16")                                            \
  X(LMX_CPU_AVX512_FP16, 15, "avx512_fp16")                                            \
  X(LMX_CPU_AVX_VNNI, 16, "avx_vnni")                                                  \
  X(LMX_CPU_AMX_TILE, 17, "amx_tile")                                                  \
  X(LMX_CPU_AMX_BF16, 18, "amx_bf16")                                                  \
  X(LMX_CPU_AMX_INT8, 19, "amx_int8")                                                  \
  X(LMX_CPU_OS_YMM, 20, "os_ymm")                                                      \
  X(LMX_CPU_OS_ZMM, 21, "os_zmm")                                                      \
  X(LMX_CPU_OS_AMX, 22, "os_amx")

#define LMX_CPU_FEATURE_ENUM_(name, bit, text) name = bit,
enum { LMX_CPU_FEATURE_LIST(LMX_CPU_FEATURE_ENUM_) LMX_CPU_FEATURE_COUNT_ };
#undef LMX_CPU_FEATURE_ENUM_

/* Detects this CPU's usable features (see LMX_CPU_FEATURE_LIST) into *features: bit
 * (1 << LMX_CPU_x) set when usable. 0 on a non-x86 build. Never fails (LMX_ERR_ARG for
 * a NULL pointer). Thread-safe. The same function is in libluamx_cpu.so, a library of
 * this section's first four functions alone, which the Lua module loads before
 * libluamx (and so before OpenBLAS reads OPENBLAS_CORETYPE). */
LMX_API int lmx_cpu_features(uint64_t *features);

/* Text name ("avx512f") of feature bit `feature`; NULL outside 0..LMX_CPU_FEATURE_COUNT_-1.
 * Never fails. */
LMX_API const char *lmx_cpu_feature_name(int feature);

/* The choice of BLAS kernels, a pure function of its argument: the OpenBLAS core type
 * (a value for OPENBLAS_CORETYPE) whose kernels suit a CPU with these features best, or
 * NULL when none is better than what OpenBLAS picks on its own:
 *   AVX-512 F+CD+BW+DQ+VL with AVX512_BF16 -> "Cooperlake" (OpenBLAS >= 0.3.10),
 *   AVX-512 F+CD+BW+DQ+VL                  -> "SkylakeX",
 *   AVX2 + FMA                             -> "Haswell",
 *   AVX                                    -> "Sandybridge",
 *   otherwise                              -> NULL.
 * Static strings. Never fails. Thread-safe. */
LMX_API const char *lmx_blas_coretype_for(uint64_t features);

/* Which clone of luamx's own vectorised CPU loops the loader picked for this CPU
 * (GCC target_clones, resolved by ifunc at load time, in the resolver's order):
 * "avx512f", "avx2" or "default" (baseline x86-64); "none" where the kernels are not
 * cloned (not x86-64 or not GCC). Static string. Never fails. */
LMX_API const char *lmx_cpu_kernel_clone(void);

/* The BLAS libluamx runs its GEMMs on, as it reports itself. Every out pointer may be
 * NULL. corename: OpenBLAS's kernel family in use ("SkylakeX", "Haswell", ...);
 * config: its build configuration ("OpenBLAS 0.3.21 DYNAMIC_ARCH ..."); path: the file
 * the dynamic loader mapped it from ("" if unknown); threads: OpenBLAS's thread count.
 * Strings are static (the BLAS's own, or this library's). Never fails. Thread-safe. */
LMX_API int lmx_blas_info(const char **corename, const char **config, const char **path,
                          int *threads);

/* The number of threads luamx's own CPU kernels may use (OpenMP's omp_get_max_threads:
 * OMP_NUM_THREADS, or the CPUs). Never fails. */
LMX_API int lmx_cpu_num_threads(void);

/* The kernel bfloat16 FullyConnected (forward and backward) runs on the CPU:
 * "avx512_bf16" (vdpbf16ps dot products on the bfloat16 data, on CPUs with AVX512_BF16
 * unless forced off) or "float32" (data widened to float32 in the workspace, the float32
 * GEMMs, each result rounded once; float16 always takes this path). Static string. Never
 * fails. Thread-safe. */
LMX_API const char *lmx_cpu_bf16_fc_path(void);

/* force != 0 makes bfloat16 FullyConnected take the float32 fallback even where
 * AVX512_BF16 is usable; 0 restores the automatic choice. Process-wide, for calls that
 * start afterwards. Returns LMX_OK. Thread-safe. */
LMX_API int lmx_cpu_bf16_force_fallback(int force);

/* The library a float32 matrix product C[m,n] = op(A) op(B) (row-major, ta / tb: 1 to
 * transpose) would run on with `threads` OpenMP threads, in GEMM mode `mode` ("auto",
 * "openblas", "dnnl"), on a machine where oneDNN can (have_dnnl != 0) or cannot run and
 * whose CPU has (avx512 = 1) or has not (0) AVX-512 (-1: this machine's CPU):
 * *lib = "openblas" or "dnnl" (static string). A pure function of its arguments (the
 * rule lmx_cpu_gemm_ld applies to every product). dtype other than float32: "openblas".
 * Errors: LMX_ERR_ARG (NULL lib, unknown mode, negative size). */
LMX_API int lmx_cpu_gemm_choice(int dtype, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                int threads, const char *mode, int have_dnnl, int avx512,
                                const char **lib);

/* Sets the process's GEMM mode ("auto", "openblas" or "dnnl"; the initial one comes from
 * the environment variable LUAMX_GEMM, auto when unset), for products that start
 * afterwards. Errors: LMX_ERR_ARG (unknown mode; the mode in force stays). Thread-safe. */
LMX_API int lmx_cpu_gemm_set_mode(const char *mode);

/* Sets which algorithm runs float32 CPU convolutions that start afterwards: "auto" (the
 * Winograd F(2x2, 3x3) path for 3x3 stride-1 undilated ungrouped 2-D convolutions with 16+
 * channels on both sides and 64+ (AVX-512) or 128+ tiles of 2x2 outputs per chunk of images
 * (lmx_cpu_conv_min_tiles), im2col + GEMM
 * for the rest), "gemm" (always im2col + GEMM) or "winograd" (Winograd wherever it can run). The
 * initial one comes from the environment variable LUAMX_CONV (auto when unset).
 * Errors: LMX_ERR_ARG (unknown name; the algorithm in force stays). Thread-safe. */
LMX_API int lmx_cpu_conv_set_algo(const char *algo);
/* The convolution algorithm in force and where it came from (static strings; either
 * pointer may be NULL). Never fails. */
LMX_API int lmx_cpu_conv_info(const char **algo, const char **source);
/* The fewest tiles of 2x2 outputs per chunk of images (the batch split over the threads)
 * for which 'auto' takes Winograd: 64 on a CPU with AVX-512 (avx512 = 1), 128 without (0);
 * -1: this CPU. Never fails. */
LMX_API int lmx_cpu_conv_min_tiles(int avx512, int64_t *tiles);

/* The GEMM mode in force and where it came from, whether oneDNN runs (loads
 * libdnnl.so.2 on the first query) and what was loaded or why nothing was. Every out
 * pointer may be NULL; strings are static. Never fails. Thread-safe. */
LMX_API int lmx_cpu_gemm_info(const char **mode, const char **source, int *dnnl,
                              const char **dnnl_status);
/* The kernel a float32 FullyConnected forward with one row of x (batch-1 inference;
 * also 2..8 rows when m·n·k >= 2^20) runs on the CPU: "avx512f" or "avx2" (luamx's
 * streaming dot products, the bias added in the same pass, the rows of the weight split
 * over the OpenMP threads when it holds 512 KB or more), or "blas" (the sgemm every other
 * shape runs: no AVX2+FMA, or forced). Static string. Never fails. Thread-safe. */
LMX_API const char *lmx_cpu_fc_small_path(void);

/* force != 0 makes every float32 FullyConnected forward run the sgemm (the path before
 * the small-batch kernels); 0 restores the automatic choice. Process-wide, for calls that
 * start afterwards. Returns LMX_OK. Thread-safe. */
LMX_API int lmx_cpu_fc_force_blas(int force);

/* ================================================================== NDArray === */

/* An n-dimensional array: a shape, a dtype, a context, and a view (byte offset) into
 * reference-counted storage. Views share storage with their source. */
typedef struct lmx_ndarray lmx_ndarray;

/* New array of the given shape (ndim 0..LMX_MAX_NDIM, every dim >= 0), dtype and
 * context, filled with zeros. out: one reference.
 * Errors: LMX_ERR_ARG (bad ndim, negative dim, unknown dtype), LMX_ERR_SHAPE (size
 * overflows), LMX_ERR_DEVICE (no such context), LMX_ERR_NOMEM. */
LMX_API int lmx_ndarray_new(const int64_t *dims, int ndim, int dtype, int dev_type,
                            int dev_id, lmx_ndarray **out);

/* Releases one reference; the storage goes when its last array goes. NULL is a no-op.
 * Always LMX_OK. */
LMX_API int lmx_ndarray_free(lmx_ndarray *arr);

/* Adds one reference (to hand the same handle to another owner). */
LMX_API int lmx_ndarray_retain(lmx_ndarray *arr);

/* Shape: writes min(ndim, cap) dims and the real ndim. */
LMX_API int lmx_ndarray_shape(const lmx_ndarray *arr, int64_t *dims, int cap, int *ndim);

/* Number of elements. */
LMX_API int lmx_ndarray_size(const lmx_ndarray *arr, int64_t *size);

/* dtype code. */
LMX_API int lmx_ndarray_dtype(const lmx_ndarray *arr, int *dtype);

/* Bytes of the array's elements (size times the dtype's size; 0 for NULL), returned
 * directly and as a double (exact below 2^53), which the LuaJIT FFI hands back as a
 * plain number: the Lua layer's memory-pressure account reads it for every array it
 * wraps and frees. Never fails. */
LMX_API double lmx_ndarray_nbytes(const lmx_ndarray *arr);
/* The bytes of the arrays a front end holds through handles its collector does not see
 * (luamx.ndarray wraps every handle it returns): lmx_ndarray_hold adds arr's bytes and
 * returns the total held, lmx_ndarray_drop subtracts them and releases arr (a finalizer
 * for such a handle), lmx_ndarray_held reads the total. */
LMX_API double lmx_ndarray_hold(const lmx_ndarray *arr);
LMX_API void lmx_ndarray_drop(lmx_ndarray *arr);
LMX_API double lmx_ndarray_held(void);

/* Context. */
LMX_API int lmx_ndarray_context(const lmx_ndarray *arr, int *dev_type, int *dev_id);

/* Zero-copy pointer to the first element of a CPU array (valid while the array, or
 * any array sharing its storage, lives). LMX_ERR_DEVICE for a GPU array. */
LMX_API int lmx_ndarray_data(const lmx_ndarray *arr, void **data);

/* Human-readable summary "2x3 float32 @cpu(0)" into buf (NUL-terminated, truncated
 * to cap). */
LMX_API int lmx_ndarray_describe(const lmx_ndarray *arr, char *buf, int cap);

/* A view with a new shape and the same number of elements. One dim may be -1 (inferred)
 * and 0 copies the source's dim at that position (MXNet's rules). out: one reference.
 * LMX_ERR_SHAPE names both shapes when the sizes differ. */
LMX_API int lmx_ndarray_reshape(lmx_ndarray *arr, const int64_t *dims, int ndim,
                                lmx_ndarray **out);

/* A view of rows [begin, end) along the first axis (0 <= begin <= end <= dim 0).
 * out: one reference. LMX_ERR_ARG names the range and the dim. */
LMX_API int lmx_ndarray_slice(lmx_ndarray *arr, int64_t begin, int64_t end,
                              lmx_ndarray **out);

/* Copies src into dst: same shape; any dtypes (converted) and contexts. src == dst or
 * overlapping views are allowed only when they are the same view. */
LMX_API int lmx_ndarray_copyto(const lmx_ndarray *src, lmx_ndarray *dst);

/* Sets every element to value (converted to the dtype; integers truncate toward 0). */
LMX_API int lmx_ndarray_fill(lmx_ndarray *arr, double value);

/* Writes n values (C order, converted from double) into the array: n must equal the
 * size. Used by the binding to set arrays from Lua tables. */
LMX_API int lmx_ndarray_set_f64(lmx_ndarray *arr, const double *values, int64_t n);

/* Reads the array (C order, converted to double) into values[0..n): n must equal the
 * size. */
LMX_API int lmx_ndarray_get_f64(const lmx_ndarray *arr, double *values, int64_t n);

/* Waits until pending writes to the array are done: on a GPU, until the work queued on
 * its device's stream has run (a no-op on the CPU). LMX_ERR_DEVICE reports an
 * asynchronous fault of that work, naming the operator and node that ran last. */
LMX_API int lmx_ndarray_wait_to_read(const lmx_ndarray *arr);

/* Waits for all pending work on every device (GPUs never used are skipped); reports
 * the first asynchronous fault as lmx_ndarray_wait_to_read. */
LMX_API int lmx_waitall(void);

/* ============================================================ random numbers === */

/* Seeds the global generator: the same seed gives the same draws in the same order.
 * Thread-safe (draws are serialized). */
LMX_API int lmx_random_seed(uint64_t seed);

/* Fills a floating-point array with draws from U[low, high). LMX_ERR_ARG if low > high. */
LMX_API int lmx_random_uniform(lmx_ndarray *arr, double low, double high);

/* Fills a floating-point array with draws from N(mean, std^2). LMX_ERR_ARG if std < 0. */
LMX_API int lmx_random_normal(lmx_ndarray *arr, double mean, double std);

/* Words of the random state (lmx_random_get_state): the CPU generator's 4 words
 * (xoshiro256**), then the seed and the next offset of the counter-based draws GPU
 * kernels (Philox) take, so one state covers every device's random operators. */
enum { LMX_RANDOM_STATE_WORDS = 6 };

/* Copies the random state into state[0..n) (n >= LMX_RANDOM_STATE_WORDS): restoring it
 * with lmx_random_set_state makes the following draws (uniform, normal, Dropout masks,
 * on every device) repeat exactly. LMX_ERR_ARG for a NULL state or a short n.
 * Thread-safe. */
LMX_API int lmx_random_get_state(uint64_t *state, int n);

/* Restores a state read by lmx_random_get_state (n == LMX_RANDOM_STATE_WORDS).
 * LMX_ERR_ARG for a wrong n or a CPU state of four zero words (the generator would give
 * zeros forever; no state read from the generator is so). Thread-safe. */
LMX_API int lmx_random_set_state(const uint64_t *state, int n);

/* ====================================================== imperative arithmetic === */

/* Elementwise binary operations, with NumPy/MXNet broadcasting. */
enum {
  LMX_BIN_ADD = 0,
  LMX_BIN_SUB = 1,
  LMX_BIN_MUL = 2,
  LMX_BIN_DIV = 3,
  LMX_BIN_POW = 4,
  LMX_BIN_MAX = 5,
  LMX_BIN_MIN = 6,
  LMX_NUM_BINOPS = 7
};

/* out = a <op> b with broadcasting; a and b must share dtype and context. out: a new
 * array (one reference). LMX_ERR_SHAPE names both shapes when they do not broadcast. */
LMX_API int lmx_ndarray_binary(int op, const lmx_ndarray *a, const lmx_ndarray *b,
                               lmx_ndarray **out);

/* out = a <op> s (reverse = 0) or s <op> a (reverse = 1). out: a new array. */
LMX_API int lmx_ndarray_scalar(int op, const lmx_ndarray *a, double s, int reverse,
                               lmx_ndarray **out);

/* Matrix product: a (..., k) x b (k, ...) -> a.shape[:-1] ++ b.shape[1:]; 1-D x 1-D is
 * the inner product with shape (1). float32/float64 only; same dtype and context.
 * out: a new array. */
LMX_API int lmx_ndarray_dot(const lmx_ndarray *a, const lmx_ndarray *b, lmx_ndarray **out);

/* ============================================ NDArray files (MXNet's format) === */

/* A list of arrays with optional names, as read from a file. */
typedef struct lmx_ndlist lmx_ndlist;

/* Saves n arrays to path in MXNet's NDArray-list format (V2 arrays, 0x112 header; a
 * 0-dim array is written in the V3 layout, because V2 reads ndim 0 as "no array").
 * names may be NULL (a list) or hold n non-NULL names (a name->array table). The file
 * is written to a temporary in the same directory and renamed over path, so a crash
 * never leaves a half-written file at path. Errors name the file. */
LMX_API int lmx_ndarray_save(const char *path, lmx_ndarray *const *arrays,
                             const char *const *names, int n);

/* Loads an NDArray-list file (V0, V1, V2 and V3 arrays). The file is untrusted: every
 * count, length and offset is checked, and a truncated or corrupt file gives
 * LMX_ERR_FORMAT (or LMX_ERR_IO) with a message naming the file, the array index and
 * what was wrong. Arrays are placed on the CPU. out: one reference to the list. */
LMX_API int lmx_ndarray_load(const char *path, lmx_ndlist **out);

/* Loads the same format from a memory buffer (name is used in messages only). */
LMX_API int lmx_ndarray_load_buffer(const void *data, size_t size, const char *name,
                                    lmx_ndlist **out);

/* Releases a list (the arrays it handed out keep their own references). */
LMX_API int lmx_ndlist_free(lmx_ndlist *list);

/* Number of arrays, and whether the file carried names (1) or not (0). */
LMX_API int lmx_ndlist_size(const lmx_ndlist *list, int *n, int *has_names);

/* Array i (one new reference) and its name (borrowed from the list; NULL when the
 * file had no names). LMX_ERR_ARG for i out of range. */
LMX_API int lmx_ndlist_get(const lmx_ndlist *list, int i, lmx_ndarray **arr,
                           const char **name);

/* ======================================================== files, atomically === */

/* Writes len bytes to path as lmx_ndarray_save writes its files: into
 * `<path>.tmp.<pid>.<n>` in the same directory, fsync'ed, renamed over path, and the
 * directory fsync'ed, so after a crash at any instant path holds the old file or the
 * new one, never part of one. On failure the temporary is removed and path untouched.
 * Before it starts (as every atomic save does) it removes the temporaries of path whose
 * process no longer exists (a killed save's); a live process's temporary is never
 * touched. LMX_ERR_IO names path and the temporary. */
LMX_API int lmx_file_write_atomic(const char *path, const void *data, size_t len);

/* Removes the temporaries `<path>.tmp.<pid>.<n>` of processes that no longer exist, as
 * every atomic save of path does first; *removed (may be NULL) counts them. An
 * unreadable directory removes nothing and is not an error. */
LMX_API int lmx_file_clean_temporaries(const char *path, int *removed);

/* The CRC-32 (zlib's: ISO-HDLC, as gzip and PNG) and the size in bytes of a whole file.
 * LMX_ERR_IO names the file (missing, unreadable, not a regular file). */
LMX_API int lmx_file_crc32(const char *path, uint32_t *crc, int64_t *size);
/* ================================================ dataset files (IDX, CSV) === */

/* Checks the header of an IDX file (MNIST's format) held in memory: bytes 0 and 1 zero,
 * element type 0x08 (unsigned byte), want_ndim (1..LMX_MAX_NDIM) big-endian uint32
 * dims, then exactly prod(dims) data bytes. dims[0..want_ndim) get the dims and
 * *offset the first data byte. The bytes are untrusted: LMX_ERR_FORMAT with a message
 * "<name>: <what was wrong>" (name is used in messages only). */
LMX_API int lmx_idx_parse(const void *data, size_t size, int want_ndim, const char *name,
                          int64_t *dims, int64_t *offset);

/* Parses CSV text held in memory into a new float64 array of shape (rows, width): each
 * line not made of white space only holds width numbers (C's strtod in the "C" locale)
 * separated by ','; a '\r' before a '\n' is dropped. The text is untrusted:
 * LMX_ERR_FORMAT with a message "<name> line <n>: <what was wrong>". width >= 1.
 * out: one reference. */
LMX_API int lmx_csv_parse(const void *data, size_t size, int64_t width, const char *name,
                          lmx_ndarray **out);

/* ================================ RecordIO, images, image iterator (MXNet's) === */

/* A RecordIO file (dmlc-core's format, MXNet's .rec): records of any bytes, each
 * stored as the magic 0xced7230a, a uint32 whose upper 3 bits are a continuation flag
 * and lower 29 bits a length, the bytes and zero padding to 4 bytes (a record holding
 * the magic at a 4-aligned offset is split there, as dmlc does). Files are untrusted:
 * a bad magic, a bad continuation flag or a length past the end of the file gives
 * LMX_ERR_FORMAT with a message naming the file and the byte offset. */
typedef struct lmx_recordio lmx_recordio;

enum { LMX_RECORDIO_READ = 0, LMX_RECORDIO_WRITE = 1 };

/* Opens path for reading (LMX_RECORDIO_READ) or creates/truncates it for writing.
 * out: the handle, closed by lmx_recordio_free. LMX_ERR_IO names the file and errno. */
LMX_API int lmx_recordio_open(const char *path, int mode, lmx_recordio **out);

/* Closes the file and frees the handle; NULL is a no-op. LMX_ERR_IO if close fails
 * (the handle is freed anyway). */
LMX_API int lmx_recordio_free(lmx_recordio *r);

/* Appends one record of size bytes (at most 2^29 - 1). LMX_ERR_STATE on a reader. */
LMX_API int lmx_recordio_write(lmx_recordio *r, const void *data, size_t size);

/* Reads the record at the current position: *data and *size borrow the handle's buffer
 * until the next read, seek or free; *got = 0 (and *size = 0) at the end of the file.
 * LMX_ERR_STATE on a writer. */
LMX_API int lmx_recordio_read(lmx_recordio *r, const void **data, size_t *size, int *got);

/* Byte offset of the next record to read, or the end of what was written (MXNet's
 * tell(), the positions an .idx file stores). */
LMX_API int lmx_recordio_tell(const lmx_recordio *r, uint64_t *pos);

/* Moves a reader to byte offset pos, normally a tell() value. LMX_ERR_ARG for an offset
 * past the end of the file or not a multiple of 4; an offset that is not a record start
 * shows as LMX_ERR_FORMAT (naming it) on the next read. LMX_ERR_STATE on a writer. */
LMX_API int lmx_recordio_seek(lmx_recordio *r, uint64_t pos);

/* An image: decoded pixels (8-bit, interleaved height x width x channels, OpenCV's
 * channel order as MXNet's recordio.unpack_img gives them: gray, BGR or BGRA) or
 * encoded bytes. JPEG and PNG go through libjpeg-turbo and libpng, in the plugin
 * libluamx_image.so opened on first use: without it (or without libjpeg62-turbo /
 * libpng16-16) these functions fail with LMX_ERR_UNSUPPORTED naming the packages, and
 * the rest of luamx works. */
typedef struct lmx_image lmx_image;

/* Decodes JPEG or PNG bytes. flag (OpenCV's imdecode): -1 as stored, 0 gray, 1 BGR.
 * LMX_ERR_FORMAT with the codec's message for corrupt data. out: one reference. */
LMX_API int lmx_image_decode(const void *data, size_t size, int flag, lmx_image **out);

/* Encodes pixels (height x width x channels, channels 1, 3 (BGR) or 4 (BGRA)) as fmt
 * ".jpg"/".jpeg" (quality 1..100; alpha dropped) or ".png" (quality = compression
 * level 0..9). out: one reference holding the encoded bytes. */
LMX_API int lmx_image_encode(const uint8_t *pixels, int height, int width, int channels,
                             const char *fmt, int quality, lmx_image **out);

/* Height, width, channels and the bytes (pixels, or the encoded file), borrowed from
 * the handle. Any out-pointer may be NULL. */
LMX_API int lmx_image_info(const lmx_image *img, int *height, int *width, int *channels,
                           const void **data, size_t *size);

/* Releases one reference; NULL is a no-op. */
LMX_API int lmx_image_free(lmx_image *img);

/* MXNet's ImageRecordIter: batches of images from a .rec file, decoded, resized,
 * cropped, mirrored and normalized by worker threads ahead of the consumer. */
typedef struct lmx_imagerec_iter lmx_imagerec_iter;

/* What happens to an incomplete last batch. */
enum {
  LMX_LAST_BATCH_ROUND = 0,   /* filled from the start of the epoch's order; pad counts them */
  LMX_LAST_BATCH_PAD = 1,     /* the missing rows are zeros; pad counts them */
  LMX_LAST_BATCH_DISCARD = 2  /* dropped */
};

/* Parameters (MXNet's names). Output pixel (channel k of RGB order) =
 * (pixel - mean[k]) * scale / std[k]. Randomness (shuffle, crop position, mirror) is a
 * function of seed, epoch and the sample's position in the epoch only, so batches do not
 * depend on the number of threads. */
typedef struct lmx_imagerec_config {
  const char *path_imgrec;      /* the .rec file */
  const char *path_imgidx;      /* its .idx (NULL: the .rec is scanned at creation) */
  int channels, height, width;  /* data_shape: 1 (gray) or 3 (RGB) channels */
  int batch_size;
  int label_width;              /* labels per record (the IRHeader flag when > 0, else 1) */
  int shuffle;                  /* reshuffle the records every epoch */
  int seed;
  int resize;                   /* > 0: the shorter edge is resized to this (bilinear) */
  int rand_crop;                /* random crop position (else centered) */
  int rand_mirror;              /* mirror with probability 1/2 */
  int mirror;                   /* always mirror */
  float mean[3], std[3];        /* per channel, R G B order */
  float scale;
  int num_parts, part_index;    /* this part: records [part*n/num_parts, (part+1)*n/num_parts) */
  int preprocess_threads;       /* worker threads, >= 1 */
  int prefetch_buffer;          /* batches decoded ahead, >= 1 */
  int last_batch;               /* LMX_LAST_BATCH_* */
} lmx_imagerec_config;

/* Opens the files, reads the record offsets (from the .idx, or by scanning the .rec),
 * loads the image codec and starts the workers on the first epoch. Errors name the
 * parameter (LMX_ERR_ARG), the file (LMX_ERR_IO, LMX_ERR_FORMAT) or the missing codec
 * (LMX_ERR_UNSUPPORTED). out: the iterator, freed by lmx_imagerec_iter_free. */
LMX_API int lmx_imagerec_iter_new(const lmx_imagerec_config *cfg, lmx_imagerec_iter **out);

/* Stops the workers and frees the iterator; NULL is a no-op. */
LMX_API int lmx_imagerec_iter_free(lmx_imagerec_iter *it);

/* Records in this part, and batches per epoch. */
LMX_API int lmx_imagerec_iter_size(const lmx_imagerec_iter *it, int64_t *records,
                                   int64_t *batches);

/* Waits for the next batch and copies it into data (batch_size x channels x height x
 * width float32) and label (batch_size x label_width float32); *pad: rows that are
 * padding; *got = 0 at the end of the epoch (nothing written). A record that cannot be
 * read or decoded gives LMX_ERR_FORMAT naming the file, offset and problem; the batch
 * is skipped and the iterator stays usable. */
LMX_API int lmx_imagerec_iter_next(lmx_imagerec_iter *it, float *data, float *label, int *pad,
                                   int *got);

/* Starts the next epoch (reshuffled when shuffle is set); batches of the current one
 * still being decoded are dropped. */
LMX_API int lmx_imagerec_iter_reset(lmx_imagerec_iter *it);

/* ================================================================= operators === */

/* The operator registry (MXNet's names: "FullyConnected", "_plus_scalar", ...). Ops are
 * numbered 0..count-1 in registry order (stable within one library build). Strings
 * returned here are static and live as long as the library. Thread-safe (read-only). */

/* Parameter types (lmx_op_param_info). The string forms are MXNet's: ints "3", floats
 * "0.5", bools "True"/"False", enums by name, tuples "(2, 2)", dtypes "float32", "None"
 * for an optional value. */
enum {
  LMX_PARAM_INT = 0,
  LMX_PARAM_FLOAT = 1,
  LMX_PARAM_BOOL = 2,
  LMX_PARAM_ENUM = 3,
  LMX_PARAM_SHAPE = 4,     /* tuple of ints */
  LMX_PARAM_STRING = 5,
  LMX_PARAM_DTYPE = 6,
  LMX_PARAM_OPT_INT = 7,   /* int or None */
  LMX_PARAM_OPT_FLOAT = 8, /* float or None */
  LMX_PARAM_FLOATS = 9,    /* tuple of floats */
  LMX_PARAM_OPT_INTS = 10, /* tuple of ints whose entries may be None (slice) */
  LMX_PARAM_OPT_BOOL = 11  /* bool or None */
};

/* Operator flags (lmx_op_info). */
enum {
  LMX_OPFLAG_LOSS = 1,        /* backward needs no head gradient */
  LMX_OPFLAG_NO_GRAD = 2,     /* no gradient flows through it */
  LMX_OPFLAG_RANDOM = 4,      /* draws random numbers */
  LMX_OPFLAG_MUTATES_AUX = 8, /* writes its auxiliary states in training */
  LMX_OPFLAG_UPDATE = 16      /* optimizer update: writes its weight/state inputs */
};

/* Number of registered operators (aliases not counted). Never fails. */
LMX_API int lmx_op_registry_size(int *count);

/* Canonical name of operator i. LMX_ERR_ARG when i is out of range. */
LMX_API int lmx_op_get_name(int i, const char **name);

/* Index of an operator by name or alias ("split" -> SliceChannel's index).
 * LMX_ERR_NOTFOUND for an unknown name; the message suggests close names. */
LMX_API int lmx_op_lookup(const char *name, int *index);

/* Alias i of the registry (alias name and the index of its operator), for building
 * constructors under every name. count: number of aliases (may be NULL).
 * LMX_ERR_ARG when i is out of range (i = -1 only fills count). */
LMX_API int lmx_op_alias(int i, int *count, const char **alias, int *index);

/* Description of operator `index`: its name, documentation, automatic-name hint (the
 * lower-cased name; the symbol layer lower-cases the name the op was called by, see
 * lmx_op_hint), number of parameters and LMX_OPFLAG_* flags. Any out pointer may be NULL.
 * LMX_ERR_ARG for a bad index. */
LMX_API int lmx_op_info(int index, const char **name, const char **doc, const char **hint,
                        int *num_params, int *flags);

/* Which kernels operator `index` has on device type dev_type (LMX_CPU, LMX_GPU): *forward
 * and *backward are 1 when that backend's kernel table has the kernel, 0 otherwise (also
 * when the backend is not built in). Bind refuses a node whose device lacks a kernel it
 * needs. Any out pointer may be NULL. LMX_ERR_ARG for a bad index. */
LMX_API int lmx_op_kernels(int index, int dev_type, int *forward, int *backward);

/* Automatic-name prefix of an op called by `called` (a name or alias), MXNet's rule:
 * the called name lower-cased ("_PlusScalar" -> "_plusscalar"). Written to buf
 * (NUL-terminated, truncated to cap). LMX_ERR_NOTFOUND for an unknown name. */
LMX_API int lmx_op_hint(const char *called, char *buf, int cap);

/* Parameter j of operator `index`: name, LMX_PARAM_* type, default in MXNet's string
 * form (NULL: the parameter is required), enum choices "a|b|c" (NULL otherwise) and a
 * one-line doc. Any out pointer may be NULL. LMX_ERR_ARG for bad indices. */
LMX_API int lmx_op_param_info(int index, int j, const char **name, int *type,
                              const char **def, const char **choices, const char **doc);

/* Names of the inputs (kind 0), outputs (kind 1) or auxiliary states (kind 2) of
 * operator `index` with the given parameters (n key/value strings; keys "__x__" are
 * ignored), joined by ',' into buf (NUL-terminated). count: number of names; visible:
 * the number of visible outputs (kind 1; may be NULL). Errors: parameter errors as
 * lmx_op_infer; LMX_ERR_ARG when cap is too small (the message gives the size needed). */
LMX_API int lmx_op_io_names(int index, int n, const char *const *keys,
                            const char *const *vals, int kind, char *buf, int cap,
                            int *count, int *visible);

/* Single-operator shape and dtype inference, forward and backward, as a symbol node
 * named `node` (used in messages; may be NULL) with parameters keys/vals (n pairs).
 * Inputs: nin must equal the op's input count for these parameters; input i has
 * in_ndims[i] dims (0 = unknown) stored at in_dims[i * LMX_MAX_NDIM ...] (a dim of 0 is
 * unknown); in_dtypes[i] is a dtype code or -1 (in_dtypes may be NULL: all unknown).
 * Results go to caller buffers of `cap` slots laid out as the op's inputs, then all its
 * outputs (hidden ones included), then its aux states: ndims[slot], dims[slot *
 * LMX_MAX_NDIM + d], dtypes[slot] (-1 unknown). counts[0..3] = number of inputs,
 * outputs, aux states, visible outputs. Inputs come back with what inference deduced
 * (e.g. FullyConnected's weight and bias).
 * Errors: LMX_ERR_ARG (unknown index, bad parameters: "FullyConnected 'fc1': parameter
 * 'num_hidden': expected an integer, got 'abc'", wrong nin, cap too small: the message
 * names the slots needed), LMX_ERR_SHAPE / LMX_ERR_DTYPE (a rule is violated: the message
 * names the op, node, input and both shapes), LMX_ERR_NOMEM. */
LMX_API int lmx_op_infer(int index, const char *node, int n, const char *const *keys,
                         const char *const *vals, int nin, const int *in_ndims,
                         const int64_t *in_dims, const int *in_dtypes, int cap, int *counts,
                         int *ndims, int64_t *dims, int *dtypes);

/* ================================================================== Symbols === */

/* A symbolic graph: a list of outputs (heads) of a graph of operator nodes and
 * variables, with MXNet's composition, naming, attribute, listing and JSON rules.
 * Nodes are shared between symbols (internals, selections, groups) and reference
 * counted, so symbol handles may be freed in any order. Composition and attribute
 * changes mutate nodes: they are visible through every symbol sharing the node, as in
 * MXNet. Borrowed strings (lists, JSON, attribute values) live in the symbol until the
 * next call of the same kind on the same symbol, or until it is freed.
 * Thread safety: one symbol handle per thread at a time; automatic names use a
 * process-wide counter per hint (thread-safe); attribute scopes are per thread. */
typedef struct lmx_symbol lmx_symbol;

/* What lmx_symbol_list returns. ATTR: the head node's attributes as key, value pairs
 * (2n strings), hidden keys "__k__" reported twice (also as "k"); ATTR_ALL: every
 * node's attributes in DFS order with keys "<node>$<key>". */
enum {
  LMX_SYM_ARGUMENTS = 0,
  LMX_SYM_OUTPUTS = 1,
  LMX_SYM_AUX_STATES = 2,
  LMX_SYM_INPUTS = 3,
  LMX_SYM_ATTR = 4,
  LMX_SYM_ATTR_ALL = 5
};

/* The mxnet_version written by lmx_symbol_tojson (MXNet 1.9.1, whose rules we follow). */
enum { LMX_SYMBOL_JSON_VERSION = 10901 };

/* A variable named `name` (non-empty), carrying the attributes of the current attribute
 * scope. out: one reference. */
LMX_API int lmx_symbol_variable(const char *name, lmx_symbol **out);

/* An operator node, not yet composed. op_name: a registered name or alias. node_name:
 * NULL for an automatic name ("<hint><n>": hint = op hint, lower-cased op name, or the
 * lower-cased alias called). keys/vals (n pairs, copied): parameters in MXNet's string
 * form, attributes "__x__", and ctx_group / lr_mult / wd_mult / force_mirroring /
 * mirror_stage (stored as "__x__"); "<input>_lr_mult"-style keys are refused. The
 * current attribute scope applies first. out: one reference.
 * Errors: LMX_ERR_NOTFOUND (unknown op), LMX_ERR_ARG (unknown parameter, missing
 * required parameter, bad value; the message names op, node and parameter). */
LMX_API int lmx_symbol_new_op(const char *op_name, const char *node_name, int n,
                              const char *const *keys, const char *const *vals,
                              lmx_symbol **out);

/* Sets the inputs of an uncomposed operator symbol: n inputs by position (names NULL,
 * or names[i] NULL) or by input name (names[i] non-NULL); positional ones come first. Each input must have one output. Inputs left
 * out become variables "<node>_<input>" with a copy of the op's attributes. On an
 * already composed symbol, only names are accepted: each names a variable of the graph
 * to replace (done on a copy of the graph, so other symbols are unaffected).
 * Errors (LMX_ERR_ARG): unknown input name (message lists candidates), too many
 * inputs, multi-output input, a cycle, positional inputs for a composed symbol. */
LMX_API int lmx_symbol_compose(lmx_symbol *sym, int n, const char *const *names,
                               lmx_symbol *const *inputs);

/* Releases one reference. NULL is a no-op. Always LMX_OK. */
LMX_API int lmx_symbol_free(lmx_symbol *sym);

/* Adds one reference. */
LMX_API int lmx_symbol_retain(lmx_symbol *sym);

/* A deep copy (new nodes, same names and attributes). out: one reference. */
LMX_API int lmx_symbol_copy(const lmx_symbol *sym, lmx_symbol **out);

/* The concatenation of the outputs of n symbols. out: one reference. */
LMX_API int lmx_symbol_group(int n, lmx_symbol *const *syms, lmx_symbol **out);

/* Number of outputs (heads). */
LMX_API int lmx_symbol_num_outputs(const lmx_symbol *sym, int *n);

/* Output i (0-based) as a symbol. LMX_ERR_ARG when out of range. out: one reference. */
LMX_API int lmx_symbol_get_output(const lmx_symbol *sym, int i, lmx_symbol **out);

/* Every variable and every visible op output, in DFS order. out: one reference. */
LMX_API int lmx_symbol_get_internals(const lmx_symbol *sym, lmx_symbol **out);

/* The inputs of the head node(s) (each distinct head node once); may have 0 outputs.
 * out: one reference. */
LMX_API int lmx_symbol_get_children(const lmx_symbol *sym, lmx_symbol **out);

/* The head node's name, borrowed (until the node is renamed); *name = NULL when the
 * heads are different nodes (a group). */
LMX_API int lmx_symbol_name(const lmx_symbol *sym, const char **name);

/* A list (kind: LMX_SYM_*). *n strings in *items, both borrowed from the symbol until
 * the next lmx_symbol_list call on it. Orders: MXNet's post-order DFS. */
LMX_API int lmx_symbol_list(lmx_symbol *sym, int kind, int *n, const char *const **items);

/* Attribute `key` of the head node: also "name", "op_name" ("null" for variables),
 * "_value_index"; a hidden key "lr_mult" falls back to "__lr_mult__". *value is NULL when
 * absent or when the heads are different nodes; otherwise borrowed from the symbol until
 * the next lmx_symbol_get_attr on it. */
LMX_API int lmx_symbol_get_attr(lmx_symbol *sym, const char *key, const char **value);

/* Sets attribute `key` of the single head node (key "name" renames it; hidden keys
 * become "__key__"; an op parameter is re-parsed and checked). LMX_ERR_ARG for a group
 * or a bad parameter value (the old value stays). */
LMX_API int lmx_symbol_set_attr(lmx_symbol *sym, const char *key, const char *value);

/* Attribute scopes (MXNet's AttrScope), per thread: push n key/value pairs (copied,
 * merged over the enclosing scope); every node created until the matching pop gets
 * them (hidden keys as "__key__"). Pop without push: LMX_ERR_STATE. */
LMX_API int lmx_attr_scope_push(int n, const char *const *keys, const char *const *vals);
LMX_API int lmx_attr_scope_pop(void);

/* Next automatic name for `hint` ("<hint><counter>") into buf (NUL-terminated; cap
 * bytes). LMX_ERR_ARG when it does not fit. Thread-safe. */
LMX_API int lmx_name_next(const char *hint, char *buf, int cap);

/* Forgets every automatic-name counter (MXNet's fresh NameManager). Thread-safe. */
LMX_API int lmx_name_reset(void);

/* Name managers (MXNet's mx.name.NameManager and mx.name.Prefix). A manager has its own
 * automatic-name counters and a prefix ("" or NULL: a plain NameManager). While a manager
 * is entered on a thread (the innermost one counts), every lmx_symbol_new_op on that
 * thread takes its automatic name "<prefix><hint><n>" from the manager's counters, and a
 * given node name becomes "<prefix><name>"; variables keep their names (as MXNet's).
 * With none entered, the process-wide counters of lmx_name_next apply, without prefix.
 * Managers are reference counted: free releases the caller's reference; an entered
 * manager is held until its exit. Counters are guarded by one process-wide mutex.
 * new: out gets one reference. enter: LMX_ERR_STATE when nested deeper than 256.
 * exit: leaves the innermost entered manager of this thread; LMX_ERR_STATE when none.
 * next: the manager's next automatic name for `hint` into buf (cap bytes, NUL-terminated;
 * m NULL: the process-wide counters), as MXNet's NameManager.get(None, hint);
 * LMX_ERR_ARG when it does not fit. */
typedef struct lmx_name_manager lmx_name_manager;
LMX_API int lmx_name_manager_new(const char *prefix, lmx_name_manager **out);
LMX_API int lmx_name_manager_free(lmx_name_manager *m);
LMX_API int lmx_name_manager_enter(lmx_name_manager *m);
LMX_API int lmx_name_manager_exit(void);
LMX_API int lmx_name_manager_next(lmx_name_manager *m, const char *hint, char *buf, int cap);

/* Shape inference. Inputs: n known shapes, by name (keys[i] names an argument or aux
 * state) or by position in list_arguments() order (keys NULL); ndim[i] dims are in
 * dims[i * LMX_MAX_NDIM ...]; ndim 0 = unknown, dim 0 = unknown dim. Variables'
 * "__shape__" attributes fill what is not given.
 * Outputs: cap slots, at least #arguments + #outputs + #aux; slot k gets out_ndim[k] and
 * out_dims[k * LMX_MAX_NDIM ...] for the arguments, then the outputs, then the aux
 * states, in list order (ndim 0 = unknown). *complete = 1 when every shape is fully
 * known. partial = 0 fails with LMX_ERR_SHAPE naming the unknown arguments when not
 * complete; partial = 1 returns what is known.
 * Errors: LMX_ERR_ARG (unknown name, with candidates; too many shapes; cap too small),
 * LMX_ERR_SHAPE (a contradiction: op, node, input, expected and actual shapes). */
LMX_API int lmx_symbol_infer_shape(lmx_symbol *sym, int n, const char *const *keys,
                                   const int *ndim, const int64_t *dims, int partial, int cap,
                                   int *out_ndim, int64_t *out_dims, int *complete);

/* dtype inference, same conventions: dtypes[i] (-1 unknown), out_dtypes[cap] for
 * arguments, outputs, aux states (-1 unknown); "__dtype__" attributes seed variables. */
LMX_API int lmx_symbol_infer_type(lmx_symbol *sym, int n, const char *const *keys,
                                  const int *dtypes, int partial, int cap, int *out_dtypes,
                                  int *complete);

/* MXNet's JSON text (byte-identical layout to MXNet's writer; mxnet_version
 * LMX_SYMBOL_JSON_VERSION), borrowed from the symbol until the next lmx_symbol_tojson
 * or lmx_symbol_debug_str on it. */
LMX_API int lmx_symbol_tojson(lmx_symbol *sym, const char **json);

/* nnvm's Symbol::Print text, borrowed like lmx_symbol_tojson's. */
LMX_API int lmx_symbol_debug_str(lmx_symbol *sym, const char **text);

/* Writes the JSON to path atomically (temporary file in the same directory, then
 * rename). LMX_ERR_IO names the file. */
LMX_API int lmx_symbol_save(lmx_symbol *sym, const char *path);

/* Loads MXNet JSON (current or legacy; MXNet's upgraders applied) from len bytes of
 * text. Untrusted input: LMX_ERR_FORMAT with a message naming the node index, name and
 * field. out: one reference. */
LMX_API int lmx_symbol_from_json(const char *text, size_t len, lmx_symbol **out);

/* The same from a file (LMX_ERR_IO names it). */
LMX_API int lmx_symbol_load(const char *path, lmx_symbol **out);

/* ================================================================ Executors === */

/* An executor is a symbol bound to arrays and contexts: its gradient graph, memory plan
 * and execution order are computed once, at bind; forward and backward then run the
 * precomputed op list and allocate nothing. A binder collects the configuration one
 * call at a time (SQLite style) and makes executors:
 *
 *   lmx_binder_new(sym, LMX_CPU, 0, &b);
 *   lmx_binder_set_arg(b, "data", -1, data, NULL, LMX_GRAD_NULL);   (or by index)
 *   lmx_binder_set_arg(b, NULL, 1, w, w_grad, LMX_GRAD_WRITE);
 *   lmx_binder_bind(b, &exe);            (every argument given an array)
 *   lmx_binder_free(b);
 *
 * or lmx_binder_set_shape(...) + lmx_binder_simple_bind (the executor allocates every
 * array it was not given). Handles: lmx_binder and lmx_executor, reference counted as
 * everywhere; an executor holds references to its symbol, arrays and memory pool, so
 * handles may be freed in any order. Thread safety: an executor is used by one thread
 * at a time; executors that share a pool (reshape, shared executor) must not run at the
 * same time. Arrays handed out by accessors share the executor's storage. */
typedef struct lmx_binder lmx_binder;
typedef struct lmx_executor lmx_executor;

/* Gradient write requests (MXNet's OpReqType): null never touches the gradient array,
 * write overwrites it, add accumulates into it (never zeroed by the engine). */
enum { LMX_GRAD_NULL = 0, LMX_GRAD_WRITE = 1, LMX_GRAD_ADD = 3 };

/* Binder options (lmx_binder_set_option). LMX_BIND_NO_SHARE: 1 gives every
 * intermediate result its own buffer and disables in-place reuse (for bisecting memory
 * planner bugs; the environment variable LUAMX_EXEC_NO_SHARE=1 does the same). */
enum { LMX_BIND_NO_SHARE = 1 };

/* Lists of an executor (lmx_executor_count / lmx_executor_name). */
enum { LMX_EXEC_ARGS = 0, LMX_EXEC_OUTPUTS = 1, LMX_EXEC_AUX = 2 };

/* New binder for sym on the default context (dev_type, dev_id). The binder holds a
 * reference to sym. out: one reference. LMX_ERR_DEVICE for an unknown context. */
LMX_API int lmx_binder_new(lmx_symbol *sym, int dev_type, int dev_id, lmx_binder **out);

/* Releases a binder (and its references to arrays, symbol, shared executor). NULL is a
 * no-op. Executors it made are independent of it. Always LMX_OK. */
LMX_API int lmx_binder_free(lmx_binder *b);

/* Gives an argument, chosen by name (name != NULL) or by index in list_arguments()
 * order (name NULL), its array, its gradient array (NULL: none) and its write request
 * (LMX_GRAD_*). The executor uses the arrays themselves (no copy). arr may be NULL for
 * simple_bind (allocated then). In bind, an argument without a gradient array gets
 * req null whatever req says (MXNet's rule). The binder takes one reference to each
 * array. LMX_ERR_NOTFOUND (names the argument and lists the symbol's arguments),
 * LMX_ERR_ARG (bad index, bad req). */
LMX_API int lmx_binder_set_arg(lmx_binder *b, const char *name, int index, lmx_ndarray *arr,
                               lmx_ndarray *grad, int req);

/* Sets the write request of one argument (name or index) or, with name NULL and index
 * -1, of every argument. Default: write. Errors as lmx_binder_set_arg. */
LMX_API int lmx_binder_set_grad_req(lmx_binder *b, const char *name, int index, int req);

/* Gives an auxiliary state (name or index in list_auxiliary_states() order) its array
 * (one reference taken). Errors as lmx_binder_set_arg. */
LMX_API int lmx_binder_set_aux(lmx_binder *b, const char *name, int index, lmx_ndarray *arr);

/* simple_bind: the shape of an argument or aux state (by name). Shapes not given are
 * inferred; LMX_ERR_NOTFOUND for an unknown name, LMX_ERR_ARG for a bad shape. */
LMX_API int lmx_binder_set_shape(lmx_binder *b, const char *name, const int64_t *dims,
                                 int ndim);

/* simple_bind: the dtype of an argument or aux state (by name); arguments with none and
 * no __dtype__ attribute are float32. */
LMX_API int lmx_binder_set_dtype(lmx_binder *b, const char *name, int dtype);

/* group2ctx: ops and variables whose __ctx_group__ attribute is `group` are placed on
 * (dev_type, dev_id); data crossing contexts goes through copy nodes. With no group,
 * every bound array must be on the default context. Each context's kernels run on the
 * calling thread; results equal a single-context run. */
LMX_API int lmx_binder_set_group(lmx_binder *b, const char *group, int dev_type, int dev_id);

/* Intermediate buffers come from exe's memory pool (shared_exec); the binder holds a
 * reference to exe. The two executors must never run at the same time. NULL clears. */
LMX_API int lmx_binder_set_shared(lmx_binder *b, lmx_executor *exe);

/* Sets an option (LMX_BIND_*) to value. LMX_ERR_ARG for an unknown option. */
LMX_API int lmx_binder_set_option(lmx_binder *b, int option, int value);

/* Binds: every argument and aux state must have been given an array (LMX_ERR_ARG names
 * the missing one); shapes and dtypes come from the arrays and are checked against
 * each other (LMX_ERR_SHAPE / LMX_ERR_DTYPE name operator, node, input, expected and
 * actual). out: one reference. On failure nothing leaks and the binder is unchanged. */
LMX_API int lmx_binder_bind(lmx_binder *b, lmx_executor **out);

/* simple_bind: like lmx_binder_bind, but every argument, gradient (req != null) and
 * aux state not given is allocated zero-filled, from the shapes given and inferred
 * (LMX_ERR_SHAPE lists the arguments whose shapes cannot be decided). */
LMX_API int lmx_binder_simple_bind(lmx_binder *b, lmx_executor **out);

/* Releases one reference to an executor. NULL is a no-op. Always LMX_OK. */
LMX_API int lmx_executor_free(lmx_executor *exe);

/* Adds one reference. */
LMX_API int lmx_executor_retain(lmx_executor *exe);

/* Runs the forward pass (is_train selects training behaviour: Dropout, BatchNorm).
 * Allocates nothing. Kernel errors name the operator and node; LMX_ERR_UNSUPPORTED
 * when an operator has no kernel for its context yet. forward and backward hold their
 * own reference while they run, so a callback that calls lmx_executor_free on `exe`
 * only drops the caller's reference (the executor goes when the call returns). */
LMX_API int lmx_executor_forward(lmx_executor *exe, int is_train);

/* Runs the backward pass. head_grads[i] is the gradient of output i (n may be 0 and
 * entries NULL where the output is a loss operator's, whose gradient is ignored); the
 * arrays are copied into the executor's buffers. LMX_ERR_STATE before any forward;
 * LMX_ERR_ARG when a needed out_grad is missing (names the output), LMX_ERR_SHAPE when
 * its shape is wrong (expected and actual). Allocates nothing. */
LMX_API int lmx_executor_backward(lmx_executor *exe, lmx_ndarray *const *head_grads, int n,
                                  int is_train);

/* Number of arguments, outputs or aux states (LMX_EXEC_*). */
LMX_API int lmx_executor_count(const lmx_executor *exe, int what, int *n);

/* Name of item i of a list (LMX_EXEC_*), borrowed from the executor. */
LMX_API int lmx_executor_name(const lmx_executor *exe, int what, int i, const char **name);

/* Array of item i of a list (LMX_EXEC_*): the executor's own array (one new reference;
 * it shares the executor's storage, so later runs change it). */
LMX_API int lmx_executor_array(lmx_executor *exe, int what, int i, lmx_ndarray **out);

/* Gradient array of argument i (one new reference) and its request; *out is NULL when
 * the request is null. */
LMX_API int lmx_executor_grad(lmx_executor *exe, int i, lmx_ndarray **out, int *req);

/* Copies n named arrays into the arguments (aux = 0) or aux states (aux = 1) of the
 * same names, converting dtypes. Unknown names fail with LMX_ERR_NOTFOUND ("Find name
 * "x" that is not in the arguments") unless allow_extra; shapes must match
 * (LMX_ERR_SHAPE). Nothing is copied when any check fails. */
LMX_API int lmx_executor_copy_params(lmx_executor *exe, const char *const *names,
                                     lmx_ndarray *const *arrays, int n, int aux,
                                     int allow_extra);

/* New executor for new shapes that shares memory and parameters with exe (MXNet's
 * reshape): n names with shapes given as ndims[i] dims each, concatenated in dims.
 * Arrays with no more elements than before become views of the old ones; larger ones
 * need allow_up_sizing (else LMX_ERR_SHAPE naming the argument); other arguments must
 * keep their shape unless partial_shaping. Intermediates come from exe's pool.
 * out: one reference. */
LMX_API int lmx_executor_reshape(lmx_executor *exe, int partial_shaping, int allow_up_sizing,
                                 int n, const char *const *names, const int64_t *dims,
                                 const int *ndims, lmx_executor **out);

/* Monitor callback: name as MXNet names it ("fc_output", "fc_backward_output0", with
 * monitor_all also "fc_data" and variables' names); arr is the executor's array,
 * borrowed for the duration of the call (lmx_ndarray_retain to keep it). Called on the
 * thread that called forward/backward, during that call. */
typedef void (*lmx_monitor_fn)(const char *name, lmx_ndarray *arr, void *user);

/* Installs (fn != NULL) or removes (fn NULL) the monitor callback: called after every
 * operator with each of its outputs, and with monitor_all also before it with each of
 * its inputs. user is passed back untouched; the caller keeps fn and user valid while
 * installed. */
LMX_API int lmx_executor_set_monitor(lmx_executor *exe, lmx_monitor_fn fn, void *user,
                                     int monitor_all);

/* Gradient finality, known at bind: the backward pass is a list of steps, and the
 * gradient of an argument is final after the last step that writes or adds into its
 * array (several uses of one argument, shared weights, add into one array, so only the
 * last use counts). steps[a] (a < n, the argument count) gets that backward step's
 * index, 0-based among the backward steps (*num_steps of them); -1 when no step writes
 * the gradient (it is zero-filled, or left as is with req add, before the first step);
 * -2 when the argument has no gradient (req null). With req add, "final" means final
 * for this backward pass (the caller decides when accumulation ends). */
LMX_API int lmx_executor_grad_final(const lmx_executor *exe, int *steps, int n, int *num_steps);

/* Gradient hook: called by backward with the n arguments (indices into the argument
 * list) whose gradients became final after backward step `step` (-1: before the first
 * step), in step order, each argument once per pass. args is borrowed for the call.
 * Runs on the thread that called backward, during that call, between two steps; a
 * non-zero return fails the backward with that status (set a message with it, or the
 * executor names the step). Backward still allocates nothing. */
typedef int (*lmx_grad_final_fn)(int step, const int *args, int n, void *user);

/* Installs (fn != NULL) or removes (fn NULL) the gradient hook. An executor bound by a
 * group (lmx_group_*) that trains with a dist kvstore's overlap uses the hook itself:
 * do not replace it there. */
LMX_API int lmx_executor_set_grad_hook(lmx_executor *exe, lmx_grad_final_fn fn, void *user);

/* The plan as text (MXNet's debug_str: every op of the forward and backward graph, its
 * inputs and attributes, then a "Memory plan:" line and MXNet's two "Total" lines).
 * Borrowed from the executor until its next debug_str call. */
LMX_API int lmx_executor_debug_str(lmx_executor *exe, const char **text);

/* Memory figures: planned (bytes of the intermediate buffers the plan allocates),
 * naive (sum over the intermediates if none were shared), pool (bytes of the memory
 * pool, shared with other executors). Any out pointer may be NULL. */
LMX_API int lmx_executor_memory(const lmx_executor *exe, int64_t *planned, int64_t *naive,
                                int64_t *pool);

/* The symbol the executor runs (after common-subexpression elimination). out: one
 * reference. */
LMX_API int lmx_executor_optimized_symbol(lmx_executor *exe, lmx_symbol **out);

/* ================================================================= Training === */

/* The helpers under mx.mod / mx.executor_manager / mx.kv: the bucketing executor pool,
 * the data-parallel executor group and the kvstores (src/exec/bucket.c, group.c,
 * kvstore.c with one backend per engine: kv_local.c, kv_dist.c). Handles are owned by the caller (one reference from *_new, released by
 * *_free, NULL a no-op); executors and arrays they hand out carry their own references
 * and stay valid after the handle is freed. Thread safety: each handle is used by one
 * thread at a time. Host callbacks (group monitor, kvstore updater) run only on the
 * thread that called the API function, during that call. */
typedef struct lmx_bucketing lmx_bucketing;
typedef struct lmx_group lmx_group;
typedef struct lmx_kvstore lmx_kvstore;

/* MXNet's _split_input_slice: the n slices [begin[i], end[i]) of `batch` rows for the
 * work loads w[0..n) (all >= 0): n_i = round-half-even(w_i * batch / sum(w)), the last
 * slice takes what rounding left, ranges clipped to batch. LMX_ERR_ARG with MXNet's
 * "Too many slices such that some splits are empty" (plus the batch, the device count
 * and the empty slice) when a slice would be empty. Caller buffers of n. Thread-safe. */
LMX_API int lmx_split_slices(int64_t batch, int n, const double *workload, int64_t *begin,
                             int64_t *end);

/* ---- bucketing ---- */

/* New bucketing pool whose default bucket `default_key` runs default_exec (bound by the
 * caller, normally with simple_bind; the pool takes one reference). Every other bucket
 * is bound against it: parameters, gradients and aux states of the same names are the
 * default executor's arrays, intermediates come from its memory pool. out: one ref. */
LMX_API int lmx_bucketing_new(int64_t default_key, lmx_executor *default_exec,
                              lmx_bucketing **out);

/* Releases the pool (its executors live on while other references hold them). */
LMX_API int lmx_bucketing_free(lmx_bucketing *bp);

/* Binds bucket `key` (not yet bound: LMX_ERR_STATE otherwise) for sym on the default
 * executor's context. n inputs (data, labels) with shapes: names[i], ndims[i] dims taken
 * in order from dims. An input is a view of the same-named input array of the bound
 * bucket with the largest inputs when that is large enough and of the same dtype (else
 * its own array; MXNet's shared_data_arrays), with the default executor's write request
 * for that name (null if it has none); other arguments the default executor has are
 * shared with it (its request); the rest get own arrays, request null. The pool grows
 * only by the blocks that fit in none of its free slabs. out: one reference.
 * Errors name the bucket key ("bucket key 7: ..."): shape conflicts with the shared
 * parameters (LMX_ERR_SHAPE), unknown input names (LMX_ERR_NOTFOUND). */
LMX_API int lmx_bucketing_bind(lmx_bucketing *bp, int64_t key, lmx_symbol *sym, int n,
                               const char *const *names, const int64_t *dims,
                               const int *ndims, lmx_executor **out);

/* The executor of a bound key (one new reference); LMX_ERR_NOTFOUND naming the key
 * otherwise. Allocates nothing. */
LMX_API int lmx_bucketing_get(lmx_bucketing *bp, int64_t key, lmx_executor **out);

/* Bound keys in bind order (the default first): min(cap, count) written, count in *n. */
LMX_API int lmx_bucketing_keys(const lmx_bucketing *bp, int cap, int64_t *keys, int *n);

/* Memory: pool = bytes of the shared memory pool; arrays = bytes of the storage behind
 * the argument, gradient and aux arrays of all buckets, each storage counted once
 * (shared parameters and input views add nothing). Either out pointer may be NULL. */
LMX_API int lmx_bucketing_memory(const lmx_bucketing *bp, int64_t *pool, int64_t *arrays);

/* ---- data-parallel executor group ---- */

/* Monitor callback of a group: ctx is the context's index (0-based) in the group, name
 * MXNet's monitor name, arr a copy of the array owned by the group (borrowed for the
 * call). Records are delivered on the caller's thread after each step, context 0's
 * first, each context's in the order its executor produced them. */
typedef void (*lmx_group_monitor_fn)(int ctx, const char *name, lmx_ndarray *arr, void *user);

/* New group for sym over n contexts (dev_types[i], dev_ids[i]) with work loads
 * (workload NULL: all 1). Configure with add_input / add_param, then bind.
 * out: one reference. LMX_ERR_DEVICE for an unknown context, LMX_ERR_ARG for n < 1 or a
 * negative work load. */
LMX_API int lmx_group_new(lmx_symbol *sym, int n, const int *dev_types, const int *dev_ids,
                          const double *workload, lmx_group **out);

/* Releases the caller's reference: the group (its worker threads, executors, arrays)
 * goes with the last one. lmx_group_forward and lmx_group_backward hold a reference
 * while they run, so a callback (monitor, custom operator) that frees the group during
 * the step only drops the caller's: the group goes when the step returns. NULL is a
 * no-op. Always LMX_OK. */
LMX_API int lmx_group_free(lmx_group *g);

/* Declares an input (data or label) with its full-batch shape, its batch axis (0: sliced
 * over the contexts; -1: copied whole to every context; others LMX_ERR_UNSUPPORTED), its
 * dtype (-1: float32 unless __dtype__) and write request (LMX_GRAD_*: inputs_need_grad).
 * Before bind only (LMX_ERR_STATE). */
LMX_API int lmx_group_add_input(lmx_group *g, const char *name, const int64_t *dims, int ndim,
                                int batch_axis, int dtype, int req);

/* Declares a parameter with its write request (fixed parameters: LMX_GRAD_NULL).
 * Parameters are shared by name with the shared group; every other argument that is not
 * an input (states) gets request null. Before bind only. */
LMX_API int lmx_group_add_param(lmx_group *g, const char *name, int req);

/* Slices the batch and binds one executor per context (simple_bind style); with shared
 * (bound, same number of contexts) executor i shares parameters, gradients, aux states
 * and memory pool with shared's executor i, and its inputs are views of shared's inputs
 * of the same names when those are large enough. Starts one worker thread per context
 * when n >= 2. Errors name the context ("group: context cpu(1): ..."); inputs
 * disagreeing on the batch size: LMX_ERR_SHAPE; MXNet's slicing error as
 * lmx_split_slices. */
LMX_API int lmx_group_bind(lmx_group *g, lmx_group *shared);

/* New full-batch shapes for n inputs (names[i], ndims[i] dims from dims): a no-op when
 * nothing changes; otherwise re-slices and binds new executors against the group's first
 * executors (parameters, gradients, aux and pool shared, inputs views of theirs when not
 * larger; MXNet reshapes _default_execs).
 * On failure the group keeps its executors and shapes. */
LMX_API int lmx_group_reshape(lmx_group *g, int n, const char *const *names,
                              const int64_t *dims, const int *ndims);

/* Number of contexts, the bound batch size and the number of outputs (any may be NULL). */
LMX_API int lmx_group_info(const lmx_group *g, int *num_ctx, int64_t *batch, int *num_outputs);

/* The slices of the bound batch: begin[i], end[i] for each context (caller buffers of
 * num_ctx). LMX_ERR_STATE before bind. */
LMX_API int lmx_group_slices(const lmx_group *g, int64_t *begin, int64_t *end);

/* Executor of context i (one new reference). It changes after a reshape that changed
 * shapes. */
LMX_API int lmx_group_executor(lmx_group *g, int i, lmx_executor **exe);

/* Copies n full-batch arrays (names[i]: inputs of the group; shapes must equal the
 * bound ones, LMX_ERR_SHAPE otherwise) into every context's input arrays: rows
 * [begin_i, end_i) of each (no intermediate copy; contexts in parallel). */
LMX_API int lmx_group_load(lmx_group *g, int n, const char *const *names,
                           lmx_ndarray *const *arrays);

/* Loads as lmx_group_load (n may be 0) and runs forward on every context, each in its
 * own worker thread; waits for all. A failing context's error is reported with its name
 * ("group: context cpu(1) (device 2 of 2): ..."). Allocates nothing unless a monitor is
 * set (its records are copies). */
LMX_API int lmx_group_forward(lmx_group *g, int n, const char *const *names,
                              lmx_ndarray *const *arrays, int is_train);

/* Backward on every context; head_grads[h] (n may be 0, entries NULL for loss outputs)
 * are merged-shape gradients of output h, sliced by rows for each context. Each context's
 * gradient arrays then hold the gradient of its own slice (as in MXNet). */
LMX_API int lmx_group_backward(lmx_group *g, int n, lmx_ndarray *const *head_grads);

/* Sums the gradient of every argument that is not an input (parameters) over the
 * contexts into each context's gradient array (the result equals a one-context run
 * within float rounding); input gradients stay per slice. CPU float32/float64
 * gradients only. Allocates nothing. */
LMX_API int lmx_group_sum_grads(lmx_group *g);

/* Output h: of context ctx (its executor's array), or merged (ctx = -1): the contexts'
 * outputs concatenated along axis 0 into a group-owned CPU array (rewritten by each
 * call). out: one new reference. */
LMX_API int lmx_group_output(lmx_group *g, int h, int ctx, lmx_ndarray **out);

/* Gradient of input i (in add_input order), per context or merged as lmx_group_output.
 * LMX_ERR_STATE when the input has no gradient (request null). */
LMX_API int lmx_group_input_grad(lmx_group *g, int i, int ctx, lmx_ndarray **out);

/* Installs (fn != NULL) or removes the monitor callback on every context (and on the
 * executors of later reshapes). The caller keeps fn and user valid while installed. */
LMX_API int lmx_group_set_monitor(lmx_group *g, lmx_group_monitor_fn fn, void *user,
                                  int monitor_all);

/* Overlap of a dist kvstore's all-reduces with backward: from now on each backward
 * starts kv's reduction of the n parameters `names` (the keys, in the order of the
 * lmx_kvstore_pushpull that follows, with one value per key: the group's gradient
 * arrays) and starts the all-reduce of each gradient, or of a fused bucket of small
 * ones in reverse layer order, as soon as the executor knows it is final; that
 * pushpull then waits for the sums and updates. The result equals the plain pushpull's
 * (bit-identical on 2 workers). *armed (may be NULL) gets 1 when overlap applies: kv
 * is a dist store of more than one worker without LUAMX_DIST_OVERLAP=0, the group has
 * ONE context, and every name is a parameter with grad_req write (req add accumulates
 * over several backwards, so its gradient is not final after one); otherwise backward
 * and pushpull work as before. kv NULL turns it off. The caller keeps kv alive while it
 * is set (after a bind or reshape it applies to the new executors). A backward that no
 * pushpull of those keys follows costs its all-reduces (the next kvstore call or
 * backward completes and drops them). */
LMX_API int lmx_group_set_overlap(lmx_group *g, lmx_kvstore *kv, int n, const char *const *names,
                                  int *armed);

/* ---- kvstore ---- */

/* Updater: called once per push with the summed gradient and the stored weight (both
 * owned by the store, borrowed for the call); it updates weight in place. Returns 0, or
 * non-zero to fail the push (LMX_ERR_STATE-style status; the host keeps its own error).
 * Runs on the thread that called push. */
typedef int (*lmx_kv_updater_fn)(const char *key, lmx_ndarray *grad, lmx_ndarray *weight,
                                 void *user);

/* Host callback of the optimizer-state hooks: writes or reads the caller's states
 * (the engine does not know their format). Returns 0, or non-zero on failure. */
typedef int (*lmx_kv_states_fn)(void *user);

/* New store. Types (one backend each, chosen by name):
 *  - "local", "device": one worker; values summed over devices on the host (on CPU
 *    contexts the two are the same);
 *  - "dist_sync", "dist_device_sync": several workers started by mpirun, summed with
 *    MPI all-reduces (MPI is opened on first use from the plugin libluamx_mpi.so, found
 *    next to libluamx or at $LUAMX_MPI_PLUGIN). Outside mpirun the store is rank 0 of 1.
 *    Environment: LUAMX_DIST_TIMEOUT (seconds any collective may wait before the ranks
 *    that do not answer are named and the call fails; default 120),
 *    LUAMX_DIST_SMALL_BYTES (1 MiB: smaller keys are fused into buffers of
 *    LUAMX_DIST_FUSION_BYTES, 4 MiB), LUAMX_DIST_CHUNK_BYTES (16 MiB: larger keys are
 *    reduced in chunks of this size), LUAMX_DIST_HOT_BYTES (1 MiB, 0 off: a pushpull
 *    without an updater reduces a larger key into its output in chunks of this size,
 *    each copied into the stored value while in the cache), LUAMX_DIST_SHM_BYTES (256 KiB,
 *    0 off: when every worker runs on one node, larger keys are summed through memory the
 *    workers share, in slots of this size, instead of MPI messages);
 *  - "nccl" (CUDA builds): one worker; values on several GPUs summed on the GPUs by NCCL
 *    all-reduces (libnccl.so.2, opened at the first such push), keys up to
 *    LUAMX_NCCL_BUCKET_BYTES (1 MiB) fused into buckets; values on CPU contexts or on
 *    one GPU twice are summed as "device" does.
 * Errors: LMX_ERR_UNSUPPORTED for "nccl" in a build without CUDA, "dist_async" (no
 * parameter servers) and a dist type whose plugin or MPI library cannot be loaded (the
 * message says what to install); LMX_ERR_IO when MPI fails to start; LMX_ERR_ARG for
 * other names. out: one reference. For a dist type, every worker creates its stores in
 * the same order. */
LMX_API int lmx_kvstore_new(const char *type, lmx_kvstore **out);

/* Releases the store and its arrays. NULL is a no-op. Always LMX_OK. */
LMX_API int lmx_kvstore_free(lmx_kvstore *kv);

/* The type name given at creation, borrowed from the store. */
LMX_API int lmx_kvstore_type(const lmx_kvstore *kv, const char **type);

/* This worker's rank in [0, num_workers) (0 for one-worker types). */
LMX_API int lmx_kvstore_rank(const lmx_kvstore *kv, int *rank);

/* The number of workers (1 for "local" / "device"; mpirun's -np for dist types). */
LMX_API int lmx_kvstore_num_workers(const lmx_kvstore *kv, int *num_workers);

/* Waits until every worker has called it (no-op for one worker). LMX_ERR_IO when a
 * worker is lost (the message names the ranks that do not answer); LMX_ERR_STATE when
 * the workers are in different calls (it names them). */
LMX_API int lmx_kvstore_barrier(lmx_kvstore *kv);

/* A consistency check: every worker calls it with the same `what` and `value` (for
 * example "batches in epoch 3" and the count); LMX_ERR_STATE names the ranks and their
 * values when they differ. Instant for one worker. */
LMX_API int lmx_kvstore_check(lmx_kvstore *kv, const char *what, int64_t value);

/* Stores a copy of value (on the CPU) under key and makes its merge buffer, so push and
 * pull allocate nothing. Dist types: every worker inits the same keys with the same
 * shapes and dtypes in the same order (LMX_ERR_STATE naming the key and ranks
 * otherwise), and rank 0's value is broadcast, so every worker starts identical.
 * LMX_ERR_STATE when the key exists. */
LMX_API int lmx_kvstore_init(lmx_kvstore *kv, const char *key, const lmx_ndarray *value);

/* Sums the n values (one per device; same shape and dtype, CPU arrays; any dtype) and,
 * for dist types, over every worker; with an updater, calls it once with (key, sum,
 * stored), else stores the sum. LMX_ERR_NOTFOUND names an uninitialized key. */
LMX_API int lmx_kvstore_push(lmx_kvstore *kv, const char *key, lmx_ndarray *const *values,
                             int n);

/* Copies the stored value into the n outputs (any context; shapes must match). */
LMX_API int lmx_kvstore_pull(lmx_kvstore *kv, const char *key, lmx_ndarray *const *outs,
                             int n);

/* Push then pull of nkeys keys in one call, so a dist store fuses small keys into few
 * all-reduces, chunks large ones, and updates each key as soon as its sum is in while
 * later keys are still being reduced. values: nvalues arrays per key, key k's at
 * values[k * nvalues ...]; outs: nouts per key likewise (outs NULL or nouts 0: push
 * only; values NULL: pull only; outs may be values). Errors as push and pull; keys
 * before the failing one may have been updated. */
LMX_API int lmx_kvstore_pushpull(lmx_kvstore *kv, int nkeys, const char *const *keys,
                                 lmx_ndarray *const *values, int nvalues,
                                 lmx_ndarray *const *outs, int nouts);

/* Optimizer states (MXNet's save_optimizer_states / load_optimizer_states): save calls
 * fn(user) on the worker that writes the file (rank 0; the only worker of a local
 * store), load calls it on every worker; for dist types the status is shared, so all
 * workers succeed or all fail (LMX_ERR_IO naming the rank that failed). */
LMX_API int lmx_kvstore_save_optimizer_states(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user);
LMX_API int lmx_kvstore_load_optimizer_states(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user);

/* Sets (fn != NULL) or clears the updater; user is passed back untouched. The caller
 * keeps fn and user valid while set. */
LMX_API int lmx_kvstore_set_updater(lmx_kvstore *kv, lmx_kv_updater_fn fn, void *user);

/* ========================================== Custom operators (host callbacks) === */

/* The operator "Custom" (MXNet's mx.operator.CustomOp): an operator whose structure,
 * shape/type rules, forward and backward come from the host (the Lua module's
 * mx.operator.register). Its parameters are op_type plus any key/value strings; each
 * parse of a Custom node asks the host for a "prop" for them (create), the engine keeps
 * the prop's id in the node's parameters and calls the host again for inference and to
 * run the op. Callbacks always run on the thread that called the engine, during that
 * call (work on the group's worker threads is relayed to it); they must not unwind
 * (return a status instead, with lmx_custom_fail for the message). */

/* Bits of lmx_custom_info.needs: what the op's backward reads (MXNet's
 * declare_backward_dependency, by group). */
enum { LMX_CUSTOM_NEEDS_INPUTS = 1, LMX_CUSTOM_NEEDS_OUTPUTS = 2, LMX_CUSTOM_NEEDS_OUT_GRADS = 4 };

/* What the host tells the engine about one prop (filled by the create callback). */
typedef struct lmx_custom_info {
  int64_t prop;      /* the host's id for the prop, > 0 */
  int num_inputs;    /* list_arguments */
  int num_outputs;   /* list_outputs */
  int num_aux;       /* list_auxiliary_states */
  int needs;         /* LMX_CUSTOM_NEEDS_* bits; without OUT_GRADS the op is a loss */
  const char *names; /* "in1,in2,out1,aux1": the three lists joined by commas (copied) */
} lmx_custom_info;

/* The host's callbacks. Each returns 0, or a non-zero status after lmx_custom_fail.
 *  - create: a prop for op_type and the node's n key/value strings (op_type and
 *    "__x__" attributes excluded); node is the node's name ("" when none). Fills info.
 *  - infer_shape: n = inputs + outputs + aux slots; ndim[i] and dims[i * LMX_MAX_NDIM
 *    ...]; on entry the input slots hold what is known (ndim 0: unknown), on return
 *    every slot holds the host's answer.
 *  - infer_type: the same with dtypes[n] (-1 unknown on entry).
 *  - forward: arrays = inputs, outputs, aux (req[i] per output); arrays view the
 *    engine's memory and are valid only during the call.
 *  - backward: arrays = out_grads (num_outputs), inputs, outputs, input gradients
 *    (num_inputs), aux; req[i] per input gradient. Entries the op did not declare it
 *    needs are NULL. */
typedef struct lmx_custom_callbacks {
  int (*create)(const char *op_type, const char *node, int n, const char *const *keys,
                const char *const *vals, lmx_custom_info *info);
  int (*infer_shape)(int64_t prop, int n, int *ndim, int64_t *dims);
  int (*infer_type)(int64_t prop, int n, int *dtypes);
  int (*forward)(int64_t prop, int is_train, int dev_type, int dev_id, const int *req,
                 lmx_ndarray *const *arrays);
  int (*backward)(int64_t prop, int is_train, int dev_type, int dev_id, const int *req,
                  lmx_ndarray *const *arrays);
} lmx_custom_callbacks;

/* Installs the host's callbacks (copied; NULL uninstalls: Custom nodes then fail to
 * parse with "no host is serving Custom operators"). Not thread safe: call once at
 * start-up. */
LMX_API int lmx_custom_set_callbacks(const lmx_custom_callbacks *cb);

/* For a callback about to return a failure: sets the calling thread's message to msg
 * and returns `status` (LMX_ERR_ARG when status is 0). The engine prefixes it with the
 * operator, node and op_type. */
LMX_API int lmx_custom_fail(int status, const char *msg);

/* Props whose last Custom node was freed: writes up to cap ids to ids and *n, and
 * forgets them (the host drops its objects; nothing calls back from a free, which may
 * run inside a garbage collector). Call until *n < cap. */
LMX_API int lmx_custom_released(int64_t *ids, int cap, int *n);

/* ================================================ Imperative operator calls === */

/* Runs one registered operator (`op_name`: a name or alias, see lmx_op_lookup) on
 * NDArrays, outside any symbol: MXNet's mx.nd.<Op>(...). Parameters are nkeys
 * key/value strings in MXNet's forms ("num_hidden" = "128", "kernel" = "(3, 3)",
 * "no_bias" = "True"; keys "__x__" are ignored). Shapes and dtypes of the outputs are
 * inferred from the inputs with the operator's own rules.
 *  - inputs: nin arrays in the op's input order (lmx_op_io_names kind 0). An op with
 *    auxiliary states (BatchNorm) also accepts them appended after its inputs (nin =
 *    inputs + aux states, MXNet's NDArray convention); they are read, and updated in
 *    place when the op writes them in training. Without them, temporary states are used
 *    (moving variances 1, everything else 0) and dropped. Inputs are borrowed.
 *  - outputs / nout: on entry *nout is the capacity of `outputs`: at least the number
 *    of visible outputs; with room for every output (lmx_op_io_names kind 1 count), the
 *    hidden ones (Dropout's mask, BatchNorm's mean/var) are returned too. A NULL entry
 *    receives a new array (one reference for the caller); a non-NULL entry must have the
 *    inferred shape and dtype and is overwritten (the caller keeps its reference; it may
 *    be an input when the op allows in-place). On return *nout is the number of arrays
 *    written.
 *  - is_train: 1 for training behaviour (Dropout masks, BatchNorm batch statistics).
 * Random operators draw from the global generator (lmx_random_seed).
 * Errors: LMX_ERR_NOTFOUND (unknown operator), LMX_ERR_ARG (bad parameters, wrong input
 * count, capacity too small), LMX_ERR_SHAPE / LMX_ERR_DTYPE (inputs that violate the
 * op's rules, or a supplied output of the wrong shape), LMX_ERR_UNSUPPORTED (an array not
 * on the CPU, or an op with no CPU kernel), LMX_ERR_NOMEM. Messages name the operator and
 * the argument. On failure no new array is returned (supplied outputs may have been
 * partly written). Thread safety: distinct arrays on distinct threads.
 * While the thread records (lmx_autograd_set_state), a successful call is appended to the
 * autograd tape, and an output given over an input or a marked variable fails with
 * LMX_ERR_STATE before the kernel runs (the same holds for lmx_opcall_invoke). */
LMX_API int lmx_imperative_invoke(const char *op_name, int nkeys, const char *const *keys,
                                  const char *const *vals, int nin, lmx_ndarray *const *inputs,
                                  int *nout, lmx_ndarray **outputs, int is_train);

/* The gradient of one operator call: given the same op, parameters and inputs as an
 * lmx_imperative_invoke, its outputs (nout = every output, hidden ones included, or only
 * the visible ones when the op's backward does not read outputs) and the head gradients
 * out_grads[nout] (the array may be NULL, and so may entries: a missing head gradient of
 * a visible output counts as ones; loss operators such as SoftmaxOutput ignore them),
 * computes the input gradients into in_grads[nin_op] (nin_op = the op's input count;
 * gradients of aux states are not computed). reqs[nin_op] (NULL: all LMX_REQ_WRITE =
 * 1) says per input: 0 skip (in_grads[i] untouched), 1 overwrite, 3 accumulate into the
 * existing values. A NULL in_grads[i] with a non-zero req receives a new zero-filled array
 * (one reference for the caller); a non-NULL one must have the input's shape and dtype.
 * Errors as lmx_imperative_invoke, plus LMX_ERR_UNSUPPORTED for an op without a gradient
 * and LMX_ERR_ARG when outputs the backward needs are missing. */
LMX_API int lmx_imperative_backward(const char *op_name, int nkeys, const char *const *keys,
                                    const char *const *vals, int nin,
                                    lmx_ndarray *const *inputs, int nout,
                                    lmx_ndarray *const *outputs,
                                    lmx_ndarray *const *out_grads, lmx_ndarray **in_grads,
                                    const int *reqs, int is_train);

/* ---- autograd: recording imperative calls (MXNet's mx.autograd) ---------------------
 * While the calling thread records, every successful lmx_imperative_invoke /
 * lmx_opcall_invoke appends a node to a tape: the operator, its parameters, views of its
 * inputs, outputs and aux states; each output array refers to its node, so the graph
 * lives as long as the arrays computed from it. Backward runs the executors' backward
 * kernels in reverse. Not recording costs one predictable branch per call.
 * Thread safety: the recording state is per thread; a tape is used by one thread. */

/* Sets the thread's recording / training flags (a negative value keeps the flag) and
 * returns the previous values (either pointer may be NULL). */
LMX_API int lmx_autograd_set_state(int recording, int training, int *was_recording,
                                   int *was_training);

/* Marks arr as a variable (attach_grad): a gradient array (grad, or a new zero array
 * of arr's shape when NULL) and req (0 null, 1 write, 3 add). Drops any recorded history
 * of arr. LMX_ERR_ARG for another req, LMX_ERR_SHAPE for a grad of another shape. */
LMX_API int lmx_autograd_mark(lmx_ndarray *arr, int req, lmx_ndarray *grad);

/* The gradient array of a marked arr (one reference for the caller) and its req; NULL
 * and -1 when arr is not marked. */
LMX_API int lmx_autograd_get_grad(lmx_ndarray *arr, lmx_ndarray **grad, int *req);

/* What arr's entry is: kind -1 none, 0 a recorded operator's output (op_name = its
 * name), 1 a marked variable, 2 an unmarked input of a recorded call, 3 the output of
 * an autograd function. op_name may be NULL. */
LMX_API int lmx_autograd_info(lmx_ndarray *arr, int *kind, const char **op_name);

/* A new array sharing arr's storage without its history (x:detach()). */
LMX_API int lmx_autograd_detach(lmx_ndarray *arr, lmx_ndarray **out);

/* Names arr's node for lmx_autograd_export: the producing operator's node, or the
 * variable arr is (an unrecorded array becomes one). */
LMX_API int lmx_autograd_set_name(lmx_ndarray *arr, const char *name);

/* Backward from nh heads with head gradients (head_grads NULL, or entries NULL: ones;
 * loss operators ignore them). nvar == 0: every marked variable reached receives its
 * gradient per its req (write: copied into its gradient array, zeros when nothing
 * flows to it; add: accumulated). nvar > 0 (mx.autograd.grad): only vars[nvar] are
 * differentiated and var_grads[nvar] receive new arrays (one reference each); gradient
 * arrays of variables are left alone. Without retain_graph the nodes visited drop their
 * saved arrays; a later backward through them fails with LMX_ERR_STATE naming the
 * operator. LMX_ERR_STATE for a head that is not a recorded output; LMX_ERR_UNSUPPORTED
 * for an operator without a backward kernel on the path; LMX_ERR_SHAPE for a head
 * gradient of another shape. is_train is unused (each call replays its own). */
LMX_API int lmx_autograd_backward(int nh, lmx_ndarray *const *heads,
                                  lmx_ndarray *const *head_grads, int nvar,
                                  lmx_ndarray *const *vars, lmx_ndarray **var_grads,
                                  int retain_graph, int is_train);

/* A user-defined differentiable function (mx.autograd.Function): backward calls
 * fn(id, nout, out_grads, nin, in_grads); fn stores one new reference per in_grads[i]
 * and returns LMX_OK, or a non-zero status (the backward then fails with LMX_ERR_STATE;
 * the caller keeps its own message). */
typedef int (*lmx_autograd_fn)(int64_t id, int nout, lmx_ndarray *const *out_grads, int nin,
                               lmx_ndarray **in_grads);

/* Records a function call: inputs[nin] -> outputs[nout] (arrays already computed); the
 * outputs' entries become the new node. */
LMX_API int lmx_autograd_function_record(int nin, lmx_ndarray *const *inputs, int nout,
                                         lmx_ndarray *const *outputs, lmx_autograd_fn fn,
                                         int64_t id);

/* Ids of function nodes that were released since the last call (up to cap into ids;
 * *n written), so the caller can drop what it keeps for them. */
LMX_API int lmx_autograd_function_dead(int64_t *ids, int cap, int *n);

/* The recorded graph behind nh heads, in topological order (inputs first), for building
 * a symbol (mx.autograd.get_symbol). LMX_ERR_STATE for an unrecorded head. */
typedef struct lmx_ag_graph lmx_ag_graph;
LMX_API int lmx_autograd_export(int nh, lmx_ndarray *const *heads, lmx_ag_graph **out);
LMX_API int lmx_autograd_graph_free(lmx_ag_graph *g);
/* Node count and the heads (node index, output index), borrowed from g. */
LMX_API int lmx_autograd_graph_size(const lmx_ag_graph *g, int *nnodes, int *nheads,
                                    const int **head_node, const int **head_index);
/* Node i: op (NULL for a variable), name (NULL: automatic), the parameter strings, the
 * inputs (node index, output index). Everything borrowed from g. */
LMX_API int lmx_autograd_graph_node(const lmx_ag_graph *g, int i, const char **op,
                                    const char **name, int *nkeys, const char *const **keys,
                                    const char *const **vals, int *nin, const int **in_node,
                                    const int **in_index);

/* A prepared operator call: an operator with its parameters parsed once, invoked many
 * times (optimizer updates run one per parameter every step). Reference counted. */
typedef struct lmx_opcall lmx_opcall;

/* Looks up op_name and parses the nkeys parameters as lmx_imperative_invoke does.
 * out: one reference. Errors: LMX_ERR_NOTFOUND (unknown op), LMX_ERR_ARG (bad
 * parameters, naming the op and parameter), LMX_ERR_UNSUPPORTED (no CPU kernel),
 * LMX_ERR_NOMEM. */
LMX_API int lmx_opcall_new(const char *op_name, int nkeys, const char *const *keys,
                           const char *const *vals, lmx_opcall **out);

/* Releases one reference; NULL is a no-op. */
LMX_API int lmx_opcall_free(lmx_opcall *call);

/* Changes one numeric (int or float) parameter of a prepared call in place, with its
 * bounds checked (a learning rate that changes every step); allocates nothing.
 * LMX_ERR_ARG names the op and parameter for an unknown, non-numeric or out-of-range one.
 * Not thread safe against a concurrent lmx_opcall_invoke of the same call. */
LMX_API int lmx_opcall_set(lmx_opcall *call, const char *key, double value);

/* Runs the prepared op on inputs with the same contract as lmx_imperative_invoke
 * (shapes and dtypes are inferred and checked on every call). When every output is given
 * and the op needs no workspace and no temporary aux states, the call makes no heap
 * allocation. Thread safety: one call object may be invoked from several threads at
 * once (it is only read), but not while lmx_opcall_set changes it. */
LMX_API int lmx_opcall_invoke(lmx_opcall *call, int nin, lmx_ndarray *const *inputs, int *nout,
                              lmx_ndarray **outputs, int is_train);

#ifdef __cplusplus
}
#endif

#endif /* LUAMX_H */
