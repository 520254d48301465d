/*
 * dot.c: the dense dot products of the first phase, one query vector
 * (double cells) against a block of document rows read in place from the
 * store's map (float, double, bfloat16 or int8 cells), in SIMD.
 *
 * Every kernel gives the bits of rank_tensor_dot (tensor.c): eight running
 * sums, sum k over the cells i with i mod 8 = k, each cell widened to double
 * exactly, each product and each addition rounded to double in cell order
 * (a multiply then an add, never a fused multiply-add), the eight combined
 * pairwise at the end.  Eight doubles are one AVX-512 register (two AVX2
 * ones), so the sums are the lanes of the accumulators.  Rows go one after
 * the other, each read as one sequential run: consecutive rows of a column
 * block are one run in the map, which the hardware's prefetchers follow.
 * Interleaving several rows overlaps their chains of dependent additions
 * and is faster on rows in cache, but it was about twice as slow on rows
 * from memory, and so was prefetching rows ahead in software (measured with
 * bench/qps on the machine this was written on).
 *
 * The AVX2 kernels are here (the library's baseline is x86-64-v3); the
 * AVX-512 ones are in dot_avx512.c, compiled with AVX-512 flags and called
 * only when rank_dot_avx512() says the machine runs them (STRATA_CPU=avx2
 * turns them off, as it does the runtime's and the store's).
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rank_eval.h"

static int use_avx512;
static pthread_once_t use_avx512_once = PTHREAD_ONCE_INIT;

static void decide_avx512(void)
{
	const char *env = getenv("STRATA_CPU");
	use_avx512 = !(env && strcmp(env, "avx2") == 0) && base_cpu_avx512();
}

int rank_dot_avx512(void)
{
	/* Decided once: the first phase asks for every chunk of rows. */
	pthread_once(&use_avx512_once, decide_avx512);
	return use_avx512;
}

/* Four cells from p (cell type cell) widened to doubles. */
static inline __attribute__((always_inline)) __m256d load4(int cell, const void *p, size_t i)
{
	switch (cell) {
	case BASE_DT_FLOAT:
		return _mm256_cvtps_pd(_mm_loadu_ps((const float *)p + i));
	case BASE_DT_DOUBLE:
		return _mm256_loadu_pd((const double *)p + i);
	case BASE_DT_BFLOAT16: {
		int64_t h;
		memcpy(&h, (const uint16_t *)p + i, sizeof h);
		__m128i w = _mm_slli_epi32(_mm_cvtepu16_epi32(_mm_cvtsi64_si128(h)), 16);
		return _mm256_cvtps_pd(_mm_castsi128_ps(w));
	}
	default: { /* INT8 */
		int32_t b;
		memcpy(&b, (const int8_t *)p + i, sizeof b);
		return _mm256_cvtepi32_pd(_mm_cvtepi8_epi32(_mm_cvtsi32_si128(b)));
	}
	}
}

/* One row: its eight sums are two registers. */
static inline __attribute__((always_inline)) double row_avx2(int cell, const void *row,
                                                             const double *q, size_t n)
{
	__m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		lo = _mm256_add_pd(lo, _mm256_mul_pd(load4(cell, row, i), _mm256_loadu_pd(q + i)));
		hi = _mm256_add_pd(hi, _mm256_mul_pd(load4(cell, row, i + 4),
		                                     _mm256_loadu_pd(q + i + 4)));
	}
	double p[8];
	_mm256_storeu_pd(p, lo);
	_mm256_storeu_pd(p + 4, hi);
	rank_dot_tail(cell, row, q, i, n, p);
	return rank_dot_combine(p);
}

/* One row in AVX2, the cell type a constant in each call of row_avx2. */
static double row_of(int cell, const void *row, const double *q, size_t n)
{
	switch (cell) {
	case BASE_DT_FLOAT: return row_avx2(BASE_DT_FLOAT, row, q, n);
	case BASE_DT_DOUBLE: return row_avx2(BASE_DT_DOUBLE, row, q, n);
	case BASE_DT_BFLOAT16: return row_avx2(BASE_DT_BFLOAT16, row, q, n);
	default: return row_avx2(BASE_DT_INT8, row, q, n);
	}
}

int rank_dot_cell_ok(int cell)
{
	return cell == BASE_DT_FLOAT || cell == BASE_DT_DOUBLE || cell == BASE_DT_BFLOAT16 ||
	       cell == BASE_DT_INT8;
}

void rank_dot_rows(int avx512, int cell, const void *const *rows, size_t nrows, const double *q,
                   size_t n, double *out)
{
	BASE_DEBUG_ASSERT(rank_dot_cell_ok(cell));
	double (*row)(int, const void *, const double *, size_t) =
		avx512 ? rank_dot_row_avx512 : row_of;
	for (size_t r = 0; r < nrows; r++)
		out[r] = row(cell, rows[r], q, n);
}
