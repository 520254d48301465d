/*
 * gemm_kern.h: the interface between the GEMM driver (gemm.c: blocking,
 * packing, dispatch) and the register-blocked kernels of one instruction
 * set (gemm_avx2.c, gemm_avx512.c).  Private to those three files.
 *
 * Packed operands: A in strips of mr rows, for each k mr consecutive
 * values; B in strips of nr columns, for each k nr consecutive values,
 * both zero-padded.  A packed B (struct rt_packed_b) is a sequence of K
 * blocks of kc rows (the last may be shorter); block p starts at
 * p * Npad (Npad = N rounded up to nr) and holds its strips one after
 * another, so column j's strip starts at j * kc_p within it.
 */
#ifndef RUNTIME_OPS_GEMM_KERN_H
#define RUNTIME_OPS_GEMM_KERN_H

#include "../runtime_int.h"

/* How one tile of C is finished. */
struct gemm_tile {
	float alpha, beta;     /* C = alpha * acc + beta * C; beta == 0: C not read */
	const float *bias;     /* at the tile's first column, or NULL */
	int act;               /* RT_ACT_* */
	const float *res;      /* residual at the tile's first cell, or NULL */
	int64_t ldr;
};

struct gemm_kern {
	int isa;
	int mr, nr;            /* register block */
	int kc, mc, nc;        /* cache blocks (mc a multiple of mr, nc of nr) */
	/* C[mr' x nr'] from kc steps over an a-strip and a b-strip; mr' <= mr,
	 * nr' <= nr are the valid corner (the rest of the tile is padding). */
	void (*tile)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
	             int64_t mr, int64_t nr, const struct gemm_tile *t);
	/* One row of C (N cells) from a row of op(A) (K values, stride sa) and a
	 * packed B laid out for this kernel. */
	void (*gemv)(int64_t K, int64_t N, const float *a, int64_t sa, const float *pb,
	             int kc, float *c, const struct gemm_tile *t);
};

extern const struct gemm_kern rt_gemm_avx2;
extern const struct gemm_kern rt_gemm_avx512;

#endif
