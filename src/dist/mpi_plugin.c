/* mpi_plugin.c — libluamx_mpi.so: the MPI side of the dist kvstores (the table of
 * mpi_abi.h over OpenMPI). Built only when CMake finds MPI; libluamx dlopen()s it on
 * the first dist_sync / dist_device_sync store, so libluamx itself never needs libmpi.
 *
 * State is per process: MPI is initialized once (MPI_THREAD_FUNNELED), and two
 * duplicates of MPI_COMM_WORLD are kept, `data` for the collectives and `ping` for the
 * liveness pings that name a lost rank after a deadline. Both return errors instead of
 * aborting (MPI_ERRORS_RETURN). Non-blocking requests live in a fixed table of slots;
 * the handle given out is the slot index.
 * Without a launcher (no OMPI_COMM_WORLD_SIZE / PMIX_RANK / PMI_RANK in the
 * environment) MPI is not started at all: the store is rank 0 of 1 and no collective is
 * ever called. At exit MPI_Finalize runs unless a failure was marked or the exit status
 * is non-zero (a finalize would wait for the ranks that are gone or still running).
 * float16 sums use an MPI_Op of our own over MPI_UINT16_T (MPI has no half type).
 * The ranks of one node also share `node` (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED) and,
 * once kv_dist.c asks for it, a segment of memory mapped in all of them (an
 * MPI_Win_allocate_shared window, held in passive-target lock_all for its lifetime).
 */
#define _GNU_SOURCE /* on_exit */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_abi.h"

#define LMX_MPI_EXPORT __attribute__((visibility("default")))
LMX_MPI_EXPORT int lmx_mpi_plugin(lmx_mpi_ops *ops);

enum { NSLOT = 1024, TAG_PING = 7001, TAG_PONG = 7002, NPONG = 64 };
/* luamx dtype codes (src/luamx.h): float32, float64, float16, uint8, int32, int8, int64 */
enum { DT_F32, DT_F64, DT_F16, DT_U8, DT_I32, DT_I8, DT_I64, DT_N };

static struct {
  int inited, started, failed, rank, size, lrank, lsize;
  MPI_Comm data, ping, node;
  MPI_Win win; /* the node's shared segment, MPI_WIN_NULL until asked for */
  MPI_Op f16sum;
  MPI_Request slot[NSLOT];
  MPI_Request pong[NPONG]; /* answers in flight */
  int ping_buf, pong_buf[NPONG];
} S;

static int fail(char *err, int cap, const char *what, int code) {
  char s[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(code, s, &len);
  snprintf(err, (size_t)cap, "MPI: %s failed: %s", what, s);
  return -1;
}

static uint16_t f2h(float f) {
  union { float f; uint32_t u; } v = {f};
  uint32_t x = v.u, sign = (x >> 16) & 0x8000u;
  int32_t e = (int32_t)((x >> 23) & 0xff) - 127 + 15;
  uint32_t m = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00u | (m ? 0x200u : 0));
  if (e >= 31) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    m |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - e), h = m >> shift, rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = sign | ((uint32_t)e << 10) | (m >> 13), rem = m & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
  return (uint16_t)h;
}

static float h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu;
  float f;
  if (e == 0) f = ldexpf((float)m, -24);
  else if (e == 31) f = m ? NAN : INFINITY;
  else f = ldexpf((float)(m | 0x400u), (int)e - 25);
  union { float f; uint32_t u; } v = {f};
  v.u |= sign;
  return v.f;
}

static void f16_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
  (void)dt;
  const uint16_t *a = in;
  uint16_t *b = inout;
  for (int i = 0; i < *len; i++) b[i] = f2h(h2f(a[i]) + h2f(b[i]));
}

/* At exit (on_exit: it sees the status): MPI_Finalize only after a clean run. A process
 * that exits non-zero (a Lua error) skips it, so it ends at once and mpirun ends the job
 * naming it, instead of waiting in the finalize for ranks still training. */
static void finish(int status, void *arg) {
  (void)arg;
  if (!S.started || S.failed || status != 0) return;
  int fin = 0;
  MPI_Finalized(&fin);
  if (fin) return;
  if (S.win != MPI_WIN_NULL) MPI_Win_unlock_all(S.win), MPI_Win_free(&S.win);
  MPI_Finalize();
}

static int launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

static int p_init(int *rank, int *size, char *err, int cap) {
  if (!S.inited) {
    S.rank = 0, S.size = 1, S.lrank = 0, S.lsize = 1;
    S.win = MPI_WIN_NULL;
    for (int i = 0; i < NSLOT; i++) S.slot[i] = MPI_REQUEST_NULL;
    for (int i = 0; i < NPONG; i++) S.pong[i] = MPI_REQUEST_NULL;
    if (launched()) {
      int already = 0, provided = 0, rc;
      MPI_Initialized(&already);
      if (!already) {
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) return fail(err, cap, "MPI_Init_thread", rc);
        S.started = 1;
        on_exit(finish, NULL);
      }
      MPI_Comm_rank(MPI_COMM_WORLD, &S.rank);
      MPI_Comm_size(MPI_COMM_WORLD, &S.size);
      if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &S.data)) != MPI_SUCCESS)
        return fail(err, cap, "MPI_Comm_dup", rc);
      if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &S.ping)) != MPI_SUCCESS)
        return fail(err, cap, "MPI_Comm_dup", rc);
      if ((rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                                    &S.node)) != MPI_SUCCESS)
        return fail(err, cap, "MPI_Comm_split_type", rc);
      MPI_Comm_set_errhandler(S.data, MPI_ERRORS_RETURN);
      MPI_Comm_set_errhandler(S.ping, MPI_ERRORS_RETURN);
      MPI_Comm_set_errhandler(S.node, MPI_ERRORS_RETURN);
      MPI_Comm_rank(S.node, &S.lrank);
      MPI_Comm_size(S.node, &S.lsize);
      MPI_Op_create(f16_sum, 1, &S.f16sum);
    }
    S.inited = 1;
  }
  *rank = S.rank, *size = S.size;
  return 0;
}

static int free_slot(char *err, int cap) {
  for (int i = 0; i < NSLOT; i++)
    if (S.slot[i] == MPI_REQUEST_NULL) return i;
  snprintf(err, (size_t)cap, "MPI: more than %d collectives in flight", NSLOT);
  return -1;
}

/* The MPI type and op of a luamx dtype code; -1 with a message for what MPI cannot do. */
static int type_op(int dtype, int op, MPI_Datatype *t, MPI_Op *o, char *err, int cap) {
  if (dtype < 0 || dtype >= DT_N) {
    snprintf(err, (size_t)cap, "MPI: all-reduce: unknown dtype code %d", dtype);
    return -1;
  }
  if (dtype == DT_F16 && op != LMX_MPI_SUM) {
    snprintf(err, (size_t)cap, "MPI: all-reduce: float16 supports only the sum");
    return -1;
  }
  *o = dtype == DT_F16 ? S.f16sum : op == LMX_MPI_MAX ? MPI_MAX : MPI_SUM;
  *t = dtype == DT_F32   ? MPI_FLOAT
       : dtype == DT_F64 ? MPI_DOUBLE
       : dtype == DT_F16 ? MPI_UINT16_T
       : dtype == DT_U8  ? MPI_UINT8_T
       : dtype == DT_I32 ? MPI_INT32_T
       : dtype == DT_I8  ? MPI_INT8_T
                         : MPI_INT64_T;
  return 0;
}

static int p_allreduce(const void *src, void *dst, int count, int dtype, int op, char *err, int cap) {
  MPI_Datatype t;
  MPI_Op o;
  if (type_op(dtype, op, &t, &o, err, cap) != 0) return -1;
  int rc = MPI_Allreduce(src ? src : MPI_IN_PLACE, dst, count, t, o, S.data);
  return rc == MPI_SUCCESS ? 0 : fail(err, cap, "MPI_Allreduce", rc);
}

static int p_iallreduce(const void *src, void *buf, int count, int dtype, int op, int *req, char *err,
                        int cap) {
  MPI_Datatype t;
  MPI_Op o;
  if (type_op(dtype, op, &t, &o, err, cap) != 0) return -1;
  int s = free_slot(err, cap);
  if (s < 0) return -1;
  int rc = MPI_Iallreduce(src ? src : MPI_IN_PLACE, buf, count, t, o, S.data, &S.slot[s]);
  if (rc != MPI_SUCCESS) return fail(err, cap, "MPI_Iallreduce", rc);
  *req = s;
  return 0;
}

static int p_ibcast(void *buf, int bytes, int root, int *req, char *err, int cap) {
  int s = free_slot(err, cap);
  if (s < 0) return -1;
  int rc = MPI_Ibcast(buf, bytes, MPI_BYTE, root, S.data, &S.slot[s]);
  if (rc != MPI_SUCCESS) return fail(err, cap, "MPI_Ibcast", rc);
  *req = s;
  return 0;
}

static int p_iallgather(const void *send, int bytes, void *recv, int *req, char *err, int cap) {
  int s = free_slot(err, cap);
  if (s < 0) return -1;
  int rc = MPI_Iallgather(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, S.data, &S.slot[s]);
  if (rc != MPI_SUCCESS) return fail(err, cap, "MPI_Iallgather", rc);
  *req = s;
  return 0;
}

/* Answers pings from other ranks (a deadline expired there). */
static void serve_pings(void) {
  int flag = 1;
  while (flag) {
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_PING, S.ping, &flag, &st) != MPI_SUCCESS || !flag) return;
    MPI_Recv(&S.ping_buf, 1, MPI_INT, st.MPI_SOURCE, TAG_PING, S.ping, MPI_STATUS_IGNORE);
    for (int i = 0; i < NPONG; i++) {
      int done = 1;
      if (S.pong[i] != MPI_REQUEST_NULL) MPI_Test(&S.pong[i], &done, MPI_STATUS_IGNORE);
      if (!done) continue;
      S.pong_buf[i] = S.rank;
      MPI_Isend(&S.pong_buf[i], 1, MPI_INT, st.MPI_SOURCE, TAG_PONG, S.ping, &S.pong[i]);
      break;
    }
  }
}

static int p_test(int req, char *err, int cap) {
  int done = 0;
  MPI_Status st;
  int rc = MPI_Test(&S.slot[req], &done, &st);
  if (rc != MPI_SUCCESS) {
    S.slot[req] = MPI_REQUEST_NULL;
    return fail(err, cap, "a collective", rc);
  }
  if (!done) serve_pings();
  return done ? 1 : 0;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int p_probe_alive(double timeout, unsigned char *alive, char *err, int cap) {
  (void)err, (void)cap;
  if (S.size > 4096) return 0;
  MPI_Request rq[4096], sq[4096];
  int ans[4096], one = 1;
  for (int r = 0; r < S.size; r++) {
    alive[r] = r == S.rank;
    rq[r] = sq[r] = MPI_REQUEST_NULL;
    if (r == S.rank) continue;
    MPI_Isend(&one, 1, MPI_INT, r, TAG_PING, S.ping, &sq[r]);
    MPI_Irecv(&ans[r], 1, MPI_INT, r, TAG_PONG, S.ping, &rq[r]);
  }
  double end = now() + timeout;
  int pending = S.size - 1;
  while (pending > 0 && now() < end) {
    serve_pings();
    for (int r = 0; r < S.size; r++) {
      int done = 0;
      if (rq[r] == MPI_REQUEST_NULL) continue;
      if (MPI_Test(&rq[r], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) rq[r] = MPI_REQUEST_NULL, pending--;
      else if (done) alive[r] = 1, pending--;
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  for (int r = 0; r < S.size; r++) {
    if (rq[r] != MPI_REQUEST_NULL) MPI_Cancel(&rq[r]), MPI_Request_free(&rq[r]);
    if (sq[r] != MPI_REQUEST_NULL) MPI_Request_free(&sq[r]);
  }
  return 0;
}

static void p_mark_failed(void) { S.failed = 1; }

static void p_node(int *local, int *nlocal) { *local = S.lrank, *nlocal = S.lsize; }

static int p_shm(size_t bytes, void **base, char *err, int cap) {
  if (S.lsize < 2) {
    snprintf(err, (size_t)cap, "MPI: no other rank on this node to share memory with");
    return -1;
  }
  if (S.win != MPI_WIN_NULL) MPI_Win_unlock_all(S.win), MPI_Win_free(&S.win);
  void *mine = NULL;
  /* rank 0 of the node allocates the whole segment: one contiguous range */
  int rc = MPI_Win_allocate_shared(S.lrank == 0 ? (MPI_Aint)bytes : 0, 1, MPI_INFO_NULL, S.node, &mine,
                                   &S.win);
  if (rc != MPI_SUCCESS) return S.win = MPI_WIN_NULL, fail(err, cap, "MPI_Win_allocate_shared", rc);
  MPI_Aint size = 0;
  int unit = 0;
  rc = MPI_Win_shared_query(S.win, 0, &size, &unit, base);
  if (rc == MPI_SUCCESS && (size_t)size < bytes) {
    snprintf(err, (size_t)cap, "MPI: shared segment of %zu bytes instead of %zu", (size_t)size, bytes);
    MPI_Win_free(&S.win);
    return -1;
  }
  if (rc == MPI_SUCCESS) rc = MPI_Win_lock_all(MPI_MODE_NOCHECK, S.win);
  if (rc != MPI_SUCCESS) return MPI_Win_free(&S.win), fail(err, cap, "MPI_Win_shared_query", rc);
  return 0;
}

int lmx_mpi_plugin(lmx_mpi_ops *ops) {
  ops->abi = LMX_MPI_ABI_VERSION;
  ops->init = p_init;
  ops->iallreduce = p_iallreduce;
  ops->allreduce = p_allreduce;
  ops->ibcast = p_ibcast;
  ops->iallgather = p_iallgather;
  ops->test = p_test;
  ops->probe_alive = p_probe_alive;
  ops->mark_failed = p_mark_failed;
  ops->node = p_node;
  ops->shm = p_shm;
  ops->serve = serve_pings;
  return 0;
}
