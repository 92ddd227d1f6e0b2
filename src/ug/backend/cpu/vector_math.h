// Tells the compiler that glibc's libmvec has vector versions of these libm functions, so
// loops over them vectorise (expf -> _ZGVdN8v_expf under AVX2). glibc's own headers only
// say so under -ffast-math, which we do not use.
#pragma once

// GCC's simd attribute; clang (which also defines __GNUC__) has no such attribute.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define UG_SIMD_DECL __attribute__((simd("notinbranch")))
extern "C" {
UG_SIMD_DECL float expf(float);
UG_SIMD_DECL double exp(double);
UG_SIMD_DECL float exp2f(float);
UG_SIMD_DECL double exp2(double);
UG_SIMD_DECL float expm1f(float);
UG_SIMD_DECL double expm1(double);
UG_SIMD_DECL float logf(float);
UG_SIMD_DECL double log(double);
UG_SIMD_DECL float log2f(float);
UG_SIMD_DECL double log2(double);
UG_SIMD_DECL float log10f(float);
UG_SIMD_DECL double log10(double);
UG_SIMD_DECL float log1pf(float);
UG_SIMD_DECL double log1p(double);
UG_SIMD_DECL float sinf(float);
UG_SIMD_DECL double sin(double);
UG_SIMD_DECL float cosf(float);
UG_SIMD_DECL double cos(double);
UG_SIMD_DECL float tanf(float);
UG_SIMD_DECL double tan(double);
UG_SIMD_DECL float tanhf(float);
UG_SIMD_DECL double tanh(double);
UG_SIMD_DECL float erff(float);
UG_SIMD_DECL double erf(double);
UG_SIMD_DECL float powf(float, float);
UG_SIMD_DECL double pow(double, double);
UG_SIMD_DECL float atan2f(float, float);
UG_SIMD_DECL double atan2(double, double);
}
#undef UG_SIMD_DECL
#endif
