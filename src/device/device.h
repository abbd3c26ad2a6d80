/* device.h — the per-device-type table: storage, copies, synchronisation, per-device
 * state (stream, events, allocator, library handles) and the array-level primitives.
 *
 * One table per device type: lmx_cpu_device (cpu.c, primitives from kernels/cpu) and
 * lmx_cuda_device (cuda*.c, built with LUAMX_WITH_CUDA; primitives from kernels/cuda).
 * Everything above src/device that touches array memory goes through these entries,
 * so nothing above knows how a device is driven: NDArray arithmetic, fills, dtype
 * conversions (src/tensor), the executor's gradient copies and zero fills
 * (src/exec). Operator kernels are not here: they live in the per-backend kernel
 * tables of src/ops (kernel.h), and reach their device through the call context
 * (lmx_op_ctx: dev_type, dev_id, dev, stream).
 *
 * Execution model. Each device id has one stream (`stream(dev_id)`; NULL on the CPU,
 * where work is done when the call returns). Every primitive below and every kernel
 * run for that device is queued on that stream in call order, so work on one device
 * is ordered without any synchronisation; the host waits only in sync(), in a copy to
 * host memory (dir LMX_COPY_D2H returns when the bytes are in host memory) and where
 * Lua reads data. Primitives ENQUEUE AND NEVER SYNCHRONISE: when they return, the
 * work may not have run yet; their pointer arguments are device pointers of dev_id
 * (except where a comment says host), valid until the stream reaches the work.
 * Array-of-pointer and shape arguments (xs, oshape, ashape, bshape) are host memory
 * read during the call only.
 *
 * Status: each entry returns LMX_OK or an LMX_ERR_* with a message naming the device
 * ("gpu(0): ..."): LMX_ERR_DTYPE for a dtype the device cannot do, LMX_ERR_DEVICE for a
 * launch / runtime failure. A NULL primitive means "not supported on this device":
 * callers go through the lmx_device_* wrappers below, which turn NULL into
 * LMX_ERR_UNSUPPORTED "<what>: not supported on gpu(0) in this build".
 *
 * Per-device state stays behind `state(dev_id)`, an opaque pointer owned by the backend
 * (the CUDA side: its stream, events, caching allocator, cuBLAS/cuDNN handles); nothing
 * above src/device looks inside it.
 *
 * CPU memory comes from the engine allocator, so it is counted and fault-injectable.
 * Copies between two device types are done by the table of the non-CPU side.
 */
#ifndef LMX_DEVICE_DEVICE_H
#define LMX_DEVICE_DEVICE_H

#include <stddef.h>
#include <stdint.h>

/* Opaque per-device state of a backend (defined by that backend's device file). */
typedef struct lmx_device_state lmx_device_state;

typedef struct lmx_device_ops {
  const char *name;   /* "cpu", "gpu" */
  int (*count)(void); /* usable device ids: 0..count-1 (CPU: a large bound) */

  /* ---- storage and copies ---- */
  int (*alloc)(int dev_id, size_t bytes, void **out);
  void (*release)(int dev_id, void *p); /* ordered after the work queued so far */
  /* p[bytes] <- 0 (queued on the stream) */
  int (*zero)(int dev_id, void *p, size_t bytes);
  /* Copies bytes; dir: LMX_COPY_D2D (same device type and id), LMX_COPY_H2D (src is
   * host memory; src may be reused when the call returns), LMX_COPY_D2H (dst is host
   * memory; holds the bytes when the call returns: the one copy that waits). */
  int (*copy)(int dev_id, void *dst, const void *src, size_t bytes, int dir);
  /* Waits until everything queued on dev_id has run; reports asynchronous faults. */
  int (*sync)(int dev_id);

  /* ---- per-device state (NULL entries on the CPU) ---- */
  lmx_device_state *(*state)(int dev_id); /* opaque, owned by the backend */
  void *(*stream)(int dev_id);            /* cudaStream_t of dev_id; NULL: none */

  /* ---- array-level primitives (see the execution model above) ---- */
  /* p[n] <- v converted to dtype dt. Every dtype. */
  int (*fill)(int dev_id, void *p, int dt, int64_t n, double v);
  /* y[n] += x[n] (the gradient copy with req add). One dtype: float32, float64
   * (float16 where the device supports it); y and x do not overlap unless equal. */
  int (*add)(int dev_id, int dt, int64_t n, void *y, const void *x);
  /* y[n] = Σ_{i<nx} xs[i][n] (acc 0: req write) or y[n] += Σ ... (acc 1: req add);
   * xs is a host array of nx >= 1 device pointers; y may equal xs[0] (in place). One
   * dtype as add. */
  int (*sum_n)(int dev_id, int dt, int64_t n, void *y, const void *const *xs, int nx,
               int acc);
  /* dst[n] (dtype dt) <- src[n] (dtype st), converting values (float16 included).
   * Every pair of dtypes; dst and src do not overlap (unless dt == st and dst == src). */
  int (*convert)(int dev_id, void *dst, int dt, const void *src, int st, int64_t n);
  /* Broadcasting binary op (LMX_BIN_* of luamx.h): out has ndim dims oshape; a and b
   * are given with the same ndim and their own dims (1 where broadcast); all
   * contiguous, one dtype dt; out does not overlap a or b. */
  int (*binary)(int dev_id, int op, int dt, int ndim, const int64_t *oshape, void *out,
                const int64_t *ashape, const void *a, const int64_t *bshape, const void *b);
  /* out[n] = a[n] op s, or s op a[n] when reverse (op LMX_BIN_*); out may equal a. */
  int (*scalar)(int dev_id, int op, int dt, int64_t n, void *out, const void *a, double s,
                int reverse);
  /* C[m,n] = alpha op(A) op(B) + beta C, row-major; A [m,k] ([k,m] when ta), B [k,n]
   * ([n,k] when tb). dt float32 / float64 (float16 with float32 accumulation where the
   * device supports it). */
  int (*gemm)(int dev_id, int dt, int ta, int tb, int64_t m, int64_t n, int64_t k,
              double alpha, const void *A, const void *B, double beta, void *C);
  /* p[n] (float dtype dt) <- draws of LMX_RAND_UNIFORM U[a, b) or LMX_RAND_NORMAL
   * N(a, b^2) from a counter-based generator keyed by (seed, offset) (draw i uses
   * counter offset + i): the same key gives the same draws on every run. Optional: a
   * device without it (the CPU) draws on the host from the global generator
   * (src/tensor/random.h), whose lmx_rng_device_key hands out the keys. */
  int (*random)(int dev_id, int dist, int dt, int64_t n, void *p, double a, double b,
                uint64_t seed, uint64_t offset);
} lmx_device_ops;

enum { LMX_RAND_UNIFORM = 0, LMX_RAND_NORMAL = 1 };

enum { LMX_COPY_D2D = 0, LMX_COPY_H2D = 1, LMX_COPY_D2H = 2 };
enum { LMX_MAX_CPU_ID = 255 };

/* Table for a device type, or NULL (and a message) when the type is unknown or was not
 * built in. Checks dev_id against count(); LMX_ERR_DEVICE messages name the context. */
int lmx_device_lookup(int dev_type, int dev_id, const lmx_device_ops **out);

/* "cpu" / "gpu" for a device type, whether or not it is built in ("device" otherwise). */
const char *lmx_device_type_name(int dev_type);

/* The stream of dev_id (NULL on the CPU, or when the table has no stream entry). */
void *lmx_device_stream(const lmx_device_ops *d, int dev_id);

/* LMX_ERR_UNSUPPORTED: "<what>: not supported on <name>(<dev_id>) in this build". */
int lmx_device_unsupported(const lmx_device_ops *d, int dev_id, const char *what);

/* The primitives through the table, a NULL entry reported by lmx_device_unsupported
 * (what: "fill", "add", "sum_n", "convert", "binary", "scalar", "gemm"). n == 0 is a
 * no-op that succeeds. Same arguments as the entries. */
int lmx_device_fill(const lmx_device_ops *d, int dev_id, void *p, int dt, int64_t n, double v);
int lmx_device_add(const lmx_device_ops *d, int dev_id, int dt, int64_t n, void *y,
                   const void *x);
int lmx_device_sum_n(const lmx_device_ops *d, int dev_id, int dt, int64_t n, void *y,
                     const void *const *xs, int nx, int acc);
int lmx_device_convert(const lmx_device_ops *d, int dev_id, void *dst, int dt, const void *src,
                       int st, int64_t n);
int lmx_device_binary(const lmx_device_ops *d, int dev_id, int op, int dt, int ndim,
                      const int64_t *oshape, void *out, const int64_t *ashape, const void *a,
                      const int64_t *bshape, const void *b);
int lmx_device_scalar(const lmx_device_ops *d, int dev_id, int op, int dt, int64_t n, void *out,
                      const void *a, double s, int reverse);
int lmx_device_gemm(const lmx_device_ops *d, int dev_id, int dt, int ta, int tb, int64_t m,
                    int64_t n, int64_t k, double alpha, const void *A, const void *B, double beta,
                    void *C);

extern const lmx_device_ops lmx_cpu_device;
#ifdef LUAMX_WITH_CUDA
extern const lmx_device_ops lmx_cuda_device;
#endif

#endif
