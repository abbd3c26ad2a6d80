// cuda_nvcc_check.cu — compiled (not run) by nvcc in the real CUDA build: the simulator's
// test kernels (tests/cuda_sim_kernels.cuh) are CUDA for sm_80/sm_90, so what the simulator
// checks is source the GPU build accepts too (warnings as errors under LUAMX_WERROR or
// LUAMX_CUDA_WERROR). The launchers get external names so nothing is unused.
#include "cuda_sim_kernels.cuh"

extern "C" int lmx_nvcc_check_launch(cudaStream_t s, float *f, int *i) {
  int e = launch_tree_sum(s, 1, f, f, 0);
  e = e ? e : launch_left_neighbour(s, i, i, 1, 0);
  e = e ? e : launch_right_neighbour(s, i, i, 1, 0);
  e = e ? e : launch_warp_ops(s, 32, f, f, f, f, (unsigned *)i, i, i, f, (double *)f);
  e = e ? e : launch_partial_warp(s, i, i, i);
  e = e ? e : launch_early_exit(s, 1, (unsigned *)i, (unsigned *)i);
  e = e ? e : launch_atomics(s, 1, 1, f, i, (unsigned *)i, (double *)f, i, (unsigned long long *)f, i, f);
  e = e ? e : launch_dyn_reverse(s, 32, 128, f, f, 32);
  e = e ? e : launch_divergent_barrier(s, 1, 32, i);
  e = e ? e : launch_deadlock_block1(s, i);
  e = e ? e : launch_grid3d(s, 1, 1, i, 1, 1);
  e = e ? e : launch_math_fns(s, f, f, (unsigned short *)i, 1);
  e = e ? e : launch_barrier_loop(s, 1, 32, i, 1);
  return e ? e : launch_plain_store(s, f, 1);
}
