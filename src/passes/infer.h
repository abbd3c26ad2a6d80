/* infer.h — shape and dtype inference over an indexed graph.
 *
 * Both passes work on arrays indexed by entry id (lmx_igraph): the caller seeds known
 * values (shape ndim 0 / dtype -1 = unknown), the pass seeds the rest of the variables
 * from their __shape__ / __dtype__ attributes (a caller's value wins), then sweeps the op
 * nodes forward and backward, calling each op's rule, until nothing changes. A conflict
 * fails with the op's message (op, node, input, expected and actual). Whether every
 * value is known afterwards is the caller's question (lmx_infer_unknown_*).
 */
#ifndef LMX_PASSES_INFER_H
#define LMX_PASSES_INFER_H

#include "../graph/indexed.h"

int lmx_infer_shapes(const lmx_igraph *g, lmx_shape *shapes);
int lmx_infer_types(const lmx_igraph *g, int *dtypes);

/* Parses a shape text "(2, 3)" / "[2,3]" / "()" into s; -1 dims become 0 (unknown). */
int lmx_parse_shape_text(const char *text, lmx_shape *s);

#endif
