/* math_fns.h — the formulas of the math family (ops14a: the unary functions MXNet 1.9
 * has beyond elementwise.c's, the elementwise / scalar / broadcast comparisons, logical
 * ops, hypot, mod and smooth_l1), shared by the CPU (kernels/cpu/math.c) and CUDA
 * (kernels/cuda/math.cu) kernels so the two cannot drift apart.
 *
 * Every row X(NAME, expr) is one map from up to three operands a, b, c and a scalar s
 * (all of the compute type T) to one value; LMX_MF_<NAME> is its code. What the
 * operands mean depends on the row's group (the comment above it): a unary forward
 * reads a = x; a unary gradient a = head gradient g, b = x, c = y (the forward output);
 * a binary forward a = lhs, b = rhs; a binary gradient a = g, b = lhs, c = rhs; a
 * scalar forward a = x with s; a scalar gradient a = g, b = x, c = y with s.
 * The includer defines MF(f) (the function f for T: <tgmath.h>'s name in C, an
 * overloaded device wrapper in CUDA) and LMX_MF_QUAL (the qualifiers of the two helper
 * functions below) before including this file.
 * Formulas: MXNet 1.9 src/operator/mshadow_op.h (rint rounds halves down, fix toward
 * zero, mod takes the divisor's sign and is 0 for a zero divisor, logical ops and
 * comparisons give 0/1).
 */
#ifndef LMX_KERNELS_MATH_FNS_H
#define LMX_KERNELS_MATH_FNS_H

#define LMX_MF_180_PI 57.295779513082320876798154814105
#define LMX_MF_PI_180 0.017453292519943295769236907684886
#define LMX_MF_LN2 0.69314718055994530941723212145818
#define LMX_MF_LN10 2.3025850929940456840179914546844
#define LMX_MF_2_SQRTPI 1.1283791670955125738961589031215  /* 2 / sqrt(pi) */
#define LMX_MF_SQRTPI_2 0.88622692545275801364908374167057 /* sqrt(pi) / 2 */

/* MXNet's mod: the result has the divisor's sign; 0 when the divisor is 0. */
#define LMX_MF_MOD(x, y)                                                                  \
  ((y) == 0 ? (T)0                                                                        \
   : (y) < 0 ? ((x) < 0 ? -MF(fmod)(-(x), -(y))                                           \
                : (MF(fmod)((x), -(y)) != 0 ? MF(fmod)((x), -(y)) + (y) : (T)0))          \
   : ((x) < 0 ? (MF(fmod)(-(x), (y)) != 0 ? (y)-MF(fmod)(-(x), (y)) : (T)0)               \
      : MF(fmod)((x), (y))))
/* MXNet's rint: the nearer of floor and ceil, floor on a tie */
#define LMX_MF_RINT(x) ((x)-MF(floor)(x) <= MF(ceil)(x) - (x) ? MF(floor)(x) : MF(ceil)(x))
#define LMX_MF_B(v) ((v) ? (T)1 : (T)0)

#define LMX_MATH_FNS(X)                                                                   \
  /* unary forward: a = x */                                                              \
  X(LOG1P, MF(log1p)(a))                                                                  \
  X(EXPM1, MF(expm1)(a))                                                                  \
  X(LOG2, MF(log2)(a))                                                                    \
  X(LOG10, MF(log10)(a))                                                                  \
  X(CBRT, MF(cbrt)(a))                                                                    \
  X(RCBRT, 1 / MF(cbrt)(a))                                                               \
  X(DEGREES, a *(T)LMX_MF_180_PI)                                                         \
  X(RADIANS, a *(T)LMX_MF_PI_180)                                                         \
  X(TAN, MF(tan)(a))                                                                      \
  X(ARCSIN, MF(asin)(a))                                                                  \
  X(ARCCOS, MF(acos)(a))                                                                  \
  X(ARCTAN, MF(atan)(a))                                                                  \
  X(SINH, MF(sinh)(a))                                                                    \
  X(COSH, MF(cosh)(a))                                                                    \
  X(ARCSINH, MF(asinh)(a))                                                                \
  X(ARCCOSH, MF(acosh)(a))                                                                \
  X(ARCTANH, MF(atanh)(a))                                                                \
  X(ERF, MF(erf)(a))                                                                      \
  X(ERFINV, (T)lmx_mf_erfinv((double)a))                                                  \
  X(GAMMA, MF(tgamma)(a))                                                                 \
  X(GAMMALN, MF(lgamma)(a))                                                               \
  X(FIX, MF(trunc)(a))                                                                    \
  X(RINT, LMX_MF_RINT(a))                                                                 \
  X(TRUNC, MF(trunc)(a))                                                                  \
  X(SOFTSIGN, a / (1 + MF(fabs)(a)))                                                      \
  X(NOT, LMX_MF_B(a == 0))                                                                \
  /* unary gradient: a = g, b = x, c = y */                                               \
  X(LOG1P_B, a / (1 + b))                                                                 \
  X(EXPM1_B, a *MF(exp)(b))                                                               \
  X(LOG2_B, a / (b * (T)LMX_MF_LN2))                                                      \
  X(LOG10_B, a / (b * (T)LMX_MF_LN10))                                                    \
  X(CBRT_B, a / (3 * c * c))                                                              \
  X(RCBRT_B, -a / (3 * b * MF(cbrt)(b)))                                                  \
  X(DEGREES_B, a *(T)LMX_MF_180_PI)                                                       \
  X(RADIANS_B, a *(T)LMX_MF_PI_180)                                                       \
  X(TAN_B, a *(c * c + 1))                                                                \
  X(ARCSIN_B, a / MF(sqrt)(1 - b * b))                                                    \
  X(ARCCOS_B, -a / MF(sqrt)(1 - b * b))                                                   \
  X(ARCTAN_B, a / (1 + b * b))                                                            \
  X(SINH_B, a *MF(cosh)(b))                                                               \
  X(COSH_B, a *MF(sinh)(b))                                                               \
  X(ARCSINH_B, a / MF(sqrt)(b * b + 1))                                                   \
  X(ARCCOSH_B, a / MF(sqrt)(b * b - 1))                                                   \
  X(ARCTANH_B, a / (1 - b * b))                                                           \
  X(ERF_B, a *(T)LMX_MF_2_SQRTPI *MF(exp)(-b * b))                                        \
  X(ERFINV_B, a *(T)LMX_MF_SQRTPI_2 *MF(exp)(c * c))                                      \
  X(GAMMA_B, a *c *(T)lmx_mf_digamma((double)b))                                          \
  X(GAMMALN_B, a *(T)lmx_mf_digamma((double)b))                                           \
  X(SOFTSIGN_B, a / ((1 + MF(fabs)(b)) * (1 + MF(fabs)(b))))                              \
  X(ZERO, (T)0)                                                                           \
  /* binary forward: a = lhs, b = rhs */                                                  \
  X(EQ, LMX_MF_B(a == b))                                                                 \
  X(NE, LMX_MF_B(a != b))                                                                 \
  X(GT, LMX_MF_B(a > b))                                                                  \
  X(GE, LMX_MF_B(a >= b))                                                                 \
  X(LT, LMX_MF_B(a < b))                                                                  \
  X(LE, LMX_MF_B(a <= b))                                                                 \
  X(AND, LMX_MF_B(a != 0 && b != 0))                                                      \
  X(OR, LMX_MF_B(a != 0 || b != 0))                                                       \
  X(XOR, LMX_MF_B((a != 0) != (b != 0)))                                                  \
  X(HYPOT, MF(hypot)(a, b))                                                               \
  X(MOD, LMX_MF_MOD(a, b))                                                                \
  /* binary gradients: a = g, b = lhs, c = rhs */                                         \
  X(HYPOT_L, a *b / MF(hypot)(b, c))                                                      \
  X(HYPOT_R, a *c / MF(hypot)(b, c))                                                      \
  X(MOD_L, a)                                                                             \
  X(MOD_R, -a * MF(floor)(b / c))                                                         \
  /* scalar forward: a = x, with s */                                                     \
  X(AND_S, LMX_MF_B(a != 0 && s != 0))                                                    \
  X(OR_S, LMX_MF_B(a != 0 || s != 0))                                                     \
  X(XOR_S, LMX_MF_B((a != 0) != (s != 0)))                                                \
  X(HYPOT_S, MF(hypot)(a, s))                                                             \
  X(MOD_S, LMX_MF_MOD(a, s))                                                              \
  X(RMOD_S, LMX_MF_MOD(s, a))                                                             \
  X(SMOOTH_L1, a > 1 / (s * s)    ? a - (T)0.5 / (s * s)                                  \
               : a < -1 / (s * s) ? -a - (T)0.5 / (s * s)                                 \
                                  : (T)0.5 * a * a * s * s)                               \
  /* scalar gradients: a = g, b = x, c = y, with s */                                     \
  X(HYPOT_S_B, a *b / MF(hypot)(b, s))                                                    \
  X(RMOD_S_B, -a * MF(floor)(s / b))                                                      \
  X(SMOOTH_L1_B, b > 1 / (s * s) ? a : b < -1 / (s * s) ? -a : a * s * s * b)            \
  /* reductions (nansum, nanprod, moments): a = x or g, b = x, c = y or mean, with s */   \
  X(NAN_TO_0, a != a ? (T)0 : a)                                                          \
  X(NAN_TO_1, a != a ? (T)1 : a)                                                          \
  X(NANSUM_B, b != b ? (T)0 : a)                                                          \
  X(NANPROD_B, b != b ? (T)0 : a * c / b)                                                 \
  X(SQ_DIFF, (a - b) * (a - b))                                                           \
  X(SCALE, a *s)                                                                          \
  X(VAR_B, a *(b - c) * (2 * s))                                                          \
  /* hard_sigmoid: clamp(a + s, 0, 1) (a = alpha x, s = beta); gradient a = g, c = y */   \
  X(CLAMP01_PLUS, a + s < 0 ? (T)0 : a + s > 1 ? (T)1 : a + s)                             \
  X(HSIG_B, c > 0 && c < 1 ? a * s : (T)0)

#define LMX_MF_ENUM(NAME, EXPR) LMX_MF_##NAME,
enum { LMX_MATH_FNS(LMX_MF_ENUM) LMX_NUM_MF };
#undef LMX_MF_ENUM

#ifdef LMX_MF_QUAL
/* erfinv: Giles' single-precision approximation ("Approximating the erfinv function",
 * GPU Computing Gems, 2011) refined by two Newton steps on erf(x) - y, which brings it
 * to double precision; ±1 give ±inf, |y| > 1 and NaN give NaN. */
LMX_MF_QUAL double lmx_mf_erfinv(double y) {
  if (!(y >= -1 && y <= 1)) return (y - y) / (y - y); /* NaN */
  if (y == 1 || y == -1) return y > 0 ? (double)INFINITY : -(double)INFINITY;
  double w = -log((1.0 - y) * (1.0 + y)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double x = p * y;
  for (int k = 0; k < 2; k++) /* Newton: erf'(x) = 2/sqrt(pi) exp(-x^2) */
    x -= (erf(x) - y) / (LMX_MF_2_SQRTPI * exp(-x * x));
  return x;
}

/* digamma (the gradient of gammaln): the reflection formula below 0, the recurrence
 * psi(x) = psi(x + 1) - 1/x up to x >= 6, then the asymptotic series; poles give NaN. */
LMX_MF_QUAL double lmx_mf_digamma(double x) {
  double r = 0;
  if (x <= 0) {
    if (x == floor(x)) return (x - x) / (x - x);
    /* psi(1 - x) - psi(x) = pi cot(pi x) */
    r = -3.14159265358979323846 / tan(3.14159265358979323846 * x);
    x = 1 - x;
  }
  while (x < 6) {
    r -= 1 / x;
    x += 1;
  }
  double f = 1 / (x * x);
  double t = f * (-1.0 / 12 + f * (1.0 / 120 + f * (-1.0 / 252 + f * (1.0 / 240 +
             f * (-1.0 / 132 + f * (691.0 / 32760 - f / 12))))));
  return r + log(x) - 0.5 / x + t;
}
#endif

#endif
