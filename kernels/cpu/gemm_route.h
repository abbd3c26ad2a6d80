/* gemm_route.h — which library runs a float32 matrix product (gemm_route.c), and the
 * oneDNN backend (gemm_dnnl.c). lmx_cpu_gemm_ld (gemm.c) asks lmx_gemm_route for each
 * product; the choice itself is lmx_gemm_choose, a pure function the specs call through
 * lmx_cpu_gemm_choice (src/luamx.h). */
#ifndef LMX_KERNELS_GEMM_ROUTE_H
#define LMX_KERNELS_GEMM_ROUTE_H

#include <stdint.h>

enum { LMX_GEMM_AUTO, LMX_GEMM_OPENBLAS, LMX_GEMM_DNNL };   /* modes (LUAMX_GEMM) */
enum { LMX_GEMM_LIB_OPENBLAS, LMX_GEMM_LIB_DNNL };          /* libraries */
/* activations a product's epilogue can apply (lmx_gemm_dnnl_ep, lmx_cpu_gemm_ep) */
enum { LMX_GEMM_ACT_NONE, LMX_GEMM_ACT_RELU, LMX_GEMM_ACT_TANH, LMX_GEMM_ACT_SIGMOID,
       LMX_GEMM_ACT_SOFTRELU };

/* The library for C[m,n] = op(A) op(B) of dtype dt (ta, tb: transposes, row-major) with
 * `threads` OpenMP threads, in mode `mode`, when oneDNN can (have_dnnl) or cannot run, on
 * a CPU with (avx512 = 1) or without AVX-512. Pure: depends on its arguments only. */
int lmx_gemm_choose(int dt, int ta, int tb, int64_t m, int64_t n, int64_t k, int threads,
                    int mode, int have_dnnl, int avx512);
/* 1 when this CPU runs AVX-512 (oneDNN then runs its avx512 kernels). */
int lmx_gemm_cpu_avx512(void);

/* "auto", "openblas", "dnnl" -> the mode; -1 for anything else. */
int lmx_gemm_mode_parse(const char *name);
const char *lmx_gemm_mode_name(int mode);

/* The process's mode: from LUAMX_GEMM at first use (auto when unset or not understood,
 * which lmx_gemm_mode_source says), or as last set. Thread-safe. */
int lmx_gemm_mode(void);
void lmx_gemm_set_mode(int mode);
const char *lmx_gemm_mode_source(void);

/* The library lmx_cpu_gemm_ld runs this product on now (mode, oneDNN's presence). */
int lmx_gemm_route(int dt, int ta, int tb, int64_t m, int64_t n, int64_t k, int threads);

/* oneDNN (gemm_dnnl.c): loads libdnnl.so.2 on first call; 1 when it runs. */
int lmx_gemm_dnnl_available(void);
/* What was loaded ("oneDNN 2.6.3 (libdnnl.so.2)") or why nothing was. Static string. */
const char *lmx_gemm_dnnl_status(void);
/* C = act(alpha op(A) op(B) + bias[col] + beta C) on oneDNN, the bias and the activation
 * applied to each element of C while it is in registers; bias may be NULL (none), act one
 * of LMX_GEMM_ACT_* (above; NONE for a plain product). 0 on success, -1 when oneDNN cannot
 * run it (then nothing was written and the caller runs OpenBLAS, or declines an epilogue). */
int lmx_gemm_dnnl_ep(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                     float *C, int64_t ldc, int threads, const float *bias, int act);

#endif
