/*
 * gemm_kern.h: the interface between the GEMM driver (gemm.c: blocking,
 * packing, dispatch) and the register-blocked kernels of one instruction
 * set (gemm_avx2.c, gemm_avx512.c; gemm_bf16.c for weights packed as
 * bfloat16).  Private to those files and to cpu.c, which reports the cache
 * sizes the blocking is derived from.
 *
 * A reaches a kernel either in place (row-major: row stride lda, unit
 * stride along k) or packed (strips of mr rows, for each k mr consecutive
 * values, zero-padded): the kernel takes a row stride rs and a k stride
 * cs, (lda, 1) or (1, mr).  B is always packed, in strips of nr columns,
 * for each k nr consecutive values, zero-padded.  A packed B (struct
 * rt_packed_b) is a sequence of K blocks of kc rows (the last may be
 * shorter); block p starts at p * Npad (Npad = N rounded up to nr) and
 * holds its strips one after another, so column j's strip starts at
 * j * kc_p within it.  The driver's own B panels use the same layout over
 * a range of columns.
 */
#ifndef RUNTIME_OPS_GEMM_KERN_H
#define RUNTIME_OPS_GEMM_KERN_H

#include "../kernel.h"

/* The layout version of the packings this build writes (rt_packed_b). */
enum { RT_PACK_VERSION = 2 };

/* How one tile of C is finished. */
struct gemm_tile {
	float alpha, beta;     /* C = alpha * acc + beta * C; beta == 0: C not read */
	const float *bias;     /* at the tile's first column, or NULL */
	int act;               /* RT_ACT_* */
	const float *res;      /* residual at the tile's first cell, or NULL */
	int64_t ldr;
	/* the A rows of the tile the driver runs next (same rs and cs), which
	 * the kernel prefetches while it computes; an address only, never read
	 * through, so it may lie past the matrix */
	uintptr_t next;
	/* B lines to bring into L2 while the tile computes: pfn lines from pfb
	 * on every 16th k step (pfn == 0: none).  The driver points the row
	 * tiles of one strip at consecutive pieces of the strip it runs next,
	 * so weights that come from memory arrive before they are needed;
	 * an address only, like next. */
	uintptr_t pfb;
	int64_t pfn;
};

struct gemm_kern {
	int isa;
	int mr, nr;            /* register block */
	int kc_max;            /* the K block the driver aims for (gemm.c, kc_of) */
	/* C[mr' x nr'] from kc steps over mr' rows of A (row stride rs, k
	 * stride cs) and a kc x nr strip of packed B; mr' <= mr, nr' <= nr are
	 * the valid corner (columns past nr' of the strip are zero padding,
	 * rows past mr' are not read). */
	void (*tile)(int64_t kc, const float *a, int64_t rs, int64_t cs, const float *b,
	             float *c, int64_t ldc, int64_t mr, int64_t nr, const struct gemm_tile *t);
	/* One row of C (N cells) from a row of op(A) (K values, stride sa) and a
	 * packed B laid out for this kernel with K blocks of kc rows. */
	void (*gemv)(int64_t K, int64_t N, const float *a, int64_t sa, const float *pb,
	             int64_t kc, float *c, const struct gemm_tile *t);
};

extern const struct gemm_kern rt_gemm_avx2;
extern const struct gemm_kern rt_gemm_avx512;

#if defined(__AVX512F__)
#include <immintrin.h>

#include "vmath.h"

static inline __mmask16 gemm_lanes16(int64_t n)
{
	return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* The AVX-512 kernels' finish (gemm_avx512.c, gemm_bf16.c): 16 cells of
 * one row of C, x the accumulator, m the valid lanes, j the column offset
 * of those lanes within the tile. */
static inline void gemm_finish16(float *c, __m512 x, __mmask16 m, int64_t j, const float *res,
                                 const struct gemm_tile *t)
{
	if (t->alpha != 1.0f)
		x = _mm512_mul_ps(x, _mm512_set1_ps(t->alpha));
	if (t->beta == 1.0f)
		x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, c));
	else if (t->beta != 0.0f)
		x = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, c), _mm512_set1_ps(t->beta), x);
	if (t->bias)
		x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, t->bias + j));
	if (t->act == RT_ACT_RELU)
		x = _mm512_max_ps(x, _mm512_setzero_ps());
	else if (t->act == RT_ACT_GELU_ERF)
		x = rt_gelu_erf16(x);
	if (res)
		x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, res));
	if (m == 0xffff)
		_mm512_storeu_ps(c, x);
	else
		_mm512_mask_storeu_ps(c, m, x);
}

/* GELU in place over rows x n floats, rows ldc apart: the second pass of
 * the AMX kernels (qgemm_amx.c, gemm_amx.c), which run it once the tiles
 * are released (between tile instructions it ran at half the rate). */
static inline void rt_gelu_rows16(float *c, int64_t ldc, int64_t rows, int64_t n)
{
	for (int64_t r = 0; r < rows; r++) {
		float *p = c + r * ldc;
		int64_t j = 0;
		for (; j + 16 <= n; j += 16)
			_mm512_storeu_ps(p + j, rt_gelu_erf16(_mm512_loadu_ps(p + j)));
		if (j < n) {
			__mmask16 m = gemm_lanes16(n - j);
			_mm512_mask_storeu_ps(p + j, m, rt_gelu_erf16(_mm512_maskz_loadu_ps(m, p + j)));
		}
	}
}

#endif

/* Load the tile configuration of the AMX kernels (qgemm_amx.c,
 * gemm_amx.c): tiles 0 to 7, each 16 rows of 64 bytes.  Compiled with
 * AMX-TILE; the caller releases the tiles (_tile_release) when done. */
void rt_amx_config(void);

/* gemm_amx.c: rows (padded with zero rows to a multiple of 32) of
 * bfloat16 A, kp values apart (kp a multiple of 32), times the bfloat16
 * packing b (strips ss values apart) into C, each tile finished as t says
 * (bias at column 0) with res (ldr apart; NULL: none) added. */
void rt_bgemm_amx(int64_t rows, int64_t kp, const uint16_t *a, const uint16_t *b, int64_t ss,
                  int64_t N, float *c, int64_t ldc, const struct gemm_tile *t,
                  const float *res, int64_t ldr);

/* Data cache sizes of this core in bytes, from cpuid at first use (leaf 4
 * on Intel, 0x8000001D on AMD); conservative constants when the CPU does
 * not say.  cpu.c. */
void rt_cpu_caches(int64_t *l1d, int64_t *l2);

#endif
