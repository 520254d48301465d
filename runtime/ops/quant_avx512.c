/*
 * quant_avx512.c: the two passes of DynamicQuantizeLinear on AVX-512, which
 * quant.c runs over the bulk of its input when rt_cpu_isa() is
 * RT_ISA_AVX512 (the tail, and every cell elsewhere, go through its AVX2
 * loops).  The results are those loops' bit for bit.
 *
 * The range takes four chains of 16-lane min and max, 64 cells a step: one
 * chain would wait on the latency of each min and max.  The quantization
 * follows quant.c's quantize_u8: t = v * (1 / scale), and where any of 16
 * cells has t within 1e-4 of a half the 16 are divided instead (vreduceps
 * gives t - rint(t) in one instruction); the rounding is the conversion's
 * (to nearest even, as rintf), the zero point is added in int32, and the
 * result clamped to [0, 255] by a max and the unsigned saturating narrow.
 */
#include <immintrin.h>

#include "../kernel.h"

int64_t rt_dq_range_avx512(const float *v, int64_t n, float *lo, float *hi, int *nan)
{
	__m512 l[4], h[4];
	__mmask16 bad = 0;
	for (int k = 0; k < 4; k++)
		l[k] = h[k] = _mm512_setzero_ps();
	int64_t i = 0;
	for (; i + 64 <= n; i += 64)
		for (int k = 0; k < 4; k++) {
			__m512 x = _mm512_loadu_ps(v + i + 16 * k);
			bad |= _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
			l[k] = _mm512_min_ps(l[k], x);
			h[k] = _mm512_max_ps(h[k], x);
		}
	__m512 a = _mm512_min_ps(_mm512_min_ps(l[0], l[1]), _mm512_min_ps(l[2], l[3]));
	__m512 b = _mm512_max_ps(_mm512_max_ps(h[0], h[1]), _mm512_max_ps(h[2], h[3]));
	*lo = _mm512_reduce_min_ps(a);
	*hi = _mm512_reduce_max_ps(b);
	*nan = bad != 0;
	return i;
}

int64_t rt_dq_quantize_avx512(const float *v, int64_t n, float scale, float zp, uint8_t *q)
{
	const __m512 s = _mm512_set1_ps(scale), inv = _mm512_set1_ps(1.0f / scale);
	const __m512 near = _mm512_set1_ps(0.5f - 1e-4f);
	const __m512i z = _mm512_set1_epi32((int)zp), zero = _mm512_setzero_si512();
	int divide = !(1.0f / scale < 1e30f);
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 x = _mm512_loadu_ps(v + i);
		__m512 t = _mm512_mul_ps(x, inv);
		__m512 f = _mm512_abs_ps(_mm512_reduce_ps(t, _MM_FROUND_TO_NEAREST_INT));
		if (divide || _mm512_cmp_ps_mask(f, near, _CMP_GT_OQ))
			t = _mm512_div_ps(x, s);
		__m512i r = _mm512_max_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(t), z), zero);
		_mm_storeu_si128((__m128i *)(q + i), _mm512_cvtusepi32_epi8(r));
	}
	return i;
}
