/*
 * gemm_avx512.c: the AVX-512 GEMM kernels (compiled with -mavx512f and
 * friends; gemm.c calls them only when rt_cpu_isa() is RT_ISA_AVX512).
 *
 * The register block is MR x 32: 2 * MR zmm accumulators, two B vectors
 * and A values broadcast straight from memory by the FMAs.  With MR = 8
 * the 16 accumulators cover the FMA latency of two pipes, and the row
 * counts of the transformer and ranker shapes (128, 1000, 2048) split
 * into whole blocks.  Ragged tiles use lane masks on the loads and stores
 * of C (masked lanes never fault), so there is no spill path.
 *
 * The tile's finish applies alpha, beta and the fused epilogue (bias,
 * RELU or GELU, residual) while the accumulators are still in registers:
 * C is written once.
 */
#include <immintrin.h>

#include "gemm_kern.h"
#include "vmath.h"

enum { MR = 8, NR = 32, NV = NR / 16 };
/* A KC x NR strip of B (32 KiB) stays in L1 while the MR-row strips of an
 * MC x KC block of A (128 KiB, in L2) stream past it. */
enum { KC = 256, MC = 128, NC = 1024 };

static inline __m512 gelu16(__m512 x)
{
	__m256 lo = rt_gelu_erf8(_mm512_castps512_ps256(x));
	__m256 hi = rt_gelu_erf8(_mm512_extractf32x8_ps(x, 1));
	return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

static inline __mmask16 lanes(int64_t n)
{
	return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* Finish 16 cells of one row of C: x is the accumulator, m the valid lanes,
 * j the column offset of those lanes within the tile. */
static inline void finish16(float *c, __m512 x, __mmask16 m, int64_t j, const float *res,
                            const struct gemm_tile *t)
{
	if (t->alpha != 1.0f)
		x = _mm512_mul_ps(x, _mm512_set1_ps(t->alpha));
	if (t->beta != 0.0f)
		x = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, c), _mm512_set1_ps(t->beta), x);
	if (t->bias)
		x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, t->bias + j));
	if (t->act == RT_ACT_RELU)
		x = _mm512_max_ps(x, _mm512_setzero_ps());
	else if (t->act == RT_ACT_GELU_ERF)
		x = gelu16(x);
	if (res)
		x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, res));
	if (m == 0xffff)
		_mm512_storeu_ps(c, x);
	else
		_mm512_mask_storeu_ps(c, m, x);
}

static void tile(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                 int64_t mr, int64_t nr, const struct gemm_tile *t)
{
	__m512 acc[MR][NV];
#pragma GCC unroll 16
	for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
		for (int v = 0; v < NV; v++)
			acc[r][v] = _mm512_setzero_ps();

	for (int64_t k = 0; k < kc; k++) {
		__m512 bv[NV];
#pragma GCC unroll 4
		for (int v = 0; v < NV; v++)
			bv[v] = _mm512_loadu_ps(b + 16 * v);
#pragma GCC unroll 16
		for (int r = 0; r < MR; r++) {
			__m512 av = _mm512_set1_ps(a[r]);
#pragma GCC unroll 4
			for (int v = 0; v < NV; v++)
				acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
		}
		a += MR;
		b += NR;
	}

#pragma GCC unroll 16
	for (int r = 0; r < MR; r++) {
		if (r >= mr)
			break;
		float *cr = c + r * ldc;
		const float *res = t->res ? t->res + r * t->ldr : NULL;
#pragma GCC unroll 4
		for (int v = 0; v < NV; v++) {
			__mmask16 m = lanes(nr - 16 * v);
			if (m)
				finish16(cr + 16 * v, acc[r][v], m, 16 * v, res ? res + 16 * v : NULL, t);
		}
	}
}

static void gemv(int64_t K, int64_t N, const float *a, int64_t sa, const float *pb, int kc,
                 float *c, const struct gemm_tile *t)
{
	int64_t npad = (N + NR - 1) / NR * NR;
	for (int64_t j0 = 0; j0 < N; j0 += NR) {
		__m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
		__m512 s4 = s0, s5 = s0, s6 = s0, s7 = s0;
		for (int64_t p = 0; p < K; p += kc) {
			int64_t kb = K - p < kc ? K - p : kc;
			const float *b = pb + p * npad + j0 * kb;
			const float *ap = a + p * sa;
			int64_t k = 0;
			for (; k + 4 <= kb; k += 4, b += 4 * NR) {
				__m512 a0 = _mm512_set1_ps(ap[k * sa]), a1 = _mm512_set1_ps(ap[(k + 1) * sa]);
				__m512 a2 = _mm512_set1_ps(ap[(k + 2) * sa]), a3 = _mm512_set1_ps(ap[(k + 3) * sa]);
				s0 = _mm512_fmadd_ps(a0, _mm512_loadu_ps(b), s0);
				s1 = _mm512_fmadd_ps(a0, _mm512_loadu_ps(b + 16), s1);
				s2 = _mm512_fmadd_ps(a1, _mm512_loadu_ps(b + 32), s2);
				s3 = _mm512_fmadd_ps(a1, _mm512_loadu_ps(b + 48), s3);
				s4 = _mm512_fmadd_ps(a2, _mm512_loadu_ps(b + 64), s4);
				s5 = _mm512_fmadd_ps(a2, _mm512_loadu_ps(b + 80), s5);
				s6 = _mm512_fmadd_ps(a3, _mm512_loadu_ps(b + 96), s6);
				s7 = _mm512_fmadd_ps(a3, _mm512_loadu_ps(b + 112), s7);
			}
			for (; k < kb; k++, b += NR) {
				__m512 a0 = _mm512_set1_ps(ap[k * sa]);
				s0 = _mm512_fmadd_ps(a0, _mm512_loadu_ps(b), s0);
				s1 = _mm512_fmadd_ps(a0, _mm512_loadu_ps(b + 16), s1);
			}
		}
		s0 = _mm512_add_ps(_mm512_add_ps(s0, s2), _mm512_add_ps(s4, s6));
		s1 = _mm512_add_ps(_mm512_add_ps(s1, s3), _mm512_add_ps(s5, s7));
		struct gemm_tile tj = *t;
		if (tj.bias)
			tj.bias += j0;
		const float *res = t->res ? t->res + j0 : NULL;
		int64_t nr = N - j0;
		finish16(c + j0, s0, lanes(nr), 0, res, &tj);
		if (nr > 16)
			finish16(c + j0 + 16, s1, lanes(nr - 16), 16, res ? res + 16 : NULL, &tj);
	}
}

const struct gemm_kern rt_gemm_avx512 = {
	.isa = RT_ISA_AVX512, .mr = MR, .nr = NR, .kc = KC, .mc = MC, .nc = NC,
	.tile = tile, .gemv = gemv,
};
