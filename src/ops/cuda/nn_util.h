/* nn_util.h — private to K3's CUDA glue (nn_fc.c, conv.c, norm.c, rnn.c): the dtype
 * check of the GEMM-shaped ops' device kernels and the turning of a GEMM launcher's code
 * (cu_gemm.h: argument / library / cuBLAS status codes besides cudaError_t) into a
 * message. */
#ifndef LMX_OPS_CUDA_NN_UTIL_H
#define LMX_OPS_CUDA_NN_UTIL_H

#include <string.h>

#include "../../../kernels/cuda/cuda_kernels.h"
#include "../../tensor/dtype.h"
#include "../op_impl.h"
#include "cuda_ops.h"

/* float32 / float64, and float16 when half_ok */
static inline int lmx_cunn_check_float(const lmx_op_ctx *c, const lmx_tensor *t, int half_ok,
                                       const char *what) {
  if (t->dtype == LMX_FLOAT32 || t->dtype == LMX_FLOAT64 || (half_ok && t->dtype == LMX_FLOAT16))
    return LMX_OK;
  return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected float32, float64%s on gpu(%d), got %s",
                     what, half_ok ? " or float16" : "", c->dev_id, lmx_dtype_str(t->dtype));
}

/* rc of a launcher that may run a GEMM -> status naming op, node, kernel and device */
static inline int lmx_cunn_fail(const lmx_op_ctx *c, int rc, const char *kernel) {
  if (rc == LMX_CU_GEMM_ELIB)
    return lmx_op_fail(c, LMX_ERR_DEVICE, "%s on gpu(%d): %s", kernel, c->dev_id,
                       lmx_cu_blas_error());
  if (rc == LMX_CU_GEMM_EARG)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "%s on gpu(%d): GEMM dims out of cuBLAS's range",
                       kernel, c->dev_id);
  if (rc >= LMX_CU_GEMM_EBLAS)
    return lmx_op_fail(c, LMX_ERR_DEVICE, "%s on gpu(%d): cuBLAS%s status %d", kernel,
                       c->dev_id, strstr(kernel, "_lt") ? "/cuBLASLt" : "",
                       rc - LMX_CU_GEMM_EBLAS);
  return lmx_cuda_fail(c, rc, kernel);
}

#define LMX_CU_TRY(c, call, name)                                                          \
  do {                                                                                     \
    int rc_ = (call);                                                                      \
    if (rc_) return lmx_cunn_fail((c), rc_, (name));                                       \
  } while (0)

#define LMX_CU_S(c) ((lmx_cu_stream)(c)->stream)

#endif
