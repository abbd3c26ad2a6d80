/* cudnn_args.h — what luamx's Convolution, Pooling and BatchNorm ask of cuDNN, derived
 * in plain C, and whether cuDNN can give exactly luamx's result.
 *
 * cuDNN cannot run without a GPU, so everything up to the call is here and tested on the
 * CPU (tests/test_cudnn_args.c) in every build: from an op's geometry and parameters a
 * derive function fills the descriptor arguments (tensor dims and packed strides, filter
 * dims, pads / strides / dilations, group count, data / compute types, math mode,
 * pooling mode, BatchNorm call and factors) and returns LMX_DNN_USE, or LMX_DNN_REFUSE
 * with the reason in `why`: the configuration goes to luamx's own kernels (im2col +
 * cuBLAS, pool.cu, norm.cu), which implement every configuration. Refused is anything
 * whose cuDNN result would differ from the own path beyond float rounding, or that
 * cuDNN's legacy API cannot express. The enums are our own; the executing file
 * (cudnn_exec.cu, real CUDA builds with cudnn.h only) maps them to cuDNN's, so this
 * header needs no cuDNN header. Pure functions, thread-safe.
 *
 * Layout of every tensor: packed, channel-first, with 1-D data (N, C, W) described as
 * 4-D (N, C, 1, W) and 2-D as 4-D, 3-D as 5-D (cuDNN's legacy descriptors take 4-D or
 * 5-D); all dims and element counts must fit cuDNN's int.
 */
#ifndef LMX_KERNELS_CUDA_CUDNN_ARGS_H
#define LMX_KERNELS_CUDA_CUDNN_ARGS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __CUDACC__ /* the two inline formulas also run in cudnn_exec.cu's kernels */
#define LMX_DNN_HD __host__ __device__
#else
#define LMX_DNN_HD
#endif

enum { LMX_DNN_USE = 0, LMX_DNN_REFUSE = 1 };
enum { LMX_DNN_FLOAT, LMX_DNN_HALF };                   /* data and compute types */
enum { LMX_DNN_MATH_FMA, LMX_DNN_MATH_TENSOR_OP };      /* conv math mode */
enum { LMX_DNN_POOL_MAX, LMX_DNN_POOL_AVG_INCL_PAD, LMX_DNN_POOL_AVG_EXCL_PAD };
enum { LMX_DNN_BN_TRAINING, LMX_DNN_BN_INFERENCE, LMX_DNN_BN_BACKWARD };
/* request pooling types and conventions (the values of LMX_POOL_* and LMX_POOLC_*) */
enum { LMX_DNN_REQ_POOL_MAX, LMX_DNN_REQ_POOL_AVG, LMX_DNN_REQ_POOL_SUM, LMX_DNN_REQ_POOL_LP };
enum { LMX_DNN_CONV_VALID, LMX_DNN_CONV_FULL, LMX_DNN_CONV_SAME };

/* A packed tensor: nd (4 or 5) dims and strides in elements. */
typedef struct {
  int nd, dim[5], stride[5];
} lmx_dnn_tensor;

/* Geometry in luamx's normalized form (lmx_cpu_geom after lmx_cpu_geom_norm): three
 * spatial entries with leading 1s for 1-D / 2-D data; k is the original spatial rank. */
typedef struct {
  int k;
  int64_t in[3], out[3], kernel[3], stride[3], pad[3], dilate[3];
} lmx_dnn_geom;

/* ---- Convolution (forward, backward data / filter / bias) ------------------------- */
typedef struct {
  int dt;       /* LMX_FLOAT32 / LMX_FLOAT16 accepted */
  int layout;   /* lmx_conv_param.layout: 0 None, 1 NCW, 2 NCHW, 3 NCDHW, > 3 channel-last */
  int deconv;   /* Deconvolution: refused (own path) */
  int bias;
  int64_t N, C, F, G;
  lmx_dnn_geom g;
} lmx_dnn_conv_req;

typedef struct {
  lmx_dnn_tensor x, y, b; /* data [N, C, sp...], output [N, F, sp...], bias [1, F, 1...] */
  int w_nd, w_dim[5];     /* filter [F, C/G, k...], channel-first */
  int sp;                 /* spatial dims of the descriptors: 2 or 3 */
  int pad[3], stride[3], dilate[3];
  int groups;
  int data_type, compute_type, math; /* LMX_DNN_FLOAT/HALF; compute always FLOAT */
  int bias;
} lmx_dnn_conv_args;

int lmx_dnn_conv_derive(const lmx_dnn_conv_req *r, lmx_dnn_conv_args *a, char *why,
                        size_t len);

/* ---- Pooling (forward, backward) ---------------------------------------------------- */
typedef struct {
  int dt, layout;
  int type;        /* LMX_DNN_REQ_POOL_* (= LMX_POOL_*) */
  int convention;  /* LMX_DNN_CONV_* (= LMX_POOLC_*) */
  int global_pool; /* geometry already has kernel = input, pad 0, stride 1 */
  int include_pad; /* avg: count_include_pad (None counts the padding, as MXNet) */
  int64_t N, C;
  lmx_dnn_geom g;
} lmx_dnn_pool_req;

typedef struct {
  lmx_dnn_tensor x, y;
  int sp, window[3], pad[3], stride[3];
  int mode; /* LMX_DNN_POOL_* */
  int data_type;
} lmx_dnn_pool_args;

int lmx_dnn_pool_derive(const lmx_dnn_pool_req *r, lmx_dnn_pool_args *a, char *why,
                        size_t len);

/* ---- BatchNorm (spatial mode) -------------------------------------------------------- */
typedef struct {
  int dt;
  int backward;
  int64_t outer, C, inner; /* x read as [outer, C, inner] around the axis */
  double eps, momentum, min_eps; /* min_eps: CUDNN_BN_MIN_EPSILON of the build */
  int fix_gamma, batch_stats, update_moving; /* as lmx_cpu_bn */
  int req[3]; /* forward: req[0] of y; backward: reqs of dx, dgamma, dbeta (LMX_REQ_*) */
  size_t ws_bytes; /* the op's workspace (ones and scratch vectors live there) */
} lmx_dnn_bn_req;

typedef struct {
  lmx_dnn_tensor x;     /* [outer, C, inner, 1] */
  lmx_dnn_tensor param; /* [1, C, 1, 1] float32 (scale, bias, mean, var, saved stats) */
  int call;             /* LMX_DNN_BN_* */
  int data_type;
  double eps;
  double exp_avg_factor; /* cuDNN form of the momentum: 1 - momentum */
  int fold_moving;       /* training: fold the scratch statistics into the moving ones */
  int64_t count;         /* values per channel: outer * inner */
  double alpha_data, beta_data, alpha_param, beta_param;
  int ones_scale;        /* fix_gamma: the scale is a vector of ones in the workspace */
  int dscale_scratch, dbias_scratch; /* backward: results to scratch in the workspace */
  /* forward training uses the dscale / dbias scratch as the batch mean / unbiased var */
  int zero_dscale;       /* backward, fix_gamma with req write: dgamma is set to 0 */
  size_t ws_ones, ws_dscale, ws_dbias, ws_need; /* byte offsets into the workspace */
} lmx_dnn_bn_args;

int lmx_dnn_bn_derive(const lmx_dnn_bn_req *r, lmx_dnn_bn_args *a, char *why, size_t len);

/* Workspace BatchNorm needs for C channels when cuDNN may run: ones, dscale and dbias
 * scratch, each C float32s aligned to 256 bytes. */
size_t lmx_dnn_bn_ws(int64_t C);

/* The moving-statistics update luamx (MXNet's CPU) makes, in cuDNN's factor form:
 * running·(1 - f) + batch·f with f = exp_avg_factor = 1 - momentum, which is
 * running·momentum + batch·(1 - momentum), with the BIASED batch variance. cuDNN's own
 * running update applies N/(N-1) (the unbiased variance), so it is not applied to the
 * moving arrays: the training call runs with factor 1 into two scratch vectors (the batch
 * mean and unbiased variance), and a small kernel folds them with this formula after
 * turning the variance back into the biased one (lmx_dnn_bn_biased). */
LMX_DNN_HD static inline double lmx_dnn_bn_fold(double running, double batch, double f) {
  return running * (1.0 - f) + batch * f;
}

/* The biased variance of n samples from the unbiased one (n >= 2). */
LMX_DNN_HD static inline double lmx_dnn_bn_biased(double unbiased, int64_t n) {
  return unbiased * (double)(n - 1) / (double)n;
}

#ifdef __cplusplus
}
#endif

#endif
