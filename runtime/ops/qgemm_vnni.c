/*
 * qgemm_vnni.c: the AVX512-VNNI int8 GEMM kernel.  Compiled for AVX-512
 * with VNNI; called only when rt_qgemm_isa() (qgemm.c) says the machine has
 * both.
 *
 * vpdpbusd multiplies 4 unsigned bytes of A by 4 signed bytes of B and adds
 * the four products into an int32 lane, all in one instruction and without
 * saturation (the non-saturating form), so one instruction does a quad of
 * k for 16 columns and the sums are exact modulo 2^32.
 *
 * The register block is 6 rows x 4 strips (64 columns): 24 accumulators,
 * 4 B vectors and one broadcast quad of A, 29 of the 32 zmm registers.
 * Each row count has its own instance of the loop, so a ragged last row
 * tile runs only the instructions it needs; ragged columns are zero in
 * packed B and masked when stored.
 */
#include <immintrin.h>
#include <string.h>

#include "qgemm_kern.h"

/* acc += the four products of each lane's bytes (a unsigned, b signed).  In
 * asm because gcc 12 copies the accumulator of _mm512_dpbusd_epi32 through
 * other registers and the stack on every step (measured: 5x slower). */
static inline __m512i dpbusd(__m512i acc, __m512i a, __m512i b)
{
	__asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
	return acc;
}

static inline __attribute__((always_inline)) void
body(const int R, int64_t kq, const uint8_t *a, int64_t lda, const int8_t *b, int64_t ss,
     int64_t i0, int64_t j0, int64_t ncols, const struct qgemm_fin *f)
{
	__m512i acc[QG_MR_VNNI][4];
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		for (int s = 0; s < 4; s++)
			acc[r][s] = _mm512_setzero_si512();
	const int8_t *b0 = b, *b1 = b + ss, *b2 = b + 2 * ss, *b3 = b + 3 * ss;
	for (int64_t q = 0; q < kq; q++) {
		__m512i v0 = _mm512_loadu_si512(b0 + q * 64), v1 = _mm512_loadu_si512(b1 + q * 64);
		__m512i v2 = _mm512_loadu_si512(b2 + q * 64), v3 = _mm512_loadu_si512(b3 + q * 64);
#pragma GCC unroll 8
		for (int r = 0; r < R; r++) {
			int32_t w;
			memcpy(&w, a + r * lda + q * 4, sizeof w);
			__m512i av = _mm512_set1_epi32(w);
			acc[r][0] = dpbusd(acc[r][0], av, v0);
			acc[r][1] = dpbusd(acc[r][1], av, v1);
			acc[r][2] = dpbusd(acc[r][2], av, v2);
			acc[r][3] = dpbusd(acc[r][3], av, v3);
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		for (int s = 0; s < 4; s++)
			if (ncols > s * QG_STRIP)
				qgemm_finish16(acc[r][s], i0 + r, j0 + s * QG_STRIP, ncols - s * QG_STRIP, f);
}

void rt_qgemm_tile_vnni(int64_t rows, int64_t kq, const uint8_t *a, int64_t lda,
                        const int8_t *b, int64_t sstride, int64_t i0, int64_t j0,
                        int64_t ncols, const struct qgemm_fin *f)
{
	switch (rows) {
	case 1: body(1, kq, a, lda, b, sstride, i0, j0, ncols, f); break;
	case 2: body(2, kq, a, lda, b, sstride, i0, j0, ncols, f); break;
	case 3: body(3, kq, a, lda, b, sstride, i0, j0, ncols, f); break;
	case 4: body(4, kq, a, lda, b, sstride, i0, j0, ncols, f); break;
	case 5: body(5, kq, a, lda, b, sstride, i0, j0, ncols, f); break;
	default: body(6, kq, a, lda, b, sstride, i0, j0, ncols, f); break;
	}
}
