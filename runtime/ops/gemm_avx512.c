/*
 * gemm_avx512.c: the AVX-512 GEMM kernels (compiled with -mavx512f and
 * friends; gemm.c calls them only when rt_cpu_isa() is RT_ISA_AVX512).
 *
 * The register block is 6 x 64: 24 zmm accumulators, four B vectors and
 * one broadcast A value, 29 of the 32 registers.  Per k it issues 24 FMAs
 * against 10 loads, so both FMA pipes stay busy with load ports to spare;
 * the 24 independent chains cover the FMA latency of two pipes.  Taller
 * blocks with fewer B vectors (8 x 32, 14 x 32) lose to it on two-pipe
 * cores because each k step re-broadcasts more A values per FMA, and 64
 * divides every hidden width the ranking models use (64, 256, 384, 768,
 * 1536).  A kc x 64 strip of B (96 KiB at kc = 384) serves every row tile
 * of A from L2 (gemm.c's kc_of says why not from L1).
 *
 * Each (rows, vectors) corner has its own instance of the loop, chosen
 * per tile: the last row tile of M = 128 (2 rows) or a strip of 32
 * columns (an attention head) runs only the FMAs it needs instead of a
 * full 6 x 64 block of padding.  Ragged columns use lane masks on the
 * loads and stores of C (masked lanes never fault).
 *
 * The tile's finish applies alpha, beta and the fused epilogue (bias,
 * RELU or GELU, residual) while the accumulators are still in registers:
 * C is written once per K block.
 */
#include <immintrin.h>

#include "gemm_kern.h"
#include "vmath.h"

enum { MR = 6, NR = 64, NV = NR / 16 };
/* Largest K block: one block for the hidden widths up to 384, so each C
 * tile is written once (gemm.c, kc_of). */
enum { KC_MAX = 384 };

/* The K loop for R rows and V vectors of 16 columns; R and V are
 * constants in every instance, so the accumulators live in registers.  It
 * hands them over through memory: inlined into one function with the
 * finish, the finish's constants crowd the register allocator into
 * spilling accumulators inside the loop. */
static inline __attribute__((always_inline)) void
kloop(const int R, const int V, int64_t kc, const float *a, int64_t rs, int64_t cs,
      const float *b, const struct gemm_tile *t, __m512 *out)
{
	__m512 acc[MR][NV];
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
#pragma GCC unroll 4
		for (int v = 0; v < V; v++)
			acc[r][v] = _mm512_setzero_ps();
	const float *a0 = a, *a3 = R > 3 ? a + 3 * rs : a;
	/* one cache line of each of the next tile's rows per 16 steps: A rows
	 * read in place are 6 short streams the hardware prefetcher does not
	 * pick up, so without this each tile would wait on L3 for its A */
	intptr_t prs = (intptr_t)(cs == 1 ? rs : 16) * 4, pcs = (intptr_t)cs * 4;
	uintptr_t next = t->next, pfb = t->pfb;
	int64_t pfn = t->pfn;
	for (int64_t k = 0; k < kc; k++) {
		if ((k & 15) == 0) {
#pragma GCC unroll 8
			for (int r = 0; r < MR; r++)
				_mm_prefetch((const char *)(next + r * prs + k * pcs), _MM_HINT_T0);
			for (int64_t i = 0; i < pfn; i++, pfb += 64)
				_mm_prefetch((const char *)pfb, _MM_HINT_T1);
		}
		__m512 bv[NV];
#pragma GCC unroll 4
		for (int v = 0; v < V; v++)
			bv[v] = _mm512_loadu_ps(b + 16 * v);
#pragma GCC unroll 8
		for (int r = 0; r < R; r++) {
			__m512 av = _mm512_set1_ps(r < 3 ? a0[r * rs] : a3[(r - 3) * rs]);
#pragma GCC unroll 4
			for (int v = 0; v < V; v++)
				acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
		}
		a0 += cs;
		a3 += cs;
		b += NR;
	}
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
#pragma GCC unroll 4
		for (int v = 0; v < V; v++)
			out[r * NV + v] = acc[r][v];
}

/* The finish of a tile in general (masks, alpha, beta, epilogue): one
 * out-of-line copy, so the GELU code is not repeated in every instance. */
static __attribute__((noinline)) void finish_tile(const __m512 *acc, int rows, int vecs, float *c,
                                                  int64_t ldc, int64_t nr,
                                                  const struct gemm_tile *t)
{
	for (int r = 0; r < rows; r++) {
		float *cr = c + r * ldc;
		const float *res = t->res ? t->res + r * t->ldr : NULL;
		for (int v = 0; v < vecs; v++)
			gemm_finish16(cr + 16 * v, acc[r * NV + v], gemm_lanes16(nr - 16 * v), 16 * v,
			         res ? res + 16 * v : NULL, t);
	}
}

/* The finish of a whole tile with GELU (the feed-forward up-projection):
 * one loop over its vectors with nothing decided per vector, so the GELU's
 * constants stay in registers across the tile. */
static __attribute__((noinline)) void finish_gelu(const __m512 *acc, int rows, int vecs, float *c,
                                                  int64_t ldc, int add, const float *bias,
                                                  const float *res, int64_t ldr)
{
	for (int r = 0; r < rows; r++) {
		float *cr = c + r * ldc;
		for (int v = 0; v < vecs; v++) {
			__m512 x = acc[r * NV + v];
			if (add)
				x = _mm512_add_ps(x, _mm512_loadu_ps(cr + 16 * v));
			if (bias)
				x = _mm512_add_ps(x, _mm512_loadu_ps(bias + 16 * v));
			x = rt_gelu_erf16(x);
			if (res)
				x = _mm512_add_ps(x, _mm512_loadu_ps(res + r * ldr + 16 * v));
			_mm512_storeu_ps(cr + 16 * v, x);
		}
	}
}

static inline __attribute__((always_inline)) void
body(const int R, const int V, int64_t kc, const float *a, int64_t rs, int64_t cs,
     const float *b, float *c, int64_t ldc, int64_t nr, const struct gemm_tile *t)
{
	/* C is read or written at the end; start fetching its lines now, for
	 * writing, so neither the loads nor the stores (whose misses would fill
	 * the store buffer) wait on L2 or L3 */
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
#pragma GCC unroll 4
		for (int v = 0; v < V; v++)
			__builtin_prefetch(c + r * ldc + 16 * v, 1, 3);
	__m512 acc[MR * NV];
	kloop(R, V, kc, a, rs, cs, b, t, acc);
	__asm__ volatile("" : : "r"(acc) : "memory");
	/* the common finishes inline: a whole tile, C = acc or C += acc, plus
	 * bias, RELU and residual (every linear layer of a transformer has a
	 * bias, and its out-projection and FFN-down a residual); GELU in a
	 * loop of its own; alpha, other betas and ragged columns take the
	 * general path */
	if (nr >= 16 * V && t->alpha == 1.0f && (t->beta == 0.0f || t->beta == 1.0f) &&
	    (t->act == RT_ACT_NONE || t->act == RT_ACT_RELU)) {
		int add = t->beta != 0.0f, relu = t->act == RT_ACT_RELU;
		const float *bias = t->bias, *res = t->res;
		__m512 bv[NV];
#pragma GCC unroll 4
		for (int v = 0; v < V; v++)
			bv[v] = bias ? _mm512_loadu_ps(bias + 16 * v) : _mm512_setzero_ps();
#pragma GCC unroll 8
		for (int r = 0; r < R; r++) {
			float *cr = c + r * ldc;
#pragma GCC unroll 4
			for (int v = 0; v < V; v++) {
				__m512 x = acc[r * NV + v];
				if (add)
					x = _mm512_add_ps(x, _mm512_loadu_ps(cr + 16 * v));
				if (bias)
					x = _mm512_add_ps(x, bv[v]);
				if (relu)
					x = _mm512_max_ps(x, _mm512_setzero_ps());
				if (res)
					x = _mm512_add_ps(x, _mm512_loadu_ps(res + r * t->ldr + 16 * v));
				_mm512_storeu_ps(cr + 16 * v, x);
			}
		}
		return;
	}
	if (nr >= 16 * V && t->alpha == 1.0f && (t->beta == 0.0f || t->beta == 1.0f) &&
	    t->act == RT_ACT_GELU_ERF) {
		finish_gelu(acc, R, V, c, ldc, t->beta != 0.0f, t->bias, t->res, t->ldr);
		return;
	}
	finish_tile(acc, R, V, c, ldc, nr, t);
}

typedef void tile_fn(int64_t kc, const float *a, int64_t rs, int64_t cs, const float *b,
                     float *c, int64_t ldc, int64_t nr, const struct gemm_tile *t);

#define TILE(R, V)                                                                           \
	static void tile_##R##_##V(int64_t kc, const float *a, int64_t rs, int64_t cs,       \
	                           const float *b, float *c, int64_t ldc, int64_t nr,        \
	                           const struct gemm_tile *t)                                \
	{                                                                                    \
		body(R, V, kc, a, rs, cs, b, c, ldc, nr, t);                                 \
	}
#define TILES(R) TILE(R, 1) TILE(R, 2) TILE(R, 3) TILE(R, 4)
TILES(1) TILES(2) TILES(3) TILES(4) TILES(5) TILES(6)
#undef TILES
#undef TILE

static tile_fn *const tiles[MR][NV] = {
	{tile_1_1, tile_1_2, tile_1_3, tile_1_4}, {tile_2_1, tile_2_2, tile_2_3, tile_2_4},
	{tile_3_1, tile_3_2, tile_3_3, tile_3_4}, {tile_4_1, tile_4_2, tile_4_3, tile_4_4},
	{tile_5_1, tile_5_2, tile_5_3, tile_5_4}, {tile_6_1, tile_6_2, tile_6_3, tile_6_4},
};

static void tile(int64_t kc, const float *a, int64_t rs, int64_t cs, const float *b, float *c,
                 int64_t ldc, int64_t mr, int64_t nr, const struct gemm_tile *t)
{
	int64_t v = nr >= NR ? NV : (nr + 15) / 16;
	tiles[mr - 1][v - 1](kc, a, rs, cs, b, c, ldc, nr, t);
}

/* One strip of the GEMV: V vectors of one row of C over every K block.
 * Two sets of accumulators (even and odd k) keep 2 * V FMA chains in
 * flight, enough to take B from L2 at a line per cycle. */
static inline __attribute__((always_inline)) void
gemv_strip(const int V, int64_t K, int64_t npad, int64_t j0, const float *a, int64_t sa,
           const float *pb, int64_t kc, __m512 *out)
{
	__m512 s[2][NV];
#pragma GCC unroll 4
	for (int v = 0; v < V; v++)
		s[0][v] = s[1][v] = _mm512_setzero_ps();
	for (int64_t p = 0; p < K; p += kc) {
		int64_t kb = K - p < kc ? K - p : kc;
		const float *b = pb + p * npad + j0 * kb;
		const float *ap = a + p * sa;
		int64_t k = 0;
		for (; k + 1 < kb; k += 2, b += 2 * NR) {
			__m512 a0 = _mm512_set1_ps(ap[k * sa]), a1 = _mm512_set1_ps(ap[(k + 1) * sa]);
#pragma GCC unroll 4
			for (int v = 0; v < V; v++) {
				s[0][v] = _mm512_fmadd_ps(a0, _mm512_loadu_ps(b + 16 * v), s[0][v]);
				s[1][v] = _mm512_fmadd_ps(a1, _mm512_loadu_ps(b + NR + 16 * v), s[1][v]);
			}
		}
		if (k < kb) {
			__m512 a0 = _mm512_set1_ps(ap[k * sa]);
#pragma GCC unroll 4
			for (int v = 0; v < V; v++)
				s[0][v] = _mm512_fmadd_ps(a0, _mm512_loadu_ps(b + 16 * v), s[0][v]);
		}
	}
#pragma GCC unroll 4
	for (int v = 0; v < V; v++)
		out[v] = _mm512_add_ps(s[0][v], s[1][v]);
}

static void gemv(int64_t K, int64_t N, const float *a, int64_t sa, const float *pb, int64_t kc,
                 float *c, const struct gemm_tile *t)
{
	int64_t npad = (N + NR - 1) / NR * NR;
	for (int64_t j0 = 0; j0 < N; j0 += NR) {
		int64_t nr = N - j0;
		__m512 s[NV];
		if (nr > 48)
			gemv_strip(4, K, npad, j0, a, sa, pb, kc, s);
		else if (nr > 32)
			gemv_strip(3, K, npad, j0, a, sa, pb, kc, s);
		else if (nr > 16)
			gemv_strip(2, K, npad, j0, a, sa, pb, kc, s);
		else
			gemv_strip(1, K, npad, j0, a, sa, pb, kc, s);
		struct gemm_tile tj = *t;
		if (tj.bias)
			tj.bias += j0;
		const float *res = t->res ? t->res + j0 : NULL;
		for (int v = 0; v < NV && 16 * v < nr; v++)
			gemm_finish16(c + j0 + 16 * v, s[v], gemm_lanes16(nr - 16 * v), 16 * v,
			         res ? res + 16 * v : NULL, &tj);
	}
}

const struct gemm_kern rt_gemm_avx512 = {
	.isa = RT_ISA_AVX512, .mr = MR, .nr = NR, .kc_max = KC_MAX,
	.tile = tile, .gemv = gemv,
};
