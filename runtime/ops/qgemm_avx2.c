/*
 * qgemm_avx2.c: the AVX2 int8 GEMM kernel, for machines without VNNI (and
 * STRATA_CPU=avx2).
 *
 * vpmaddubsw would multiply unsigned by signed bytes in one step, but it
 * adds neighbouring products into a saturating int16 (255 * 127 * 2 does not
 * fit), so its sums are not always exact.  This kernel widens instead: the
 * four bytes of a quad of A become int16 (vpmovzxbw), each 16-byte piece of
 * B (four columns of one quad) becomes int16 (vpmovsxbw), and vpmaddwd
 * adds pairs of int16 products into int32, where 255 * 128 * 2 fits with
 * room to spare.  Each int32 lane then holds half a column's quad, (k0, k1)
 * or (k2, k3); the halves are added once, when the tile is finished.
 *
 * The register block is 3 rows x one strip (16 columns): 12 accumulators,
 * 3 widened A quads, one widened B piece.
 */
#include <immintrin.h>
#include <string.h>

#include "qgemm_kern.h"
#include "vmath.h"

static inline __attribute__((always_inline)) void
strip(const int R, int64_t kq, const uint8_t *a, int64_t lda, const int8_t *b, int64_t i0,
      int64_t j0, int64_t ncols, const struct qgemm_fin *f)
{
	__m256i acc[QG_MR_AVX2][4];
#pragma GCC unroll 4
	for (int r = 0; r < R; r++)
		for (int v = 0; v < 4; v++)
			acc[r][v] = _mm256_setzero_si256();
	for (int64_t q = 0; q < kq; q++) {
		__m256i av[QG_MR_AVX2];
#pragma GCC unroll 4
		for (int r = 0; r < R; r++) {
			int32_t w;
			memcpy(&w, a + r * lda + q * 4, sizeof w);
			av[r] = _mm256_cvtepu8_epi16(_mm_set1_epi32(w));
		}
		const int8_t *bq = b + q * 64;
#pragma GCC unroll 4
		for (int v = 0; v < 4; v++) {
			__m256i bv = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(bq + v * 16)));
#pragma GCC unroll 4
			for (int r = 0; r < R; r++)
				acc[r][v] = _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(av[r], bv));
		}
	}
	/* lanes (2c, 2c+1) of acc[r][v] are the two halves of column 4v + c:
	 * hadd pairs them (in the order c0 c1 c4 c5 | c2 c3 c6 c7), the
	 * permute restores column order */
#pragma GCC unroll 4
	for (int r = 0; r < R; r++) {
		__m256i lo = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][0], acc[r][1]), 0xD8);
		__m256i hi = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][2], acc[r][3]), 0xD8);
		qgemm_finish8(lo, i0 + r, j0, ncols, f);
		if (ncols > 8)
			qgemm_finish8(hi, i0 + r, j0 + 8, ncols - 8, f);
	}
}

void rt_qgemm_tile_avx2(int64_t rows, int64_t kq, const uint8_t *a, int64_t lda,
                        const int8_t *b, int64_t sstride, int64_t i0, int64_t j0,
                        int64_t ncols, const struct qgemm_fin *f)
{
	for (int s = 0; s < QG_PANEL / QG_STRIP && ncols > s * QG_STRIP; s++) {
		const int8_t *bs = b + s * sstride;
		int64_t j = j0 + s * QG_STRIP, n = ncols - s * QG_STRIP;
		n = n > QG_STRIP ? QG_STRIP : n;
		for (int64_t r = 0; r < rows; r += QG_MR_AVX2) {
			const uint8_t *ar = a + r * lda;
			switch (rows - r) {
			case 1: strip(1, kq, ar, lda, bs, i0 + r, j, n, f); break;
			case 2: strip(2, kq, ar, lda, bs, i0 + r, j, n, f); break;
			default: strip(3, kq, ar, lda, bs, i0 + r, j, n, f); break;
			}
		}
	}
}
