/*
 * qgemm_kern.h: the interface between the int8 GEMM driver (qgemm.c:
 * packing, zero points, dispatch) and its register-blocked kernels
 * (qgemm_avx2.c, qgemm_vnni.c, qgemm_vnni256.c).  Private to those files.
 *
 * All kernels read one layout.  A arrives packed as unsigned bytes, each
 * row K rounded up to a multiple of 4 and zero-padded, rows lda bytes
 * apart.  B arrives packed as signed bytes in strips of 16 columns; within
 * a strip, for each group of 4 k (a "quad") 16 x 4 bytes, column c's four
 * values at c * 4 (struct rt_qpacked_b in kernel.h), every strip padded
 * with zero quads to a multiple of 16 (one AMX tile of k: qgemm_amx.c).  A kernel computes
 * the raw sums acc[i][j] = sum_k a'[i][k] * b'[k][j] in int32, which wrap
 * like any int32 (exact modulo 2^32), and finishes each cell with the
 * zero-point terms (see struct qgemm_fin) before it stores it as int32 or
 * converts it to float.
 */
#ifndef RUNTIME_OPS_QGEMM_KERN_H
#define RUNTIME_OPS_QGEMM_KERN_H

#include "../kernel.h"

enum { QG_STRIP = 16, QG_PANEL = 64 }; /* columns per strip; per kernel call (4 strips) */

/* How the raw sums become results: for row i and column j
 *   v = acc - zb[j] * rs[i] + za[i] * cb[j]        (int32, wrapping)
 * which is sum_k (a'[i][k] - za[i]) * (b'[k][j] - zb[j]) with rs[i] the
 * sum of row i of a' and cb[j] = K * zb[j] - (sum of column j of b').
 * Then ci[i * ldc + j] = v, or cf[i * ldc + j] = act((float)v * sc[j] (+
 * bias[j])) (+ res[i * ldr + j]).  rs and za have M entries, zb, cb and
 * sc one per padded column (QG_PANEL multiple), bias N (read under a
 * mask). */
struct qgemm_fin {
	const int32_t *rs, *za, *zb, *cb;
	int32_t *ci;
	float *cf;
	const float *sc, *bias;
	int64_t ldc;
	int zb_zero;           /* every zb[j] is 0: the zb term is skipped */
	const int32_t *zc;     /* every za[i] is one value z: z * cb[j] per padded
	                          column, added instead of the product; or NULL */
	int act;               /* RT_ACT_* */
	const float *res;
	int64_t ldr;
};

/* Rows [i0, i0 + rows) (rows <= the kernel's MR) by the QG_PANEL columns
 * from j0 (ncols of them valid, 1..QG_PANEL): kq quads of A rows (lda
 * bytes apart, from a) against 4 strips of B from b, strips sstride bytes
 * apart. */
typedef void qgemm_tile_fn(int64_t rows, int64_t kq, const uint8_t *a, int64_t lda,
                           const int8_t *b, int64_t sstride, int64_t i0, int64_t j0,
                           int64_t ncols, const struct qgemm_fin *f);

enum { QG_MR_AVX2 = 3, QG_MR_VNNI = 6, QG_MR_VNNI256 = 6 };
qgemm_tile_fn rt_qgemm_tile_avx2;
qgemm_tile_fn rt_qgemm_tile_vnni;
/* qgemm_vnni256.c: one kernel, vpdpbusd on ymm, in two encodings: VEX
 * (AVX-VNNI) and EVEX (AVX512-VNNI with AVX512VL). */
qgemm_tile_fn rt_qgemm_tile_avxvnni;
qgemm_tile_fn rt_qgemm_tile_vnni256_evex;
/* qgemm_amx.c: the whole product, M rows by N columns, on AMX tiles: kq a
 * multiple of 16 (quads of A rows, lda bytes apart, each readable for
 * kq * 4 bytes), B's strips sstride bytes apart, tail scratch of
 * 32 * kq * 4 bytes. */
void rt_qgemm_amx(int64_t M, int64_t kq, const uint8_t *a, int64_t lda, const int8_t *b,
                  int64_t sstride, int64_t N, const struct qgemm_fin *f, uint8_t *tail);

#if defined(__AVX2__)
#include <immintrin.h>

#include "vmath.h"

static inline __m256i qgemm_lanes(int64_t n)
{
	__m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	int v = n < 0 ? 0 : n > 8 ? 8 : (int)n;
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(v), idx);
}

/* The finish of the 256-bit kernels (AVX2, AVX-VNNI): 8 columns (n valid)
 * of row i from j.  Whole vectors are read and written plainly: vmaskmov
 * stores cost several times a plain store. */
static inline __attribute__((always_inline)) void
qgemm_finish8(__m256i v, int64_t i, int64_t j, int64_t n, const struct qgemm_fin *f)
{
	int whole = n >= 8;
	__m256i m = qgemm_lanes(n);
	__m256i zb = _mm256_loadu_si256((const __m256i *)(f->zb + j));
	__m256i cb = _mm256_loadu_si256((const __m256i *)(f->cb + j));
	if (!f->zb_zero)
		v = _mm256_sub_epi32(v, _mm256_mullo_epi32(zb, _mm256_set1_epi32(f->rs[i])));
	if (f->zc)
		v = _mm256_add_epi32(v, _mm256_loadu_si256((const __m256i *)(f->zc + j)));
	else
		v = _mm256_add_epi32(v, _mm256_mullo_epi32(cb, _mm256_set1_epi32(f->za[i])));
	if (!f->cf) {
		if (whole)
			_mm256_storeu_si256((__m256i *)(f->ci + i * f->ldc + j), v);
		else
			_mm256_maskstore_epi32((int *)(f->ci + i * f->ldc + j), m, v);
		return;
	}
	__m256 x = _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_loadu_ps(f->sc + j));
	if (f->bias)
		x = _mm256_add_ps(x, whole ? _mm256_loadu_ps(f->bias + j)
		                           : _mm256_maskload_ps(f->bias + j, m));
	if (f->act == RT_ACT_RELU)
		x = _mm256_max_ps(x, _mm256_setzero_ps());
	else if (f->act == RT_ACT_GELU_ERF)
		x = rt_gelu_erf8(x);
	float *c = f->cf + i * f->ldc + j;
	if (whole) {
		if (f->res)
			x = _mm256_add_ps(x, _mm256_loadu_ps(f->res + i * f->ldr + j));
		_mm256_storeu_ps(c, x);
	} else {
		if (f->res)
			x = _mm256_add_ps(x, _mm256_maskload_ps(f->res + i * f->ldr + j, m));
		_mm256_maskstore_ps(c, m, x);
	}
}

#endif

#if defined(__AVX512F__)

/* The finish of the 512-bit kernels (AVX512-VNNI, AMX): 16 columns (n
 * valid, 1..16) of row i from j.  Whole vectors are read and written
 * unmasked: a masked store costs several times a plain one on Zen 4 (measured: the epilogue of a 128 x 384 x 384 layer took
 * 18 us masked, 7 us plain). */
static inline __attribute__((always_inline)) void
qgemm_finish16(__m512i v, int64_t i, int64_t j, int64_t n, const struct qgemm_fin *f)
{
	int whole = n >= 16;
	__mmask16 m = (__mmask16)(whole ? 0xffff : (1u << n) - 1);
	__m512i zb = _mm512_loadu_si512(f->zb + j), cb = _mm512_loadu_si512(f->cb + j);
	if (!f->zb_zero)
		v = _mm512_sub_epi32(v, _mm512_mullo_epi32(zb, _mm512_set1_epi32(f->rs[i])));
	if (f->zc)
		v = _mm512_add_epi32(v, _mm512_loadu_si512(f->zc + j));
	else
		v = _mm512_add_epi32(v, _mm512_mullo_epi32(cb, _mm512_set1_epi32(f->za[i])));
	if (!f->cf) {
		if (whole)
			_mm512_storeu_si512(f->ci + i * f->ldc + j, v);
		else
			_mm512_mask_storeu_epi32(f->ci + i * f->ldc + j, m, v);
		return;
	}
	__m512 x = _mm512_mul_ps(_mm512_cvtepi32_ps(v), _mm512_loadu_ps(f->sc + j));
	if (f->bias)
		x = _mm512_add_ps(x, whole ? _mm512_loadu_ps(f->bias + j)
		                           : _mm512_maskz_loadu_ps(m, f->bias + j));
	if (f->act == RT_ACT_RELU)
		x = _mm512_max_ps(x, _mm512_setzero_ps());
	else if (f->act == RT_ACT_GELU_ERF)
		x = rt_gelu_erf16(x);
	float *c = f->cf + i * f->ldc + j;
	if (whole) {
		if (f->res)
			x = _mm512_add_ps(x, _mm512_loadu_ps(f->res + i * f->ldr + j));
		_mm512_storeu_ps(c, x);
	} else {
		if (f->res)
			x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, f->res + i * f->ldr + j));
		_mm512_mask_storeu_ps(c, m, x);
	}
}

#endif

#endif
