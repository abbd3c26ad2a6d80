/* sim_exec.cc — the CUDA simulator's execution model: blocks, fibers, barriers, warps.
 *
 * A launch runs its blocks one after another on the launching host thread. The threads
 * of a block are fibers (own stack, own registers): each runs until it reaches
 * __syncthreads, a warp operation (__syncwarp, a shuffle, a vote) or its end, and then
 * the scheduler runs the next one. When every live thread waits at the block barrier,
 * the barrier opens; when every live lane of a warp waits at a warp operation, the
 * values are exchanged and the lanes go on. So code between two barriers really runs
 * thread after thread, and a kernel that forgets a __syncthreads reads values that are
 * not written yet: the order between barriers is forward (thread 0 first, the default),
 * reverse or a seeded shuffle (LUAMX_SIM_ORDER, lmx_sim_set_order), and running a
 * kernel's tests under two orders catches reads in either direction.
 * A block whose threads wait at different barriers (a __syncthreads in a divergent
 * branch, a warp operation some lanes never reach) can never go on: that is detected,
 * the launch stops and the device gets a sticky cudaErrorLaunchFailure, reported at the
 * next synchronisation as a real fault would be. Nothing aborts.
 *
 * Invariants: `cur` points at the running fiber's thread state while a fiber runs and
 * at a harmless per-host-thread state otherwise; a fiber is only resumed by the
 * scheduler of the host thread that created it.
 * Cost, measured on the development machine (AMD EPYC Zen 5): about 10 ns per simulated
 * thread and per barrier (tests/test_cuda_sim.cu: 11,432 threads, 64 barriers, 10 ms).
 * Context switch: a few instructions of x86-64 assembly (callee-saved registers, stack
 * pointer, MXCSR and the x87 control word); ucontext elsewhere. Stacks: 128 KiB from mmap
 * with a guard page below, kept for the host thread's life. AddressSanitizer is told of
 * every switch (__sanitizer_start/finish_switch_fiber).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "include/cuda_runtime.h"
#include "include/lmx_sim.h"
#include "sim_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define LMX_SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LMX_SIM_ASAN 1
#endif
#endif
#ifdef LMX_SIM_ASAN
extern "C" void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom,
                                               size_t size);
extern "C" void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                                size_t *size_old);
#endif

#if defined(__x86_64__)
extern "C" void lmx_sim_switch(void **save_sp, void *new_sp);
__asm__(
    ".text\n"
    ".globl lmx_sim_switch\n"
    ".hidden lmx_sim_switch\n"
    ".type lmx_sim_switch,@function\n"
    "lmx_sim_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  subq $8, %rsp\n  stmxcsr (%rsp)\n  fnstcw 4(%rsp)\n"
    "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
    "  ldmxcsr (%rsp)\n  fldcw 4(%rsp)\n  addq $8, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size lmx_sim_switch,.-lmx_sim_switch\n");
#else
#include <ucontext.h>
#endif

namespace lmx_sim {

namespace {

enum { READY, WAIT_BLOCK, WAIT_WARP, DONE };
enum { STACK_BYTES = 128 * 1024, MAX_THREADS = 1024, OP_SYNCWARP = -1 };

struct fiber {
  thread_state ts;
  int state;
  char *stack; /* usable stack: [stack, stack + STACK_BYTES) */
#if defined(__x86_64__)
  void *sp;
#else
  ucontext_t uc;
#endif
  void *asan_fake;
  /* a pending warp operation */
  int op, arg, width;
  uint64_t offer, result;
};

struct runner {
  std::vector<fiber> f;
  std::vector<int> order;
#if defined(__x86_64__)
  void *sched_sp = nullptr;
#else
  ucontext_t sched_uc;
#endif
  void *sched_fake = nullptr;
  const void *sched_bottom = nullptr;
  size_t sched_size = 0;
  fiber *running = nullptr;
  void (*fn)(void *) = nullptr;
  void *arg = nullptr;
  thread_state idle{};
  ~runner() {
    for (fiber &x : f)
      if (x.stack) munmap(x.stack - getpagesize(), STACK_BYTES + getpagesize());
  }
};

thread_local runner R;
std::mutex g_mu;
int g_order = -1; /* -1: read LUAMX_SIM_ORDER on first use */
unsigned g_seed = 1;
long long g_launches, g_threads, g_barriers;
char g_failure[256];

int order_now(unsigned *seed) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (g_order < 0) {
    const char *e = getenv("LUAMX_SIM_ORDER");
    g_order = LMX_SIM_FORWARD;
    if (e && !strcmp(e, "reverse")) g_order = LMX_SIM_REVERSE;
    if (e && !strncmp(e, "shuffle", 7)) {
      g_order = LMX_SIM_SHUFFLE;
      if (e[7] == ':') g_seed = (unsigned)strtoul(e + 8, nullptr, 10);
    }
  }
  *seed = g_seed + (unsigned)g_launches;
  return g_order;
}

void fail(const char *name, const char *what, const dim3 &bid) {
  std::lock_guard<std::mutex> lk(g_mu);
  snprintf(g_failure, sizeof g_failure,
           "kernel %s, block (%u,%u,%u): %s", name, bid.x, bid.y, bid.z, what);
}

/* ---- switching ---------------------------------------------------------------------- */

void asan_enter_fiber(fiber *t) {
#ifdef LMX_SIM_ASAN
  __sanitizer_start_switch_fiber(&R.sched_fake, t->stack, STACK_BYTES);
#else
  (void)t;
#endif
}
void asan_back_in_scheduler() {
#ifdef LMX_SIM_ASAN
  __sanitizer_finish_switch_fiber(R.sched_fake, nullptr, nullptr);
#endif
}
void asan_leave_fiber(fiber *t, bool exiting) {
#ifdef LMX_SIM_ASAN
  __sanitizer_start_switch_fiber(exiting ? nullptr : &t->asan_fake, R.sched_bottom, R.sched_size);
#else
  (void)t;
  (void)exiting;
#endif
}
void asan_back_in_fiber(fiber *t) {
#ifdef LMX_SIM_ASAN
  __sanitizer_finish_switch_fiber(t->asan_fake, &R.sched_bottom, &R.sched_size);
#else
  (void)t;
#endif
}

/* fiber -> scheduler */
void yield(fiber *t, bool exiting) {
  asan_leave_fiber(t, exiting);
  cur = &R.idle;
#if defined(__x86_64__)
  lmx_sim_switch(&t->sp, R.sched_sp);
#else
  swapcontext(&t->uc, &R.sched_uc);
#endif
  asan_back_in_fiber(t);
  cur = &t->ts;
}

void fiber_main() {
  fiber *t = R.running;
  t->asan_fake = nullptr;
  asan_back_in_fiber(t);
  cur = &t->ts;
  R.fn(R.arg);
  t->state = DONE;
  yield(t, true);
  __builtin_trap(); /* a finished fiber is never resumed */
}

/* scheduler -> fiber */
void resume(fiber *t) {
  R.running = t;
  asan_enter_fiber(t);
#if defined(__x86_64__)
  lmx_sim_switch(&R.sched_sp, t->sp);
#else
  swapcontext(&R.sched_uc, &t->uc);
#endif
  asan_back_in_scheduler();
  R.running = nullptr;
  cur = &R.idle;
}

void start(fiber *t) {
#if defined(__x86_64__)
  uintptr_t top = ((uintptr_t)t->stack + STACK_BYTES) & ~(uintptr_t)15;
  uint64_t *p = (uint64_t *)top;
  *--p = 0;                          /* fiber_main's (never used) return address slot */
  *--p = (uint64_t)(void *)&fiber_main; /* where lmx_sim_switch's ret goes */
  for (int i = 0; i < 6; i++) *--p = 0; /* rbp rbx r12 r13 r14 r15 */
  uint32_t csr;
  uint16_t cw;
  __asm__ volatile("stmxcsr %0" : "=m"(csr));
  __asm__ volatile("fnstcw %0" : "=m"(cw));
  *--p = (uint64_t)csr | ((uint64_t)cw << 32);
  t->sp = p;
#else
  getcontext(&t->uc);
  t->uc.uc_stack.ss_sp = t->stack;
  t->uc.uc_stack.ss_size = STACK_BYTES;
  t->uc.uc_link = nullptr;
  makecontext(&t->uc, (void (*)())fiber_main, 0);
#endif
  t->state = READY;
}

bool ensure_fibers(unsigned n) {
  while (R.f.size() < n) {
    size_t page = (size_t)getpagesize();
    void *m = mmap(nullptr, STACK_BYTES + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return false;
    mprotect(m, page, PROT_NONE); /* guard page: a stack overflow faults, never corrupts */
    fiber t{};
    t.stack = (char *)m + page;
    R.f.push_back(t);
  }
  return true;
}

/* ---- warps -------------------------------------------------------------------------- */

/* Completes the warp operation of warp w when all its live lanes wait at one. */
bool try_release_warp(unsigned w, unsigned n) {
  unsigned lo = w * 32, hi = std::min(n, lo + 32);
  bool any = false;
  for (unsigned i = lo; i < hi; i++) {
    int s = R.f[i].state;
    if (s == READY || s == WAIT_BLOCK) return false;
    if (s == WAIT_WARP) any = true;
  }
  if (!any) return false;
  unsigned ballot = 0;
  for (unsigned i = lo; i < hi; i++) {
    const fiber &t = R.f[i];
    if (t.state == WAIT_WARP && t.op >= 4 && t.offer) ballot |= 1u << (i - lo);
  }
  for (unsigned i = lo; i < hi; i++) {
    fiber &t = R.f[i];
    if (t.state != WAIT_WARP) continue;
    unsigned lane = i - lo;
    if (t.op >= 0 && t.op < 4) {
      unsigned width = t.width > 0 && t.width <= 32 ? (unsigned)t.width : 32;
      unsigned seg = lane / width * width, src = lane;
      if (t.op == 0) src = seg + ((unsigned)t.arg % width);
      if (t.op == 1) src = lane >= seg + (unsigned)t.arg ? lane - (unsigned)t.arg : lane;
      if (t.op == 2) src = lane + (unsigned)t.arg < seg + width ? lane + (unsigned)t.arg : lane;
      if (t.op == 3) src = lane ^ (unsigned)t.arg;
      if (src >= seg + width) src = lane;
      const fiber &from = R.f[lo + src];
      /* a lane that has exited (or waits elsewhere) offers nothing: keep the own value */
      t.result = (lo + src < hi && from.state == WAIT_WARP) ? from.offer : t.offer;
    } else if (t.op >= 4) {
      unsigned live = 0;
      for (unsigned j = lo; j < hi; j++)
        if (R.f[j].state == WAIT_WARP) live |= 1u << (j - lo);
      int kind = t.op - 4;
      t.result = kind == 0 ? ballot : kind == 1 ? (ballot != 0) : (ballot == live);
    }
  }
  for (unsigned i = lo; i < hi; i++)
    if (R.f[i].state == WAIT_WARP) R.f[i].state = READY;
  return true;
}

uint64_t warp_op(int op, int arg, int width, uint64_t offer) {
  fiber *t = R.running;
  if (!t) return offer; /* called outside a kernel: a lone lane */
  t->op = op;
  t->arg = arg;
  t->width = width;
  t->offer = offer;
  t->state = WAIT_WARP;
  yield(t, false);
  return t->result;
}

/* ---- one block ---------------------------------------------------------------------- */

/* Runs every thread of the current block to its end; false on a deadlock. */
bool run_block(const char *name, unsigned n, int ord, unsigned seed) {
  const dim3 b = cur_block->block;
  for (unsigned i = 0; i < n; i++) {
    fiber &t = R.f[i];
    t.ts.linear = i;
    t.ts.tid = dim3(i % b.x, i / b.x % b.y, i / (b.x * b.y));
    t.ts.lane = i % 32;
    t.ts.warp = i / 32;
    start(&t);
  }
  R.order.resize(n);
  for (unsigned i = 0; i < n; i++) R.order[i] = (int)(ord == LMX_SIM_REVERSE ? n - 1 - i : i);
  unsigned x = seed * 2654435761u + 1;
  for (;;) {
    if (ord == LMX_SIM_SHUFFLE)
      for (unsigned i = n; i > 1; i--) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        std::swap(R.order[i - 1], R.order[x % i]);
      }
    for (unsigned k = 0; k < n; k++) {
      fiber *t = &R.f[(unsigned)R.order[k]];
      if (t->state == READY) resume(t);
    }
    bool released = false;
    for (unsigned w = 0; w * 32 < n; w++) released |= try_release_warp(w, n);
    if (released) continue;
    unsigned at_barrier = 0, done = 0;
    for (unsigned i = 0; i < n; i++) {
      at_barrier += R.f[i].state == WAIT_BLOCK;
      done += R.f[i].state == DONE;
    }
    if (done == n) return true;
    if (at_barrier + done == n) {
      for (unsigned i = 0; i < n; i++)
        if (R.f[i].state == WAIT_BLOCK) R.f[i].state = READY;
      std::lock_guard<std::mutex> lk(g_mu);
      g_barriers++;
      continue;
    }
    fail(name, "threads wait at different barriers (a __syncthreads or warp operation "
               "that not every thread reaches): the block can never finish",
         cur_block->bid);
    return false;
  }
}

}  // namespace

thread_local thread_state *cur = &R.idle;
thread_local block_state *cur_block = nullptr;

unsigned char *dyn_shared() { return cur_block ? cur_block->dyn_shared : nullptr; }

void syncthreads() {
  fiber *t = R.running;
  if (!t) return;
  t->state = WAIT_BLOCK;
  yield(t, false);
}

void syncwarp(unsigned mask) {
  (void)mask;
  warp_op(OP_SYNCWARP, 0, 32, 0);
}

uint64_t shfl(uint64_t v, int op, int arg, int width) { return warp_op(op, arg, width, v); }

unsigned vote(int op, int pred) { return (unsigned)warp_op(4 + op, 0, 32, pred ? 1 : 0); }

void launch_impl(const char *name, dim3 grid, dim3 block, size_t shmem, cudaStream_t s,
                 void (*fn)(void *), void *arg) {
  unsigned long long nt = (unsigned long long)block.x * block.y * block.z;
  if (nt == 0 || nt > MAX_THREADS || block.x > 1024 || block.y > 1024 || block.z > 64 ||
      grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 ||
      grid.z > 65535 || shmem > 48 * 1024) {
    rt_set_last(cudaErrorInvalidConfiguration);
    return;
  }
  int dev = rt_stream_device(s);
  if (dev < 0) {
    rt_set_last(cudaErrorInvalidResourceHandle);
    return;
  }
  if (R.running) { /* a launch from inside a kernel: not supported (no dynamic parallelism) */
    rt_set_last(cudaErrorLaunchFailure);
    return;
  }
  int injected = rt_take_injected(dev);
  if (injected) {
    rt_set_sticky(dev, (cudaError_t)injected);
    return;
  }
  if (!ensure_fibers((unsigned)nt)) {
    rt_set_last(cudaErrorMemoryAllocation);
    return;
  }
  unsigned seed;
  int ord = order_now(&seed);
  std::vector<unsigned char> smem(shmem ? shmem : 1, 0xcd); /* not zero: unwritten reads show */
  block_state bs{grid, block, dim3(0, 0, 0), smem.data()};
  block_state *saved = cur_block;
  cur_block = &bs;
  R.fn = fn;
  R.arg = arg;
  bool ok = true;
  for (unsigned z = 0; ok && z < grid.z; z++)
    for (unsigned y = 0; ok && y < grid.y; y++)
      for (unsigned x = 0; ok && x < grid.x; x++) {
        bs.bid = dim3(x, y, z);
        ok = run_block(name, (unsigned)nt, ord, seed + x);
      }
  cur_block = saved;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    g_launches++;
    g_threads += (long long)nt * grid.x * grid.y * grid.z;
  }
  if (!ok) rt_set_sticky(dev, cudaErrorLaunchFailure);
}

}  // namespace lmx_sim

extern "C" void lmx_sim_set_order(int order, unsigned seed) {
  std::lock_guard<std::mutex> lk(lmx_sim::g_mu);
  lmx_sim::g_order = order;
  lmx_sim::g_seed = seed;
}

extern "C" int lmx_sim_get_order(void) {
  unsigned seed;
  return lmx_sim::order_now(&seed);
}

extern "C" void lmx_sim_stats(long long *launches, long long *threads, long long *barriers) {
  std::lock_guard<std::mutex> lk(lmx_sim::g_mu);
  if (launches) *launches = lmx_sim::g_launches;
  if (threads) *threads = lmx_sim::g_threads;
  if (barriers) *barriers = lmx_sim::g_barriers;
}

extern "C" const char *lmx_sim_last_failure(void) { return lmx_sim::g_failure; }
