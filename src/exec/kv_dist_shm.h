/* kv_dist_shm.h — the dist store's all-reduce through memory shared by the ranks of one
 * node (private to src/exec/kv_dist*.c).
 *
 * When every rank of the job is on one node, a large key is not sent through MPI
 * messages: the ranks share one segment (an MPI_Win_allocate_shared window, made by the
 * plugin) of nlocal slots of `slot` bytes and a result of `slot` bytes. Per chunk of at
 * most `slot` bytes, rank q owns the q-th slice of the chunk:
 *   1. each rank copies its pushed data outside its own slice into its slot;
 *   2. barrier; rank q sums its slice over the ranks (its own pushed data, the others'
 *      slots, in rank order) and writes the sum to its output, to its stored value
 *      (when given) and to the shared result, in one pass;
 *   3. barrier; each rank copies the other slices of the result to its output and value.
 * Two barriers per chunk, no message carries data, and each rank moves the bytes fewer
 * times than MPI's out-of-place all-reduce followed by a copy (the hot path it replaces).
 * The barriers wait with the store's deadline (LUAMX_DIST_TIMEOUT): a lost rank is named.
 * The next chunk's writes cannot overtake a reader: slots are written again only after the
 * second barrier (every sum is done), the result only after the next first barrier (every
 * copy-out is done).
 * Sums: one rank computes each element, in rank order (x0 + x1 + ...), each step rounded to
 * the dtype as MPI's MPI_SUM does (float16 through float32, integers wrapping); with 2
 * ranks that is bit for bit what MPI returns.
 */
#ifndef LMX_EXEC_KV_DIST_SHM_H
#define LMX_EXEC_KV_DIST_SHM_H

#include <stddef.h>
#include <stdint.h>

typedef struct lmx_kvd_shm {
  char *seg;   /* nlocal slots of `slot` bytes, then the result */
  size_t slot; /* bytes per slot (a multiple of 64) */
  int local, nlocal;
  /* A barrier of the node's ranks with the store's deadline; what names the operation in
   * errors. Returns LMX_OK or an error that is already set (the store is then broken). */
  int (*barrier)(void *ctx, const char *what);
  void *ctx;
} lmx_kvd_shm;

/* Whether dtype (a luamx code) has a shared-memory sum: the dtypes the MPI plugin sums. */
int lmx_kvd_shm_dtype(int dtype);

/* out = sum over the node's ranks of their src (count elements of dtype); also val when
 * not NULL. src may be out (in place); val must be apart from both. Collective: every rank
 * calls it with the same count and dtype. key names the key in the barriers' errors. */
int lmx_kvd_shm_allreduce(const lmx_kvd_shm *s, const char *src, char *out, char *val,
                          int64_t count, int dtype, const char *key);

#endif
