/* linalg_lu.c — issue 14's LU-based linalg operators (ops14g), names as stored in JSON
 * with MXNet's aliases: _linalg_inverse (linalg_inverse), _linalg_det (linalg_det) and
 * _linalg_slogdet (linalg_slogdet), on the last two dims, batched over the leading ones.
 *
 * inverse: A⁻¹ (a singular matrix is an error), gradient -A⁻ᵀ · G · A⁻ᵀ. det: the
 * determinant ((1,) for one matrix); gradient G · det · A⁻ᵀ. slogdet: outputs sign and
 * logabsdet (log |det|), a singular matrix giving sign 0 and logabsdet -inf; the
 * gradient comes from logabsdet alone, G · A⁻ᵀ. As in MXNet, a singular matrix's
 * determinant gradient is zero. MXNet keeps the LU factors and pivots in hidden outputs;
 * here the backward pass factors A again, so det has one output and slogdet two (the
 * JSON is the same). MXNet 1.9 sources: src/operator/tensor/la_op.cc, la_op-inl.h.
 */
#include "linalg_tri_plan.h"
#include "op_impl.h"

static const char *const in_a[] = {"A", NULL};
static const char *const slogdet_outputs[] = {"sign", "logabsdet", NULL};

static int inverse_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out, int nout,
                         lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  lmx_la_tri_plan p; /* the square-matrix check of sumlogdiag's plan */
  LMX_TRY(lmx_la_tri_plan_make(c, LMX_LA_SUMLOGDIAG, &in[0], &p));
  return lmx_out_assign(c, out, 0, &in[0]);
}

static int det_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out, int nout,
                     lmx_shape *aux, int naux) {
  (void)nin, (void)aux, (void)naux;
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  lmx_la_tri_plan p; /* one value per matrix, as sumlogdiag */
  LMX_TRY(lmx_la_tri_plan_make(c, LMX_LA_SUMLOGDIAG, &in[0], &p));
  for (int i = 0; i < nout; i++) LMX_TRY(lmx_out_assign(c, out, i, &p.out));
  return LMX_OK;
}

const lmx_op lmx_op__linalg_inverse = {
    .name = "_linalg_inverse",
    .doc = "Compute the inverse of a matrix. Input is a tensor A of dimension n >= 2 (square "
           "matrices in the last two dims); the output has A's shape, the inverse of each "
           "matrix. A singular matrix is an error. Example: A = [[1., 4.], [2., 3.]], "
           "inverse(A) = [[-0.6, 0.8], [0.4, -0.2]].",
    .inputs = in_a,
    .infer_shape = inverse_shape,
    .backward_needs = LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};

const lmx_op lmx_op__linalg_det = {
    .name = "_linalg_det",
    .doc = "Compute the determinant of a matrix. Input is a tensor A of dimension n >= 2 "
           "(square matrices in the last two dims); the output has dimension n-2 ((1,) for "
           "one matrix). Example: A = [[1., 4.], [2., 3.]], det(A) = [-5.].",
    .inputs = in_a,
    .infer_shape = det_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};

const lmx_op lmx_op__linalg_slogdet = {
    .name = "_linalg_slogdet",
    .doc = "Compute the sign and log of the absolute value of the determinant of a matrix. "
           "Input is a tensor A of dimension n >= 2 (square matrices in the last two dims); "
           "the outputs sign and logabsdet have dimension n-2 ((1,) for one matrix); a "
           "singular matrix gives sign 0 and logabsdet -inf. Example: A = [[2., 3.], [1., "
           "4.]], slogdet(A) = ([1.], [1.609438]).",
    .inputs = in_a,
    .outputs = slogdet_outputs,
    .infer_shape = det_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};
