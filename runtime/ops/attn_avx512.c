/*
 * attn_avx512.c: one attention head, AVX-512 (see attn.h for the contract).
 *
 * Why not the GEMM: per head, Q K^T is [sq x d] by [d x sk] with d = 32 or
 * 64 and P V is [sq x sk] by [sk x d].  Through rt_sgemm each product packs
 * its operands and splits into tiles sized for large matrices; at these
 * sizes the packing and the edges cost as much as the arithmetic.  Here K
 * is transposed once per head into `work` (d x skp floats, skp = sk rounded
 * up to 32, in L1), then blocks of RB query rows go through three steps
 * while their scores stay in L1:
 *   1. scores = q_rows K^T: RB x 32 accumulators, one broadcast of a q cell
 *      feeding two FMAs per row;
 *   2. softmax of each row with the mask folded into its first pass
 *      (add mask, running max; the scale is already in K^T), exponentials in the
 *      second; the division by the row sum is deferred to step 3;
 *   3. out_rows = P V / sum: RB x 32 accumulators over the keys, reading v
 *      rows in place, scaled by 1/sum on the way out.
 * A tail of fewer than RB rows uses the same code instantiated for its row
 * count.  Results match the unfused chain within float rounding: the same
 * sums in a different order, expf as rt_exp16.
 *
 * Built with -mavx512f (Makefile); fused.c calls it only when rt_cpu_isa()
 * reports RT_ISA_AVX512.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "attn.h"
#include "vmath.h"

#define RB RT_ATTN_ROWS

static int64_t pad32(int64_t n)
{
	return (n + 31) & ~(int64_t)31;
}

/* kt[c][j] = scale * k[j][c] for j < sk, c < d; columns sk..skp-1 are
 * zero, so the score kernel runs whole 32-column strips.  The scale goes in
 * here, once per head, rather than on every score of every query block. */
static void transpose_k(const float *k, int64_t ldk, int64_t sk, int64_t d, float scale,
                        float *kt, int64_t skp)
{
	const __m256 vs = _mm256_set1_ps(scale);
	int64_t j = 0;
	for (; j + 8 <= sk; j += 8) {
		int64_t c = 0;
		for (; c + 8 <= d; c += 8) {
			/* 8 x 8 block: the unpack / shuffle / lane-swap transpose. */
			__m256 r0 = _mm256_mul_ps(_mm256_loadu_ps(k + (j + 0) * ldk + c), vs);
			__m256 r1 = _mm256_mul_ps(_mm256_loadu_ps(k + (j + 1) * ldk + c), vs);
			__m256 r2 = _mm256_mul_ps(_mm256_loadu_ps(k + (j + 2) * ldk + c), vs);
			__m256 r3 = _mm256_mul_ps(_mm256_loadu_ps(k + (j + 3) * ldk + c), vs);
			__m256 r4 = _mm256_mul_ps(_mm256_loadu_ps(k + (j + 4) * ldk + c), vs);
			__m256 r5 = _mm256_mul_ps(_mm256_loadu_ps(k + (j + 5) * ldk + c), vs);
			__m256 r6 = _mm256_mul_ps(_mm256_loadu_ps(k + (j + 6) * ldk + c), vs);
			__m256 r7 = _mm256_mul_ps(_mm256_loadu_ps(k + (j + 7) * ldk + c), vs);
			__m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
			__m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
			__m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
			__m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
			__m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
			__m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
			__m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
			__m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
			float *o = kt + c * skp + j;
			_mm256_storeu_ps(o + 0 * skp, _mm256_permute2f128_ps(u0, u4, 0x20));
			_mm256_storeu_ps(o + 1 * skp, _mm256_permute2f128_ps(u1, u5, 0x20));
			_mm256_storeu_ps(o + 2 * skp, _mm256_permute2f128_ps(u2, u6, 0x20));
			_mm256_storeu_ps(o + 3 * skp, _mm256_permute2f128_ps(u3, u7, 0x20));
			_mm256_storeu_ps(o + 4 * skp, _mm256_permute2f128_ps(u0, u4, 0x31));
			_mm256_storeu_ps(o + 5 * skp, _mm256_permute2f128_ps(u1, u5, 0x31));
			_mm256_storeu_ps(o + 6 * skp, _mm256_permute2f128_ps(u2, u6, 0x31));
			_mm256_storeu_ps(o + 7 * skp, _mm256_permute2f128_ps(u3, u7, 0x31));
		}
		for (; c < d; c++)
			for (int64_t r = 0; r < 8; r++)
				kt[c * skp + j + r] = scale * k[(j + r) * ldk + c];
	}
	for (; j < sk; j++)
		for (int64_t c = 0; c < d; c++)
			kt[c * skp + j] = scale * k[j * ldk + c];
	for (int64_t c = 0; c < d; c++)
		memset(kt + c * skp + sk, 0, (size_t)(skp - sk) * sizeof *kt);
}

static __mmask16 tail_mask(int64_t left)
{
	return left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
}

/* vp[j][0..dp) = v[j][0..d), zero beyond d.  V's rows sit heads * d floats
 * apart; with 384 or 768 floats that stride maps every row to a handful of
 * L1 sets, so reading them in place for each block of query rows misses
 * L1 on every pass.  Contiguous, they stay resident. */
static void pack_v(const float *v, int64_t ldv, int64_t sk, int64_t d, float *vp, int64_t dp)
{
	for (int64_t j = 0; j < sk; j++)
		for (int64_t c = 0; c < dp; c += 16)
			_mm512_storeu_ps(vp + j * dp + c,
			                 _mm512_maskz_loadu_ps(tail_mask(d - c), v + j * ldv + c));
}

/* s[r][j] = q_r . kt[.][j] + mask[r][j] for the R rows at q (R a
 * constant after inlining, so the accumulators live in registers), and
 * mx[r] = the row's largest cell (NaN skipped). */
static inline __attribute__((always_inline)) void scores(int R, const float *q, int64_t ldq,
                                                          const float *kt, int64_t skp,
                                                          int64_t sk, int64_t d,
                                                          const float *m, int64_t mask_ld,
                                                          int mstep, float *s, float *mx)
{
	__m512 vmax[RB];
	for (int r = 0; r < R; r++)
		vmax[r] = _mm512_set1_ps(-__builtin_inff());
	for (int64_t c0 = 0; c0 < skp; c0 += 32) {
		__m512 acc[RB][2];
#pragma GCC unroll 8
		for (int r = 0; r < R; r++)
			acc[r][0] = acc[r][1] = _mm512_setzero_ps();
		const float *b = kt + c0;
		for (int64_t c = 0; c < d; c++, b += skp) {
			__m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 8
			for (int r = 0; r < R; r++) {
				__m512 a = _mm512_set1_ps(q[r * ldq + c]);
				acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
				acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
			}
		}
		__mmask16 k0 = tail_mask(sk - c0), k1 = tail_mask(sk - c0 - 16);
		for (int r = 0; r < R; r++) {
			__m512 x0 = acc[r][0], x1 = acc[r][1];
			if (m) {
				const float *mr = m + r * mask_ld;
				if (mstep) {
					x0 = _mm512_add_ps(x0, _mm512_maskz_loadu_ps(k0, mr + c0));
					x1 = _mm512_add_ps(x1, _mm512_maskz_loadu_ps(k1, mr + c0 + 16));
				} else {
					x0 = _mm512_add_ps(x0, _mm512_set1_ps(mr[0]));
					x1 = _mm512_add_ps(x1, _mm512_set1_ps(mr[0]));
				}
			}
			_mm512_storeu_ps(s + r * skp + c0, x0);
			_mm512_storeu_ps(s + r * skp + c0 + 16, x1);
			/* max_ps returns its second operand when either is NaN: NaN
			 * cells are skipped here and poison the row's sum instead. */
			vmax[r] = _mm512_mask_max_ps(vmax[r], k0, x0, vmax[r]);
			vmax[r] = _mm512_mask_max_ps(vmax[r], k1, x1, vmax[r]);
		}
	}
	for (int r = 0; r < R; r++)
		mx[r] = _mm512_reduce_max_ps(vmax[r]);
}

/* s[r][j] = exp(s[r][j] - mx[r]) in place over the R rows of sk scores,
 * and inv[r] = 1 / the row's sum (NaN when the row is all -inf or holds a
 * NaN, as the reference Softmax gives).  The rows go side by side, one
 * strip of 16 of each in turn: a single row's exponentials depend on one
 * running sum, and R independent ones keep the FMA ports busy. */
static inline __attribute__((always_inline)) void softmax_rows(int R, float *s, int64_t skp,
                                                                int64_t sk, const float *mx,
                                                                float *inv)
{
	__m512 vm[RB], acc[RB];
#pragma GCC unroll 8
	for (int r = 0; r < R; r++) {
		float m = mx[r];
		if (isinf(m))
			m = m > 0 ? m : 0; /* all -inf: exp(-inf) = 0 and the row is 0/0 */
		vm[r] = _mm512_set1_ps(m);
		acc[r] = _mm512_setzero_ps();
	}
	int64_t j = 0;
	for (; j + 16 <= sk; j += 16) {
#pragma GCC unroll 8
		for (int r = 0; r < R; r++) {
			float *x = s + r * skp + j;
			__m512 e = rt_exp16(_mm512_sub_ps(_mm512_loadu_ps(x), vm[r]));
			acc[r] = _mm512_add_ps(acc[r], e);
			_mm512_storeu_ps(x, e);
		}
	}
	if (j < sk) {
		__mmask16 k = tail_mask(sk - j);
#pragma GCC unroll 8
		for (int r = 0; r < R; r++) {
			float *x = s + r * skp + j;
			__m512 e = rt_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x), vm[r]));
			acc[r] = _mm512_mask_add_ps(acc[r], k, acc[r], e);
			_mm512_mask_storeu_ps(x, k, e);
		}
	}
	for (int r = 0; r < R; r++)
		inv[r] = 1.0f / _mm512_reduce_add_ps(acc[r]);
}

/* out_r[0..d) = inv[r] * sum_j s[r][j] vp[j] for the R rows; vp rows are
 * dp (a multiple of 16) floats, zero past d. */
static inline __attribute__((always_inline)) void context(int R, const float *s, int64_t skp,
                                                           int64_t sk, const float *vp,
                                                           int64_t dp, int64_t d,
                                                           const float *inv, float *out,
                                                           int64_t ldo)
{
	int64_t c0 = 0;
	for (; c0 + 32 <= dp; c0 += 32) {
		__m512 acc[RB][2];
#pragma GCC unroll 8
		for (int r = 0; r < R; r++)
			acc[r][0] = acc[r][1] = _mm512_setzero_ps();
		const float *b = vp + c0;
		for (int64_t j = 0; j < sk; j++, b += dp) {
			__m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 8
			for (int r = 0; r < R; r++) {
				__m512 p = _mm512_set1_ps(s[r * skp + j]);
				acc[r][0] = _mm512_fmadd_ps(p, b0, acc[r][0]);
				acc[r][1] = _mm512_fmadd_ps(p, b1, acc[r][1]);
			}
		}
		__mmask16 k0 = tail_mask(d - c0), k1 = tail_mask(d - c0 - 16);
		for (int r = 0; r < R; r++) {
			__m512 iv = _mm512_set1_ps(inv[r]);
			_mm512_mask_storeu_ps(out + r * ldo + c0, k0, _mm512_mul_ps(acc[r][0], iv));
			_mm512_mask_storeu_ps(out + r * ldo + c0 + 16, k1, _mm512_mul_ps(acc[r][1], iv));
		}
	}
	if (c0 < dp) { /* one last strip of 16 */
		__m512 acc[RB];
#pragma GCC unroll 8
		for (int r = 0; r < R; r++)
			acc[r] = _mm512_setzero_ps();
		const float *b = vp + c0;
		for (int64_t j = 0; j < sk; j++, b += dp) {
			__m512 b0 = _mm512_loadu_ps(b);
#pragma GCC unroll 8
			for (int r = 0; r < R; r++)
				acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(s[r * skp + j]), b0, acc[r]);
		}
		__mmask16 k0 = tail_mask(d - c0);
		for (int r = 0; r < R; r++)
			_mm512_mask_storeu_ps(out + r * ldo + c0, k0,
			                      _mm512_mul_ps(acc[r], _mm512_set1_ps(inv[r])));
	}
}

static inline __attribute__((always_inline)) void block(int R, int64_t i0, int64_t sk,
                                                         int64_t d,
                                                         const float *q, int64_t ldq,
                                                         const float *kt, int64_t skp,
                                                         const float *vp, int64_t dp,
                                                         const float *mask, int64_t mask_ld,
                                                         int mask_step, float *out,
                                                         int64_t ldo, float *s)
{
	float mx[RB], inv[RB];
	scores(R, q + i0 * ldq, ldq, kt, skp, sk, d, mask ? mask + i0 * mask_ld : NULL,
	       mask_ld, mask_step, s, mx);
	softmax_rows(R, s, skp, sk, mx, inv);
	context(R, s, skp, sk, vp, dp, d, inv, out + i0 * ldo, ldo);
}

void rt_attn_head_avx512(int64_t sq, int64_t sk, int64_t d, float scale, const float *q,
                         int64_t ldq, const float *k, int64_t ldk, const float *v, int64_t ldv,
                         const float *mask, int64_t mask_ld, int mask_step, float *out,
                         int64_t ldo, float *work)
{
	int64_t skp = pad32(sk), dp = (d + 15) & ~(int64_t)15;
	float *kt = work, *vp = kt + d * skp, *s = vp + sk * dp;
	transpose_k(k, ldk, sk, d, scale, kt, skp);
	pack_v(v, ldv, sk, d, vp, dp);
	int64_t i0 = 0;
	for (; i0 + RB <= sq; i0 += RB)
		block(RB, i0, sk, d, q, ldq, kt, skp, vp, dp, mask, mask_ld, mask_step, out,
		      ldo, s);
#define TAIL(R)                                                                          \
	case R:                                                                          \
		block(R, i0, sk, d, q, ldq, kt, skp, vp, dp, mask, mask_ld, mask_step, \
		      out, ldo, s);                                                      \
		break;
	switch (sq - i0) {
		TAIL(1) TAIL(2) TAIL(3) TAIL(4) TAIL(5) TAIL(6) TAIL(7)
	default:
		break;
	}
#undef TAIL
}
