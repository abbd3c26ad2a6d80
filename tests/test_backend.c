/* test_backend.c — the backend layering: kernel tables, typed parameters, device
 * primitives.
 *
 *  - Operator ids (LMX_OPID_<id>, from ops.def) are registry indexes; every op has a CPU
 *    forward; lmx_op_kernel / lmx_op_supported / lmx_op_require_kernel agree and name
 *    the op, node and device when a kernel is missing.
 *  - Every choice enum of op_params.h matches its op's choice string: parsing each
 *    choice by name stores the enum constant of that name.
 *  - The CPU device table's primitives compute what device.h says, and a table without
 *    a primitive gives "<what>: not supported on <dev>(<id>) in this build".
 *  - Counter-based generator keys (seed, offset) advance by the draws handed out.
 * Prints "N passed, N failed"; exits 1 on any failure.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "device/device.h"
#include "luamx.h"
#include "ops/kernel.h"
#include "ops/op.h"
#include "ops/op_params.h"
#include "tensor/random.h"

#include "check.h"

static void test_tables(void) {
  CHECK(lmx_op_count() == LMX_NUM_OPS);
  int ids_ok = 1, cpu_ok = 1;
  for (int i = 0; i < lmx_op_count(); i++) {
    const lmx_op *op = lmx_op_at(i);
    if (lmx_op_index(op) != i) ids_ok = 0;
    if (!lmx_op_kernel(op, LMX_CPU) || lmx_op_kernel(op, LMX_CPU) != lmx_op_kernel_at(i, LMX_CPU))
      cpu_ok = 0, fprintf(stderr, "no CPU kernel row for %s\n", op->name);
  }
  CHECK(ids_ok && cpu_ok);
  CHECK(lmx_op_index(lmx_op_find("FullyConnected")) == LMX_OPID_FullyConnected);
  CHECK(lmx_op_index(lmx_op_find("adagrad_update")) == LMX_OPID_adagrad_update);
  CHECK(lmx_op_kernel_at(-1, LMX_CPU) == NULL && lmx_op_kernel_at(LMX_NUM_OPS, LMX_CPU) == NULL);
  CHECK(lmx_op_kernel(NULL, LMX_CPU) == NULL && lmx_op_kernel(lmx_op_at(0), 7) == NULL);

  const lmx_op *fc = lmx_op_find("FullyConnected"), *am = lmx_op_find("argmax");
  CHECK(lmx_op_supported(fc, LMX_CPU, 1) && lmx_op_supported(am, LMX_CPU, 0));
  CHECK(!lmx_op_supported(am, LMX_CPU, 1)); /* argmax: no gradient */
  CHECK(lmx_op_require_kernel(fc, LMX_CPU, 0, "fc1", 1) == LMX_OK);
  CHECK(lmx_op_require_kernel(am, LMX_CPU, 0, "am", 1) == LMX_ERR_UNSUPPORTED);
  CHECK(strcmp(lmx_errmsg(), "no backward kernel for argmax (node 'am') on cpu(0)") == 0);
  const lmx_kernel *g = lmx_op_kernel(fc, LMX_GPU);
#ifndef LUAMX_WITH_CUDA
  CHECK(g == NULL);
#endif
  if (!g) {
    CHECK(lmx_op_require_kernel(fc, LMX_GPU, 1, NULL, 0) == LMX_ERR_UNSUPPORTED);
    CHECK(strcmp(lmx_errmsg(), "no kernel for FullyConnected on gpu(1)") == 0);
  }
}

/* Parses `key=choice` (plus the required extra_k=extra_v, and num_layers=1 for RNN) for
 * op and returns the int field at `offset` (-99 on failure). */
static int parsed_choice(const char *opname, const char *extra_k, const char *extra_v,
                         const char *key, const char *choice, size_t offset) {
  const lmx_op *op = lmx_op_find(opname);
  const char *keys[3] = {key, extra_k, "num_layers"}, *vals[3] = {choice, extra_v, "1"};
  int n = !extra_k ? 1 : strcmp(opname, "RNN") == 0 ? 3 : 2;
  void *p = NULL;
  if (!op || lmx_op_params_parse(op, NULL, keys, vals, n, &p) != LMX_OK) {
    fprintf(stderr, "%s %s=%s: %s\n", opname, key, choice, lmx_errmsg());
    return -99;
  }
  int v = *(const int *)((const char *)p + offset);
  lmx_op_params_free(op, p);
  return v;
}

#define CHOICE(op, xk, xv, st, field, name, value)                                          \
  CHECK(parsed_choice(op, xk, xv, #field, name, offsetof(st, field)) == (value))

static void test_choice_enums(void) {
  CHOICE("Activation", NULL, NULL, lmx_act_param, act_type, "relu", LMX_ACT_RELU);
  CHOICE("Activation", NULL, NULL, lmx_act_param, act_type, "sigmoid", LMX_ACT_SIGMOID);
  CHOICE("Activation", NULL, NULL, lmx_act_param, act_type, "tanh", LMX_ACT_TANH);
  CHOICE("Activation", NULL, NULL, lmx_act_param, act_type, "softrelu", LMX_ACT_SOFTRELU);
  CHOICE("Activation", NULL, NULL, lmx_act_param, act_type, "softsign", LMX_ACT_SOFTSIGN);
  CHOICE("LeakyReLU", NULL, NULL, lmx_lrelu_param, act_type, "leaky", LMX_LRELU_LEAKY);
  CHOICE("LeakyReLU", NULL, NULL, lmx_lrelu_param, act_type, "elu", LMX_LRELU_ELU);
  CHOICE("LeakyReLU", NULL, NULL, lmx_lrelu_param, act_type, "prelu", LMX_LRELU_PRELU);
  CHOICE("LeakyReLU", NULL, NULL, lmx_lrelu_param, act_type, "rrelu", LMX_LRELU_RRELU);
  CHOICE("LeakyReLU", NULL, NULL, lmx_lrelu_param, act_type, "selu", LMX_LRELU_SELU);
  CHOICE("LeakyReLU", NULL, NULL, lmx_lrelu_param, act_type, "gelu", LMX_LRELU_GELU);
  CHOICE("SoftmaxActivation", NULL, NULL, lmx_smact_param, mode, "instance", LMX_SMACT_INSTANCE);
  CHOICE("SoftmaxActivation", NULL, NULL, lmx_smact_param, mode, "channel", LMX_SMACT_CHANNEL);
  CHOICE("SoftmaxOutput", NULL, NULL, lmx_smo_param, normalization, "null", LMX_NORM_NULL);
  CHOICE("SoftmaxOutput", NULL, NULL, lmx_smo_param, normalization, "batch", LMX_NORM_BATCH);
  CHOICE("SoftmaxOutput", NULL, NULL, lmx_smo_param, normalization, "valid", LMX_NORM_VALID);
  CHOICE("MakeLoss", NULL, NULL, lmx_makeloss_param, normalization, "valid", LMX_NORM_VALID);
  CHOICE("Pooling", "kernel", "(2,2)", lmx_pool_param, pool_type, "max", LMX_POOLT_MAX);
  CHOICE("Pooling", "kernel", "(2,2)", lmx_pool_param, pool_type, "avg", LMX_POOLT_AVG);
  CHOICE("Pooling", "kernel", "(2,2)", lmx_pool_param, pool_type, "sum", LMX_POOLT_SUM);
  CHOICE("Pooling", "kernel", "(2,2)", lmx_pool_param, pool_type, "lp", LMX_POOLT_LP);
  CHOICE("Pooling", "kernel", "(2,2)", lmx_pool_param, pooling_convention, "valid",
         LMX_POOLC_VALID);
  CHOICE("Pooling", "kernel", "(2,2)", lmx_pool_param, pooling_convention, "full",
         LMX_POOLC_FULL);
  CHOICE("Pooling", "kernel", "(2,2)", lmx_pool_param, pooling_convention, "same",
         LMX_POOLC_SAME);
  CHOICE("Dropout", NULL, NULL, lmx_dropout_param, mode, "training", LMX_DROPOUT_TRAINING);
  CHOICE("Dropout", NULL, NULL, lmx_dropout_param, mode, "always", LMX_DROPOUT_ALWAYS);
  CHOICE("take", NULL, NULL, lmx_take_param, mode, "raise", LMX_TAKE_RAISE);
  CHOICE("take", NULL, NULL, lmx_take_param, mode, "wrap", LMX_TAKE_WRAP);
  CHOICE("take", NULL, NULL, lmx_take_param, mode, "clip", LMX_TAKE_CLIP);
  CHOICE("RNN", "state_size", "4", lmx_rnn_param, mode, "rnn_relu", LMX_RNNM_RNN_RELU);
  CHOICE("RNN", "state_size", "4", lmx_rnn_param, mode, "rnn_tanh", LMX_RNNM_RNN_TANH);
  CHOICE("RNN", "state_size", "4", lmx_rnn_param, mode, "lstm", LMX_RNNM_LSTM);
  CHOICE("RNN", "state_size", "4", lmx_rnn_param, mode, "gru", LMX_RNNM_GRU);
}

/* Defaults come from the field table into the typed struct. */
static void test_typed_defaults(void) {
  const lmx_op *op = lmx_op_find("FullyConnected");
  const char *k[] = {"num_hidden"}, *v[] = {"7"};
  void *p = NULL;
  CHECK(lmx_op_params_parse(op, NULL, k, v, 1, &p) == LMX_OK);
  const lmx_fc_param *fc = p;
  CHECK(fc && fc->num_hidden == 7 && fc->no_bias == 0 && fc->flatten == 1);
  lmx_op_params_free(op, p);
  op = lmx_op_find("BatchNorm");
  CHECK(lmx_op_params_parse(op, NULL, NULL, NULL, 0, &p) == LMX_OK);
  const lmx_bn_param *bn = p;
  CHECK(bn && fabs(bn->eps - 1e-3) < 1e-12 && fabs(bn->momentum - 0.9) < 1e-12 &&
        bn->fix_gamma == 1 && bn->axis == 1);
  lmx_op_params_free(op, p);
}

static void test_cpu_primitives(void) {
  const lmx_device_ops *d = &lmx_cpu_device;
  float y[5], x[5] = {1, 2, 3, 4, 5}, z[5] = {10, 20, 30, 40, 50};
  CHECK(lmx_device_fill(d, 0, y, LMX_FLOAT32, 5, 2.5) == LMX_OK && y[0] == 2.5f && y[4] == 2.5f);
  CHECK(lmx_device_add(d, 0, LMX_FLOAT32, 5, y, x) == LMX_OK && y[0] == 3.5f && y[4] == 7.5f);
  int32_t iy[3] = {1, 2, 3}, ix[3] = {10, 20, 30};
  CHECK(lmx_device_add(d, 0, LMX_INT32, 3, iy, ix) == LMX_OK && iy[0] == 11 && iy[2] == 33);
  const void *xs[2] = {x, z};
  CHECK(lmx_device_sum_n(d, 0, LMX_FLOAT32, 5, y, xs, 2, 0) == LMX_OK && y[1] == 22.0f);
  CHECK(lmx_device_sum_n(d, 0, LMX_FLOAT32, 5, y, xs, 2, 1) == LMX_OK && y[1] == 44.0f);
  const void *xin[2] = {y, x}; /* in place: y = y + x */
  CHECK(lmx_device_sum_n(d, 0, LMX_FLOAT32, 5, y, xin, 2, 0) == LMX_OK && y[1] == 46.0f);
  double dd[5];
  CHECK(lmx_device_convert(d, 0, dd, LMX_FLOAT64, x, LMX_FLOAT32, 5) == LMX_OK && dd[4] == 5.0);
  int64_t os[2] = {2, 2}, as[2] = {2, 1}, bs[2] = {1, 2};
  float a[2] = {1, 2}, b[2] = {10, 20}, o[4];
  CHECK(lmx_device_binary(d, 0, LMX_BIN_ADD, LMX_FLOAT32, 2, os, o, as, a, bs, b) == LMX_OK &&
        o[0] == 11 && o[1] == 21 && o[2] == 12 && o[3] == 22);
  CHECK(lmx_device_scalar(d, 0, LMX_BIN_SUB, LMX_FLOAT32, 2, o, a, 1.0, 1) == LMX_OK &&
        o[0] == 0 && o[1] == -1);
  float A[4] = {1, 2, 3, 4}, B[4] = {1, 0, 0, 1}, C[4];
  CHECK(lmx_device_gemm(d, 0, LMX_FLOAT32, 0, 0, 2, 2, 2, 1.0, A, B, 0.0, C) == LMX_OK &&
        C[0] == 1 && C[3] == 4);
  CHECK(lmx_device_gemm(d, 0, LMX_INT32, 0, 0, 1, 1, 1, 1.0, ix, ix, 0.0, iy) == LMX_ERR_DTYPE);
  CHECK(strstr(lmx_errmsg(), "cpu(0): gemm: dtype int32") != NULL);
  CHECK(lmx_device_stream(d, 0) == NULL);

  /* A table without primitives: every wrapper reports it, naming the device. */
  lmx_device_ops bare = {.name = "gpu"};
  CHECK(lmx_device_fill(&bare, 3, y, LMX_FLOAT32, 5, 0.0) == LMX_ERR_UNSUPPORTED);
  CHECK(strcmp(lmx_errmsg(), "fill: not supported on gpu(3) in this build") == 0);
  CHECK(lmx_device_add(&bare, 0, LMX_FLOAT32, 5, y, x) == LMX_ERR_UNSUPPORTED);
  CHECK(lmx_device_sum_n(&bare, 0, LMX_FLOAT32, 5, y, xs, 2, 0) == LMX_ERR_UNSUPPORTED);
  CHECK(lmx_device_convert(&bare, 0, dd, LMX_FLOAT64, x, LMX_FLOAT32, 5) == LMX_ERR_UNSUPPORTED);
  CHECK(lmx_device_binary(&bare, 0, 0, LMX_FLOAT32, 2, os, o, as, a, bs, b) ==
        LMX_ERR_UNSUPPORTED);
  CHECK(lmx_device_scalar(&bare, 0, 0, LMX_FLOAT32, 2, o, a, 1.0, 0) == LMX_ERR_UNSUPPORTED);
  CHECK(lmx_device_gemm(&bare, 0, LMX_FLOAT32, 0, 0, 2, 2, 2, 1.0, A, B, 0.0, C) ==
        LMX_ERR_UNSUPPORTED);
  CHECK(strcmp(lmx_errmsg(), "gemm: not supported on gpu(0) in this build") == 0);
  CHECK(lmx_device_fill(&bare, 0, y, LMX_FLOAT32, 0, 0.0) == LMX_OK); /* n = 0: no-op */
  CHECK(lmx_device_stream(&bare, 0) == NULL);
}

/* Counter-based draws: consecutive keys after a seed, the same after reseeding. */
static void test_rng_keys(void) {
  uint64_t s, o1, o2, o3;
  lmx_rng_seed(42);
  lmx_rng_device_key(10, &s, &o1);
  lmx_rng_device_key(5, &s, &o2);
  CHECK(s == 42 && o1 == 0 && o2 == 10);
  lmx_rng_seed(42);
  lmx_rng_device_key(1, &s, &o3);
  CHECK(s == 42 && o3 == 0);
  CHECK(lmx_cpu_device.random == NULL); /* the CPU draws from the global generator */
}

int main(void) {
  test_tables();
  test_rng_keys();
  test_choice_enums();
  test_typed_defaults();
  test_cpu_primitives();
  return check_summary();
}
