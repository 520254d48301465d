/*
 * attn_amx.c: one attention head on AMX tiles in bfloat16 (the contract
 * of attn.h), for models run with session.bf16_weights where the products
 * use AMX: q, scale * k, v and the softmax's exponentials rounded to
 * bfloat16 (round to nearest even) and multiplied by tdpbf16ps, whose
 * products are exact and whose sums are float.  Like the bfloat16 GEMM's,
 * the results differ from float by about 2^-8 of the magnitudes involved;
 * the softmax itself (mask, maximum, exponentials, sum) stays in float.
 *
 * The head goes in blocks of 32 query rows:
 *   1. the block's rows of q in bfloat16 (qa: 32 x dp, dp = d rounded up
 *      to 32) against scale * K in the tile layout of B (kb, once per
 *      head: strips of 16 keys, for each pair of k the 16 keys' two
 *      values) give the scores, which the tiles store straight into s
 *      (32 x skp floats, skp = sk rounded up to 32);
 *   2. each row in float: the mask added, the largest cell (NaN skipped),
 *      the exponentials in place and their sum, as attn_avx512.c does;
 *   3. the exponentials in bfloat16 (pa: 32 x skp, zero past sk) against V
 *      in the tile layout (vb, once per head: strips of 16 columns, for
 *      each pair of keys the 16 columns' two values) give 32 x dp sums in
 *      ob, scaled by 1 / the row's sum on the way out.
 *
 * Built with AVX-512, AVX512-BF16 and AMX (Makefile); fused.c calls it only
 * for such models and when rt_cpu_amx() says so.  No allocation: all of it
 * lives in work (rt_attn_amx_work_bytes).
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "attn.h"
#include "gemm_kern.h"
#include "vmath.h"

enum { QB = 32 }; /* query rows per block */

static int64_t pad32(int64_t n)
{
	return (n + 31) & ~(int64_t)31;
}

size_t rt_attn_amx_work_bytes(int64_t sq, int64_t sk, int64_t d)
{
	int64_t skp = pad32(sk), dp = pad32(d);
	(void)sq;
	size_t halves = (size_t)(2 * dp * skp + QB * dp + QB * skp); /* kb, vb, qa, pa */
	size_t floats = (size_t)(QB * skp + QB * dp + QB);         /* s, ob, inv */
	return halves * 2 + floats * 4 + 128;
}

static __mmask16 lanes(int64_t n)
{
	return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

/* One row of a tile of B: the 16 columns' values of k = 2p (x0) and 2p + 1
 * (x1) interleaved, x0[0], x1[0], x0[1], x1[1], ... */
static inline __m512i pairs(__m512 x0, __m512 x1)
{
	static const uint16_t idx[32] = { 0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
		                          37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
		                          11, 43, 12, 44, 13, 45, 14, 46, 15, 47 };
	__m256i e0 = (__m256i)_mm512_cvtneps_pbh(x0), e1 = (__m256i)_mm512_cvtneps_pbh(x1);
	return _mm512_permutex2var_epi16(_mm512_castsi256_si512(e0), _mm512_loadu_si512(idx),
	                                 _mm512_castsi256_si512(e1));
}

/* A row of A in bfloat16: w values (a multiple of 32) from n floats, zero
 * past n. */
static void put_a(const float *x, int64_t n, uint16_t *row, int64_t w)
{
	for (int64_t c = 0; c < w; c += 32) {
		__m512 lo = _mm512_maskz_loadu_ps(lanes(n - c), x + c);
		__m512 hi = _mm512_maskz_loadu_ps(lanes(n - c - 16), x + c + 16);
		/* the second operand fills the low 16 values */
		_mm512_storeu_si512(row + c, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
	}
}

/* C (32 rows, ldc floats apart) = A (32 rows of kk values, kk a multiple
 * of 32) times the nstrips strips of b (kk / 2 pairs each), two strips (32
 * columns) at a time; nstrips even. */
static void tiles(const uint16_t *a, int64_t kk, const uint16_t *b, int64_t nstrips, float *c,
                  int64_t ldc)
{
	int64_t la = kk * 2, ss = kk * 16, ldcb = ldc * 4;
	for (int64_t s = 0; s < nstrips; s += 2) {
		const uint16_t *b0 = b + s * ss, *b1 = b0 + ss;
		_tile_zero(0);
		_tile_zero(1);
		_tile_zero(2);
		_tile_zero(3);
		for (int64_t k = 0; k < kk; k += 32) {
			_tile_loadd(4, a + k, la);
			_tile_loadd(6, b0 + k * 16, 64);
			_tile_loadd(7, b1 + k * 16, 64);
			_tile_dpbf16ps(0, 4, 6);
			_tile_dpbf16ps(1, 4, 7);
			_tile_loadd(5, a + 16 * kk + k, la);
			_tile_dpbf16ps(2, 5, 6);
			_tile_dpbf16ps(3, 5, 7);
		}
		float *o = c + s * 16;
		_tile_stored(0, o, ldcb);
		_tile_stored(1, o + 16, ldcb);
		_tile_stored(2, o + 16 * ldc, ldcb);
		_tile_stored(3, o + 16 * ldc + 16, ldcb);
	}
}

/* Step 2 for the R rows of s from row r0: the mask, the maxima, the
 * exponentials in place (zero from sk to skp) and inv[r] = 1 / their sum
 * (NaN for a row all -inf or holding a NaN, as the reference Softmax
 * gives).  The rows go side by side, one strip of 16 of each in turn, so
 * that R independent sums keep the FMA ports busy. */
static inline __attribute__((always_inline)) void
softmax_rows(const int R, float *s, int64_t sk, int64_t skp, const float *mask, int64_t mask_ld,
             int mstep, float *inv)
{
	__m512 vm[8], acc[8];
#pragma GCC unroll 8
	for (int r = 0; r < R; r++) {
		float *row = s + r * skp;
		const float *mr = mask ? mask + r * mask_ld : NULL;
		__m512 vmax = _mm512_set1_ps(-__builtin_inff());
		for (int64_t j = 0; j < sk; j += 16) {
			__mmask16 k = lanes(sk - j);
			__m512 x = _mm512_maskz_loadu_ps(k, row + j);
			if (mr)
				x = _mm512_add_ps(x, mstep ? _mm512_maskz_loadu_ps(k, mr + j)
				                           : _mm512_set1_ps(mr[0]));
			_mm512_mask_storeu_ps(row + j, k, x);
			/* max_ps returns its second operand when either is NaN */
			vmax = _mm512_mask_max_ps(vmax, k, x, vmax);
		}
		float m = _mm512_reduce_max_ps(vmax);
		if (isinf(m))
			m = m > 0 ? m : 0;
		vm[r] = _mm512_set1_ps(m);
		acc[r] = _mm512_setzero_ps();
	}
	for (int64_t j = 0; j < skp; j += 16) {
		__mmask16 k = lanes(sk - j);
#pragma GCC unroll 8
		for (int r = 0; r < R; r++) {
			float *x = s + r * skp + j;
			__m512 e = _mm512_maskz_mov_ps(k, rt_exp16(_mm512_sub_ps(_mm512_loadu_ps(x), vm[r])));
			acc[r] = _mm512_add_ps(acc[r], e);
			_mm512_storeu_ps(x, e);
		}
	}
	for (int r = 0; r < R; r++)
		inv[r] = 1.0f / _mm512_reduce_add_ps(acc[r]);
}

void rt_attn_head_amx(int64_t sq, int64_t sk, int64_t d, float scale, const float *q,
                      int64_t ldq, const float *k, int64_t ldk, const float *v, int64_t ldv,
                      const float *mask, int64_t mask_ld, int mask_step, float *out,
                      int64_t ldo, float *work)
{
	int64_t skp = pad32(sk), dp = pad32(d);
	uintptr_t p = ((uintptr_t)work + 63) & ~(uintptr_t)63;
	uint16_t *kb = (uint16_t *)p, *vb = kb + dp * skp, *qa = vb + skp * dp, *pa = qa + QB * dp;
	float *s = (float *)(((uintptr_t)(pa + QB * skp) + 63) & ~(uintptr_t)63);
	float *ob = s + QB * skp, *inv = ob + QB * dp;

	/* kb: strip t holds keys 16t .. 16t + 15; its pair c / 2 the keys'
	 * scale * k of columns c and c + 1 (zero past d and past sk),
	 * gathered a column at a time */
	const __m512i rowsk = _mm512_mullo_epi32(
		_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
		_mm512_set1_epi32((int)ldk));
	const __m512 vs = _mm512_set1_ps(scale);
	for (int64_t t = 0; t < skp / 16; t++) {
		uint16_t *strip = kb + t * dp * 16;
		__mmask16 kk = lanes(sk - 16 * t);
		const float *kt = k + 16 * t * ldk;
		for (int64_t c = 0; c < dp; c += 2) {
			__m512 x0 = _mm512_setzero_ps(), x1 = _mm512_setzero_ps();
			if (c < d)
				x0 = _mm512_mul_ps(_mm512_mask_i32gather_ps(x0, kk, rowsk, kt + c, 4), vs);
			if (c + 1 < d)
				x1 = _mm512_mul_ps(_mm512_mask_i32gather_ps(x1, kk, rowsk, kt + c + 1, 4),
				                   vs);
			_mm512_storeu_si512(strip + c * 16, pairs(x0, x1));
		}
	}
	/* vb: strip t holds columns 16t .. 16t + 15; its pair j / 2 the values
	 * of keys j and j + 1 (zero past sk) */
	for (int64_t t = 0; t < dp / 16; t++) {
		uint16_t *strip = vb + t * skp * 16;
		__mmask16 kc = lanes(d - 16 * t);
		for (int64_t j = 0; j < skp; j += 2) {
			__m512 x0 = j < sk ? _mm512_maskz_loadu_ps(kc, v + j * ldv + 16 * t)
			                   : _mm512_setzero_ps();
			__m512 x1 = j + 1 < sk ? _mm512_maskz_loadu_ps(kc, v + (j + 1) * ldv + 16 * t)
			                       : _mm512_setzero_ps();
			_mm512_storeu_si512(strip + j * 16, pairs(x0, x1));
		}
	}
	for (int64_t i0 = 0; i0 < sq; i0 += QB) {
		int64_t rows = sq - i0 < QB ? sq - i0 : QB;
		for (int64_t r = 0; r < QB; r++) {
			if (r < rows)
				put_a(q + (i0 + r) * ldq, d, qa + r * dp, dp);
			else
				memset(qa + r * dp, 0, (size_t)dp * 2);
		}
		rt_amx_config();
		tiles(qa, dp, kb, skp / 16, s, skp);
		_tile_release();
		const float *m0 = mask ? mask + i0 * mask_ld : NULL;
		int64_t r = 0;
		for (; r + 8 <= rows; r += 8)
			softmax_rows(8, s + r * skp, sk, skp, m0 ? m0 + r * mask_ld : NULL, mask_ld,
			             mask_step, inv + r);
		for (; r < rows; r++)
			softmax_rows(1, s + r * skp, sk, skp, m0 ? m0 + r * mask_ld : NULL, mask_ld,
			             mask_step, inv + r);
		for (r = 0; r < QB; r++) {
			if (r < rows)
				put_a(s + r * skp, skp, pa + r * skp, skp);
			else
				memset(pa + r * skp, 0, (size_t)skp * 2);
		}
		rt_amx_config();
		tiles(pa, skp, vb, dp / 16, ob, dp);
		_tile_release();
		for (r = 0; r < rows; r++)
			for (int64_t c = 0; c < d; c += 16)
				_mm512_mask_storeu_ps(out + (i0 + r) * ldo + c, lanes(d - c),
				                      _mm512_mul_ps(_mm512_loadu_ps(ob + r * dp + c),
				                                    _mm512_set1_ps(inv[r])));
	}
}
