/*
 * gemm_amx.c: the bfloat16 GEMM on AMX tiles (session.bf16_weights).
 * Compiled for AVX-512 with AMX-TILE and AMX-BF16; gemm_bf16.c calls it
 * for each block of converted rows of A when rt_cpu_amx() says so.
 *
 * tdpbf16ps takes a tile of A (16 rows by 16 pairs of k: 32 bfloat16
 * values, 64 bytes, a row) and a tile of B (16 pairs of k, each 16 columns
 * by 2 values: one 64-byte row per pair) and adds the sums of the 16 x 16
 * products of pairs into a tile of floats.  A tile of B is therefore 16
 * consecutive pairs of one strip of the bfloat16 packing (gemm_bf16.c),
 * read with a stride of 64 bytes; the packing pads K to a multiple of 32
 * (one tile of k) with zeros, and the converted rows of A are zero past K,
 * so a ragged K reads zero products.
 *
 * The products are exact and the sums float, as with vdpbf16ps, but the
 * order in which the tile adds its products differs from the vector
 * kernel's, so the two agree within float rounding, not bit for bit.
 *
 * The block is 32 rows by 32 columns: accumulator tiles 0 to 3, tiles of A
 * 4 and 5 (rows 0-15, 16-31), tiles of B 6 and 7 (two strips).  The
 * accumulators go to a 4 KiB buffer on the stack and each row is finished
 * by the AVX-512 finish (gemm_finish16: alpha, beta, bias, activation,
 * residual; GELU without a residual in a second pass, rt_gelu_rows16).
 * The caller's rows of A number a multiple of 32 (the extra ones zero);
 * only the first rows are finished.
 */
#include <immintrin.h>
#include <string.h>

#include "gemm_kern.h"

void rt_bgemm_amx(int64_t rows, int64_t kp, const uint16_t *a, const uint16_t *b, int64_t ss,
                  int64_t N, float *c, int64_t ldc, const struct gemm_tile *tt,
                  const float *res, int64_t ldr)
{
	float acc[4][16][16] __attribute__((aligned(64)));
	int64_t la = kp * 2; /* bytes between rows of A */
	struct gemm_tile t0 = *tt;
	int gelu = tt->act == RT_ACT_GELU_ERF && !res;
	if (gelu)
		t0.act = RT_ACT_NONE; /* a second pass, below */
	rt_amx_config();
	for (int64_t i = 0; i < rows; i += 32) {
		const uint16_t *a0 = a + i * kp, *a1 = a0 + 16 * kp;
		int64_t nr = rows - i < 32 ? rows - i : 32;
		for (int64_t j = 0; j < N; j += 32) {
			const uint16_t *b0 = b + (j / 16) * ss, *b1 = b0 + ss;
			_tile_zero(0);
			_tile_zero(1);
			_tile_zero(2);
			_tile_zero(3);
			for (int64_t k = 0; k < kp; k += 32) {
				_tile_loadd(4, a0 + k, la);
				_tile_loadd(6, b0 + k * 16, 64);
				_tile_loadd(7, b1 + k * 16, 64);
				_tile_dpbf16ps(0, 4, 6);
				_tile_dpbf16ps(1, 4, 7);
				_tile_loadd(5, a1 + k, la);
				_tile_dpbf16ps(2, 5, 6);
				_tile_dpbf16ps(3, 5, 7);
			}
			_tile_stored(0, acc[0], 64);
			_tile_stored(1, acc[1], 64);
			_tile_stored(2, acc[2], 64);
			_tile_stored(3, acc[3], 64);
			int64_t ncols = N - j < 32 ? N - j : 32;
			struct gemm_tile t = t0;
			t.bias = tt->bias ? tt->bias + j : NULL;
			for (int64_t r = 0; r < nr; r++) {
				int q = r < 16 ? 0 : 2;
				float *cr = c + (i + r) * ldc + j;
				const float *rr = res ? res + (i + r) * ldr + j : NULL;
				gemm_finish16(cr, _mm512_load_ps(acc[q][r & 15]), gemm_lanes16(ncols), 0, rr,
				              &t);
				if (ncols > 16)
					gemm_finish16(cr + 16, _mm512_load_ps(acc[q + 1][r & 15]),
					              gemm_lanes16(ncols - 16), 16, rr ? rr + 16 : NULL, &t);
			}
		}
	}
	_tile_release();
	if (gelu)
		rt_gelu_rows16(c, ldc, rows, N);
}
