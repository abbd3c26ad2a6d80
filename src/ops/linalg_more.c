/* linalg_more.c — small linear algebra of issue 14: _linalg_gemm (alias linalg_gemm),
 * _linalg_gemm2 (alias linalg_gemm2), MXNet's names as stored in JSON, and khatri_rao.
 *
 * _linalg_gemm2(A, B) = alpha · op(A) · op(B) and _linalg_gemm(A, B, C) = that + beta · C,
 * op() transposing when transpose_a / transpose_b, for every matrix of a batch: rows on
 * `axis` (default -2), columns on the last dim, the other dims the batch (equal in every
 * input). The gradients are the products with the head gradient (C's: beta times it).
 * khatri_rao(arg0, ..., arg{n-1}) of matrices (M_i, N) is (M_1···M_n, N), column k the
 * outer product of the inputs' columns k (the last input's row index varying fastest).
 * MXNet registers it forward-only on the CPU; here it has a gradient and a CUDA kernel.
 * MXNet 1.9 sources: src/operator/tensor/la_op.cc, la_op.h (LaMatrixMultMacOpShape),
 * contrib/krprod.cc.
 */
#include "linalg_more_plan.h"
#include "op_impl.h"

static const lmx_param_field gemm_fields[] = {
    LMX_PF(lmx_la_gemm_param, transpose_a, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Multiply with transposed of first input (A)."),
    LMX_PF(lmx_la_gemm_param, transpose_b, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Multiply with transposed of second input (B)."),
    LMX_PF(lmx_la_gemm_param, alpha, LMX_PT_FLOAT, "1.0", NULL, 0, 0,
           "Scalar factor multiplied with A*B."),
    LMX_PF(lmx_la_gemm_param, beta, LMX_PT_FLOAT, "1.0", NULL, 0, 0,
           "Scalar factor multiplied with C."),
    LMX_PF(lmx_la_gemm_param, axis, LMX_PT_INT, "-2", NULL, 0, 0,
           "Axis corresponding to the matrix rows."),
};
/* _linalg_gemm2: the same fields without beta */
static const lmx_param_field gemm2_fields[] = {
    LMX_PF(lmx_la_gemm_param, transpose_a, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Multiply with transposed of first input (A)."),
    LMX_PF(lmx_la_gemm_param, transpose_b, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Multiply with transposed of second input (B)."),
    LMX_PF(lmx_la_gemm_param, alpha, LMX_PT_FLOAT, "1.0", NULL, 0, 0,
           "Scalar factor multiplied with A*B."),
    LMX_PF(lmx_la_gemm_param, axis, LMX_PT_INT, "-2", NULL, 0, 0,
           "Axis corresponding to the matrix rows."),
};

static const char *const in_ab[] = {"A", "B", NULL};
static const char *const in_abc[] = {"A", "B", "C", NULL};
static const int inplace_20[][2] = {{2, 0}};

static int gemm_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                            int nout, lmx_shape *aux, int naux) {
  (void)nout, (void)aux, (void)naux;
  if (nin == 3) { /* C and the output share one shape */
    LMX_TRY(lmx_in_assign(c, in, 2, &out[0]));
    LMX_TRY(lmx_out_assign(c, out, 0, &in[2]));
  }
  if (!lmx_shape_known(&in[0]) || !lmx_shape_known(&in[1])) return LMX_OK;
  lmx_la_gemm_plan p;
  LMX_TRY(lmx_plan_la_gemm(c, &in[0], &in[1], &p));
  lmx_shape o = lmx_plan_la_gemm_out(&in[0], &p);
  if (nin == 3) LMX_TRY(lmx_in_assign(c, in, 2, &o));
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op__linalg_gemm = {
    .name = "_linalg_gemm",
    .doc = "Performs general matrix multiplication and accumulation: out = alpha * op(A) * "
           "op(B) + beta * C for each matrix of a batch (columns on the last dim, rows on "
           "axis, the other dims the batch). Example: A = [[1, 1], [1, 1]], B = [[1, 1], "
           "[1, 1], [1, 1]], C = [[1, 1, 1], [1, 1, 1]], gemm(A, B, C, transpose_b=True, "
           "alpha=2.0, beta=10.0) = [[14, 14, 14], [14, 14, 14]].",
    LMX_PARAMS(gemm_fields, lmx_la_gemm_param),
    .inputs = in_abc,
    .infer_shape = gemm_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
    .inplace = inplace_20,
    .num_inplace = 1,
};

const lmx_op lmx_op__linalg_gemm2 = {
    .name = "_linalg_gemm2",
    .doc = "Performs general matrix multiplication: out = alpha * op(A) * op(B) for each "
           "matrix of a batch (columns on the last dim, rows on axis, the other dims the "
           "batch). Example: A = [[1, 1], [1, 1]], B = [[1, 1], [1, 1], [1, 1]], gemm2(A, "
           "B, transpose_b=True, alpha=2.0) = [[4, 4, 4], [4, 4, 4]].",
    LMX_PARAMS(gemm2_fields, lmx_la_gemm_param),
    .inputs = in_ab,
    .infer_shape = gemm_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};

/* ---- khatri_rao -------------------------------------------------------------------------- */

static const lmx_param_field kr_fields[] = {
    LMX_PF(lmx_kr_param, num_args, LMX_PT_INT, NULL, NULL, 1, 16, "Number of input matrices."),
};

static int kr_num_inputs(const void *p) { return (int)((const lmx_kr_param *)p)->num_args; }

static void kr_input_name(const void *p, int i, char *buf, size_t cap) {
  (void)p;
  snprintf(buf, cap, "arg%d", i);
}

/* MXNet's KhatriRaoShape: every input (M_i, N), the output (Π M_i, N). */
static int kr_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                          int nout, lmx_shape *aux, int naux) {
  (void)nout, (void)aux, (void)naux;
  int64_t rows = 1, cols = 0;
  for (int i = 0; i < nin; i++) {
    if (in[i].ndim == 0) return LMX_OK;
    if (in[i].ndim != 2) {
      char nm[32];
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input '%s': expected a 2-D matrix, got %d-D",
                         lmx_op_in_name(c, i, nm, sizeof nm), in[i].ndim);
    }
    if (i == 0) cols = in[0].dim[1];
    lmx_shape e = LMX_SHP(in[i].dim[0], cols);
    LMX_TRY(lmx_in_assign(c, in, i, &e));
    rows *= in[i].dim[0];
  }
  lmx_shape o = LMX_SHP(rows, cols);
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_khatri_rao = {
    .name = "khatri_rao",
    .doc = "Computes the Khatri-Rao product of the input matrices: for A_1 (M_1, N), ..., "
           "A_n (M_n, N) the (M_1 * ... * M_n, N) matrix whose kth column is the "
           "column-wise outer product of the inputs' kth columns. Example: A = [[1, -1], "
           "[2, -3]], B = [[1, 4], [2, 5], [3, 6]] give [[1, -4], [2, -5], [3, -6], "
           "[2, -12], [4, -15], [6, -18]]. At most 16 input matrices.",
    LMX_PARAMS(kr_fields, lmx_kr_param),
    .num_inputs = kr_num_inputs,
    .input_name = kr_input_name,
    .infer_shape = kr_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};
