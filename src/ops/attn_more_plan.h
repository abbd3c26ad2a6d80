/* attn_more_plan.h — the strided batched products behind MXNet's fused multi-head
 * attention matmuls (_contrib_interleaved_matmul_{selfatt,encdec}_{qk,valatt}), shared
 * by the CPU and the CUDA glue. Shapes only, never data; messages from lmx_op_fail.
 *
 * Layouts (MXNet 1.9 src/operator/contrib/transformer.cc), with S sequences, H heads,
 * head dim D, E = H·D and N = S·H attention batches numbered i = s·H + h:
 *   queries_keys_values (L, S, 3E): the last dim is (H, 3, D): head h's query, key and
 *     value are the D-vectors at h·3D, h·3D + D, h·3D + 2D.
 *   queries (Lq, S, E): head h's query at h·D. keys_values (Lk, S, 2E): (H, 2, D).
 *   attention (N, Lq, Lk), and the value outputs (Lq, S, E).
 * So for batch i a projection is an (L, D) matrix that starts at element i·(k·D) of its
 * tensor (k = 3, 2 or 1 vectors per head) plus the slot's offset, with rows N·k·D
 * apart: every product is one row-major GEMM per batch, operands strided in place,
 * nothing copied (the CPU runs one OpenBLAS call per batch, the GPU one strided-batched
 * cuBLAS request). The qk products are scaled by 1/sqrt(D).
 *
 * A gradient that fills only some slots of an interleaved input (the value slot gets
 * nothing from a qk product) is zeroed first when written (req write).
 */
#ifndef LMX_OPS_ATTN_MORE_PLAN_H
#define LMX_OPS_ATTN_MORE_PLAN_H

#include <stdint.h>

#include "op.h"

/* the interleaved matmuls' one parameter */
typedef struct {
  int64_t heads;
} lmx_imm_param;

/* which of the four operators */
enum { LMX_IMM_SELF_QK, LMX_IMM_SELF_VALATT, LMX_IMM_ENCDEC_QK, LMX_IMM_ENCDEC_VALATT };

/* the tensors a product reads or writes: forward in[0], in[1], out[0]; backward the
 * head gradient and the two input gradients */
enum { LMX_IMM_IN0, LMX_IMM_IN1, LMX_IMM_OUT, LMX_IMM_OG, LMX_IMM_IG0, LMX_IMM_IG1 };

/* One operand: tensor `t`, matrix i starting at element off + i·stride, rows ld apart. */
typedef struct {
  int t;
  int64_t off, ld, stride;
} lmx_imm_mat;

/* For i < batch: C_i = alpha · op(A_i) · op(B_i) + beta · C_i (beta from req), row-major:
 * op(A_i) [m,k] (A_i stored [k,m] when ta), op(B_i) [k,n] (stored [n,k] when tb). */
typedef struct {
  int ta, tb;
  int64_t m, n, k;
  double alpha;
  lmx_imm_mat a, b, c;
} lmx_imm_gemm;

typedef struct {
  int64_t batch;          /* N = S·H */
  lmx_shape out;          /* the output's shape */
  lmx_imm_gemm fwd;       /* the forward product */
  lmx_imm_gemm bwd[2];    /* the gradient products (c.t is LMX_IMM_IG0 or LMX_IMM_IG1) */
  int partial[2];         /* input gradient j is only partly written by bwd[]: zero it */
} lmx_imm_plan;

/* Derives the plan of operator `kind` from the known input shapes (in[0], and in[1] for
 * the two-input ops) and the heads parameter; fails naming the input, what was expected
 * and what was got (3-D inputs, projection dims a positive multiple of heads, the
 * sequence and batch dims that must agree). */
int lmx_imm_plan_make(const lmx_op_ctx *c, int kind, const lmx_shape *in, lmx_imm_plan *p);

#endif
