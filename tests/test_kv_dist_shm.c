/* test_kv_dist_shm.c — the dist store's shared-memory all-reduce (src/exec/kv_dist_shm.c)
 * without MPI: 2, 3 and 4 forked processes share an anonymous mapping as the segment and
 * run the same long sequence of calls: every dtype, counts of 0, 1, a slot, a slot and one,
 * many slots with odd remainders, slot sizes that change from call to call (the sets lie
 * elsewhere: the call starts with an empty step), in place and into another buffer, with
 * and without a stored value (written with plain or with streaming stores). Each result
 * is compared bit for bit with the sum computed here in rank order with the dtype's
 * rounding at each step (the rule MPI's sum follows), so a region written while another
 * process still reads it shows as a wrong element (the processes outnumber the cores
 * here, so their interleavings vary from run to run).
 * Then the deadline: a process that stops calling leaves the others waiting for its step;
 * their poll is called with expired = 0 (pings) and then 1, whose error names the key and
 * the step, and every later call of theirs fails at once.
 * Prints "N passed, N failed" and exits non-zero on failure. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/status.h"
#include "exec/kv_dist_shm.h"
#include "luamx.h"
#include "tensor/dtype.h"

#include "check.h"

enum { MAXSLOT = 4096, MAXCOUNT = 32768 };

static int polls, expired_polls;

static int poll_test(void *ctx, const char *what, int expired) {
  (void)ctx;
  polls++;
  if (!expired) return LMX_OK;
  expired_polls++;
  return lmx_fail(LMX_ERR_IO, "test: %s: deadline", what);
}

/* Element i of process q's array in call c, as the dtype's bits in a uint64. */
static uint64_t value(int dt, int q, int c, int64_t i) {
  uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)(q * 40503 + c * 7919 + 1);
  h ^= h >> 13, h *= 0x5bd1e995u, h ^= h >> 15;
  switch (dt) {
    case LMX_FLOAT32: {
      float f = ((float)(h % 20001) - 10000.f) / 7.f;
      uint32_t b;
      memcpy(&b, &f, 4);
      return b;
    }
    case LMX_FLOAT64: {
      double d = ((double)h - 2147483648.0) / 3.0;
      uint64_t b;
      memcpy(&b, &d, 8);
      return b;
    }
    case LMX_FLOAT16: return lmx_f32_to_f16(((float)(h % 2001) - 1000.f) / 9.f);
    default: return (uint64_t)h * 0x9E3779B97F4A7C15ull; /* integers: any bits, sums wrap */
  }
}

static void put(int dt, char *p, int64_t i, uint64_t v) {
  memcpy(p + i * lmx_dtype_size(dt), &v, (size_t)lmx_dtype_size(dt)); /* little endian */
}

/* The sum over n processes in rank order, each step rounded to the dtype. */
static uint64_t expect(int dt, int n, int c, int64_t i) {
  uint64_t acc = value(dt, 0, c, i);
  for (int q = 1; q < n; q++) {
    uint64_t x = value(dt, q, c, i);
    if (dt == LMX_FLOAT32) {
      float a, b;
      uint32_t ua = (uint32_t)acc, ub = (uint32_t)x;
      memcpy(&a, &ua, 4), memcpy(&b, &ub, 4), a += b, memcpy(&ua, &a, 4), acc = ua;
    } else if (dt == LMX_FLOAT64) {
      double a, b;
      memcpy(&a, &acc, 8), memcpy(&b, &x, 8), a += b, memcpy(&acc, &a, 8);
    } else if (dt == LMX_FLOAT16)
      acc = lmx_f32_to_f16(lmx_f16_to_f32((uint16_t)acc) + lmx_f16_to_f32((uint16_t)x));
    else
      acc += x;
  }
  int esz = lmx_dtype_size(dt);
  return esz == 8 ? acc : acc & ((1ull << (8 * esz)) - 1);
}

static const int DTYPES[] = {LMX_FLOAT32, LMX_FLOAT64, LMX_FLOAT16, LMX_UINT8,
                             LMX_INT32,   LMX_INT8,    LMX_INT64};

/* One process's part of the sequence; returns its failure count (its exit status). */
static int worker(char *seg, int q, int n, int calls) {
  static char src[MAXCOUNT * 8], out[MAXCOUNT * 8], val[MAXCOUNT * 8];
  static const size_t slots[] = {64, 320, MAXSLOT, MAXSLOT, 192};
  lmx_kvd_shm s = {.seg = seg, .local = q, .nlocal = n, .timeout = 30, .poll = poll_test};
  int bad = 0;
  for (int c = 0; c < calls; c++) {
    int dt = DTYPES[c % 7], esz = lmx_dtype_size(dt);
    s.slot = slots[(c / 7) % 5];
    int64_t per = (int64_t)(s.slot / (size_t)esz);
    int64_t counts[] = {0, 1, per, per + 1, 7 * per + 3, 4099, MAXCOUNT - (c % 13)};
    int64_t count = counts[(3 * c + c / 7) % 7]; /* every count with every dtype and slot */
    if (count > MAXCOUNT) count = MAXCOUNT;
    int inplace = c % 3 == 0, withval = c % 2 == 0;
    s.stream_bytes = c % 4 == 0 ? 1 : 0; /* every other call with a value streams it */
    for (int64_t i = 0; i < count; i++) put(dt, src, i, value(dt, q, c, i));
    memset(out, 0xEE, sizeof out);
    memset(val, 0xDD, sizeof val);
    char *o = inplace ? src : out;
    if (lmx_kvd_shm_allreduce(&s, src, o, withval ? val : NULL, count, dt, "k") != LMX_OK) {
      fprintf(stderr, "process %d, call %d: %s\n", q, c, lmx_errmsg());
      return 1 + bad;
    }
    for (int64_t i = 0; i < count; i++) {
      uint64_t want = expect(dt, n, c, i), got = 0, gv = 0;
      memcpy(&got, o + i * esz, (size_t)esz);
      if (withval) memcpy(&gv, val + i * esz, (size_t)esz);
      if (got != want || (withval && gv != want)) {
        if (bad++ < 5)
          fprintf(stderr, "process %d of %d, call %d (dtype %d, count %lld, slot %zu): element %lld is %llx "
                  "(value %llx), expected %llx\n", q, n, c, dt, (long long)count, s.slot, (long long)i,
                  (unsigned long long)got, (unsigned long long)gv, (unsigned long long)want);
        break;
      }
    }
    /* what lies past the count is left alone */
    if (!inplace && count < MAXCOUNT && (unsigned char)out[count * esz] != 0xEE) bad++;
    if (withval && count < MAXCOUNT && (unsigned char)val[count * esz] != 0xDD) bad++;
  }
  return bad;
}

static char *segment(int n) {
  size_t bytes = lmx_kvd_shm_bytes(n, MAXSLOT);
  char *seg = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (seg == MAP_FAILED) return NULL;
  memset(seg, 0x5A, bytes); /* not zero: only the reset lines may be relied on */
  for (int q = 0; q < n; q++) lmx_kvd_shm_reset(seg, q);
  return seg;
}

static void test_sums(int n, int calls) {
  char *seg = segment(n);
  CHECK(seg != NULL);
  if (!seg) return;
  pid_t pid[8];
  for (int q = 0; q < n; q++) {
    pid[q] = fork();
    if (pid[q] == 0) _exit(worker(seg, q, n, calls) ? 1 : 0);
  }
  for (int q = 0; q < n; q++) {
    int st = 0;
    CHECK(waitpid(pid[q], &st, 0) == pid[q] && WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "%d processes: process %d failed (status %d)", n, q, st);
  }
  munmap(seg, lmx_kvd_shm_bytes(n, MAXSLOT));
}

/* The segment's layout: control lines apart from the sets, both sets inside it. */
static void test_layout(void) {
  CHECK(lmx_kvd_shm_bytes(2, 256 << 10) == 4096 + 2 * 3 * (256 << 10));
  CHECK(lmx_kvd_shm_bytes(40, 64) == 8192 + 2 * 41 * 64);
  CHECK(lmx_kvd_shm_dtype(LMX_FLOAT32) && lmx_kvd_shm_dtype(LMX_INT8) && !lmx_kvd_shm_dtype(LMX_NUM_DTYPES));
}

/* Process 1 makes one call and stops; process 0's second call waits for its step until
 * the deadline. */
static void test_deadline(void) {
  char *seg = segment(2);
  CHECK(seg != NULL);
  if (!seg) return;
  pid_t pid = fork();
  static float a[5000], b[5000];
  lmx_kvd_shm s = {.seg = seg, .slot = 4096, .nlocal = 2, .timeout = 0.3, .poll = poll_test};
  for (int i = 0; i < 5000; i++) a[i] = (float)i;
  if (pid == 0) {
    s.local = 1;
    int rc = lmx_kvd_shm_allreduce(&s, (char *)a, (char *)b, NULL, 5000, LMX_FLOAT32, "k1");
    _exit(rc == LMX_OK && b[4999] == 2 * 4999.f ? 0 : 1);
  }
  s.local = 0;
  CHECK(lmx_kvd_shm_allreduce(&s, (char *)a, (char *)b, NULL, 5000, LMX_FLOAT32, "k1") == LMX_OK);
  CHECK(b[0] == 0.f && b[4999] == 2 * 4999.f);
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  polls = expired_polls = 0;
  int rc = lmx_kvd_shm_allreduce(&s, (char *)a, (char *)b, NULL, 5000, LMX_FLOAT32, "k2");
  CHECK(rc == LMX_ERR_IO);
  CHECK(strstr(lmx_errmsg(), "push of key 'k2' (shared-memory all-reduce, step 1 of 6): deadline") != NULL,
        "%s", lmx_errmsg());
  CHECK(expired_polls == 1 && polls > 100, "polls %d, expired %d", polls, expired_polls);
  rc = lmx_kvd_shm_allreduce(&s, (char *)a, (char *)b, NULL, 5000, LMX_FLOAT32, "k3");
  CHECK(rc == LMX_ERR_STATE && strstr(lmx_errmsg(), "key 'k3'") && strstr(lmx_errmsg(), "an earlier wait failed"),
        "%s", lmx_errmsg());
  munmap(seg, lmx_kvd_shm_bytes(2, MAXSLOT));
}

int main(void) {
  test_layout();
  test_sums(2, 245);
  test_sums(3, 140);
  test_sums(4, 70);
  test_deadline(); /* last: it leaves this process's segment state failed */
  return check_summary();
}
