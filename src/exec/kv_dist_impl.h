/* kv_dist_impl.h — private to the dist kvstore backend (src/exec/kv_dist*.c): its state,
 * the control all-reduce, the waits with their deadline and the data all-reduce, shared
 * by the verbs (kv_dist.c) and the overlapped push (kv_dist_overlap.c). kv_dist.c's top
 * comment describes the scheme. */
#ifndef LMX_EXEC_KV_DIST_IMPL_H
#define LMX_EXEC_KV_DIST_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "../dist/mpi_abi.h"
#include "kv_dist_shm.h"
#include "kvstore.h"

/* The verbs' kinds in the control all-reduce (K_OPUSH: the overlapped push). */
enum { K_INIT = 1, K_PUSH = 2, K_BARRIER = 3, K_CHECK = 4, K_STATES = 5, K_OPUSH = 6 };

/* The MPI plugin's table (libluamx_mpi.so, loaded by the first dist store). */
extern lmx_mpi_ops lmx_kvd_mpi;

typedef struct {
  int rank, size, broken;
  double timeout;
  size_t small_bytes, fuse_bytes, chunk_bytes, hot_bytes;
  char *fuse; /* fusion buffers, made at the first push, grown when keys need more */
  size_t fuse_cap;
  int overlap;      /* LUAMX_DIST_OVERLAP (default 1): offer the overlapped push */
  size_t shm_bytes; /* LUAMX_DIST_SHM_BYTES: slot size of the shared-memory path, 0: off */
  int shm_on;       /* the shared-memory path is used (all ranks on one node, not off) */
  lmx_kvd_shm shm;
  struct ovs *ov; /* the overlapped push's state, made at its first begin */
  char err[512];
} dist;

/* The control all-reduce every verb starts with: all ranks must present the same
 * (kind, sig). It is also the barrier. Started and finished apart so that the
 * overlapped push can start it before backward and finish it at the first gradient. */
typedef struct {
  int64_t v[4], s;
  int kind, req;
  double deadline;
} ctl;

/* Seconds on the monotonic clock. */
double lmx_kvd_now(void);

/* ---- waits and failures (every one names the rank; a failure breaks the store) ---- */

/* Polls the non-blocking request req until done, or until deadline (then: lost). */
int lmx_kvd_wait_op(lmx_kvstore *kv, int req, double deadline, const char *what);
/* rc of a plugin call that starts a request: LMX_OK, or the store fails naming `what`. */
int lmx_kvd_started(lmx_kvstore *kv, int rc, const char *what);
/* LMX_OK unless the store failed earlier. */
int lmx_kvd_usable(lmx_kvstore *kv);

/* ---- the control all-reduce ---- */

/* FNV-1a over n bytes, continuing h; key_sig: over a key's name, shape and dtype. */
uint64_t lmx_kvd_fnv(uint64_t h, const void *p, size_t n);
uint64_t lmx_kvd_key_sig(uint64_t h, const lmx_kv_entry *e);
/* Start / finish the control of a verb of `kind` with signature sig; a disagreement
 * is an error naming this rank's call (kind, keys, what / value) and another rank's. */
int lmx_kvd_control_start(lmx_kvstore *kv, ctl *c, int kind, uint64_t sig);
int lmx_kvd_control_end(lmx_kvstore *kv, ctl *c, int n, lmx_kv_entry *const *e, const char *what,
                        int64_t value);

/* ---- data ---- */

/* Bytes of the fusion buffers for the small keys of e[0..n) (each 64-byte aligned). */
int lmx_kvd_fused_bytes(const dist *d, int n, lmx_kv_entry *const *e, size_t *total);
/* Whether the key's pushed values are one CPU array of its shape and dtype (reduced
 * straight from it). */
int lmx_kvd_direct(const lmx_kv_entry *e, lmx_ndarray *const *v, int nv);

/* Whether key e's sum goes through the node's shared memory (kv_dist_shm.c); the same on
 * every rank once a push's control has passed (its signature covers the setting). */
int lmx_kvd_shm_key(const dist *d, const lmx_kv_entry *e);
/* Maps (or grows) the shared segment: collective when it must (every rank calls it at the
 * same point of the same push); every rank then agrees whether the segment is in use. */
int lmx_kvd_shm_ready(lmx_kvstore *kv);
/* A push's signature extended by the shared-memory setting when one of its keys uses it. */
uint64_t lmx_kvd_shm_sig(const dist *d, uint64_t sig);
/* The setting in words, for a disagreement's message (buf of cap bytes). */
void lmx_kvd_shm_how(const dist *d, char *buf, size_t cap);

/* ---- the overlapped push (kv_dist_overlap.c) ---- */

struct ovs;
void lmx_kvd_ov_free(struct ovs *o);
/* Completes an overlapped session in flight, if any (every other verb calls it first). */
int lmx_kvd_ov_drain(lmx_kvstore *kv);
/* The backend's overlap_on / ov_begin / ov_ready (kvstore.h). */
int lmx_kvd_overlap_on(const lmx_kvstore *kv);
int lmx_kvd_ov_begin(lmx_kvstore *kv, int n, const int *idx, lmx_ndarray *const *values,
                     const int *order);
int lmx_kvd_ov_ready(lmx_kvstore *kv, int n, const int *pos);
/* A push of the session's keys and arrays: finishes it (*used = 1); otherwise drains and
 * drops the session and leaves the push to the caller (*used = 0). */
int lmx_kvd_ov_push(lmx_kvstore *kv, int n, lmx_kv_entry *const *e, lmx_ndarray *const *values,
                    int nv, int *used);

#endif
