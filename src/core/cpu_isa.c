/* cpu_isa.c — what the CPU can run: feature detection (cpuid, xgetbv), the choice of
 * OpenBLAS kernels from those features, and which clone of luamx's own loops runs.
 *
 * Kernels are chosen from features, never from a list of CPU models: a BLAS's model
 * table always lags the hardware (Debian 12's OpenBLAS 0.3.21 runs its SSE3 "Prescott"
 * kernels on an AVX-512 Xeon of family 6 model 207 it does not know, 3.5-5x slower).
 *
 * This file is compiled twice: into libluamx (the public API of src/luamx.h) and alone
 * into libluamx_cpu.so, which depends on nothing but libc. The Lua module loads the small
 * one first, decides, sets OPENBLAS_CORETYPE, and only then loads libluamx: OpenBLAS
 * reads the variable once, in its constructor, when libluamx pulls it in. So there is
 * one implementation of the detection and of the choice, used by both.
 *
 * Invariants: lmx_blas_coretype_for is pure (its result depends on its argument only,
 * so specs feed it synthetic feature sets). A feature bit means usable: for AVX and
 * AVX-512 the OS must also save the ymm/zmm state (XCR0), as GCC's own ifunc resolver
 * requires, so the choice never picks kernels the OS would fault on.
 */
#include <stddef.h>
#include <stdint.h>

#include "../luamx.h"
#ifndef LMX_CPU_STANDALONE
#include "status.h"
#endif

#define BIT(f) ((uint64_t)1 << (f))

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static uint64_t xgetbv0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

/* Features from cpuid leaves 1 and 7 (subleaves 0 and 1), masked by XCR0. */
static uint64_t detect(void) {
  unsigned a = 0, b = 0, c = 0, d = 0, max = __get_cpuid_max(0, NULL);
  uint64_t f = 0;
  if (max < 1 || !__get_cpuid(1, &a, &b, &c, &d)) return 0;
  if (c & (1u << 0)) f |= BIT(LMX_CPU_SSE3);
  if (c & (1u << 9)) f |= BIT(LMX_CPU_SSSE3);
  if (c & (1u << 19)) f |= BIT(LMX_CPU_SSE4_1);
  if (c & (1u << 20)) f |= BIT(LMX_CPU_SSE4_2);
  int osxsave = (c >> 27) & 1;
  uint64_t ymm_family = 0;
  if (c & (1u << 28)) ymm_family |= BIT(LMX_CPU_AVX);
  if (c & (1u << 29)) ymm_family |= BIT(LMX_CPU_F16C);
  if (c & (1u << 12)) ymm_family |= BIT(LMX_CPU_FMA);

  uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  /* bits 1, 2: xmm and ymm; 5, 6, 7: opmask, zmm0-15 upper halves, zmm16-31;
   * 17, 18: tile configuration and tile data */
  int os_ymm = (xcr0 & 0x6) == 0x6, os_zmm = os_ymm && (xcr0 & 0xe0) == 0xe0;
  int os_amx = (xcr0 & 0x60000) == 0x60000;

  uint64_t zmm_family = 0, amx_family = 0;
  if (max >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    if (b & (1u << 5)) ymm_family |= BIT(LMX_CPU_AVX2);
    if (b & (1u << 16)) zmm_family |= BIT(LMX_CPU_AVX512F);
    if (b & (1u << 17)) zmm_family |= BIT(LMX_CPU_AVX512DQ);
    if (b & (1u << 28)) zmm_family |= BIT(LMX_CPU_AVX512CD);
    if (b & (1u << 30)) zmm_family |= BIT(LMX_CPU_AVX512BW);
    if (b & (1u << 31)) zmm_family |= BIT(LMX_CPU_AVX512VL);
    if (c & (1u << 11)) zmm_family |= BIT(LMX_CPU_AVX512_VNNI);
    if (d & (1u << 23)) zmm_family |= BIT(LMX_CPU_AVX512_FP16);
    if (d & (1u << 22)) amx_family |= BIT(LMX_CPU_AMX_BF16);
    if (d & (1u << 24)) amx_family |= BIT(LMX_CPU_AMX_TILE);
    if (d & (1u << 25)) amx_family |= BIT(LMX_CPU_AMX_INT8);
    unsigned sub = a; /* highest subleaf of leaf 7 */
    if (sub >= 1) {
      __cpuid_count(7, 1, a, b, c, d);
      if (a & (1u << 4)) ymm_family |= BIT(LMX_CPU_AVX_VNNI);
      if (a & (1u << 5)) zmm_family |= BIT(LMX_CPU_AVX512_BF16);
    }
  }
  if (os_ymm) f |= ymm_family | BIT(LMX_CPU_OS_YMM);
  if (os_zmm) f |= zmm_family | BIT(LMX_CPU_OS_ZMM);
  if (os_amx) f |= amx_family | BIT(LMX_CPU_OS_AMX);
  return f;
}
#else
static uint64_t detect(void) { return 0; }
#endif

int lmx_cpu_features(uint64_t *features) {
#ifdef LMX_CPU_STANDALONE
  if (!features) return LMX_ERR_ARG;
#else
  lmx_clear_error();
  if (!features) return lmx_fail(LMX_ERR_ARG, "lmx_cpu_features: argument 'features' must not be NULL");
#endif
  *features = detect();
  return LMX_OK;
}

static const char *const g_names[] = {
#define LMX_CPU_FEATURE_NAME_(name, bit, text) [bit] = text,
    LMX_CPU_FEATURE_LIST(LMX_CPU_FEATURE_NAME_)
#undef LMX_CPU_FEATURE_NAME_
};

const char *lmx_cpu_feature_name(int feature) {
  if (feature < 0 || feature >= LMX_CPU_FEATURE_COUNT_) return NULL;
  return g_names[feature];
}

/* The rules, best first: the first whose features are all present wins. OpenBLAS's
 * SkylakeX and Cooperlake sgemm kernels are the same AVX-512 code (Cooperlake adds the
 * bfloat16 ones); Haswell's are AVX2 + FMA, Sandybridge's AVX. */
static const struct {
  uint64_t needs;
  const char *coretype;
} g_rules[] = {
    {BIT(LMX_CPU_AVX512F) | BIT(LMX_CPU_AVX512CD) | BIT(LMX_CPU_AVX512BW) |
         BIT(LMX_CPU_AVX512DQ) | BIT(LMX_CPU_AVX512VL) | BIT(LMX_CPU_AVX512_BF16),
     "Cooperlake"},
    {BIT(LMX_CPU_AVX512F) | BIT(LMX_CPU_AVX512CD) | BIT(LMX_CPU_AVX512BW) |
         BIT(LMX_CPU_AVX512DQ) | BIT(LMX_CPU_AVX512VL),
     "SkylakeX"},
    {BIT(LMX_CPU_AVX2) | BIT(LMX_CPU_FMA), "Haswell"},
    {BIT(LMX_CPU_AVX), "Sandybridge"},
};

const char *lmx_blas_coretype_for(uint64_t features) {
  for (size_t i = 0; i < sizeof g_rules / sizeof g_rules[0]; i++)
    if ((features & g_rules[i].needs) == g_rules[i].needs) return g_rules[i].coretype;
  return NULL;
}

const char *lmx_cpu_kernel_clone(void) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  /* the order of kernels/cpu/cpu_par.h's target_clones, as the resolver tests it */
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "avx512f";
  if (__builtin_cpu_supports("avx2")) return "avx2";
  return "default";
#else
  return "none";
#endif
}
