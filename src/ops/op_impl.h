/* op_impl.h — helpers shared by the operator files of src/ops (not used outside).
 *
 * Operator files fill one lmx_op each; these helpers keep the files short and the
 * messages uniform: every message starts with "<Op> '<node>': " (just "<Op>: " for an
 * unnamed node) and names the input/output/aux by its list name ("input 'weight'").
 * Shape rules use lmx_in_assign/lmx_out_assign/lmx_aux_assign, which merge a deduced
 * shape into a slot (unknown dims are 0, ndim 0 is "nothing known") and fail with
 * "expected shape (a), got (b)" on a contradiction.
 */
#ifndef LMX_OPS_OP_IMPL_H
#define LMX_OPS_OP_IMPL_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../tensor/dtype.h"
#include "op.h"
#include "op_params.h"

/* A parameter row of struct `st`: LMX_PF(st, field, type, default, choices, lo, hi, doc).
 * The parameter's name is the field's name (MXNet's names are valid C identifiers). */
#define LMX_PF(st, field, type, def, choices, lo, hi, doc) \
  {#field, type, offsetof(st, field), def, choices, lo, hi, doc}
#define LMX_COUNT(arr) ((int)(sizeof(arr) / sizeof((arr)[0])))
#define LMX_PARAMS(arr, st) .params = (arr), .num_params = LMX_COUNT(arr), .param_size = sizeof(st)
#define LMX_PRM(c, T) ((const T *)(c)->param)

/* A shape literal: LMX_SHP(2, 3) is the shape (2,3). */
#define LMX_SHP(...)                                                         \
  lmx_shp((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
          (int64_t[]){__VA_ARGS__})
lmx_shape lmx_shp(int ndim, const int64_t *dims);

/* "FullyConnected 'fc1'" (or "FullyConnected" when the node has no name) into buf. */
const char *lmx_op_label(const lmx_op_ctx *c, char *buf, size_t cap);

/* Fails with `status` and "<label>: <formatted text>". */
int lmx_op_fail(const lmx_op_ctx *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Merge a deduced shape into input/output/aux slot i, naming it in messages. */
int lmx_in_assign(const lmx_op_ctx *c, lmx_shape *in, int i, const lmx_shape *e);
int lmx_out_assign(const lmx_op_ctx *c, lmx_shape *out, int i, const lmx_shape *e);
int lmx_aux_assign(const lmx_op_ctx *c, lmx_shape *aux, int i, const lmx_shape *e);

/* Elementwise rule: every input and output has one shape (merged both ways). */
int lmx_infer_same_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                         int nout);

/* Input name i into buf, for messages. */
const char *lmx_op_in_name(const lmx_op_ctx *c, int i, char *buf, size_t cap);

/* Normalizes an axis against ndim (negative counts from the end); fails naming the
 * parameter when it is out of [-ndim, ndim). */
int lmx_op_axis(const lmx_op_ctx *c, const char *pname, int64_t axis, int ndim, int *out);

/* The hint-less rule for outputs of a different dtype: outputs fixed to `dt`, inputs
 * share one dtype among themselves. */
int lmx_infer_type_inputs_same(const lmx_op_ctx *c, int *in, int nin, int *out, int nout,
                               int out_dt);

#endif
