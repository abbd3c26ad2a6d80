/* attn_more.c — MXNet's fused multi-head attention matmuls (issue 14, ops14g), names as
 * stored in JSON: _contrib_interleaved_matmul_selfatt_qk, _selfatt_valatt, _encdec_qk,
 * _encdec_valatt, each with one required parameter `heads`.
 *
 * They are batch_dot on projections that stay interleaved in the tensors a single
 * FullyConnected produced: attn_more_plan.h gives the layouts and the products. The
 * qk forms return the (batch * heads, L_q, L_k) scores scaled by 1/sqrt(head_dim); the
 * valatt forms multiply the attention weights with the values back into
 * (L_q, batch, heads * head_dim). Gradients are the products with the head gradient;
 * the slots of an interleaved input that a form does not read get zero.
 * MXNet 1.9 sources: src/operator/contrib/transformer.cc (float32 on its CPU; here
 * float32 and float64 on every device, float16 too on the GPU).
 */
#include "attn_more_plan.h"
#include "op_impl.h"

static const lmx_param_field imm_fields[] = {
    LMX_PF(lmx_imm_param, heads, LMX_PT_INT, NULL, NULL, 1, 1e9, "Set number of heads"),
};

static const char *const in_self_qk[] = {"queries_keys_values", NULL};
static const char *const in_self_va[] = {"queries_keys_values", "attention", NULL};
static const char *const in_encdec_qk[] = {"queries", "keys_values", NULL};
static const char *const in_encdec_va[] = {"keys_values", "attention", NULL};

static int imm_shape(const lmx_op_ctx *c, int kind, lmx_shape *in, int nin, lmx_shape *out) {
  for (int i = 0; i < nin; i++)
    if (!lmx_shape_known(&in[i])) return LMX_OK;
  lmx_imm_plan p;
  LMX_TRY(lmx_imm_plan_make(c, kind, in, &p));
  return lmx_out_assign(c, out, 0, &p.out);
}

/* selfatt_valatt also knows its attention's shape from queries_keys_values */
static int self_va_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                         int nout, lmx_shape *aux, int naux) {
  (void)nout, (void)aux, (void)naux;
  const lmx_imm_param *q = c->param;
  if (lmx_shape_known(&in[0]) && in[0].ndim == 3) {
    lmx_shape a = LMX_SHP(in[0].dim[1] * q->heads, in[0].dim[0], in[0].dim[0]);
    LMX_TRY(lmx_in_assign(c, in, 1, &a));
  }
  return imm_shape(c, LMX_IMM_SELF_VALATT, in, nin, out);
}

#define IMM_SHAPE_FN(fn, kind)                                                             \
  static int fn(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out, int nout,     \
                lmx_shape *aux, int naux) {                                                \
    (void)nout, (void)aux, (void)naux;                                                     \
    return imm_shape(c, kind, in, nin, out);                                               \
  }
IMM_SHAPE_FN(self_qk_shape, LMX_IMM_SELF_QK)
IMM_SHAPE_FN(encdec_qk_shape, LMX_IMM_ENCDEC_QK)
IMM_SHAPE_FN(encdec_va_shape, LMX_IMM_ENCDEC_VALATT)

const lmx_op lmx_op__contrib_interleaved_matmul_selfatt_qk = {
    .name = "_contrib_interleaved_matmul_selfatt_qk",
    .doc = "Compute the matrix multiplication between the projections of queries and keys "
           "in multihead attention use as self attention. The input is one tensor of "
           "interleaved projections of queries, keys and values with the layout "
           "(seq_length, batch_size, num_heads * 3 * head_dim), per head its query, key and "
           "value. The output (batch_size * num_heads, seq_length, seq_length) equals: tmp = "
           "reshape(queries_keys_values, shape=(0, 0, num_heads, 3, -1)); q = transpose("
           "tmp[:,:,:,0,:], axes=(1, 2, 0, 3)) reshaped to (-1, seq_length, head_dim) and "
           "divided by sqrt(head_dim); k likewise from tmp[:,:,:,1,:]; output = batch_dot(q, "
           "k, transpose_b=True).",
    LMX_PARAMS(imm_fields, lmx_imm_param),
    .inputs = in_self_qk,
    .infer_shape = self_qk_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};

const lmx_op lmx_op__contrib_interleaved_matmul_selfatt_valatt = {
    .name = "_contrib_interleaved_matmul_selfatt_valatt",
    .doc = "Compute the matrix multiplication between the projections of values and the "
           "attention weights in multihead attention use as self attention. Inputs: the "
           "interleaved projections (seq_length, batch_size, num_heads * 3 * head_dim) and "
           "the attention weights (batch_size * num_heads, seq_length, seq_length). The "
           "output (seq_length, batch_size, num_heads * head_dim) equals: v = the value "
           "projections tmp[:,:,:,2,:] transposed to (batch * heads, seq_length, head_dim); "
           "output = batch_dot(attention, v) reshaped to (batch, heads, seq_length, "
           "head_dim), transposed to (seq_length, batch, heads, head_dim) and merged to 3-D.",
    LMX_PARAMS(imm_fields, lmx_imm_param),
    .inputs = in_self_va,
    .infer_shape = self_va_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};

const lmx_op lmx_op__contrib_interleaved_matmul_encdec_qk = {
    .name = "_contrib_interleaved_matmul_encdec_qk",
    .doc = "Compute the matrix multiplication between the projections of queries and keys "
           "in multihead attention use as encoder-decoder. Inputs: queries (q_seq_length, "
           "batch_size, num_heads * head_dim) and interleaved keys and values (kv_seq_length, "
           "batch_size, num_heads * 2 * head_dim), per head its key then its value. The output "
           "(batch_size * num_heads, q_seq_length, kv_seq_length) is batch_dot(q, k, "
           "transpose_b=True) of the per-head queries divided by sqrt(head_dim) and the keys.",
    LMX_PARAMS(imm_fields, lmx_imm_param),
    .inputs = in_encdec_qk,
    .infer_shape = encdec_qk_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};

const lmx_op lmx_op__contrib_interleaved_matmul_encdec_valatt = {
    .name = "_contrib_interleaved_matmul_encdec_valatt",
    .doc = "Compute the matrix multiplication between the projections of values and the "
           "attention weights in multihead attention use as encoder-decoder. Inputs: "
           "interleaved keys and values (kv_seq_length, batch_size, num_heads * 2 * "
           "head_dim) and the attention weights (batch_size * num_heads, q_seq_length, "
           "kv_seq_length). The output (q_seq_length, batch_size, num_heads * head_dim) is "
           "batch_dot(attention, v) of the per-head values, heads merged back into the last "
           "dim.",
    LMX_PARAMS(imm_fields, lmx_imm_param),
    .inputs = in_encdec_va,
    .infer_shape = encdec_va_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};
