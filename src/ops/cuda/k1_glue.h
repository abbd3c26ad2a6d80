/* k1_glue.h — helpers of the CUDA glue of the elementwise, broadcast / reduction,
 * layout and optimizer operators (src/ops/cuda/elemwise.c, reduce.c, matrix.c,
 * optimizer.c, init.c): the dtype check of these kernels (float32, float64, float16),
 * the zero fill of an unused gradient, and the stream of the call. */
#ifndef LMX_OPS_CUDA_K1_GLUE_H
#define LMX_OPS_CUDA_K1_GLUE_H

#include "../../../kernels/cuda/cuda_kernels.h"
#include "cuda_ops.h"

/* the call's stream as the launchers take it */
#define LMX_CU_S(c) ((lmx_cu_stream)(c)->stream)

/* "<what>: expected float32, float64 or float16 on the GPU, got <dtype>" */
int lmx_cuda_fail_dtype(const lmx_op_ctx *c, const lmx_tensor *t, const char *what);
/* Fails unless t is float32, float64 or float16. */
int lmx_cuda_check_float(const lmx_op_ctx *c, const lmx_tensor *t, const char *what);
/* Zeros a gradient for req WRITE / INPLACE (nothing for NULL or ADD, or without data). */
int lmx_cuda_zero_grad(const lmx_op_ctx *c, const lmx_tensor *t, int req);
/* "<what>: req 'add' is not supported for this forward output on the GPU" */
int lmx_cuda_fail_req_add(const lmx_op_ctx *c, const char *what);
/* The device's raise word and a tag for a launch of c's operator that checks its input
 * on the device; a bad value is reported at the next synchronisation in the words of
 * text(buf, cap, pos, value, range) — the CPU glue's own (lmx_take_bad_index_text, ...). */
int lmx_cuda_raise_for(const lmx_op_ctx *c,
                       void (*text)(char *buf, size_t cap, long long pos, long long value,
                                    int64_t range),
                       int64_t range, lmx_cu_raise *out);

#endif
