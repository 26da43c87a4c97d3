/*
 * xdap's kernel library: the scalar C functions behind xdap.kernels.
 *
 * The kernel-configs (.cfg) list these functions as prototypes; xdap.codegen
 * turns each into gumath kernels (`... * T -> ... * R` and the var form).
 * Everything is `static inline` so that the generated loops inline it and
 * gcc vectorises them; the math functions are declared SIMD-enabled
 * (glibc's libmvec provides the vector variants) -- the declarations glibc
 * itself makes only under -ffast-math, which we do not use: the library is
 * compiled with -O3 -fno-math-errno and keeps IEEE NaN/inf semantics.
 *
 * Type rules (gumath's: exact conversions only):
 *   math on bool, int8, int16, uint8, uint16 -> float32; on int32, uint32
 *   -> float64; 64-bit integers have no exact float type: no kernel.
 *   integer add/subtract/multiply/negative/absolute wrap (two's
 *   complement), computed in unsigned arithmetic (no undefined behaviour).
 *   integer fmod(a, 0) = 0 and fmod(a, -1) = 0 (C's a % -1 traps for the
 *   minimum value); integer power with a negative exponent = 1 / a**-b
 *   truncated: 1 for a = 1, +-1 for a = -1, else 0.
 *   rounding (ceil, floor, trunc, round, nearbyint) of integers and bool is
 *   the identity, in the same dtype.  round() rounds halves away from zero,
 *   nearbyint() to even (NumPy's rint).
 *   maximum/minimum propagate NaN (as NumPy's maximum/minimum).
 */
#ifndef XDAP_KERNELS_H
#define XDAP_KERNELS_H

#include <complex.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include "ndtypes.h"

/* ------------------------------------------------------------------------ */
/* SIMD declarations of the libm functions (vector variants in libmvec)      */
/* ------------------------------------------------------------------------ */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__FAST_MATH__) && !defined(XDAP_NO_LIBMVEC)
#define XK_SIMD __attribute__((__simd__("notinbranch")))
#define XK_VEC1(F) XK_SIMD extern double F(double); XK_SIMD extern float F##f(float);
#define XK_VEC2(F) XK_SIMD extern double F(double, double); XK_SIMD extern float F##f(float, float);
XK_VEC1(sin) XK_VEC1(cos) XK_VEC1(tan) XK_VEC1(asin) XK_VEC1(acos) XK_VEC1(atan)
XK_VEC1(sinh) XK_VEC1(cosh) XK_VEC1(tanh) XK_VEC1(asinh) XK_VEC1(acosh) XK_VEC1(atanh)
XK_VEC1(exp) XK_VEC1(exp2) XK_VEC1(expm1) XK_VEC1(log) XK_VEC1(log2) XK_VEC1(log10)
XK_VEC1(log1p) XK_VEC1(cbrt) XK_VEC1(erf) XK_VEC1(erfc)
XK_VEC2(pow) XK_VEC2(atan2) XK_VEC2(hypot)
#endif

typedef ndt_complex128_t xk_c128;

/* ------------------------------------------------------------------------ */
/* Unary math: floats, integers by exact conversion, complex where C has it  */
/* ------------------------------------------------------------------------ */
#define XK_MATH1(K, F64, F32) \
    static inline double xk_##K##_f64(double x) { return F64(x); } \
    static inline float xk_##K##_f32(float x) { return F32(x); } \
    static inline float xk_##K##_b(bool x) { return F32((float)x); } \
    static inline float xk_##K##_i8(int8_t x) { return F32((float)x); } \
    static inline float xk_##K##_i16(int16_t x) { return F32((float)x); } \
    static inline float xk_##K##_u8(uint8_t x) { return F32((float)x); } \
    static inline float xk_##K##_u16(uint16_t x) { return F32((float)x); } \
    static inline double xk_##K##_i32(int32_t x) { return F64((double)x); } \
    static inline double xk_##K##_u32(uint32_t x) { return F64((double)x); }
/* The Array API's complex tanh at a real part of +-inf and a finite imaginary
   part y: +-1 + 0i with the sign of y (C99 Annex G and NumPy give the zero the
   sign of sin(2y)). */
static inline xk_c128 xk_ctanh(xk_c128 z) {
    if (isinf(creal(z)) && isfinite(cimag(z)))
        return CMPLX(copysign(1.0, creal(z)), copysign(0.0, cimag(z)));
    return ctanh(z);
}

#define XK_CMATH1(K, C) \
    static inline xk_c128 xk_##K##_c128(xk_c128 x) { return C(x); }

XK_MATH1(exp, exp, expf)         XK_CMATH1(exp, cexp)
XK_MATH1(exp2, exp2, exp2f)
XK_MATH1(expm1, expm1, expm1f)
XK_MATH1(log, log, logf)         XK_CMATH1(log, clog)
XK_MATH1(log2, log2, log2f)
XK_MATH1(log10, log10, log10f)
XK_MATH1(log1p, log1p, log1pf)
XK_MATH1(sqrt, sqrt, sqrtf)      XK_CMATH1(sqrt, csqrt)
XK_MATH1(cbrt, cbrt, cbrtf)
XK_MATH1(sin, sin, sinf)         XK_CMATH1(sin, csin)
XK_MATH1(cos, cos, cosf)         XK_CMATH1(cos, ccos)
XK_MATH1(tan, tan, tanf)         XK_CMATH1(tan, ctan)
XK_MATH1(asin, asin, asinf)      XK_CMATH1(asin, casin)
XK_MATH1(acos, acos, acosf)      XK_CMATH1(acos, cacos)
XK_MATH1(atan, atan, atanf)      XK_CMATH1(atan, catan)
XK_MATH1(sinh, sinh, sinhf)      XK_CMATH1(sinh, csinh)
XK_MATH1(cosh, cosh, coshf)      XK_CMATH1(cosh, ccosh)
XK_MATH1(tanh, tanh, tanhf)      XK_CMATH1(tanh, xk_ctanh)
XK_MATH1(asinh, asinh, asinhf)   XK_CMATH1(asinh, casinh)
XK_MATH1(acosh, acosh, acoshf)   XK_CMATH1(acosh, cacosh)
XK_MATH1(atanh, atanh, atanhf)   XK_CMATH1(atanh, catanh)
XK_MATH1(erf, erf, erff)
XK_MATH1(erfc, erfc, erfcf)
XK_MATH1(lgamma, lgamma, lgammaf)
XK_MATH1(tgamma, tgamma, tgammaf)

/* ------------------------------------------------------------------------ */
/* Rounding: floats; integers and bool unchanged (exact, same dtype)         */
/* ------------------------------------------------------------------------ */
#define XK_ROUND(K, F64, F32) \
    static inline double xk_##K##_f64(double x) { return F64(x); } \
    static inline float xk_##K##_f32(float x) { return F32(x); } \
    static inline bool xk_##K##_b(bool x) { return x; } \
    static inline int8_t xk_##K##_i8(int8_t x) { return x; } \
    static inline int16_t xk_##K##_i16(int16_t x) { return x; } \
    static inline int32_t xk_##K##_i32(int32_t x) { return x; } \
    static inline int64_t xk_##K##_i64(int64_t x) { return x; } \
    static inline uint8_t xk_##K##_u8(uint8_t x) { return x; } \
    static inline uint16_t xk_##K##_u16(uint16_t x) { return x; } \
    static inline uint32_t xk_##K##_u32(uint32_t x) { return x; } \
    static inline uint64_t xk_##K##_u64(uint64_t x) { return x; }

XK_ROUND(ceil, ceil, ceilf)
XK_ROUND(floor, floor, floorf)
XK_ROUND(trunc, trunc, truncf)
XK_ROUND(round, round, roundf)
XK_ROUND(nearbyint, nearbyint, nearbyintf)

/* ------------------------------------------------------------------------ */
/* absolute (= fabs) and negative                                            */
/* ------------------------------------------------------------------------ */
/* Signed integers: computed in unsigned arithmetic, so the minimum value
   wraps to itself (as in NumPy) instead of being undefined behaviour. */
#define XK_SIGNED_UNARY(S, T, UT) \
    static inline T xk_absolute_##S(T x) { return x < 0 ? (T)(0u - (UT)x) : x; } \
    static inline T xk_negative_##S(T x) { return (T)(0u - (UT)x); }
#define XK_UNSIGNED_UNARY(S, T) \
    static inline T xk_absolute_##S(T x) { return x; } \
    static inline T xk_negative_##S(T x) { return (T)(0u - x); }

XK_SIGNED_UNARY(i8, int8_t, uint32_t)
XK_SIGNED_UNARY(i16, int16_t, uint32_t)
XK_SIGNED_UNARY(i32, int32_t, uint32_t)
XK_SIGNED_UNARY(i64, int64_t, uint64_t)
XK_UNSIGNED_UNARY(u8, uint8_t)
XK_UNSIGNED_UNARY(u16, uint16_t)
XK_UNSIGNED_UNARY(u32, uint32_t)
XK_UNSIGNED_UNARY(u64, uint64_t)
static inline bool xk_absolute_b(bool x) { return x; }
static inline float xk_absolute_f32(float x) { return fabsf(x); }
static inline double xk_absolute_f64(double x) { return fabs(x); }
static inline double xk_absolute_c128(xk_c128 x) { return cabs(x); }
static inline float xk_negative_f32(float x) { return -x; }
static inline double xk_negative_f64(double x) { return -x; }
static inline xk_c128 xk_negative_c128(xk_c128 x) { return -x; }

/* ------------------------------------------------------------------------ */
/* Binary arithmetic                                                          */
/* ------------------------------------------------------------------------ */
/* Integers wrap: the operation runs in an unsigned type at least as wide as
   int (no signed overflow, no promotion to signed int for uint16). */
#define XK_INT_ARITH(S, T, UT) \
    static inline T xk_add_##S(T a, T b) { return (T)((UT)a + (UT)b); } \
    static inline T xk_subtract_##S(T a, T b) { return (T)((UT)a - (UT)b); } \
    static inline T xk_multiply_##S(T a, T b) { return (T)((UT)a * (UT)b); } \
    static inline T xk_maximum_##S(T a, T b) { return a > b ? a : b; } \
    static inline T xk_minimum_##S(T a, T b) { return a < b ? a : b; }
/* power by squaring; fmod with defined results for b = 0 and b = -1 */
#define XK_SIGNED_INT(S, T, UT) \
    XK_INT_ARITH(S, T, UT) \
    static inline T xk_power_##S(T a, T b) { \
        if (b < 0) { return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0); } \
        UT r = 1, x = (UT)a, e = (UT)b; \
        while (e) { if (e & 1u) { r *= x; } x *= x; e >>= 1; } \
        return (T)r; } \
    static inline T xk_fmod_##S(T a, T b) { return (b == 0 || b == -1) ? 0 : (T)(a % b); }
#define XK_UNSIGNED_INT(S, T, UT) \
    XK_INT_ARITH(S, T, UT) \
    static inline T xk_power_##S(T a, T b) { \
        UT r = 1, x = (UT)a, e = (UT)b; \
        while (e) { if (e & 1u) { r *= x; } x *= x; e >>= 1; } \
        return (T)r; } \
    static inline T xk_fmod_##S(T a, T b) { return b == 0 ? 0 : (T)(a % b); }

XK_SIGNED_INT(i8, int8_t, uint32_t)
XK_SIGNED_INT(i16, int16_t, uint32_t)
XK_SIGNED_INT(i32, int32_t, uint32_t)
XK_SIGNED_INT(i64, int64_t, uint64_t)
XK_UNSIGNED_INT(u8, uint8_t, uint32_t)
XK_UNSIGNED_INT(u16, uint16_t, uint32_t)
XK_UNSIGNED_INT(u32, uint32_t, uint32_t)
XK_UNSIGNED_INT(u64, uint64_t, uint64_t)

/* bool: add = or, multiply = and (as NumPy); maximum = or, minimum = and */
static inline bool xk_add_b(bool a, bool b) { return a | b; }
static inline bool xk_multiply_b(bool a, bool b) { return a & b; }
static inline bool xk_maximum_b(bool a, bool b) { return a | b; }
static inline bool xk_minimum_b(bool a, bool b) { return a & b; }

#define XK_FLOAT_ARITH(S, T, POW, FMOD) \
    static inline T xk_add_##S(T a, T b) { return a + b; } \
    static inline T xk_subtract_##S(T a, T b) { return a - b; } \
    static inline T xk_multiply_##S(T a, T b) { return a * b; } \
    static inline T xk_divide_##S(T a, T b) { return a / b; } \
    static inline T xk_power_##S(T a, T b) { return POW(a, b); } \
    static inline T xk_fmod_##S(T a, T b) { return FMOD(a, b); } \
    static inline T xk_maximum_##S(T a, T b) { return (isnan(a) || a > b) ? a : b; } \
    static inline T xk_minimum_##S(T a, T b) { return (isnan(a) || a < b) ? a : b; }
XK_FLOAT_ARITH(f32, float, powf, fmodf)
XK_FLOAT_ARITH(f64, double, pow, fmod)

static inline xk_c128 xk_add_c128(xk_c128 a, xk_c128 b) { return a + b; }
static inline xk_c128 xk_subtract_c128(xk_c128 a, xk_c128 b) { return a - b; }
static inline xk_c128 xk_multiply_c128(xk_c128 a, xk_c128 b) { return a * b; }
static inline xk_c128 xk_divide_c128(xk_c128 a, xk_c128 b) { return a / b; }
static inline xk_c128 xk_power_c128(xk_c128 a, xk_c128 b) { return cpow(a, b); }

/* divide, copysign, atan2, hypot on integers: exact conversion to float */
#define XK_MATH2(K, F64, F32) \
    static inline float xk_##K##_b(bool a, bool b) { return F32((float)a, (float)b); } \
    static inline float xk_##K##_i8(int8_t a, int8_t b) { return F32((float)a, (float)b); } \
    static inline float xk_##K##_i16(int16_t a, int16_t b) { return F32((float)a, (float)b); } \
    static inline float xk_##K##_u8(uint8_t a, uint8_t b) { return F32((float)a, (float)b); } \
    static inline float xk_##K##_u16(uint16_t a, uint16_t b) { return F32((float)a, (float)b); } \
    static inline double xk_##K##_i32(int32_t a, int32_t b) { return F64((double)a, (double)b); } \
    static inline double xk_##K##_u32(uint32_t a, uint32_t b) { return F64((double)a, (double)b); }
static inline double xk_div64(double a, double b) { return a / b; }
static inline float xk_div32(float a, float b) { return a / b; }
XK_MATH2(divide, xk_div64, xk_div32)
XK_MATH2(copysign, copysign, copysignf)
XK_MATH2(atan2, atan2, atan2f)
XK_MATH2(hypot, hypot, hypotf)
static inline double xk_copysign_f64(double a, double b) { return copysign(a, b); }
static inline float xk_copysign_f32(float a, float b) { return copysignf(a, b); }
static inline double xk_atan2_f64(double a, double b) { return atan2(a, b); }
static inline float xk_atan2_f32(float a, float b) { return atan2f(a, b); }
static inline double xk_hypot_f64(double a, double b) { return hypot(a, b); }
static inline float xk_hypot_f32(float a, float b) { return hypotf(a, b); }

/* ------------------------------------------------------------------------ */
/* Comparisons -> bool (IEEE: NaN compares unequal, unordered)               */
/* ------------------------------------------------------------------------ */
#define XK_CMP(S, T) \
    static inline bool xk_equal_##S(T a, T b) { return a == b; } \
    static inline bool xk_not_equal_##S(T a, T b) { return a != b; } \
    static inline bool xk_less_##S(T a, T b) { return a < b; } \
    static inline bool xk_less_equal_##S(T a, T b) { return a <= b; } \
    static inline bool xk_greater_##S(T a, T b) { return a > b; } \
    static inline bool xk_greater_equal_##S(T a, T b) { return a >= b; }
XK_CMP(b, bool)
XK_CMP(i8, int8_t) XK_CMP(i16, int16_t) XK_CMP(i32, int32_t) XK_CMP(i64, int64_t)
XK_CMP(u8, uint8_t) XK_CMP(u16, uint16_t) XK_CMP(u32, uint32_t) XK_CMP(u64, uint64_t)
XK_CMP(f32, float) XK_CMP(f64, double)
static inline bool xk_equal_c128(xk_c128 a, xk_c128 b) { return a == b; }
static inline bool xk_not_equal_c128(xk_c128 a, xk_c128 b) { return a != b; }

#endif /* XDAP_KERNELS_H */
