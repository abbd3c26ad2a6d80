/* lmx_sim.h — the CUDA simulator's own controls (C), for tests and the device runtime.
 * Present only in the -DLUAMX_CUDA=SIM build (LUAMX_CUDA_SIM defined).
 */
#ifndef LMX_SIM_H
#define LMX_SIM_H

#ifdef __cplusplus
extern "C" {
#endif

/* Order in which the threads of a block run between two barriers: forward (thread 0
 * first), reverse, or shuffled (reshuffled at every barrier, seeded by `seed` mixed with
 * the kernel's name and the block's index, so a run reproduces). Environment
 * LUAMX_SIM_ORDER ("forward", "reverse", "shuffle" or "shuffle:<seed>") sets the default;
 * unset, it is a shuffle with seed 0, which catches a missing barrier whichever way the
 * threads read each other's data. lmx_sim_set_order(-1, 0) returns to that default. */
enum { LMX_SIM_FORWARD = 0, LMX_SIM_REVERSE = 1, LMX_SIM_SHUFFLE = 2 };
void lmx_sim_set_order(int order, unsigned seed);
int lmx_sim_get_order(void);

/* Makes the next kernel launch on device `dev` fail asynchronously with `code` (a
 * cudaError_t, e.g. cudaErrorIllegalAddress = 700): the launch itself succeeds, the
 * kernel does not run, and the next synchronising call returns the code (sticky until
 * then). For testing the device runtime's fault reporting. */
void lmx_sim_inject_fault(int dev, int code);

/* Counters since the process started: launches, simulated threads, barrier releases. */
void lmx_sim_stats(long long *launches, long long *threads, long long *barriers);

/* The message of the last kernel failure the simulator detected (barrier deadlock,
 * divergent warp operation), "" when none. */
const char *lmx_sim_last_failure(void);

/* The simulated NCCL (sim_nccl.cc): the entry point called `name` (ncclCommInitAll,
 * ncclCommDestroy, ncclGroupStart, ncclGroupEnd, ncclAllReduce, ncclGetErrorString),
 * with NCCL's signature, or NULL. cuda_libs returns these for LMX_LIB_NCCL in the SIM
 * build. */
void *lmx_sim_nccl_symbol(const char *name);

#ifdef __cplusplus
}
#endif

#endif
