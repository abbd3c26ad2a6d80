/* cuda_nccl.h — NCCL all-reduces over the GPUs of one process (CUDA builds only), for
 * the `nccl` kvstore (src/exec/kv_nccl.c).
 *
 * NCCL is opened at first use through cuda_libs (LMX_LIB_NCCL: libnccl.so.2; in the
 * simulator build, the simulated NCCL of kernels/cuda/sim/sim_nccl.cc). A missing library
 * is the loader's LMX_ERR_NOTFOUND naming the library and the package to install.
 * A communicator spans distinct device ids (ncclCommInitAll; NCCL refuses one device
 * twice); rank r is devs[r]. An all-reduce is one ncclGroupStart/End around one
 * ncclAllReduce per rank, each queued on its device's luamx stream (cuda_state.h), so it
 * is ordered after the work that produced the inputs and before later work on each
 * device, and the host does not wait. Errors name NCCL's message and the devices.
 * Threads: a communicator is used by one thread at a time.
 */
#ifndef LMX_DEVICE_CUDA_NCCL_H
#define LMX_DEVICE_CUDA_NCCL_H

#include <stddef.h>

typedef struct lmx_nccl_comm lmx_nccl_comm;

/* A communicator over devs[0..n) (distinct ids, n >= 1): LMX_OK, the loader's
 * LMX_ERR_NOTFOUND, LMX_ERR_ARG (duplicate or bad ids), LMX_ERR_DEVICE (NCCL's error). */
int lmx_nccl_comm_new(int n, const int *devs, lmx_nccl_comm **out);
void lmx_nccl_comm_free(lmx_nccl_comm *c); /* NULL is a no-op */

/* For every rank r: recv[r][0..count) = sum over ranks of send[r'][0..count), elements
 * of NCCL type dt (LMX_NCCL_*); device pointers of devs[r]; send[r] may equal recv[r]. */
int lmx_nccl_allreduce(lmx_nccl_comm *c, const void *const *send, void *const *recv,
                       size_t count, int dt);

#endif
