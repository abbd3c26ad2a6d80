/* kv_dist_shm.h — the dist store's all-reduce through memory shared by the ranks of one
 * node (private to src/exec/kv_dist*.c).
 *
 * When every rank of the job is on one node, a large key is not sent through MPI
 * messages: the ranks share one segment (an MPI_Win_allocate_shared window, made by the
 * plugin) that holds a control line per rank, then two sets (A and B) of nlocal slots of
 * `slot` bytes and a result of `slot` bytes. Per chunk of at most `slot` bytes, rank q
 * owns the q-th slice of the chunk. The call runs in steps; in step i a rank
 *   1. copies its pushed data of chunk i outside its own slice into its slot of set i%2;
 *   2. publishes its step: seq = i + 1 in its control line (a release store), and waits
 *      until every rank's seq has reached i + 1 (acquire loads): the one wait of a step;
 *   3. sums its slice of chunk i over the ranks (its own pushed data, the others' slots,
 *      in rank order) into its output, its stored value (when given) and the result of
 *      set i%2, in one pass;
 *   4. copies the other slices of chunk i-1's result (set (i-1)%2) to its output and value.
 * One step more copies out the last chunk. So each chunk costs one wait on a few cache
 * lines instead of the two MPI barriers of a slot before, and a rank fills chunk i+1
 * while the others may still be summing chunk i (the other set).
 * Why a region is never written while another rank reads it: a rank past the wait of step
 * i knows that every rank has finished step i-1. Set i%2 was last read in steps i-2
 * (its slots, summed) and i-1 (its result, copied out): the slots are written in step i
 * after the wait of step i-1 (every rank is past step i-2), the result after the wait of
 * step i (every rank is past step i-1). A reader of step i is in turn ahead of any writer
 * of step i+2. The step count runs on across calls and stores (it is the rank's seq, and
 * every rank makes the same calls); a call whose slot size differs from the last call's
 * (another store) lays the sets out elsewhere, so it starts with one empty step.
 * The waits spin briefly, then yield and sleep; they answer the other ranks' liveness
 * pings and end at the store's deadline (LUAMX_DIST_TIMEOUT) with the lost rank named, the
 * step in the message. After a failed wait the segment is out of step: every later call
 * fails at once.
 * Sums: one rank computes each element, in rank order (x0 + x1 + ...), each step rounded to
 * the dtype as MPI's MPI_SUM does (float16 through float32, integers wrapping); with 2
 * ranks that is bit for bit what MPI returns.
 */
#ifndef LMX_EXEC_KV_DIST_SHM_H
#define LMX_EXEC_KV_DIST_SHM_H

#include <stddef.h>
#include <stdint.h>

typedef struct lmx_kvd_shm {
  char *seg;   /* lmx_kvd_shm_bytes(nlocal, slot) bytes, control lines zeroed (reset) */
  size_t slot; /* bytes per slot (a multiple of 64) */
  int local, nlocal;
  double timeout; /* seconds a wait may last (the store's deadline) */
  /* From this many bytes on (0: never) the stored value is written with non-temporal
   * stores: it is not read again in the call (the output is what the caller reads next),
   * and where the ranks' buffers no longer fit the caches together, streaming it saves
   * the reads for ownership of its lines and keeps the output and the segment cached. */
  size_t stream_bytes;
  /* Called every few hundred microseconds while a wait lasts: answers the liveness pings
   * of other ranks; with expired = 1 (the deadline passed) names the lost ranks and
   * returns the error, set (the store is then broken). what names the operation. */
  int (*poll)(void *ctx, const char *what, int expired);
  void *ctx;
} lmx_kvd_shm;

/* The segment's size for nlocal ranks and slots of `slot` bytes. */
size_t lmx_kvd_shm_bytes(int nlocal, size_t slot);

/* Zeroes this rank's control line of a new segment (seg of at least
 * lmx_kvd_shm_bytes(nlocal, any slot)). Every rank calls it before a collective that
 * precedes the first all-reduce on the segment. */
void lmx_kvd_shm_reset(char *seg, int local);

/* Whether dtype (a luamx code) has a shared-memory sum: the dtypes the MPI plugin sums. */
int lmx_kvd_shm_dtype(int dtype);

/* out = sum over the node's ranks of their src (count elements of dtype); also val when
 * not NULL. src may be out (in place); val must be apart from both. Collective: every rank
 * calls it with the same count, dtype and slot. key names the key in the waits' errors. */
int lmx_kvd_shm_allreduce(const lmx_kvd_shm *s, const char *src, char *out, char *val,
                          int64_t count, int dtype, const char *key);

#endif
