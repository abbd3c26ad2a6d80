/* imperative.h — running one operator on NDArrays, outside any graph (the engine behind
 * lmx_imperative_invoke / lmx_imperative_backward in src/luamx.h; see there for the
 * contract). */
#ifndef LMX_EXEC_IMPERATIVE_H
#define LMX_EXEC_IMPERATIVE_H

#include "../luamx.h"

int lmx_imp_invoke(const char *op_name, int nkeys, const char *const *keys,
                   const char *const *vals, int nin, lmx_ndarray *const *inputs, int *nout,
                   lmx_ndarray **outputs, int is_train);

int lmx_imp_backward(const char *op_name, int nkeys, const char *const *keys,
                     const char *const *vals, int nin, lmx_ndarray *const *inputs, int nout,
                     lmx_ndarray *const *outputs, lmx_ndarray *const *out_grads,
                     lmx_ndarray **in_grads, const int *reqs, int is_train);

#endif
