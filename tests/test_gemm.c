/*
 * test_gemm.c: the GEMM core (runtime/ops/gemm.c and its AVX2 and AVX-512
 * kernels) against a double-precision reference: rt_sgemm, rt_sgemm_ex and
 * rt_sgemm_pb over ragged sizes, every transpose combination, alpha and
 * beta (beta 0 over NaN), leading dimensions wider than the matrices, and
 * every epilogue; under each ISA the machine has, with weights packed
 * under one ISA and run under the other, or by hand with a K block the
 * kernels were not tuned for; the driver's blocking past one B panel and
 * past one packing buffer of K, the inline finishes and the transformer
 * shapes whose weights are fetched ahead, the one-column dot products, the
 * GELU's accuracy over its range; and the STRATA_CPU selection.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../runtime/kernel.h"
#include "../runtime/runtime_int.h"

static const int64_t sizes[] = {1, 2, 7, 15, 16, 17, 31, 33, 64, 130, 383};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

static uint32_t rng = 12345;

static float frand(void)
{
	rng = rng * 1664525u + 1013904223u;
	return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static float *mat(int64_t rows, int64_t ld)
{
	float *p = malloc((size_t)(rows * ld + 1) * sizeof *p);
	assert_non_null(p);
	for (int64_t i = 0; i < rows * ld + 1; i++)
		p[i] = frand();
	return p;
}

static double act_ref(int act, double v)
{
	if (act == RT_ACT_RELU)
		return v > 0 ? v : 0;
	if (act == RT_ACT_GELU_ERF)
		return v * 0.5 * (1.0 + erf(v / sqrt(2.0)));
	return v;
}

/* One product checked against the reference.  pb: use rt_sgemm_pb with B
 * packed under pack_isa.  A and B hold op() in the stated transposes. */
static void check(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha,
                  float beta, const struct rt_epilogue *ep0, int pb, int pack_isa, int run_isa)
{
	int64_t lda = (transa ? M : K) + 3, ldb = (transb ? K : N) + 5, ldc = N + 2;
	float *A = mat(transa ? K : M, lda), *B = mat(transb ? N : K, ldb), *C = mat(M, ldc);
	float *bias = mat(1, N), *res = mat(M, N + 1);
	double *ref = malloc((size_t)(M * N) * sizeof *ref);
	assert_non_null(ref);
	struct rt_epilogue ep = {0};
	if (ep0) {
		ep = *ep0;
		if (ep.bias)
			ep.bias = bias;
		if (ep.residual) {
			ep.residual = res;
			ep.ldr = N + 1;
		}
	}
	double *mag = malloc((size_t)(M * N) * sizeof *mag);
	assert_non_null(mag);
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			double s = 0, m = 0;
			for (int64_t k = 0; k < K; k++) {
				double a = transa ? A[k * lda + i] : A[i * lda + k];
				double b = transb ? B[j * ldb + k] : B[k * ldb + j];
				s += a * b;
				m += fabs(a * b);
			}
			double v = alpha * s;
			if (beta != 0.0f)
				v += beta * (double)C[i * ldc + j];
			if (ep0) {
				if (ep.bias)
					v += ep.bias[j];
				v = act_ref(ep.act, v);
				if (ep.residual)
					v += ep.residual[i * ep.ldr + j];
			}
			ref[i * N + j] = v;
			mag[i * N + j] = fabs(alpha) * m + fabs(beta * C[i * ldc + j]) + 4.0;
		}
	if (beta == 0.0f)
		for (int64_t i = 0; i < M * ldc; i++)
			C[i] = NAN;

	if (pb) {
		struct rt_packed_b p;
		assert_int_equal(rt_cpu_force(pack_isa), 0);
		assert_int_equal(rt_sgemm_pack_b(transb, K, N, B, ldb, &p), 0);
		assert_int_equal(p.isa, pack_isa);
		assert_int_equal(rt_cpu_force(run_isa), 0);
		rt_sgemm_pb(transa, M, alpha, A, lda, &p, beta, C, ldc, ep0 ? &ep : NULL);
		rt_packed_b_free(&p);
	} else {
		assert_int_equal(rt_cpu_force(run_isa), 0);
		if (ep0)
			rt_sgemm_ex(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, &ep);
		else
			rt_sgemm(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
	}

	for (int64_t i = 0; i < M; i++) {
		for (int64_t j = 0; j < N; j++) {
			double got = C[i * ldc + j], want = ref[i * N + j];
			if (!(fabs(got - want) <= 1e-5 * mag[i * N + j])) {
				fail_msg("M=%lld N=%lld K=%lld ta=%d tb=%d pb=%d isa %d/%d act=%d: "
				         "C[%lld,%lld] = %.8g, want %.8g",
				         (long long)M, (long long)N, (long long)K, transa, transb, pb,
				         pack_isa, run_isa, ep0 ? ep0->act : -1, (long long)i,
				         (long long)j, got, want);
			}
		}
		/* the padding past N is never written */
		assert_false(isnan(C[i * ldc + N]) != (beta == 0.0f));
	}
	free(A);
	free(B);
	free(C);
	free(bias);
	free(res);
	free(ref);
	free(mag);
}

static int has_avx512(void)
{
	if (rt_cpu_best() == RT_ISA_AVX512)
		return 1;
	print_message("    (no AVX-512 on this machine: its half of the test is skipped)\n");
	return 0;
}

/* The size triples: each size meets every other as M, N and K. */
static void each_shape(void (*fn)(int64_t, int64_t, int64_t, int), int isa)
{
	for (int i = 0; i < NSIZES; i++) {
		fn(sizes[i], sizes[(i + 3) % NSIZES], sizes[(i + 7) % NSIZES], isa);
		fn(sizes[(i + 5) % NSIZES], sizes[i], sizes[(i + 9) % NSIZES], isa);
		fn(sizes[(i + 2) % NSIZES], sizes[(i + 6) % NSIZES], sizes[i], isa);
	}
}

static void plain(int64_t M, int64_t N, int64_t K, int isa)
{
	for (int t = 0; t < 4; t++) {
		check(t & 1, t >> 1, M, N, K, 1.0f, 0.0f, NULL, 0, isa, isa);
		check(t & 1, t >> 1, M, N, K, -0.75f, 0.5f, NULL, 0, isa, isa);
	}
	if (M == sizes[0]) {
		/* several M, N and K blocks, with the epilogue on the last K block */
		static const struct rt_epilogue gelu = {(const float *)1, RT_ACT_GELU_ERF, NULL, 0};
		check(0, 1, 130, 1050, 260, 1.0f, 0.0f, &gelu, 0, isa, isa);
		check(1, 0, 130, 1050, 260, 1.0f, 1.0f, &gelu, 1, isa, isa);
	}
}

static void with_ep(int64_t M, int64_t N, int64_t K, int isa)
{
	static const struct rt_epilogue eps[] = {
		{(const float *)1, RT_ACT_NONE, NULL, 0},
		{NULL, RT_ACT_RELU, NULL, 0},
		{(const float *)1, RT_ACT_GELU_ERF, NULL, 0},
		{NULL, RT_ACT_NONE, (const float *)1, 0},
		{(const float *)1, RT_ACT_GELU_ERF, (const float *)1, 0},
	};
	for (size_t e = 0; e < sizeof eps / sizeof eps[0]; e++) {
		int t = (int)e % 4;
		check(t & 1, t >> 1, M, N, K, 1.0f, 0.0f, &eps[e], 0, isa, isa);
		check(t >> 1, t & 1, M, N, K, 0.5f, 1.0f, &eps[e], 1, isa, isa);
	}
}

static void packed(int64_t M, int64_t N, int64_t K, int isa)
{
	static const struct rt_epilogue gelu = {(const float *)1, RT_ACT_GELU_ERF, NULL, 0};
	int other = rt_cpu_best() == RT_ISA_AVX512 ? (isa == RT_ISA_AVX2 ? RT_ISA_AVX512 : RT_ISA_AVX2)
	                                           : isa;
	for (int t = 0; t < 4; t++) {
		check(t & 1, t >> 1, M, N, K, 1.0f, 0.0f, NULL, 1, isa, isa);
		check(t & 1, t >> 1, M, N, K, 2.0f, -1.0f, &gelu, 1, isa, isa);
		/* packed under one ISA, run under the other */
		check(t & 1, t >> 1, M, N, K, 1.0f, 0.0f, &gelu, 1, isa, other);
	}
	/* one to four rows: the GEMV path */
	for (int64_t m = 1; m <= 4; m++) {
		check(0, 1, m, N, K, 1.0f, 0.0f, &gelu, 1, isa, isa);
		check(1, 0, m, N, K, 1.0f, 0.25f, NULL, 1, isa, isa);
	}
}

static void run_isa(void (*fn)(int64_t, int64_t, int64_t, int), int isa)
{
	if (isa == RT_ISA_AVX512 && !has_avx512())
		return;
	each_shape(fn, isa);
	rt_cpu_force(RT_ISA_AUTO);
}

static void test_sgemm_avx2(void **st) { (void)st; run_isa(plain, RT_ISA_AVX2); }
static void test_sgemm_avx512(void **st) { (void)st; run_isa(plain, RT_ISA_AVX512); }
static void test_epilogue_avx2(void **st) { (void)st; run_isa(with_ep, RT_ISA_AVX2); }
static void test_epilogue_avx512(void **st) { (void)st; run_isa(with_ep, RT_ISA_AVX512); }
static void test_packed_avx2(void **st) { (void)st; run_isa(packed, RT_ISA_AVX2); }
static void test_packed_avx512(void **st) { (void)st; run_isa(packed, RT_ISA_AVX512); }

/* Shapes that take the driver past its single-block cases: N split into
 * several B panels (K x N larger than L2), K longer than one packing
 * buffer holds for a strip (K * nr > 256 Ki floats), and M split into
 * several row blocks. */
static void blocking(int isa)
{
	static const struct rt_epilogue ep = {(const float *)1, RT_ACT_RELU, (const float *)1, 0};
	check(0, 0, 13, 600, 2000, 1.0f, 0.0f, &ep, 0, isa, isa);
	check(1, 1, 13, 600, 2000, 0.5f, 1.0f, NULL, 1, isa, isa);
	check(0, 1, 7, 70, 17000, 1.0f, 0.0f, &ep, 0, isa, isa);
	check(1, 0, 5, 40, 4500, 1.0f, 0.5f, NULL, 0, isa, isa);
	check(0, 0, 700, 70, 40, 1.0f, 0.0f, &ep, 1, isa, isa);
}

static void test_blocking_avx2(void **st) { (void)st; blocking(RT_ISA_AVX2); rt_cpu_force(RT_ISA_AUTO); }
static void test_blocking_avx512(void **st)
{
	(void)st;
	if (has_avx512())
		blocking(RT_ISA_AVX512);
	rt_cpu_force(RT_ISA_AUTO);
}

/* The finishes the tile applies inline (alpha 1, beta 0 or 1, bias, RELU
 * and residual in any combination, over whole and ragged tiles), and the
 * shapes of a transformer's layers with packed weights: all rows of M in
 * one row block while N spans several B panels, whose strips the driver
 * fetches ahead of the tiles. */
static void finishes(int isa)
{
	for (int e = 0; e < 8; e++) {
		struct rt_epilogue ep = {(e & 1) ? (const float *)1 : NULL,
		                         (e & 2) ? RT_ACT_RELU : RT_ACT_NONE,
		                         (e & 4) ? (const float *)1 : NULL, 0};
		for (int beta = 0; beta <= 1; beta++) {
			check(0, 0, 130, 200, 300, 1.0f, (float)beta, &ep, 1, isa, isa);
			check(0, 1, 31, 64, 17, 1.0f, (float)beta, &ep, 0, isa, isa);
		}
	}
	static const struct rt_epilogue bias_res = {(const float *)1, RT_ACT_NONE, (const float *)1, 0};
	static const struct rt_epilogue gelu = {(const float *)1, RT_ACT_GELU_ERF, NULL, 0};
	check(0, 0, 20, 700, 1536, 1.0f, 0.0f, &bias_res, 1, isa, isa);
	check(0, 0, 128, 1536, 384, 1.0f, 0.0f, &gelu, 1, isa, isa);
	check(0, 0, 128, 384, 1536, 1.0f, 0.0f, &bias_res, 1, isa, isa);
	check(1, 0, 40, 1300, 900, 1.0f, 1.0f, &bias_res, 1, isa, isa);
	/* one output column (a score layer): the dot-product path, packed or
	 * not, every transpose, with and without beta and epilogue; K past
	 * one K block and not a multiple of 8 */
	static const struct rt_epilogue relu_res = {(const float *)1, RT_ACT_RELU,
	                                            (const float *)1, 0};
	for (int t = 0; t < 4; t++) {
		check(t & 1, t >> 1, 1000, 1, 64, 1.0f, 0.0f, NULL, 0, isa, isa);
		check(t & 1, t >> 1, 37, 1, 301, 0.5f, 2.0f, &relu_res, 0, isa, isa);
		check(t & 1, t >> 1, 37, 1, 301, 0.5f, 2.0f, &relu_res, 1, isa, isa);
		check(t & 1, t >> 1, 1000, 1, 7, 1.0f, 0.0f, &gelu, 1, isa, isa);
	}
}

static void test_finishes_avx2(void **st) { (void)st; finishes(RT_ISA_AVX2); rt_cpu_force(RT_ISA_AUTO); }
static void test_finishes_avx512(void **st)
{
	(void)st;
	if (has_avx512())
		finishes(RT_ISA_AVX512);
	rt_cpu_force(RT_ISA_AUTO);
}

/* A packed B whose K block is not the one this machine would pick (a
 * layout written elsewhere and mapped back): read in place, any kc. */
static void hand_packed(int isa)
{
	static const int64_t kcs[] = {1, 16, 37, 64, 384};
	static const int64_t shapes[][3] = {{1, 70, 100}, {3, 64, 129}, {9, 130, 400}, {40, 33, 64}};
	assert_int_equal(rt_cpu_force(isa), 0);
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
		float *A = mat(M, K), *B = mat(K, N), *C = mat(M, N), *bias = mat(1, N);
		for (size_t q = 0; q < sizeof kcs / sizeof kcs[0]; q++) {
			struct rt_packed_b p;
			assert_int_equal(rt_sgemm_pack_b(0, K, N, B, N, &p), 0);
			/* relayout p->data with K blocks of kcs[q] rows */
			int64_t kc = kcs[q], nr = p.nr, npad = (N + nr - 1) / nr * nr;
			for (int64_t k = 0; k < K; k++) {
				int64_t bp = k / kc * kc, kb = K - bp < kc ? K - bp : kc;
				for (int64_t j = 0; j < npad; j++)
					p.data[bp * npad + j / nr * nr * kb + (k - bp) * nr + j % nr] =
					        j < N ? B[k * N + j] : 0.0f;
			}
			p.kc = (int)kc;
			struct rt_epilogue ep = {bias, RT_ACT_NONE, NULL, 0};
			for (int64_t i = 0; i < M * N; i++)
				C[i] = NAN;
			rt_sgemm_pb(0, M, 1.0f, A, K, &p, 0.0f, C, N, &ep);
			for (int64_t i = 0; i < M; i++)
				for (int64_t j = 0; j < N; j++) {
					double want = bias[j], mag = 4.0;
					for (int64_t k = 0; k < K; k++) {
						want += (double)A[i * K + k] * B[k * N + j];
						mag += fabs((double)A[i * K + k] * B[k * N + j]);
					}
					if (!(fabs(C[i * N + j] - want) <= 1e-5 * mag))
						fail_msg("hand-packed kc=%lld M=%lld N=%lld K=%lld: C[%lld,%lld] "
						         "= %.8g, want %.8g", (long long)kc, (long long)M,
						         (long long)N, (long long)K, (long long)i, (long long)j,
						         C[i * N + j], want);
				}
			rt_packed_b_free(&p);
		}
		free(A);
		free(B);
		free(C);
		free(bias);
	}
	rt_cpu_force(RT_ISA_AUTO);
}

static void test_hand_packed_avx2(void **st) { (void)st; hand_packed(RT_ISA_AVX2); }
static void test_hand_packed_avx512(void **st)
{
	(void)st;
	if (has_avx512())
		hand_packed(RT_ISA_AVX512);
}

/* The GELU epilogue against the double formula: relative error within
 * 1e-6 over [-12.5, 12.5] (the tiny values far below zero included), 0
 * below, x above, NaN kept; on the tile path (8 rows) and the GEMV path
 * (1 row), C = gelu(a_i + bias_j) with K = 1 and B = 1, the biases a dense
 * sweep of [-10, 10] that rows 5 and 6 shift past both ends. */
static void gelu_range(int isa)
{
	enum { M = 8, N = 4001 };
	static float B[N], bias[N], C[M * N];
	float A[M] = {0.0f, 0.00371f, -0.0113f, NAN, 0.0071f, 4.5f, -5.5f, 1e-3f};
	for (int j = 0; j < N; j++) {
		B[j] = 1.0f;
		bias[j] = (float)j * 0.005f - 10.0f;
	}
	assert_int_equal(rt_cpu_force(isa), 0);
	struct rt_packed_b p;
	assert_int_equal(rt_sgemm_pack_b(0, 1, N, B, N, &p), 0);
	struct rt_epilogue ep = {bias, RT_ACT_GELU_ERF, NULL, 0};
	for (int rows = 1; rows <= M; rows += M - 1) {
		rt_sgemm_pb(0, rows, 1.0f, A, 1, &p, 0.0f, C, N, &ep);
		for (int i = 0; i < rows; i++)
			for (int j = 0; j < N; j++) {
				float got = C[i * N + j];
				if (isnan(A[i])) {
					assert_true(isnan(got));
					continue;
				}
				float xf = A[i] + bias[j];
				double x = xf;
				double want = x * 0.5 * erfc(-x / sqrt(2.0));
				int ok = x < -12.5 ? got == 0.0f
				       : x > 12.5  ? got == xf
				                   : fabs(got - want) <= 1e-6 * fabs(want) + 1e-38;
				if (!ok)
					fail_msg("gelu(%.9g) = %.9g, want %.9g (rows %d)", x, got, want, rows);
			}
	}
	rt_packed_b_free(&p);
	rt_cpu_force(RT_ISA_AUTO);
}

static void test_gelu_avx2(void **st) { (void)st; gelu_range(RT_ISA_AVX2); }
static void test_gelu_avx512(void **st)
{
	(void)st;
	if (has_avx512())
		gelu_range(RT_ISA_AVX512);
}

/* Degenerate sizes: K == 0 and alpha == 0 scale C (beta 0: zero it, NaN or
 * not); M or N == 0 touches nothing. */
/* ---- weights packed as bfloat16 (gemm_bf16.c) ------------------------------ */

/* x rounded to bfloat16 and back. */
static double bf(float x)
{
	return base_bf16_to_f32(base_f32_to_bf16(x));
}

/* rt_bgemm against the double products of the operands rounded to bfloat16
 * (what the instruction multiplies): within the float sums' rounding, over
 * ragged sizes, both transposes, alpha, beta and the epilogue. */
static void bf16_case(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, float beta,
                      int ep_on)
{
	int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 1;
	float *A = mat(ta ? K : M, lda), *B = mat(tb ? N : K, ldb), *C = mat(M, ldc);
	float *bias = mat(1, N), *res = mat(M, N);
	double *want = malloc((size_t)(M * N) * sizeof *want);
	double *mag = malloc((size_t)(M * N) * sizeof *mag);
	assert_non_null(want);
	assert_non_null(mag);
	/* the bfloat16 operands, exactly: the double result, and the sum of
	 * the magnitudes of what the float sums add */
	struct rt_epilogue ep = { bias, RT_ACT_GELU_ERF, res, N };
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			double s = 0, m = 0;
			for (int64_t k = 0; k < K; k++) {
				double p = bf(ta ? A[k * lda + i] : A[i * lda + k]) *
				           bf(tb ? B[j * ldb + k] : B[k * ldb + j]);
				s += p;
				m += fabs(alpha * p);
			}
			double v = alpha * s + (beta != 0 ? beta * C[i * ldc + j] : 0);
			if (ep_on) {
				v += bias[j];
				v = v * 0.5 * erfc(-v / sqrt(2.0)) + res[i * N + j];
			}
			want[i * N + j] = v;
			mag[i * N + j] = m + fabs(beta * C[i * ldc + j]) + (ep_on ? fabs(bias[j]) + 1 : 0);
		}
	float *C2 = mat(M, ldc);
	memcpy(C2, C, (size_t)(M * ldc) * sizeof *C);
	size_t bytes = rt_bgemm_pack_bytes(K, N);
	void *mem = aligned_alloc(64, (bytes + 63) / 64 * 64);
	assert_non_null(mem);
	struct rt_packed_b pb;
	rt_bgemm_pack_into(tb, K, N, B, ldb, mem, &pb);
	assert_int_equal(pb.isa, RT_PACK_BF16);
	assert_true(rt_packed_b_valid(&pb));
	rt_sgemm_pb(ta, M, alpha, A, lda, &pb, beta, C2, ldc, ep_on ? &ep : NULL);
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			/* float sums of K products: at most K roundings of 2^-24 of
			 * their magnitudes, and the epilogue's own (GELU: 1e-6) */
			double got = C2[i * ldc + j], w = want[i * N + j];
			if (!(fabs(got - w) <= 6e-8 * (double)(K + 16) * mag[i * N + j] + 2e-6 * fabs(w) +
			                        1e-30))
				fail_msg("bf16 %s%s %lldx%lldx%lld alpha %g beta %g ep %d: C[%lld,%lld] is %.9g, "
				         "not %.9g", ta ? "T" : "N", tb ? "T" : "N", (long long)M,
				         (long long)N, (long long)K, alpha, beta, ep_on, (long long)i,
				         (long long)j, got, w);
		}
	free(mem);
	free(A);
	free(B);
	free(C);
	free(C2);
	free(bias);
	free(res);
	free(want);
	free(mag);
}

/* Both bfloat16 kernels where the machine has them: vdpbf16ps (AVX-512
 * forced) and the AMX tiles (auto mode, where rt_cpu_amx). */
static void test_bf16_weights(void **st)
{
	(void)st;
	if (!rt_cpu_bf16())
		skip();
	static const int64_t shapes[][3] = { { 1, 1, 1 },     { 2, 5, 3 },      { 7, 17, 33 },
		                             { 6, 64, 64 },   { 13, 70, 130 },  { 5, 129, 383 },
		                             { 1, 384, 384 }, { 20, 100, 2 },   { 32, 32, 32 },
		                             { 33, 47, 65 },  { 64, 96, 256 },  { 31, 16, 130 } };
	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(rt_cpu_force(pass == 0 ? RT_ISA_AVX512 : RT_ISA_AUTO), 0);
		if (pass == 1 && !rt_cpu_amx())
			break;
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
			for (int t = 0; t < 4; t++)
				bf16_case(t & 1, t >> 1, shapes[s][0], shapes[s][1], shapes[s][2],
				          t == 3 ? 0.5f : 1.0f, t == 2 ? 1.0f : 0.0f, t & 1);
		/* K past the A buffer's row block: rows in several blocks */
		bf16_case(0, 0, 600, 40, 2048, 1.0f, 0.0f, 0);
	}
	assert_int_equal(rt_cpu_force(RT_ISA_AUTO), 0);
}

static void test_degenerate(void **st)
{
	(void)st;
	float A[4] = {1, 2, 3, 4}, B[4] = {1, 2, 3, 4}, C[4] = {NAN, NAN, NAN, NAN};
	rt_sgemm(0, 0, 2, 2, 0, 1.0f, A, 2, B, 2, 0.0f, C, 2);
	for (int i = 0; i < 4; i++)
		assert_true(C[i] == 0.0f);
	C[0] = 2;
	rt_sgemm(0, 0, 2, 2, 2, 0.0f, A, 2, B, 2, 0.5f, C, 2);
	assert_true(C[0] == 1.0f);
	C[0] = NAN;
	rt_sgemm(0, 0, 0, 2, 2, 1.0f, A, 2, B, 2, 0.0f, C, 2);
	rt_sgemm(0, 0, 2, 0, 2, 1.0f, A, 2, B, 2, 0.0f, C, 2);
	assert_true(isnan(C[0]));
}

/* STRATA_CPU=avx2 selects AVX2 wherever AVX-512 exists; other values mean
 * the best available; forcing an ISA the machine lacks is refused. */
static void test_cpu_select(void **st)
{
	(void)st;
	int best = rt_cpu_best();
	assert_true(best == RT_ISA_AVX2 || best == RT_ISA_AVX512);
	assert_int_equal(rt_cpu_select("avx2"), RT_ISA_AVX2);
	assert_int_equal(rt_cpu_select("auto"), best);
	assert_int_equal(rt_cpu_select(NULL), best);
	assert_int_equal(rt_cpu_select("avx512"), best);
	assert_int_equal(rt_cpu_select("sse2"), best);

	const char *saved = getenv("STRATA_CPU");
	char *copy = saved ? strdup(saved) : NULL;
	setenv("STRATA_CPU", "avx2", 1);
	assert_int_equal(rt_cpu_force(RT_ISA_AUTO), 0);
	assert_int_equal(rt_cpu_isa(), RT_ISA_AVX2);
	/* the choice is cached: changing the variable later has no effect */
	setenv("STRATA_CPU", "auto", 1);
	assert_int_equal(rt_cpu_isa(), RT_ISA_AVX2);
	assert_int_equal(rt_cpu_force(RT_ISA_AUTO), 0);
	assert_int_equal(rt_cpu_isa(), best);
	/* a packed B records the ISA it was packed for */
	float B[6] = {1, 2, 3, 4, 5, 6};
	struct rt_packed_b p;
	setenv("STRATA_CPU", "avx2", 1);
	rt_cpu_force(RT_ISA_AUTO);
	assert_int_equal(rt_sgemm_pack_b(0, 2, 3, B, 3, &p), 0);
	assert_int_equal(p.isa, RT_ISA_AVX2);
	rt_packed_b_free(&p);

	if (copy) {
		setenv("STRATA_CPU", copy, 1);
		free(copy);
	} else {
		unsetenv("STRATA_CPU");
	}
	assert_int_equal(rt_cpu_force(RT_ISA_AUTO), 0);
	assert_int_equal(rt_cpu_force(99), STRATA_INVALID_ARGUMENT);
	if (best != RT_ISA_AVX512)
		assert_int_equal(rt_cpu_force(RT_ISA_AVX512), STRATA_NOT_IMPLEMENTED);
	assert_string_equal(rt_cpu_isa_name(RT_ISA_AVX2), "avx2");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_select),
		cmocka_unit_test(test_degenerate),
		cmocka_unit_test(test_sgemm_avx2),
		cmocka_unit_test(test_sgemm_avx512),
		cmocka_unit_test(test_epilogue_avx2),
		cmocka_unit_test(test_epilogue_avx512),
		cmocka_unit_test(test_packed_avx2),
		cmocka_unit_test(test_packed_avx512),
		cmocka_unit_test(test_blocking_avx2),
		cmocka_unit_test(test_blocking_avx512),
		cmocka_unit_test(test_finishes_avx2),
		cmocka_unit_test(test_finishes_avx512),
		cmocka_unit_test(test_hand_packed_avx2),
		cmocka_unit_test(test_hand_packed_avx512),
		cmocka_unit_test(test_gelu_avx2),
		cmocka_unit_test(test_gelu_avx512),
		cmocka_unit_test(test_bf16_weights),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
