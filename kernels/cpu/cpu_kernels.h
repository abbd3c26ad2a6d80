/* cpu_kernels.h — compute primitives on the CPU.
 *
 * Plain pointers, element counts and dtype codes only: kernels know nothing of arrays,
 * graphs or handles. One function per family, with the dtype chosen inside by a small
 * table (float32 and float64 get dedicated loops; other dtypes go through doubles).
 * Shapes of the arguments are given in each comment.
 */
#ifndef LMX_KERNELS_CPU_H
#define LMX_KERNELS_CPU_H

#include <stdint.h>

#include "../../src/luamx.h"

/* dst[n] (dtype dt) <- src[n] (dtype st), converting values. */
void lmx_cpu_convert(void *dst, int dt, const void *src, int st, int64_t n);

/* p[n] <- value, converted to dtype dt. */
void lmx_cpu_fill(void *p, int dt, int64_t n, double value);

/* Broadcasting binary op (LMX_BIN_*). out has ndim dims `oshape`; a and b are given with
 * the same ndim and their own dims (1 where broadcast). All contiguous, same dtype. */
void lmx_cpu_binary(int op, int dt, int ndim, const int64_t *oshape, void *out,
                    const int64_t *ashape, const void *a, const int64_t *bshape, const void *b);

/* out[n] = a[n] op s, or s op a[n] when reverse. */
void lmx_cpu_scalar(int op, int dt, int64_t n, void *out, const void *a, double s, int reverse);

/* C[m,n] = alpha * op(A) op(B) + beta * C, row-major; op = transpose when ta/tb.
 * A is [m,k] (or [k,m] when ta), B is [k,n] (or [n,k] when tb). dt: float32/float64. */
void lmx_cpu_gemm(int dt, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                  const void *A, const void *B, double beta, void *C);

/* Products of fewer multiply-adds (m·n·k) than this run on the calling thread alone
 * (gemm.c says why). */
enum { LMX_GEMM_SERIAL = 1 << 21 };

/* The same with explicit leading dimensions (row strides, in elements) of A, B, C. */
void lmx_cpu_gemm_ld(int dt, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                     const void *A, int64_t lda, const void *B, int64_t ldb, double beta,
                     void *C, int64_t ldc);

/* C[m,n] = act(op(A) op(B) + bias[n]) in float32 with the activation (LMX_GEMM_ACT_*,
 * gemm_route.h) and the bias (NULL: none) applied in the product's epilogue, when the
 * route runs this product on oneDNN: 0 then; -1 (nothing written) when it does not. */
int lmx_cpu_gemm_ep(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *A,
                    int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc,
                    const float *bias, int act);

/* ---- elementwise_half.c: float16 / bfloat16 through float32 ------------------------
 * out[n] (dtype dt, float16 or bfloat16) (+)= fn over the nin (<= 3) inputs in[k] (dtype
 * dt; an entry may be NULL, passed on as NULL), run chunk by chunk in float32 stack
 * buffers: fn(ctx, m, o, x, acc) computes o[m] (+)= f(x[0][m], ...) in float32. Returns
 * 0, or -1 for another dtype or when fn returns non-zero. */
typedef int (*lmx_half_fn)(const void *ctx, int64_t m, float *o, const float *const *x,
                           int acc);
int lmx_cpu_half_map(int dt, int64_t n, void *out, int acc, int nin, const void *const *in,
                     lmx_half_fn fn, const void *ctx);

/* ---- lowp_bf16.c: bfloat16 FullyConnected with AVX512_BF16 ------------------------
 * y[m,n] (+)= x[m,k] · w[n,k]ᵀ (+ b[n], b may be NULL), bfloat16 in and out, float32
 * sums rounded once. Returns 0, or -1 (nothing written) when the CPU lacks AVX512_BF16
 * or the fast path is forced off: the caller then stages in float32. */
int lmx_cpu_bf16_fc(int64_t m, int64_t k, int64_t n, uint16_t *y, const uint16_t *x,
                    const uint16_t *w, const uint16_t *b, int acc);
/* Its backward: gx[m,k] (+)= g[m,n] · w[n,k], gw[n,k] (+)= gᵀ · x[m,k], gb[n] (+)= the
 * column sums of g (each may be NULL: not wanted; acc_*: add), float32 sums rounded once.
 * tmp: scratch for max(n·k, m·n + m·k) bfloat16. Returns 0, or -1 as lmx_cpu_bf16_fc. */
int lmx_cpu_bf16_fc_bwd(int64_t m, int64_t k, int64_t n, const uint16_t *g, const uint16_t *x,
                        const uint16_t *w, uint16_t *gx, int acc_x, uint16_t *gw, int acc_w,
                        uint16_t *gb, int acc_b, uint16_t *tmp);
/* 1 when lmx_cpu_bf16_fc runs (CPU support and not forced off), else 0. */
int lmx_cpu_bf16_dot_available(void);
/* off != 0: lmx_cpu_bf16_fc refuses (returns -1) until called again with 0. */
void lmx_cpu_bf16_dot_force_off(int off);

/* ---- elementwise.c: unary math, scalar ops, equal-shape binary ops ------------------
 * All take float32/float64, and float16/bfloat16 computed in float32 (one rounding per
 * result), and return 0, or -1 for another dtype / unknown op code.
 * acc = 1 adds into the destination (req ADD) instead of overwriting it. Arrays of n
 * elements; the destination may alias an input (in-place). */
enum {
  LMX_UN_COPY, LMX_UN_EXP, LMX_UN_LOG, LMX_UN_SQRT, LMX_UN_RSQRT, LMX_UN_SQUARE, LMX_UN_ABS,
  LMX_UN_SIGN, LMX_UN_SIN, LMX_UN_COS, LMX_UN_TANH, LMX_UN_SIGMOID, LMX_UN_RELU, LMX_UN_NEG,
  LMX_UN_RECIP, LMX_UN_FLOOR, LMX_UN_CEIL, LMX_UN_ROUND, LMX_UN_SOFTRELU, LMX_UN_SOFTSIGN,
  LMX_NUM_UNOPS
};
/* y[n] (+)= f(x[n]) */
int lmx_cpu_unary(int op, int dt, int64_t n, void *y, const void *x, int acc);
/* gx[n] (+)= g[n] * f'(...) from x[n] and/or y[n] (either may be NULL when the
 * gradient does not use it). */
int lmx_cpu_unary_bwd(int op, int dt, int64_t n, void *gx, const void *g, const void *x,
                      const void *y, int acc);
/* vmath_x86.c: float32 y[n] (+)= f(x[n]) for op LMX_UN_SIGMOID or LMX_UN_TANH with
 * AVX-512 code; returns 1 when it did, 0 when the op or this CPU is not covered (the
 * caller then runs the portable loop). */
int lmx_cpu_vmath_f32(int op, int64_t n, float *y, const float *x, int acc);

enum {
  LMX_SC_PLUS, LMX_SC_MINUS, LMX_SC_RMINUS, LMX_SC_MUL, LMX_SC_DIV, LMX_SC_RDIV, LMX_SC_POW,
  LMX_SC_RPOW, LMX_SC_MAX, LMX_SC_MIN, LMX_SC_EQ, LMX_SC_NE, LMX_SC_GT, LMX_SC_GE, LMX_SC_LT,
  LMX_SC_LE, LMX_NUM_SCOPS
};
/* y[n] (+)= x[n] op s */
int lmx_cpu_scalar_op(int op, int dt, int64_t n, void *y, const void *x, double s, int acc);
/* gx[n] (+)= g[n] * d(x op s)/dx, from x[n] / y[n] (may be NULL when unused) */
int lmx_cpu_scalar_bwd(int op, int dt, int64_t n, void *gx, const void *g, const void *x,
                       const void *y, double s, int acc);

/* out[n] (+)= a[n] op b[n], op = LMX_BIN_* */
int lmx_cpu_ew_binary(int op, int dt, int64_t n, void *out, const void *a, const void *b,
                      int acc);
/* gout[n] (+)= gradient of side 0 (a) or 1 (b) from g[n], a[n], b[n] */
int lmx_cpu_ew_binary_bwd(int op, int side, int dt, int64_t n, void *gout, const void *g,
                          const void *a, const void *b, int acc);
/* out[n] (+)= alpha * x[n]: float32/float64/float16/bfloat16; any dtype for a plain copy
 * (alpha 1, acc 0). */
int lmx_cpu_scale(int dt, int64_t n, void *out, const void *x, double alpha, int acc);

/* ---- linalg.c: GEMM-based kernels (float32/float64) ------------------------------- */
/* out[m,n] (+)= x[m,k] · w[n,k]ᵀ (+ b[n], b may be NULL) */
void lmx_cpu_fc_fwd(int dt, int64_t m, int64_t k, int64_t n, void *out, const void *x,
                    const void *w, const void *b, int acc);
/* out[m,n] = f(x[m,k] · w[n,k]ᵀ + b[n]) for an elementwise f (LMX_UN_*, an Activation's):
 * in float32 one oneDNN product with f in its epilogue when f is relu, tanh, sigmoid or
 * softrelu and the route runs the product there (returns 1); else the forward above, then
 * f in place over out (returns 0). out must not overlap x, w or b. */
int lmx_cpu_fc_act_fwd(int dt, int64_t m, int64_t k, int64_t n, void *out, const void *x,
                       const void *w, const void *b, int act);
/* gemv.c: float32 FullyConnected forward for m = 1 row of x (or m <= LMX_FC_SMALL_M when
 * m·n·k >= 2^20), as streaming dot products (AVX-512F or AVX2+FMA). Returns 0 when done,
 * -1 when the caller must run the GEMM (no such ISA, forced off, another shape, or an
 * empty dimension). */
enum { LMX_FC_SMALL_M = 8 };
int lmx_cpu_fc_small_f32(int64_t m, int64_t k, int64_t n, float *y, const float *x,
                         const float *w, const float *b, int acc);
/* on != 0: every FullyConnected forward runs the GEMM (for comparisons); 0: automatic */
void lmx_cpu_fc_small_force_blas(int on);
/* For tests: use at most AVX2 (level 1), no vector kernel (0), or the best (2). */
void lmx_cpu_fc_small_cap_isa(int level);
/* (gemv.c also defines the public lmx_cpu_fc_small_path of luamx.h) */
/* gx[m,k] (+)= g[m,n] · w[n,k] */
void lmx_cpu_fc_bwd_data(int dt, int64_t m, int64_t k, int64_t n, void *gx, const void *g,
                         const void *w, int acc);
/* gw[n,k] (+)= g[m,n]ᵀ · x[m,k] */
void lmx_cpu_fc_bwd_weight(int dt, int64_t m, int64_t k, int64_t n, void *gw, const void *g,
                           const void *x, int acc);
/* out[n] (+)= Σ_r x[r,n] over m rows */
void lmx_cpu_sum_rows(int dt, int64_t m, int64_t n, void *out, const void *x, int acc);
/* Σ x[n], accumulated in double (8 float32 lanes, then double); 0 for other dtypes */
double lmx_cpu_sum(int dt, int64_t n, const void *x);
/* C[b][m,n] (+)= op(A[b]) · op(B[b]); A[b] [m,k] ([k,m] if ta), B[b] [k,n] ([n,k] if tb) */
void lmx_cpu_batch_gemm(int dt, int64_t batch, int ta, int tb, int64_t m, int64_t n, int64_t k,
                        const void *A, const void *B, void *C, int acc);

/* ---- nn.c: softmax family, loss gradients, LeakyReLU, Dropout (float32/float64) --- */
/* y[outer,len,inner] (+)= softmax (or log_softmax when logm) of x along len, x/temperature */
int lmx_cpu_softmax(int dt, int64_t outer, int64_t len, int64_t inner, void *y, const void *x,
                    double temperature, int logm, int acc);
/* gx (+)= gradient from g and the forward output y (same layout) */
int lmx_cpu_softmax_bwd(int dt, int64_t outer, int64_t len, int64_t inner, void *gx,
                        const void *g, const void *y, double temperature, int logm, int acc);
/* gx[outer,k,inner] (+)= (y - smoothed onehot(label[outer,inner])) * scale (* g[...] when
 * g != NULL); rows labelled `ignore` get 0 when use_ignore */
int lmx_cpu_softmax_output_grad(int dt, int64_t outer, int64_t k, int64_t inner, void *gx,
                                const void *y, const void *label, const void *g, double alpha,
                                int use_ignore, double ignore, double scale, int acc);
/* ---- fc_smo.c: FullyConnected's backward under SoftmaxOutput, fused (float32) ------- */
typedef struct {
  int64_t m, k, n;                   /* rows, FullyConnected inputs, classes */
  const float *p, *label, *x, *w;    /* softmax output [m,n], label [m], x [m,k], w [n,k] */
  float *scratch;                    /* m * n floats (the first m * block are used) */
  float *dx, *dw, *db;               /* NULL: not wanted */
  int acc_dx, acc_dw, acc_db;        /* add instead of write */
  double alpha, ignore, scale;       /* SoftmaxOutput's smooth_alpha, ignore_label, scale */
  int use_ignore;
} lmx_cpu_fc_smo;
/* dx, dW, db of FullyConnected from G = (p - smoothed onehot(label)) * scale, G made
 * block by block in the scratch and never stored whole */
void lmx_cpu_fc_smo_bwd(const lmx_cpu_fc_smo *a);
/* gx[n] (+)= (y[n] - label[n]) * scale; sign of the difference when mae */
int lmx_cpu_regression_grad(int dt, int64_t n, void *gx, const void *y, const void *label,
                            int mae, double scale, int acc);
enum { LMX_LEAKY_LEAKY, LMX_LEAKY_ELU, LMX_LEAKY_SELU, LMX_LEAKY_GELU };
/* y[n] (+)= leaky kind of x[n] with slope */
int lmx_cpu_leaky(int kind, int dt, int64_t n, void *y, const void *x, double slope, int acc);
/* gx[n] (+)= g[n] * derivative (x[n], y[n] = forward output) */
int lmx_cpu_leaky_bwd(int kind, int dt, int64_t n, void *gx, const void *g, const void *x,
                      const void *y, double slope, int acc);
/* y[outer,C,inner] (+)= x > 0 ? x : gamma[c] x; gamma[ngamma], ngamma = C or 1 */
int lmx_cpu_prelu(int dt, int64_t outer, int64_t C, int64_t inner, void *y, const void *x,
                  const void *gamma, int64_t ngamma, int acc);
/* gx (may be NULL) and ggamma[ngamma] (may be NULL) from g, x, gamma */
int lmx_cpu_prelu_bwd(int dt, int64_t outer, int64_t C, int64_t inner, void *gx, void *ggamma,
                      const void *g, const void *x, const void *gamma, int64_t ngamma,
                      int acc_x, int acc_g);
/* mask[n]: uniform draws in [0,1) -> 0 (draw < p) or 1/(1-p), in place */
int lmx_cpu_dropout_mask(int dt, int64_t n, void *mask, double p);
/* softmax / log_softmax of x[outer,len,inner] over the first lens[r] positions of each
 * row r = o*inner + i (lens[outer*inner]: int32, int64 when l64); later positions get 0 */
int lmx_cpu_softmax_len(int dt, int64_t outer, int64_t len, int64_t inner, void *y,
                        const void *x, const void *lens, int l64, double temperature, int logm,
                        int acc);
/* gx (+)= its gradient from g and the forward output y; 0 past each row's length */
int lmx_cpu_softmax_len_bwd(int dt, int64_t outer, int64_t len, int64_t inner, void *gx,
                            const void *g, const void *y, const void *lens, int l64,
                            double temperature, int logm, int acc);
/* first index r < n with lens[r] outside [0, len], or -1 when all are in range */
int64_t lmx_cpu_lengths_check(const void *lens, int l64, int64_t n, int64_t len);
/* rrelu: y[n] (+)= x > 0 ? x : slope[n] x;  gx[n] (+)= g * (y > 0 ? 1 : slope[n]) */
int lmx_cpu_rrelu(int dt, int64_t n, void *y, const void *x, const void *slope, int acc);
int lmx_cpu_rrelu_bwd(int dt, int64_t n, void *gx, const void *g, const void *y,
                      const void *slope, int acc);

/* ---- strided.c: index walks with per-operand strides (elements) ------------------- */
/* st[ndim] <- C-order strides of shape */
void lmx_cpu_contig_strides(int ndim, const int64_t *shape, int64_t *st);
/* for every index i of shape[ndim]: dst[i·dstr] (+)= src[i·sstr]. Any dtype without
 * acc; float32/float64 with acc (else -1). Serves transpose, slice, concat, broadcast. */
int lmx_cpu_strided_copy(int dt, int ndim, const int64_t *shape, void *dst, const int64_t *dstr,
                         const void *src, const int64_t *sstr, int acc);
enum {
  LMX_BC_ADD, LMX_BC_SUB, LMX_BC_MUL, LMX_BC_DIV, LMX_BC_MAX, LMX_BC_MIN, LMX_BC_POW,
  LMX_BC_EQ, LMX_BC_NE, LMX_BC_GT, LMX_BC_GE, LMX_BC_LT, LMX_BC_LE
};
/* out[oshape] (contiguous) (+)= a[i·astr] op b[i·bstr] (stride 0 = broadcast axis) */
int lmx_cpu_bcast_binary(int op, int dt, int ndim, const int64_t *oshape, void *out,
                         const void *a, const int64_t *astr, const void *b, const int64_t *bstr,
                         int acc);
/* gd[dsize] (+)= Σ over broadcast axes of d(a op b)/d(side) · g[oshape]; gd is addressed
 * with dstr (0 on the axes the operand was broadcast along). */
int lmx_cpu_bcast_binary_grad(int op, int side, int dt, int ndim, const int64_t *oshape,
                              void *gd, const int64_t *dstr, int64_t dsize, const void *g,
                              const void *a, const int64_t *astr, const void *b,
                              const int64_t *bstr, int acc);
enum { LMX_RED_SUM, LMX_RED_MEAN, LMX_RED_PROD, LMX_RED_MAX, LMX_RED_MIN, LMX_RED_NORM1,
       LMX_RED_NORM2 };
/* y[ysize] = reduction of x[shape] where y is addressed by ystr (0 on reduced axes);
 * SUM/MEAN multiply by scale and may accumulate (acc); others overwrite. */
int lmx_cpu_reduce(int kind, int dt, int ndim, const int64_t *shape, const void *x, void *y,
                   const int64_t *ystr, int64_t ysize, double scale, int acc);
/* gx[shape] (+)= gradient of the reduction from g, y (addressed by ystr) and x */
int lmx_cpu_reduce_bwd(int kind, int dt, int ndim, const int64_t *shape, void *gx, const void *x,
                       const void *g, const void *y, const int64_t *ystr, double scale, int acc);
/* y[outer, inner] = index of the max (min when want_min) of x[outer, len, inner] along len */
int lmx_cpu_argmax(int want_min, int dt, int64_t outer, int64_t len, int64_t inner,
                   const void *x, void *y);

/* ---- conv.c: im2col / col2im on channel-first data; pool.c: pooling ---------------- */
/* Spatial geometry of one convolution or pooling: k spatial dims (1..3); in/out sizes,
 * kernel, stride, pad, dilate per dim. */
typedef struct {
  int k;
  int64_t in[3], out[3], kernel[3], stride[3], pad[3], dilate[3];
} lmx_cpu_geom;
/* Rewrites a 1-D / 2-D geometry as 3-D with leading dims of 1 (the kernels' form). */
void lmx_cpu_geom_norm(lmx_cpu_geom *g);
/* col[C*K, nimg*O] (row stride ld >= nimg*O; image n at columns n*O) <- patches of
 * x[nimg, C, in...] (K = kernel volume, O = out volume; g normalized) */
int lmx_cpu_im2col(int dt, const lmx_cpu_geom *g, int64_t C, int64_t nimg, const void *x,
                   void *col, int64_t ld);
/* x[nimg, C, in...] += the transpose of im2col applied to col[C*K, nimg*O] (row stride ld) */
int lmx_cpu_col2im(int dt, const lmx_cpu_geom *g, int64_t C, int64_t nimg, const void *col,
                   void *x, int64_t ld);
enum { LMX_POOL_MAX, LMX_POOL_AVG, LMX_POOL_SUM, LMX_POOL_LP };
/* y[planes, out...] (+)= pooling of x[planes, in...] (g normalized; p_value for lp) */
int lmx_cpu_pool(int type, int p_value, int dt, const lmx_cpu_geom *g, int include_pad,
                 int64_t planes, const void *x, void *y, int acc);
/* gx[planes, in...] (+)= gradient from gy[planes, out...], x[planes, in...] and, for lp,
 * y[planes, out...] (else NULL); acc = 0 writes all of gx (zeros where no window reads) */
int lmx_cpu_pool_bwd(int type, int p_value, int dt, const lmx_cpu_geom *g, int include_pad,
                     int64_t planes, void *gx, const void *gy, const void *x, const void *y,
                     int acc);

/* ---- norm.c: BatchNorm / LayerNorm on x[outer, C, inner] (float32/float64) --------- */
typedef struct {
  int64_t outer, C, inner;
  double eps, momentum;
  int fix_gamma;     /* gamma read as 1, its gradient 0 */
  int batch_stats;   /* normalize with batch statistics (training) or moving ones */
  int update_moving; /* batch_stats: fold them into mmean/mvar with momentum */
  const struct lmx_cpu_ep_s *ep; /* CPU forward: an activation over y (NULL: none) */
} lmx_cpu_bn;
/* y (+)= (x - mean) * invstd * gamma + beta per channel (y NULL: statistics only); mean[C], invstd[C] (may be NULL)
 * receive the statistics used; mmean/mvar[C] are the moving statistics. */
int lmx_cpu_bn_fwd(int dt, const lmx_cpu_bn *b, const void *x, void *y, const void *gamma,
                   const void *beta, void *mean, void *invstd, void *mmean, void *mvar,
                   int acc);
/* gx, ggamma[C], gbeta[C] (each may be NULL; acc[3] per gradient) from x, head g, gamma
 * and the statistics of the forward pass (mean, invstd) */
int lmx_cpu_bn_bwd(int dt, const lmx_cpu_bn *b, const void *x, const void *g, const void *gamma,
                   const void *mean, const void *invstd, void *gx, void *ggamma, void *gbeta,
                   const int *acc);
/* y (+)= (x - mean) / std * gamma[c] + beta[c] over C; mean/std[outer, inner] (may be NULL) */
int lmx_cpu_ln_fwd(int dt, int64_t outer, int64_t C, int64_t inner, double eps, const void *x,
                   void *y, const void *gamma, const void *beta, void *mean, void *std, int acc);
/* gx, ggamma[C], gbeta[C] (may be NULL; acc[3]) from x, g, gamma, mean, std */
int lmx_cpu_ln_bwd(int dt, int64_t outer, int64_t C, int64_t inner, const void *x, const void *g,
                   const void *gamma, const void *mean, const void *std, void *gx, void *ggamma,
                   void *gbeta, const int *acc);

/* ---- optim.c: fused optimizer updates (float32/float64) ---------------------------- */
enum { LMX_UPD_SGD, LMX_UPD_SGD_MOM, LMX_UPD_NAG, LMX_UPD_ADAM, LMX_UPD_RMSPROP, LMX_UPD_ADAGRAD,
       LMX_UPD_FTRL, LMX_UPD_SIGNUM, LMX_UPD_SIGNSGD, LMX_UPD_FTML };
typedef struct {
  int rule;
  double lr, wd, rescale, clip, momentum, beta1, beta2, epsilon, gamma1, clip_weights;
  double lamda1, beta, wd_lh; /* FTRL: lamda1, beta; SIGNUM: wd_lh */
  double t;                   /* FTML: the update count */
  void *s2;                   /* FTML: its third state z (s0 = d, s1 = v), like s0/s1 */
} lmx_cpu_upd;
/* out[n] (+)= updated w[n] from grad[n]; states s0[n] (mom / mean / n / history / z) and
 * s1[n] (adam's var, ftrl's n) updated in place; out may alias w. See optim.c for the
 * rules. */
int lmx_cpu_update(int dt, const lmx_cpu_upd *u, int64_t n, void *out, const void *w,
                   const void *grad, void *s0, void *s1, int acc);

/* ---- rnn.c: fused RNN (see rnn.c for the packed layout), float32/float64 ---------- */
enum { LMX_RNN_RELU, LMX_RNN_TANH, LMX_RNN_LSTM, LMX_RNN_GRU };
typedef struct {
  int mode, dt;
  int64_t L, D, T, N, In, H, G; /* layers, directions, steps, batch, input, hidden, gates */
  int drop; /* the reserve holds inter-layer dropout masks (p > 0, L > 1) */
} lmx_cpu_rnn;
/* Gradient destinations (NULL: not wanted). All accumulate: the caller zeroes them for
 * req WRITE. dy[T,N,D·H], dhy/dcy[L·D,N,H] are head gradients (NULL: zeros). */
typedef struct {
  const void *dy, *dhy, *dcy;
  void *dx, *dw, *dh0, *dc0;
} lmx_cpu_rnn_grad;
/* Number of packed parameters. */
int64_t lmx_cpu_rnn_param_size(const lmx_cpu_rnn *r);
/* Reserve (what forward keeps for backward) in elements of r->dt. With r->drop it starts
 * with the (L-1, T, N, D·H) dropout masks (0 or 1/(1-p); all 1: no dropout), which the
 * caller fills before lmx_cpu_rnn_fwd. */
int64_t lmx_cpu_rnn_reserve(const lmx_cpu_rnn *r);
/* Workspace (scratch of one call) in elements of r->dt. */
size_t lmx_cpu_rnn_ws(const lmx_cpu_rnn *r);
/* y[T,N,D·H], hy[L·D,N,H], cy (lstm) from x[T,N,In], packed w, h0/c0[L·D,N,H]; y, hy, cy
 * may be NULL. Fills the reserve rs (masks excepted). */
int lmx_cpu_rnn_fwd(const lmx_cpu_rnn *r, const void *x, const void *w, const void *h0,
                    const void *c0, void *y, void *hy, void *cy, void *rs, void *ws);
/* Accumulates the gradients of gr from the reserve rs that forward left. */
int lmx_cpu_rnn_bwd(const lmx_cpu_rnn *r, const void *x, const void *w, const void *h0,
                    const void *c0, const void *rs, const lmx_cpu_rnn_grad *gr, void *ws);

/* ---- math.c (ops14a: math family): the rows of math_fns.h, codes LMX_MF_* ----------
 * out[n] (+)= f(a[n], b[n], c[n], s) for row fn; operands may be NULL (read as 0).
 * float32/float64, float16/bfloat16 through float32; returns 0, or -1 for another dtype
 * or an unknown code. out may alias an operand. */
int lmx_cpu_math(int fn, int dt, int64_t n, void *out, const void *a, const void *b,
                 const void *c, double s, int acc);
/* out[oshape] (contiguous) (+)= f over the three operands in[k] (NULL: absent) addressed
 * with strides str[k][ndim] in elements (0 = broadcast along that axis). float32 and
 * float64 only. */
int lmx_cpu_math_strided(int fn, int dt, int ndim, const int64_t *oshape, void *out,
                         const void *const *in, const int64_t *const *str, double s, int acc);
/* ---- manip.c: generators (issue 14, tensor manipulation) ---------------------------- */
/* y[i] = start + floor(i / repeat) · step for i < n, computed in double; any dtype */
void lmx_cpu_range(int dt, int64_t n, void *y, double start, double step, int64_t repeat);
/* y[outer, inner] (+)= x[outer, A, inner] at the index idx[outer, inner] (any dtype, truncated;
 * out of [0, A): clipped, or wrapped when wrap); any dtype for x / y */
void lmx_cpu_pick(int dt, int idt, int64_t outer, int64_t A, int64_t inner, void *y,
                  const void *x, const void *idx, int wrap, int acc);
/* gx[outer, A, inner] (+)= g[outer, inner] where a is the resolved index, 0 elsewhere */
void lmx_cpu_pick_bwd(int dt, int idt, int64_t outer, int64_t A, int64_t inner, void *gx,
                      const void *g, const void *idx, int wrap, int acc);
/* y[outer, len, inner] (ydt) (+)= the running sum of x (xdt) along len, from the end when
 * reverse (cumsum's gradient); sums in double */
void lmx_cpu_cumsum(int xdt, int ydt, int64_t outer, int64_t len, int64_t inner, void *y,
                    const void *x, int reverse, int acc);
/* gather_nd: data as [rows of the M indexed dims dims[M], inner]; idx[M, nY] (any dtype,
 * truncated; negatives from the end; clipped); y[nY, inner] (+)= data at each row */
void lmx_cpu_gather_nd(int dt, int idt, int M, const int64_t *dims, int64_t nY, int64_t inner,
                       void *y, const void *data, const void *idx, int acc);
/* out[rows, inner] (+)= the src[nY, inner] columns whose index names that row: their sum
 * (add: gather_nd's gradient) or the last one (scatter_nd); 0 for rows nobody names */
void lmx_cpu_scatter_nd(int dt, int idt, int M, const int64_t *dims, int64_t nY, int64_t inner,
                        void *out, const void *src, const void *idx, int add, int acc);

/* ---- normalisation and vision (issue 14, ops14c) ------------------------------------- */
/* norm_more.c: LRN on x[N, C, SP]: y = x tmp^-beta, tmp = knorm + alpha/nsize * window
 * sum of x^2 over nsize channels (odd); backward from x, y, tmp (gx written or, acc,
 * added). float32/float64; other dtypes return -1. */
int lmx_cpu_lrn_fwd(int dt, int64_t N, int64_t C, int64_t SP, int64_t nsize, double alpha,
                    double beta, double knorm, const void *x, void *y, void *tmp);
int lmx_cpu_lrn_bwd(int dt, int64_t N, int64_t C, int64_t SP, int64_t nsize, double alpha,
                    double beta, const void *x, const void *y, const void *tmp, const void *gy,
                    void *gx, int acc);
/* Row normalisations (src/ops/norm_more.h's view): L2 (s1 = norm), instance (s1 = mean,
 * s2 = var), group (s1 = mean, s2 = std); gamma/beta[A] unused by L2. */
enum { LMX_CPU_RN_L2 = 0, LMX_CPU_RN_INSTANCE = 1, LMX_CPU_RN_GROUP = 2 };
typedef struct {
  int64_t outer, len, inner, na; /* rows (o, i); row length; groups of gamma/beta */
} lmx_cpu_rownorm;
int lmx_cpu_rownorm_fwd(int dt, int kind, const lmx_cpu_rownorm *rn, double eps, const void *x,
                        const void *gamma, const void *beta, void *y, void *s1, void *s2);
/* gx, ggamma[A], gbeta[A] (each may be NULL; acc[3] per gradient) */
int lmx_cpu_rownorm_bwd(int dt, int kind, const lmx_cpu_rownorm *rn, double eps, const void *x,
                        const void *y, const void *gamma, const void *s1, const void *s2,
                        const void *gy, void *gx, void *ggamma, void *gbeta, const int *acc);

/* spatial.c: Pad of nd-D x (nd <= 5) to y with (before, after) pairs pw and mode
 * LMX_PADM_* (kernels/pad_index.h); backward gx (+)= the gather of gy. */
int lmx_cpu_pad_fwd(int dt, int mode, int nd, const int64_t *ishape, const int64_t *oshape,
                    const int64_t *pw, double cval, const void *x, void *y);
int lmx_cpu_pad_bwd(int dt, int mode, int nd, const int64_t *ishape, const int64_t *oshape,
                    const int64_t *pw, const void *gy, void *gx, int acc);
/* Nearest UpSampling of one input x[N, C, H, W] by s into channels [coff, coff + C) of
 * y[N, Cout, H s, W s] (acc: added); backward sums each s x s block into gx. */
typedef struct {
  int64_t N, C, H, W, s, Cout, coff;
} lmx_cpu_ups;
int lmx_cpu_ups_fwd(int dt, const lmx_cpu_ups *u, const void *x, void *y, int acc);
int lmx_cpu_ups_bwd(int dt, const lmx_cpu_ups *u, const void *gy, void *gx, int acc);

/* chan_ep.c: per-channel epilogue y = f(x scale[c] + shift[c]) of a convolution fused
 * with the BatchNorm (inference) and the activation after it; float32 / float64. */
enum { LMX_CPU_EP_NONE = -1, LMX_CPU_EP_CLIP = -2 };
typedef struct lmx_cpu_ep_s {
  const double *scale, *shift; /* [C]; NULL: 1 / 0 */
  int act;                     /* LMX_UN_RELU/SIGMOID/TANH/SOFTRELU or LMX_CPU_EP_* */
  double lo, hi;               /* LMX_CPU_EP_CLIP's bounds */
} lmx_cpu_ep;
/* One plane y[n] = f(x[n] scale[c] + shift[c]) (x may be y); serial. */
void lmx_cpu_ep_row(int dt, const lmx_cpu_ep *ep, int64_t c, int64_t n, void *y,
                    const void *x);
/* Every plane of y[N, C, n] in place, over the threads when large. */
void lmx_cpu_ep_planes(int dt, const lmx_cpu_ep *ep, int64_t N, int64_t C, int64_t n,
                       void *y);

/* dwconv.c: direct depthwise convolution of x[N, C, in...] with m filters per channel,
 * w[C m, 1, kernel...] (at most LMX_CPU_DW_MAXK taps), b[C m] (may be NULL) into
 * y[N, C m, out...] (g normalized; acc: added); the data gradient gx (+)= from gy; the
 * weight / bias gradients (each may be NULL) written or added (accw / accb). */
enum { LMX_CPU_DW_MAXK = 64 };
int lmx_cpu_dwconv_fwd(int dt, const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t m,
                       const void *x, const void *w, const void *b, void *y, int acc,
                       const lmx_cpu_ep *ep);
int lmx_cpu_dwconv_bwd_data(int dt, const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t m,
                            const void *w, const void *gy, void *gx, int acc);
int lmx_cpu_dwconv_bwd_wb(int dt, const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t m,
                          const void *x, const void *gy, void *gw, void *gb, int accw,
                          int accb);

/* winograd.c (with winograd2.c, winograd4.c): Winograd F(m x m, 3x3) transforms (m = 2 or
 * 4) of a 3x3 convolution with stride 1 (no dilation) on float32 planes H x W -> OH x OW,
 * padding ph / pw, tiles th x tw of m x m outputs, P = (m + 2)² positions.
 * U / dU [P][F][C] (weights w / gw [F][C][3][3]); V [P][C][ld], M [P][F][ld] with tile
 * t = n·th·tw + ty·tw + tx of nimg images; the plane functions do channels [c0, c1) /
 * [f0, f1) of every image. buf: lmx_cpu_wino_buf_floats scratch floats. */
typedef struct {
  int64_t H, W, OH, OW, ph, pw, th, tw;
  int m;
} lmx_cpu_wino;
/* 1 and *q filled for tile m when g (normalized) is such a convolution, else 0. */
int lmx_cpu_wino_geom(const lmx_cpu_geom *g, int m, lmx_cpu_wino *q);
int64_t lmx_cpu_wino_buf_floats(const lmx_cpu_wino *q);
void lmx_cpu_wino_wt(const lmx_cpu_wino *q, int64_t FC, const float *w, float *U);
void lmx_cpu_wino_wt_adj(const lmx_cpu_wino *q, int64_t FC, const float *dU, float *gw,
                         int acc);
void lmx_cpu_wino_in(const lmx_cpu_wino *q, int64_t C, int64_t c0, int64_t c1, int64_t nimg,
                     const float *x, float *V, int64_t ld, float *buf);
void lmx_cpu_wino_in_adj(const lmx_cpu_wino *q, int64_t C, int64_t c0, int64_t c1,
                         int64_t nimg, const float *dV, int64_t ld, float *dx, int acc,
                         float *buf);
void lmx_cpu_wino_out(const lmx_cpu_wino *q, int64_t F, int64_t f0, int64_t f1, int64_t nimg,
                      const float *M, int64_t ld, const float *bias, float *y, int acc,
                      float *buf);
void lmx_cpu_wino_out_adj(const lmx_cpu_wino *q, int64_t F, int64_t f0, int64_t f1,
                          int64_t nimg, const float *dy, float *dM, int64_t ld, float *buf);

/* spatial.c: depth_to_space's permutation between the small side x[N, C b^2, H, W] and
 * the large y[N, C, H b, W b] (to_small 0: large <- small; 1: small <- large); Crop of
 * planes H x W to h x w at (oy, ox) (to_big 0: the crop; 1: the crop put back into zeros).
 * acc: added. */
typedef struct {
  int64_t N, C, H, W, b;
} lmx_cpu_d2s_geom;
typedef struct {
  int64_t planes, H, W, h, w, oy, ox;
} lmx_cpu_crop_geom;
int lmx_cpu_d2s(int dt, const lmx_cpu_d2s_geom *g, int to_small, const void *src, void *dst,
                int acc);
int lmx_cpu_crop(int dt, const lmx_cpu_crop_geom *g, int to_big, const void *src, void *dst,
                 int acc);
/* ---- loss_more.c: softmax_cross_entropy (issue 14 losses, float32/float64) ------- */
/* loss[0] (+)= Σ_i logsumexp(x[i,:]) - x[i,label[i]] over n rows of k; label holds class
 * indices in x's dtype. Returns -1 when done, the first row whose label is not in [0, k)
 * (nothing written), or -2 for an unsupported dtype. */
int64_t lmx_cpu_sce_fwd(int dt, int64_t n, int64_t k, void *loss, const void *x,
                        const void *label, int acc);
/* gx[i,j] (+)= (softmax(x[i])[j] - (j == label[i])) * g; -1 for an unsupported dtype */
int lmx_cpu_sce_bwd(int dt, int64_t n, int64_t k, void *gx, const void *x, const void *label,
                    double g, int acc);
/* SVMOutput: gx[i,j] (+)= MXNet's L2-SVM gradient (L1 when linear) of the output y[i,j]
 * with margin and regularization coefficient reg, class label[i] (a label outside [0, k)
 * makes every class of the row an "other" class, as MXNet's loop does); -1 for an
 * unsupported dtype */
int lmx_cpu_svm_grad(int dt, int64_t n, int64_t k, void *gx, const void *y, const void *label,
                     double margin, double reg, int linear, int acc);
/* IdentityAttachKLSparseReg's backward over x (n, k): avg[j] = momentum * avg[j] +
 * (1 - momentum) * mean_i x[i,j] (in place), then gx[i,j] (+)= g[i,j] + penalty *
 * (-target / avg[j] + (1 - target) / (1 - avg[j])); gx may alias g. -1: unsupported dtype */
int lmx_cpu_klreg_bwd(int dt, int64_t n, int64_t k, void *gx, const void *g, const void *x,
                      void *avg, double target, double penalty, double momentum, int acc);

/* ---- khatri_rao.c: the Khatri-Rao product (issue 14, float32/float64) -------------- */
#include "khatri_rao.h"
/* out (M_1···M_n, N) (+)= the column-wise Khatri-Rao product of a's matrices */
int lmx_cpu_khatri_rao(int dt, const lmx_kr_args *a, void *out, int acc);
/* ga (M_which, N) (+)= the gradient of factor `which` from g (M_1···M_n, N) */
int lmx_cpu_khatri_rao_bwd(int dt, const lmx_kr_args *a, int which, const void *g, void *ga,
                           int acc);

/* ---- sort.c: topk / sort / argsort (issue 14, ops14e) ------------------------------ */
/* Sorts each row of x[outer, n, inner] (any dtype) along n, ascending when asc, else
 * descending, ties by index (stable); writes the first k of each row: val[outer, k, inner]
 * (+)= the values (x's dtype), idx[outer, k, inner] = their indices (idt), mask[outer, n,
 * inner] = 1 at them, 0 elsewhere (x's dtype); NULL skips one. -1: out of memory. */
int lmx_cpu_topk(int dt, int idt, int64_t outer, int64_t n, int64_t inner, int64_t k, int asc,
                 const void *x, void *val, void *idx, void *mask, int acc);
/* gx[outer, n, inner] (+)= g[outer, k, inner] at the positions the forward picked, 0
 * elsewhere (the order recomputed from x). -1: out of memory. */
int lmx_cpu_topk_bwd(int dt, int64_t outer, int64_t n, int64_t inner, int64_t k, int asc,
                     const void *x, void *gx, const void *g, int acc);

/* ---- optim_lamb.c: LAMB's two phases (issue 17, lamb17; float32/float64) ------------ */
typedef struct {
  double beta1, beta2, epsilon, wd, rescale, clip; /* clip < 0: off */
  double beta1_t, beta2_t;                         /* beta1^t, beta2^t */
  int bias_correction;
} lmx_cpu_lamb1;
typedef struct {
  double lr, lower_bound, upper_bound; /* a bound < 0: not set */
} lmx_cpu_lamb2;
/* Phase one: mean[n], var[n] updated in place from w[n] and grad[n]; g[n] (+)= the
 * direction m/(sqrt(v)+eps) + wd*w (m, v bias-corrected when asked). -1: bad dtype. */
int lmx_cpu_lamb_phase1(int dt, const lmx_cpu_lamb1 *u, int64_t n, void *g, const void *w,
                        const void *grad, void *mean, void *var, int acc);
/* Multi-precision phase one: the float32 rule on the master copy w32[n] (read for wd)
 * with the float16 grad16[n] widened to float32; mean, var and g float32. */
int lmx_cpu_lamb_phase1_mp(const lmx_cpu_lamb1 *u, int64_t n, float *g, const float *w32,
                           const void *grad16, float *mean, float *var, int acc);
/* Phase two: out[n] (+)= w[n] - lr*ratio*g[n], ratio = r1'/r2 (r1' = r1[0] clamped to the
 * bounds) or 1 when r1' or r2[0] is 0; out may alias w. -1: bad dtype. */
int lmx_cpu_lamb_phase2(int dt, const lmx_cpu_lamb2 *u, int64_t n, void *out, const void *w,
                        const void *g, const void *r1, const void *r2, int acc);
/* The step's rate lr*ratio of phase two (shared by the CPU and CUDA glue's checks). */
static inline double lmx_lamb_rate(double lr, double r1, double r2, double lower,
                                   double upper) {
  if (lower >= 0) r1 = r1 > lower ? r1 : lower;
  if (upper >= 0) r1 = r1 < upper ? r1 : upper;
  return (r1 == 0 || r2 == 0) ? lr : lr * r1 / r2;
}
/* ---- gemm_batch.c: strided batched products (issue 14: linalg, CTC, attention; ops14g) */
/* For i < batch: C + i·sc [m,n] (row stride ldc) = alpha · op(A + i·sa) · op(B + i·sb) +
 * beta · C_i, row-major, op() as in lmx_cpu_gemm_ld (lda / ldb the row strides as stored).
 * Strides in elements; float32/float64. One routed product per batch: in order, or, when
 * each is below LMX_GEMM_SERIAL and no OpenMP region is open, spread over the threads. */
void lmx_cpu_gemm_sbatch(int dt, int64_t batch, int ta, int tb, int64_t m, int64_t n,
                         int64_t k, double alpha, const void *A, int64_t lda, int64_t sa,
                         const void *B, int64_t ldb, int64_t sb, double beta, void *C,
                         int64_t ldc, int64_t sc);
/* ---- la_tri.c: diagonals and triangles of square matrices (ops14g) ------------------
 * F[batch, n, n] and P[batch, lmx_la_tri_len(t)] (la_tri.h). make = 0: P (+)= the packed
 * entries of F; make = 1: F (+)= P at the packed positions, and 0 elsewhere (acc: those
 * left as they are). float32/float64; -1 for another dtype. */
#include "la_tri.h"
/* la_blas.c: Cholesky and triangular products and solves on LAPACK / BLAS */
#include "la_blas.h"
int lmx_cpu_la_tri(int dt, int64_t batch, const lmx_la_tri *t, void *P, void *F, int make,
                   int acc);
/* out[batch] (+)= Σ_i log(A[b, i, i]) of A[batch, n, n] (_linalg_sumlogdiag) */
int lmx_cpu_sumlogdiag(int dt, int64_t batch, int64_t n, const void *A, void *out, int acc);
/* gA[b, i, j] (+)= g[b] / A[b, i, i] on the diagonal, 0 elsewhere */
int lmx_cpu_sumlogdiag_bwd(int dt, int64_t batch, int64_t n, const void *A, const void *g,
                           void *gA, int acc);

/* ---- ctc.c: CTCLoss (ctc_core.h) ---------------------------------------------------- */
#include "ctc_core.h"
/* every sequence's loss (and gradient, when a->grad); a->ws holds N · lmx_ctc_ws_seq
 * doubles. Returns LMX_CTC_OK or, for the first sequence with a bad length or label,
 * what was wrong (*bad_pos, *bad_val as lmx_ctc_seq gives them). */
int lmx_cpu_ctc(const lmx_ctc_args *a, int64_t *bad_pos, double *bad_val);
/* gx[T, N, C] (+)= og[n] · grad[T, N, C]; -1 for a dtype other than float32/float64 */
int lmx_cpu_ctc_bwd(int dt, int64_t T, int64_t N, int64_t C, const void *og, const void *grad,
                    void *gx, int acc);

#endif
