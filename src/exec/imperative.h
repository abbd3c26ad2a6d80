/* imperative.h — running one operator on NDArrays, outside any graph (the engine behind
 * lmx_imperative_invoke / lmx_imperative_backward in src/luamx.h; see there for the
 * contract). */
#ifndef LMX_EXEC_IMPERATIVE_H
#define LMX_EXEC_IMPERATIVE_H

#include "../luamx.h"

typedef struct lmx_op lmx_op;

int lmx_imp_invoke(const char *op_name, int nkeys, const char *const *keys,
                   const char *const *vals, int nin, lmx_ndarray *const *inputs, int *nout,
                   lmx_ndarray **outputs, int is_train);

int lmx_imp_backward(const char *op_name, int nkeys, const char *const *keys,
                     const char *const *vals, int nin, lmx_ndarray *const *inputs, int nout,
                     lmx_ndarray *const *outputs, lmx_ndarray *const *out_grads,
                     lmx_ndarray **in_grads, const int *reqs, int is_train);

/* The backward of op with a parsed parameter block (the tape's calls: src/exec/autograd.c);
 * arguments as lmx_imp_backward. */
int lmx_imp_backward_op(const lmx_op *op, void *param, int nin, lmx_ndarray *const *inputs,
                        int nout, lmx_ndarray *const *outputs, lmx_ndarray *const *out_grads,
                        lmx_ndarray **in_grads, const int *reqs, int is_train);

/* Copies n keys and values into one lmx_alloc block (lmx_free it): kv[0..n-1] the keys,
 * kv[n..2n-1] the values, kv[2n] NULL. NULL when out of memory (no error set). */
char **lmx_imp_kv_copy(int n, const char *const *keys, const char *const *vals);

/* Prepared calls (lmx_opcall_* in src/luamx.h); lmx_imp_retain adds a reference. */
void lmx_imp_retain(lmx_opcall *oc);
int lmx_imp_prepare(const char *op_name, int nkeys, const char *const *keys,
                    const char *const *vals, lmx_opcall **out);
void lmx_imp_release(lmx_opcall *oc);
int lmx_imp_set(lmx_opcall *oc, const char *key, double value);
int lmx_imp_call(lmx_opcall *oc, int nin, lmx_ndarray *const *inputs, int *nout,
                 lmx_ndarray **outputs, int is_train);

#endif
