/*
 * test_ops_nn.c: unit tests of the convolution, pooling and normalization
 * kernels (runtime/ops/conv.c, pool.c, nn.c and the window geometry in
 * window.c).
 *
 * The ONNX node suite covers the common attribute combinations; these tests
 * add what it does not: Conv and ConvTranspose with groups, dilations,
 * strides and asymmetric pads against naive loops written here, QLinearConv
 * rounding (half to even) and saturation, MaxPool Indices in column-major
 * order, and the error paths: hostile attributes must fail the load with
 * STRATA_INVALID_GRAPH, hostile shapes and indices must fail the run with
 * STRATA_RUNTIME, unsupported types must fail with STRATA_NOT_IMPLEMENTED,
 * each with a message that says what is wrong.
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

/* ---- element types of the graph inputs and outputs ------------------------------- */

static const int F3[] = {BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_FLOAT,
                         BASE_DT_FLOAT, BASE_DT_FLOAT};

/* ---- Conv ---------------------------------------------------------------------------- */

/* Conv with group 2, strides (2, 1), dilations (1, 2), pads (1, 0, 2, 1) and a
 * bias, against a direct 7-deep loop. */
static void test_conv_groups_dilations(void **state)
{
	enum { N = 2, C = 4, H = 7, W = 6, M = 6, G = 2, KH = 3, KW = 2 };
	const int64_t s[2] = {2, 1}, d[2] = {1, 2}, pads[4] = {1, 0, 2, 1};
	int64_t oh = (H + 1 + 2 - ((KH - 1) * d[0] + 1)) / s[0] + 1;
	int64_t ow = (W + 0 + 1 - ((KW - 1) * d[1] + 1)) / s[1] + 1;
	static float x[N * C * H * W], w[M * (C / G) * KH * KW], b[M];
	unsigned seed = 7;
	for (size_t i = 0; i < sizeof x / sizeof *x; i++)
		x[i] = oc_frand(&seed);
	for (size_t i = 0; i < sizeof w / sizeof *w; i++)
		w[i] = oc_frand(&seed);
	for (int i = 0; i < M; i++)
		b[i] = oc_frand(&seed);
	float *want = calloc((size_t)(N * M * oh * ow), sizeof *want);
	for (int n = 0; n < N; n++)
		for (int m = 0; m < M; m++)
			for (int64_t i = 0; i < oh; i++)
				for (int64_t j = 0; j < ow; j++) {
					double acc = b[m];
					int g = m / (M / G);
					for (int c = 0; c < C / G; c++)
						for (int ki = 0; ki < KH; ki++)
							for (int kj = 0; kj < KW; kj++) {
								int64_t hi = i * s[0] - pads[0] + ki * d[0];
								int64_t wi = j * s[1] - pads[1] + kj * d[1];
								if (hi < 0 || hi >= H || wi < 0 || wi >= W)
									continue;
								acc += (double)x[((n * C + g * (C / G) + c) * H + hi) * W + wi] *
								       w[((m * (C / G) + c) * KH + ki) * KW + kj];
							}
					want[((n * M + m) * oh + i) * ow + j] = (float)acc;
				}
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(11, "Conv", "x,w,b", F3, "y", F3, &nd);
	mb_attr_int(nd, "group", G);
	mb_attr_ints(nd, "strides", 2, s);
	mb_attr_ints(nd, "dilations", 2, d);
	mb_attr_ints(nd, "pads", 4, pads);
	assert_int_equal(oc_load(mb, &o), 0);
	struct rt_tensor in[3] = {
		oc_tensor(BASE_DT_FLOAT, 4, (int64_t[]){N, C, H, W}, x),
		oc_tensor(BASE_DT_FLOAT, 4, (int64_t[]){M, C / G, KH, KW}, w),
		oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){M}, b),
	};
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 4, (int64_t[]){N, M, oh, ow});
	oc_assert_close(o.out[0].data, want, N * M * oh * ow, 1e-5);
	oc_free(&o);
	free(want);
}

/* ConvTranspose, 1-D, group 2, stride 3, dilation 2, pads (1, 2) and
 * output_padding 1, against the scatter definition. */
static void test_convtranspose_naive(void **state)
{
	enum { N = 1, C = 4, L = 5, G = 2, MG = 3, K = 3 };
	const int64_t s = 3, d = 2, pb = 1, pe = 2, op = 1;
	int64_t ol = s * (L - 1) + op + (K - 1) * d + 1 - pb - pe;
	float x[N * C * L], w[C * MG * K];
	unsigned seed = 3;
	for (size_t i = 0; i < sizeof x / sizeof *x; i++)
		x[i] = oc_frand(&seed);
	for (size_t i = 0; i < sizeof w / sizeof *w; i++)
		w[i] = oc_frand(&seed);
	float want[N * G * MG * 64] = {0};
	for (int c = 0; c < C; c++) {
		int g = c / (C / G);
		for (int mm = 0; mm < MG; mm++)
			for (int i = 0; i < L; i++)
				for (int k = 0; k < K; k++) {
					int64_t o = i * s - pb + k * d;
					if (o >= 0 && o < ol)
						want[(g * MG + mm) * ol + o] += x[c * L + i] * w[(c * MG + mm) * K + k];
				}
	}
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(11, "ConvTranspose", "x,w", F3, "y", F3, &nd);
	mb_attr_int(nd, "group", G);
	mb_attr_ints(nd, "strides", 1, &s);
	mb_attr_ints(nd, "dilations", 1, &d);
	mb_attr_ints(nd, "pads", 2, (int64_t[]){pb, pe});
	mb_attr_ints(nd, "output_padding", 1, &op);
	assert_int_equal(oc_load(mb, &o), 0);
	struct rt_tensor in[2] = {
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){N, C, L}, x),
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){C, MG, K}, w),
	};
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 3, (int64_t[]){N, G * MG, ol});
	oc_assert_close(o.out[0].data, want, G * MG * ol, 1e-5);
	oc_free(&o);
}

/* Attributes the load must refuse. */
static void test_conv_bad_attributes(void **state)
{
	static const struct {
		const char *attr;
		int64_t v[4];
		size_t n;
		const char *msg;
	} cases[] = {
		{"strides", {0, 1}, 2, "strides[0]"},
		{"dilations", {1, -3}, 2, "dilations[1]"},
		{"pads", {0, 0, -1, 0}, 4, "pads[2]"},
		{"pads", {0, 0, 0}, 3, "disagree"},
		{"kernel_shape", {3, 3, 3}, 3, "disagree"},
		{"group", {0}, 0, "group"},
		{"group", {-5}, 0, "group"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct oc_case o;
		struct mb_node *nd;
		struct mb_model *mb = oc_model(11, "Conv", "x,w", F3, "y", F3, &nd);
		if (strcmp(cases[i].attr, "strides") != 0) /* two spatial dims to disagree with */
			mb_attr_ints(nd, "strides", 2, (int64_t[]){1, 1});
		if (cases[i].n)
			mb_attr_ints(nd, cases[i].attr, cases[i].n, cases[i].v);
		else
			mb_attr_int(nd, cases[i].attr, cases[i].v[0]);
		assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
		oc_assert_msg(&o, cases[i].msg);
	}
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(11, "Conv", "x,w", F3, "y", F3, &nd);
	mb_attr_string(nd, "auto_pad", "SAME_SIDEWAYS");
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "auto_pad");
	static const int I3[] = {BASE_DT_INT32, BASE_DT_INT32};
	assert_int_equal(oc_load(oc_model(11, "Conv", "x,w", I3, "y", I3, &nd), &o),
	                 STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "int32");
}

/* Shapes the run must refuse. */
static void test_conv_bad_shapes(void **state)
{
	float x[2 * 3 * 4 * 4] = {0}, w[4 * 3 * 5 * 5] = {0}, b[5] = {0};
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(oc_model(11, "Conv", "x,w,b", F3, "y", F3, &nd), &o), 0);
	/* W wants 2 input channels, X has 3 */
	struct rt_tensor in[3] = {
		oc_tensor(BASE_DT_FLOAT, 4, (int64_t[]){2, 3, 4, 4}, x),
		oc_tensor(BASE_DT_FLOAT, 4, (int64_t[]){4, 2, 3, 3}, w),
		oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){4}, b),
	};
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "channels");
	/* kernel larger than the input */
	in[1] = oc_tensor(BASE_DT_FLOAT, 4, (int64_t[]){4, 3, 5, 5}, w);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "exceeds");
	/* bias of the wrong length */
	in[1] = oc_tensor(BASE_DT_FLOAT, 4, (int64_t[]){4, 3, 3, 3}, w);
	in[2] = oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){5}, b);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "B must");
	/* rank 2 X */
	in[0] = oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 3}, x);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "rank");
	oc_free(&o);
}

/* QLinearConv: 1x1 kernel of weight 1, x_scale 0.5: the products land on
 * .5 and round half to even; large values saturate. */
static void test_qlinearconv_rounding(void **state)
{
	static const int T[] = {BASE_DT_UINT8, BASE_DT_FLOAT, BASE_DT_UINT8, BASE_DT_UINT8,
	                        BASE_DT_FLOAT, BASE_DT_UINT8, BASE_DT_FLOAT, BASE_DT_UINT8};
	static const int U8[] = {BASE_DT_UINT8};
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(oc_model(10, "QLinearConv", "x,xs,xz,w,ws,wz,ys,yz", T, "y", U8, &nd),
	                      &o),
	                 0);
	uint8_t x[6] = {1, 3, 5, 7, 255, 0}, xz = 0, w = 1, wz = 0, yz = 0;
	float xs = 0.5f, ws = 1.0f, ys = 1.0f;
	int64_t one = 1;
	struct rt_tensor in[8] = {
		oc_tensor(BASE_DT_UINT8, 4, (int64_t[]){1, 1, 1, 6}, x),
		oc_tensor(BASE_DT_FLOAT, 0, NULL, &xs),
		oc_tensor(BASE_DT_UINT8, 0, NULL, &xz),
		oc_tensor(BASE_DT_UINT8, 4, (int64_t[]){1, 1, 1, 1}, &w),
		oc_tensor(BASE_DT_FLOAT, 1, &one, &ws),
		oc_tensor(BASE_DT_UINT8, 1, &one, &wz),
		oc_tensor(BASE_DT_FLOAT, 0, NULL, &ys),
		oc_tensor(BASE_DT_UINT8, 0, NULL, &yz),
	};
	assert_int_equal(oc_run(&o, in), 0);
	/* 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, 3.5 -> 4, 127.5 -> 128 */
	uint8_t want[6] = {0, 2, 2, 4, 128, 0};
	assert_memory_equal(o.out[0].data, want, sizeof want);
	ys = 0.1f; /* 255 * 0.5 / 0.1 = 1275: saturates */
	assert_int_equal(oc_run(&o, in), 0);
	assert_int_equal(((uint8_t *)o.out[0].data)[4], 255);
	/* w_scale with two cells for one output channel */
	float ws2[2] = {1, 1};
	in[4] = oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){2}, ws2);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "w_scale");
	oc_free(&o);
}

/* ConvInteger: a zero point that is not one cell fails the run. */
static void test_convinteger_zero_point(void **state)
{
	static const int T[] = {BASE_DT_UINT8, BASE_DT_UINT8, BASE_DT_UINT8};
	static const int I32[] = {BASE_DT_INT32};
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(oc_model(10, "ConvInteger", "x,w,xz", T, "y", I32, &nd), &o), 0);
	uint8_t x[4] = {2, 3, 4, 5}, w[1] = {3}, xz[2] = {1, 1};
	struct rt_tensor in[3] = {
		oc_tensor(BASE_DT_UINT8, 4, (int64_t[]){1, 1, 2, 2}, x),
		oc_tensor(BASE_DT_UINT8, 4, (int64_t[]){1, 1, 1, 1}, w),
		oc_tensor(BASE_DT_UINT8, 0, NULL, xz),
	};
	assert_int_equal(oc_run(&o, in), 0);
	int32_t want[4] = {3, 6, 9, 12};
	assert_memory_equal(o.out[0].data, want, sizeof want);
	in[2] = oc_tensor(BASE_DT_UINT8, 1, (int64_t[]){2}, xz);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "zero point");
	oc_free(&o);
}

/* ---- pools ------------------------------------------------------------------------------ */

/* MaxPool Indices with storage_order 1 count h + w * H inside the plane. */
static void test_maxpool_indices_col_major(void **state)
{
	static const int FL[] = {BASE_DT_FLOAT, BASE_DT_INT64};
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(12, "MaxPool", "x", FL, "y,i", FL, &nd);
	mb_attr_ints(nd, "kernel_shape", 2, (int64_t[]){2, 2});
	mb_attr_ints(nd, "strides", 2, (int64_t[]){2, 2});
	mb_attr_int(nd, "storage_order", 1);
	assert_int_equal(oc_load(mb, &o), 0);
	/* 2 planes of 2 x 4; the maximum of each 2x2 block is placed apart */
	float x[16] = {0, 9, 0, 0,  0, 0, 0, 8,  7, 0, 0, 0,  0, 0, 6, 0};
	struct rt_tensor in = oc_tensor(BASE_DT_FLOAT, 4, (int64_t[]){1, 2, 2, 4}, x);
	assert_int_equal(oc_run(&o, &in), 0);
	oc_assert_shape(&o.out[0], 4, (int64_t[]){1, 2, 1, 2});
	float wy[4] = {9, 8, 7, 6};
	oc_assert_close(o.out[0].data, wy, 4, 0);
	/* (h, w) = (0, 1) -> 0 + 1 * 2 = 2; (1, 3) -> 1 + 6 = 7; plane 1 adds 8 */
	int64_t wi[4] = {2, 7, 8 + 0, 8 + 1 + 2 * 2};
	assert_memory_equal(o.out[1].data, wi, sizeof wi);
	oc_free(&o);
}

/* AveragePool with ceil_mode and count_include_pad: the extra ceil_mode
 * column counts only what lies inside the declared pads. */
static void test_averagepool_ceil_include_pad(void **state)
{
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(11, "AveragePool", "x", F3, "y", F3, &nd);
	mb_attr_ints(nd, "kernel_shape", 1, (int64_t[]){3});
	mb_attr_ints(nd, "strides", 1, (int64_t[]){2});
	mb_attr_ints(nd, "pads", 2, (int64_t[]){1, 0});
	mb_attr_int(nd, "ceil_mode", 1);
	mb_attr_int(nd, "count_include_pad", 1);
	assert_int_equal(oc_load(mb, &o), 0);
	float x[5] = {1, 2, 3, 4, 5};
	struct rt_tensor in = oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 1, 5}, x);
	assert_int_equal(oc_run(&o, &in), 0);
	/* windows start at -1, 1, 3: (0+1+2)/3, (2+3+4)/3, (4+5)/2 */
	oc_assert_shape(&o.out[0], 3, (int64_t[]){1, 1, 3});
	float want[3] = {1, 3, 4.5f};
	oc_assert_close(o.out[0].data, want, 3, 1e-6);
	oc_free(&o);
}

/* LpPool with p = 3 and GlobalLpPool with the default p = 2. */
static void test_lppool(void **state)
{
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(11, "LpPool", "x", F3, "y", F3, &nd);
	mb_attr_ints(nd, "kernel_shape", 1, (int64_t[]){2});
	mb_attr_ints(nd, "strides", 1, (int64_t[]){2});
	mb_attr_int(nd, "p", 3);
	assert_int_equal(oc_load(mb, &o), 0);
	float x[4] = {1, -2, 3, 4};
	struct rt_tensor in = oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 1, 4}, x);
	assert_int_equal(oc_run(&o, &in), 0);
	oc_assert_shape(&o.out[0], 3, (int64_t[]){1, 1, 2});
	float want[2] = {cbrtf(9), cbrtf(91)};
	oc_assert_close(o.out[0].data, want, 2, 1e-6);
	oc_free(&o);
	assert_int_equal(oc_load(oc_model(2, "GlobalLpPool", "x", F3, "y", F3, &nd), &o), 0);
	assert_int_equal(oc_run(&o, &in), 0);
	oc_assert_shape(&o.out[0], 3, (int64_t[]){1, 1, 1});
	float w2 = sqrtf(30);
	oc_assert_close(o.out[0].data, &w2, 1, 1e-6);
	oc_free(&o);
}

static void test_pool_bad_attributes(void **state)
{
	struct oc_case o;
	struct mb_node *nd;
	/* no kernel_shape */
	assert_int_equal(oc_load(oc_model(12, "MaxPool", "x", F3, "y", F3, &nd), &o),
	                 STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "kernel_shape");
	struct mb_model *mb = oc_model(12, "MaxPool", "x", F3, "y", F3, &nd);
	mb_attr_ints(nd, "kernel_shape", 2, (int64_t[]){2, 0});
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "kernel_shape[1]");
	mb = oc_model(12, "AveragePool", "x", F3, "y", F3, &nd);
	mb_attr_ints(nd, "kernel_shape", 1, (int64_t[]){2});
	mb_attr_int(nd, "ceil_mode", 7);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "ceil_mode");
	/* kernel_shape of rank 2 on a 1-D input: fails the run */
	mb = oc_model(12, "MaxPool", "x", F3, "y", F3, &nd);
	mb_attr_ints(nd, "kernel_shape", 2, (int64_t[]){2, 2});
	assert_int_equal(oc_load(mb, &o), 0);
	float x[4] = {0};
	struct rt_tensor in = oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 1, 4}, x);
	assert_int_equal(oc_run(&o, &in), STRATA_RUNTIME);
	oc_assert_msg(&o, "kernel_shape");
	oc_free(&o);
}

static void test_maxunpool_bad_index(void **state)
{
	static const int FI[] = {BASE_DT_FLOAT, BASE_DT_INT64};
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(11, "MaxUnpool", "x,i", FI, "y", F3, &nd);
	mb_attr_ints(nd, "kernel_shape", 2, (int64_t[]){2, 2});
	mb_attr_ints(nd, "strides", 2, (int64_t[]){2, 2});
	assert_int_equal(oc_load(mb, &o), 0);
	float x[2] = {1, 2};
	int64_t idx[2] = {3, 8}; /* the output is 1 x 1 x 2 x 4: 8 is one past */
	struct rt_tensor in[2] = {
		oc_tensor(BASE_DT_FLOAT, 4, (int64_t[]){1, 1, 1, 2}, x),
		oc_tensor(BASE_DT_INT64, 4, (int64_t[]){1, 1, 1, 2}, idx),
	};
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "out of range");
	idx[1] = -1;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	idx[1] = 4;
	assert_int_equal(oc_run(&o, in), 0);
	float want[8] = {0, 0, 0, 1, 2, 0, 0, 0};
	oc_assert_close(o.out[0].data, want, 8, 0);
	oc_free(&o);
}

/* ---- normalization and depth/space ---------------------------------------------------------- */

static void test_nn_bad_inputs(void **state)
{
	struct oc_case o;
	struct mb_node *nd;
	/* BatchNormalization with a 3-cell scale on 2 channels */
	assert_int_equal(
	        oc_load(oc_model(15, "BatchNormalization", "x,s,b,m,v", F3, "y", F3, &nd), &o), 0);
	float x[4] = {1, 2, 3, 4}, p3[3] = {1, 1, 1};
	struct rt_tensor in[5] = {
		oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 2}, x),
		oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){3}, p3),
		oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){2}, p3),
		oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){2}, p3),
		oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){2}, p3),
	};
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "one per channel");
	oc_free(&o);
	/* LRN without size */
	assert_int_equal(oc_load(oc_model(13, "LRN", "x", F3, "y", F3, &nd), &o),
	                 STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "size");
	/* MeanVarianceNormalization over an axis the input lacks */
	struct mb_model *mb = oc_model(13, "MeanVarianceNormalization", "x", F3, "y", F3, &nd);
	mb_attr_ints(nd, "axes", 1, (int64_t[]){5});
	assert_int_equal(oc_load(mb, &o), 0);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "axis 5");
	oc_free(&o);
	/* DepthToSpace: blocksize 0 at load, channels not divisible at run */
	mb = oc_model(13, "DepthToSpace", "x", F3, "y", F3, &nd);
	mb_attr_int(nd, "blocksize", 0);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "blocksize");
	mb = oc_model(13, "DepthToSpace", "x", F3, "y", F3, &nd);
	mb_attr_int(nd, "blocksize", 2);
	mb_attr_string(nd, "mode", "XYZ");
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "mode");
	mb = oc_model(13, "SpaceToDepth", "x", F3, "y", F3, &nd);
	mb_attr_int(nd, "blocksize", 3);
	assert_int_equal(oc_load(mb, &o), 0);
	in[0] = oc_tensor(BASE_DT_FLOAT, 4, (int64_t[]){1, 1, 2, 2}, x);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "divide");
	oc_free(&o);
}

/* DepthToSpace CRD then SpaceToDepth (which is DCR's inverse) on an
 * independent definition: y[c][h][w] = x[c*4 + (h%2)*2 + w%2][h/2][w/2]. */
static void test_depthtospace_crd(void **state)
{
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(13, "DepthToSpace", "x", F3, "y", F3, &nd);
	mb_attr_int(nd, "blocksize", 2);
	mb_attr_string(nd, "mode", "CRD");
	assert_int_equal(oc_load(mb, &o), 0);
	float x[8 * 2 * 3];
	for (int i = 0; i < 48; i++)
		x[i] = (float)i;
	struct rt_tensor in = oc_tensor(BASE_DT_FLOAT, 4, (int64_t[]){1, 8, 2, 3}, x);
	assert_int_equal(oc_run(&o, &in), 0);
	oc_assert_shape(&o.out[0], 4, (int64_t[]){1, 2, 4, 6});
	float want[48];
	for (int c = 0; c < 2; c++)
		for (int h = 0; h < 4; h++)
			for (int w = 0; w < 6; w++)
				want[(c * 4 + h) * 6 + w] = x[((c * 4 + (h % 2) * 2 + w % 2) * 2 + h / 2) * 3 + w / 2];
	oc_assert_close(o.out[0].data, want, 48, 0);
	oc_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conv_groups_dilations),
		cmocka_unit_test(test_convtranspose_naive),
		cmocka_unit_test(test_conv_bad_attributes),
		cmocka_unit_test(test_conv_bad_shapes),
		cmocka_unit_test(test_qlinearconv_rounding),
		cmocka_unit_test(test_convinteger_zero_point),
		cmocka_unit_test(test_maxpool_indices_col_major),
		cmocka_unit_test(test_averagepool_ceil_include_pad),
		cmocka_unit_test(test_lppool),
		cmocka_unit_test(test_pool_bad_attributes),
		cmocka_unit_test(test_maxunpool_bad_index),
		cmocka_unit_test(test_nn_bad_inputs),
		cmocka_unit_test(test_depthtospace_crd),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
