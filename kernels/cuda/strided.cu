/* strided.cu — index walks with per-operand strides: strided copies, broadcasting binary
 * ops and their gradients, reductions over any axes and their gradients, argmax/argmin.
 *
 * As in kernels/cpu/strided.c an operand is (device pointer, strides in elements over
 * the walked shape); stride 0 repeats the operand (broadcast) or, on a destination,
 * folds the axis (reduction). The host first collapses the shape (size-1 axes dropped,
 * neighbouring axes every operand walks contiguously merged) into a Walk passed by
 * value; each thread turns its flat index into per-operand offsets by division along
 * the collapsed dims. A copy that collapses to a (batched) transpose goes through 32 x 32
 * shared-memory tiles instead, so reads and writes are both coalesced.
 * Reductions split the collapsed dims into kept ones (destination stride != 0) and
 * reduced ones, each list collapsed again. Every output is computed by one block of 256
 * threads (thread t combines reduced indices t, t+256, ..., then a warp-shuffle tree and
 * one shared-memory step, cu_util.cuh), or, when the reduced extent is at most 64, by one
 * thread serially, or, when neighbouring outputs read neighbouring elements (a column
 * reduction), by 8 threads of a 32 x 8 block (k_red_cols). A few outputs (at most 64)
 * over a long reduced extent (at least 65536) are split instead: up to 1024 blocks
 * combine contiguous ranges into partials in the device's scratch, and a second launch
 * merges each output's partials (k_red_split / k_red_merge). Every order depends on the
 * shapes only, so results are identical from run to run and device to device. The same kernel reduces the gradient of a
 * broadcasting binary op (the mapped value is d(a op b)/d(side) · g instead of x).
 * Formulas: the CPU's (strided.c, MXNet 1.9 broadcast_reduce_op.h); NaN propagates
 * through max / min as on the CPU. float32/float64/float16 (float accumulation); the
 * plain copy moves any dtype; lmx_cu_binary (the array layer) takes all 7 dtypes.
 */
#include "../cpu/cpu_kernels.h"
extern "C" {
#include "../../src/core/status.h"
#include "../../src/device/cuda_state.h"
}
#include "cu_convert.h"
#include "cu_strided.h"
#include "cu_util.cuh"

enum { NOPS = 4 };

struct Walk {
  int nd;
  int64_t total;
  int64_t shape[LMX_MAX_NDIM];
  int64_t st[NOPS][LMX_MAX_NDIM];
};

/* Drops size-1 axes and merges axis d into the previous kept one where every operand's
 * strides allow (strided.c's collapse); returns the new ndim (0 for a single element). */
static int collapse(int ndim, int64_t *shape, int nops, int64_t (*st)[LMX_MAX_NDIM]) {
  int nd = 0;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == 1) continue;
    int merge = nd > 0;
    for (int k = 0; k < nops && merge; k++) merge = st[k][nd - 1] == st[k][d] * shape[d];
    if (merge) {
      shape[nd - 1] *= shape[d];
      for (int k = 0; k < nops; k++) st[k][nd - 1] = st[k][d];
    } else {
      shape[nd] = shape[d];
      for (int k = 0; k < nops; k++) st[k][nd] = st[k][d];
      nd++;
    }
  }
  return nd;
}

/* Walk over shape with up to NOPS operands' strides (NULL rows: contiguous strides). */
static int make_walk(Walk *w, int ndim, const int64_t *shape, const int64_t *const *st) {
  if (ndim < 0 || ndim > LMX_MAX_NDIM) return -1;
  memset(w, 0, sizeof *w);
  w->total = 1;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0) return -1;
    w->shape[d] = shape[d];
    w->total *= shape[d];
  }
  for (int k = 0; k < NOPS; k++) {
    if (st[k]) {
      memcpy(w->st[k], st[k], sizeof(int64_t) * (size_t)ndim);
    } else {
      int64_t a = 1;
      for (int d = ndim - 1; d >= 0; d--) w->st[k][d] = a, a *= shape[d];
    }
  }
  w->nd = w->total ? collapse(ndim, w->shape, NOPS, w->st) : 0;
  return 0;
}

__device__ static inline void offsets(const Walk &w, int64_t i, int64_t *o) {
  for (int k = 0; k < NOPS; k++) o[k] = 0;
  for (int d = w.nd - 1; d >= 0; d--) {
    int64_t q = i / w.shape[d], r = i - q * w.shape[d];
    i = q;
    for (int k = 0; k < NOPS; k++) o[k] += r * w.st[k][d];
  }
}

/* ---- strided copy ------------------------------------------------------------------- */

template <typename U>
__global__ void k_scopy(Walk w, U *dst, const U *src) {
  LMX_CU_GRID_LOOP(i, w.total) {
    int64_t o[NOPS];
    offsets(w, i, o);
    dst[o[0]] = src[o[1]];
  }
}

template <typename T>
__global__ void k_scopy_acc(Walk w, T *dst, const T *src) {
  typedef typename lmx_cu_acc<T>::type C;
  LMX_CU_GRID_LOOP(i, w.total) {
    int64_t o[NOPS];
    offsets(w, i, o);
    lmx_cu_st(dst, o[0], (C)(lmx_cu_ld(dst, o[0]) + lmx_cu_ld(src, o[1])));
  }
}

/* Transposes: after collapsing, the destination runs contiguously along the last dim and
 * the source along the one before it. A block moves a 32 x 32 tile through shared memory
 * so both the reads and the writes are coalesced: dst[b][r dr + c] (+)= src[b][r + c sc]
 * for r < R, c < K, b over the batch dims (wb). Threads are 32 x 8; each handles 4 rows. */
enum { TILE = 32, TILE_ROWS = 8 };

template <int ACC> struct TilePut {
  template <typename T>
  __device__ static void put(T *d, int64_t i, const T *v) { d[i] = *v; }
};
template <> struct TilePut<1> {
  template <typename T>
  __device__ static void put(T *d, int64_t i, const T *v) {
    typedef typename lmx_cu_acc<T>::type C;
    lmx_cu_st(d, i, (C)(lmx_cu_ld(d, i) + lmx_cu_ld(v, 0)));
  }
};

template <typename T, int ACC>
__global__ void k_tile(Walk wb, int64_t R, int64_t K, int64_t dr, int64_t sc, T *dst,
                       const T *src) {
  __shared__ T tile[TILE][TILE + 1];
  int64_t r0 = (int64_t)blockIdx.y * TILE, c0 = (int64_t)blockIdx.x * TILE;
  for (int64_t b = blockIdx.z; b < wb.total; b += gridDim.z) {
    int64_t o[NOPS];
    offsets(wb, b, o);
    for (int j = threadIdx.y; j < TILE; j += TILE_ROWS) {
      int64_t r = r0 + threadIdx.x, c = c0 + j;
      if (r < R && c < K) tile[j][threadIdx.x] = src[o[1] + r + c * sc];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < TILE; j += TILE_ROWS) {
      int64_t r = r0 + j, c = c0 + threadIdx.x;
      if (r < R && c < K) TilePut<ACC>::put(dst, o[0] + r * dr + c, &tile[threadIdx.x][j]);
    }
    __syncthreads(); /* the tile is refilled for the next batch entry */
  }
}

template <typename T, int ACC>
static int tile_launch(lmx_cu_stream s, const Walk &w, void *dst, const void *src) {
  int nd = w.nd;
  Walk wb;
  memset(&wb, 0, sizeof wb);
  wb.nd = nd - 2, wb.total = 1;
  for (int d = 0; d < nd - 2; d++) {
    wb.shape[d] = w.shape[d], wb.total *= w.shape[d];
    for (int k = 0; k < NOPS; k++) wb.st[k][d] = w.st[k][d];
  }
  int64_t R = w.shape[nd - 2], K = w.shape[nd - 1];
  const int64_t most = 65535;
  dim3 grid((unsigned)((K + TILE - 1) / TILE), (unsigned)((R + TILE - 1) / TILE),
            (unsigned)(wb.total < most ? wb.total : most));
  LMX_LAUNCH((k_tile<T, ACC>), grid, dim3(TILE, TILE_ROWS), 0, s, wb, R, K, w.st[0][nd - 2],
             w.st[1][nd - 1], (T *)dst, (const T *)src);
  return lmx_cu_last_error();
}

/* whether the collapsed walk is a (batched) transpose the tiled kernel serves */
static int is_transpose(const Walk &w) {
  int nd = w.nd;
  return nd >= 2 && w.st[0][nd - 1] == 1 && w.st[1][nd - 2] == 1 && w.st[1][nd - 1] != 1 &&
         w.st[0][nd - 2] != 1 && (w.shape[nd - 2] + TILE - 1) / TILE <= 65535;
}

int lmx_cu_strided_copy(lmx_cu_stream s, int dt, int ndim, const int64_t *shape, void *dst,
                        const int64_t *dstr, const void *src, const int64_t *sstr, int acc) {
  Walk w;
  const int64_t *st[NOPS] = {dstr, sstr, dstr, dstr};
  if (make_walk(&w, ndim, shape, st)) return -1;
  if (w.total && is_transpose(w)) {
    if (acc) {
      LMX_CU_DISPATCH_FLOAT(dt, return -1, return tile_launch<T, 1>(s, w, dst, src));
      return -1;
    }
    switch (dt) {
      case LMX_FLOAT32: case LMX_INT32: return tile_launch<uint32_t, 0>(s, w, dst, src);
      case LMX_FLOAT64: case LMX_INT64: return tile_launch<uint64_t, 0>(s, w, dst, src);
      case LMX_FLOAT16: return tile_launch<uint16_t, 0>(s, w, dst, src);
      case LMX_UINT8: case LMX_INT8: return tile_launch<uint8_t, 0>(s, w, dst, src);
      default: return -1;
    }
  }
  unsigned g = lmx_cu_blocks(w.total);
  if (acc) {
    LMX_CU_DISPATCH_FLOAT(dt, return -1, if (!w.total) return 0;
                          LMX_LAUNCH(k_scopy_acc<T>, g, LMX_CU_THREADS, 0, s, w, (T *)dst,
                                     (const T *)src));
  } else {
    switch (dt) {
#define SC(CODE, U)                                                                       \
  case CODE:                                                                              \
    if (!w.total) return 0;                                                               \
    LMX_LAUNCH(k_scopy<U>, g, LMX_CU_THREADS, 0, s, w, (U *)dst, (const U *)src);          \
    break;
      SC(LMX_FLOAT32, uint32_t)
      SC(LMX_INT32, uint32_t)
      SC(LMX_FLOAT64, uint64_t)
      SC(LMX_INT64, uint64_t)
      SC(LMX_FLOAT16, uint16_t)
      SC(LMX_UINT8, uint8_t)
      SC(LMX_INT8, uint8_t)
#undef SC
      default: return -1;
    }
  }
  return lmx_cu_last_error();
}

/* ---- broadcasting binary ------------------------------------------------------------ */

/* forward a op b in the compute type C (pow through double, as strided.c's pow) */
#define BC_LIST(X)                                                                        \
  X(ADD, a + b) X(SUB, a - b) X(MUL, a * b) X(DIV, a / b) X(MAX, a > b ? a : b)           \
  X(MIN, a < b ? a : b) X(POW, pow((double)a, (double)b)) X(EQ, a == b) X(NE, a != b)     \
  X(GT, a > b) X(GE, a >= b) X(LT, a < b) X(LE, a <= b)
#define DEF_BCF(NAME, E)                                                                  \
  struct BcF_##NAME {                                                                     \
    template <typename C>                                                                 \
    __device__ static C f(C a, C b) { return (C)(E); }                                    \
  };
BC_LIST(DEF_BCF)

template <typename T, typename F>
__global__ void k_bcast(Walk w, T *out, const T *a, const T *b, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  LMX_CU_GRID_LOOP(i, w.total) {
    int64_t o[NOPS];
    offsets(w, i, o);
    C r = F::f((C)lmx_cu_ld(a, o[1]), (C)lmx_cu_ld(b, o[2]));
    if (acc) r = (C)lmx_cu_ld(out, o[0]) + r;
    lmx_cu_st(out, o[0], r);
  }
}

template <typename T>
static int bcast_launch(lmx_cu_stream s, int op, const Walk &w, void *out, const void *a,
                        const void *b, int acc) {
  if (!w.total) return 0;
  unsigned g = lmx_cu_blocks(w.total);
  switch (op) {
#define BC_CASE(NAME, E)                                                                  \
  case LMX_BC_##NAME:                                                                     \
    LMX_LAUNCH((k_bcast<T, BcF_##NAME>), g, LMX_CU_THREADS, 0, s, w, (T *)out,             \
               (const T *)a, (const T *)b, acc);                                           \
    break;
    BC_LIST(BC_CASE)
#undef BC_CASE
    default: return -1;
  }
  return lmx_cu_last_error();
}

int lmx_cu_bcast_binary(lmx_cu_stream s, int op, int dt, int ndim, const int64_t *oshape,
                        void *out, const void *a, const int64_t *astr, const void *b,
                        const int64_t *bstr, int acc) {
  Walk w;
  const int64_t *st[NOPS] = {NULL, astr, bstr, NULL};
  if (op < LMX_BC_ADD || op > LMX_BC_LE || make_walk(&w, ndim, oshape, st)) return -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1, return bcast_launch<T>(s, op, w, out, a, b, acc));
  return -1;
}

int lmx_cu_binary(lmx_cu_stream s, int op, int dt, int ndim, const int64_t *oshape, void *out,
                  const int64_t *ashape, const void *a, const int64_t *bshape, const void *b) {
  static const int to_bc[] = {LMX_BC_ADD, LMX_BC_SUB, LMX_BC_MUL, LMX_BC_DIV,
                              LMX_BC_POW, LMX_BC_MAX, LMX_BC_MIN};
  if (op < 0 || op > LMX_BIN_MIN || ndim < 0 || ndim > LMX_MAX_NDIM) return -1;
  int64_t as[LMX_MAX_NDIM], bs[LMX_MAX_NDIM], ea = 1, eb = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    as[d] = ashape[d] == 1 ? 0 : ea;
    bs[d] = bshape[d] == 1 ? 0 : eb;
    ea *= ashape[d];
    eb *= bshape[d];
  }
  Walk w;
  const int64_t *st[NOPS] = {NULL, as, bs, NULL};
  if (make_walk(&w, ndim, oshape, st)) return -1;
  LMX_CU_DISPATCH_ALL(dt, return -1, return bcast_launch<T>(s, to_bc[op], w, out, a, b, 0));
  return -1;
}

/* ---- reductions ----------------------------------------------------------------------- */

/* kind: init, comb(a, v, sc), merge(a, b), fin(a) — strided.c's RED_KINDS rows */
#define RED_LIST(X)                                                                       \
  X(SUM, 0, a + v * sc, a + b, a)                                                         \
  X(PROD, 1, a * v, a * b, a)                                                             \
  X(MAX, -INFINITY, v > a || v != v ? v : a, b > a || b != b ? b : a, a)                   \
  X(MIN, INFINITY, v < a || v != v ? v : a, b < a || b != b ? b : a, a)                    \
  X(NORM1, 0, a + (v < 0 ? -v : v), a + b, a)                                             \
  X(NORM2, 0, a + v * v, a + b, sqrt(a))
#define DEF_RED(NAME, INIT, COMB, MERGE, FIN)                                             \
  struct Red_##NAME {                                                                     \
    template <typename C>                                                                 \
    __host__ __device__ static C identity() { return (C)(INIT); }                         \
    template <typename C>                                                                 \
    __device__ static C comb(C a, C v, C sc) { (void)sc; return (C)(COMB); }              \
    template <typename C>                                                                 \
    __device__ static C merge(C a, C b) { return (C)(MERGE); }                            \
    template <typename C>                                                                 \
    __device__ static C fin(C a) { return (C)(FIN); }                                     \
  };
RED_LIST(DEF_RED)

/* the mapped value of reduced element (operand offsets o[1..3]) */
struct MapX {
  template <typename T, typename C>
  __device__ static C v(const T *p1, const T *, const T *, const int64_t *o) {
    return (C)lmx_cu_ld(p1, o[1]);
  }
};
/* d(a op b)/d(side) · g, p1 = g, p2 = a, p3 = b (strided.c's bc_grad) */
#define BCG_LIST(X)                                                                       \
  X(MUL, g * b, g * a)                                                                    \
  X(DIV, g / b, -g * a / (b * b))                                                         \
  X(MAX, a >= b ? g : 0, a < b ? g : 0)                                                   \
  X(MIN, a <= b ? g : 0, a > b ? g : 0)                                                   \
  X(POW, g * b * pow((double)a, (double)b - 1), g * pow((double)a, (double)b) * log((double)a))
#define DEF_BCG(NAME, DA, DB)                                                             \
  template <int SIDE>                                                                     \
  struct Bcg_##NAME {                                                                     \
    template <typename T, typename C>                                                     \
    __device__ static C v(const T *pg, const T *pa, const T *pb, const int64_t *o) {      \
      C g = (C)lmx_cu_ld(pg, o[1]), a = (C)lmx_cu_ld(pa, o[2]), b = (C)lmx_cu_ld(pb, o[3]); \
      return SIDE ? (C)(DB) : (C)(DA);                                                    \
    }                                                                                     \
  };
BCG_LIST(DEF_BCG)

struct RGeo {
  Walk k, r; /* kept dims (outputs) and reduced dims, strides of dest, p1, p2, p3 */
};

/* a combined with the mapped values of reduced indices lo, lo + step, ... < hi of the
 * output at kept offsets base */
template <typename T, typename C, typename K, typename M>
__device__ static inline C red_range(const RGeo &g, const int64_t *base, int64_t lo, int64_t hi,
                                     int64_t step, C a, const T *p1, const T *p2, const T *p3,
                                     C sc) {
  int64_t o[NOPS];
  for (int64_t r = lo; r < hi; r += step) {
    offsets(g.r, r, o);
    for (int q = 1; q < NOPS; q++) o[q] += base[q];
    a = K::comb(a, M::template v<T, C>(p1, p2, p3, o), sc);
  }
  return a;
}

/* y[base0] (+)= fin(a) */
template <typename T, typename C, typename K>
__device__ static inline void red_store(T *y, int64_t base0, C a, int acc) {
  a = K::fin(a);
  if (acc) a = (C)lmx_cu_ld(y, base0) + a;
  lmx_cu_st(y, base0, a);
}

template <typename T, typename K, typename M>
__global__ void k_red_block(RGeo g, T *y, const T *p1, const T *p2, const T *p3, double scd,
                           int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  __shared__ C sh[32];
  C sc = (C)scd;
  for (int64_t out = blockIdx.x; out < g.k.total; out += gridDim.x) {
    int64_t base[NOPS];
    offsets(g.k, out, base);
    C a = red_range<T, C, K, M>(g, base, threadIdx.x, g.r.total, blockDim.x,
                                K::template identity<C>(), p1, p2, p3, sc);
    a = lmx_cu_block_reduce<C, K>(a, sh);
    if (threadIdx.x == 0) red_store<T, C, K>(y, base[0], a, acc);
    __syncthreads(); /* sh is rewritten by the next output */
  }
}

template <typename T, typename K, typename M>
__global__ void k_red_thread(RGeo g, T *y, const T *p1, const T *p2, const T *p3, double scd,
                            int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  C sc = (C)scd;
  LMX_CU_GRID_LOOP(out, g.k.total) {
    int64_t base[NOPS];
    offsets(g.k, out, base);
    C a = red_range<T, C, K, M>(g, base, 0, g.r.total, 1, K::template identity<C>(), p1, p2,
                                p3, sc);
    red_store<T, C, K>(y, base[0], a, acc);
  }
}

/* Column reductions (neighbouring outputs are neighbouring in x, the reduced axes are
 * outer): a block of 32 x RC_ROWS threads takes 32 consecutive outputs; thread (tx, ty)
 * combines reduced indices ty, ty + RC_ROWS, ... of output tx, so a warp reads 32
 * neighbouring elements at each step; the RC_ROWS partials of an output then merge in
 * shared memory in row order. */
enum { RC_ROWS = 8 };

template <typename T, typename K, typename M>
__global__ void k_red_cols(RGeo g, T *y, const T *p1, const T *p2, const T *p3, double scd,
                           int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  __shared__ C sh[RC_ROWS][32 + 1];
  C sc = (C)scd;
  int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t ob = (int64_t)blockIdx.x * 32; ob < g.k.total; ob += (int64_t)gridDim.x * 32) {
    int64_t out = ob + tx, base[NOPS];
    C a = K::template identity<C>();
    if (out < g.k.total) {
      offsets(g.k, out, base);
      a = red_range<T, C, K, M>(g, base, ty, g.r.total, RC_ROWS, a, p1, p2, p3, sc);
    }
    sh[ty][tx] = a;
    __syncthreads();
    if (ty == 0 && out < g.k.total) {
      for (int k = 1; k < RC_ROWS; k++) a = K::merge(a, sh[k][tx]);
      red_store<T, C, K>(y, base[0], a, acc);
    }
    __syncthreads(); /* sh is rewritten for the next 32 outputs */
  }
}

/* Split reductions (few outputs, long reduced extent): one block per output would leave
 * the GPU idle, so pass 1 gives each output `parts` blocks, block (out, p) combining the
 * p-th contiguous range of len reduced indices (thread t: t, t + 256, ... of the range,
 * then the block tree) into part[out * parts + p]; pass 2 (k_red_merge, one block per
 * output) merges an output's parts in the same tree order and finishes. No atomics: the
 * order depends on the shapes only, so results are the same in every run. The parts
 * live in the device's kernel scratch (lmx_cuda_scratch), used in stream order. */
template <typename T, typename K, typename M>
__global__ void k_red_split(RGeo g, int64_t parts, int64_t len,
                            typename lmx_cu_acc<T>::type *part, const T *p1, const T *p2,
                            const T *p3, double scd) {
  typedef typename lmx_cu_acc<T>::type C;
  __shared__ C sh[32];
  C sc = (C)scd;
  int64_t out = blockIdx.x / parts, p = blockIdx.x % parts, base[NOPS];
  offsets(g.k, out, base);
  int64_t lo = p * len, hi = lo + len < g.r.total ? lo + len : g.r.total;
  C a = red_range<T, C, K, M>(g, base, lo + threadIdx.x, hi, blockDim.x,
                              K::template identity<C>(), p1, p2, p3, sc);
  a = lmx_cu_block_reduce<C, K>(a, sh);
  if (threadIdx.x == 0) part[blockIdx.x] = a;
}

template <typename T, typename K>
__global__ void k_red_merge(RGeo g, int64_t parts, const typename lmx_cu_acc<T>::type *part,
                            T *y, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  __shared__ C sh[32];
  int64_t out = blockIdx.x, base[NOPS];
  offsets(g.k, out, base);
  C a = K::template identity<C>();
  for (int64_t p = threadIdx.x; p < parts; p += blockDim.x) a = K::merge(a, part[out * parts + p]);
  a = lmx_cu_block_reduce<C, K>(a, sh);
  if (threadIdx.x == 0) red_store<T, C, K>(y, base[0], a, acc);
}

enum {
  RED_SERIAL_MAX = 64,
  RED_MAX_BLOCKS = 65535,
  RED_SPLIT_OUTS = 64,          /* split when there are at most this many outputs */
  RED_SPLIT_MIN = 1 << 16,      /* ... and at least this many reduced elements each */
  RED_SPLIT_CHUNK = 16 * 256,   /* reduced elements per pass-1 block, at least */
  RED_SPLIT_PARTS = 1024        /* parts of all outputs together (scratch: 8 KiB) */
};

/* the split path when it applies and the scratch is there: 1 not taken, else the rc */
template <typename T, typename K, typename M>
static int red_split(lmx_cu_stream s, const RGeo &g, void *y, const void *p1, const void *p2,
                     const void *p3, double sc, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  if (g.k.total > RED_SPLIT_OUTS || g.r.total < RED_SPLIT_MIN) return 1;
  void *scratch = NULL;
  if (lmx_cuda_scratch(&scratch) != LMX_OK) { /* the one-block path needs none */
    lmx_clear_error();
    return 1;
  }
  int64_t parts = (g.r.total + RED_SPLIT_CHUNK - 1) / RED_SPLIT_CHUNK;
  if (parts > RED_SPLIT_PARTS / g.k.total) parts = RED_SPLIT_PARTS / g.k.total;
  int64_t len = (g.r.total + parts - 1) / parts;
  C *part = (C *)scratch;
  LMX_LAUNCH((k_red_split<T, K, M>), (unsigned)(g.k.total * parts), LMX_CU_THREADS, 0, s, g,
             parts, len, part, (const T *)p1, (const T *)p2, (const T *)p3, sc);
  int rc = lmx_cu_last_error();
  if (rc) return rc;
  LMX_LAUNCH((k_red_merge<T, K>), (unsigned)g.k.total, LMX_CU_THREADS, 0, s, g, parts,
             (const C *)part, (T *)y, acc);
  return lmx_cu_last_error();
}

/* Splits shape with operand strides st[4] (st[0] = destination) into kept / reduced. */
static int make_rgeo(RGeo *g, int ndim, const int64_t *shape, const int64_t *const *st) {
  if (ndim < 0 || ndim > LMX_MAX_NDIM) return -1;
  memset(g, 0, sizeof *g);
  g->k.total = g->r.total = 1;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0) return -1;
    Walk *w = st[0][d] == 0 && shape[d] != 1 ? &g->r : &g->k;
    int j = w->nd++;
    w->shape[j] = shape[d];
    w->total *= shape[d];
    for (int k = 0; k < NOPS; k++) w->st[k][j] = st[k] ? st[k][d] : 0;
  }
  g->k.nd = g->k.total ? collapse(g->k.nd, g->k.shape, NOPS, g->k.st) : 0;
  g->r.nd = g->r.total ? collapse(g->r.nd, g->r.shape, NOPS, g->r.st) : 0;
  return 0;
}

template <typename T, typename K, typename M>
static int red_launch(lmx_cu_stream s, const RGeo &g, void *y, const void *p1, const void *p2,
                      const void *p3, double sc, int acc) {
  if (!g.k.total) return 0;
  int split = red_split<T, K, M>(s, g, y, p1, p2, p3, sc, acc);
  if (split != 1) return split;
  int cols = g.k.nd > 0 && g.k.st[1][g.k.nd - 1] == 1 && g.k.total > 1;
  if (cols && g.r.total > RED_SERIAL_MAX) {
    const int64_t most = RED_MAX_BLOCKS;
    int64_t nb = (g.k.total + 31) / 32;
    LMX_LAUNCH((k_red_cols<T, K, M>), (unsigned)(nb < most ? nb : most), dim3(32, RC_ROWS), 0, s,
               g, (T *)y, (const T *)p1, (const T *)p2, (const T *)p3, sc, acc);
  } else if (g.r.total <= RED_SERIAL_MAX) {
    LMX_LAUNCH((k_red_thread<T, K, M>), lmx_cu_blocks(g.k.total), LMX_CU_THREADS, 0, s, g,
               (T *)y, (const T *)p1, (const T *)p2, (const T *)p3, sc, acc);
  } else {
    const int64_t most = RED_MAX_BLOCKS;
    unsigned nb = (unsigned)(g.k.total < most ? g.k.total : most);
    LMX_LAUNCH((k_red_block<T, K, M>), nb, LMX_CU_THREADS, 0, s, g, (T *)y, (const T *)p1,
               (const T *)p2, (const T *)p3, sc, acc);
  }
  return lmx_cu_last_error();
}

template <typename T>
static int reduce_t(lmx_cu_stream s, int kind, const RGeo &g, void *y, const void *x,
                    double scale, int acc) {
  int lin = kind == LMX_RED_SUM || kind == LMX_RED_MEAN;
  int a = lin && acc;
  switch (kind) {
    case LMX_RED_SUM:
    case LMX_RED_MEAN: return red_launch<T, Red_SUM, MapX>(s, g, y, x, 0, 0, scale, a);
    case LMX_RED_PROD: return red_launch<T, Red_PROD, MapX>(s, g, y, x, 0, 0, 1, 0);
    case LMX_RED_MAX: return red_launch<T, Red_MAX, MapX>(s, g, y, x, 0, 0, 1, 0);
    case LMX_RED_MIN: return red_launch<T, Red_MIN, MapX>(s, g, y, x, 0, 0, 1, 0);
    case LMX_RED_NORM1: return red_launch<T, Red_NORM1, MapX>(s, g, y, x, 0, 0, 1, 0);
    case LMX_RED_NORM2: return red_launch<T, Red_NORM2, MapX>(s, g, y, x, 0, 0, 1, 0);
    default: return -1;
  }
}

int lmx_cu_reduce(lmx_cu_stream s, int kind, int dt, int ndim, const int64_t *shape,
                  const void *x, void *y, const int64_t *ystr, int64_t ysize, double scale,
                  int acc) {
  (void)ysize; /* the kept dims enumerate exactly the ysize outputs */
  RGeo g;
  const int64_t *st[NOPS] = {ystr, NULL, NULL, NULL};
  int64_t xs[LMX_MAX_NDIM];
  if (ndim < 0 || ndim > LMX_MAX_NDIM) return -1;
  {
    int64_t a = 1;
    for (int d = ndim - 1; d >= 0; d--) xs[d] = a, a *= shape[d];
  }
  st[1] = xs;
  if (make_rgeo(&g, ndim, shape, st)) return -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1, return reduce_t<T>(s, kind, g, y, x, scale, acc));
  return -1;
}

/* 1 (not launched) for the comparisons, whose gradient is zero */
template <typename T>
static int bcg_t(lmx_cu_stream s, int op, int side, const RGeo &geo, void *gd, const void *g,
                 const void *a, const void *b, int acc) {
  switch (op) {
#define BCG_CASE(NAME, DA, DB)                                                            \
  case LMX_BC_##NAME:                                                                     \
    return side ? red_launch<T, Red_SUM, Bcg_##NAME<1> >(s, geo, gd, g, a, b, 1, acc)     \
                : red_launch<T, Red_SUM, Bcg_##NAME<0> >(s, geo, gd, g, a, b, 1, acc);
    BCG_LIST(BCG_CASE)
#undef BCG_CASE
    default: return 1;
  }
}

int lmx_cu_bcast_binary_grad(lmx_cu_stream s, int op, int side, int dt, int ndim,
                             const int64_t *oshape, void *gd, const int64_t *dstr,
                             int64_t dsize, const void *g, const void *a, const int64_t *astr,
                             const void *b, const int64_t *bstr, int acc) {
  if (op == LMX_BC_ADD || op == LMX_BC_SUB)
    return lmx_cu_reduce(s, LMX_RED_SUM, dt, ndim, oshape, g, gd, dstr, dsize,
                         op == LMX_BC_SUB && side ? -1.0 : 1.0, acc);
  if (ndim < 0 || ndim > LMX_MAX_NDIM) return -1;
  int64_t gs[LMX_MAX_NDIM], e = 1;
  for (int d = ndim - 1; d >= 0; d--) gs[d] = e, e *= oshape[d];
  const int64_t *st[NOPS] = {dstr, gs, astr, bstr};
  RGeo geo;
  if (make_rgeo(&geo, ndim, oshape, st)) return -1;
  if (side != 0 && side != 1) return -1;
  int rc = 1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1, rc = bcg_t<T>(s, op, side, geo, gd, g, a, b, acc));
  if (rc != 1) return rc;
  if (op < LMX_BC_EQ || op > LMX_BC_LE) return -1;
  return acc ? 0 : lmx_cu_fill(s, gd, dt, dsize, 0.0); /* comparisons: a zero gradient */
}

/* ---- reduction gradients -------------------------------------------------------------- */

template <typename T, int KIND>
__global__ void k_red_bwd(Walk w, T *gx, const T *x, const T *g, const T *y, double scd,
                          int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  C sc = (C)scd;
  LMX_CU_GRID_LOOP(i, w.total) {
    int64_t o[NOPS];
    offsets(w, i, o);
    C gv = (C)lmx_cu_ld(g, o[1]), r;
    if (KIND == LMX_RED_SUM || KIND == LMX_RED_MEAN) {
      r = gv * sc;
    } else {
      C xv = (C)lmx_cu_ld(x, o[0]), yv = (C)lmx_cu_ld(y, o[1]);
      if (KIND == LMX_RED_PROD) r = gv * yv / xv;
      else if (KIND == LMX_RED_NORM1) r = xv > 0 ? gv : xv < 0 ? -gv : (C)0;
      else if (KIND == LMX_RED_NORM2) r = yv != 0 ? gv * xv / yv : (C)0;
      else r = xv == yv ? gv : (C)0; /* MAX, MIN: ties share */
    }
    if (acc) r = (C)lmx_cu_ld(gx, o[0]) + r;
    lmx_cu_st(gx, o[0], r);
  }
}

template <typename T>
static int red_bwd_t(lmx_cu_stream s, int kind, const Walk &w, void *gx, const void *x,
                     const void *g, const void *y, double scale, int acc) {
  if (!w.total) return 0;
  unsigned nb = lmx_cu_blocks(w.total);
  switch (kind) {
#define RB(K)                                                                             \
  case K:                                                                                 \
    LMX_LAUNCH((k_red_bwd<T, K>), nb, LMX_CU_THREADS, 0, s, w, (T *)gx, (const T *)x,      \
               (const T *)g, (const T *)y, scale, acc);                                    \
    break;
    RB(LMX_RED_SUM) RB(LMX_RED_MEAN) RB(LMX_RED_PROD) RB(LMX_RED_MAX) RB(LMX_RED_MIN)
    RB(LMX_RED_NORM1) RB(LMX_RED_NORM2)
#undef RB
    default: return -1;
  }
  return lmx_cu_last_error();
}

int lmx_cu_reduce_bwd(lmx_cu_stream s, int kind, int dt, int ndim, const int64_t *shape,
                      void *gx, const void *x, const void *g, const void *y,
                      const int64_t *ystr, double scale, int acc) {
  Walk w;
  const int64_t *st[NOPS] = {NULL, ystr, NULL, NULL};
  if (make_walk(&w, ndim, shape, st)) return -1;
  int lin = kind == LMX_RED_SUM || kind == LMX_RED_MEAN;
  if (kind < LMX_RED_SUM || kind > LMX_RED_NORM2 || (!lin && (!x || !y))) return -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1, return red_bwd_t<T>(s, kind, w, gx, x, g, y, scale, acc));
  return -1;
}

/* ---- argmax / argmin ------------------------------------------------------------------ */

template <typename T>
__global__ void k_argmax(int want_min, int64_t outer, int64_t len, int64_t inner, const T *x,
                         T *y) {
  typedef typename lmx_cu_acc<T>::type C;
  LMX_CU_GRID_LOOP(t, outer * inner) {
    int64_t o = t / inner, in = t - o * inner;
    const T *p = x + o * len * inner + in;
    int64_t best = 0;
    C bv = (C)lmx_cu_ld(p, 0);
    for (int64_t j = 1; j < len; j++) {
      C v = (C)lmx_cu_ld(p, j * inner);
      if (want_min ? v < bv : v > bv) best = j, bv = v;
    }
    lmx_cu_st(y, t, (C)best);
  }
}

int lmx_cu_argmax(lmx_cu_stream s, int want_min, int dt, int64_t outer, int64_t len,
                  int64_t inner, const void *x, void *y) {
  if (outer < 0 || len < 1 || inner < 0) return -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1, {
    if (!outer || !inner) return 0;
    LMX_LAUNCH(k_argmax<T>, lmx_cu_blocks(outer * inner), LMX_CU_THREADS, 0, s, want_min,
               outer, len, inner, (const T *)x, (T *)y);
    return lmx_cu_last_error();
  });
  return -1;
}
