/*
 * vmath.h: vectorized float math for the kernels: exp, erf, tanh, sigmoid,
 * the erf form of GELU, and a softmax of one contiguous row.
 *
 *     #include "vmath.h"
 *     rt_vexp(x, y, n);              // y[i] = expf(x[i]); y may be x
 *     rt_vgelu_erf(c, c, n);         // GELU in place (a GEMM epilogue)
 *     rt_vsoftmax(row, len);         // one attention row in place
 *
 *     __m256 e = rt_exp8(v);         // the 8-wide building blocks, for a
 *     __m256 g = rt_gelu_erf8(v);    // kernel's own loop (any AVX2 file)
 *
 * Accuracy against glibc's expf/erff/tanhf over the float range: at most
 * about 2 ulp (relative error <= 3e-7) for exp, tanh and sigmoid, and
 * <= 4e-7 relative for erf.  GELU's absolute error is under 5e-7 (about
 * 1 ulp of its value for x > -2); for x below about -3, where GELU is under
 * 4e-3 in magnitude, the erfc approximation's relative error grows (to
 * about 2e-4 of those small values).  Special values follow libm: NaN stays NaN, exp(-inf)
 * = 0, exp(+inf) = inf, erf(+-inf) = +-1, tanh(+-inf) = +-1.  Results that
 * libm gives as subnormals (exp(x) for x < -87.3) are flushed to 0.
 *
 * The array functions use AVX2 + FMA (the x86-64-v3 baseline the whole
 * runtime is built for); the inline blocks are available to any file
 * compiled with at least those flags.  Every function is pure and
 * thread-safe; y may alias x exactly (not partially).
 */
#ifndef RUNTIME_OPS_VMATH_H
#define RUNTIME_OPS_VMATH_H

#include <stddef.h>

/* y[i] = f(x[i]) for i < n. */
void rt_vexp(const float *x, float *y, size_t n);
void rt_verf(const float *x, float *y, size_t n);
void rt_vtanh(const float *x, float *y, size_t n);
void rt_vsigmoid(const float *x, float *y, size_t n);
/* y = x * 0.5 * (1 + erf(x / sqrt(2))). */
void rt_vgelu_erf(const float *x, float *y, size_t n);
/* Softmax of x[0..n-1] in place: max subtracted first (no finite input
 * overflows); a row of all -inf or with a NaN gives NaN, as the reference
 * Softmax kernel does.  n may be 0. */
void rt_vsoftmax(float *x, size_t n);
/* The largest cell of x[0..n-1] (n >= 1); NaNs are skipped. */
float rt_vmax(const float *x, size_t n);

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

/* expf of 8 lanes.  2^n * p(r) with n = round(x / ln 2) and a degree-6
 * polynomial on |r| <= ln2 / 2; 2^n is built as 2^(n-1) * 2 so that
 * exp(88.7) stays finite. */
static inline __m256 rt_exp8(__m256 x)
{
	const __m256 hi = _mm256_set1_ps(88.7228394f), lo = _mm256_set1_ps(-87.3365448f);
	__m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
	__m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
	                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
	__m256 p = _mm256_set1_ps(1.9875691500e-4f);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
	p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
	__m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(126)), 23);
	__m256 y = _mm256_mul_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), _mm256_set1_ps(2.0f));
	y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
	y = _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
	return _mm256_blendv_ps(y, _mm256_add_ps(x, x), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* The Taylor series of erf(x) / x in z = x^2, exact to 1e-10 for |x| <= 1. */
static inline __m256 rt_erf_small8(__m256 x)
{
	__m256 z = _mm256_mul_ps(x, x);
	__m256 p = _mm256_set1_ps(-1.229055530e-09f);
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.480719282e-08f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-1.636584469e-07f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.646211437e-06f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-1.492565036e-05f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.205533298e-04f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-8.548327023e-04f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(5.223977625e-03f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-2.686617065e-02f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.128379167e-01f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.761263890e-01f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.128379167e+00f));
	return _mm256_mul_ps(p, x);
}

/* erfc(|x|) for |x| >= 1 (Abramowitz and Stegun 7.1.26: absolute error
 * under 1.5e-7, which is under 2e-7 of erf there); clamped so that large
 * |x| gives exactly 0. */
static inline __m256 rt_erfc_big8(__m256 ax)
{
	ax = _mm256_min_ps(ax, _mm256_set1_ps(9.0f));
	__m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f),
	                         _mm256_fmadd_ps(ax, _mm256_set1_ps(0.3275911f), _mm256_set1_ps(1.0f)));
	__m256 p = _mm256_set1_ps(1.061405429f);
	p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
	p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
	p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
	p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
	p = _mm256_mul_ps(p, t);
	__m256 e = rt_exp8(_mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), ax), ax));
	return _mm256_mul_ps(p, e);
}

static inline __m256 rt_erf8(__m256 x)
{
	const __m256 sign = _mm256_set1_ps(-0.0f);
	__m256 ax = _mm256_andnot_ps(sign, x);
	__m256 big = _mm256_sub_ps(_mm256_set1_ps(1.0f), rt_erfc_big8(ax));
	big = _mm256_or_ps(big, _mm256_and_ps(x, sign));
	__m256 y = _mm256_blendv_ps(rt_erf_small8(x), big,
	                            _mm256_cmp_ps(ax, _mm256_set1_ps(1.0f), _CMP_GT_OQ));
	return _mm256_blendv_ps(y, _mm256_add_ps(x, x), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* x * 0.5 * (1 + erf(x / sqrt 2)); for large negative x, 1 + erf is taken
 * as erfc(|u|) directly, so it keeps its relative accuracy. */
static inline __m256 rt_gelu_erf8(__m256 x)
{
	const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
	__m256 u = _mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f));
	__m256 au = _mm256_andnot_ps(sign, u);
	__m256 q = rt_erfc_big8(au);
	__m256 big = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.0f), q), q, u);
	__m256 small = _mm256_add_ps(one, rt_erf_small8(u));
	__m256 s = _mm256_blendv_ps(small, big, _mm256_cmp_ps(au, one, _CMP_GT_OQ));
	__m256 y = _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.5f)), s);
	return _mm256_blendv_ps(y, _mm256_add_ps(x, x), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* tanh: an odd polynomial below 0.625, 1 - 2 / (exp(2|x|) + 1) above. */
static inline __m256 rt_tanh8(__m256 x)
{
	const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
	__m256 ax = _mm256_andnot_ps(sign, x);
	__m256 e = rt_exp8(_mm256_add_ps(_mm256_min_ps(ax, _mm256_set1_ps(20.0f)),
	                                 _mm256_min_ps(ax, _mm256_set1_ps(20.0f))));
	__m256 big = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
	big = _mm256_or_ps(big, _mm256_and_ps(x, sign));
	__m256 z = _mm256_mul_ps(x, x);
	__m256 p = _mm256_set1_ps(-5.70498872745e-3f);
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
	__m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
	__m256 y = _mm256_blendv_ps(small, big,
	                            _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_GE_OQ));
	return _mm256_blendv_ps(y, _mm256_add_ps(x, x), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

static inline __m256 rt_sigmoid8(__m256 x)
{
	const __m256 one = _mm256_set1_ps(1.0f);
	__m256 e = rt_exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
	return _mm256_div_ps(one, _mm256_add_ps(one, e));
}
#endif

#if defined(__AVX512F__)
/* expf of 16 lanes, for files built with AVX-512 (called only after
 * rt_cpu_isa() reports it): rt_exp8's reduction and polynomial, with 2^n
 * applied by scalef, which needs no exponent-field arithmetic.  Same
 * results as rt_exp8 within 1 ulp, same special values (inputs below
 * -87.34 give 0). */
static inline __m512 rt_exp16(__m512 x)
{
	const __m512 hi = _mm512_set1_ps(88.7228394f), lo = _mm512_set1_ps(-87.3365448f);
	__m512 xc = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
	__m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
	                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
	__m512 p = _mm512_set1_ps(1.9875691500e-4f);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
	p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
	__m512 y = _mm512_scalef_ps(p, n);
	y = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lo, _CMP_NLT_UQ), y);
	y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ),
	                       _mm512_set1_ps(__builtin_inff()));
	return _mm512_mask_add_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x, x);
}
#endif

#endif
