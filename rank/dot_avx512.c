/*
 * dot_avx512.c: dot.c's kernels in AVX-512: a row's eight sums are the
 * eight lanes of one register.  Compiled with AVX-512 flags; called only
 * when rank_dot_avx512() says the machine runs them.
 */
#include <immintrin.h>
#include <string.h>

#include "rank_eval.h"

/* Eight cells from p (cell type cell) widened to doubles. */
static inline __attribute__((always_inline)) __m512d load8(int cell, const void *p, size_t i)
{
	switch (cell) {
	case BASE_DT_FLOAT:
		return _mm512_cvtps_pd(_mm256_loadu_ps((const float *)p + i));
	case BASE_DT_DOUBLE:
		return _mm512_loadu_pd((const double *)p + i);
	case BASE_DT_BFLOAT16: {
		__m256i w = _mm256_slli_epi32(
			_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i))),
			16);
		return _mm512_cvtps_pd(_mm256_castsi256_ps(w));
	}
	default: { /* INT8 */
		int64_t b;
		memcpy(&b, (const int8_t *)p + i, sizeof b);
		return _mm512_cvtepi32_pd(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(b)));
	}
	}
}

/* One row: its eight sums are one register. */
static inline __attribute__((always_inline)) double row_512(int cell, const void *row,
                                                            const double *q, size_t n)
{
	__m512d a = _mm512_setzero_pd();
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		a = _mm512_add_pd(a, _mm512_mul_pd(load8(cell, row, i), _mm512_loadu_pd(q + i)));
	double p[8];
	_mm512_storeu_pd(p, a);
	rank_dot_tail(cell, row, q, i, n, p);
	return rank_dot_combine(p);
}

double rank_dot_row_avx512(int cell, const void *row, const double *q, size_t n)
{
	switch (cell) {
	case BASE_DT_FLOAT: return row_512(BASE_DT_FLOAT, row, q, n);
	case BASE_DT_DOUBLE: return row_512(BASE_DT_DOUBLE, row, q, n);
	case BASE_DT_BFLOAT16: return row_512(BASE_DT_BFLOAT16, row, q, n);
	default: return row_512(BASE_DT_INT8, row, q, n);
	}
}
