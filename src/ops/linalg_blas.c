/* linalg_blas.c — issue 14's Cholesky and triangular operators of MXNet's linalg family
 * (ops14g), names as stored in JSON with MXNet's aliases (linalg_<x>): _linalg_potrf,
 * _linalg_potri, _linalg_trmm, _linalg_trsm and _linalg_syrk, on the last two dims,
 * batched over the leading dims. Both backends run linalg_blas_run.c: the CPU on LAPACK /
 * BLAS (OpenBLAS), the GPU on cuBLAS and own kernels (kernels/cuda/la_blas.cu).
 *
 * potrf: the Cholesky factor L (A = L Lᵀ, lower) or U (A = Uᵀ U), the other triangle
 * zero; only A's triangle on that side is read. Its gradient is MXNet's symmetric one,
 * 0.5 · L⁻ᵀ · copyLTU(Lᵀ · dL) · L⁻¹. potri: from a Cholesky factor, the inverse of the
 * matrix it factors (full and symmetric); gradient -tril(out · (G + Gᵀ) · L⁻ᵀ).
 * trmm / trsm: alpha · op(A) · B, alpha · op(A)⁻¹ · B (or B from the left when
 * rightside) for triangular A, op() transposing when transpose, only A's `lower` (or
 * upper) triangle read, and A's gradient zero on the other. syrk: alpha · A · Aᵀ (Aᵀ · A
 * when transpose). MXNet 1.9 sources: src/operator/tensor/la_op.cc, la_op-inl.h.
 */
#include "linalg_blas_plan.h"
#include "op_impl.h"

static const lmx_param_field chol_fields[] = {
    LMX_PF(lmx_la_chol_param, lower, LMX_PT_BOOL, "True", NULL, 0, 0,
           "True if the triangular matrix is lower triangular, false if it is upper "
           "triangular."),
};
static const lmx_param_field trmm_fields[] = {
    LMX_PF(lmx_la_trmm_param, transpose, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Use transposed of the triangular matrix"),
    LMX_PF(lmx_la_trmm_param, rightside, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Multiply triangular matrix from the right to non-triangular one."),
    LMX_PF(lmx_la_trmm_param, lower, LMX_PT_BOOL, "True", NULL, 0, 0,
           "True if the triangular matrix is lower triangular, false if it is upper "
           "triangular."),
    LMX_PF(lmx_la_trmm_param, alpha, LMX_PT_FLOAT, "1.0", NULL, 0, 0,
           "Scalar factor to be applied to the result."),
};
static const lmx_param_field syrk_fields[] = {
    LMX_PF(lmx_la_syrk_param, transpose, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Use transpose of input matrix."),
    LMX_PF(lmx_la_syrk_param, alpha, LMX_PT_FLOAT, "1.0", NULL, 0, 0,
           "Scalar factor to be applied to the result."),
};

static const char *const in_a[] = {"A", NULL};
static const char *const in_ab[] = {"A", "B", NULL};

static int blas_shape(const lmx_op_ctx *c, int kind, lmx_shape *in, int nin, lmx_shape *out) {
  for (int i = 0; i < nin; i++)
    if (!lmx_shape_known(&in[i])) return LMX_OK;
  lmx_la_blas_plan p;
  LMX_TRY(lmx_la_blas_plan_make(c, kind, in, &p));
  return lmx_out_assign(c, out, 0, &p.out);
}

#define BLAS_SHAPE_FN(fn, kind)                                                            \
  static int fn(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out, int nout,     \
                lmx_shape *aux, int naux) {                                                \
    (void)nout, (void)aux, (void)naux;                                                     \
    return blas_shape(c, kind, in, nin, out);                                              \
  }
BLAS_SHAPE_FN(potrf_shape, LMX_LA_POTRF)
BLAS_SHAPE_FN(potri_shape, LMX_LA_POTRI)
BLAS_SHAPE_FN(trmm_shape, LMX_LA_TRMM)
BLAS_SHAPE_FN(trsm_shape, LMX_LA_TRSM)
BLAS_SHAPE_FN(syrk_shape, LMX_LA_SYRK)

const lmx_op lmx_op__linalg_potrf = {
    .name = "_linalg_potrf",
    .doc = "Performs Cholesky factorization of a symmetric positive-definite matrix. Input "
           "is a tensor A of dimension n >= 2 (square matrices in the last two dims); the "
           "output B has A's shape, for each matrix the lower triangular factor with A = B * "
           "B^T (or, lower=False, the upper one with A = B^T * B), zeros in the other "
           "triangle. Only A's triangle on that side is read; a matrix that is not positive "
           "definite is an error. Example: A = [[4.0, 1.0], [1.0, 4.25]], potrf(A) = [[2.0, "
           "0], [0.5, 2.0]].",
    LMX_PARAMS(chol_fields, lmx_la_chol_param),
    .inputs = in_a,
    .infer_shape = potrf_shape,
    .backward_needs = LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};

const lmx_op lmx_op__linalg_potri = {
    .name = "_linalg_potri",
    .doc = "Performs matrix inversion from a Cholesky factorization. Input is a tensor A of "
           "dimension n >= 2 of triangular matrices (the lower Cholesky factor, or the upper "
           "one when lower=False; only that triangle is read); the output is, for each, the "
           "inverse of A * A^T (of A^T * A), a full symmetric matrix. Example: A = [[2.0, 0], "
           "[0.5, 2.0]], potri(A) = [[0.26563, -0.0625], [-0.0625, 0.25]].",
    LMX_PARAMS(chol_fields, lmx_la_chol_param),
    .inputs = in_a,
    .infer_shape = potri_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};

const lmx_op lmx_op__linalg_trmm = {
    .name = "_linalg_trmm",
    .doc = "Performs multiplication with a lower triangular matrix: out = alpha * op(A) * B, "
           "or alpha * B * op(A) when rightside, for each matrix of a batch (the last two "
           "dims), op(A) = A or A^T (transpose). Only A's lower triangle (upper when "
           "lower=False) is read. Example: A = [[1.0, 0], [1.0, 1.0]], B = [[1.0, 1.0, 1.0], "
           "[1.0, 1.0, 1.0]], trmm(A, B, alpha=2.0) = [[2.0, 2.0, 2.0], [4.0, 4.0, 4.0]].",
    LMX_PARAMS(trmm_fields, lmx_la_trmm_param),
    .inputs = in_ab,
    .infer_shape = trmm_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};

const lmx_op lmx_op__linalg_trsm = {
    .name = "_linalg_trsm",
    .doc = "Solves matrix equation involving a lower triangular matrix: out = alpha * "
           "op(A)^-1 * B, or alpha * B * op(A)^-1 when rightside, for each matrix of a batch "
           "(the last two dims), op(A) = A or A^T (transpose). Only A's lower triangle "
           "(upper when lower=False) is read. Example: A = [[1.0, 0], [1.0, 1.0]], B = "
           "[[2.0, 2.0, 2.0], [4.0, 4.0, 4.0]], trsm(A, B, alpha=0.5) = [[1.0, 1.0, 1.0], "
           "[1.0, 1.0, 1.0]].",
    LMX_PARAMS(trmm_fields, lmx_la_trmm_param),
    .inputs = in_ab,
    .infer_shape = trsm_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};

const lmx_op lmx_op__linalg_syrk = {
    .name = "_linalg_syrk",
    .doc = "Multiplication of matrix with its transpose: out = alpha * A * A^T, or alpha * "
           "A^T * A when transpose, for each matrix of a batch (the last two dims). Example: "
           "A = [[1., 2., 3.], [4., 5., 6.]], syrk(A, alpha=1., transpose=False) = [[14., "
           "32.], [32., 77.]], syrk(A, alpha=1., transpose=True) = [[17., 22., 27.], [22., "
           "29., 36.], [27., 36., 45.]].",
    LMX_PARAMS(syrk_fields, lmx_la_syrk_param),
    .inputs = in_a,
    .infer_shape = syrk_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};
