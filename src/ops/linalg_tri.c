/* linalg_tri.c — issue 14's diagonal and triangle operators of MXNet's linalg family
 * (ops14g), names as stored in JSON with the aliases MXNet registers (linalg_<x>):
 * _linalg_extractdiag, _linalg_makediag, _linalg_extracttrian, _linalg_maketrian and
 * _linalg_sumlogdiag, batched over the leading dims.
 *
 * extract* copy a diagonal or triangle of square matrices into vectors, make* build
 * matrices from such vectors (zeros elsewhere); each is the other's gradient. The
 * packing (offset, lower) is kernels/cpu/la_tri.h. sumlogdiag sums the logs of the
 * diagonal (2-D input: shape (1,)); its gradient is g / A_ii on the diagonal.
 * MXNet 1.9 sources: src/operator/tensor/la_op.cc, la_op.h, la_op-inl.h.
 */
#include "linalg_tri_plan.h"
#include "op_impl.h"

static const lmx_param_field diag_fields[] = {
    LMX_PF(lmx_la_tri_param, offset, LMX_PT_INT, "0", NULL, 0, 0,
           "Offset of the diagonal versus the main diagonal. 0 corresponds to the main "
           "diagonal, a negative/positive value to diagonals below/above the main diagonal."),
};
static const lmx_param_field trian_fields[] = {
    LMX_PF(lmx_la_tri_param, offset, LMX_PT_INT, "0", NULL, 0, 0,
           "Offset of the diagonal versus the main diagonal. 0 corresponds to the main "
           "diagonal, a negative/positive value to diagonals below/above the main diagonal."),
    LMX_PF(lmx_la_tri_param, lower, LMX_PT_BOOL, "True", NULL, 0, 0,
           "Refer to the lower triangular matrix if lower=true, refer to the upper otherwise. "
           "Only relevant when offset=0"),
};

static const char *const in_a[] = {"A", NULL};

static int tri_shape(const lmx_op_ctx *c, int kind, lmx_shape *in, lmx_shape *out) {
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  lmx_la_tri_plan p;
  LMX_TRY(lmx_la_tri_plan_make(c, kind, &in[0], &p));
  return lmx_out_assign(c, out, 0, &p.out);
}

#define TRI_SHAPE_FN(fn, kind)                                                             \
  static int fn(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out, int nout,     \
                lmx_shape *aux, int naux) {                                                \
    (void)nin, (void)nout, (void)aux, (void)naux;                                          \
    return tri_shape(c, kind, in, out);                                                    \
  }
TRI_SHAPE_FN(extractdiag_shape, LMX_LA_EXTRACTDIAG)
TRI_SHAPE_FN(makediag_shape, LMX_LA_MAKEDIAG)
TRI_SHAPE_FN(extracttrian_shape, LMX_LA_EXTRACTTRIAN)
TRI_SHAPE_FN(maketrian_shape, LMX_LA_MAKETRIAN)
TRI_SHAPE_FN(sumlogdiag_shape, LMX_LA_SUMLOGDIAG)

const lmx_op lmx_op__linalg_extractdiag = {
    .name = "_linalg_extractdiag",
    .doc = "Extracts the diagonal entries of a square matrix. Input is a tensor A of "
           "dimension n >= 2 holding square matrices in its last two dims; the output has "
           "dimension n-1, the diagonal of each matrix (offset k selects the kth diagonal "
           "above, -k below the main one). Example: A = [[1.0, 2.0], [3.0, 4.0]], "
           "extractdiag(A) = [1.0, 4.0], extractdiag(A, 1) = [2.0].",
    LMX_PARAMS(diag_fields, lmx_la_tri_param),
    .inputs = in_a,
    .infer_shape = extractdiag_shape,
    .backward_needs = LMX_NEEDS_OUT_GRADS,
};

const lmx_op lmx_op__linalg_makediag = {
    .name = "_linalg_makediag",
    .doc = "Constructs a square matrix with the input as diagonal. Input is a tensor A of "
           "dimension n >= 1; the output has dimension n+1, square matrices of size "
           "len + |offset| with A's last dim on the diagonal `offset` and zeros elsewhere. "
           "Example: A = [1.0, 2.0], makediag(A) = [[1.0, 0.0], [0.0, 2.0]], makediag(A, 1) "
           "= [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]].",
    LMX_PARAMS(diag_fields, lmx_la_tri_param),
    .inputs = in_a,
    .infer_shape = makediag_shape,
    .backward_needs = LMX_NEEDS_OUT_GRADS,
};

const lmx_op lmx_op__linalg_extracttrian = {
    .name = "_linalg_extracttrian",
    .doc = "Extracts a triangular sub-matrix from a square matrix. Input is a tensor A of "
           "dimension n >= 2 of square matrices; the output has dimension n-1, for each "
           "matrix the m(m+1)/2 entries (m = size - |offset|) of the lower triangle "
           "(offset < 0, or offset = 0 and lower) row by row, or of the upper triangle "
           "(offset > 0, or offset = 0 and not lower) column by column. Example: A = [[1.0, "
           "2.0], [3.0, 4.0]], extracttrian(A) = [1.0, 3.0, 4.0], extracttrian(A, "
           "lower=False) = [1.0, 2.0, 4.0], extracttrian(A, 1) = [2.0], extracttrian(A, -1) "
           "= [3.0].",
    LMX_PARAMS(trian_fields, lmx_la_tri_param),
    .inputs = in_a,
    .infer_shape = extracttrian_shape,
    .backward_needs = LMX_NEEDS_OUT_GRADS,
};

const lmx_op lmx_op__linalg_maketrian = {
    .name = "_linalg_maketrian",
    .doc = "Constructs a square matrix with the input representing a specific triangular "
           "sub-matrix (extracttrian's packing). Input is a tensor A of dimension n >= 1 "
           "whose last dim is m(m+1)/2; the output has dimension n+1, square matrices of "
           "size m + |offset|, zeros outside the triangle. Example: A = [1.0, 2.0, 3.0], "
           "maketrian(A) = [[1.0, 0.0], [2.0, 3.0]], maketrian(A, lower=False) = [[1.0, "
           "2.0], [0.0, 3.0]], maketrian(A, offset=1) = [[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], "
           "[0.0, 0.0, 0.0]], maketrian(A, offset=-1) = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], "
           "[2.0, 3.0, 0.0]].",
    LMX_PARAMS(trian_fields, lmx_la_tri_param),
    .inputs = in_a,
    .infer_shape = maketrian_shape,
    .backward_needs = LMX_NEEDS_OUT_GRADS,
};

const lmx_op lmx_op__linalg_sumlogdiag = {
    .name = "_linalg_sumlogdiag",
    .doc = "Computes the sum of the logarithms of the diagonal elements of a square matrix. "
           "Input is a tensor A of dimension n >= 2 of square matrices; the output has "
           "dimension n-2 ((1,) for one matrix). The diagonal entries must be positive. "
           "Example: A = [[1.0, 1.0], [1.0, 7.0]], sumlogdiag(A) = [1.9459]; A = [[[1.0, 1.0], "
           "[1.0, 7.0]], [[3.0, 0], [0, 17.0]]], sumlogdiag(A) = [1.9459, 3.9318].",
    .inputs = in_a,
    .infer_shape = sumlogdiag_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};
