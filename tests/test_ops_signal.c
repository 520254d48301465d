/*
 * test_ops_signal.c: unit tests of the resampling and signal kernels
 * (runtime/ops/resize.c and runtime/ops/signal.c) for what the ONNX backend
 * suite does not show: hostile scales, sizes, boxes, lengths and attributes
 * must fail with the right code and a telling message (at load for
 * attributes, at run for tensor values), and a few values computed here
 * independently: an antialiased linear downscale, aspect-ratio-kept sizes,
 * Resize on listed axes, an identity GridSample, a DFT against a direct
 * double sum (radix-2 and odd lengths, padding, truncation, onesided), an
 * inverse round trip, and a periodic Hann window.
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

/* oc_model with the one output y, of type out_dt. */
static struct mb_model *one_node(int opset, const char *op, const char *ins, const int *in_dt,
                                 int out_dt, struct mb_node **node)
{
	return oc_model(opset, op, ins, in_dt, "y", &out_dt, node);
}

static void assert_near(const float *got, const double *want, int64_t n, double tol)
{
	for (int64_t i = 0; i < n; i++) {
		if (fabs((double)got[i] - want[i]) > tol) {
			print_error("cell %lld: got %.9g, want %.9g\n", (long long)i, got[i], want[i]);
			fail();
		}
	}
}

static const int FFF[] = {BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_INT64};

/* A Resize (opset 13) of X by scales; returns the run status. */
static int resize_scales(struct oc_case *o, const char *mode, const float *x, int rank,
                         const int64_t *dims, const float *scales)
{
	struct mb_node *nd;
	struct mb_model *mb = one_node(13, "Resize", "x,,s", FFF, BASE_DT_FLOAT, &nd);
	mb_attr_string(nd, "mode", mode);
	assert_int_equal(oc_load(mb, o), 0);
	int64_t sd[1] = {rank};
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, rank, dims, x),
	                          oc_tensor(BASE_DT_FLOAT, 1, sd, scales)};
	return oc_run(o, in);
}

/* ---- Resize ------------------------------------------------------------------------ */

static void test_resize_bad_scales(void **state)
{
	(void)state;
	float x[4] = {1, 2, 3, 4};
	int64_t d[2] = {2, 2};
	const float bad[][2] = {{1, 0}, {-2, 1}, {NAN, 1}, {INFINITY, 1}};
	for (int i = 0; i < 4; i++) {
		struct oc_case o;
		assert_int_equal(resize_scales(&o, "linear", x, 2, d, bad[i]), STRATA_RUNTIME);
		oc_assert_msg(&o, "not positive");
		oc_free(&o);
	}
	/* a scale that asks for more cells than any machine holds */
	struct oc_case o;
	float huge[2] = {1e30f, 1e30f};
	assert_int_equal(resize_scales(&o, "nearest", x, 2, d, huge), STRATA_RUNTIME);
	oc_assert_msg(&o, "too large");
	oc_free(&o);
	/* scales of the wrong length */
	struct mb_node *nd;
	assert_int_equal(oc_load(one_node(13, "Resize", "x,,s", FFF, BASE_DT_FLOAT, &nd), &o), 0);
	int64_t sd[1] = {3};
	float s3[3] = {1, 1, 1};
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 2, d, x),
	                          oc_tensor(BASE_DT_FLOAT, 1, sd, s3)};
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "scales must have 2 entries");
	oc_free(&o);
}

static void test_resize_bad_sizes_and_roi(void **state)
{
	(void)state;
	float x[4] = {1, 2, 3, 4};
	int64_t d[2] = {2, 2}, sd[1] = {2};
	struct oc_case o;
	struct mb_node *nd;
	const int types[] = {BASE_DT_FLOAT, BASE_DT_INT64}; /* omitted inputs take none */
	assert_int_equal(oc_load(one_node(13, "Resize", "x,,,z", types, BASE_DT_FLOAT, &nd), &o), 0);
	int64_t neg[2] = {-1, 3};
	/* the graph inputs are x and z */
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 2, d, x),
	                          oc_tensor(BASE_DT_INT64, 1, sd, neg)};
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "out of range");
	oc_free(&o);

	/* tf_crop_and_resize without a roi */
	struct mb_model *mb = one_node(13, "Resize", "x,,,z", types, BASE_DT_FLOAT, &nd);
	mb_attr_string(nd, "coordinate_transformation_mode", "tf_crop_and_resize");
	mb_attr_string(nd, "mode", "linear");
	assert_int_equal(oc_load(mb, &o), 0);
	int64_t ok[2] = {3, 3};
	in[1] = oc_tensor(BASE_DT_INT64, 1, sd, ok);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "needs roi");
	oc_free(&o);
}

static void test_resize_bad_attributes(void **state)
{
	(void)state;
	static const char *const attr[][2] = {
		{"mode", "bilinear"},
		{"coordinate_transformation_mode", "sideways"},
		{"nearest_mode", "round_half_even"},
	};
	for (int i = 0; i < 3; i++) {
		struct oc_case o;
		struct mb_node *nd;
		struct mb_model *mb = one_node(13, "Resize", "x,,s", FFF, BASE_DT_FLOAT, &nd);
		mb_attr_string(nd, attr[i][0], attr[i][1]);
		assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
		oc_assert_msg(&o, attr[i][1]);
		oc_free(&o);
	}
	/* cubic interpolation of integers has no kernel */
	struct oc_case o;
	struct mb_node *nd;
	const int it[] = {BASE_DT_INT8, BASE_DT_FLOAT};
	struct mb_model *mb = one_node(13, "Resize", "x,,s", it, BASE_DT_INT8, &nd);
	mb_attr_string(nd, "mode", "cubic");
	assert_int_equal(oc_load(mb, &o), STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "int8");
	oc_free(&o);
	/* antialias with nearest, opset 18 */
	mb = one_node(18, "Resize", "x,,s", FFF, BASE_DT_FLOAT, &nd);
	mb_attr_int(nd, "antialias", 1);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "antialias");
	oc_free(&o);
}

/* Antialiased linear downscale by 1/2 of a line of 8 (opset 18): the
 * triangle filter is stretched to a support of 2 input pixels per side. */
static void test_resize_antialias_linear(void **state)
{
	(void)state;
	float x[8];
	for (int i = 0; i < 8; i++)
		x[i] = (float)(i * i);
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = one_node(18, "Resize", "x,,s", FFF, BASE_DT_FLOAT, &nd);
	mb_attr_string(nd, "mode", "linear");
	mb_attr_int(nd, "antialias", 1);
	assert_int_equal(oc_load(mb, &o), 0);
	int64_t d[1] = {8}, sd[1] = {1};
	float s[1] = {0.5f};
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 1, d, x),
	                          oc_tensor(BASE_DT_FLOAT, 1, sd, s)};
	assert_int_equal(oc_run(&o, in), 0);
	int64_t od[1] = {4};
	oc_assert_shape(&o.out[0], 1, od);
	/* output j centres on 2j + 0.5 (half_pixel); taps at distance t weigh
	 * max(0, 1 - |t| / 2), renormalized, indices clamped to [0, 7] */
	double want[4];
	for (int j = 0; j < 4; j++) {
		double c = 2 * j + 0.5, sw = 0, acc = 0;
		for (int k = -3; k <= 10; k++) {
			double w = 1 - fabs(k - c) / 2;
			if (w <= 0)
				continue;
			int kk = k < 0 ? 0 : k > 7 ? 7 : k;
			acc += w * x[kk];
			sw += w;
		}
		want[j] = acc / sw;
	}
	assert_near(o.out[0].data, want, 4, 1e-5);
	oc_free(&o);
}

/* keep_aspect_ratio_policy = not_larger with axes: both listed axes take
 * the smaller ratio, the unlisted leading axis is untouched. */
static void test_resize_keep_aspect_axes(void **state)
{
	(void)state;
	float x[2 * 2 * 4];
	for (int i = 0; i < 16; i++)
		x[i] = (float)i;
	struct oc_case o;
	struct mb_node *nd;
	const int types[] = {BASE_DT_FLOAT, BASE_DT_INT64};
	struct mb_model *mb = one_node(18, "Resize", "x,,,z", types, BASE_DT_FLOAT, &nd);
	mb_attr_string(nd, "keep_aspect_ratio_policy", "not_larger");
	mb_attr_ints(nd, "axes", 2, (const int64_t[]){1, 2});
	mb_attr_string(nd, "coordinate_transformation_mode", "asymmetric");
	mb_attr_string(nd, "nearest_mode", "floor");
	assert_int_equal(oc_load(mb, &o), 0);
	int64_t d[3] = {2, 2, 4}, sd[1] = {2};
	int64_t sizes[2] = {4, 4}; /* ratios 2 and 1: not_larger keeps 1 */
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 3, d, x),
	                          oc_tensor(BASE_DT_INT64, 1, sd, sizes)};
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 3, d);
	double want[16];
	for (int i = 0; i < 16; i++)
		want[i] = i;
	assert_near(o.out[0].data, want, 16, 0);
	oc_free(&o);

	/* a repeated axis fails the run */
	mb = one_node(18, "Resize", "x,,,z", types, BASE_DT_FLOAT, &nd);
	mb_attr_ints(nd, "axes", 2, (const int64_t[]){1, -2});
	assert_int_equal(oc_load(mb, &o), 0);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "repeated");
	oc_free(&o);
}

/* ---- GridSample and RoiAlign --------------------------------------------------------- */

static void test_gridsample(void **state)
{
	(void)state;
	/* with align_corners, the grid of pixel centres reproduces the image */
	float x[6] = {1, 2, 3, 4, 5, 6}, g[12];
	int64_t xd[4] = {1, 1, 2, 3}, gd[4] = {1, 2, 3, 2};
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++) {
			g[(i * 3 + j) * 2] = (float)j - 1.0f;
			g[(i * 3 + j) * 2 + 1] = (float)(2 * i) - 1.0f;
		}
	static const char *const modes[] = {"bilinear", "nearest", "bicubic"};
	for (int m = 0; m < 3; m++) {
		struct oc_case o;
		struct mb_node *nd;
		struct mb_model *mb = one_node(16, "GridSample", "x,g", FFF, BASE_DT_FLOAT, &nd);
		mb_attr_int(nd, "align_corners", 1);
		mb_attr_string(nd, "mode", modes[m]);
		assert_int_equal(oc_load(mb, &o), 0);
		struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 4, xd, x),
		                          oc_tensor(BASE_DT_FLOAT, 4, gd, g)};
		assert_int_equal(oc_run(&o, in), 0);
		oc_assert_shape(&o.out[0], 4, xd);
		double want[6] = {1, 2, 3, 4, 5, 6};
		assert_near(o.out[0].data, want, 6, 1e-5);
		/* hostile coordinates: no crash, zeros padding gives 0, NaN stays NaN */
		g[0] = 1e30f;
		g[1] = -1e30f;
		g[2] = NAN;
		assert_int_equal(oc_run(&o, in), 0);
		assert_true(((float *)o.out[0].data)[0] == 0);
		assert_true(isnan(((float *)o.out[0].data)[1]));
		g[0] = -1;
		g[1] = -1;
		g[2] = 0;
		/* a grid that is not [N, H, W, 2] */
		int64_t bad[4] = {1, 2, 2, 3};
		in[1] = oc_tensor(BASE_DT_FLOAT, 4, bad, g);
		assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
		oc_assert_msg(&o, "grid");
		oc_free(&o);
	}
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = one_node(16, "GridSample", "x,g", FFF, BASE_DT_FLOAT, &nd);
	mb_attr_string(nd, "padding_mode", "wrap");
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "wrap");
	oc_free(&o);
}

static void test_roialign_errors(void **state)
{
	(void)state;
	float x[16] = {0}, rois[4] = {0, 0, 3, 3};
	int64_t xd[4] = {1, 1, 4, 4}, rd[2] = {1, 4}, bd[1] = {1}, b[1] = {1};
	const int types[] = {BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_INT64};
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(one_node(16, "RoiAlign", "x,r,b", types, BASE_DT_FLOAT, &nd), &o), 0);
	struct rt_tensor in[3] = {oc_tensor(BASE_DT_FLOAT, 4, xd, x),
	                          oc_tensor(BASE_DT_FLOAT, 2, rd, rois),
	                          oc_tensor(BASE_DT_INT64, 1, bd, b)};
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "batch_indices[0] = 1");
	/* a box so large the adaptive sampling grid would explode */
	b[0] = 0;
	rois[2] = 1e30f;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "too large");
	rois[2] = INFINITY;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "not finite");
	oc_free(&o);

	struct mb_model *mb = one_node(16, "RoiAlign", "x,r,b", types, BASE_DT_FLOAT, &nd);
	mb_attr_int(nd, "output_height", 0);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "output_height 0");
	oc_free(&o);
}

/* ---- DFT --------------------------------------------------------------------------- */

/* Direct double DFT of a complex line x (n entries) padded or cut to L. */
static void ref_dft(const double *xr, const double *xi, int n, int L, int inverse, double *yr,
                    double *yi)
{
	for (int k = 0; k < L; k++) {
		long double sr = 0, si = 0;
		for (int j = 0; j < n && j < L; j++) {
			long double a = (inverse ? 2 : -2) * 3.14159265358979323846264338327950288L *
			                (long double)((long)j * k % L) / L;
			sr += xr[j] * cosl(a) - xi[j] * sinl(a);
			si += xr[j] * sinl(a) + xi[j] * cosl(a);
		}
		yr[k] = (double)(inverse ? sr / L : sr);
		yi[k] = (double)(inverse ? si / L : si);
	}
}

/* DFT over axis 1 of a [2, n, 2] complex input, length L (0: n). */
static void check_dft(int n, int L, int onesided, int inverse)
{
	float x[2 * 64 * 2];
	double xr[64], xi[64], yr[128], yi[128];
	for (int i = 0; i < 2 * n * 2; i++)
		x[i] = (float)sin(0.7 * i + 0.3) + (float)(i % 3);
	struct oc_case o;
	struct mb_node *nd;
	const int types[] = {BASE_DT_FLOAT, BASE_DT_INT64};
	struct mb_model *mb = one_node(17, "DFT", L ? "x,l" : "x", types, BASE_DT_FLOAT, &nd);
	mb_attr_int(nd, "onesided", onesided);
	mb_attr_int(nd, "inverse", inverse);
	assert_int_equal(oc_load(mb, &o), 0);
	int64_t d[3] = {2, n, 2}, lv[1] = {L};
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 3, d, x),
	                          oc_tensor(BASE_DT_INT64, 0, NULL, lv)};
	assert_int_equal(oc_run(&o, in), 0);
	int len = L ? L : n, nout = onesided ? len / 2 + 1 : len;
	int64_t od[3] = {2, nout, 2};
	oc_assert_shape(&o.out[0], 3, od);
	for (int b = 0; b < 2; b++) {
		for (int j = 0; j < n; j++) {
			xr[j] = x[(b * n + j) * 2];
			xi[j] = x[(b * n + j) * 2 + 1];
		}
		ref_dft(xr, xi, n, len, inverse, yr, yi);
		double want[256];
		for (int k = 0; k < nout; k++) {
			want[2 * k] = yr[k];
			want[2 * k + 1] = yi[k];
		}
		assert_near((const float *)o.out[0].data + b * nout * 2, want, 2 * nout, 1e-4);
	}
	oc_free(&o);
}

static void test_dft_values(void **state)
{
	(void)state;
	check_dft(5, 0, 0, 0);   /* odd length, direct sum */
	check_dft(16, 0, 0, 0);  /* radix-2 */
	check_dft(16, 0, 0, 1);  /* radix-2 inverse */
	check_dft(7, 0, 0, 1);   /* direct inverse */
	check_dft(6, 8, 0, 0);   /* zero-padded to a power of two */
	check_dft(12, 5, 1, 0);  /* truncated, onesided */
}

static void test_dft_round_trip(void **state)
{
	(void)state;
	/* real input -> spectrum -> inverse: the signal again, imaginary 0 */
	float x[8] = {1, -2, 3.5f, 0, 0.25f, 7, -1, 2};
	struct mb_model *mb = mb_new("t", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "y", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_node(mb, "DFT", "x", "s");
	struct mb_node *nd = mb_node(mb, "DFT", "s", "y");
	mb_attr_int(nd, "inverse", 1);
	struct oc_case o;
	assert_int_equal(oc_load(mb, &o), 0);
	int64_t d[3] = {1, 8, 1};
	struct rt_tensor in[1] = {oc_tensor(BASE_DT_FLOAT, 3, d, x)};
	assert_int_equal(oc_run(&o, in), 0);
	double want[16];
	for (int i = 0; i < 8; i++) {
		want[2 * i] = x[i];
		want[2 * i + 1] = 0;
	}
	assert_near(o.out[0].data, want, 16, 1e-6);
	oc_free(&o);
}

static void test_dft_errors(void **state)
{
	(void)state;
	float x[12] = {0};
	const int types[] = {BASE_DT_FLOAT, BASE_DT_INT64};
	struct oc_case o;
	struct mb_node *nd;
	/* onesided inverse has no kernel */
	struct mb_model *mb = one_node(17, "DFT", "x", types, BASE_DT_FLOAT, &nd);
	mb_attr_int(nd, "onesided", 1);
	mb_attr_int(nd, "inverse", 1);
	assert_int_equal(oc_load(mb, &o), STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "onesided inverse");
	oc_free(&o);
	/* axis on the complex dimension, or past it */
	for (int64_t axis = 2; axis <= 9; axis += 7) {
		mb = one_node(17, "DFT", "x", types, BASE_DT_FLOAT, &nd);
		mb_attr_int(nd, "axis", axis);
		assert_int_equal(oc_load(mb, &o), 0);
		int64_t d[3] = {2, 3, 2};
		struct rt_tensor in[1] = {oc_tensor(BASE_DT_FLOAT, 3, d, x)};
		assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
		oc_assert_msg(&o, "axis");
		oc_free(&o);
	}
	/* a trailing dimension that is neither 1 nor 2; a bad dft_length */
	assert_int_equal(oc_load(one_node(17, "DFT", "x,l", types, BASE_DT_FLOAT, &nd), &o), 0);
	int64_t d3[3] = {1, 4, 3}, d2[3] = {1, 6, 2}, lv[1] = {0};
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 3, d3, x),
	                          oc_tensor(BASE_DT_INT64, 0, NULL, lv)};
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "dimension of 1");
	in[0] = oc_tensor(BASE_DT_FLOAT, 3, d2, x);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "dft_length 0");
	lv[0] = (int64_t)1 << 40;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "out of range");
	oc_free(&o);
}

/* ---- STFT, windows, MelWeightMatrix ---------------------------------------------- */

static void test_stft_errors(void **state)
{
	(void)state;
	float s[16] = {0}, w[4] = {1, 1, 1, 1};
	const int types[] = {BASE_DT_FLOAT, BASE_DT_INT64, BASE_DT_FLOAT, BASE_DT_INT64};
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(one_node(17, "STFT", "s,st,w,fl", types, BASE_DT_FLOAT, &nd), &o), 0);
	int64_t sd[3] = {1, 16, 1}, wd[1] = {4}, step[1] = {0}, fl[1] = {4};
	struct rt_tensor in[4] = {oc_tensor(BASE_DT_FLOAT, 3, sd, s),
	                          oc_tensor(BASE_DT_INT64, 0, NULL, step),
	                          oc_tensor(BASE_DT_FLOAT, 1, wd, w),
	                          oc_tensor(BASE_DT_INT64, 0, NULL, fl)};
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "frame_step 0");
	step[0] = 4;
	fl[0] = 5;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "differs from the window");
	/* a frame longer than the signal */
	int64_t big[1] = {32};
	float wb[32];
	for (int i = 0; i < 32; i++)
		wb[i] = 1;
	fl[0] = 32;
	in[2] = oc_tensor(BASE_DT_FLOAT, 1, big, wb);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "signal length 16");
	/* four frames of a constant window: bin 0 sums the frame */
	for (int i = 0; i < 16; i++)
		s[i] = (float)i;
	fl[0] = 4;
	in[2] = oc_tensor(BASE_DT_FLOAT, 1, wd, w);
	assert_int_equal(oc_run(&o, in), 0);
	int64_t od[4] = {1, 4, 3, 2};
	oc_assert_shape(&o.out[0], 4, od);
	for (int f = 0; f < 4; f++) {
		double want[2] = {4 * (4 * f) + 6, 0};
		assert_near((const float *)o.out[0].data + f * 6, want, 2, 1e-5);
	}
	oc_free(&o);
}

static void test_windows(void **state)
{
	(void)state;
	const int it[] = {BASE_DT_INT64};
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(one_node(17, "HannWindow", "n", it, BASE_DT_FLOAT, &nd), &o), 0);
	int64_t n[1] = {4};
	struct rt_tensor in[1] = {oc_tensor(BASE_DT_INT64, 0, NULL, n)};
	assert_int_equal(oc_run(&o, in), 0);
	double want[4] = {0, 0.5, 1, 0.5};
	assert_near(o.out[0].data, want, 4, 1e-7);
	n[0] = -3;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "size -3");
	n[0] = 0;
	assert_int_equal(oc_run(&o, in), 0);
	assert_int_equal(o.out[0].dims[0], 0);
	oc_free(&o);

	struct mb_model *mb = one_node(17, "BlackmanWindow", "n", it, BASE_DT_INT32, &nd);
	mb_attr_int(nd, "output_datatype", BASE_DT_INT32);
	assert_int_equal(oc_load(mb, &o), STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "output_datatype 6");
	oc_free(&o);
	const int ft[] = {BASE_DT_FLOAT};
	assert_int_equal(oc_load(one_node(17, "HammingWindow", "n", ft, BASE_DT_FLOAT, &nd), &o),
	                 STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "size must be int");
	oc_free(&o);
}

static void test_mel_errors(void **state)
{
	(void)state;
	const int types[] = {BASE_DT_INT64, BASE_DT_INT64, BASE_DT_INT64, BASE_DT_FLOAT,
	                     BASE_DT_FLOAT};
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(one_node(17, "MelWeightMatrix", "m,d,r,lo,hi", types, BASE_DT_FLOAT,
	                               &nd),
	                      &o),
	                 0);
	int64_t m[1] = {4}, d[1] = {16}, r[1] = {8000};
	float lo[1] = {0}, hi[1] = {16000};
	struct rt_tensor in[5] = {oc_tensor(BASE_DT_INT64, 0, NULL, m),
	                          oc_tensor(BASE_DT_INT64, 0, NULL, d),
	                          oc_tensor(BASE_DT_INT64, 0, NULL, r),
	                          oc_tensor(BASE_DT_FLOAT, 0, NULL, lo),
	                          oc_tensor(BASE_DT_FLOAT, 0, NULL, hi)};
	/* an upper edge far past Nyquist maps outside the spectrogram */
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "spectrogram bins");
	hi[0] = NAN;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "lower < upper");
	hi[0] = 4000;
	m[0] = 0;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "num_mel_bins 0");
	/* a valid matrix: every filter peaks at 1 */
	m[0] = 2;
	assert_int_equal(oc_run(&o, in), 0);
	int64_t od[2] = {9, 2};
	oc_assert_shape(&o.out[0], 2, od);
	for (int f = 0; f < 2; f++) {
		float mx = 0;
		for (int k = 0; k < 9; k++)
			mx = fmaxf(mx, ((float *)o.out[0].data)[k * 2 + f]);
		assert_true(mx == 1.0f);
	}
	oc_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resize_bad_scales),
		cmocka_unit_test(test_resize_bad_sizes_and_roi),
		cmocka_unit_test(test_resize_bad_attributes),
		cmocka_unit_test(test_resize_antialias_linear),
		cmocka_unit_test(test_resize_keep_aspect_axes),
		cmocka_unit_test(test_gridsample),
		cmocka_unit_test(test_roialign_errors),
		cmocka_unit_test(test_dft_values),
		cmocka_unit_test(test_dft_round_trip),
		cmocka_unit_test(test_dft_errors),
		cmocka_unit_test(test_stft_errors),
		cmocka_unit_test(test_windows),
		cmocka_unit_test(test_mel_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
