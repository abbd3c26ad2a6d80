/* op.h — the operator descriptor: everything the engine knows about one operator.
 *
 * An operator is defined in one place: src/ops/<name>.c (or a family file) fills one
 * `lmx_op` with designated initializers, and src/ops/ops.def lists it once (X-macro).
 * Nothing outside src/ops switches on an operator; the graph, the passes and the
 * executor only read descriptors.
 *
 * Parameters are declarative: a table of lmx_param_field rows (name, type, offset into
 * the op's param struct, default in MXNet's string form, bounds, choices, doc). The same
 * table parses MXNet's strings ("(2, 2)", "True", "relu"), reports bad values naming the
 * operator, node and parameter, and is exposed through the C API for introspection
 * (Lua builds every mx.sym.<Op> / mx.nd.<Op> constructor from it).
 *
 * Shape convention in inference: ndim 0 = nothing known; a dim of 0 = unknown. An
 * infer_shape function fills what it can deduce (forward and backward), checks what is
 * already known with lmx_shape_assign (which merges or fails with a message naming op,
 * node, argument, expected and actual), and returns LMX_OK when nothing contradicts.
 * The infer pass calls it repeatedly to a fixed point. dtypes: -1 = unknown.
 *
 * The descriptor knows no device. The kernels that run an operator live in one table
 * per backend, indexed by operator id (kernel.h: lmx_cpu_kernels in src/ops/cpu,
 * lmx_cuda_kernels in src/ops/cuda); a missing row means "no kernel for <Op> on
 * <device>", which bind and the imperative path report by name. Parameters come to the
 * kernels as the op's typed struct (op_params.h), the device as the call context's
 * dev_type / dev_id / dev / stream.
 */
#ifndef LMX_OPS_OP_H
#define LMX_OPS_OP_H

#include <stddef.h>
#include <stdint.h>

#include "../tensor/shape.h"

/* ---- parameters ---------------------------------------------------------------- */

typedef enum {
  LMX_PT_INT,       /* int64_t */
  LMX_PT_FLOAT,     /* double */
  LMX_PT_BOOL,      /* int (0/1); accepts True/False/true/false/1/0 */
  LMX_PT_ENUM,      /* int index into `choices` ("relu|sigmoid|tanh") */
  LMX_PT_SHAPE,     /* lmx_shape as a tuple "(2, 2)" / "[2,2]" / "2"; ndim -1 = None */
  LMX_PT_STRING,    /* const char * owned by the param block (see lmx_op_params_free) */
  LMX_PT_DTYPE,     /* int dtype code, -1 = None; "float32", ... */
  LMX_PT_OPT_INT,   /* int64_t with LMX_PARAM_NONE_INT for None */
  LMX_PT_OPT_FLOAT, /* double, NaN for None */
  LMX_PT_FLOATS,    /* lmx_shape-like tuple of doubles: lmx_ftuple */
  LMX_PT_OPT_INTS,  /* lmx_shape whose entries may be None (LMX_PARAM_NONE_INT):
                       slice's begin/end/step "(None, 2)"; ndim -1 = None */
  LMX_PT_OPT_BOOL   /* int: -1 = None, 0, 1 (Pooling's count_include_pad) */
} lmx_param_type;

#define LMX_PARAM_NONE_INT INT64_MIN

typedef struct {
  int n; /* -1 = None */
  double v[LMX_MAX_NDIM];
} lmx_ftuple;

typedef struct lmx_param_field {
  const char *name;
  lmx_param_type type;
  size_t offset;       /* offsetof(param struct, field) */
  const char *def;     /* default in MXNet's string form; NULL = required */
  const char *choices; /* LMX_PT_ENUM: "a|b|c" */
  double lo, hi;       /* numeric bounds (inclusive) when lo < hi */
  const char *doc;
} lmx_param_field;

/* ---- kernels ---------------------------------------------------------------------- */

/* A dense, contiguous tensor handed to kernels: no refcounts, no device table. */
typedef struct lmx_tensor {
  void *data;
  lmx_shape shape;
  int dtype;
} lmx_tensor;

/* What a gradient write does (MXNet's OpReqType). */
enum { LMX_REQ_NULL = 0, LMX_REQ_WRITE = 1, LMX_REQ_INPLACE = 2, LMX_REQ_ADD = 3 };

typedef struct lmx_op lmx_op;

struct lmx_device_ops;

/* Per-call context for kernels and for inference messages. */
typedef struct lmx_op_ctx {
  const lmx_op *op;
  const void *param; /* the op's parsed param struct (op_params.h: lmx_<x>_param) */
  const char *node;  /* node name, for messages (NULL in imperative calls) */
  int is_train;
  int dev_type, dev_id; /* where the kernel runs: LMX_CPU / LMX_GPU and the id */
  const struct lmx_device_ops *dev; /* that device's table (src/device/device.h) */
  void *stream;         /* that device's stream (cudaStream_t); NULL on the CPU */
  void *workspace;      /* workspace_bytes of scratch on the same device */
  size_t workspace_bytes;
  /* Workspace queries only (kernel.h's lmx_workspace_fn): the dtypes of the inputs then
   * the outputs, in the order of the shapes passed; NULL when unknown and in kernel
   * calls, whose tensors carry their dtypes. Lets a workspace function size scratch by
   * dtype (float16/bfloat16 staging in float32) instead of for the worst case. */
  const int *dtypes;
  /* The executor step's kernel note (NULL outside executors): kernels with a choice of
   * implementation write which one ran and why (the GPU glue of Convolution, Pooling,
   * BatchNorm: "cuDNN" or "own kernels (<reason>)"); debug_str prints it. */
  char *note;
  size_t note_cap;
} lmx_op_ctx;

typedef int (*lmx_forward_fn)(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                              const int *req, const lmx_tensor *aux);
typedef int (*lmx_backward_fn)(const lmx_op_ctx *c, const lmx_tensor *out_grad,
                               const lmx_tensor *in, const lmx_tensor *out,
                               const lmx_tensor *in_grad, const int *req, const lmx_tensor *aux);

/* backward_needs bits */
enum { LMX_NEEDS_INPUTS = 1, LMX_NEEDS_OUTPUTS = 2, LMX_NEEDS_OUT_GRADS = 4,
       LMX_NEEDS_NOT_OUT0 = 8 /* with OUTPUTS: all but the first (BatchNorm's mean, var) */ };

/* flags */
enum {
  LMX_OPF_LOSS = 1,        /* backward needs no head gradient (SoftmaxOutput, MakeLoss...) */
  LMX_OPF_NO_GRAD = 2,     /* gradient is cut here (BlockGrad / stop_gradient) */
  LMX_OPF_RANDOM = 4,      /* draws from the global generator (Dropout) */
  LMX_OPF_MUTATES_AUX = 8, /* writes its aux states in training (BatchNorm) */
  LMX_OPF_UPDATE = 16,     /* optimizer update: writes its weight/state inputs in place */
  LMX_OPF_CALLS_HOST = 32  /* its kernels call back into the host (Lua), which may release
                              the caller's arrays: imperative calls hold them meanwhile */
};

/* ---- the descriptor ----------------------------------------------------------------- */

struct lmx_op {
  const char *name;  /* MXNet's name ("FullyConnected"), as stored in JSON */
  const char *hint;  /* automatic-name prefix ("fullyconnected", "_plus"); NULL: lower(name) */
  const char *doc;

  const lmx_param_field *params;
  int num_params;
  size_t param_size;                 /* sizeof the param struct (0: no params) */
  int (*param_check)(const lmx_op_ctx *c, void *param); /* cross-field checks; may be NULL */

  /* Inputs, outputs, aux states. Fixed lists are NULL-terminated arrays of static
   * names; when the list depends on parameters, num_* and *_name give it instead.
   * inputs NULL and num_inputs NULL: one input named "data" (MXNet's default). */
  const char *const *inputs;
  int (*num_inputs)(const void *param);
  void (*input_name)(const void *param, int i, char *buf, size_t cap);
  const char *const *outputs; /* NULL: one output named "output" */
  int (*num_outputs)(const void *param);
  void (*output_name)(const void *param, int i, char *buf, size_t cap);
  int (*num_visible_outputs)(const void *param); /* NULL: all outputs are visible */
  const char *const *aux;                        /* NULL: none */
  int (*num_aux)(const void *param);

  int (*infer_shape)(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out, int nout,
                     lmx_shape *aux, int naux);
  /* NULL: every input, output and aux shares one dtype (MXNet's ElemwiseType rule). */
  int (*infer_type)(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                    int naux);

  unsigned backward_needs;
  const int (*inplace)[2]; /* {input index, output index} pairs allowed to share memory */
  int num_inplace;
  unsigned flags;
  /* MXNet's FSetInputVarAttrOnCompose for aux states: per aux state, the `__init__`
   * attribute given to a variable bound to it when it has none (BatchNorm:
   * {"[\"zero\", {}]", "[\"one\", {}]"}); NULL: nothing. Used by src/graph. */
  const char *const *aux_init;
  /* Optional, read by the executor's memory planner: backward_needs for a parsed
   * parameter block when it depends on parameters (Activation reads its input only for
   * softsign); NULL: backward_needs. And backward in-place pairs {out_grad index,
   * input-gradient index}: the backward kernel may write that input's gradient over
   * that out_grad (elementwise backward kernels; only used with req write). */
  unsigned (*backward_needs_of)(const void *param);
  const int (*backward_inplace)[2];
  int num_backward_inplace;
  /* Optional, for an operator whose parameters are not a fixed table (Custom: any
   * key/value strings, interpreted by the host): param_parse replaces the declarative
   * parsing (it gets every key, "__x__" attributes included, and fills *out), param_free
   * releases its block; `params` then only documents the keys it always needs. aux_name
   * names aux states when the list depends on parameters (with num_aux). */
  int (*param_parse)(const lmx_op *op, const char *node, const char *const *keys,
                     const char *const *vals, int n, void **out);
  void (*param_free)(void *param);
  void (*aux_name)(const void *param, int i, char *buf, size_t cap);
};

/* ---- registry and helpers (src/ops/registry.c, params.c, infer_util.c) ------------- */

/* Lookup by MXNet name or alias ("split" -> SliceChannel); NULL when unknown. */
const lmx_op *lmx_op_find(const char *name);
int lmx_op_count(void);
const lmx_op *lmx_op_at(int i);
/* Index of op in the registry (0..count-1), -1 if it is not registered. */
int lmx_op_index(const lmx_op *op);

/* Aliases (ops.def's LMX_OP_ALIAS lines): alias i and the canonical op; NULL past the end. */
int lmx_op_alias_count(void);
const char *lmx_op_alias_at(int i, const lmx_op **target);

/* Automatic-name prefix, MXNet's rule: the name the op was *called by*, lower-cased
 * (python/mxnet/symbol/register.py passes the function name to NameManager.get):
 * "FullyConnected" -> "fullyconnected", "split" -> "split", the operator overloads call
 * the internal aliases "_Plus" -> "_plus", "_PlusScalar" -> "_plusscalar",
 * "_MulScalar" -> "_mulscalar". `called` NULL: op->hint, or lower(op->name).
 * Writes into buf (truncated to cap) and returns buf. */
const char *lmx_op_hint_of(const lmx_op *op, const char *called, char *buf, size_t cap);

/* Parses key/value strings into a fresh param block (defaults applied, required fields
 * checked, bounds and choices enforced, then param_check). Keys of the form __x__ are
 * attributes, not parameters, and are skipped. Unknown keys and bad values fail with
 * LMX_ERR_ARG: "<Op> '<node>': parameter '<p>': expected ..., got '...'".
 * *out is allocated with lmx_alloc and released with lmx_op_params_free. */
int lmx_op_params_parse(const lmx_op *op, const char *node, const char *const *keys,
                        const char *const *vals, int n, void **out);
void lmx_op_params_free(const lmx_op *op, void *param);
/* Sets one numeric parameter (int or float field) of a parsed block in place, with the
 * field's bounds checked; allocates nothing. Errors name the op and the parameter. */
int lmx_op_params_set_number(const lmx_op *op, void *param, const char *key, double v);

/* Canonical string form of parameter field f of a parsed block, MXNet style
 * ("(2, 2)", "True", "relu", "0.5"). */
void lmx_op_param_format(const lmx_param_field *f, const void *param, char *buf, size_t cap);

/* Inputs / outputs / aux of an op with a parsed param block. */
int lmx_op_num_inputs(const lmx_op *op, const void *param);
int lmx_op_num_outputs(const lmx_op *op, const void *param);
int lmx_op_num_visible_outputs(const lmx_op *op, const void *param);
int lmx_op_num_aux(const lmx_op *op, const void *param);
void lmx_op_input_name(const lmx_op *op, const void *param, int i, char *buf, size_t cap);
void lmx_op_output_name(const lmx_op *op, const void *param, int i, char *buf, size_t cap);
void lmx_op_aux_name(const lmx_op *op, const void *param, int i, char *buf, size_t cap);

/* Runs op->infer_shape / infer_type (or the default type rule). */
int lmx_op_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out, int nout,
                       lmx_shape *aux, int naux);
int lmx_op_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                      int naux);

/* Merges `expected` into *slot: unknown dims take expected's; known dims must agree.
 * On conflict fails with LMX_ERR_SHAPE:
 *   "<Op> '<node>': <what>: expected shape (6,4), got (6,5)". */
int lmx_shape_assign(const lmx_op_ctx *c, lmx_shape *slot, const lmx_shape *expected,
                     const char *what);
/* The same for dtypes (-1 unknown): "<Op> '<node>': <what>: expected float32, got int32". */
int lmx_dtype_assign(const lmx_op_ctx *c, int *slot, int expected, const char *what);

/* Is every dim known (ndim > 0 and no dim 0)? */
int lmx_shape_known(const lmx_shape *s);

#endif
