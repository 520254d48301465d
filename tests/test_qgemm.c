/*
 * test_qgemm.c: the int8 GEMM (runtime/ops/qgemm.c and its AVX2,
 * AVX-VNNI, AVX512-VNNI and AMX kernels) against int64 loops written here: every combination
 * of uint8 and int8 operands, zero points absent, one per tensor, one per
 * row of A and column of B, ragged sizes around the register blocks, int32
 * and scaled float results, under each dispatch path the machine has;
 * bytes at the extremes (where a saturating vpmaddubsw would be off) and
 * sums past int32 (which wrap as int32 does); and MatMulInteger and
 * QLinearMatMul with a constant B (packed at load) against the same with B
 * given at run time.
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

static uint32_t rng = 987654321u;

static uint8_t rbyte(void)
{
	rng = rng * 1664525u + 1013904223u;
	return (uint8_t)(rng >> 24);
}

static int64_t val(int dt, const void *p, int64_t i)
{
	return dt == BASE_DT_INT8 ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
}

/* The kernels to test on this machine (RT_QGEMM_*), and how many: the
 * AVX2 one always, the 256-bit VNNI one where either of its encodings
 * runs, the AVX-512 one and the AMX one where they run. */
static int kernels(int *out)
{
	static const int all[] = {RT_QGEMM_AVX2, RT_QGEMM_VNNI256, RT_QGEMM_VNNI, RT_QGEMM_AMX};
	int n = 0;
	for (int k = 0; k < 4; k++)
		if (rt_qgemm_force(all[k]) == 0)
			out[n++] = all[k];
	assert_int_equal(rt_qgemm_force(0), 0);
	return n;
}

/* zmode: 0 no zero points, 1 one each, 2 per row of A and column of B. */
static void check(int adt, int bdt, int64_t M, int64_t N, int64_t K, int zmode, int fill)
{
	int64_t lda = K + 3;
	uint8_t *A = malloc((size_t)(M * lda)), *B = malloc((size_t)(K * N));
	uint8_t za[512], zb[512];
	assert_true(A && B && M <= 512 && N <= 512);
	for (int64_t i = 0; i < M * lda; i++)
		A[i] = fill ? (adt == BASE_DT_UINT8 ? 255 : 0x80) : rbyte();
	for (int64_t i = 0; i < K * N; i++)
		B[i] = fill ? (bdt == BASE_DT_INT8 ? 0x80 : 0) : rbyte();
	for (int i = 0; i < 512; i++) {
		za[i] = fill ? (adt == BASE_DT_UINT8 ? 0 : 0x7f) : rbyte();
		zb[i] = fill ? (bdt == BASE_DT_INT8 ? 0x7f : 255) : rbyte();
	}
	int32_t *want = malloc((size_t)(M * N) * sizeof *want);
	int32_t *ci = malloc((size_t)(M * N) * sizeof *ci);
	float *cf = malloc((size_t)(M * N) * sizeof *cf), *bs = malloc((size_t)N * sizeof *bs);
	float *bias = malloc((size_t)N * sizeof *bias);
	assert_true(want && ci && cf && bs && bias);
	for (int64_t j = 0; j < N; j++) {
		bs[j] = 0.001f * (float)(j % 7 + 1);
		bias[j] = (float)j * 0.25f - 3.0f;
	}
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			int64_t s = 0;
			int64_t a0 = zmode ? val(adt, za, zmode == 2 ? i : 0) : 0;
			int64_t b0 = zmode ? val(bdt, zb, zmode == 2 ? j : 0) : 0;
			for (int64_t k = 0; k < K; k++)
				s += (val(adt, A, i * lda + k) - a0) * (val(bdt, B, k * N + j) - b0);
			want[i * N + j] = (int32_t)(uint32_t)(uint64_t)s;
		}
	struct rt_qpacked_b pb;
	assert_int_equal(rt_qgemm_pack_b(bdt, K, N, B, N, &pb), 0);
	void *scratch = malloc(rt_qgemm_scratch_bytes(M, K, N));
	assert_non_null(scratch);
	int list[4], n = kernels(list);
	for (int t = 0; t < n; t++) {
		assert_int_equal(rt_qgemm_force(list[t]), 0);
		struct rt_qgemm_args g = {
			.adt = adt, .M = M, .A = A, .lda = lda, .za = zmode ? za : NULL,
			.zb = zmode ? zb : NULL, .zastep = zmode == 2, .zbstep = zmode == 2,
			.ci = ci, .ldc = N,
		};
		memset(ci, 0x55, (size_t)(M * N) * sizeof *ci);
		rt_qgemm(&g, &pb, scratch);
		for (int64_t i = 0; i < M * N; i++)
			if (ci[i] != want[i])
				fail_msg("kernel %d, %s x %s, %lldx%lldx%lld, zero points %d: cell %lld is %d, "
				         "not %d", list[t], base_dtype_name(adt), base_dtype_name(bdt),
				         (long long)M, (long long)N, (long long)K, zmode, (long long)i,
				         ci[i], want[i]);
		/* scaled to float: Cast, Mul by a_scale * b_scale, Add bias */
		g.ci = NULL;
		g.cf = cf;
		g.ascale = 0.5f;
		g.bscale = bs;
		g.bsstep = 1;
		g.bias = bias;
		rt_qgemm(&g, &pb, scratch);
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++) {
				float w = (float)want[i * N + j] * (0.5f * bs[j]) + bias[j];
				if (cf[i * N + j] != w)
					fail_msg("kernel %d: float cell %lld,%lld is %g, not %g", list[t],
					         (long long)i, (long long)j, cf[i * N + j], w);
			}
	}
	/* with GELU (and then a residual) every kernel gives the bits the first
	 * of its vector width gives (256 bits: AVX2, AVX-VNNI; 512: AVX512-VNNI,
	 * AMX): the same function of the same floats, wherever a kernel
	 * applies it */
	float *first = malloc((size_t)(M * N) * sizeof *first);
	assert_non_null(first);
	for (int withres = 0; withres < 4; withres++)
		for (int t = 0, seen = 0; t < n; t++) {
			int wide = list[t] == RT_QGEMM_VNNI || list[t] == RT_QGEMM_AMX;
			if (wide != (withres >= 2))
				continue;
			assert_int_equal(rt_qgemm_force(list[t]), 0);
			struct rt_qgemm_args g = {
				.adt = adt, .M = M, .A = A, .lda = lda, .za = zmode ? za : NULL,
				.zb = zmode ? zb : NULL, .zastep = zmode == 2, .zbstep = zmode == 2,
				.cf = cf, .ldc = N, .ascale = 0.5f, .bscale = bs, .bsstep = 1,
				.bias = bias, .act = RT_ACT_GELU_ERF, .res = withres & 1 ? bias : NULL,
				.ldr = 0,
			};
			rt_qgemm(&g, &pb, scratch);
			if (seen++ == 0)
				memcpy(first, cf, (size_t)(M * N) * sizeof *cf);
			else if (memcmp(first, cf, (size_t)(M * N) * sizeof *cf) != 0)
				fail_msg("kernel %d: GELU%s differs, %lldx%lldx%lld", list[t],
				         withres & 1 ? " + residual" : "", (long long)M, (long long)N,
				         (long long)K);
		}
	free(first);
	assert_int_equal(rt_qgemm_force(0), 0);
	rt_qpacked_b_free(&pb);
	free(scratch);
	free(A);
	free(B);
	free(want);
	free(ci);
	free(cf);
	free(bs);
	free(bias);
}

static const int DT[2] = {BASE_DT_UINT8, BASE_DT_INT8};

static void test_qgemm_random(void **state)
{
	(void)state;
	static const int64_t shapes[][3] = {
		{1, 1, 1}, {2, 3, 5}, {3, 16, 4}, {5, 17, 7}, {6, 64, 8}, {7, 65, 9},
		{12, 130, 33}, {13, 1, 100}, {1, 200, 384}, {19, 63, 3}, {40, 128, 64},
		/* around the AMX block (32 x 32, 64 k a tile) */
		{32, 32, 64}, {33, 47, 65}, {64, 96, 256}, {17, 33, 127}, {31, 16, 130},
		/* rows in two of the AMX kernel's chunks (half of a 2 MiB L2) */
		{500, 512, 64},
	};
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (int a = 0; a < 2; a++)
			for (int b = 0; b < 2; b++)
				for (int z = 0; z < 3; z++)
					check(DT[a], DT[b], shapes[s][0], shapes[s][1], shapes[s][2], z, 0);
}

/* Every product at its largest magnitude: 255 * -255 per k; pairs of them
 * overflow int16 (vpmaddubsw would saturate) and, with K = 40000, the sums
 * pass int32 and must wrap as the int64 sum truncated to int32 does. */
static void test_qgemm_extremes(void **state)
{
	(void)state;
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++) {
			check(DT[a], DT[b], 7, 19, 31, 1, 1);
			check(DT[a], DT[b], 2, 3, 40000, 1, 1);
		}
}

static void test_qgemm_dispatch(void **state)
{
	(void)state;
	int v256 = rt_cpu_avxvnni() ? RT_QGEMM_VNNI256 : RT_QGEMM_AVX2;
	/* the AVX2 baseline uses no extension, AVX-VNNI included */
	assert_int_equal(rt_cpu_force(RT_ISA_AVX2), 0);
	assert_true(rt_cpu_baseline_only());
	assert_int_equal(rt_qgemm_isa(), RT_QGEMM_AVX2);
	if (rt_cpu_best() == RT_ISA_AVX512) {
		assert_int_equal(rt_cpu_force(RT_ISA_AVX512), 0);
		assert_false(rt_cpu_baseline_only());
		assert_int_equal(rt_qgemm_isa(), rt_cpu_vnni() ? RT_QGEMM_VNNI : v256);
	}
	assert_int_equal(rt_cpu_force(RT_ISA_AUTO), 0);
	/* AMX in auto mode only (STRATA_CPU=avx512 and rt_cpu_force hold the
	 * kernels to AVX-512 registers) */
	int want = rt_cpu_amx()                                   ? RT_QGEMM_AMX
	           : rt_cpu_isa() == RT_ISA_AVX512 && rt_cpu_vnni() ? RT_QGEMM_VNNI
	           : rt_cpu_baseline_only()                        ? RT_QGEMM_AVX2
	                                                           : v256;
	assert_int_equal(rt_cpu_amx(), rt_cpu_amx_usable() && rt_cpu_isa() == RT_ISA_AVX512 &&
	                                   !(getenv("STRATA_CPU") &&
	                                     strcmp(getenv("STRATA_CPU"), "avx512") == 0));
	assert_int_equal(rt_qgemm_isa(), want);
	/* the test hook: a kind the machine runs, or a refusal */
	assert_int_equal(rt_qgemm_force(7), STRATA_INVALID_ARGUMENT);
	assert_int_equal(rt_qgemm_force(RT_QGEMM_AVX2), 0);
	assert_int_equal(rt_qgemm_isa(), RT_QGEMM_AVX2);
	int runs256 = rt_cpu_avxvnni() || (rt_cpu_best() == RT_ISA_AVX512 && rt_cpu_vnni());
	assert_int_equal(rt_qgemm_force(RT_QGEMM_VNNI256), runs256 ? 0 : STRATA_NOT_IMPLEMENTED);
	assert_int_equal(rt_qgemm_isa(), runs256 ? RT_QGEMM_VNNI256 : RT_QGEMM_AVX2);
	assert_int_equal(rt_qgemm_force(RT_QGEMM_AMX), rt_cpu_amx_usable() ? 0 : STRATA_NOT_IMPLEMENTED);
	assert_int_equal(rt_qgemm_force(0), 0);
	assert_int_equal(rt_qgemm_isa(), want);
}

/* A model of one node whose input bname is the initializer b (K x N) when
 * konst, a graph input otherwise; the other inputs are graph inputs. */
static struct mb_model *one_node(const char *op, const char *ins, const int *dts,
                                 const char *bname, int konst, int bdt, int64_t K, int64_t N,
                                 const void *b, int ydt)
{
	struct mb_model *m = mb_new("q", 13);
	char buf[256];
	snprintf(buf, sizeof buf, "%s", ins);
	int i = 0;
	for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","), i++) {
		if (strcmp(tok, bname) == 0 && konst) {
			int64_t d[2] = {K, N};
			mb_init(m, tok, bdt, 2, d, b);
		} else {
			mb_input(m, tok, dts[i], -1, NULL, NULL);
		}
	}
	mb_node(m, op, ins, "y");
	mb_output(m, "y", ydt, -1, NULL, NULL);
	return m;
}

static void test_matmulinteger_const_b(void **state)
{
	(void)state;
	enum { M = 9, K = 37, N = 70 };
	static const int T[] = {BASE_DT_UINT8, BASE_DT_INT8, BASE_DT_UINT8, BASE_DT_INT8};
	uint8_t a[2 * M * K];
	int8_t b[K * N];
	for (int i = 0; i < 2 * M * K; i++)
		a[i] = rbyte();
	for (int i = 0; i < K * N; i++)
		b[i] = (int8_t)rbyte();
	uint8_t az = 131;
	int8_t bz = -3;
	int64_t da[] = {2, M, K}, db[] = {K, N}, d0[] = {1};
	int32_t want[2 * M * N];
	for (int t = 0; t < 2; t++)
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++) {
				int32_t s = 0;
				for (int k = 0; k < K; k++)
					s += (a[(t * M + i) * K + k] - az) * (b[k * N + j] - bz);
				want[(t * M + i) * N + j] = s;
			}
	for (int konst = 0; konst < 2; konst++) {
		struct oc_case o;
		assert_int_equal(oc_load(one_node("MatMulInteger", "a,b,az,bz", T, "b", konst,
		                                  BASE_DT_INT8, K, N, b, BASE_DT_INT32),
		                         &o),
		                 0);
		struct rt_tensor in[4] = {oc_tensor(BASE_DT_UINT8, 3, da, a),
		                          oc_tensor(BASE_DT_INT8, 2, db, b),
		                          oc_tensor(BASE_DT_UINT8, 1, d0, &az),
		                          oc_tensor(BASE_DT_INT8, 1, d0, &bz)};
		struct rt_tensor ins[3] = {in[0], in[2], in[3]};
		assert_int_equal(oc_run(&o, konst ? ins : in), 0);
		int64_t dy[] = {2, M, N};
		oc_assert_shape(&o.out[0], 3, dy);
		assert_memory_equal(o.out[0].data, want, sizeof want);
		oc_free(&o);
	}
}

static void test_qlinearmatmul_const_b(void **state)
{
	(void)state;
	enum { M = 5, K = 300, N = 21 };
	static const int T[] = {BASE_DT_INT8,  BASE_DT_FLOAT, BASE_DT_INT8, BASE_DT_UINT8,
	                        BASE_DT_FLOAT, BASE_DT_UINT8, BASE_DT_FLOAT, BASE_DT_INT8};
	int8_t a[M * K];
	uint8_t b[K * N];
	for (int i = 0; i < M * K; i++)
		a[i] = (int8_t)rbyte();
	for (int i = 0; i < K * N; i++)
		b[i] = rbyte();
	float as = 0.02f, bs = 0.03f, ys = 0.5f;
	int8_t az = 4, yz = -7;
	uint8_t bz = 120;
	int8_t want[M * N];
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			int64_t s = 0;
			for (int k = 0; k < K; k++)
				s += (int64_t)(a[i * K + k] - az) * (b[k * N + j] - bz);
			double r = rint((double)s * ((double)as * (double)bs / (double)ys)) + yz;
			want[i * N + j] = (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r);
		}
	int64_t da[] = {M, K}, db[] = {K, N};
	for (int konst = 0; konst < 2; konst++) {
		struct oc_case o;
		assert_int_equal(oc_load(one_node("QLinearMatMul", "a,as,az,b,bs,bz,ys,yz", T, "b",
		                                  konst, BASE_DT_UINT8, K, N, b, BASE_DT_INT8),
		                         &o),
		                 0);
		struct rt_tensor in[8] = {
			oc_tensor(BASE_DT_INT8, 2, da, a),   oc_tensor(BASE_DT_FLOAT, 0, NULL, &as),
			oc_tensor(BASE_DT_INT8, 0, NULL, &az), oc_tensor(BASE_DT_UINT8, 2, db, b),
			oc_tensor(BASE_DT_FLOAT, 0, NULL, &bs), oc_tensor(BASE_DT_UINT8, 0, NULL, &bz),
			oc_tensor(BASE_DT_FLOAT, 0, NULL, &ys), oc_tensor(BASE_DT_INT8, 0, NULL, &yz)};
		struct rt_tensor ins[7] = {in[0], in[1], in[2], in[4], in[5], in[6], in[7]};
		assert_int_equal(oc_run(&o, konst ? ins : in), 0);
		assert_memory_equal(o.out[0].data, want, sizeof want);
		oc_free(&o);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qgemm_random),
		cmocka_unit_test(test_qgemm_extremes),
		cmocka_unit_test(test_qgemm_dispatch),
		cmocka_unit_test(test_matmulinteger_const_b),
		cmocka_unit_test(test_qlinearmatmul_const_b),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
