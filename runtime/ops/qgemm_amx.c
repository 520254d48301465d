/*
 * qgemm_amx.c: the int8 GEMM on AMX tiles.  Compiled for AVX-512 with
 * AMX-TILE and AMX-INT8; called only when rt_qgemm_isa() (qgemm.c) says
 * RT_QGEMM_AMX, which needs rt_cpu_amx_usable() (cpu.c: the CPU has the
 * tiles and Linux granted this process their state).
 *
 * A tile is 16 rows of 64 bytes.  tdpbusd takes a tile of A (16 rows by 16
 * quads of k: 64 unsigned bytes a row) and a tile of B (16 quads, each 16
 * columns by 4 signed bytes: one 64-byte row per quad) and adds the 16 x 16
 * int32 sums of the four products of each quad into a third tile, without
 * saturation, as vpdpbusd does lane by lane.  So a tile of B is 16
 * consecutive quads of one strip of the packed layout (qgemm_kern.h), read
 * with a stride of 64 bytes, and the sums are the same, bit for bit, as the
 * other kernels' (exact modulo 2^32).
 *
 * The block is 32 rows by 32 columns: four accumulator tiles (0 to 3), two
 * tiles of A (4, 5: rows 0-15 and 16-31) and two of B (6, 7: two strips),
 * each A and B tile used twice per load.  The accumulators are stored to a
 * 4 KiB buffer on the stack and finished a row at a time by the AVX-512
 * finish (qgemm_finish16), which applies the zero points, scale, bias,
 * activation and residual.
 *
 * What the driver guarantees: kq (quads of k) is a multiple of 16, the
 * packing of B zero beyond K (rt_qgemm_pack_into pads every strip to a
 * multiple of 16 quads), and every row of A readable for kq * 4 bytes (its
 * bytes past K are multiplied by those zeros).  A last block of fewer than
 * 32 rows is copied into tail (32 * kq * 4 bytes), zero-filled, so that no
 * tile reads past A; its extra rows are computed and not stored.
 *
 * The tile configuration is loaded at every call and released at its end
 * (tilerelease), so a thread holds tile state only inside this function.
 */
#include <immintrin.h>
#include <string.h>

#include "gemm_kern.h"
#include "qgemm_kern.h"

/* The tile configuration's memory layout (palette 1). */
struct tilecfg {
	uint8_t palette, start_row;
	uint8_t reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};

/* In read-only memory, not built on the stack: gcc 12 does not count
 * ldtilecfg as reading its operand and drops the stores that would fill a
 * local configuration. */
static const struct tilecfg config = {
	.palette = 1,
	.colsb = { 64, 64, 64, 64, 64, 64, 64, 64 },
	.rows = { 16, 16, 16, 16, 16, 16, 16, 16 },
};

void rt_amx_config(void)
{
	_tile_loadconfig(&config);
}

/* One block of 32 rows (rows of them stored) from a (la bytes apart) by
 * the 32 columns of strips b0 and b1 (ncols valid) at row i, column j. */
static inline __attribute__((always_inline)) void
block(int64_t i, int64_t rows, int64_t kq, const uint8_t *a0, int64_t la, const int8_t *b0,
      const int8_t *b1, int64_t j, int64_t ncols, const struct qgemm_fin *fin)
{
	int32_t c[4][16][16] __attribute__((aligned(64)));
	const uint8_t *a1 = a0 + 16 * la;
	_tile_zero(0);
	_tile_zero(1);
	_tile_zero(2);
	_tile_zero(3);
	for (int64_t q = 0; q < kq; q += 16) {
		_tile_loadd(4, a0 + q * 4, la);
		_tile_loadd(6, b0 + q * 64, 64);
		_tile_loadd(7, b1 + q * 64, 64);
		_tile_dpbusd(0, 4, 6);
		_tile_dpbusd(1, 4, 7);
		_tile_loadd(5, a1 + q * 4, la);
		_tile_dpbusd(2, 5, 6);
		_tile_dpbusd(3, 5, 7);
	}
	_tile_stored(0, c[0], 64);
	_tile_stored(1, c[1], 64);
	_tile_stored(2, c[2], 64);
	_tile_stored(3, c[3], 64);
	for (int64_t r = 0; r < rows; r++) {
		int t = r < 16 ? 0 : 2;
		qgemm_finish16(_mm512_load_si512(c[t][r & 15]), i + r, j, ncols, fin);
		if (ncols > 16)
			qgemm_finish16(_mm512_load_si512(c[t + 1][r & 15]), i + r, j + 16, ncols - 16,
			               fin);
	}
}

void rt_qgemm_amx(int64_t M, int64_t kq, const uint8_t *a, int64_t lda, const int8_t *b,
                  int64_t sstride, int64_t N, const struct qgemm_fin *f, uint8_t *tail)
{
	int64_t rowbytes = kq * 4, mfull = M / 32 * 32;
	if (mfull < M) {
		for (int64_t r = 0; r < M - mfull; r++)
			memcpy(tail + r * rowbytes, a + (mfull + r) * lda, (size_t)rowbytes);
		memset(tail + (M - mfull) * rowbytes, 0, (size_t)((32 - (M - mfull)) * rowbytes));
	}
	/* GELU goes over the product in a second pass, once the tiles are
	 * released: inside the finish, between tile instructions, it ran at
	 * half the rate (measured on the 128 x 1536 cells of a MiniLM layer:
	 * 145 us in the finish, 93 us after). */
	struct qgemm_fin fin = *f;
	int gelu = f->cf && f->act == RT_ACT_GELU_ERF && !f->res;
	if (gelu)
		fin.act = RT_ACT_NONE;
	/* Rows in chunks whose A and results fill half of L2, so that the
	 * second pass finds them there and A is read from memory once. */
	int64_t l1, l2;
	rt_cpu_caches(&l1, &l2);
	int64_t mc = l2 / 2 / (N * 4 + rowbytes) / 32 * 32;
	mc = mc < 32 ? 32 : mc;
	for (int64_t i0 = 0; i0 < M; i0 += mc) {
		int64_t iend = M - i0 < mc ? M : i0 + mc;
		rt_amx_config();
		/* Column pairs of strips outside, row blocks inside: the pair's
		 * weights (kq * 128 bytes) serve every row block of the chunk from
		 * L1. */
		for (int64_t j = 0; j < N; j += 32) {
			const int8_t *b0 = b + (j / QG_STRIP) * sstride, *b1 = b0 + sstride;
			int64_t ncols = N - j < 32 ? N - j : 32;
			for (int64_t i = i0; i < iend; i += 32)
				block(i, iend - i < 32 ? iend - i : 32, kq, i < mfull ? a + i * lda : tail,
				      i < mfull ? lda : rowbytes, b0, b1, j, ncols, &fin);
		}
		_tile_release();
		if (gelu)
			rt_gelu_rows16(f->cf + i0 * f->ldc, f->ldc, iend - i0, N);
	}
}
