/*
 * test_ops_index.c: unit tests of the indexing and ordering kernels in
 * runtime/ops/index.c (GatherElements, GatherND, ScatterElements,
 * ScatterND, Compress, ReverseSequence, Pad, Trilu, OneHot, EyeLike) and
 * runtime/ops/misc.c (TopK, Unique, CumSum, Det, Dropout,
 * NonMaxSuppression).
 *
 * The ONNX backend suite covers the ordinary cases; these tests cover what
 * it does not: hostile indices, shapes and attributes (each must fail with
 * the right code and a message naming the problem, never crash), and a few
 * values worked out by hand here (wrap padding, ScatterND accumulation,
 * TopK ties, unsorted Unique, a 3x3 determinant, the Dropout mask).
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

static const int F[] = {BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_FLOAT};
static const int FI[] = {BASE_DT_FLOAT, BASE_DT_INT64, BASE_DT_FLOAT, BASE_DT_INT64};
static const int I64[] = {BASE_DT_INT64, BASE_DT_INT64, BASE_DT_INT64, BASE_DT_INT64};

/* ---- index.c ------------------------------------------------------------------------ */

static void test_gather_elements_bad_index(void **state)
{
	(void)state;
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(oc_model(13, "GatherElements", "x,i", FI, "y", F, &nd), &o), 0);
	float xv[4] = {1, 2, 3, 4};
	int64_t iv[2] = {1, -2};
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 2}, xv),
	                          oc_tensor(BASE_DT_INT64, 2, (int64_t[]){1, 2}, iv)};
	assert_int_equal(oc_run(&o, in), 0);
	float want[2] = {3, 2}; /* rows 1 and 0 (-2 counts from the end) */
	assert_memory_equal(o.out[0].data, want, sizeof want);
	iv[1] = 2;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "out of range");
	iv[1] = INT64_MIN;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	/* indices of the wrong rank, or wider than data off the axis */
	in[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, iv);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "rank");
	int64_t wide[3] = {0, 0, 0};
	in[1] = oc_tensor(BASE_DT_INT64, 2, (int64_t[]){1, 3}, wide);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_free(&o);
}

static void test_gather_nd_hostile(void **state)
{
	(void)state;
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(13, "GatherND", "x,i", FI, "y", F, &nd);
	mb_attr_int(nd, "batch_dims", 1);
	assert_int_equal(oc_load(mb, &o), 0);
	float xv[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	int64_t iv[2] = {1, 0};
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, 2, 2}, xv),
	                          oc_tensor(BASE_DT_INT64, 2, (int64_t[]){2, 1}, iv)};
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 2, (int64_t[]){2, 2});
	float want[4] = {2, 3, 4, 5};
	assert_memory_equal(o.out[0].data, want, sizeof want);
	iv[0] = 7;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "out of range");
	/* batch dims that differ, and a last dimension longer than data allows */
	iv[0] = 0;
	in[1] = oc_tensor(BASE_DT_INT64, 2, (int64_t[]){1, 2}, iv);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "batch dimension");
	int64_t three[6] = {0};
	in[1] = oc_tensor(BASE_DT_INT64, 2, (int64_t[]){2, 3}, three);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "last dimension");
	oc_free(&o);

	mb = oc_model(13, "GatherND", "x,i", FI, "y", F, &nd);
	mb_attr_int(nd, "batch_dims", -1);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "batch_dims");
}

static void test_scatter_attributes(void **state)
{
	(void)state;
	const int dt[] = {BASE_DT_FLOAT, BASE_DT_INT64, BASE_DT_FLOAT};
	const int st[] = {BASE_DT_STRING, BASE_DT_INT64, BASE_DT_STRING};
	const int sto[] = {BASE_DT_STRING};
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(16, "ScatterElements", "x,i,u", dt, "y", F, &nd);
	mb_attr_string(nd, "reduction", "average");
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "average");
	mb = oc_model(16, "ScatterND", "x,i,u", dt, "y", F, &nd);
	mb_attr_string(nd, "reduction", "max"); /* max arrives at opset 18 */
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "opset 16");
	mb = oc_model(16, "ScatterElements", "x,i,u", st, "y", sto, &nd);
	mb_attr_string(nd, "reduction", "add");
	assert_int_equal(oc_load(mb, &o), STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "string");
}

static void test_scatter_nd_accumulates(void **state)
{
	(void)state;
	const int dt[] = {BASE_DT_INT64, BASE_DT_INT64, BASE_DT_INT64};
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(18, "ScatterND", "x,i,u", dt, "y", I64, &nd);
	mb_attr_string(nd, "reduction", "add");
	assert_int_equal(oc_load(mb, &o), 0);
	int64_t xv[4] = {1, 2, 3, INT64_MAX};
	int64_t iv[3] = {3, 0, -1}; /* index -1 is cell 3 again */
	int64_t uv[3] = {1, 10, 100};
	struct rt_tensor in[3] = {oc_tensor(BASE_DT_INT64, 1, (int64_t[]){4}, xv),
	                          oc_tensor(BASE_DT_INT64, 2, (int64_t[]){3, 1}, iv),
	                          oc_tensor(BASE_DT_INT64, 1, (int64_t[]){3}, uv)};
	assert_int_equal(oc_run(&o, in), 0);
	/* integer sums wrap instead of overflowing */
	int64_t want[4] = {11, 2, 3, (int64_t)((uint64_t)INT64_MAX + 101u)};
	assert_memory_equal(o.out[0].data, want, sizeof want);
	iv[1] = 4;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	/* updates of the wrong shape */
	iv[1] = 0;
	in[2] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, uv);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "updates");
	oc_free(&o);
}

static void test_compress_and_reverse(void **state)
{
	(void)state;
	const int fb[] = {BASE_DT_FLOAT, BASE_DT_BOOL};
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(11, "Compress", "x,c", fb, "y", F, &nd);
	mb_attr_int(nd, "axis", 0);
	assert_int_equal(oc_load(mb, &o), 0);
	float xv[2] = {5, 6};
	uint8_t cv[3] = {0, 1, 1};
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){2}, xv),
	                          oc_tensor(BASE_DT_BOOL, 1, (int64_t[]){3}, cv)};
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME); /* selects entry 2 of 2 */
	oc_assert_msg(&o, "condition");
	cv[2] = 0;
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 1, (int64_t[]){1});
	assert_true(((float *)o.out[0].data)[0] == 6);
	oc_free(&o);

	mb = oc_model(10, "ReverseSequence", "x,l", FI, "y", F, &nd);
	mb_attr_int(nd, "batch_axis", 0);
	mb_attr_int(nd, "time_axis", 0);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "time_axis");

	mb = oc_model(10, "ReverseSequence", "x,l", FI, "y", F, &nd);
	assert_int_equal(oc_load(mb, &o), 0);
	float sv[4] = {1, 2, 3, 4}; /* [time 2, batch 2] */
	int64_t lv[2] = {2, 3};
	struct rt_tensor rin[2] = {oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 2}, sv),
	                           oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, lv)};
	assert_int_equal(oc_run(&o, rin), STRATA_RUNTIME);
	oc_assert_msg(&o, "sequence_lens");
	lv[1] = 1;
	assert_int_equal(oc_run(&o, rin), 0);
	float want[4] = {3, 2, 1, 4};
	assert_memory_equal(o.out[0].data, want, sizeof want);
	oc_free(&o);
}

static void test_pad_modes(void **state)
{
	(void)state;
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(19, "Pad", "x,p", FI, "y", F, &nd);
	mb_attr_string(nd, "mode", "wrap");
	assert_int_equal(oc_load(mb, &o), 0);
	float xv[3] = {1, 2, 3};
	int64_t pv[2] = {4, 2};
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){3}, xv),
	                          oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, pv)};
	assert_int_equal(oc_run(&o, in), 0);
	/* periodic continuation: position o reads x[(o - 4) mod 3] */
	float want[9] = {3, 1, 2, 3, 1, 2, 3, 1, 2};
	oc_assert_shape(&o.out[0], 1, (int64_t[]){9});
	assert_memory_equal(o.out[0].data, want, sizeof want);
	pv[0] = -6; /* crops past the start */
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "negative");
	pv[0] = INT64_MAX;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	in[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){1}, pv);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "pads has 1");
	oc_free(&o);

	mb = oc_model(11, "Pad", "x,p", FI, "y", F, &nd);
	mb_attr_string(nd, "mode", "mirror");
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "mirror");

	/* reflect with pads longer than the axis keeps reflecting */
	mb = oc_model(11, "Pad", "x,p", FI, "y", F, &nd);
	mb_attr_string(nd, "mode", "reflect");
	assert_int_equal(oc_load(mb, &o), 0);
	pv[0] = 3;
	pv[1] = 0;
	in[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, pv);
	assert_int_equal(oc_run(&o, in), 0);
	float rwant[6] = {2, 3, 2, 1, 2, 3};
	assert_memory_equal(o.out[0].data, rwant, sizeof rwant);
	oc_free(&o);
}

static void test_trilu_onehot_eyelike_extremes(void **state)
{
	(void)state;
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(oc_model(14, "Trilu", "x,k", FI, "y", F, &nd), &o), 0);
	float xv[4] = {1, 2, 3, 4};
	int64_t kv = INT64_MIN;
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 2}, xv),
	                          oc_tensor(BASE_DT_INT64, 0, NULL, &kv)};
	assert_int_equal(oc_run(&o, in), 0);
	assert_memory_equal(o.out[0].data, xv, sizeof xv); /* upper, k = -inf: all kept */
	kv = INT64_MAX;
	assert_int_equal(oc_run(&o, in), 0);
	float zero[4] = {0};
	assert_memory_equal(o.out[0].data, zero, sizeof zero);
	in[0] = oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){4}, xv);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_free(&o);

	const int oh[] = {BASE_DT_INT64, BASE_DT_FLOAT, BASE_DT_FLOAT};
	struct mb_model *mb = oc_model(11, "OneHot", "i,d,v", oh, "y", F, &nd);
	mb_attr_int(nd, "axis", 5);
	assert_int_equal(oc_load(mb, &o), 0);
	int64_t iv[2] = {0, 1};
	float depth = 3, vals[2] = {0, 1};
	struct rt_tensor oin[3] = {oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, iv),
	                           oc_tensor(BASE_DT_FLOAT, 0, NULL, &depth),
	                           oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){2}, vals)};
	assert_int_equal(oc_run(&o, oin), STRATA_RUNTIME);
	oc_assert_msg(&o, "axis 5");
	oc_free(&o);
	mb = oc_model(11, "OneHot", "i,d,v", oh, "y", F, &nd);
	assert_int_equal(oc_load(mb, &o), 0);
	depth = 0;
	assert_int_equal(oc_run(&o, oin), STRATA_RUNTIME);
	oc_assert_msg(&o, "depth");
	depth = NAN;
	assert_int_equal(oc_run(&o, oin), STRATA_RUNTIME);
	depth = 1e30f;
	assert_int_equal(oc_run(&o, oin), STRATA_RUNTIME);
	oc_free(&o);

	mb = oc_model(9, "EyeLike", "x", F, "y", F, &nd);
	mb_attr_int(nd, "dtype", BASE_DT_STRING);
	assert_int_equal(oc_load(mb, &o), STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "EyeLike");
	mb = oc_model(9, "EyeLike", "x", F, "y", F, &nd);
	mb_attr_int(nd, "k", INT64_MIN);
	assert_int_equal(oc_load(mb, &o), 0);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME); /* rank 1 */
	in[0] = oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 2}, xv);
	assert_int_equal(oc_run(&o, in), 0);
	assert_memory_equal(o.out[0].data, zero, sizeof zero);
	oc_free(&o);
}

/* ---- misc.c -------------------------------------------------------------------------- */

static void test_topk_ties_and_range(void **state)
{
	(void)state;
	const int ii[] = {BASE_DT_INT64, BASE_DT_INT64};
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(oc_model(11, "TopK", "x,k", ii, "v,i", I64, &nd), &o), 0);
	/* values beyond 2^53 must not be rounded together */
	int64_t big = (int64_t)1 << 60;
	int64_t xv[5] = {big + 1, 7, big, 7, big + 1};
	int64_t kv = 3;
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_INT64, 1, (int64_t[]){5}, xv),
	                          oc_tensor(BASE_DT_INT64, 1, (int64_t[]){1}, &kv)};
	assert_int_equal(oc_run(&o, in), 0);
	int64_t wv[3] = {big + 1, big + 1, big}, wi[3] = {0, 4, 2};
	assert_memory_equal(o.out[0].data, wv, sizeof wv);
	assert_memory_equal(o.out[1].data, wi, sizeof wi);
	kv = 6;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "k = 6");
	kv = -1;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_free(&o);

	struct mb_model *mb = oc_model(11, "TopK", "x,k", ii, "v,i", I64, &nd);
	mb_attr_int(nd, "largest", 0);
	assert_int_equal(oc_load(mb, &o), 0);
	kv = 2;
	assert_int_equal(oc_run(&o, in), 0);
	int64_t sv[2] = {7, 7}, si[2] = {1, 3};
	assert_memory_equal(o.out[0].data, sv, sizeof sv);
	assert_memory_equal(o.out[1].data, si, sizeof si);
	oc_free(&o);
}

static void test_unique_strings_unsorted(void **state)
{
	(void)state;
	const int s[] = {BASE_DT_STRING};
	const int outs[] = {BASE_DT_STRING, BASE_DT_INT64, BASE_DT_INT64, BASE_DT_INT64};
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(11, "Unique", "x", s, "y,i,inv,c", outs, &nd);
	mb_attr_int(nd, "sorted", 0);
	assert_int_equal(oc_load(mb, &o), 0);
	const char *xv[5] = {"b", "a", "b", "c", "a"};
	struct rt_tensor in = oc_tensor(BASE_DT_STRING, 1, (int64_t[]){5}, xv);
	assert_int_equal(oc_run(&o, &in), 0);
	oc_assert_shape(&o.out[0], 1, (int64_t[]){3});
	const char *const *y = o.out[0].data;
	assert_string_equal(y[0], "b");
	assert_string_equal(y[1], "a");
	assert_string_equal(y[2], "c");
	int64_t wi[3] = {0, 1, 3}, winv[5] = {0, 1, 0, 2, 1}, wc[3] = {2, 2, 1};
	assert_memory_equal(o.out[1].data, wi, sizeof wi);
	assert_memory_equal(o.out[2].data, winv, sizeof winv);
	assert_memory_equal(o.out[3].data, wc, sizeof wc);
	oc_free(&o);

	mb = oc_model(11, "Unique", "x", s, "y,i,inv,c", outs, &nd);
	mb_attr_int(nd, "axis", 1);
	assert_int_equal(oc_load(mb, &o), 0);
	assert_int_equal(oc_run(&o, &in), STRATA_RUNTIME);
	oc_assert_msg(&o, "axis 1");
	oc_free(&o);
}

static void test_cumsum_det(void **state)
{
	(void)state;
	struct oc_case o;
	struct mb_node *nd;
	assert_int_equal(oc_load(oc_model(14, "CumSum", "x,a", FI, "y", F, &nd), &o), 0);
	float xv[9] = {2, 0, 1, 1, 3, 0, 0, 1, 4};
	int64_t av = 2;
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){3, 3}, xv),
	                          oc_tensor(BASE_DT_INT64, 0, NULL, &av)};
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "axis 2");
	in[1] = oc_tensor(BASE_DT_INT64, 1, (int64_t[]){2}, (int64_t[]){0, 1});
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_free(&o);

	assert_int_equal(oc_load(oc_model(11, "Det", "x", F, "y", F, &nd), &o), 0);
	in[0] = oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){3, 3}, xv);
	assert_int_equal(oc_run(&o, in), 0);
	/* 2(12 - 0) - 0 + 1(1 - 0) = 25 by cofactors along the first row */
	oc_assert_shape(&o.out[0], 0, NULL);
	assert_true(fabsf(((float *)o.out[0].data)[0] - 25.0f) < 1e-4f);
	in[0] = oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){3, 2}, xv);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_free(&o);
}

static void test_dropout_training(void **state)
{
	(void)state;
	const int in_dt[] = {BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_BOOL};
	const int out_dt[] = {BASE_DT_FLOAT, BASE_DT_BOOL};
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(13, "Dropout", "x,r,t", in_dt, "y,m", out_dt, &nd);
	mb_attr_int(nd, "seed", 7);
	assert_int_equal(oc_load(mb, &o), 0);
	float xv[64], ratio = 0.25f;
	for (int i = 0; i < 64; i++)
		xv[i] = (float)(i + 1);
	uint8_t t = 1;
	struct rt_tensor in[3] = {oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){64}, xv),
	                          oc_tensor(BASE_DT_FLOAT, 0, NULL, &ratio),
	                          oc_tensor(BASE_DT_BOOL, 0, NULL, &t)};
	assert_int_equal(oc_run(&o, in), 0);
	float first[64];
	memcpy(first, o.out[0].data, sizeof first);
	const uint8_t *m = o.out[1].data;
	int kept = 0;
	for (int i = 0; i < 64; i++) {
		/* kept cells are scaled by 1 / (1 - ratio), dropped ones are 0 */
		float want = m[i] ? xv[i] / 0.75f : 0.0f;
		assert_true(fabsf(first[i] - want) < 1e-4f);
		kept += m[i];
	}
	assert_true(kept > 16 && kept < 64);
	/* the same seed gives the same mask on the next run */
	assert_int_equal(oc_run(&o, in), 0);
	assert_memory_equal(o.out[0].data, first, sizeof first);
	ratio = 1.5f;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "ratio");
	t = 0; /* inference ignores the ratio: identity and an all-true mask */
	assert_int_equal(oc_run(&o, in), 0);
	assert_memory_equal(o.out[0].data, xv, sizeof xv);
	for (int i = 0; i < 64; i++)
		assert_int_equal(((uint8_t *)o.out[1].data)[i], 1);
	oc_free(&o);
}

static void test_nms_hostile(void **state)
{
	(void)state;
	const int dt[] = {BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_INT64, BASE_DT_FLOAT};
	const int out[] = {BASE_DT_INT64};
	struct oc_case o;
	struct mb_node *nd;
	struct mb_model *mb = oc_model(11, "NonMaxSuppression", "b,s", dt, "y", out, &nd);
	mb_attr_int(nd, "center_point_box", 2);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "center_point_box");

	mb = oc_model(11, "NonMaxSuppression", "b,s,m,t", dt, "y", out, &nd);
	assert_int_equal(oc_load(mb, &o), 0);
	/* two overlapping boxes (IoU 0.6) and one apart, one class */
	float bv[12] = {0, 0, 1, 1, 0, 0, 1, 0.6f, 5, 5, 6, 6};
	float sv[3] = {0.5f, 0.9f, 0.1f};
	int64_t mv = INT64_MAX;
	float tv = 0.5f;
	struct rt_tensor in[4] = {oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 3, 4}, bv),
	                          oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 1, 3}, sv),
	                          oc_tensor(BASE_DT_INT64, 1, (int64_t[]){1}, &mv),
	                          oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){1}, &tv)};
	assert_int_equal(oc_run(&o, in), 0);
	int64_t want[6] = {0, 0, 1, 0, 0, 2};
	oc_assert_shape(&o.out[0], 2, (int64_t[]){2, 3});
	assert_memory_equal(o.out[0].data, want, sizeof want);
	tv = 0.6f; /* IoU must be strictly greater to suppress */
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 2, (int64_t[]){3, 3});
	/* scores whose N differs from the boxes' */
	in[1] = oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 1, 2}, sv);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "boxes");
	oc_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gather_elements_bad_index),
		cmocka_unit_test(test_gather_nd_hostile),
		cmocka_unit_test(test_scatter_attributes),
		cmocka_unit_test(test_scatter_nd_accumulates),
		cmocka_unit_test(test_compress_and_reverse),
		cmocka_unit_test(test_pad_modes),
		cmocka_unit_test(test_trilu_onehot_eyelike_extremes),
		cmocka_unit_test(test_topk_ties_and_range),
		cmocka_unit_test(test_unique_strings_unsorted),
		cmocka_unit_test(test_cumsum_det),
		cmocka_unit_test(test_dropout_training),
		cmocka_unit_test(test_nms_hostile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
