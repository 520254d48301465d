/*
 * gemm.c: the single-precision GEMM core behind MatMul, Gemm and (later) the
 * fused attention and linear kernels.
 *
 * C[M,N] = alpha * op(A) * op(B) + beta * C, row-major, any leading
 * dimensions, op(X) = X or X^T.  The blocking follows the usual three-level
 * scheme: B is packed KC x NC at a time into strips NR columns wide (so the
 * inner kernel streams it from L1/L2 with unit stride), A is packed MC x KC
 * at a time into strips MR rows tall, and a register-blocked MR x NR inner
 * kernel accumulates one tile of C over KC steps.  Packing also absorbs the
 * transposes and zero-pads the ragged edges, so the inner kernel has exactly
 * one shape.
 *
 * Invariants: the packing buffers are per thread (a compiled model is shared
 * by many threads, each running its own evaluations), so rt_sgemm is
 * reentrant and allocates nothing.  beta == 0 never reads C (NaN in an
 * uninitialized output must not leak through 0 * NaN).
 */
#include <math.h>
#include <string.h>

#include "../runtime_int.h"

/* Register block: 6 rows x 16 columns = 12 accumulators of 8 floats, plus two
 * B vectors and one broadcast A value: 15 of the 16 AVX2 registers. */
enum { MR = 6, NR = 16 };
/* Cache blocks: a KC x NR strip of B (16 KiB) stays in L1, an MC x KC block
 * of A (96 KiB) in L2, the KC x NC panel of B (1 MiB) in L2/L3. */
enum { KC = 256, MC = 96, NC = 1024 };

typedef float v8sf __attribute__((vector_size(32)));

static inline v8sf fma8(v8sf a, v8sf b, v8sf c)
{
#if defined(__FMA__)
	return __builtin_ia32_vfmaddps256(a, b, c);
#else
	return a * b + c;
#endif
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

/* Per-thread packing buffers, zero-fill-on-demand TLS: no allocation, no
 * teardown. */
static _Thread_local float packa[MC * KC] __attribute__((aligned(64)));
static _Thread_local float packb[KC * NC] __attribute__((aligned(64)));

/* Pack rows [i0, i0+mc) x columns [p0, p0+kc) of op(A) into MR-row strips:
 * strip s holds, for each k, MR consecutive values (rows past mc are 0). */
static void pack_a(int transa, const float *A, int64_t lda, int64_t i0, int64_t mc,
                   int64_t p0, int64_t kc, float *dst)
{
	for (int64_t s = 0; s < mc; s += MR) {
		int64_t rows = mc - s < MR ? mc - s : MR;
		float *d = dst + s * kc;
		if (!transa) {
			const float *src = A + (i0 + s) * lda + p0;
			if (rows == MR) {
				for (int64_t k = 0; k < kc; k++) {
					d[k * MR + 0] = src[k];
					d[k * MR + 1] = src[lda + k];
					d[k * MR + 2] = src[2 * lda + k];
					d[k * MR + 3] = src[3 * lda + k];
					d[k * MR + 4] = src[4 * lda + k];
					d[k * MR + 5] = src[5 * lda + k];
				}
			} else {
				for (int64_t k = 0; k < kc; k++)
					for (int r = 0; r < MR; r++)
						d[k * MR + r] = r < rows ? src[r * lda + k] : 0.0f;
			}
		} else {
			/* op(A)[i][k] = A[k][i]: each k row of A gives MR adjacent values */
			const float *src = A + p0 * lda + i0 + s;
			for (int64_t k = 0; k < kc; k++) {
				const float *row = src + k * lda;
				for (int r = 0; r < MR; r++)
					d[k * MR + r] = r < rows ? row[r] : 0.0f;
			}
		}
	}
}

/* Pack rows [p0, p0+kc) x columns [j0, j0+nc) of op(B) into NR-column
 * strips: strip s holds, for each k, NR consecutive values (zero-padded). */
static void pack_b(int transb, const float *B, int64_t ldb, int64_t p0, int64_t kc,
                   int64_t j0, int64_t nc, float *dst)
{
	for (int64_t s = 0; s < nc; s += NR) {
		int64_t cols = nc - s < NR ? nc - s : NR;
		float *d = dst + s * kc;
		if (!transb) {
			const float *src = B + p0 * ldb + j0 + s;
			if (cols == NR) {
				for (int64_t k = 0; k < kc; k++) {
					store8(d + k * NR, load8(src + k * ldb));
					store8(d + k * NR + 8, load8(src + k * ldb + 8));
				}
			} else {
				for (int64_t k = 0; k < kc; k++) {
					int64_t c = 0;
					for (; c < cols; c++)
						d[k * NR + c] = src[k * ldb + c];
					for (; c < NR; c++)
						d[k * NR + c] = 0.0f;
				}
			}
		} else {
			/* op(B)[k][j] = B[j][k]: walk each of the NR rows of B along k */
			const float *src = B + (j0 + s) * ldb + p0;
			for (int64_t c = 0; c < NR; c++) {
				if (c < cols) {
					const float *row = src + c * ldb;
					for (int64_t k = 0; k < kc; k++)
						d[k * NR + c] = row[k];
				} else {
					for (int64_t k = 0; k < kc; k++)
						d[k * NR + c] = 0.0f;
				}
			}
		}
	}
}

/* The inner kernel: acc = sum over kc of a-strip x b-strip, then
 * C = alpha * acc + beta * C on the mr x nr corner of the tile (beta == 0:
 * C is not read). */
static void kernel(int64_t kc, const float *restrict a, const float *restrict b, float *c,
                   int64_t ldc, int64_t mr, int64_t nr, float alpha, float beta)
{
	v8sf c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0};
	v8sf c30 = {0}, c31 = {0}, c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0};

	for (int64_t k = 0; k < kc; k++) {
		v8sf b0 = load8(b), b1 = load8(b + 8);
		v8sf a0;
		a0 = (v8sf){0} + a[0];
		c00 = fma8(a0, b0, c00);
		c01 = fma8(a0, b1, c01);
		a0 = (v8sf){0} + a[1];
		c10 = fma8(a0, b0, c10);
		c11 = fma8(a0, b1, c11);
		a0 = (v8sf){0} + a[2];
		c20 = fma8(a0, b0, c20);
		c21 = fma8(a0, b1, c21);
		a0 = (v8sf){0} + a[3];
		c30 = fma8(a0, b0, c30);
		c31 = fma8(a0, b1, c31);
		a0 = (v8sf){0} + a[4];
		c40 = fma8(a0, b0, c40);
		c41 = fma8(a0, b1, c41);
		a0 = (v8sf){0} + a[5];
		c50 = fma8(a0, b0, c50);
		c51 = fma8(a0, b1, c51);
		a += MR;
		b += NR;
	}

	v8sf acc[MR][2] = {
		{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51},
	};
	v8sf va = (v8sf){0} + alpha, vb = (v8sf){0} + beta;
	if (mr == MR && nr == NR) {
		for (int r = 0; r < MR; r++) {
			float *cr = c + r * ldc;
			v8sf x0 = acc[r][0] * va, x1 = acc[r][1] * va;
			if (beta != 0.0f) {
				x0 = fma8(load8(cr), vb, x0);
				x1 = fma8(load8(cr + 8), vb, x1);
			}
			store8(cr, x0);
			store8(cr + 8, x1);
		}
		return;
	}
	/* ragged edge: go through a spilled tile */
	float t[MR][NR];
	memcpy(t, acc, sizeof t);
	for (int64_t r = 0; r < mr; r++) {
		float *cr = c + r * ldc;
		for (int64_t j = 0; j < nr; j++)
			cr[j] = beta != 0.0f ? alpha * t[r][j] + beta * cr[j] : alpha * t[r][j];
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

void rt_sgemm(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha,
              const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
              float *C, int64_t ldc)
{
	if (M <= 0 || N <= 0)
		return;
	if (K <= 0 || alpha == 0.0f) {
		scale_c(M, N, beta, C, ldc);
		return;
	}
	if (M <= 4) {
		small_m(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
		return;
	}
	for (int64_t jc = 0; jc < N; jc += NC) {
		int64_t nc = N - jc < NC ? N - jc : NC;
		for (int64_t pc = 0; pc < K; pc += KC) {
			int64_t kc = K - pc < KC ? K - pc : KC;
			/* the first K block applies beta; later ones accumulate */
			float b = pc == 0 ? beta : 1.0f;
			pack_b(transb, B, ldb, pc, kc, jc, nc, packb);
			for (int64_t ic = 0; ic < M; ic += MC) {
				int64_t mc = M - ic < MC ? M - ic : MC;
				pack_a(transa, A, lda, ic, mc, pc, kc, packa);
				for (int64_t jr = 0; jr < nc; jr += NR) {
					int64_t nr = nc - jr < NR ? nc - jr : NR;
					const float *pb = packb + jr * kc;
					for (int64_t ir = 0; ir < mc; ir += MR) {
						int64_t mr = mc - ir < MR ? mc - ir : MR;
						kernel(kc, packa + ir * kc, pb,
						       C + (ic + ir) * ldc + jc + jr, ldc, mr, nr,
						       alpha, b);
					}
				}
			}
		}
	}
}

/* ---- packed weights and epilogues ------------------------------------------------------
 * The first layout is B itself, K x N row-major: correct and simple, the
 * reference the faster layouts are checked against. */
enum { RT_PACK_VERSION = 1 };

int rt_sgemm_pack_b(int transb, int64_t K, int64_t N, const float *B, int64_t ldb,
                    struct rt_packed_b *pb)
{
	memset(pb, 0, sizeof *pb);
	size_t bytes = (size_t)K * (size_t)N * sizeof(float);
	pb->data = base_alloc(bytes ? bytes : 1);
	if (!pb->data)
		return STRATA_NOMEM;
	for (int64_t k = 0; k < K; k++)
		for (int64_t j = 0; j < N; j++)
			pb->data[k * N + j] = transb ? B[j * ldb + k] : B[k * ldb + j];
	pb->K = K;
	pb->N = N;
	pb->version = RT_PACK_VERSION;
	pb->bytes = bytes;
	pb->owned = 1;
	return 0;
}

void rt_packed_b_free(struct rt_packed_b *pb)
{
	if (pb && pb->owned)
		base_free(pb->data, pb->bytes ? pb->bytes : 1);
	if (pb)
		memset(pb, 0, sizeof *pb);
}

static float act1(int act, float v)
{
	switch (act) {
	case RT_ACT_RELU: return v > 0 ? v : 0;
	case RT_ACT_GELU_ERF: return v * 0.5f * (1.0f + erff(v * 0.70710678118654752f));
	}
	return v;
}

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
	rt_sgemm(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
	epilogue(M, N, C, ldc, ep);
}

void rt_sgemm_pb(int transa, int64_t M, float alpha, const float *A, int64_t lda,
                 const struct rt_packed_b *pb, float beta, float *C, int64_t ldc,
                 const struct rt_epilogue *ep)
{
	rt_sgemm_ex(transa, 0, M, pb->N, pb->K, alpha, A, lda, pb->data, pb->N, beta, C, ldc, ep);
}
