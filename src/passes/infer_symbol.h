/* infer_symbol.h — symbol-level inference entry (values by name/position, results in
 * list order: arguments, outputs, aux states). See infer_symbol.c. */
#ifndef LMX_PASSES_INFER_SYMBOL_H
#define LMX_PASSES_INFER_SYMBOL_H

#include "../graph/graph.h"

int lmx_infer_symbol_shapes(const lmx_symbol *s, int n, const char *const *keys,
                            const lmx_shape *given, int partial, int cap, lmx_shape *out,
                            int *complete);
int lmx_infer_symbol_types(const lmx_symbol *s, int n, const char *const *keys,
                           const int *given, int partial, int cap, int *out, int *complete);

#endif
