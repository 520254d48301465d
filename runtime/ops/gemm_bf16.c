/*
 * gemm_bf16.c: the GEMM with weights packed as bfloat16, on AVX512-BF16
 * (session.bf16_weights: runtime.h).  Compiled with AVX-512 and BF16
 * flags; gemm.c packs weights this way, and so calls it, only where the
 * machine has both.
 *
 * vdpbf16ps multiplies two pairs of bfloat16 values per lane and adds both
 * products to a float lane: 32 multiply-adds an instruction, twice the
 * float FMA's 16, from weights half the size.  The price is precision: the
 * weights and, at every call, the activations (A) are rounded to bfloat16
 * (8 significant bits; round to nearest even, subnormals flushed to zero,
 * as the conversion instruction does), while the products are exact and
 * the sums float.  Results differ from the float GEMM's by about 2^-8 of
 * the magnitudes involved, which is why the option is off by default.
 *
 * Layout of packed B (struct rt_packed_b with isa RT_PACK_BF16, nr 16, kc
 * Kp = K rounded up to a multiple of 32): strips of 16 columns, N padded with zero
 * columns to a multiple of 64; within a strip, for each pair of k (2p,
 * 2p + 1), column c's two values at (p * 16 + c) * 2 and + 1, so one
 * 64-byte load is a pair of k for 16 columns.  Zero padding makes a ragged
 * K or N read as zero products.
 *
 * The kernel's register block is 6 rows by 4 strips (64 columns): 24
 * accumulators, four B vectors and one broadcast pair of A, as the float
 * AVX-512 kernel.  A is converted to bfloat16 rows of Kp values, a block of
 * rows at a time, into a per-thread buffer (no allocation), then every
 * 64-column panel of B goes over every row tile of the block.  Where AMX
 * is in use (rt_cpu_amx) the block goes to the tile kernel instead
 * (gemm_amx.c), which reads the same packing.
 */
#include <immintrin.h>
#include <string.h>

#include "gemm_kern.h"

enum { MR = 6, PANEL = 64, STRIP = 16 };

/* The converted rows of A: up to BA_MAX bfloat16 values (2 MiB), zero-fill
 * on demand, so a thread that never runs this costs nothing. */
enum { BA_MAX = 1 << 20 };
static _Thread_local uint16_t packa[BA_MAX] __attribute__((aligned(64)));

int64_t rt_bgemm_kmax(void)
{
	/* a block of 32 rows of A (the AMX kernel's) must fit the buffer */
	return BA_MAX / 32;
}

/* K as packed: whole tiles of k for the AMX kernel (gemm_amx.c), which the
 * vector kernel reads as zero pairs. */
static int64_t kpad(int64_t k)
{
	return (k + 31) & ~(int64_t)31;
}

static int64_t padded(int64_t n)
{
	return (n + PANEL - 1) / PANEL * PANEL;
}

size_t rt_bgemm_pack_bytes(int64_t K, int64_t N)
{
	return (size_t)(kpad(K) * padded(N)) * sizeof(uint16_t);
}

/* x rounded to bfloat16 by the instruction the activations go through. */
static uint16_t to_bf16(float x)
{
	__m128bh r = _mm_cvtneps_pbh(_mm_set1_ps(x));
	uint16_t v;
	memcpy(&v, &r, sizeof v);
	return v;
}

void rt_bgemm_pack_into(int transb, int64_t K, int64_t N, const float *B, int64_t ldb,
                        void *mem, struct rt_packed_b *pb)
{
	int64_t kp = kpad(K);
	uint16_t *d = mem;
	memset(d, 0, rt_bgemm_pack_bytes(K, N));
	for (int64_t j = 0; j < N; j++) {
		uint16_t *strip = d + (j / STRIP) * kp * STRIP;
		for (int64_t k = 0; k < K; k++) {
			float v = transb ? B[j * ldb + k] : B[k * ldb + j];
			strip[((k / 2) * STRIP + j % STRIP) * 2 + k % 2] = to_bf16(v);
		}
	}
	*pb = (struct rt_packed_b){ .K = K, .N = N, .version = RT_PACK_VERSION,
	                            .bytes = rt_bgemm_pack_bytes(K, N), .data = mem,
	                            .isa = RT_PACK_BF16, .nr = STRIP, .kc = (int)kp };
}

/* Rows [i0, i1) of op(A) (K columns) as bfloat16 rows of kp values (zero
 * past K), kp apart, into dst. */
static void convert_a(int transa, const float *A, int64_t lda, int64_t i0, int64_t i1,
                      int64_t K, int64_t kp, uint16_t *dst)
{
	for (int64_t i = i0; i < i1; i++) {
		uint16_t *d = dst + (i - i0) * kp;
		if (transa) {
			for (int64_t k = 0; k < K; k++)
				d[k] = to_bf16(A[k * lda + i]);
		} else {
			const float *a = A + i * lda;
			int64_t k = 0;
			for (; k + 32 <= K; k += 32) {
				/* the second operand fills the low 16 values */
				__m512bh h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(a + k + 16),
				                                 _mm512_loadu_ps(a + k));
				_mm512_storeu_si512(d + k, (__m512i)h);
			}
			for (; k < K; k += 16) {
				__mmask16 m = gemm_lanes16(K - k);
				__m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, a + k));
				_mm256_mask_storeu_epi16(d + k, m, (__m256i)h);
			}
		}
		for (int64_t k = K; k < kp; k++)
			d[k] = 0;
	}
}

/* acc += the two products of each lane's pair (a and b bfloat16).  In asm
 * for the reason qgemm_vnni.c gives: gcc 12 copies the accumulator of the
 * intrinsic through other registers on every step. */
static inline __m512 dpbf16(__m512 acc, __m512i a, __m512i b)
{
	__asm__("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
	return acc;
}

/* R rows (a constant after inlining) of A's bfloat16 rows (lda values
 * apart) by the 4 strips of a panel (ss values apart) over np pairs of k;
 * C and the finish from c and t, ncols of the 64 columns valid. */
static inline __attribute__((always_inline)) void
body(const int R, int64_t np, const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ss,
     float *c, int64_t ldc, int64_t ncols, const struct gemm_tile *t)
{
	__m512 acc[MR][4];
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		for (int s = 0; s < 4; s++)
			acc[r][s] = _mm512_setzero_ps();
	for (int64_t p = 0; p < np; p++) {
		__m512i v0 = _mm512_loadu_si512(b + p * 32), v1 = _mm512_loadu_si512(b + ss + p * 32);
		__m512i v2 = _mm512_loadu_si512(b + 2 * ss + p * 32);
		__m512i v3 = _mm512_loadu_si512(b + 3 * ss + p * 32);
#pragma GCC unroll 8
		for (int r = 0; r < R; r++) {
			int32_t w;
			memcpy(&w, a + r * lda + 2 * p, sizeof w);
			__m512i av = _mm512_set1_epi32(w);
			acc[r][0] = dpbf16(acc[r][0], av, v0);
			acc[r][1] = dpbf16(acc[r][1], av, v1);
			acc[r][2] = dpbf16(acc[r][2], av, v2);
			acc[r][3] = dpbf16(acc[r][3], av, v3);
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		for (int s = 0; s < 4; s++)
			if (ncols > s * STRIP)
				gemm_finish16(c + r * ldc + s * STRIP, acc[r][s],
				              gemm_lanes16(ncols - s * STRIP), s * STRIP,
				              t->res ? t->res + r * t->ldr + s * STRIP : NULL, t);
}

static void tile(int64_t rows, int64_t np, const uint16_t *a, int64_t lda, const uint16_t *b,
                 int64_t ss, float *c, int64_t ldc, int64_t ncols, const struct gemm_tile *t)
{
	switch (rows) {
	case 1: body(1, np, a, lda, b, ss, c, ldc, ncols, t); break;
	case 2: body(2, np, a, lda, b, ss, c, ldc, ncols, t); break;
	case 3: body(3, np, a, lda, b, ss, c, ldc, ncols, t); break;
	case 4: body(4, np, a, lda, b, ss, c, ldc, ncols, t); break;
	case 5: body(5, np, a, lda, b, ss, c, ldc, ncols, t); break;
	default: body(6, np, a, lda, b, ss, c, ldc, ncols, t); break;
	}
}

void rt_bgemm(int transa, int64_t M, float alpha, const float *A, int64_t lda,
              const struct rt_packed_b *pb, float beta, float *C, int64_t ldc,
              const struct rt_epilogue *ep)
{
	int64_t K = pb->K, N = pb->N, kp = pb->kc, ss = kp * STRIP;
	const uint16_t *B = (const uint16_t *)(const void *)pb->data;
	int64_t mc = BA_MAX / kp / 96 * 96; /* whole AMX blocks and row tiles */
	int amx = rt_cpu_amx();
	if (amx) {
		/* blocks whose rows of A and results fill half of L2, where the
		 * kernel's GELU pass finds them */
		int64_t l1, l2;
		rt_cpu_caches(&l1, &l2);
		int64_t m2 = l2 / 2 / (N * 4 + kp * 2) / 32 * 32;
		mc = m2 < mc ? m2 : mc;
	}
	mc = mc < 32 ? 32 : mc;
	for (int64_t i0 = 0; i0 < M; i0 += mc) {
		int64_t i1 = M - i0 < mc ? M : i0 + mc;
		convert_a(transa, A, lda, i0, i1, K, kp, packa);
		if (amx) {
			/* the rows past M to the next multiple of 32 are zero */
			int64_t r = i1 - i0, r32 = (r + 31) / 32 * 32;
			memset(packa + r * kp, 0, (size_t)((r32 - r) * kp) * sizeof(uint16_t));
			struct gemm_tile t = { alpha, beta, NULL, RT_ACT_NONE, NULL, 0, 0, 0, 0 };
			const float *res = NULL;
			if (ep) {
				t.bias = ep->bias;
				t.act = ep->act;
				res = ep->residual ? ep->residual + i0 * ep->ldr : NULL;
			}
			rt_bgemm_amx(r, kp, packa, B, ss, N, C + i0 * ldc, ldc, &t, res,
			             ep ? ep->ldr : 0);
			continue;
		}
		for (int64_t j = 0; j < N; j += PANEL) {
			int64_t ncols = N - j < PANEL ? N - j : PANEL;
			for (int64_t i = i0; i < i1; i += MR) {
				int64_t rows = i1 - i < MR ? i1 - i : MR;
				struct gemm_tile t = { alpha, beta, NULL, RT_ACT_NONE, NULL, 0, 0, 0, 0 };
				if (ep) {
					t.bias = ep->bias ? ep->bias + j : NULL;
					t.act = ep->act;
					t.res = ep->residual ? ep->residual + i * ep->ldr + j : NULL;
					t.ldr = ep->ldr;
				}
				tile(rows, kp / 2, packa + (i - i0) * kp, kp, B + (j / STRIP) * ss, ss,
				     C + i * ldc + j, ldc, ncols, &t);
			}
		}
	}
}
