/*
 * gemm_avx2.c: the AVX2 + FMA GEMM kernels, the baseline every x86-64-v3
 * machine runs (and the one STRATA_CPU=avx2 selects).
 *
 * The register block is 6 rows x 16 columns: 12 ymm accumulators, two B
 * vectors and one broadcast A value, 15 of the 16 registers.  Each
 * (rows, vectors) corner has its own instance of the loop, so the last
 * row tile of a ragged M runs only the FMAs it needs.  Ragged tiles use
 * vmaskmov on the columns of C (masked lanes are not touched), so the
 * finish (alpha, beta, bias, activation, residual) is one code path for
 * every tile and C is written once per K block.
 */
#include <immintrin.h>

#include "gemm_kern.h"
#include "vmath.h"

enum { MR = 6, NR = 16, NV = NR / 8 };
/* A kc x 16 strip of B is 64 bytes a step: 384 steps (24 KiB) still
 * leave room in a 32 KiB L1 for the A rows. */
enum { KC_MAX = 384 };

static inline __m256i lanes(int64_t n)
{
	__m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	int v = n < 0 ? 0 : n > 8 ? 8 : (int)n;
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(v), idx);
}

/* Finish 8 cells of one row: n valid lanes (1..8), m their mask. */
static inline void finish8(float *c, __m256 x, int64_t n, __m256i m, const float *bias,
                           const float *res, const struct gemm_tile *t)
{
	int full = n >= 8;
	if (t->alpha != 1.0f)
		x = _mm256_mul_ps(x, _mm256_set1_ps(t->alpha));
	if (t->beta != 0.0f) {
		__m256 old = full ? _mm256_loadu_ps(c) : _mm256_maskload_ps(c, m);
		x = t->beta == 1.0f ? _mm256_add_ps(x, old)
		                    : _mm256_fmadd_ps(old, _mm256_set1_ps(t->beta), x);
	}
	if (bias)
		x = _mm256_add_ps(x, full ? _mm256_loadu_ps(bias) : _mm256_maskload_ps(bias, m));
	if (t->act == RT_ACT_RELU)
		x = _mm256_max_ps(x, _mm256_setzero_ps());
	else if (t->act == RT_ACT_GELU_ERF)
		x = rt_gelu_erf8(x);
	if (res)
		x = _mm256_add_ps(x, full ? _mm256_loadu_ps(res) : _mm256_maskload_ps(res, m));
	if (full)
		_mm256_storeu_ps(c, x);
	else
		_mm256_maskstore_ps(c, m, x);
}

/* Finish 16 cells (nr of them valid) of one row. */
static inline void finish_row(float *c, __m256 x0, __m256 x1, int64_t nr, const float *bias,
                              const float *res, const struct gemm_tile *t)
{
	finish8(c, x0, nr, lanes(nr), bias, res, t);
	if (nr > 8)
		finish8(c + 8, x1, nr - 8, lanes(nr - 8), bias ? bias + 8 : NULL,
		        res ? res + 8 : NULL, t);
}

/* The tile loop for R rows (a constant in every instance). */
static inline __attribute__((always_inline)) void
body(const int R, int64_t kc, const float *a, int64_t rs, int64_t cs, const float *b, float *c,
     int64_t ldc, int64_t nr, const struct gemm_tile *t)
{
	uintptr_t next = t->next, pfb = t->pfb;
	int64_t pfn = t->pfn;
	/* C is read or written at the end: fetch its lines meanwhile */
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		_mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
	__m256 acc[MR][NV];
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		acc[r][0] = acc[r][1] = _mm256_setzero_ps();
	const float *a0 = a, *a3 = R > 3 ? a + 3 * rs : a;
	/* one cache line of each of the next tile's rows per 16 steps (A rows
	 * read in place are short streams the hardware prefetcher misses) */
	intptr_t prs = (intptr_t)(cs == 1 ? rs : 16) * 4, pcs = (intptr_t)cs * 4;
	for (int64_t k = 0; k < kc; k++) {
		if ((k & 15) == 0) {
#pragma GCC unroll 8
			for (int r = 0; r < MR; r++)
				_mm_prefetch((const char *)(next + r * prs + k * pcs), _MM_HINT_T0);
			for (int64_t i = 0; i < pfn; i++, pfb += 64)
				_mm_prefetch((const char *)pfb, _MM_HINT_T1);
		}
		__m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 8
		for (int r = 0; r < R; r++) {
			__m256 av = _mm256_broadcast_ss(r < 3 ? a0 + r * rs : a3 + (r - 3) * rs);
			acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
			acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
		}
		a0 += cs;
		a3 += cs;
		b += NR;
	}
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		finish_row(c + r * ldc, acc[r][0], acc[r][1], nr, t->bias,
		           t->res ? t->res + r * t->ldr : NULL, t);
}

typedef void tile_fn(int64_t kc, const float *a, int64_t rs, int64_t cs, const float *b,
                     float *c, int64_t ldc, int64_t nr, const struct gemm_tile *t);

#define TILE(R)                                                                              \
	static void tile_##R(int64_t kc, const float *a, int64_t rs, int64_t cs,             \
	                     const float *b, float *c, int64_t ldc, int64_t nr,              \
	                     const struct gemm_tile *t)                                      \
	{                                                                                    \
		body(R, kc, a, rs, cs, b, c, ldc, nr, t);                                    \
	}
TILE(1) TILE(2) TILE(3) TILE(4) TILE(5) TILE(6)
#undef TILE

static tile_fn *const tiles[MR] = {tile_1, tile_2, tile_3, tile_4, tile_5, tile_6};

static void tile(int64_t kc, const float *a, int64_t rs, int64_t cs, const float *b, float *c,
                 int64_t ldc, int64_t mr, int64_t nr, const struct gemm_tile *t)
{
	tiles[mr - 1](kc, a, rs, cs, b, c, ldc, nr, t);
}

static void gemv(int64_t K, int64_t N, const float *a, int64_t sa, const float *pb, int64_t kc,
                 float *c, const struct gemm_tile *t)
{
	int64_t npad = (N + NR - 1) / NR * NR;
	for (int64_t j0 = 0; j0 < N; j0 += NR) {
		__m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
		__m256 s4 = s0, s5 = s0, s6 = s0, s7 = s0;
		for (int64_t p = 0; p < K; p += kc) {
			int64_t kb = K - p < kc ? K - p : kc;
			const float *b = pb + p * npad + j0 * kb;
			const float *ap = a + p * sa;
			int64_t k = 0;
			for (; k + 4 <= kb; k += 4, b += 4 * NR) {
				__m256 a0 = _mm256_set1_ps(ap[k * sa]), a1 = _mm256_set1_ps(ap[(k + 1) * sa]);
				__m256 a2 = _mm256_set1_ps(ap[(k + 2) * sa]), a3 = _mm256_set1_ps(ap[(k + 3) * sa]);
				s0 = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b), s0);
				s1 = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b + 8), s1);
				s2 = _mm256_fmadd_ps(a1, _mm256_loadu_ps(b + 16), s2);
				s3 = _mm256_fmadd_ps(a1, _mm256_loadu_ps(b + 24), s3);
				s4 = _mm256_fmadd_ps(a2, _mm256_loadu_ps(b + 32), s4);
				s5 = _mm256_fmadd_ps(a2, _mm256_loadu_ps(b + 40), s5);
				s6 = _mm256_fmadd_ps(a3, _mm256_loadu_ps(b + 48), s6);
				s7 = _mm256_fmadd_ps(a3, _mm256_loadu_ps(b + 56), s7);
			}
			for (; k < kb; k++, b += NR) {
				__m256 a0 = _mm256_set1_ps(ap[k * sa]);
				s0 = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b), s0);
				s1 = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b + 8), s1);
			}
		}
		s0 = _mm256_add_ps(_mm256_add_ps(s0, s2), _mm256_add_ps(s4, s6));
		s1 = _mm256_add_ps(_mm256_add_ps(s1, s3), _mm256_add_ps(s5, s7));
		finish_row(c + j0, s0, s1, N - j0, t->bias ? t->bias + j0 : NULL,
		           t->res ? t->res + j0 : NULL, t);
	}
}

const struct gemm_kern rt_gemm_avx2 = {
	.isa = RT_ISA_AVX2, .mr = MR, .nr = NR, .kc_max = KC_MAX,
	.tile = tile, .gemv = gemv,
};
