/*
 * qgemm_kern.h: the interface between the int8 GEMM driver (qgemm.c:
 * packing, zero points, dispatch) and its register-blocked kernels
 * (qgemm_avx2.c, qgemm_vnni.c).  Private to those three files.
 *
 * Both kernels read one layout.  A arrives packed as unsigned bytes, each
 * row K rounded up to a multiple of 4 and zero-padded, rows lda bytes
 * apart.  B arrives packed as signed bytes in strips of 16 columns; within
 * a strip, for each group of 4 k (a "quad") 16 x 4 bytes, column c's four
 * values at c * 4 (struct rt_qpacked_b in kernel.h).  A kernel computes
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

enum { QG_MR_AVX2 = 3, QG_MR_VNNI = 6 };
qgemm_tile_fn rt_qgemm_tile_avx2;
qgemm_tile_fn rt_qgemm_tile_vnni;

#endif
