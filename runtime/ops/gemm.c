/*
 * gemm.c: the single-precision GEMM driver behind MatMul, Gemm and the
 * fused linear and attention kernels: blocking, packing, CPU dispatch and
 * the pre-packed weight format.
 *
 * C[M,N] = alpha * op(A) * op(B) + beta * C, row-major, any leading
 * dimensions, op(X) = X or X^T.  The blocking follows the usual three-level
 * scheme: B is packed K x NC at a time into strips NR columns wide and K
 * blocks KC deep (so the inner kernel streams a KC x NR strip with unit
 * stride), and a register-blocked MR x NR inner kernel accumulates
 * one tile of C over KC steps and finishes it (alpha, beta, then on the
 * last K block the epilogue: bias, activation, residual).  A as stored is
 * read in place, its rows one stride apart (the kernel prefetches the next
 * tile's rows); only a transposed A is packed, MC x KC at a time, into
 * strips MR rows tall.  Packing absorbs the transposes and zero-pads the
 * ragged edges.  The kernels come from gemm_avx2.c or gemm_avx512.c,
 * picked by rt_cpu_isa() (cpu.c) on every call, so a test may switch ISAs
 * between calls; KC is the kernel's (kc_of), MC and NC come from the L2
 * size cpuid reports.
 *
 * Weights packed at load (rt_sgemm_pack_b) are already in the kernel's B
 * layout, so rt_sgemm_pb never repacks them unless the ISA or strip width
 * changed since packing; then each block is regathered into the current
 * layout (correct, slower).  A K block other than this machine's (weights
 * packed elsewhere) is read in place.  One row of A (a batch of one query)
 * uses a GEMV kernel that reads every packed weight once; one column of C
 * (a score layer) a dot product per row.
 *
 * Invariants: the packing buffers are per thread (a compiled model is shared
 * by many threads, each running its own evaluations), so rt_sgemm is
 * reentrant and allocates nothing.  beta == 0 never reads C (NaN in an
 * uninitialized output must not leak through 0 * NaN).
 */
#include <math.h>
#include <string.h>

#include "gemm_kern.h"

/* Layout 2: K blocks of strips NR wide (gemm_kern.h), NR and KC recorded
 * in the struct.  Layout 1 was B itself, K x N.  Layout 2 with any kc is
 * read in place by a kernel of the same ISA and NR. */

/* Packing buffers, in floats: A blocks of at most MC_MAX x KC_MAX (only a
 * transposed A is packed), B panels of K x NC. */
enum { MC_MAX = 384, KC_MAX = 384, PACKA_MAX = MC_MAX * KC_MAX, PACKB_MAX = 256 * 1024 };

typedef float v8sf __attribute__((vector_size(32)));

static inline v8sf fma8(v8sf a, v8sf b, v8sf c)
{
	return __builtin_ia32_vfmaddps256(a, b, c);
}

static inline v8sf load8(const float *p)
{
	v8sf v;
	memcpy(&v, p, sizeof v);
	return v;
}

static inline void store8(float *p, v8sf v)
{
	memcpy(p, &v, sizeof v);
}

static const struct gemm_kern *kern_of(int isa)
{
	return isa == RT_ISA_AVX512 ? &rt_gemm_avx512 : &rt_gemm_avx2;
}

/* Per-thread packing buffers, zero-fill-on-demand TLS: no allocation, no
 * teardown. */
static _Thread_local float packa[PACKA_MAX] __attribute__((aligned(64)));
static _Thread_local float packb[PACKB_MAX] __attribute__((aligned(64)));

/* Pack rows [i0, i0+mc) x columns [p0, p0+kc) of A^T (op(A)[i][k] =
 * A[k][i]) into mr-row strips: strip s holds, for each k, mr consecutive
 * values (rows past mc are 0).  A as stored needs no packing: the kernels
 * read its rows in place. */
static void pack_at(const float *A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
                    float *dst, int mr)
{
	for (int64_t s = 0; s < mc; s += mr) {
		int64_t rows = mc - s < mr ? mc - s : mr;
		float *d = dst + s * kc;
		const float *src = A + p0 * lda + i0 + s;
		for (int64_t k = 0; k < kc; k++) {
			const float *row = src + k * lda;
			if (rows == mr) {
				memcpy(d + k * mr, row, (size_t)mr * sizeof *d);
			} else {
				for (int r = 0; r < mr; r++)
					d[k * mr + r] = r < rows ? row[r] : 0.0f;
			}
		}
	}
}

/* Pack rows [p0, p0+kc) x columns [j0, j0+nc) of op(B) into nr-column
 * strips: strip s holds, for each k, nr consecutive values (zero-padded). */
static void pack_b(int transb, const float *B, int64_t ldb, int64_t p0, int64_t kc,
                   int64_t j0, int64_t nc, float *dst, int nr)
{
	for (int64_t s = 0; s < nc; s += nr) {
		int64_t cols = nc - s < nr ? nc - s : nr;
		float *d = dst + s * kc;
		if (!transb) {
			const float *src = B + p0 * ldb + j0 + s;
			for (int64_t k = 0; k < kc; k++) {
				memcpy(d + k * nr, src + k * ldb, (size_t)cols * sizeof *d);
				for (int64_t c = cols; c < nr; c++)
					d[k * nr + c] = 0.0f;
			}
		} else {
			/* op(B)[k][j] = B[j][k]: walk each of the nr rows of B along k */
			const float *src = B + (j0 + s) * ldb + p0;
			for (int64_t c = 0; c < nr; c++) {
				if (c < cols) {
					const float *row = src + c * ldb;
					for (int64_t k = 0; k < kc; k++)
						d[k * nr + c] = row[k];
				} else {
					for (int64_t k = 0; k < kc; k++)
						d[k * nr + c] = 0.0f;
				}
			}
		}
	}
}

/* The same block as pack_b, gathered from B packed in another layout (an
 * ISA change since packing, or layout 1). */
static void repack_b(const struct rt_packed_b *pb, int64_t p0, int64_t kc, int64_t j0,
                     int64_t nc, float *dst, int nr)
{
	int64_t pnr = pb->nr, pkc = pb->kc;
	int64_t npad = (pb->N + pnr - 1) / pnr * pnr;
	for (int64_t k = p0; k < p0 + kc; k++) {
		int64_t bp = k / pkc * pkc, kb = pb->K - bp < pkc ? pb->K - bp : pkc;
		const float *blk = pb->data + bp * npad + (k - bp) * pnr;
		for (int64_t j = 0; j < (nc + nr - 1) / nr * nr; j++) {
			int64_t jj = j0 + j;
			float v = j < nc ? blk[jj / pnr * pnr * kb + jj % pnr] : 0.0f;
			dst[j / nr * nr * kc + (k - p0) * nr + j % nr] = v;
		}
	}
}

/* Where the driver gets op(B) from: a plain matrix, a packed B in the
 * kernel's layout, or a packed B in another layout. */
struct bsrc {
	int transb;
	const float *B;
	int64_t ldb;
	const struct rt_packed_b *pb;
	int direct;            /* pb is in the kernel's layout (its ISA and NR) */
};

/* At least n, a multiple of m, splitting total into equal blocks of at
 * most max (a multiple of m): 128 rows in blocks of <= 384 are one block
 * of 132, not 126 + 2. */
static int64_t balance(int64_t total, int64_t max, int64_t m)
{
	int64_t nb = (total + max - 1) / max;
	int64_t b = (total + nb - 1) / nb;
	return (b + m - 1) / m * m;
}

/* The K block of a kernel for a reduction of length K: the kernel's
 * kc_max, split into equal blocks (K = 384 is one block, 1536 four of 384,
 * 400 two of 208 rather than 384 + 16), rounded to 16 so that a strip is a
 * whole number of cache lines.  The block is not sized to fit L1: a
 * kc x nr strip of B streams from L2 while the row tiles of A pass (one
 * B line per four FMAs, a small part of what L2 delivers, in an order the
 * hardware prefetcher follows), and the fewer the blocks, the fewer times
 * each tile of C is read back and rewritten.  On a Zen 4 core (32 KiB L1,
 * 1 MiB L2) over the transformer shapes, kc = 80 (the largest strip that
 * fits L1 beside its A rows) reached 89% of the FMA peak, kc = 384 93-94%;
 * the AVX2 kernel gained 2% from 272 to 384. */
static int64_t kc_of(const struct gemm_kern *kr, int64_t K)
{
	int64_t kc = kr->kc_max < KC_MAX ? kr->kc_max : KC_MAX;
	return K > 0 ? balance(K, kc, 16) : kc;
}

/* The B strip the driver runs after strip jr of K block pc (row block
 * ic, panel jc), with its depth in *nkc, when it should be brought into
 * L2 ahead of time; NULL when not.  Only weights packed at load are
 * fetched ahead: they are the ones that come from memory (a model's
 * layers together are far larger than L2), while a panel the driver packs
 * itself was just written and is in L2.  Within a panel only the first row
 * block fetches (the later ones find the panel in L2); the last row block
 * fetches the next panel's first strip. */
static const float *next_strip(const struct bsrc *bs, const float *base, int64_t ldp,
                               int64_t joff, int64_t k0, int64_t kl, int64_t KCb, int64_t N,
                               int64_t NCb, int64_t M, int64_t jc, int64_t nc, int64_t ic,
                               int64_t mc, int64_t pc, int64_t kc, int64_t jr, int nr,
                               int64_t *nkc)
{
	if (!bs->direct)
		return NULL;
	*nkc = kc;
	if (jr + nr < nc)
		return ic == 0 ? base + (pc - k0) * ldp + (joff + jr + nr) * kc : NULL;
	if (pc + kc < k0 + kl) {
		*nkc = k0 + kl - pc - kc < KCb ? k0 + kl - pc - kc : KCb;
		return ic == 0 ? base + (pc + kc - k0) * ldp + joff * *nkc : NULL;
	}
	if (ic + mc < M || jc + NCb >= N)
		return NULL;
	*nkc = kl < KCb ? kl : KCb;
	return base + (joff + NCb) * *nkc;
}

/* The three-level loop.  For each panel of NC columns (B: K x NC, in L2
 * when it fits) and each block of MC rows, the K blocks run innermost but
 * one, so the MC x NC block of C stays in L2 across them and is read back
 * only from there; within a K block each kc x nr strip of B serves every
 * row tile of A, from L1 or L2 (see kc_of).  Block sizes come from the L2
 * size: the B panel up to L2, the C block up to L2 / 16 (it is
 * rewritten once per K block, and a small one keeps the A rows that feed
 * it in L1 and L2 too). */
static void drive(const struct gemm_kern *kr, int transa, int64_t M, int64_t N, int64_t K,
                  float alpha, const float *A, int64_t lda, const struct bsrc *bs, float beta,
                  float *C, int64_t ldc, const struct rt_epilogue *ep)
{
	int mr = kr->mr, nr = kr->nr;
	int64_t l1, l2;
	rt_cpu_caches(&l1, &l2);
	(void)l1;
	int64_t KCb = bs->direct ? bs->pb->kc : kc_of(kr, K);
	int64_t npad = (N + nr - 1) / nr * nr;

	/* K is split into chunks only when a packed panel of one strip over
	 * all of K would overflow the buffer (K > 4096 at nr = 64) */
	int64_t KL = K;
	if (!bs->direct && K * nr > PACKB_MAX)
		KL = PACKB_MAX / nr / KCb * KCb;
	/* the B panel: up to all of L2 (and the packing buffer); measured on
	 * a 2 MiB L2, splitting N further only re-reads A more often */
	int64_t ncmax = l2 / ((int64_t)sizeof(float) * KL) / nr * nr;
	if (!bs->direct && ncmax > PACKB_MAX / KL / nr * nr)
		ncmax = PACKB_MAX / KL / nr * nr;
	if (ncmax < nr)
		ncmax = nr;
	int64_t NCb = balance(N, ncmax, nr);
	int64_t mcmax = l2 / 16 / ((int64_t)sizeof(float) * (NCb > KCb ? NCb : KCb)) / mr * mr;
	if (mcmax > MC_MAX / mr * mr)
		mcmax = MC_MAX / mr * mr;
	if (mcmax < mr)
		mcmax = mr;
	int64_t MCb = balance(M, mcmax, mr);
	/* all of M in one row block when its C block takes at most a quarter
	 * of L2 (a batch of one sequence, M = 128): each B strip, loaded into
	 * L1 once, then serves every row tile of M, and B is read exactly once.
	 * Splitting M = 128 in four (the rule above) measured 15% slower. */
	if (M <= MC_MAX && M * NCb * (int64_t)sizeof(float) <= l2 / 4)
		MCb = (M + mr - 1) / mr * mr;

	int has_ep = ep && (ep->bias || ep->act != RT_ACT_NONE || ep->residual);
	for (int64_t k0 = 0; k0 < K; k0 += KL) {
		int64_t kl = K - k0 < KL ? K - k0 : KL;
		for (int64_t jc = 0; jc < N; jc += NCb) {
			int64_t nc = N - jc < NCb ? N - jc : NCb;
			int64_t ncpad = (nc + nr - 1) / nr * nr;
			/* B block at pc, strip jr: base + (pc - k0) * ldp + (joff + jr) * kc */
			const float *base;
			int64_t ldp, joff;
			if (bs->direct) {
				base = bs->pb->data + k0 * npad;
				ldp = npad;
				joff = jc;
			} else {
				for (int64_t pc = k0; pc < k0 + kl; pc += KCb) {
					int64_t kc = k0 + kl - pc < KCb ? k0 + kl - pc : KCb;
					float *dst = packb + (pc - k0) * ncpad;
					if (bs->pb)
						repack_b(bs->pb, pc, kc, jc, nc, dst, nr);
					else
						pack_b(bs->transb, bs->B, bs->ldb, pc, kc, jc, nc, dst, nr);
				}
				base = packb;
				ldp = ncpad;
				joff = 0;
			}
			for (int64_t ic = 0; ic < M; ic += MCb) {
				int64_t mc = M - ic < MCb ? M - ic : MCb;
				for (int64_t pc = k0; pc < k0 + kl; pc += KCb) {
					int64_t kc = k0 + kl - pc < KCb ? k0 + kl - pc : KCb;
					int last = pc + kc >= K;
					/* the first K block applies beta; later ones accumulate */
					struct gemm_tile t = {alpha, pc == 0 ? beta : 1.0f, NULL,
					                      RT_ACT_NONE, NULL, 0, 0, 0, 0};
					if (last && has_ep) {
						t.act = ep->act;
						t.ldr = ep->ldr;
					}
					const float *ap;
					int64_t rs, cs;
					if (transa) {
						pack_at(A, lda, ic, mc, pc, kc, packa, mr);
						ap = packa;
						rs = 1;
						cs = mr;
					} else {
						ap = A + ic * lda + pc;
						rs = lda;
						cs = 1;
					}
					const float *bp = base + (pc - k0) * ldp + joff * kc;
					int64_t ntile = (mc + mr - 1) / mr, groups = (kc + 15) / 16;
					for (int64_t jr = 0; jr < nc; jr += nr) {
						int64_t nrr = nc - jr < nr ? nc - jr : nr;
						const float *pbs = bp + jr * kc;
						if (last && has_ep && ep->bias)
							t.bias = ep->bias + jc + jr;
						int64_t nkc;
						const float *nx = next_strip(bs, base, ldp, joff, k0, kl, KCb,
						                             N, NCb, M, jc, nc, ic, mc, pc, kc,
						                             jr, nr, &nkc);
						/* the strip's lines shared out over its row tiles */
						int64_t pfn = nx ? (nkc * nr / 16 + ntile * groups - 1) /
						                           (ntile * groups)
						                 : 0;
						for (int64_t ir = 0; ir < mc; ir += mr) {
							int64_t mrr = mc - ir < mr ? mc - ir : mr;
							t.pfn = pfn;
							t.pfb = (uintptr_t)nx +
							        (uintptr_t)(ir / mr * pfn * groups * 64);
							if (last && has_ep && ep->residual)
								t.res = ep->residual + (ic + ir) * ep->ldr +
								        jc + jr;
							/* the next tile down the strip, or the strip's
							 * first (the next strip starts there) */
							int64_t in = ir + mr < mc ? ir + mr : 0;
							t.next = (uintptr_t)(transa ? ap + in * kc
							                            : ap + in * lda);
							kr->tile(kc, transa ? ap + ir * kc : ap + ir * lda, rs,
							         cs, pbs, C + (ic + ir) * ldc + jc + jr, ldc,
							         mrr, nrr, &t);
						}
					}
				}
			}
		}
	}
}

/* C = beta * C for the K == 0 (or alpha == 0) case. */
static void scale_c(int64_t M, int64_t N, float beta, float *C, int64_t ldc)
{
	for (int64_t i = 0; i < M; i++) {
		float *c = C + i * ldc;
		for (int64_t j = 0; j < N; j++)
			c[j] = beta == 0.0f ? 0.0f : beta * c[j];
	}
}

/* A few rows of C (a batch of one or two queries through a dense layer):
 * packing B would cost as much as the product itself, so stream B once per
 * row instead.  With B as stored, each row of C accumulates scaled rows of
 * B (contiguous axpy); with B transposed, each cell is a contiguous dot
 * product of a row of A with a row of B. */
static void small_m(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha,
                    const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                    float *C, int64_t ldc)
{
	for (int64_t i = 0; i < M; i++) {
		float *c = C + i * ldc;
		/* op(A)[i][k] */
		int64_t ai = transa ? 1 : lda, ak = transa ? lda : 1;
		const float *a = A + i * ai;
		if (!transb) {
			scale_c(1, N, beta, c, ldc);
			int64_t k = 0;
			for (; k + 4 <= K; k += 4) {
				float s0 = alpha * a[k * ak], s1 = alpha * a[(k + 1) * ak];
				float s2 = alpha * a[(k + 2) * ak], s3 = alpha * a[(k + 3) * ak];
				const float *b0 = B + k * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
				v8sf v0 = (v8sf){0} + s0, v1 = (v8sf){0} + s1;
				v8sf v2 = (v8sf){0} + s2, v3 = (v8sf){0} + s3;
				int64_t j = 0;
				for (; j + 8 <= N; j += 8) {
					v8sf acc = load8(c + j);
					acc = fma8(v0, load8(b0 + j), acc);
					acc = fma8(v1, load8(b1 + j), acc);
					acc = fma8(v2, load8(b2 + j), acc);
					acc = fma8(v3, load8(b3 + j), acc);
					store8(c + j, acc);
				}
				for (; j < N; j++)
					c[j] += s0 * b0[j] + s1 * b1[j] + s2 * b2[j] + s3 * b3[j];
			}
			for (; k < K; k++) {
				float s = alpha * a[k * ak];
				const float *b = B + k * ldb;
				for (int64_t j = 0; j < N; j++)
					c[j] += s * b[j];
			}
		} else {
			for (int64_t j = 0; j < N; j++) {
				const float *b = B + j * ldb;
				v8sf acc0 = {0}, acc1 = {0};
				int64_t k = 0;
				float t = 0;
				if (ak == 1) {
					for (; k + 16 <= K; k += 16) {
						acc0 = fma8(load8(a + k), load8(b + k), acc0);
						acc1 = fma8(load8(a + k + 8), load8(b + k + 8), acc1);
					}
				}
				for (; k < K; k++)
					t += a[k * ak] * b[k];
				acc0 += acc1;
				for (int l = 0; l < 8; l++)
					t += acc0[l];
				c[j] = beta != 0.0f ? alpha * t + beta * c[j] : alpha * t;
			}
		}
	}
}

/* C[M,1] = alpha * op(A) * b + beta * C: one output column (a ranking
 * model's score layer).  The tile kernels would pad the column to a whole
 * strip and run 64 times the work; here each row of A is one contiguous
 * dot product with b. */
static void dot_n1(int transa, int64_t M, int64_t K, float alpha, const float *A, int64_t lda,
                   const float *b, float beta, float *C, int64_t ldc)
{
	for (int64_t i = 0; i < M; i++) {
		const float *a = transa ? A + i : A + i * lda;
		int64_t ak = transa ? lda : 1;
		float t = 0;
		int64_t k = 0;
		if (ak == 1) {
			v8sf acc0 = {0}, acc1 = {0};
			for (; k + 16 <= K; k += 16) {
				acc0 = fma8(load8(a + k), load8(b + k), acc0);
				acc1 = fma8(load8(a + k + 8), load8(b + k + 8), acc1);
			}
			if (k + 8 <= K) {
				acc0 = fma8(load8(a + k), load8(b + k), acc0);
				k += 8;
			}
			acc0 += acc1;
			for (int l = 0; l < 8; l++)
				t += acc0[l];
		}
		for (; k < K; k++)
			t += a[k * ak] * b[k];
		float *c = C + i * ldc;
		*c = beta != 0.0f ? alpha * t + beta * *c : alpha * t;
	}
}

static float act1(int act, float v)
{
	switch (act) {
	case RT_ACT_RELU: return v > 0 ? v : 0;
	case RT_ACT_GELU_ERF: return v * 0.5f * (1.0f + erff(v * 0.70710678118654752f));
	}
	return v;
}

/* The epilogue as a second pass, for the paths whose kernel does not
 * finish tiles (tiny M with a plain B, K == 0, alpha == 0). */
static void epilogue(int64_t M, int64_t N, float *C, int64_t ldc, const struct rt_epilogue *ep)
{
	if (!ep || (!ep->bias && ep->act == RT_ACT_NONE && !ep->residual))
		return;
	for (int64_t i = 0; i < M; i++) {
		float *c = C + i * ldc;
		for (int64_t j = 0; j < N; j++) {
			float v = c[j];
			if (ep->bias)
				v += ep->bias[j];
			v = act1(ep->act, v);
			if (ep->residual)
				v += ep->residual[i * ep->ldr + j];
			c[j] = v;
		}
	}
}

void rt_sgemm_ex(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha,
                 const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                 float *C, int64_t ldc, const struct rt_epilogue *ep)
{
	if (M <= 0 || N <= 0)
		return;
	if (K <= 0 || alpha == 0.0f) {
		scale_c(M, N, beta, C, ldc);
		epilogue(M, N, C, ldc, ep);
		return;
	}
	if (N == 1 && M > 4 && (transb || K <= PACKB_MAX)) {
		/* op(B) is one column: B's row as stored when transposed, else
		 * gathered down B's column */
		const float *b = B;
		if (!transb) {
			for (int64_t k = 0; k < K; k++)
				packb[k] = B[k * ldb];
			b = packb;
		}
		dot_n1(transa, M, K, alpha, A, lda, b, beta, C, ldc);
		epilogue(M, N, C, ldc, ep);
		return;
	}
	if (M <= 4) {
		small_m(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
		epilogue(M, N, C, ldc, ep);
		return;
	}
	struct bsrc bs = {transb, B, ldb, NULL, 0};
	drive(kern_of(rt_cpu_isa()), transa, M, N, K, alpha, A, lda, &bs, beta, C, ldc, ep);
}

void rt_sgemm(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha,
              const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
              float *C, int64_t ldc)
{
	rt_sgemm_ex(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

/* ---- packed weights ---------------------------------------------------------------- */

int rt_sgemm_pack_b(int transb, int64_t K, int64_t N, const float *B, int64_t ldb,
                    struct rt_packed_b *pb)
{
	const struct gemm_kern *kr = kern_of(rt_cpu_isa());
	memset(pb, 0, sizeof *pb);
	int64_t npad = (N + kr->nr - 1) / kr->nr * kr->nr;
	size_t bytes = (size_t)K * (size_t)npad * sizeof(float);
	pb->data = base_alloc(bytes ? bytes : 1);
	if (!pb->data)
		return STRATA_NOMEM;
	int64_t KCb = kc_of(kr, K);
	for (int64_t pc = 0; pc < K; pc += KCb) {
		int64_t kc = K - pc < KCb ? K - pc : KCb;
		pack_b(transb, B, ldb, pc, kc, 0, N, pb->data + pc * npad, kr->nr);
	}
	pb->K = K;
	pb->N = N;
	pb->version = RT_PACK_VERSION;
	pb->bytes = bytes;
	pb->owned = 1;
	pb->isa = kr->isa;
	pb->nr = kr->nr;
	pb->kc = (int)KCb;
	return 0;
}

void rt_packed_b_free(struct rt_packed_b *pb)
{
	if (pb && pb->owned)
		base_free(pb->data, pb->bytes ? pb->bytes : 1);
	if (pb)
		memset(pb, 0, sizeof *pb);
}

int rt_packed_b_layout(void)
{
	return RT_PACK_VERSION;
}

int rt_packed_b_valid(const struct rt_packed_b *pb)
{
	if (pb->version != RT_PACK_VERSION || pb->K < 0 || pb->N < 0 || !pb->data ||
	    ((uintptr_t)pb->data & 63) != 0)
		return 0;
	if (pb->isa == RT_PACK_BF16) {
		/* bfloat16 weights: only where this process multiplies them */
		if (rt_cpu_isa() != RT_ISA_AVX512 || !rt_cpu_bf16() || pb->nr != 16 || pb->K < 1 ||
		    pb->K > rt_bgemm_kmax() || pb->kc != ((pb->K + 31) & ~(int64_t)31) ||
		    pb->N > ((int64_t)1 << 40) / pb->kc)
			return 0;
		return pb->bytes == rt_bgemm_pack_bytes(pb->K, pb->N);
	}
	if (pb->isa != RT_ISA_AVX2 && pb->isa != RT_ISA_AVX512)
		return 0;
	const struct gemm_kern *kr = kern_of(pb->isa);
	if (pb->nr != kr->nr || pb->kc < 16 || pb->kc > KC_MAX)
		return 0;
	int64_t npad = (pb->N + kr->nr - 1) / kr->nr * kr->nr;
	if (pb->K > ((int64_t)1 << 40) / (npad ? npad : 1))
		return 0;
	return pb->bytes == (size_t)pb->K * (size_t)npad * sizeof(float);
}

int rt_node_next_pack(struct rt_node *n, const struct rt_packed_b **pre, struct strata_error *err)
{
	*pre = NULL;
	if (n->npacks >= RT_NODE_PACKS)
		return rt_node_err(n, err, STRATA_LIMIT, "more than %d packed weights", RT_NODE_PACKS);
	if (n->pre && n->npacks >= n->npre)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "the context holds %d packed weights for it, it needs more", n->npre);
	if (n->pre)
		*pre = &n->pre[n->npacks];
	return 0;
}

/* Whether g's model packs a K-row weight as bfloat16 on this machine
 * (only where that is faster than float: rt_cpu_bf16_faster). */
static int packs_bf16(const struct rt_graph *g, int64_t K)
{
	return g && g->model && g->model->opts.bf16_weights && rt_cpu_isa() == RT_ISA_AVX512 &&
	       rt_cpu_bf16_faster() && K <= rt_bgemm_kmax();
}

int rt_node_pack_b(struct rt_node *n, const struct rt_graph *g, int transb, int64_t K, int64_t N,
                   const float *B, int64_t ldb, struct rt_packed_b *pb, struct strata_error *err)
{
	const struct rt_packed_b *pre;
	int rc = rt_node_next_pack(n, &pre, err);
	if (rc)
		return rc;
	if (pre) {
		*pb = *pre;
		pb->owned = 0;
		if (pb->isa == RT_PACK_BF16 && pb->K == K && pb->N == N && !rt_packed_b_valid(pb))
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "packed weights %d of the context are bfloat16 "
			                   "(session.bf16_weights), which this process does not "
			                   "multiply (no AVX512-BF16, or the AVX2 kernels in use)",
			                   n->npacks);
		if (pb->K != K || pb->N != N || !rt_packed_b_valid(pb))
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "packed weights %d of the context do not fit (%lldx%lld "
			                   "wanted, %lldx%lld of layout %d found)",
			                   n->npacks, (long long)K, (long long)N, (long long)pb->K,
			                   (long long)pb->N, pb->version);
	} else if (!B) {
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "the weights have no data");
	} else if (packs_bf16(g, K)) {
		size_t bytes = rt_bgemm_pack_bytes(K, N);
		void *mem = base_alloc(bytes);
		if (!mem)
			return rt_node_nomem(n, err, "packing the weights");
		rt_bgemm_pack_into(transb, K, N, B, ldb, mem, pb);
		pb->owned = 1;
	} else if (rt_sgemm_pack_b(transb, K, N, B, ldb, pb) != 0) {
		return rt_node_nomem(n, err, "packing the weights");
	}
	n->packs[n->npacks++] = pb;
	return 0;
}

void rt_sgemm_pb(int transa, int64_t M, float alpha, const float *A, int64_t lda,
                 const struct rt_packed_b *pb, float beta, float *C, int64_t ldc,
                 const struct rt_epilogue *ep)
{
	int64_t N = pb->N, K = pb->K;
	if (M <= 0 || N <= 0)
		return;
	if (K <= 0 || alpha == 0.0f) {
		scale_c(M, N, beta, C, ldc);
		epilogue(M, N, C, ldc, ep);
		return;
	}
	if (pb->isa == RT_PACK_BF16) {
		rt_bgemm(transa, M, alpha, A, lda, pb, beta, C, ldc, ep);
		return;
	}
	struct rt_packed_b v1;
	if (pb->version == 1) {
		/* layout 1 is one K block holding one strip N wide */
		v1 = *pb;
		v1.isa = RT_ISA_AUTO;
		v1.nr = (int)N;
		v1.kc = (int)K;
		pb = &v1;
	}
	if (N == 1 && M > 1 && K <= PACKB_MAX) {
		/* the weight column, gathered out of its zero-padded strips */
		repack_b(pb, 0, K, 0, 1, packb, 1);
		dot_n1(transa, M, K, alpha, A, lda, packb, beta, C, ldc);
		epilogue(M, 1, C, ldc, ep);
		return;
	}
	const struct gemm_kern *kr = kern_of(rt_cpu_isa());
	/* any K block is read in place (the kernels take kc as an argument), as
	 * long as a transposed A's packed block fits its buffer */
	int direct = pb->isa == kr->isa && pb->nr == kr->nr && pb->kc >= 1 && pb->kc <= KC_MAX;
	if (direct && M == 1) {
		/* a batch of one: every weight is read once, by the GEMV kernel; from
		 * two rows on, the tile kernel reads each B strip once for all rows */
		struct gemm_tile t = {alpha, beta, NULL, RT_ACT_NONE, NULL, 0, 0, 0, 0};
		if (ep) {
			t.bias = ep->bias;
			t.act = ep->act;
			t.res = ep->residual;
		}
		kr->gemv(K, N, A, transa ? lda : 1, pb->data, pb->kc, C, &t);
		return;
	}
	struct bsrc bs = {0, NULL, 0, pb, direct};
	drive(kr, transa, M, N, K, alpha, A, lda, &bs, beta, C, ldc, ep);
}
