/*
 * test_ops_quant.c: unit tests of the quantization kernels (runtime/ops/
 * quant.c), the text kernels (runtime/ops/string.c) and the number-to-string
 * and bfloat16 directions of Cast (runtime/ops/cast.c).
 *
 * The ONNX backend suite covers the ordinary cases; these tests cover what
 * it does not: hostile attributes, shapes and parameter counts (each must
 * fail the load or the run with the right code and a telling message, never
 * crash), rounding and saturation edges, batch broadcasting, UTF-8 case
 * mapping and the exact text of formatted numbers.  Expected values are
 * written out by hand or computed here by plain loops.
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

#include "../runtime/runtime_int.h"
#include "modelbuild.h"
#include "opcase.h"

/* ---- harness --------------------------------------------------------------------- */

/* Load must fail with code, naming part. */
static void expect_load_error(struct mb_model *mb, int code, const char *part)
{
	struct oc_case o;
	assert_int_equal(oc_load(mb, &o), code);
	oc_assert_msg(&o, part);
}

static const int QDT[] = {BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_INT8};
static const int I8[] = {BASE_DT_INT8};
static const int U8[] = {BASE_DT_UINT8};
static const int F[] = {BASE_DT_FLOAT};
static const int S[] = {BASE_DT_STRING};

/* ---- QuantizeLinear / DequantizeLinear ------------------------------------------------- */

static void test_quantize_rounding_saturation(void **state)
{
	(void)state;
	struct mb_node *nd;
	struct oc_case o;
	assert_int_equal(oc_load(oc_model(13, "QuantizeLinear", "x,s,z", QDT, "y", I8, &nd), &o), 0);
	float x[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 300, -300, NAN, 7.0f};
	float s = 1, s2 = 2;
	int8_t z = 0, z2 = 3;
	int64_t d[] = {9};
	struct rt_tensor in[3] = {oc_tensor(BASE_DT_FLOAT, 1, d, x),
	                          oc_tensor(BASE_DT_FLOAT, 0, NULL, &s),
	                          oc_tensor(BASE_DT_INT8, 0, NULL, &z)};
	assert_int_equal(oc_run(&o, in), 0);
	/* half to even, saturation to [-128, 127], NaN to 0 */
	int8_t want[] = {0, 2, 2, 0, -2, 127, -128, 0, 7};
	assert_int_equal(o.out[0].dtype, BASE_DT_INT8);
	assert_memory_equal(o.out[0].data, want, sizeof want);
	/* scale 2, zero point 3: 7 / 2 = 3.5 -> 4, + 3 */
	in[1].data = &s2;
	in[2].data = &z2;
	assert_int_equal(oc_run(&o, in), 0);
	assert_int_equal(((int8_t *)o.out[0].data)[8], 7);
	assert_int_equal(((int8_t *)o.out[0].data)[0], 3); /* 0.25 -> 0, + 3 */
	oc_free(&o);
}

static void test_quantize_per_axis_errors(void **state)
{
	(void)state;
	struct mb_node *nd;
	struct oc_case o;
	static const int T[] = {BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_UINT8};
	struct mb_model *mb = oc_model(13, "QuantizeLinear", "x,s,z", T, "y", U8, &nd);
	mb_attr_int(nd, "axis", 0);
	assert_int_equal(oc_load(mb, &o), 0);
	float x[6] = {1, 2, 3, 4, 5, 6};
	float s3[3] = {1, 2, 4};
	uint8_t z3[3] = {10, 20, 30}, z2[2] = {1, 2};
	float s2[2] = {1, 2};
	int64_t d23[] = {2, 3}, d3[] = {3}, d2[] = {2}, d11[] = {1, 1};
	struct rt_tensor in[3] = {oc_tensor(BASE_DT_FLOAT, 2, d23, x),
	                          oc_tensor(BASE_DT_FLOAT, 1, d2, s2),
	                          oc_tensor(BASE_DT_UINT8, 1, d2, z2)};
	/* axis 0 has 2: one scale per row */
	assert_int_equal(oc_run(&o, in), 0);
	/* row 1: 4 / 2 + 2 = 4, 5 / 2 = 2.5 -> 2 (even) + 2 = 4, 6 / 2 + 2 = 5 */
	uint8_t want[6] = {2, 3, 4, 4, 4, 5};
	assert_memory_equal(o.out[0].data, want, 6);
	/* 3 scales for an axis of 2 */
	in[1] = oc_tensor(BASE_DT_FLOAT, 1, d3, s3);
	in[2] = oc_tensor(BASE_DT_UINT8, 1, d3, z3);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "scale has 3 cells");
	/* zero point count differs from the scale's */
	in[2] = oc_tensor(BASE_DT_UINT8, 1, d2, z2);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "zero point");
	/* a 2-D scale is blocked quantization */
	in[1] = oc_tensor(BASE_DT_FLOAT, 2, d11, s2);
	in[2] = oc_tensor(BASE_DT_UINT8, 2, d11, z2);
	assert_int_equal(oc_run(&o, in), STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "blocked");
	oc_free(&o);

	/* axis out of range for the input's rank */
	mb = oc_model(13, "QuantizeLinear", "x,s,z", T, "y", U8, &nd);
	mb_attr_int(nd, "axis", 5);
	assert_int_equal(oc_load(mb, &o), 0);
	in[1] = oc_tensor(BASE_DT_FLOAT, 1, d2, s2);
	in[2] = oc_tensor(BASE_DT_UINT8, 1, d2, z2);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "axis 5 out of range");
	oc_free(&o);

	/* opset 10 takes only a per-tensor scale */
	mb = oc_model(10, "QuantizeLinear", "x,s,z", T, "y", U8, &nd);
	assert_int_equal(oc_load(mb, &o), 0);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "opset 10");
	oc_free(&o);
}

static void test_quantize_load_errors(void **state)
{
	(void)state;
	struct mb_node *nd;
	static const int I64[] = {BASE_DT_INT64, BASE_DT_FLOAT, BASE_DT_UINT8};
	static const int T[] = {BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_UINT8};
	static const int TF[] = {BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_FLOAT};
	expect_load_error(oc_model(13, "QuantizeLinear", "x,s,z", I64, "y", U8, &nd),
	                  STRATA_NOT_IMPLEMENTED, "int64");
	struct mb_model *mb = oc_model(21, "QuantizeLinear", "x,s,z", T, "y", U8, &nd);
	mb_attr_int(nd, "block_size", 4);
	expect_load_error(mb, STRATA_NOT_IMPLEMENTED, "block_size");
	/* a float zero point is not a quantized type */
	expect_load_error(oc_model(13, "QuantizeLinear", "x,s,z", TF, "y", F, &nd),
	                  STRATA_NOT_IMPLEMENTED, "output type float");
	expect_load_error(oc_model(13, "QuantizeLinear", "x", TF, "y", U8, &nd),
	                  STRATA_INVALID_GRAPH, "y_scale");
	/* the zero point must have x's type */
	static const int D[] = {BASE_DT_UINT8, BASE_DT_FLOAT, BASE_DT_INT8};
	expect_load_error(oc_model(13, "DequantizeLinear", "x,s,z", D, "y", F, &nd),
	                  STRATA_INVALID_GRAPH, "zero point");
}

/* DynamicQuantizeLinear against the scalar formula: every length from 1 to
 * 70 and a long one (the vector loop and its scalar end), cells whose
 * quotients the vector loop must divide rather than multiply by the
 * reciprocal, and a NaN at each position, named by its index; on AVX-512
 * machines the bulk goes through quant_avx512.c, the rest through the AVX2
 * loops (make avx2 runs them alone). */
static void test_dynamic_quantize_paths(void **state)
{
	(void)state;
	struct mb_node *nd;
	struct oc_case o;
	static const int OUT[] = {BASE_DT_UINT8, BASE_DT_FLOAT, BASE_DT_UINT8};
	enum { LONG = 1031 };
	static float x[LONG];
	assert_int_equal(oc_load(oc_model(11, "DynamicQuantizeLinear", "x", F, "y,s,z", OUT, &nd), &o),
	                 0);
	uint32_t seed = 12345;
	for (int64_t len = 1; len <= LONG; len = len < 70 ? len + 1 : LONG + 1) {
		int64_t n = len > 70 ? LONG : len;
		for (int64_t i = 0; i < n; i++) {
			seed = seed * 1664525u + 1013904223u;
			x[i] = -(float)((seed >> 8) % 8000) / 1000.0f;
		}
		/* The range is [-8, 0.13]: on its scale, 8.13 / 255, the
		 * quotients of some cells by multiplying with 1 / scale round to
		 * another integer than the true quotients: only the division the
		 * passes fall back to near a half gets those right. */
		x[0] = -8.0f;
		if (n > 1)
			x[n - 1] = 0.13f;
		float sc = (0.13f - -8.0f) / 255.0f;
		for (int64_t i = 1; i + 1 < n; i += 3) {
			float v = ((float)(i % 240) + 0.5f) * sc;
			for (int t = 0; t < 3; t++)
				v = nextafterf(v, -100);
			for (int t = 0; t < 7 && rintf(v * (1.0f / sc)) == rintf(v / sc); t++)
				v = nextafterf(v, 100);
			x[i] = -v;
		}
		int64_t d[] = {n};
		struct rt_tensor in[1] = {oc_tensor(BASE_DT_FLOAT, 1, d, x)};
		assert_int_equal(oc_run(&o, in), 0);
		float lo = 0, hi = 0;
		for (int64_t i = 0; i < n; i++) {
			lo = x[i] < lo ? x[i] : lo;
			hi = x[i] > hi ? x[i] : hi;
		}
		float scale = (hi - lo) / 255.0f;
		float zp = rintf(0.0f - lo / scale);
		zp = zp < 0 ? 0 : zp > 255 ? 255 : zp;
		assert_true(*(float *)o.out[1].data == scale);
		assert_int_equal(*(uint8_t *)o.out[2].data, (uint8_t)zp);
		for (int64_t i = 0; i < n; i++) {
			float r = rintf(x[i] / scale) + zp;
			uint8_t want = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
			if (((uint8_t *)o.out[0].data)[i] != want)
				fail_msg("length %lld, cell %lld: %u, want %u", (long long)n,
				         (long long)i, ((uint8_t *)o.out[0].data)[i], want);
		}
	}
	/* 140 cells: the AVX-512 range takes the first 128 in steps of 64 */
	for (int64_t at = 0; at < 140; at++) {
		float keep = x[at];
		x[at] = NAN;
		int64_t d[] = {140};
		struct rt_tensor in[1] = {oc_tensor(BASE_DT_FLOAT, 1, d, x)};
		assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
		char want[48];
		snprintf(want, sizeof want, "cell %lld is NaN", (long long)at);
		oc_assert_msg(&o, want);
		x[at] = keep;
	}
	oc_free(&o);
}

static void test_dequantize_int32(void **state)
{
	(void)state;
	struct mb_node *nd;
	struct oc_case o;
	static const int T[] = {BASE_DT_INT32, BASE_DT_FLOAT};
	assert_int_equal(oc_load(oc_model(13, "DequantizeLinear", "x,s", T, "y", F, &nd), &o), 0);
	int32_t x[] = {-2147483647 - 1, -3, 0, 1000000};
	float s = 0.5f;
	int64_t d[] = {4};
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_INT32, 1, d, x),
	                          oc_tensor(BASE_DT_FLOAT, 0, NULL, &s)};
	assert_int_equal(oc_run(&o, in), 0);
	float want[] = {-1073741824.0f, -1.5f, 0, 500000};
	assert_memory_equal(o.out[0].data, want, sizeof want);
	oc_free(&o);
}

static void test_dynamic_quantize(void **state)
{
	(void)state;
	struct mb_node *nd;
	struct oc_case o;
	static const int OUT[] = {BASE_DT_UINT8, BASE_DT_FLOAT, BASE_DT_UINT8};
	assert_int_equal(oc_load(oc_model(11, "DynamicQuantizeLinear", "x", F, "y,s,z", OUT, &nd), &o),
	                 0);
	/* all positive: the range is stretched down to 0 */
	float x[] = {1, 2, 5.1f};
	int64_t d[] = {3};
	struct rt_tensor in[1] = {oc_tensor(BASE_DT_FLOAT, 1, d, x)};
	assert_int_equal(oc_run(&o, in), 0);
	float sc = 5.1f / 255.0f;
	assert_true(*(float *)o.out[1].data == sc);
	assert_int_equal(*(uint8_t *)o.out[2].data, 0);
	for (int i = 0; i < 3; i++) {
		float r = rintf(x[i] / sc);
		assert_int_equal(((uint8_t *)o.out[0].data)[i], (uint8_t)(r > 255 ? 255 : r));
	}
	/* all zero: scale 0, everything at the zero point */
	float zeros[3] = {0, 0, 0};
	in[0].data = zeros;
	assert_int_equal(oc_run(&o, in), 0);
	assert_true(*(float *)o.out[1].data == 0);
	assert_int_equal(((uint8_t *)o.out[0].data)[2], 0);
	/* NaN has no range */
	float bad[3] = {1, NAN, 2};
	in[0].data = bad;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "NaN");
	oc_free(&o);
	expect_load_error(oc_model(11, "DynamicQuantizeLinear", "x", U8, "y,s,z", OUT, &nd),
	                  STRATA_NOT_IMPLEMENTED, "uint8");
}

/* ---- MatMulInteger / QLinearMatMul -------------------------------------------------------- */

static void test_matmulinteger_batched(void **state)
{
	(void)state;
	struct mb_node *nd;
	struct oc_case o;
	static const int T[] = {BASE_DT_INT8, BASE_DT_UINT8, BASE_DT_INT8, BASE_DT_UINT8};
	static const int I32[] = {BASE_DT_INT32};
	assert_int_equal(oc_load(oc_model(10, "MatMulInteger", "a,b,az,bz", T, "y", I32, &nd), &o), 0);
	/* a [2,1,2,3] x b [3,3,2] -> [2,3,2,2]; a per-row zero point, b per column */
	int8_t a[12];
	uint8_t b[18];
	for (int i = 0; i < 12; i++)
		a[i] = (int8_t)(i * 23 % 256 - 128);
	for (int i = 0; i < 18; i++)
		b[i] = (uint8_t)(i * 37 % 256);
	int8_t az[2] = {-5, 7};
	uint8_t bz[2] = {100, 3};
	int64_t da[] = {2, 1, 2, 3}, db[] = {3, 3, 2}, d2[] = {2};
	struct rt_tensor in[4] = {oc_tensor(BASE_DT_INT8, 4, da, a), oc_tensor(BASE_DT_UINT8, 3, db, b),
	                          oc_tensor(BASE_DT_INT8, 1, d2, az),
	                          oc_tensor(BASE_DT_UINT8, 1, d2, bz)};
	assert_int_equal(oc_run(&o, in), 0);
	int64_t dy[] = {2, 3, 2, 2};
	oc_assert_shape(&o.out[0], 4, dy);
	const int32_t *y = o.out[0].data;
	for (int p = 0; p < 2; p++)
		for (int q = 0; q < 3; q++)
			for (int i = 0; i < 2; i++)
				for (int j = 0; j < 2; j++) {
					int32_t s = 0;
					for (int k = 0; k < 3; k++)
						s += (a[p * 6 + i * 3 + k] - az[i]) *
						     (b[q * 6 + k * 2 + j] - bz[j]);
					assert_int_equal(y[((p * 3 + q) * 2 + i) * 2 + j], s);
				}
	/* hostile shapes and zero points */
	int64_t db2[] = {4, 2};
	in[1] = oc_tensor(BASE_DT_UINT8, 2, db2, b);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "inner dimensions");
	int64_t db3[] = {3, 3, 2}, da3[] = {2, 2, 3};
	in[0] = oc_tensor(BASE_DT_INT8, 3, da3, a);
	in[1] = oc_tensor(BASE_DT_UINT8, 3, db3, b);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "broadcast");
	int64_t d3[] = {3};
	in[0] = oc_tensor(BASE_DT_INT8, 4, da, a);
	in[2] = oc_tensor(BASE_DT_INT8, 1, d3, a);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "a_zero_point");
	oc_free(&o);
	static const int FL[] = {BASE_DT_FLOAT, BASE_DT_UINT8};
	expect_load_error(oc_model(10, "MatMulInteger", "a,b", FL, "y", I32, &nd),
	                  STRATA_NOT_IMPLEMENTED, "MatMulInteger");
}

static void test_qlinearmatmul_values(void **state)
{
	(void)state;
	struct mb_node *nd;
	struct oc_case o;
	static const int T[] = {BASE_DT_UINT8, BASE_DT_FLOAT, BASE_DT_UINT8, BASE_DT_UINT8,
	                        BASE_DT_FLOAT, BASE_DT_UINT8, BASE_DT_FLOAT, BASE_DT_INT8};
	assert_int_equal(
	        oc_load(oc_model(10, "QLinearMatMul", "a,as,az,b,bs,bz,ys,yz", T, "y", I8, &nd), &o), 0);
	/* 1-D a (K = 2) times b [2,2]: the result drops the row dimension */
	uint8_t a[2] = {10, 200}, b[4] = {0, 255, 128, 1}, az = 128, bz = 128;
	float as = 0.5f, bs = 0.25f, ys = 1.0f;
	int8_t yz = -1;
	int64_t d2[] = {2}, d22[] = {2, 2};
	struct rt_tensor in[8] = {
		oc_tensor(BASE_DT_UINT8, 1, d2, a), oc_tensor(BASE_DT_FLOAT, 0, NULL, &as),
		oc_tensor(BASE_DT_UINT8, 0, NULL, &az), oc_tensor(BASE_DT_UINT8, 2, d22, b),
		oc_tensor(BASE_DT_FLOAT, 0, NULL, &bs), oc_tensor(BASE_DT_UINT8, 0, NULL, &bz),
		oc_tensor(BASE_DT_FLOAT, 0, NULL, &ys), oc_tensor(BASE_DT_INT8, 0, NULL, &yz)};
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 1, d2);
	/* scales: 0.5 * 0.25 / 1 = 1/8.  column 0: (-118 * -128 + 72 * 0) / 8 - 1
	 * = 1887 -> saturates at 127; column 1: (-118 * 127 + 72 * -127) / 8 =
	 * -3016.25 -> -128 */
	int8_t want[2] = {127, -128};
	assert_memory_equal(o.out[0].data, want, 2);
	/* halfway cases: a - 128 = [1, 0], b - 128 = [[4, 12], [-128, -128]] */
	uint8_t a2[2] = {129, 128}, b2[4] = {132, 140, 0, 0};
	in[0].data = a2;
	in[3].data = b2;
	yz = 0;
	assert_int_equal(oc_run(&o, in), 0);
	assert_int_equal(((int8_t *)o.out[0].data)[0], 0); /* 0.5 rounds to even 0 */
	assert_int_equal(((int8_t *)o.out[0].data)[1], 2); /* 12 * 0.125 = 1.5 -> 2 */
	oc_free(&o);
	expect_load_error(oc_model(10, "QLinearMatMul", "a,as,az,b,bs,bz,ys", T, "y", I8, &nd),
	                  STRATA_INVALID_GRAPH, "8 inputs");
}

/* ---- StringNormalizer ------------------------------------------------------------------ */

static void test_strnorm_utf8_case(void **state)
{
	(void)state;
	struct mb_node *nd;
	struct oc_case o;
	struct mb_model *mb = oc_model(10, "StringNormalizer", "x", S, "y", S, &nd);
	mb_attr_string(nd, "case_change_action", "UPPER");
	assert_int_equal(oc_load(mb, &o), 0);
	const char *x[] = {"stra\xc3\x9f" "e", "\xc3\xa9t\xc3\xa9", "\xcf\x89\xce\xbc\xce\xad",
	                   "ok\xff", ""};
	int64_t d[] = {1, 5};
	struct rt_tensor in[1] = {oc_tensor(BASE_DT_STRING, 2, d, x)};
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 2, d);
	char **y = o.out[0].data;
	assert_string_equal(y[0], "STRA\xc3\x9f" "E"); /* sharp s has no one-letter upper case */
	assert_string_equal(y[1], "\xc3\x89T\xc3\x89");
	assert_string_equal(y[2], "\xce\xa9\xce\x9c\xce\x88");
	assert_string_equal(y[3], "OK\xff"); /* an invalid byte passes through */
	assert_string_equal(y[4], "");
	/* a [2, C] input is refused, as is rank 3 */
	int64_t d2[] = {2, 2, 1};
	in[0] = oc_tensor(BASE_DT_STRING, 2, d2, x);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "[1, C]");
	in[0] = oc_tensor(BASE_DT_STRING, 3, d2, x);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_free(&o);

	mb = oc_model(10, "StringNormalizer", "x", S, "y", S, &nd);
	mb_attr_string(nd, "case_change_action", "TITLE");
	expect_load_error(mb, STRATA_INVALID_GRAPH, "TITLE");
	expect_load_error(oc_model(10, "StringNormalizer", "x", F, "y", S, &nd),
	                  STRATA_NOT_IMPLEMENTED, "float");
}

/* ---- TfIdfVectorizer -------------------------------------------------------------------- */

static struct mb_model *tfidf(const char *mode, int64_t minn, int64_t maxn, int64_t skip,
                              int in_dt, struct mb_node **nd)
{
	const int dt[] = {in_dt};
	struct mb_model *mb = oc_model(9, "TfIdfVectorizer", "x", dt, "y", F, nd);
	mb_attr_string(*nd, "mode", mode);
	mb_attr_int(*nd, "min_gram_length", minn);
	mb_attr_int(*nd, "max_gram_length", maxn);
	mb_attr_int(*nd, "max_skip_count", skip);
	return mb;
}

static void test_tfidf_weighted(void **state)
{
	(void)state;
	struct mb_node *nd;
	struct oc_case o;
	/* unigrams 7, 9; bigram (7, 9); outputs in reverse order */
	static const int64_t pool[] = {7, 9, 7, 9}, counts[] = {0, 2}, idx[] = {2, 1, 0};
	static const float w[] = {0.5f, 2.0f, 4.0f};
	const char *modes[] = {"TF", "IDF", "TFIDF"};
	/* x = 7 9 7 7 9: 7 x3, 9 x2, (7,9) x2 */
	int64_t x[] = {7, 9, 7, 7, 9};
	float want[3][3] = {{2, 2, 3}, {0.5f, 2, 4}, {1, 4, 12}};
	for (int m = 0; m < 3; m++) {
		struct mb_model *mb = tfidf(modes[m], 1, 2, 0, BASE_DT_INT64, &nd);
		mb_attr_ints(nd, "pool_int64s", 4, pool);
		mb_attr_ints(nd, "ngram_counts", 2, counts);
		mb_attr_ints(nd, "ngram_indexes", 3, idx);
		if (m > 0)
			mb_attr_floats(nd, "weights", 3, w);
		assert_int_equal(oc_load(mb, &o), 0);
		int64_t d[] = {5}, d3[] = {3};
		struct rt_tensor in[1] = {oc_tensor(BASE_DT_INT64, 1, d, x)};
		assert_int_equal(oc_run(&o, in), 0);
		oc_assert_shape(&o.out[0], 1, d3);
		assert_memory_equal(o.out[0].data, want[m], sizeof want[m]);
		int64_t d3x[] = {1, 1, 5};
		in[0] = oc_tensor(BASE_DT_INT64, 3, d3x, x);
		assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
		oc_assert_msg(&o, "rank 3");
		oc_free(&o);
	}
}

static void test_tfidf_bad_attributes(void **state)
{
	(void)state;
	struct mb_node *nd;
	static const int64_t pool[] = {1, 2, 3, 4, 5}, idx[] = {0, 1, 2, 3};
	struct mb_model *mb = tfidf("BM25", 1, 1, 0, BASE_DT_INT32, &nd);
	mb_attr_ints(nd, "pool_int64s", 2, pool);
	expect_load_error(mb, STRATA_INVALID_GRAPH, "BM25");

	mb = tfidf("TF", 2, 1, 0, BASE_DT_INT32, &nd);
	mb_attr_ints(nd, "pool_int64s", 2, pool);
	expect_load_error(mb, STRATA_INVALID_GRAPH, "min_gram_length 2");

	/* bigrams start past the pool's end */
	static const int64_t far[] = {0, 9};
	mb = tfidf("TF", 1, 2, 0, BASE_DT_INT32, &nd);
	mb_attr_ints(nd, "pool_int64s", 5, pool);
	mb_attr_ints(nd, "ngram_counts", 2, far);
	mb_attr_ints(nd, "ngram_indexes", 4, idx);
	expect_load_error(mb, STRATA_INVALID_GRAPH, "does not fit");

	/* 5 items are not a whole number of bigrams */
	static const int64_t two[] = {0, 0};
	mb = tfidf("TF", 1, 2, 0, BASE_DT_INT32, &nd);
	mb_attr_ints(nd, "pool_int64s", 5, pool);
	mb_attr_ints(nd, "ngram_counts", 2, two);
	mb_attr_ints(nd, "ngram_indexes", 2, idx);
	expect_load_error(mb, STRATA_INVALID_GRAPH, "whole number");

	/* 5 unigrams, 4 indexes */
	static const int64_t one_level[] = {0};
	mb = tfidf("TF", 1, 1, 0, BASE_DT_INT32, &nd);
	mb_attr_ints(nd, "pool_int64s", 5, pool);
	mb_attr_ints(nd, "ngram_counts", 1, one_level);
	mb_attr_ints(nd, "ngram_indexes", 4, idx);
	expect_load_error(mb, STRATA_INVALID_GRAPH, "ngram_indexes has 4");

	/* a negative output index */
	static const int64_t neg[] = {0, 1, -3, 2, 4};
	mb = tfidf("TF", 1, 1, 0, BASE_DT_INT32, &nd);
	mb_attr_ints(nd, "pool_int64s", 5, pool);
	mb_attr_ints(nd, "ngram_counts", 1, one_level);
	mb_attr_ints(nd, "ngram_indexes", 5, neg);
	expect_load_error(mb, STRATA_INVALID_GRAPH, "ngram_indexes[2]");

	/* no pool at all; an integer pool for string input */
	mb = tfidf("TF", 1, 1, 0, BASE_DT_INT32, &nd);
	mb_attr_ints(nd, "ngram_counts", 1, one_level);
	expect_load_error(mb, STRATA_INVALID_GRAPH, "pool");
	mb = tfidf("TF", 1, 1, 0, BASE_DT_STRING, &nd);
	mb_attr_ints(nd, "pool_int64s", 5, pool);
	mb_attr_ints(nd, "ngram_counts", 1, one_level);
	mb_attr_ints(nd, "ngram_indexes", 5, neg);
	expect_load_error(mb, STRATA_NOT_IMPLEMENTED, "string");
}

static void test_tfidf_huge_skip(void **state)
{
	(void)state;
	struct mb_node *nd;
	struct oc_case o;
	/* a skip count far past the row: still one pass per useful distance */
	static const int64_t pool[] = {1, 2}, counts[] = {0, 0}, idx[] = {0};
	struct mb_model *mb = tfidf("TF", 2, 1000000, INT64_MAX / 2, BASE_DT_INT32, &nd);
	mb_attr_ints(nd, "pool_int64s", 2, pool);
	mb_attr_ints(nd, "ngram_counts", 2, counts);
	mb_attr_ints(nd, "ngram_indexes", 1, idx);
	assert_int_equal(oc_load(mb, &o), 0);
	int32_t x[] = {1, 5, 5, 2, 1, 2};
	int64_t d[] = {2, 3};
	struct rt_tensor in[1] = {oc_tensor(BASE_DT_INT32, 2, d, x)};
	assert_int_equal(oc_run(&o, in), 0);
	/* row 0: (1, 2) nowhere; row 1 (2 1 2): (1, 2) at distance 1 */
	float want[2] = {0, 1};
	assert_memory_equal(o.out[0].data, want, sizeof want);
	oc_free(&o);
}

/* ---- Cast to string and to bfloat16 ----------------------------------------------------- */

static void test_cast_float_to_string(void **state)
{
	(void)state;
	struct mb_node *nd;
	struct oc_case o;
	struct mb_model *mb = oc_model(13, "Cast", "x", F, "y", S, &nd);
	mb_attr_int(nd, "to", BASE_DT_STRING);
	assert_int_equal(oc_load(mb, &o), 0);
	float x[] = {1.0f, 100.0f, 1e-5f, 0.1f, -0.0f, NAN, -INFINITY, 1e16f, 123456789.0f,
	             0.0001f, 3.4028235e38f, 1.5e-7f};
	/* 0.0001f is just below 1e-4, so it prints in scientific form */
	const char *want[] = {"1.0", "100.0", "1e-05", "0.1", "-0.0", "nan", "-inf", "1e+16",
	                      "123456790.0", "1e-04", "3.4028235e+38", "1.5e-07"};
	int64_t d[] = {12};
	struct rt_tensor in[1] = {oc_tensor(BASE_DT_FLOAT, 1, d, x)};
	assert_int_equal(oc_run(&o, in), 0);
	for (int i = 0; i < 12; i++)
		assert_string_equal(((char **)o.out[0].data)[i], want[i]);
	oc_free(&o);

	static const int B[] = {BASE_DT_BOOL}, L[] = {BASE_DT_INT64}, D[] = {BASE_DT_DOUBLE};
	mb = oc_model(13, "Cast", "x", B, "y", S, &nd);
	mb_attr_int(nd, "to", BASE_DT_STRING);
	assert_int_equal(oc_load(mb, &o), 0);
	uint8_t bx[2] = {1, 0};
	int64_t d2[] = {2};
	in[0] = oc_tensor(BASE_DT_BOOL, 1, d2, bx);
	assert_int_equal(oc_run(&o, in), 0);
	assert_string_equal(((char **)o.out[0].data)[0], "True");
	assert_string_equal(((char **)o.out[0].data)[1], "False");
	oc_free(&o);

	mb = oc_model(13, "Cast", "x", L, "y", S, &nd);
	mb_attr_int(nd, "to", BASE_DT_STRING);
	assert_int_equal(oc_load(mb, &o), 0);
	int64_t lx[2] = {INT64_MIN, 42};
	in[0] = oc_tensor(BASE_DT_INT64, 1, d2, lx);
	assert_int_equal(oc_run(&o, in), 0);
	assert_string_equal(((char **)o.out[0].data)[0], "-9223372036854775808");
	assert_string_equal(((char **)o.out[0].data)[1], "42");
	oc_free(&o);

	mb = oc_model(13, "Cast", "x", D, "y", S, &nd);
	mb_attr_int(nd, "to", BASE_DT_STRING);
	assert_int_equal(oc_load(mb, &o), 0);
	double dx[2] = {0.1, 2.0 / 3.0};
	in[0] = oc_tensor(BASE_DT_DOUBLE, 1, d2, dx);
	assert_int_equal(oc_run(&o, in), 0);
	assert_string_equal(((char **)o.out[0].data)[0], "0.1");
	assert_string_equal(((char **)o.out[0].data)[1], "0.6666666666666666");
	oc_free(&o);
}

static void test_cast_bfloat16_by_opset(void **state)
{
	(void)state;
	struct mb_node *nd;
	struct oc_case o;
	static const int BF[] = {BASE_DT_BFLOAT16};
	uint32_t bits[3] = {0x3ef5377cu, 0x7f800001u, 0x3f80c000u};
	float x[3];
	memcpy(x, bits, sizeof x);
	int64_t d[] = {3};
	struct rt_tensor in[1] = {oc_tensor(BASE_DT_FLOAT, 1, d, x)};
	/* opset 13 keeps the upper half (a NaN stays a quiet NaN); opset 19
	 * rounds to nearest even: 0x3f80c000 lies past the halfway point. */
	static const uint16_t trunc[3] = {0x3ef5, 0x7fc0, 0x3f80};
	for (int k = 0; k < 2; k++) {
		struct mb_model *mb = oc_model(k ? 19 : 13, "Cast", "x", F, "y", BF, &nd);
		mb_attr_int(nd, "to", BASE_DT_BFLOAT16);
		assert_int_equal(oc_load(mb, &o), 0);
		assert_int_equal(oc_run(&o, in), 0);
		const uint16_t *y = o.out[0].data;
		if (k == 0) {
			assert_memory_equal(y, trunc, sizeof trunc);
		} else {
			assert_int_equal(y[0], 0x3ef5);
			assert_true((y[1] & 0x7f80) == 0x7f80 && (y[1] & 0x7f) != 0); /* NaN */
			assert_int_equal(y[2], 0x3f81);
		}
		oc_free(&o);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantize_rounding_saturation),
		cmocka_unit_test(test_quantize_per_axis_errors),
		cmocka_unit_test(test_quantize_load_errors),
		cmocka_unit_test(test_dequantize_int32),
		cmocka_unit_test(test_dynamic_quantize),
		cmocka_unit_test(test_dynamic_quantize_paths),
		cmocka_unit_test(test_matmulinteger_batched),
		cmocka_unit_test(test_qlinearmatmul_values),
		cmocka_unit_test(test_strnorm_utf8_case),
		cmocka_unit_test(test_tfidf_weighted),
		cmocka_unit_test(test_tfidf_bad_attributes),
		cmocka_unit_test(test_tfidf_huge_skip),
		cmocka_unit_test(test_cast_float_to_string),
		cmocka_unit_test(test_cast_bfloat16_by_opset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
