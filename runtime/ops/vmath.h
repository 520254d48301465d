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
 *     __m256 g = rt_gelu_erf8(v);    // kernel's own loop (any AVX2 file;
 *     __m512 h = rt_gelu_erf16(w);   // AVX-512 files: the same formula)
 *
 * Accuracy against glibc's expf/erff/tanhf over the float range: at most
 * about 2 ulp (relative error <= 3e-7) for exp, tanh and sigmoid, and
 * <= 4e-7 relative for erf.  GELU's relative error is under 1e-6 over
 * [-12.5, 12.5], tiny negative values included; below -12.5 it gives 0
 * (the true value is under 1e-34), above 12.5 x itself.  Special values
 * follow libm: NaN stays NaN, exp(-inf) = 0, exp(+inf) = inf, erf(+-inf) =
 * +-1, tanh(+-inf) = +-1, GELU(-inf) = 0, GELU(inf) = inf.  Results that
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

/* GELU, x * Phi(x) with Phi(x) = 0.5 * (1 + erf(x / sqrt 2)), in one
 * formula for the whole range instead of a series below |x / sqrt 2| = 1
 * and an erfc form above (both computed, then blended).  With a = |x| and
 * z = a / sqrt 2, q = Phi(-a) = 0.5 * erfc(z) is taken as
 *
 *     erfc(z) = t * exp(-z^2 + P(t)),  t = 1 / (1 + z / 2)
 *
 * (the Chebyshev fit of Numerical Recipes' erfcc: relative error under
 * 1.2e-7 for every z >= 0), and Phi(x) is q below zero, 1 - q above.  So
 * GELU keeps its relative accuracy where it is tiny (x far below zero),
 * which the old absolute-error erfc did not.  z^2 = a * (a / 2) enters the
 * exponential in two parts, the rounded product and its exact residual
 * from an FMA: at x = -10 a rounding of z^2 alone would cost 3e-6 of the
 * result.  a is clamped at 12.5 (exp stays normal), and x < -12.5, where
 * GELU is below 1e-34 in magnitude, gives 0; x > 12.5 gives x exactly.
 * Relative error under 1e-6 over [-12.5, 12.5] (measured against the
 * double formula); NaN stays NaN. */
#define RT_GELU_CUT 12.5f
#define RT_GELU_ERFC_P(fma_, t, c)                                                       \
	do {                                                                             \
		c = fma_(c, t, RT_GELU_C(-0.82215223f));                                 \
		c = fma_(c, t, RT_GELU_C(1.48851587f));                                  \
		c = fma_(c, t, RT_GELU_C(-1.13520398f));                                 \
		c = fma_(c, t, RT_GELU_C(0.27886807f));                                  \
		c = fma_(c, t, RT_GELU_C(-0.18628806f));                                 \
		c = fma_(c, t, RT_GELU_C(0.09678418f));                                  \
		c = fma_(c, t, RT_GELU_C(0.37409196f));                                  \
		c = fma_(c, t, RT_GELU_C(1.00002368f));                                  \
		c = fma_(c, t, RT_GELU_C(-1.26551223f));                                 \
	} while (0)
/* exp(r) on |r| <= ln2 / 2: a degree-5 fit of the relative error (2e-7) */
#define RT_GELU_EXP_P(fma_, r, e)                                                        \
	do {                                                                             \
		e = fma_(e, r, RT_GELU_C(4.1915066110e-02f));                            \
		e = fma_(e, r, RT_GELU_C(1.6667663141e-01f));                            \
		e = fma_(e, r, RT_GELU_C(4.9998898744e-01f));                            \
		e = fma_(e, r, RT_GELU_C(9.9999966601e-01f));                            \
		e = fma_(e, r, RT_GELU_C(1.0000000711e+00f));                            \
	} while (0)

#define RT_GELU_C(v) _mm256_set1_ps(v)
static inline __m256 rt_gelu_erf8(__m256 x)
{
	const __m256 one = _mm256_set1_ps(1.0f);
	__m256 a = _mm256_min_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x),
	                         _mm256_set1_ps(RT_GELU_CUT));
	__m256 b = _mm256_mul_ps(a, _mm256_set1_ps(0.5f));
	__m256 hh = _mm256_mul_ps(a, b);
	__m256 ll = _mm256_fmsub_ps(a, b, hh);
	/* t = 1 / (1 + a / (2 sqrt 2)): a true division, the AVX2 reciprocal
	 * estimate is too coarse for one refinement step */
	__m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(a, _mm256_set1_ps(0.35355339059327376f), one));
	__m256 p = _mm256_set1_ps(0.17087277f);
	RT_GELU_ERFC_P(_mm256_fmadd_ps, t, p);
	/* exp(p - hh - ll) / 2, reduced by n = round((p - hh) / ln 2) with hh
	 * subtracted first: the large parts cancel exactly */
	const __m256 magic = _mm256_set1_ps(12582912.0f); /* 1.5 * 2^23: rounds */
	__m256 n = _mm256_sub_ps(_mm256_fmadd_ps(_mm256_sub_ps(p, hh),
	                                         _mm256_set1_ps(1.44269504088896341f), magic),
	                         magic);
	__m256 r = _mm256_fnmsub_ps(n, _mm256_set1_ps(0.693359375f), hh);
	r = _mm256_add_ps(r, _mm256_sub_ps(p, ll));
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
	__m256 e = _mm256_set1_ps(8.2917103558e-03f);
	RT_GELU_EXP_P(_mm256_fmadd_ps, r, e);
	/* 2^(n - 1): n >= -116 after the clamp, a normal exponent */
	__m256i sc = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n),
	                                                _mm256_set1_epi32(126)), 23);
	__m256 q = _mm256_mul_ps(_mm256_mul_ps(t, e), _mm256_castsi256_ps(sc));
	__m256 phi = _mm256_blendv_ps(q, _mm256_sub_ps(one, q),
	                              _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ));
	__m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(-RT_GELU_CUT), _CMP_NLT_UQ);
	return _mm256_and_ps(_mm256_mul_ps(x, phi), keep);
}
#undef RT_GELU_C

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

#define RT_GELU_C(v) _mm512_set1_ps(v)
/* rt_gelu_erf8's formula on 16 lanes, for the AVX-512 GEMM epilogue: the
 * reciprocal is rcp14 refined by one Newton step (relative error about
 * 2^-28) and 2^(n - 1) is applied by scalef. */
static inline __m512 rt_gelu_erf16(__m512 x)
{
	const __m512 one = _mm512_set1_ps(1.0f);
	__m512 a = _mm512_min_ps(_mm512_abs_ps(x), _mm512_set1_ps(RT_GELU_CUT));
	__m512 b = _mm512_mul_ps(a, _mm512_set1_ps(0.5f));
	__m512 hh = _mm512_mul_ps(a, b);
	__m512 ll = _mm512_fmsub_ps(a, b, hh);
	__m512 den = _mm512_fmadd_ps(a, _mm512_set1_ps(0.35355339059327376f), one);
	__m512 t = _mm512_rcp14_ps(den);
	t = _mm512_mul_ps(t, _mm512_fnmadd_ps(den, t, _mm512_set1_ps(2.0f)));
	__m512 p = _mm512_set1_ps(0.17087277f);
	RT_GELU_ERFC_P(_mm512_fmadd_ps, t, p);
	/* round to nearest by adding and subtracting 1.5 * 2^23: two plain
	 * adds where roundscale is a slow two-uop instruction */
	const __m512 magic = _mm512_set1_ps(12582912.0f);
	__m512 n = _mm512_sub_ps(_mm512_fmadd_ps(_mm512_sub_ps(p, hh),
	                                         _mm512_set1_ps(1.44269504088896341f), magic),
	                         magic);
	__m512 r = _mm512_fnmsub_ps(n, _mm512_set1_ps(0.693359375f), hh);
	r = _mm512_add_ps(r, _mm512_sub_ps(p, ll));
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
	__m512 e = _mm512_set1_ps(8.2917103558e-03f);
	RT_GELU_EXP_P(_mm512_fmadd_ps, r, e);
	__m512 q = _mm512_mul_ps(t, _mm512_scalef_ps(e, _mm512_sub_ps(n, one)));
	__mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ);
	__m512 phi = _mm512_mask_sub_ps(q, pos, one, q);
	__mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-RT_GELU_CUT), _CMP_NLT_UQ);
	return _mm512_maskz_mul_ps(keep, x, phi);
}
#undef RT_GELU_C
#endif

#endif
