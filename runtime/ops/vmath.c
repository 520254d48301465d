/*
 * vmath.c: the array forms of vmath.h's 8-wide functions.
 *
 * Used by the unary kernels (Exp, Erf, Tanh, Sigmoid, Gelu), Softmax, the
 * fused attention kernel and the GEMM epilogue.  Each loop runs whole
 * vectors and finishes a ragged tail through a small stack buffer, so the
 * results never depend on where an element sits in the array (the same
 * lane math applies to every cell).  No allocation, no state.
 */
#include <math.h>
#include <string.h>

#include "vmath.h"

#define DEFINE_MAP(name, fn8)                                      \
	void name(const float *x, float *y, size_t n)                \
	{                                                            \
		size_t i = 0;                                        \
		for (; i + 8 <= n; i += 8)                           \
			_mm256_storeu_ps(y + i, fn8(_mm256_loadu_ps(x + i))); \
		if (i < n) {                                         \
			float t[8] = { 0 };                          \
			memcpy(t, x + i, (n - i) * sizeof *t);       \
			_mm256_storeu_ps(t, fn8(_mm256_loadu_ps(t))); \
			memcpy(y + i, t, (n - i) * sizeof *t);       \
		}                                                    \
	}

DEFINE_MAP(rt_vexp, rt_exp8)
DEFINE_MAP(rt_verf, rt_erf8)
DEFINE_MAP(rt_vtanh, rt_tanh8)
DEFINE_MAP(rt_vsigmoid, rt_sigmoid8)
DEFINE_MAP(rt_vgelu_erf, rt_gelu_erf8)

static float hmax8(__m256 v)
{
	__m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	m = _mm_max_ps(m, _mm_movehl_ps(m, m));
	m = _mm_max_ss(m, _mm_movehdup_ps(m));
	return _mm_cvtss_f32(m);
}

static float hsum8(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

float rt_vmax(const float *x, size_t n)
{
	/* max_ps returns its second operand when either is NaN: the running
	 * maximum goes second, so NaN cells are skipped. */
	__m256 m = _mm256_set1_ps(-__builtin_inff());
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		m = _mm256_max_ps(_mm256_loadu_ps(x + i), m);
	float r = hmax8(m);
	for (; i < n; i++)
		if (x[i] > r)
			r = x[i];
	return r;
}

void rt_vsoftmax(float *x, size_t n)
{
	if (n == 0)
		return;
	float mx = rt_vmax(x, n);
	if (isinf(mx))
		mx = mx > 0 ? mx : 0; /* all -inf: exp(-inf) = 0 and the row is 0/0 */
	__m256 vm = _mm256_set1_ps(mx);
	__m256 acc = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 e = rt_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
		acc = _mm256_add_ps(acc, e);
		_mm256_storeu_ps(x + i, e);
	}
	float sum = hsum8(acc);
	if (i < n) {
		float t[8];
		for (int k = 0; k < 8; k++)
			t[k] = -__builtin_inff();
		memcpy(t, x + i, (n - i) * sizeof *t);
		__m256 e = rt_exp8(_mm256_sub_ps(_mm256_loadu_ps(t), vm));
		_mm256_storeu_ps(t, e);
		for (size_t k = 0; k < n - i; k++)
			sum += t[k];
		memcpy(x + i, t, (n - i) * sizeof *t);
	}
	__m256 inv = _mm256_set1_ps(1.0f / sum);
	i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
	for (; i < n; i++)
		x[i] *= 1.0f / sum;
}
