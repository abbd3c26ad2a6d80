/* mpi_abi.h — the boundary between libluamx (src/exec/kv_dist.c) and the MPI plugin
 * (src/dist/mpi_plugin.c, built as libluamx_mpi.so when CMake finds MPI).
 *
 * libluamx never links libmpi: kv_dist.c dlopen()s the plugin on the first dist store
 * and calls lmx_mpi_plugin() to get this table. The plugin is a thin layer over MPI on
 * raw buffers; everything luamx-specific (keys, fusion, chunking, deadlines, the
 * consistency checks and their messages) stays in kv_dist.c. Functions return 0 or
 * -1 with a message in err[cap]. Counts fit an int (kv_dist.c chunks larger arrays).
 * Only the thread that called init calls the table (MPI_THREAD_FUNNELED).
 */
#ifndef LMX_DIST_MPI_ABI_H
#define LMX_DIST_MPI_ABI_H

#include <stddef.h>

enum { LMX_MPI_ABI_VERSION = 4 };
enum { LMX_MPI_SUM = 0, LMX_MPI_MAX = 1 };

typedef struct lmx_mpi_ops {
  int abi;
  /* Initializes MPI once per process (a later call returns the same answer). Without
   * a launcher in the environment (no mpirun) it does not start MPI: rank 0 of 1. */
  int (*init)(int *rank, int *size, char *err, int cap);
  /* Starts an all-reduce of count elements of luamx dtype `dtype` (the LMX_FLOAT32...
   * codes) with op LMX_MPI_SUM or LMX_MPI_MAX: buf = reduction of src over ranks (src
   * NULL: in place on buf); *req is its handle. Both buffers stay in use until the
   * request finishes. */
  int (*iallreduce)(const void *src, void *buf, int count, int dtype, int op, int *req, char *err,
                    int cap);
  /* Blocking all-reduce (OpenMPI's tuned algorithms, about twice the speed of the
   * non-blocking one here): dst = sum over ranks of src (src NULL: in place on dst). Used
   * only after a control all-reduce has shown that every rank is in the same call. */
  int (*allreduce)(const void *src, void *dst, int count, int dtype, int op, char *err, int cap);
  /* Starts a broadcast of bytes from root. */
  int (*ibcast)(void *buf, int bytes, int root, int *req, char *err, int cap);
  /* Starts an all-gather: every rank's `bytes` of send land in recv[rank * bytes]. */
  int (*iallgather)(const void *send, int bytes, void *recv, int *req, char *err, int cap);
  /* 1: req finished (the handle is free again), 0: not yet, -1: failed. Also answers
   * the liveness pings of other ranks, so call it while waiting. */
  int (*test)(int req, char *err, int cap);
  /* Pings every other rank and waits up to timeout seconds: alive[r] = 1 for the ranks
   * that answered (and for the caller), 0 for the others. */
  int (*probe_alive)(double timeout, unsigned char *alive, char *err, int cap);
  /* Marks the process failed: MPI_Finalize is skipped at exit (it would wait for the
   * lost ranks). */
  void (*mark_failed)(void);
  /* The ranks sharing this node's memory (MPI_COMM_TYPE_SHARED, found by init):
   * *local = this rank's index among them (in world-rank order), *nlocal = their count. */
  void (*node)(int *local, int *nlocal);
  /* Collective over the node's ranks, blocking: maps a segment of `bytes` shared by them
   * (MPI_Win_allocate_shared; a second call frees the first segment) and sets *base to
   * its start here (the same bytes on every rank, at other addresses). Call it only where
   * every rank of the node is known to call it with the same size. */
  int (*shm)(size_t bytes, void **base, char *err, int cap);
  /* Answers the liveness pings of other ranks: call it now and then while waiting
   * outside MPI (kv_dist_shm.c waits on flags in the segment). */
  void (*serve)(void);
} lmx_mpi_ops;

typedef int (*lmx_mpi_plugin_fn)(lmx_mpi_ops *ops);

#endif
