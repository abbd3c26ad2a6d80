/* op_params.h — every operator's typed parameter struct, shared by the descriptor and
 * by the glue of every backend.
 *
 * The descriptor file (src/ops/<family>.c) owns the field table (lmx_param_field rows:
 * name, type, offset into the struct, default, bounds, doc), which is the ONLY place a
 * default is written: lmx_op_params_parse fills a zeroed block from the defaults and
 * the given strings, and the kernels read the parsed block through the call context:
 *
 *   const lmx_fc_param *p = c->param;
 *   int64_t n = p->num_hidden;
 *
 * Field types follow op.h's lmx_param_type: INT and OPT_INT are int64_t
 * (LMX_PARAM_NONE_INT = None), FLOAT double and OPT_FLOAT double (NaN = None), BOOL int,
 * OPT_BOOL int (-1 = None), ENUM int (an index into the choices: the LMX_<X>_* enums
 * below, whose *_CHOICES string the descriptor uses, so the two cannot drift apart),
 * DTYPE int (-1 = None), SHAPE / OPT_INTS lmx_shape (ndim -1 = None), FLOATS lmx_ftuple.
 * A struct shared by several ops (one struct per family) has fields that some of those
 * ops do not list: those stay 0 (the block is zeroed) and that op's glue does not read
 * them. Grouped by descriptor file, in ops.def order.
 */
#ifndef LMX_OPS_OP_PARAMS_H
#define LMX_OPS_OP_PARAMS_H

#include <stdint.h>

#include "op.h"

/* ---- nn_fc.c: FullyConnected ---------------------------------------------------------- */
typedef struct {
  int64_t num_hidden;
  int no_bias;
  int flatten;
} lmx_fc_param;

/* ---- init_op.c: _zeros, _ones, _full ---------------------------------------------------- */
typedef struct {
  lmx_shape shape;
  char *ctx;
  int dtype;
  double value; /* _full only */
} lmx_init_param;

/* ---- nn_act.c: Activation, LeakyReLU, softmax, log_softmax, SoftmaxActivation ---------- */
enum { LMX_ACT_RELU, LMX_ACT_SIGMOID, LMX_ACT_TANH, LMX_ACT_SOFTRELU, LMX_ACT_SOFTSIGN };
#define LMX_ACT_CHOICES "relu|sigmoid|tanh|softrelu|softsign"
typedef struct {
  int act_type; /* LMX_ACT_* */
} lmx_act_param;

enum { LMX_LRELU_LEAKY, LMX_LRELU_ELU, LMX_LRELU_PRELU, LMX_LRELU_RRELU, LMX_LRELU_SELU,
       LMX_LRELU_GELU };
#define LMX_LRELU_CHOICES "leaky|elu|prelu|rrelu|selu|gelu"
typedef struct {
  int act_type; /* LMX_LRELU_* */
  double slope, lower_bound, upper_bound;
} lmx_lrelu_param;

typedef struct { /* softmax, log_softmax */
  int64_t axis;
  double temperature;
  int dtype;
  int use_length;
} lmx_softmax_param;

enum { LMX_SMACT_INSTANCE, LMX_SMACT_CHANNEL };
#define LMX_SMACT_CHOICES "instance|channel"
typedef struct {
  int mode; /* LMX_SMACT_* */
} lmx_smact_param;

/* ---- loss.c: SoftmaxOutput, *RegressionOutput, MakeLoss (BlockGrad has none) ----------- */
enum { LMX_NORM_NULL, LMX_NORM_BATCH, LMX_NORM_VALID };
#define LMX_NORM_CHOICES "null|batch|valid"
typedef struct { /* SoftmaxOutput */
  double grad_scale;
  double ignore_label;
  int multi_output;
  int use_ignore;
  int preserve_shape;
  int normalization; /* LMX_NORM_* */
  int out_grad;
  double smooth_alpha;
} lmx_smo_param;

typedef struct { /* LinearRegressionOutput, LogisticRegressionOutput, MAERegressionOutput */
  double grad_scale;
} lmx_reg_param;

typedef struct {
  double grad_scale, valid_thresh;
  int normalization; /* LMX_NORM_* */
} lmx_makeloss_param;

/* ---- elemwise_binary.c: add_n; elemwise_scalar.c: _<op>_scalar -------------------------- */
typedef struct {
  int64_t num_args;
} lmx_addn_param;

typedef struct {
  double scalar;
  int is_int;
} lmx_scalar_param;

/* ---- reduce.c: sum, mean, max, min, prod; norm; argmax, argmin --------------------------- */
typedef struct {
  lmx_shape axis; /* ndim -1: None (every axis) */
  int keepdims;
  int exclude;
} lmx_red_param;

typedef struct {
  int64_t ord;
  lmx_shape axis;
  int out_dtype;
  int keepdims;
} lmx_norm_param;

typedef struct {
  int64_t axis; /* LMX_PARAM_NONE_INT: None (flattened) */
  int keepdims;
} lmx_arg_param;

/* ---- nn_conv.c: Convolution, Deconvolution ---------------------------------------------- */
typedef struct {
  lmx_shape kernel, stride, dilate, pad;
  int64_t num_filter, num_group, workspace;
  int no_bias, cudnn_tune, cudnn_off, layout;
  lmx_shape adj, target_shape; /* Deconvolution only (Convolution: ndim 0) */
} lmx_conv_param;

/* ---- nn_pool.c: Pooling ------------------------------------------------------------------- */
enum { LMX_POOLT_MAX, LMX_POOLT_AVG, LMX_POOLT_SUM, LMX_POOLT_LP };
#define LMX_POOLT_CHOICES "max|avg|sum|lp"
enum { LMX_POOLC_VALID, LMX_POOLC_FULL, LMX_POOLC_SAME };
#define LMX_POOLC_CHOICES "valid|full|same"
typedef struct {
  lmx_shape kernel;
  int pool_type; /* LMX_POOLT_* */
  int global_pool;
  int cudnn_off;
  int pooling_convention; /* LMX_POOLC_* */
  lmx_shape stride, pad;
  int64_t p_value;        /* OPT_INT */
  int count_include_pad;  /* OPT_BOOL: -1 None */
  int layout;
} lmx_pool_param;

/* ---- nn_norm.c: BatchNorm, LayerNorm; dropout.c: Dropout ------------------------------- */
typedef struct {
  double eps, momentum;
  int fix_gamma, use_global_stats, output_mean_var;
  int64_t axis;
  int cudnn_off;
  double min_calib_range, max_calib_range;
} lmx_bn_param;

typedef struct {
  int64_t axis;
  double eps;
  int output_mean_var;
} lmx_ln_param;

enum { LMX_DROPOUT_TRAINING, LMX_DROPOUT_ALWAYS };
#define LMX_DROPOUT_CHOICES "training|always"
typedef struct {
  double p;
  int mode; /* LMX_DROPOUT_* */
  lmx_shape axes;
  int cudnn_off;
} lmx_dropout_param;

/* ---- matrix.c: Reshape, Flatten, transpose, SwapAxis, expand_dims, squeeze, slice,
 * slice_axis, Concat, SliceChannel, reverse ------------------------------------------------------ */
typedef struct {
  lmx_shape shape;
  int reverse;
  lmx_shape target_shape;
  int keep_highest;
} lmx_reshape_param;

typedef struct {
  lmx_shape axes;
} lmx_transpose_param;

typedef struct {
  int64_t dim1, dim2;
} lmx_swap_param;

typedef struct {
  lmx_shape axis;
} lmx_reverse_param;

typedef struct {
  int64_t axis;
} lmx_expand_param;

typedef struct {
  lmx_shape axis;
} lmx_squeeze_param;

typedef struct {
  lmx_shape begin, end, step; /* OPT_INTS: entries may be LMX_PARAM_NONE_INT */
} lmx_slice_param;

typedef struct {
  int64_t axis, begin, end; /* end: OPT_INT */
} lmx_slice_axis_param;

typedef struct {
  int64_t num_args, dim;
} lmx_concat_param;

typedef struct {
  int64_t num_outputs, axis;
  int squeeze_axis;
} lmx_split_param;

/* ---- indexing.c: take, one_hot, where, clip, Cast, Embedding, dot, batch_dot ---------- */
enum { LMX_TAKE_RAISE, LMX_TAKE_WRAP, LMX_TAKE_CLIP };
#define LMX_TAKE_CHOICES "raise|wrap|clip"
typedef struct {
  int64_t axis;
  int mode; /* LMX_TAKE_* */
} lmx_take_param;

typedef struct {
  int64_t depth;
  double on_value, off_value;
  int dtype;
} lmx_onehot_param;

typedef struct {
  double a_min, a_max;
} lmx_clip_param;

typedef struct {
  int dtype;
} lmx_cast_param;

typedef struct {
  int64_t input_dim, output_dim;
  int dtype;
  int sparse_grad;
} lmx_embed_param;

typedef struct { /* dot, batch_dot */
  int transpose_a, transpose_b;
  int forward_stype;
} lmx_dot_param;

/* ---- rnn.c: RNN, SequenceMask, SequenceLast, SequenceReverse ---------------------------- */
enum { LMX_RNNM_RNN_RELU, LMX_RNNM_RNN_TANH, LMX_RNNM_LSTM, LMX_RNNM_GRU };
#define LMX_RNNM_CHOICES "rnn_relu|rnn_tanh|lstm|gru"
typedef struct {
  int64_t state_size, num_layers;
  int bidirectional, mode; /* mode: LMX_RNNM_* */
  double p;
  int state_outputs;
  int64_t projection_size;                        /* OPT_INT */
  double lstm_state_clip_min, lstm_state_clip_max; /* OPT_FLOAT: NaN = None */
  int lstm_state_clip_nan, use_sequence_length;
} lmx_rnn_param;

typedef struct {
  int use_sequence_length;
  double value; /* SequenceMask only */
  int64_t axis;
} lmx_seq_param;

/* ---- optimizer.c: sgd_update, sgd_mom_update, nag_mom_update, adam_update,
 * rmsprop_update, adagrad_update (each lists a subset of the fields) ------------------ */
typedef struct {
  double lr, momentum, beta1, beta2, epsilon, gamma1, wd, rescale_grad, clip_gradient;
  double clip_weights;
  double lamda1, beta, wd_lh; /* ftrl_update, signum_update */
  double clip_grad;           /* ftml_update (MXNet's name for its clip_gradient) */
  int64_t t;                  /* ftml_update: the update count */
  int lazy_update;
} lmx_upd_param;


/* ---- normalisation and vision (issue 14, ops14c): nn_norm_more.c (LRN, InstanceNorm,
 * L2Normalization, GroupNorm), nn_spatial.c (Pad, UpSampling) ------------------------ */
typedef struct {
  double alpha, beta, knorm;
  int64_t nsize;
} lmx_lrn_param;

typedef struct {
  double eps;
} lmx_inorm_param;

enum { LMX_L2N_INSTANCE, LMX_L2N_CHANNEL, LMX_L2N_SPATIAL };
#define LMX_L2N_CHOICES "instance|channel|spatial"
typedef struct {
  double eps;
  int mode; /* LMX_L2N_* */
} lmx_l2n_param;

typedef struct {
  int64_t num_groups;
  double eps;
  int output_mean_var;
} lmx_gn_param;

enum { LMX_PAD_CONSTANT, LMX_PAD_EDGE, LMX_PAD_REFLECT };
#define LMX_PAD_CHOICES "constant|edge|reflect"
enum { LMX_PAD_MAXW = 10 }; /* pad_width of 5-D data */
typedef struct {
  int mode;              /* LMX_PAD_* */
  const char *pad_width; /* MXNet's tuple text; parsed by param_check into: */
  double constant_value;
  int npw;                   /* entries of pad_width (2 per axis of the data) */
  int64_t pw[LMX_PAD_MAXW];  /* before/after pairs, axis by axis */
} lmx_pad_param;

enum { LMX_UPS_NEAREST, LMX_UPS_BILINEAR };
#define LMX_UPS_CHOICES "nearest|bilinear"
enum { LMX_UPS_CONCAT, LMX_UPS_SUM };
#define LMX_UPS_MODES "concat|sum"
typedef struct {
  int64_t scale, num_filter;
  int sample_type;      /* LMX_UPS_* */
  int multi_input_mode; /* LMX_UPS_CONCAT / LMX_UPS_SUM */
  int64_t num_args, workspace;
} lmx_ups_param;


/* nn_crop.c (issue 14, ops14c): depth_to_space, space_to_depth, Crop */
typedef struct {
  int64_t block_size;
} lmx_d2s_param;

typedef struct {
  int64_t num_args;
  lmx_shape offset, h_w;
  int center_crop;
} lmx_crop_param;

/* optimizer_lamb.c (issue 17, lamb17): lamb_update_phase1/2, mp_lamb_update_phase1/2 */
typedef struct {
  double beta1, beta2, epsilon;
  int64_t t;
  int bias_correction;
  double wd, rescale_grad, clip_gradient;
} lmx_lamb1_param;

typedef struct {
  double lr, lower_bound, upper_bound;
} lmx_lamb2_param;

#endif
