/*
 * qgemm_vnni256.c: the int8 GEMM kernel on 256-bit vpdpbusd, for machines
 * with AVX-VNNI and without AVX-512 (Intel's cores from Alder Lake on).
 *
 * vpdpbusd multiplies 4 unsigned bytes of A by 4 signed bytes of B and adds
 * the four products into an int32 lane without saturation, as in
 * qgemm_vnni.c, here on 8 lanes.  A strip of 16 columns is two ymm halves
 * (packed B puts columns 0..7 of a quad in its first 32 bytes), and the
 * register block is 6 rows by one strip: 12 accumulators, the strip's two
 * B vectors and one broadcast quad of A, 15 of the 16 ymm registers that a
 * machine without AVX-512 has.  The strips of a panel go one after the
 * other, each reading the tile's rows of A again (from L1).
 *
 * The instruction exists in two encodings with the same arithmetic: VEX
 * (AVX-VNNI) and EVEX (AVX512-VNNI with AVX512VL).  The kernel is one body
 * instantiated for each: rt_qgemm_tile_avxvnni runs on AVX-VNNI machines,
 * rt_qgemm_tile_vnni256_evex on AVX-512 ones, where qgemm.c uses it only
 * when told to (rt_qgemm_force), so that the body is tested on machines
 * that lack AVX-VNNI.  The instruction is written in asm with the encoding
 * spelled out, so this file needs no flags beyond the library's AVX2.
 */
#include <immintrin.h>
#include <string.h>

#include "qgemm_kern.h"

enum { VEX, EVEX };

/* acc += the four products of each lane's bytes (a unsigned, b signed), in
 * the encoding enc (a constant after inlining). */
static inline __attribute__((always_inline)) __m256i dpbusd(int enc, __m256i acc, __m256i a,
                                                            __m256i b)
{
	if (enc == VEX)
		__asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
	else
		__asm__("%{evex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
	return acc;
}

/* R rows by one strip of 16 columns (n valid, 1..16) from j. */
static inline __attribute__((always_inline)) void
strip(int enc, const int R, int64_t kq, const uint8_t *a, int64_t lda, const int8_t *b,
      int64_t i0, int64_t j, int64_t n, const struct qgemm_fin *f)
{
	__m256i acc[QG_MR_VNNI256][2];
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		acc[r][0] = acc[r][1] = _mm256_setzero_si256();
	for (int64_t q = 0; q < kq; q++) {
		__m256i lo = _mm256_loadu_si256((const __m256i *)(b + q * 64));
		__m256i hi = _mm256_loadu_si256((const __m256i *)(b + q * 64 + 32));
#pragma GCC unroll 8
		for (int r = 0; r < R; r++) {
			int32_t w;
			memcpy(&w, a + r * lda + q * 4, sizeof w);
			__m256i av = _mm256_set1_epi32(w);
			acc[r][0] = dpbusd(enc, acc[r][0], av, lo);
			acc[r][1] = dpbusd(enc, acc[r][1], av, hi);
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < R; r++) {
		qgemm_finish8(acc[r][0], i0 + r, j, n, f);
		if (n > 8)
			qgemm_finish8(acc[r][1], i0 + r, j + 8, n - 8, f);
	}
}

static inline __attribute__((always_inline)) void
tile(int enc, int64_t rows, int64_t kq, const uint8_t *a, int64_t lda, const int8_t *b,
     int64_t sstride, int64_t i0, int64_t j0, int64_t ncols, const struct qgemm_fin *f)
{
	for (int s = 0; s < QG_PANEL / QG_STRIP && ncols > s * QG_STRIP; s++) {
		const int8_t *bs = b + s * sstride;
		int64_t j = j0 + s * QG_STRIP, n = ncols - s * QG_STRIP;
		n = n > QG_STRIP ? QG_STRIP : n;
		switch (rows) {
		case 1: strip(enc, 1, kq, a, lda, bs, i0, j, n, f); break;
		case 2: strip(enc, 2, kq, a, lda, bs, i0, j, n, f); break;
		case 3: strip(enc, 3, kq, a, lda, bs, i0, j, n, f); break;
		case 4: strip(enc, 4, kq, a, lda, bs, i0, j, n, f); break;
		case 5: strip(enc, 5, kq, a, lda, bs, i0, j, n, f); break;
		default: strip(enc, 6, kq, a, lda, bs, i0, j, n, f); break;
		}
	}
}

void rt_qgemm_tile_avxvnni(int64_t rows, int64_t kq, const uint8_t *a, int64_t lda,
                           const int8_t *b, int64_t sstride, int64_t i0, int64_t j0,
                           int64_t ncols, const struct qgemm_fin *f)
{
	tile(VEX, rows, kq, a, lda, b, sstride, i0, j0, ncols, f);
}

void rt_qgemm_tile_vnni256_evex(int64_t rows, int64_t kq, const uint8_t *a, int64_t lda,
                                const int8_t *b, int64_t sstride, int64_t i0, int64_t j0,
                                int64_t ncols, const struct qgemm_fin *f)
{
	tile(EVEX, rows, kq, a, lda, b, sstride, i0, j0, ncols, f);
}
