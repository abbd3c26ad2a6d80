/* cudnn_exec.cuh — what cudnn_exec.cu shares with cudnn_rnn_exec.cu (private to the two):
 * the table of cuDNN functions resolved at first use, the per-device session (handle
 * and lock), the descriptor cache's kinds and the RNN entry's layout. C++ (nvcc) only. */
#ifndef LMX_KERNELS_CUDA_CUDNN_EXEC_CUH
#define LMX_KERNELS_CUDA_CUDNN_EXEC_CUH

#include <cudnn.h>

#include "cu_base.h"
#include "cudnn_args.h"
#include "cudnn_cache.h"
#include "cudnn_rnn_args.h"

#define FN(name) decltype(&cudnn##name) name
struct lmx_cudnn_fns {
  FN(Create);
  FN(SetStream);
  FN(GetErrorString);
  FN(CreateTensorDescriptor);
  FN(SetTensorNdDescriptor);
  FN(DestroyTensorDescriptor);
  FN(CreateFilterDescriptor);
  FN(SetFilterNdDescriptor);
  FN(DestroyFilterDescriptor);
  FN(CreateConvolutionDescriptor);
  FN(SetConvolutionNdDescriptor);
  FN(SetConvolutionGroupCount);
  FN(SetConvolutionMathType);
  FN(DestroyConvolutionDescriptor);
  FN(GetConvolutionForwardAlgorithm_v7);
  FN(GetConvolutionBackwardDataAlgorithm_v7);
  FN(GetConvolutionBackwardFilterAlgorithm_v7);
  FN(ConvolutionForward);
  FN(ConvolutionBackwardData);
  FN(ConvolutionBackwardFilter);
  FN(ConvolutionBackwardBias);
  FN(AddTensor);
  FN(CreatePoolingDescriptor);
  FN(SetPoolingNdDescriptor);
  FN(DestroyPoolingDescriptor);
  FN(PoolingForward);
  FN(PoolingBackward);
  FN(BatchNormalizationForwardTraining);
  FN(BatchNormalizationForwardInference);
  FN(BatchNormalizationBackward);
  FN(CreateDropoutDescriptor);
  FN(SetDropoutDescriptor);
  FN(DestroyDropoutDescriptor);
  FN(CreateRNNDescriptor);
  FN(SetRNNDescriptor_v8);
  FN(DestroyRNNDescriptor);
  FN(CreateRNNDataDescriptor);
  FN(SetRNNDataDescriptor);
  FN(DestroyRNNDataDescriptor);
  FN(GetRNNTempSpaceSizes);
  FN(GetRNNWeightSpaceSize);
  FN(GetRNNWeightParams);
  FN(RNNForward);
  FN(RNNBackwardData_v8);
  FN(RNNBackwardWeights_v8);
};
#undef FN

/* the table (cudnn_exec.cu), filled once per process by lmx_cu_dnn_ready() */
extern lmx_cudnn_fns lmx_cudnn_fn;
static lmx_cudnn_fns &D = lmx_cudnn_fn;

/* kinds of descriptor-cache entries */
enum { K_CONV, K_POOL, K_BN, K_RNN };
/* an RNN entry: its descriptors, and sizes in the integers */
enum { P_RNN, P_DROP, P_RX, P_RY, P_RH, P_RM, P_RB };
enum { I_WS, I_RESERVE, I_WSPACE, I_SAME /* -1 unknown, 0, 1 */, I_DECLINED };

typedef struct {
  int dev;
  cudnnHandle_t h;
} lmx_dnn_session;

/* 0 with the current device locked and its handle on stream s; LMX_CU_DNN_SKIP (not
 * locked) when cuDNN is not usable. */
int lmx_dnn_begin(lmx_cu_stream s, lmx_dnn_session *ss);
void lmx_dnn_end(lmx_dnn_session *ss);
/* The cached descriptors of (kind, key) on the session's device (made on a miss), or NULL. */
lmx_dnn_descs *lmx_dnn_descs_of(const lmx_dnn_session *ss, int kind, const void *key,
                                size_t len);
cudnnTensorDescriptor_t lmx_dnn_tdesc(const lmx_dnn_tensor *t, int data_type);
void lmx_dnn_tfree(cudnnTensorDescriptor_t d);
int lmx_dnn_st_rc(cudnnStatus_t st);           /* 0 or LMX_CU_DNN_ESTATUS + st */
int lmx_dnn_not_supported(cudnnStatus_t st);   /* a NOT_SUPPORTED family status */

/* an RNN entry's descriptors (cudnn_rnn_exec.cu): made on a cache miss, destroyed on
 * eviction; create returns 0 or -1 (the caller destroys what was made) */
int lmx_dnn_rnn_create(cudnnHandle_t h, const lmx_dnn_rnn_args *a, lmx_dnn_descs *e);
void lmx_dnn_rnn_destroy(lmx_dnn_descs *e);

#endif
