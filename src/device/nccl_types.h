/* nccl_types.h — the few NCCL enum values luamx passes (ncclDataType_t, ncclRedOp_t,
 * ncclResult_t), spelled as our own constants.
 *
 * NCCL is opened at run time (cuda_libs.h), and its header is not part of every build:
 * the CPU build has no CUDA headers, the simulator build uses its own runtime headers,
 * and nccl.h ships in a separate package (libnccl-dev) from the .so (libnccl2). So the
 * values are declared here, copied from nccl.h 2.x, where they have been stable since
 * NCCL 2.0 (bfloat16 since 2.10). src/device/cuda_nccl.c checks them against nccl.h with
 * static assertions wherever the real header is on the include path. Plain C, no
 * dependencies: used by the plan (src/exec/kv_nccl_plan.c, every build), the NCCL calls
 * (src/device/cuda_nccl.c) and the simulator's NCCL (kernels/cuda/sim/sim_nccl.cc).
 */
#ifndef LMX_DEVICE_NCCL_TYPES_H
#define LMX_DEVICE_NCCL_TYPES_H

enum {
  /* ncclDataType_t */
  LMX_NCCL_INT8 = 0,
  LMX_NCCL_UINT8 = 1,
  LMX_NCCL_INT32 = 2,
  LMX_NCCL_UINT32 = 3,
  LMX_NCCL_INT64 = 4,
  LMX_NCCL_UINT64 = 5,
  LMX_NCCL_FLOAT16 = 6,
  LMX_NCCL_FLOAT32 = 7,
  LMX_NCCL_FLOAT64 = 8,
  LMX_NCCL_BFLOAT16 = 9,
  /* ncclRedOp_t */
  LMX_NCCL_SUM = 0,
  /* ncclResult_t */
  LMX_NCCL_SUCCESS = 0,
  LMX_NCCL_UNHANDLED_CUDA_ERROR = 1,
  LMX_NCCL_SYSTEM_ERROR = 2,
  LMX_NCCL_INTERNAL_ERROR = 3,
  LMX_NCCL_INVALID_ARGUMENT = 4,
  LMX_NCCL_INVALID_USAGE = 5
};

#endif
