/* kv_dist_shm.c — the dist store's all-reduce through the node's shared memory (the scheme
 * is described in kv_dist_shm.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */
#include "kv_dist_shm.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../core/status.h"
#include "../tensor/dtype.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

enum { BLOCK = 512, MAXRANKS = 256, LINE = 128 };

/* A rank's control line: written by that rank only (seq with release stores), read by all;
 * `slot` is the slot size of the rank's last call, read by the rank itself. */
typedef struct {
  uint64_t seq;
  uint64_t slot;
} ctl_line;

static int out_of_step; /* a wait failed: the ranks' steps no longer match */

static size_t ctl_bytes(int nlocal) { return ((size_t)nlocal * LINE + 4095) & ~(size_t)4095; }

size_t lmx_kvd_shm_bytes(int nlocal, size_t slot) {
  return ctl_bytes(nlocal) + 2 * ((size_t)nlocal + 1) * slot;
}

static ctl_line *ctl(char *seg, int q) { return (ctl_line *)(void *)(seg + (size_t)q * LINE); }

void lmx_kvd_shm_reset(char *seg, int local) {
  memset(ctl(seg, local), 0, sizeof(ctl_line));
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

int lmx_kvd_shm_dtype(int dtype) {
  switch (dtype) {
    case LMX_FLOAT32:
    case LMX_FLOAT64:
    case LMX_FLOAT16:
    case LMX_UINT8:
    case LMX_INT32:
    case LMX_INT8:
    case LMX_INT64:
      return 1;
    default:
      return 0;
  }
}

/* The sum of elements [i0, i1) over the n sources p[], written to the ndst destinations;
 * a block at a time in a local accumulator, so that every source is read once. Full
 * blocks run loops of a constant count, which GCC vectorizes at -O2 too. */
#define SUM_KERNEL(NAME, T, ADD)                                                       \
  static inline __attribute__((always_inline)) void NAME##_block(                      \
      const char *const *p, int n, char *const *dst, int ndst, size_t i, size_t m) {   \
    T acc[BLOCK];                                                                      \
    const T *s0 = (const T *)p[0] + i;                                                 \
    for (size_t j = 0; j < m; j++) acc[j] = s0[j];                                     \
    for (int q = 1; q < n; q++) {                                                      \
      const T *s = (const T *)p[q] + i;                                                \
      for (size_t j = 0; j < m; j++) acc[j] = ADD(acc[j], s[j]);                       \
    }                                                                                  \
    for (int d = 0; d < ndst; d++) memcpy((T *)dst[d] + i, acc, m * sizeof(T));        \
  }                                                                                    \
  static void NAME(const char *const *p, int n, char *const *dst, int ndst, size_t i0, \
                   size_t i1) {                                                        \
    size_t i = i0;                                                                     \
    for (; i + BLOCK <= i1; i += BLOCK) NAME##_block(p, n, dst, ndst, i, BLOCK);       \
    if (i < i1) NAME##_block(p, n, dst, ndst, i, i1 - i);                              \
  }

#define ADD_F(a, b) ((a) + (b))
#define ADD_U8(a, b) ((uint8_t)((a) + (b)))
#define ADD_I8(a, b) ((int8_t)(uint8_t)((uint8_t)(a) + (uint8_t)(b)))
#define ADD_I32(a, b) ((int32_t)((uint32_t)(a) + (uint32_t)(b)))
#define ADD_I64(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define ADD_F16(a, b) lmx_f32_to_f16(lmx_f16_to_f32(a) + lmx_f16_to_f32(b))

SUM_KERNEL(sum_f32, float, ADD_F)
SUM_KERNEL(sum_f64, double, ADD_F)
SUM_KERNEL(sum_u8, uint8_t, ADD_U8)
SUM_KERNEL(sum_i8, int8_t, ADD_I8)
SUM_KERNEL(sum_i32, int32_t, ADD_I32)
SUM_KERNEL(sum_i64, int64_t, ADD_I64)
SUM_KERNEL(sum_f16, uint16_t, ADD_F16)

static void sum(int dtype, const char *const *p, int n, char *const *dst, int ndst, size_t i0,
                size_t i1) {
  switch (dtype) {
    case LMX_FLOAT32:
      sum_f32(p, n, dst, ndst, i0, i1);
      break;
    case LMX_FLOAT64:
      sum_f64(p, n, dst, ndst, i0, i1);
      break;
    case LMX_FLOAT16:
      sum_f16(p, n, dst, ndst, i0, i1);
      break;
    case LMX_UINT8:
      sum_u8(p, n, dst, ndst, i0, i1);
      break;
    case LMX_INT32:
      sum_i32(p, n, dst, ndst, i0, i1);
      break;
    case LMX_INT8:
      sum_i8(p, n, dst, ndst, i0, i1);
      break;
    default:
      sum_i64(p, n, dst, ndst, i0, i1);
      break;
  }
}


static void plain_copy(char *to, const char *from, size_t n) { memcpy(to, from, n); }

/* Copies n bytes with streaming stores where the CPU has them (x86-64: SSE2, always),
 * whole 64-byte lines at a time; memcpy for the unaligned head and the tail. */
static void stream_copy(char *to, const char *from, size_t n) {
#if defined(__x86_64__)
  size_t head = (size_t)(-(uintptr_t)to & 63);
  if (head > n) head = n;
  memcpy(to, from, head);
  size_t i = head;
  for (; i + 64 <= n; i += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(from + i));
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(from + i + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(from + i + 32));
    __m128i d = _mm_loadu_si128((const __m128i *)(const void *)(from + i + 48));
    _mm_stream_si128((__m128i *)(void *)(to + i), a);
    _mm_stream_si128((__m128i *)(void *)(to + i + 16), b);
    _mm_stream_si128((__m128i *)(void *)(to + i + 32), c);
    _mm_stream_si128((__m128i *)(void *)(to + i + 48), d);
  }
  memcpy(to + i, from + i, n - i);
#else
  memcpy(to, from, n);
#endif
}

/* Orders the streaming stores before what follows (the caller's later reads of the value,
 * other threads). */
static void stream_fence(void) {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

/* Copies bytes [0, a) and [b, len) of from to to (the parts outside a slice), with
 * streaming stores when stream. */
static void outside(char *to, const char *from, size_t a, size_t b, size_t len, int stream) {
  void (*copy)(char *, const char *, size_t) = stream ? stream_copy : plain_copy;
  if (a > 0) copy(to, from, a);
  if (b < len) copy(to + b, from + b, len - b);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Whether every rank has published step `target` (seq >= target; acquire: what a rank
 * wrote before publishing is visible after). */
static int reached(const lmx_kvd_shm *s, uint64_t target) {
  for (int q = 0; q < s->nlocal; q++)
    if (__atomic_load_n(&ctl(s->seg, q)->seq, __ATOMIC_ACQUIRE) < target) return 0;
  return 1;
}

/* Publishes this rank's step and waits for every rank's: spins about 20 us (the others
 * are usually a moment behind), then yields the core, then sleeps, polling the store
 * (pings, deadline) every 200 us. step/steps: the call's step, for the message. */
static int step_wait(const lmx_kvd_shm *s, uint64_t target, const char *key, int64_t step,
                     int64_t steps) {
  __atomic_store_n(&ctl(s->seg, s->local)->seq, target, __ATOMIC_RELEASE);
  double t0 = 0, next = 0;
  for (unsigned k = 0;; k++) {
    if (reached(s, target)) return LMX_OK;
    if ((k & 31) != 31) {
      cpu_relax();
      continue;
    }
    double t = now();
    if (t0 == 0) t0 = t, next = t + 2e-4;
    if (t - t0 < 2e-5) continue;
    if (t >= next) {
      char what[192];
      snprintf(what, sizeof what, "push of key '%s' (shared-memory all-reduce, step %lld of %lld)",
               key, (long long)step, (long long)steps);
      next = t + 2e-4;
      int rc = s->poll(s->ctx, what, t - t0 > s->timeout);
      if (rc != LMX_OK) return out_of_step = 1, rc;
    }
    if (t - t0 < 2e-3)
      sched_yield();
    else {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
}

int lmx_kvd_shm_allreduce(const lmx_kvd_shm *s, const char *src, char *out, char *val,
                          int64_t count, int dtype, const char *key) {
  size_t esz = (size_t)lmx_dtype_size(dtype), per_chunk = s->slot / esz;
  int n = s->nlocal, me = s->local;
  if (n > MAXRANKS || per_chunk == 0 || !lmx_kvd_shm_dtype(dtype) || count < 0)
    return lmx_fail(LMX_ERR_INTERNAL, "kvstore: shared-memory all-reduce of key '%s': unsupported",
                    key);
  if (out_of_step)
    return lmx_fail(LMX_ERR_STATE,
                    "kvstore: shared-memory all-reduce of key '%s': an earlier wait failed (a "
                    "worker was lost); create a new job",
                    key);
  if (count == 0) return LMX_OK;
  ctl_line *mine = ctl(s->seg, me);
  /* the steps this rank (and so every rank) has made */
  uint64_t g = __atomic_load_n(&mine->seq, __ATOMIC_RELAXED);
  int64_t steps = (count + (int64_t)per_chunk - 1) / (int64_t)per_chunk + 1;
  int extra = mine->slot != s->slot;
  if (extra) { /* the last call's sets lie elsewhere: every rank leaves that call first */
    LMX_TRY(step_wait(s, ++g, key, 1, steps + 1));
    mine->slot = s->slot;
  }
  size_t set = (size_t)(n + 1) * s->slot;
  char *sets = s->seg + ctl_bytes(n);
  const char *p[MAXRANKS];
  size_t pa = 0, pb = 0, pm = 0; /* the previous chunk's slice and length */
  int stream = val && s->stream_bytes && (size_t)count * esz >= s->stream_bytes;
  int ndst = val && !stream ? 3 : 2;
  for (int64_t i = 0; i < steps; i++, g++) {
    size_t c = (size_t)i * per_chunk, m = 0, a = 0, b = 0;
    char *base = sets + (g & 1) * set, *res = base + (size_t)n * s->slot;
    if (i < steps - 1) {
      m = (size_t)count - c < per_chunk ? (size_t)count - c : per_chunk;
      size_t line = 64 / esz, slice = ((m + (size_t)n - 1) / (size_t)n + line - 1) / line * line;
      a = (size_t)me * slice < m ? (size_t)me * slice : m, b = a + slice < m ? a + slice : m;
      outside(base + (size_t)me * s->slot, src + c * esz, a * esz, b * esz, m * esz, 0);
    }
    LMX_TRY(step_wait(s, g + 1, key, i + 1 + extra, steps + extra));
    if (i < steps - 1) {
      for (int q = 0; q < n; q++) p[q] = q == me ? src + c * esz : base + (size_t)q * s->slot;
      char *dst[3] = {out + c * esz, res, val ? val + c * esz : NULL}; /* element 0 of the chunk */
      sum(dtype, p, n, dst, ndst, a, b);
      if (stream) stream_copy(val + (c + a) * esz, out + (c + a) * esz, (b - a) * esz);
    }
    if (i > 0) { /* the previous chunk's result, in the other set */
      const char *prev = sets + ((g - 1) & 1) * set + (size_t)n * s->slot;
      size_t pc = (c - per_chunk) * esz;
      outside(out + pc, prev, pa * esz, pb * esz, pm * esz, 0);
      if (val) outside(val + pc, prev, pa * esz, pb * esz, pm * esz, stream);
    }
    pa = a, pb = b, pm = m;
  }
  if (stream) stream_fence();
  return LMX_OK;
}
