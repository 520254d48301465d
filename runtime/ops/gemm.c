/*
 * gemm.c: the single-precision GEMM driver behind MatMul, Gemm and the
 * fused linear and attention kernels: blocking, packing, CPU dispatch and
 * the pre-packed weight format.
 *
 * C[M,N] = alpha * op(A) * op(B) + beta * C, row-major, any leading
 * dimensions, op(X) = X or X^T.  The blocking follows the usual three-level
 * scheme: B is packed KC x NC at a time into strips NR columns wide (so the
 * inner kernel streams it from L1/L2 with unit stride), A is packed MC x KC
 * at a time into strips MR rows tall, and a register-blocked MR x NR inner
 * kernel accumulates one tile of C over KC steps and finishes it (alpha,
 * beta, then on the last K block the epilogue: bias, activation,
 * residual).  Packing also absorbs the transposes and zero-pads the ragged
 * edges.  The kernels and their block sizes come from gemm_avx2.c or
 * gemm_avx512.c, picked by rt_cpu_isa() (cpu.c) on every call, so a test
 * may switch ISAs between calls.
 *
 * Weights packed at load (rt_sgemm_pack_b) are already in the kernel's B
 * layout, so rt_sgemm_pb never repacks them unless the ISA changed since
 * packing; then each block is regathered into the current layout (correct,
 * slower).  One row of A (a batch of one query) uses a GEMV kernel that
 * reads every packed weight once.
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
 * in the struct.  Layout 1 was B itself, K x N. */
enum { RT_PACK_VERSION = 2 };

/* Large enough for the blocks of every ISA's kernel. */
enum { PACKA_MAX = 128 * 256, PACKB_MAX = 256 * 1024 };

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

/* Pack rows [i0, i0+mc) x columns [p0, p0+kc) of op(A) into mr-row strips:
 * strip s holds, for each k, mr consecutive values (rows past mc are 0). */
static void pack_a(int transa, const float *A, int64_t lda, int64_t i0, int64_t mc,
                   int64_t p0, int64_t kc, float *dst, int mr)
{
	for (int64_t s = 0; s < mc; s += mr) {
		int64_t rows = mc - s < mr ? mc - s : mr;
		float *d = dst + s * kc;
		if (!transa) {
			const float *src = A + (i0 + s) * lda + p0;
			if (rows == mr) {
				for (int r = 0; r < mr; r++) {
					const float *row = src + r * lda;
					for (int64_t k = 0; k < kc; k++)
						d[k * mr + r] = row[k];
				}
			} else {
				for (int64_t k = 0; k < kc; k++)
					for (int r = 0; r < mr; r++)
						d[k * mr + r] = r < rows ? src[r * lda + k] : 0.0f;
			}
		} else {
			/* op(A)[i][k] = A[k][i]: each k row of A gives mr adjacent values */
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
	int direct;            /* pb is in the kernel's layout */
};

static void drive(const struct gemm_kern *kr, int transa, int64_t M, int64_t N, int64_t K,
                  float alpha, const float *A, int64_t lda, const struct bsrc *bs, float beta,
                  float *C, int64_t ldc, const struct rt_epilogue *ep)
{
	int mr = kr->mr, nr = kr->nr;
	int64_t KCb = bs->direct ? bs->pb->kc : kr->kc;
	int64_t NCb = bs->direct ? N : kr->nc;
	int64_t npad = (N + nr - 1) / nr * nr;
	int has_ep = ep && (ep->bias || ep->act != RT_ACT_NONE || ep->residual);
	for (int64_t jc = 0; jc < N; jc += NCb) {
		int64_t nc = N - jc < NCb ? N - jc : NCb;
		for (int64_t pc = 0; pc < K; pc += KCb) {
			int64_t kc = K - pc < KCb ? K - pc : KCb;
			int last = pc + kc >= K;
			const float *bp;
			if (bs->direct) {
				bp = bs->pb->data + pc * npad + jc * kc;
			} else if (bs->pb) {
				repack_b(bs->pb, pc, kc, jc, nc, packb, nr);
				bp = packb;
			} else {
				pack_b(bs->transb, bs->B, bs->ldb, pc, kc, jc, nc, packb, nr);
				bp = packb;
			}
			/* the first K block applies beta; later ones accumulate */
			struct gemm_tile t = {alpha, pc == 0 ? beta : 1.0f, NULL, RT_ACT_NONE, NULL, 0};
			if (last && has_ep) {
				t.act = ep->act;
				t.ldr = ep->ldr;
			}
			for (int64_t ic = 0; ic < M; ic += kr->mc) {
				int64_t mc = M - ic < kr->mc ? M - ic : kr->mc;
				pack_a(transa, A, lda, ic, mc, pc, kc, packa, mr);
				for (int64_t jr = 0; jr < nc; jr += nr) {
					int64_t nrr = nc - jr < nr ? nc - jr : nr;
					const float *pbs = bp + jr * kc;
					if (last && has_ep && ep->bias)
						t.bias = ep->bias + jc + jr;
					for (int64_t ir = 0; ir < mc; ir += mr) {
						int64_t mrr = mc - ir < mr ? mc - ir : mr;
						if (last && has_ep && ep->residual)
							t.res = ep->residual + (ic + ir) * ep->ldr + jc + jr;
						kr->tile(kc, packa + ir * kc, pbs,
						         C + (ic + ir) * ldc + jc + jr, ldc, mrr, nrr, &t);
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
	for (int64_t pc = 0; pc < K; pc += kr->kc) {
		int64_t kc = K - pc < kr->kc ? K - pc : kr->kc;
		pack_b(transb, B, ldb, pc, kc, 0, N, pb->data + pc * npad, kr->nr);
	}
	pb->K = K;
	pb->N = N;
	pb->version = RT_PACK_VERSION;
	pb->bytes = bytes;
	pb->owned = 1;
	pb->isa = kr->isa;
	pb->nr = kr->nr;
	pb->kc = kr->kc;
	return 0;
}

void rt_packed_b_free(struct rt_packed_b *pb)
{
	if (pb && pb->owned)
		base_free(pb->data, pb->bytes ? pb->bytes : 1);
	if (pb)
		memset(pb, 0, sizeof *pb);
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
	struct rt_packed_b v1;
	if (pb->version == 1) {
		/* layout 1 is one K block holding one strip N wide */
		v1 = *pb;
		v1.isa = RT_ISA_AUTO;
		v1.nr = (int)N;
		v1.kc = (int)K;
		pb = &v1;
	}
	const struct gemm_kern *kr = kern_of(rt_cpu_isa());
	int direct = pb->isa == kr->isa && pb->nr == kr->nr && pb->kc == kr->kc;
	if (direct && M <= 4) {
		struct gemm_tile t = {alpha, beta, NULL, RT_ACT_NONE, NULL, 0};
		if (ep) {
			t.bias = ep->bias;
			t.act = ep->act;
		}
		for (int64_t i = 0; i < M; i++) {
			t.res = ep && ep->residual ? ep->residual + i * ep->ldr : NULL;
			kr->gemv(K, N, transa ? A + i : A + i * lda, transa ? lda : 1, pb->data, pb->kc,
			         C + i * ldc, &t);
		}
		return;
	}
	struct bsrc bs = {0, NULL, 0, pb, direct};
	drive(kr, transa, M, N, K, alpha, A, lda, &bs, beta, C, ldc, ep);
}
