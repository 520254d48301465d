/*
 * test_ops_tensor.c: unit tests of the tensor kernels in runtime/ops/
 * (gemm.c, matmul.c, shape.c, reduce.c, normalize.c).
 *
 * Each test builds a one-node model with tests/opcase.h, loads it from
 * memory, runs it and compares the outputs with values computed here by
 * straightforward loops (or written out by hand).  Error paths check the
 * code and a telling part of the message: hostile indices and shapes must
 * fail the run, bad attributes must fail the load.  rt_sgemm is also checked
 * directly against a naive triple loop on odd sizes and every transpose
 * combination.
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
#include "modelbuild.h"
#include "opcase.h"

/* ---- element types of the graph inputs and outputs ------------------------------- */

static const int F1[] = {BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_FLOAT};
static const int FI[] = {BASE_DT_FLOAT, BASE_DT_INT64, BASE_DT_INT64, BASE_DT_INT64,
                         BASE_DT_INT64};

/* ---- rt_sgemm ------------------------------------------------------------------------ */

static void naive(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                  int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			double s = 0;
			for (int64_t k = 0; k < K; k++)
				s += (double)(ta ? A[k * lda + i] : A[i * lda + k]) *
				     (tb ? B[j * ldb + k] : B[k * ldb + j]);
			C[i * ldc + j] = (float)(alpha * s + (beta != 0 ? beta * C[i * ldc + j] : 0));
		}
}

static void test_sgemm_vs_naive(void **state)
{
	(void)state;
	static const int64_t sz[] = {1, 7, 33, 130};
	/* 3 also takes the few-rows path (M <= 4), 7 and up the blocked one */
	static const int64_t msz[] = {1, 3, 7, 33, 130};
	unsigned seed = 1;
	/* 300 > 256 also crosses a K block boundary */
	float *A = malloc(300 * 300 * 4), *B = malloc(300 * 300 * 4);
	float *C = malloc(300 * 300 * 4), *R = malloc(300 * 300 * 4);
	for (int i = 0; i < 300 * 300; i++) {
		A[i] = oc_frand(&seed);
		B[i] = oc_frand(&seed);
	}
	for (int mi = 0; mi < 5; mi++)
		for (int ni = 0; ni < 4; ni++)
			for (int ki = 0; ki < 5; ki++)
				for (int t = 0; t < 4; t++) {
					int64_t M = msz[mi], N = sz[ni], K = ki < 4 ? sz[ki] : 300;
					int ta = t & 1, tb = t >> 1;
					/* leading dims with padding */
					int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;
					float alpha = t == 3 ? 0.5f : 1.0f, beta = t == 2 ? 1.5f : 0.0f;
					for (int64_t i = 0; i < M * ldc; i++)
						C[i] = R[i] = oc_frand(&seed);
					rt_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
					naive(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, R, ldc);
					for (int64_t i = 0; i < M; i++)
						oc_assert_close(C + i * ldc, R + i * ldc, N, 1e-4);
					/* padding columns untouched */
					for (int64_t i = 0; i < M; i++)
						assert_true(C[i * ldc + N] == R[i * ldc + N]);
				}
	free(A);
	free(B);
	free(C);
	free(R);
}

static void test_sgemm_beta_zero_ignores_nan(void **state)
{
	(void)state;
	float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, 0, 1, 1, 1}, C[4];
	for (int i = 0; i < 4; i++)
		C[i] = NAN;
	/* [2,3] x [3,2] */
	rt_sgemm(0, 0, 2, 2, 3, 2.0f, A, 3, B, 2, 0.0f, C, 2);
	float want[4] = {2 * 4, 2 * 5, 2 * 10, 2 * 11};
	oc_assert_close(C, want, 4, 0);
	/* K == 0: C = beta * C */
	rt_sgemm(0, 0, 2, 2, 0, 1.0f, A, 3, B, 2, 0.5f, C, 2);
	float half[4] = {4, 5, 10, 11};
	oc_assert_close(C, half, 4, 0);
}

/* ---- MatMul and Gemm ---------------------------------------------------------------- */

static void test_matmul_batch_broadcast(void **state)
{
	(void)state;
	struct oc_case o;
	struct mb_node *nd;
	int dt[3] = {BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_FLOAT};
	assert_int_equal(oc_load(oc_model(13, "MatMul", "a,b", dt, "y", dt, &nd), &o), 0);
	/* A [2,1,3,4] x B [3,4,5] -> [2,3,3,5] */
	float a[2 * 3 * 4], b[3 * 4 * 5];
	unsigned seed = 7;
	for (int i = 0; i < 24; i++)
		a[i] = oc_frand(&seed);
	for (int i = 0; i < 60; i++)
		b[i] = oc_frand(&seed);
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 4, (int64_t[]){2, 1, 3, 4}, a),
	                          oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){3, 4, 5}, b)};
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 4, (int64_t[]){2, 3, 3, 5});
	float want[2 * 3 * 3 * 5];
	for (int p = 0; p < 2; p++)
		for (int q = 0; q < 3; q++)
			for (int i = 0; i < 3; i++)
				for (int j = 0; j < 5; j++) {
					float s = 0;
					for (int k = 0; k < 4; k++)
						s += a[p * 12 + i * 4 + k] * b[q * 20 + k * 5 + j];
					want[((p * 3 + q) * 3 + i) * 5 + j] = s;
				}
	oc_assert_close(o.out[0].data, want, 90, 1e-5);

	/* 1-D promotion on both sides: [4] x [2,4,3] -> [2,3]; [2,3,4] x [4] -> [2,3] */
	float v[4] = {1, -2, 3, 0.5f};
	float m[24];
	for (int i = 0; i < 24; i++)
		m[i] = (float)i;
	struct rt_tensor in2[2] = {oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){4}, v),
	                           oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, 4, 3}, m)};
	assert_int_equal(oc_run(&o, in2), 0);
	oc_assert_shape(&o.out[0], 2, (int64_t[]){2, 3});
	float w2[6];
	for (int p = 0; p < 2; p++)
		for (int j = 0; j < 3; j++) {
			w2[p * 3 + j] = 0;
			for (int k = 0; k < 4; k++)
				w2[p * 3 + j] += v[k] * m[p * 12 + k * 3 + j];
		}
	oc_assert_close(o.out[0].data, w2, 6, 1e-6);
	struct rt_tensor in3[2] = {oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, 3, 4}, m),
	                           oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){4}, v)};
	assert_int_equal(oc_run(&o, in3), 0);
	oc_assert_shape(&o.out[0], 2, (int64_t[]){2, 3});
	for (int r = 0; r < 6; r++) {
		float s = 0;
		for (int k = 0; k < 4; k++)
			s += m[r * 4 + k] * v[k];
		assert_float_equal(((float *)o.out[0].data)[r], s, 1e-5);
	}

	/* inner dimensions that differ fail the run */
	struct rt_tensor bad[2] = {oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 3}, m),
	                           oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){4, 2}, m)};
	assert_int_equal(oc_run(&o, bad), STRATA_RUNTIME);
	oc_assert_msg(&o, "inner dimensions differ");
	/* batch dims that do not broadcast */
	struct rt_tensor bad2[2] = {oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, 2, 3}, m),
	                            oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){3, 3, 2}, m)};
	assert_int_equal(oc_run(&o, bad2), STRATA_RUNTIME);
	oc_assert_msg(&o, "broadcast");
	oc_free(&o);
}

static void test_matmul_int64(void **state)
{
	(void)state;
	struct oc_case o;
	struct mb_node *nd;
	int dt[3] = {BASE_DT_INT64, BASE_DT_INT64, BASE_DT_INT64};
	assert_int_equal(oc_load(oc_model(13, "MatMul", "a,b", dt, "y", dt, &nd), &o), 0);
	int64_t a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12};
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_INT64, 2, (int64_t[]){2, 3}, a),
	                          oc_tensor(BASE_DT_INT64, 2, (int64_t[]){3, 2}, b)};
	assert_int_equal(oc_run(&o, in), 0);
	int64_t want[4] = {58, 64, 139, 154};
	assert_memory_equal(o.out[0].data, want, sizeof want);
	oc_free(&o);

	/* float16 has no kernel: the load names op, opset and type */
	int h[3] = {BASE_DT_FLOAT16, BASE_DT_FLOAT16, BASE_DT_FLOAT16};
	assert_int_equal(oc_load(oc_model(13, "MatMul", "a,b", h, "y", h, &nd), &o),
	                 STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "float16");
	oc_assert_msg(&o, "13");
}

static void test_gemm_attributes(void **state)
{
	(void)state;
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(13, "Gemm", "a,b,c", F1, "y", F1, &nd);
	mb_attr_int(nd, "transA", 1);
	mb_attr_int(nd, "transB", 1);
	mb_attr_float(nd, "alpha", 0.5f);
	mb_attr_float(nd, "beta", 2.0f);
	assert_int_equal(oc_load(mb, &o), 0);
	/* A stored [K=4, M=3], B stored [N=5, K=4] */
	float a[12], b[20], c5[5], c31[3];
	unsigned seed = 3;
	for (int i = 0; i < 12; i++)
		a[i] = oc_frand(&seed);
	for (int i = 0; i < 20; i++)
		b[i] = oc_frand(&seed);
	for (int i = 0; i < 5; i++)
		c5[i] = oc_frand(&seed);
	for (int i = 0; i < 3; i++)
		c31[i] = oc_frand(&seed);
	for (int variant = 0; variant < 3; variant++) {
		struct rt_tensor in[3] = {
			oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){4, 3}, a),
			oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){5, 4}, b),
			variant == 0   ? oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){5}, c5)
			: variant == 1 ? oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){3, 1}, c31)
			               : oc_tensor(BASE_DT_FLOAT, 0, NULL, c31),
		};
		assert_int_equal(oc_run(&o, in), 0);
		oc_assert_shape(&o.out[0], 2, (int64_t[]){3, 5});
		float want[15];
		for (int i = 0; i < 3; i++)
			for (int j = 0; j < 5; j++) {
				float s = 0;
				for (int k = 0; k < 4; k++)
					s += a[k * 3 + i] * b[j * 4 + k];
				float c = variant == 0 ? c5[j] : variant == 1 ? c31[i] : c31[0];
				want[i * 5 + j] = 0.5f * s + 2.0f * c;
			}
		oc_assert_close(o.out[0].data, want, 15, 1e-5);
	}
	/* C that does not broadcast */
	struct rt_tensor in[3] = {oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){4, 3}, a),
	                          oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){5, 4}, b),
	                          oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){4}, c5)};
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "does not broadcast");
	oc_free(&o);
}

static void test_gemm_optional_c(void **state)
{
	(void)state;
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(oc_model(11, "Gemm", "a,b", F1, "y", F1, &nd), &o), 0);
	float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 2}, a),
	                          oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 2}, b)};
	assert_int_equal(oc_run(&o, in), 0);
	float want[4] = {19, 22, 43, 50};
	oc_assert_close(o.out[0].data, want, 4, 0);
	oc_free(&o);
	/* before opset 11, C is required */
	assert_int_equal(oc_load(oc_model(9, "Gemm", "a,b", F1, "y", F1, &nd), &o),
	                 STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "opset 11");
}

/* ---- shape operators ---------------------------------------------------------------- */

static void test_reshape(void **state)
{
	(void)state;
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(oc_model(13, "Reshape", "x,s", FI, "y", F1, &nd), &o), 0);
	float x[24];
	for (int i = 0; i < 24; i++)
		x[i] = (float)i;
	int64_t s1[2] = {0, -1};
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, 3, 4}, x),
	                          oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, s1)};
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 2, (int64_t[]){2, 12});
	assert_memory_equal(o.out[0].data, x, sizeof x);

	int64_t s2[3] = {-1, 0, 2};
	in[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){3}, s2);
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 3, (int64_t[]){4, 3, 2});

	int64_t s3[2] = {5, -1};
	in[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, s3);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "-1");
	int64_t s4[2] = {-1, -1};
	in[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, s4);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "more than one -1");
	int64_t s5[2] = {5, 5};
	in[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, s5);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "25 cells");
	int64_t s6[3] = {INT64_MAX, INT64_MAX, 4};
	in[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){3}, s6);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	int64_t s7[2] = {-7, 24};
	in[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, s7);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "negative");
	oc_free(&o);

	/* allowzero: 0 is a real zero-sized dimension */
	struct mb_model *mb = oc_model(14, "Reshape", "x,s", FI, "y", F1, &nd);
	mb_attr_int(nd, "allowzero", 1);
	assert_int_equal(oc_load(mb, &o), 0);
	int64_t s8[2] = {0, 4};
	in[0] = oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){0, 3}, x);
	in[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, s8);
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 2, (int64_t[]){0, 4});
	oc_free(&o);
}

/* Reference transpose via index arithmetic. */
static void ref_transpose(const float *x, int r, const int64_t *dims, const int64_t *perm,
                          float *y)
{
	int64_t od[8], ist[8], idx[8] = {0}, n = 1;
	for (int i = r - 1, s = 1; i >= 0; i--) {
		ist[i] = s;
		s *= (int)dims[i];
	}
	for (int i = 0; i < r; i++) {
		od[i] = dims[perm[i]];
		n *= od[i];
	}
	for (int64_t o = 0; o < n; o++) {
		int64_t rem = o, off = 0;
		for (int i = r - 1; i >= 0; i--) {
			idx[i] = rem % od[i];
			rem /= od[i];
		}
		for (int i = 0; i < r; i++)
			off += idx[i] * ist[perm[i]];
		y[o] = x[off];
	}
}

static void check_transpose(int r, const int64_t *dims, const int64_t *perm)
{
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(13, "Transpose", "x", F1, "y", F1, &nd);
	int64_t rev[8];
	if (perm)
		mb_attr_ints(nd, "perm", (size_t)r, perm);
	else
		for (int i = 0; i < r; i++)
			rev[i] = r - 1 - i;
	assert_int_equal(oc_load(mb, &o), 0);
	int64_t n = 1;
	for (int i = 0; i < r; i++)
		n *= dims[i];
	float *x = malloc((size_t)n * 4), *want = malloc((size_t)n * 4);
	for (int64_t i = 0; i < n; i++)
		x[i] = (float)i;
	ref_transpose(x, r, dims, perm ? perm : rev, want);
	struct rt_tensor in = oc_tensor(BASE_DT_FLOAT, r, dims, x);
	assert_int_equal(oc_run(&o, &in), 0);
	for (int i = 0; i < r; i++)
		assert_int_equal(o.out[0].dims[i], dims[(perm ? perm : rev)[i]]);
	assert_memory_equal(o.out[0].data, want, (size_t)n * 4);
	free(x);
	free(want);
	oc_free(&o);
}

static void test_transpose(void **state)
{
	(void)state;
	check_transpose(3, (int64_t[]){2, 3, 4}, (int64_t[]){2, 0, 1});
	check_transpose(3, (int64_t[]){2, 3, 4}, NULL);
	check_transpose(4, (int64_t[]){2, 5, 3, 7}, (int64_t[]){0, 2, 1, 3});
	check_transpose(4, (int64_t[]){2, 3, 37, 41}, (int64_t[]){0, 1, 3, 2});
	check_transpose(2, (int64_t[]){70, 33}, (int64_t[]){1, 0});
	check_transpose(4, (int64_t[]){1, 6, 1, 5}, (int64_t[]){3, 2, 1, 0});
	check_transpose(5, (int64_t[]){2, 3, 2, 3, 2}, (int64_t[]){4, 1, 3, 0, 2});

	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(13, "Transpose", "x", F1, "y", F1, &nd);
	mb_attr_ints(nd, "perm", 3, (int64_t[]){0, 0, 1});
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "permutation");
	/* perm of the wrong length fails the run */
	mb = oc_model(13, "Transpose", "x", F1, "y", F1, &nd);
	mb_attr_ints(nd, "perm", 2, (int64_t[]){1, 0});
	assert_int_equal(oc_load(mb, &o), 0);
	float x[8] = {0};
	struct rt_tensor in = oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, 2, 2}, x);
	assert_int_equal(oc_run(&o, &in), STRATA_RUNTIME);
	oc_free(&o);
}

static void test_slice(void **state)
{
	(void)state;
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(oc_model(13, "Slice", "x,s,e,a,p", FI, "y", F1, &nd), &o), 0);
	float x[10];
	for (int i = 0; i < 10; i++)
		x[i] = (float)i;
	int64_t st = -1, en = -100, ax = 0, sp = -2;
	int64_t one1[1] = {1};
	struct rt_tensor in[5] = {oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){10}, x),
	                          oc_tensor(BASE_DT_INT64, 1, one1, &st),
	                          oc_tensor(BASE_DT_INT64, 1, one1, &en),
	                          oc_tensor(BASE_DT_INT64, 1, one1, &ax),
	                          oc_tensor(BASE_DT_INT64, 1, one1, &sp)};
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 1, (int64_t[]){5});
	float w1[5] = {9, 7, 5, 3, 1};
	oc_assert_close(o.out[0].data, w1, 5, 0);

	/* 2-D, negative axis, clamped ends: x[3,4] rows 1.., cols 3 down to 1 */
	float m[12];
	for (int i = 0; i < 12; i++)
		m[i] = (float)i;
	int64_t s2[2] = {3, 1}, e2[2] = {0, INT64_MAX}, a2[2] = {-1, 0}, p2[2] = {-1, 1};
	int64_t two[1] = {2};
	struct rt_tensor in2[5] = {oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){3, 4}, m),
	                           oc_tensor(BASE_DT_INT64, 1, two, s2),
	                           oc_tensor(BASE_DT_INT64, 1, two, e2),
	                           oc_tensor(BASE_DT_INT64, 1, two, a2),
	                           oc_tensor(BASE_DT_INT64, 1, two, p2)};
	assert_int_equal(oc_run(&o, in2), 0);
	oc_assert_shape(&o.out[0], 2, (int64_t[]){2, 3});
	float w2[6] = {7, 6, 5, 11, 10, 9};
	oc_assert_close(o.out[0].data, w2, 6, 0);

	/* empty result, then errors: step 0, repeated axis, axis out of range */
	int64_t s3 = 5, e3 = 2, p3 = 1;
	in[1] = oc_tensor(BASE_DT_INT64, 1, one1, &s3);
	in[2] = oc_tensor(BASE_DT_INT64, 1, one1, &e3);
	in[4] = oc_tensor(BASE_DT_INT64, 1, one1, &p3);
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 1, (int64_t[]){0});
	int64_t p0 = 0;
	in[4] = oc_tensor(BASE_DT_INT64, 1, one1, &p0);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "step 0");
	int64_t a3[2] = {1, -1};
	in2[3] = oc_tensor(BASE_DT_INT64, 1, two, a3);
	assert_int_equal(oc_run(&o, in2), STRATA_RUNTIME);
	oc_assert_msg(&o, "repeated");
	int64_t a4[2] = {0, 2};
	in2[3] = oc_tensor(BASE_DT_INT64, 1, two, a4);
	assert_int_equal(oc_run(&o, in2), STRATA_RUNTIME);
	oc_assert_msg(&o, "out of range");
	oc_free(&o);

	/* opset 1: attributes */
	struct mb_model *mb = oc_model(1, "Slice", "x", F1, "y", F1, &nd);
	mb_attr_ints(nd, "starts", 2, (int64_t[]){1, -3});
	mb_attr_ints(nd, "ends", 2, (int64_t[]){1000, -1});
	assert_int_equal(oc_load(mb, &o), 0);
	assert_int_equal(oc_run(&o, in2), 0);
	oc_assert_shape(&o.out[0], 2, (int64_t[]){2, 2});
	float w4[4] = {5, 6, 9, 10};
	oc_assert_close(o.out[0].data, w4, 4, 0);
	oc_free(&o);
}

static void test_gather(void **state)
{
	(void)state;
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(oc_model(13, "Gather", "x,i", FI, "y", F1, &nd), &o), 0);
	float x[6] = {1, 2, 3, 4, 5, 6}; /* [3,2] */
	int64_t ix[4] = {-1, 0, 1, -3};  /* [2,2] */
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){3, 2}, x),
	                          oc_tensor(BASE_DT_INT64, 2, (int64_t[]){2, 2}, ix)};
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 3, (int64_t[]){2, 2, 2});
	float want[8] = {5, 6, 1, 2, 3, 4, 1, 2};
	oc_assert_close(o.out[0].data, want, 8, 0);
	/* scalar index drops the axis */
	int64_t s = -2;
	in[1] = oc_tensor(BASE_DT_INT64, 0, NULL, &s);
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 1, (int64_t[]){2});
	float w2[2] = {3, 4};
	oc_assert_close(o.out[0].data, w2, 2, 0);
	/* out of range, both ways */
	int64_t bad[2] = {0, 3};
	in[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, bad);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "index 3 out of range");
	bad[1] = -4;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "index -4 out of range");
	bad[1] = INT64_MIN;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_free(&o);

	/* axis 1 with int32 indices */
	int dti[3] = {BASE_DT_FLOAT, BASE_DT_INT32};
	struct mb_model *mb = oc_model(13, "Gather", "x,i", dti, "y", F1, &nd);
	mb_attr_int(nd, "axis", -1);
	assert_int_equal(oc_load(mb, &o), 0);
	int32_t i32[3] = {1, -1, 0};
	in[1] = oc_tensor(BASE_DT_INT32, 1, (int64_t[]){3}, i32);
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 2, (int64_t[]){3, 3});
	float w3[9] = {2, 2, 1, 4, 4, 3, 6, 6, 5};
	oc_assert_close(o.out[0].data, w3, 9, 0);
	oc_free(&o);

	/* strings: cells are pointers, copied as they are */
	int dts[2] = {BASE_DT_STRING, BASE_DT_INT64};
	int dto[1] = {BASE_DT_STRING};
	assert_int_equal(oc_load(oc_model(13, "Gather", "x,i", dts, "y", dto, &nd), &o), 0);
	const char *words[3] = {"red", "green", "blue"};
	int64_t wi[2] = {2, -3};
	struct rt_tensor ins[2] = {oc_tensor(BASE_DT_STRING, 1, (int64_t[]){3}, words),
	                           oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, wi)};
	assert_int_equal(oc_run(&o, ins), 0);
	assert_string_equal(((char **)o.out[0].data)[0], "blue");
	assert_string_equal(((char **)o.out[0].data)[1], "red");
	oc_free(&o);
}

static void test_concat_squeeze_split(void **state)
{
	(void)state;
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(13, "Concat", "a,b", F1, "y", F1, &nd);
	mb_attr_int(nd, "axis", -1);
	assert_int_equal(oc_load(mb, &o), 0);
	float a[4] = {1, 2, 3, 4}, b[6] = {5, 6, 7, 8, 9, 10};
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 2}, a),
	                          oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 3}, b)};
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 2, (int64_t[]){2, 5});
	float w[10] = {1, 2, 5, 6, 7, 3, 4, 8, 9, 10};
	oc_assert_close(o.out[0].data, w, 10, 0);
	in[1] = oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){3, 2}, b);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_free(&o);
	/* axis is required */
	assert_int_equal(oc_load(oc_model(13, "Concat", "a,b", F1, "y", F1, &nd), &o),
	                 STRATA_INVALID_GRAPH);

	/* Unsqueeze (opset 13: axes input) then Squeeze (opset 11: attribute) */
	assert_int_equal(oc_load(oc_model(13, "Unsqueeze", "x,a", FI, "y", F1, &nd), &o), 0);
	int64_t ax[2] = {0, -1};
	in[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, ax);
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 4, (int64_t[]){1, 2, 2, 1});
	int64_t ax2[2] = {1, 1};
	in[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, ax2);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_free(&o);
	mb = oc_model(11, "Squeeze", "x", F1, "y", F1, &nd);
	mb_attr_ints(nd, "axes", 1, (int64_t[]){-2});
	assert_int_equal(oc_load(mb, &o), 0);
	struct rt_tensor sq = oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, 1, 2}, a);
	assert_int_equal(oc_run(&o, &sq), 0);
	oc_assert_shape(&o.out[0], 2, (int64_t[]){2, 2});
	sq = oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 2, 2}, a);
	assert_int_equal(oc_run(&o, &sq), STRATA_RUNTIME);
	oc_assert_msg(&o, "cannot squeeze");
	oc_free(&o);

	/* Split: opset 13 sizes input, opset 18 num_outputs with a smaller tail */
	int sdt[2] = {BASE_DT_FLOAT, BASE_DT_INT64};
	mb = oc_model(13, "Split", "x,s", sdt, "p,q", F1, &nd);
	mb_attr_int(nd, "axis", 1);
	assert_int_equal(oc_load(mb, &o), 0);
	int64_t sizes[2] = {1, 2};
	struct rt_tensor sin[2] = {oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 3}, b),
	                           oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, sizes)};
	assert_int_equal(oc_run(&o, sin), 0);
	float p[2] = {5, 8}, q[4] = {6, 7, 9, 10};
	oc_assert_shape(&o.out[1], 2, (int64_t[]){2, 2});
	oc_assert_close(o.out[0].data, p, 2, 0);
	oc_assert_close(o.out[1].data, q, 4, 0);
	sizes[1] = 3;
	assert_int_equal(oc_run(&o, sin), STRATA_RUNTIME);
	oc_free(&o);
	mb = oc_model(18, "Split", "x", F1, "p,q", F1, &nd);
	mb_attr_int(nd, "num_outputs", 2);
	assert_int_equal(oc_load(mb, &o), 0);
	struct rt_tensor s5 = oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){5}, b);
	assert_int_equal(oc_run(&o, &s5), 0);
	oc_assert_shape(&o.out[0], 1, (int64_t[]){3});
	oc_assert_shape(&o.out[1], 1, (int64_t[]){2});
	oc_free(&o);
}

static void test_expand_tile_range(void **state)
{
	(void)state;
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(oc_model(13, "Expand", "x,s", FI, "y", F1, &nd), &o), 0);
	float x[3] = {1, 2, 3};
	int64_t s[2] = {2, 1};
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){3, 1}, x),
	                          oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, s)};
	/* [3,1] expanded by [2,1] -> [3,1] broadcast with [2,1]: incompatible 3 vs 2 */
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	int64_t s2[3] = {2, 1, 4};
	in[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){3}, s2);
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 3, (int64_t[]){2, 3, 4});
	for (int i = 0; i < 24; i++)
		assert_float_equal(((float *)o.out[0].data)[i], x[(i / 4) % 3], 0);
	int64_t huge[3] = {INT64_MAX / 2, 3, 4};
	in[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){3}, huge);
	assert_int_not_equal(oc_run(&o, in), 0);
	oc_free(&o);

	assert_int_equal(oc_load(oc_model(13, "Tile", "x,r", FI, "y", F1, &nd), &o), 0);
	float t[4] = {1, 2, 3, 4};
	int64_t rep[2] = {2, 3};
	struct rt_tensor tin[2] = {oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 2}, t),
	                           oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, rep)};
	assert_int_equal(oc_run(&o, tin), 0);
	oc_assert_shape(&o.out[0], 2, (int64_t[]){4, 6});
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 6; j++)
			assert_float_equal(((float *)o.out[0].data)[i * 6 + j], t[(i % 2) * 2 + j % 2], 0);
	rep[0] = -1;
	assert_int_equal(oc_run(&o, tin), STRATA_RUNTIME);
	oc_free(&o);

	int ri[3] = {BASE_DT_INT64, BASE_DT_INT64, BASE_DT_INT64};
	assert_int_equal(oc_load(oc_model(11, "Range", "a,b,c", ri, "y", ri, &nd), &o), 0);
	int64_t st = 10, li = 1, de = -4;
	struct rt_tensor rin[3] = {oc_tensor(BASE_DT_INT64, 0, NULL, &st),
	                           oc_tensor(BASE_DT_INT64, 0, NULL, &li),
	                           oc_tensor(BASE_DT_INT64, 0, NULL, &de)};
	assert_int_equal(oc_run(&o, rin), 0);
	int64_t rw[3] = {10, 6, 2};
	oc_assert_shape(&o.out[0], 1, (int64_t[]){3});
	assert_memory_equal(o.out[0].data, rw, sizeof rw);
	de = 0;
	assert_int_equal(oc_run(&o, rin), STRATA_RUNTIME);
	st = INT64_MIN;
	li = INT64_MAX;
	de = 1;
	assert_int_not_equal(oc_run(&o, rin), 0);
	oc_free(&o);

	/* ConstantOfShape with an int32 value; Shape with start/end */
	int cs[1] = {BASE_DT_INT64};
	int co[1] = {BASE_DT_INT32};
	struct mb_model *mb = oc_model(11, "ConstantOfShape", "s", cs, "y", co, &nd);
	int32_t seven = 7;
	mb_attr_tensor(nd, "value", BASE_DT_INT32, 1, (int64_t[]){1}, &seven);
	assert_int_equal(oc_load(mb, &o), 0);
	int64_t shp[2] = {2, 3};
	struct rt_tensor cin = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, shp);
	assert_int_equal(oc_run(&o, &cin), 0);
	oc_assert_shape(&o.out[0], 2, shp);
	for (int i = 0; i < 6; i++)
		assert_int_equal(((int32_t *)o.out[0].data)[i], 7);
	shp[0] = -2;
	assert_int_equal(oc_run(&o, &cin), STRATA_RUNTIME);
	oc_free(&o);

	int so[1] = {BASE_DT_INT64};
	mb = oc_model(15, "Shape", "x", F1, "y", so, &nd);
	mb_attr_int(nd, "start", -2);
	assert_int_equal(oc_load(mb, &o), 0);
	struct rt_tensor sx = oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){4, 5, 6}, x);
	assert_int_equal(oc_run(&o, &sx), 0);
	int64_t sw[2] = {5, 6};
	oc_assert_shape(&o.out[0], 1, (int64_t[]){2});
	assert_memory_equal(o.out[0].data, sw, sizeof sw);
	oc_free(&o);

	assert_int_equal(oc_load(oc_model(13, "Size", "x", F1, "y", so, &nd), &o), 0);
	assert_int_equal(oc_run(&o, &sx), 0);
	assert_int_equal(o.out[0].rank, 0);
	assert_int_equal(*(int64_t *)o.out[0].data, 120);
	oc_free(&o);
}

/* ---- normalization -------------------------------------------------------------------- */

static void test_softmax_opsets(void **state)
{
	(void)state;
	float x[12];
	for (int i = 0; i < 12; i++)
		x[i] = (float)((i * 7) % 5) - 1.5f + (i == 3 ? 1000.0f : 0.0f);
	struct rt_tensor in = oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, 2, 3}, x);
	for (int ver = 0; ver < 2; ver++) {
		struct oc_case o;
		struct mb_node *nd;
		assert_int_equal(oc_load(oc_model(ver ? 13 : 11, "Softmax", "x", F1, "y", F1, &nd), &o), 0);
		assert_int_equal(oc_run(&o, &in), 0);
		/* opset 11: default axis 1 makes rows of 6; opset 13: rows of 3 */
		int len = ver ? 3 : 6;
		float want[12];
		for (int r = 0; r < 12 / len; r++) {
			double mx = -INFINITY, sum = 0;
			for (int j = 0; j < len; j++)
				mx = fmax(mx, x[r * len + j]);
			for (int j = 0; j < len; j++)
				sum += exp(x[r * len + j] - mx);
			for (int j = 0; j < len; j++)
				want[r * len + j] = (float)(exp(x[r * len + j] - mx) / sum);
		}
		oc_assert_close(o.out[0].data, want, 12, 1e-6);
		oc_free(&o);
	}
	/* opset 13 along axis 1 (strided groups), LogSoftmax */
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(13, "LogSoftmax", "x", F1, "y", F1, &nd);
	mb_attr_int(nd, "axis", 1);
	assert_int_equal(oc_load(mb, &o), 0);
	assert_int_equal(oc_run(&o, &in), 0);
	for (int a = 0; a < 2; a++)
		for (int c = 0; c < 3; c++) {
			float v0 = x[a * 6 + c], v1 = x[a * 6 + 3 + c];
			double mx = fmax(v0, v1), l = mx + log(exp(v0 - mx) + exp(v1 - mx));
			assert_float_equal(((float *)o.out[0].data)[a * 6 + c], v0 - l, 1e-4);
			assert_float_equal(((float *)o.out[0].data)[a * 6 + 3 + c], v1 - l, 1e-4);
		}
	struct rt_tensor r1 = oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){12}, x);
	assert_int_equal(oc_run(&o, &r1), STRATA_RUNTIME);
	oc_assert_msg(&o, "axis");
	oc_free(&o);
}

static void test_layernorm(void **state)
{
	(void)state;
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(17, "LayerNormalization", "x,s,b", F1, "y,m,i", F1, &nd);
	mb_attr_float(nd, "epsilon", 1e-3f);
	assert_int_equal(oc_load(mb, &o), 0);
	enum { R = 6, H = 40 };
	float x[R * H], sc[H], bi[H], want[R * H], wm[R], wi[R];
	unsigned seed = 11;
	for (int i = 0; i < R * H; i++)
		x[i] = 3.0f * oc_frand(&seed) + 2.0f;
	for (int i = 0; i < H; i++) {
		sc[i] = oc_frand(&seed);
		bi[i] = oc_frand(&seed);
	}
	for (int r = 0; r < R; r++) {
		double m = 0, v = 0;
		for (int j = 0; j < H; j++)
			m += x[r * H + j];
		m /= H;
		for (int j = 0; j < H; j++)
			v += (x[r * H + j] - m) * (x[r * H + j] - m);
		v /= H;
		double inv = 1.0 / sqrt(v + 1e-3);
		wm[r] = (float)m;
		wi[r] = (float)inv;
		for (int j = 0; j < H; j++)
			want[r * H + j] = (float)((x[r * H + j] - m) * inv * sc[j] + bi[j]);
	}
	struct rt_tensor in[3] = {oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, 3, H}, x),
	                          oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){H}, sc),
	                          oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){H}, bi)};
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 3, (int64_t[]){2, 3, H});
	oc_assert_shape(&o.out[1], 3, (int64_t[]){2, 3, 1});
	oc_assert_close(o.out[0].data, want, R * H, 1e-5);
	oc_assert_close(o.out[1].data, wm, R, 1e-6);
	oc_assert_close(o.out[2].data, wi, R, 1e-5);
	/* a scale that does not fit the normalized axis */
	in[1] = oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){H - 1}, sc);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "Scale");
	oc_free(&o);
}

/* ---- reductions ----------------------------------------------------------------------- */

static void test_reduce_mean_keepdims(void **state)
{
	(void)state;
	float x[24];
	for (int i = 0; i < 24; i++)
		x[i] = (float)(i * i % 7);
	struct rt_tensor in = oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, 3, 4}, x);
	for (int keep = 0; keep < 2; keep++) {
		struct oc_case o;
		struct mb_node *nd;
		struct mb_model *mb = oc_model(13, "ReduceMean", "x", F1, "y", F1, &nd);
		mb_attr_ints(nd, "axes", 2, (int64_t[]){0, -1});
		mb_attr_int(nd, "keepdims", keep);
		assert_int_equal(oc_load(mb, &o), 0);
		assert_int_equal(oc_run(&o, &in), 0);
		if (keep)
			oc_assert_shape(&o.out[0], 3, (int64_t[]){1, 3, 1});
		else
			oc_assert_shape(&o.out[0], 1, (int64_t[]){3});
		for (int j = 0; j < 3; j++) {
			float s = 0;
			for (int a = 0; a < 2; a++)
				for (int c = 0; c < 4; c++)
					s += x[a * 12 + j * 4 + c];
			assert_float_equal(((float *)o.out[0].data)[j], s / 8, 1e-6);
		}
		oc_free(&o);
	}

	/* ReduceSum opset 13: axes input; empty axes reduce all, or nothing with noop */
	for (int noop = 0; noop < 2; noop++) {
		struct oc_case o;
		struct mb_node *nd;
		struct mb_model *mb = oc_model(13, "ReduceSum", "x,a", FI, "y", F1, &nd);
		mb_attr_int(nd, "noop_with_empty_axes", noop);
		mb_attr_int(nd, "keepdims", 0);
		assert_int_equal(oc_load(mb, &o), 0);
		int64_t ax[1] = {1};
		struct rt_tensor rin[2] = {in, oc_tensor(BASE_DT_INT64, 1, (int64_t[]){1}, ax)};
		assert_int_equal(oc_run(&o, rin), 0);
		oc_assert_shape(&o.out[0], 2, (int64_t[]){2, 4});
		for (int a = 0; a < 2; a++)
			for (int c = 0; c < 4; c++)
				assert_float_equal(((float *)o.out[0].data)[a * 4 + c],
				                   x[a * 12 + c] + x[a * 12 + 4 + c] + x[a * 12 + 8 + c], 1e-6);
		rin[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){0}, ax);
		assert_int_equal(oc_run(&o, rin), 0);
		if (noop) {
			oc_assert_shape(&o.out[0], 3, (int64_t[]){2, 3, 4});
			assert_memory_equal(o.out[0].data, x, sizeof x);
		} else {
			float s = 0;
			for (int i = 0; i < 24; i++)
				s += x[i];
			assert_int_equal(o.out[0].rank, 0);
			assert_float_equal(((float *)o.out[0].data)[0], s, 1e-5);
		}
		ax[0] = 3;
		rin[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){1}, ax);
		assert_int_equal(oc_run(&o, rin), STRATA_RUNTIME);
		oc_assert_msg(&o, "out of range");
		oc_free(&o);
	}

	/* int64 ReduceMax and ReduceLogSumExp in float */
	struct oc_case o;
	struct mb_node *nd;
	int i64[1] = {BASE_DT_INT64};
	struct mb_model *mb = oc_model(13, "ReduceMax", "x", i64, "y", i64, &nd);
	mb_attr_ints(nd, "axes", 1, (int64_t[]){1});
	assert_int_equal(oc_load(mb, &o), 0);
	int64_t iv[6] = {-5, 9, 2, -7, -1, -3};
	struct rt_tensor iin = oc_tensor(BASE_DT_INT64, 2, (int64_t[]){2, 3}, iv);
	assert_int_equal(oc_run(&o, &iin), 0);
	int64_t iw[2] = {9, -1};
	oc_assert_shape(&o.out[0], 2, (int64_t[]){2, 1});
	assert_memory_equal(o.out[0].data, iw, sizeof iw);
	oc_free(&o);
	mb = oc_model(13, "ReduceLogSumExp", "x", F1, "y", F1, &nd);
	mb_attr_int(nd, "keepdims", 0);
	assert_int_equal(oc_load(mb, &o), 0);
	float big[3] = {1000, 1000, 1000};
	struct rt_tensor bin = oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){3}, big);
	assert_int_equal(oc_run(&o, &bin), 0);
	assert_float_equal(((float *)o.out[0].data)[0], 1000 + log(3.0), 1e-3);
	oc_free(&o);
}

static void test_argmax(void **state)
{
	(void)state;
	int i64[1] = {BASE_DT_INT64};
	float x[6] = {3, 1, 3, 0, 5, 5};
	struct rt_tensor in = oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 3}, x);
	for (int last = 0; last < 2; last++) {
		struct oc_case o;
		struct mb_node *nd;
		struct mb_model *mb = oc_model(13, "ArgMax", "x", F1, "y", i64, &nd);
		mb_attr_int(nd, "axis", -1);
		mb_attr_int(nd, "keepdims", 0);
		mb_attr_int(nd, "select_last_index", last);
		assert_int_equal(oc_load(mb, &o), 0);
		assert_int_equal(oc_run(&o, &in), 0);
		oc_assert_shape(&o.out[0], 1, (int64_t[]){2});
		int64_t want[2] = {last ? 2 : 0, last ? 2 : 1};
		assert_memory_equal(o.out[0].data, want, sizeof want);
		oc_free(&o);
	}
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(oc_model(13, "ArgMin", "x", F1, "y", i64, &nd), &o), 0);
	assert_int_equal(oc_run(&o, &in), 0);
	oc_assert_shape(&o.out[0], 2, (int64_t[]){1, 3});
	int64_t want[3] = {1, 0, 0};
	assert_memory_equal(o.out[0].data, want, sizeof want);
	oc_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sgemm_vs_naive),
		cmocka_unit_test(test_sgemm_beta_zero_ignores_nan),
		cmocka_unit_test(test_matmul_batch_broadcast),
		cmocka_unit_test(test_matmul_int64),
		cmocka_unit_test(test_gemm_attributes),
		cmocka_unit_test(test_gemm_optional_c),
		cmocka_unit_test(test_reshape),
		cmocka_unit_test(test_transpose),
		cmocka_unit_test(test_slice),
		cmocka_unit_test(test_gather),
		cmocka_unit_test(test_concat_squeeze_split),
		cmocka_unit_test(test_expand_tile_range),
		cmocka_unit_test(test_softmax_opsets),
		cmocka_unit_test(test_layernorm),
		cmocka_unit_test(test_reduce_mean_keepdims),
		cmocka_unit_test(test_argmax),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
