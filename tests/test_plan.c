/*
 * test_plan.c: the executor's memory: static plans per input-shape class,
 * views of shared buffers (Reshape and friends), and what happens when a
 * plan meets a shape it did not record or a run fails.
 *
 * Every model is built here with modelbuild.h.  Speed is not measured:
 * "no allocation" is read from base_alloc_thread_count().
 */
#include <setjmp.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../runtime/runtime_int.h"
#include "modelbuild.h"

static struct rt_model *load(struct mb_model *mb)
{
	void *buf;
	size_t n;
	struct strata_error err;
	assert_int_equal(mb_serialize(mb, &buf, &n), 0);
	mb_free(mb);
	struct rt_model *m = NULL;
	int rc = runtime_model_load_buffer(buf, n, NULL, &m, &err);
	if (rc != 0)
		print_error("load: %s\n", err.msg);
	assert_int_equal(rc, 0);
	free(buf);
	return m;
}

/* x [batch,4] -> Relu -> r -> Reshape [-1] -> flat -> Sigmoid -> s;
 * y = Reshape(s, [batch*4]) + flat, so flat (a view of r) is read after
 * several other buffers came and went.  Outputs: y and r2 (a view of r). */
static struct mb_model *view_model(void)
{
	static const int64_t minus1[1] = { -1 };
	static const int64_t two[2] = { -1, 2 };
	struct mb_model *mb = mb_new("views", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, (const char *[]){ "batch", "" });
	mb_init(mb, "flat_shape", BASE_DT_INT64, 1, (int64_t[]){ 1 }, minus1);
	mb_init(mb, "pair_shape", BASE_DT_INT64, 1, (int64_t[]){ 2 }, two);
	mb_node(mb, "Relu", "x", "r");
	mb_node(mb, "Reshape", "r,flat_shape", "flat");
	mb_node(mb, "Sigmoid", "flat", "s");
	mb_node(mb, "Neg", "s", "t");
	mb_node(mb, "Abs", "t", "u");
	mb_node(mb, "Identity", "u", "u2");
	mb_node(mb, "Add", "u2,flat", "y");
	mb_node(mb, "Reshape", "r,pair_shape", "r2");
	mb_output(mb, "y", BASE_DT_FLOAT, 1, (int64_t[]){ -1 }, NULL);
	mb_output(mb, "r", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, NULL);
	mb_output(mb, "r2", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 2 }, NULL);
	return mb;
}

static void check_view_out(const float *x, int rows, const struct rt_tensor *out)
{
	assert_int_equal(out[0].dims[0], rows * 4);
	for (int i = 0; i < rows * 4; i++) {
		float r = x[i] > 0 ? x[i] : 0;
		float want = 1.0f / (1.0f + expf(-r)) + r;
		assert_float_equal(((float *)out[0].data)[i], want, 1e-6);
		assert_float_equal(((float *)out[1].data)[i], r, 0);
		assert_float_equal(((float *)out[2].data)[i], r, 0);
	}
	assert_int_equal(out[2].dims[0], rows * 2);
}

static void fill(float *x, int n, int seed)
{
	for (int i = 0; i < n; i++)
		x[i] = (float)((i * 7 + seed) % 11) - 5;
}

static void test_plan_reuse(void **state)
{
	(void)state;
	struct rt_model *m = load(view_model());
	struct rt_ctx *cx;
	struct strata_error err;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float x[64];
	fill(x, 64, 1);
	struct rt_tensor in = { BASE_DT_FLOAT, 2, { 16, 4 }, x }, out[3];
	assert_int_equal(runtime_run(cx, &in, out, &err), 0);
	check_view_out(x, 16, out);
	float first[64];
	memcpy(first, out[0].data, sizeof first);
	uint64_t before = base_alloc_thread_count();
	for (int i = 0; i < 5; i++) {
		assert_int_equal(runtime_run(cx, &in, out, &err), 0);
		check_view_out(x, 16, out);
		assert_memory_equal(out[0].data, first, sizeof first);
	}
	assert_int_equal(base_alloc_thread_count(), before);
	/* The Reshape of an output is a view of it: no copy. */
	assert_ptr_equal(out[2].data, out[1].data);
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

static void test_plan_classes(void **state)
{
	(void)state;
	struct rt_model *m = load(view_model());
	struct rt_ctx *cx;
	struct strata_error err;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float x[4 * 40];
	fill(x, 4 * 40, 3);
	struct rt_tensor in = { BASE_DT_FLOAT, 2, { 3, 4 }, x }, out[3];
	for (int i = 0; i < 2; i++) {
		in.dims[0] = i ? 40 : 3;
		assert_int_equal(runtime_run(cx, &in, out, &err), 0);
		check_view_out(x, (int)in.dims[0], out);
	}
	uint64_t before = base_alloc_thread_count();
	for (int i = 0; i < 6; i++) {
		in.dims[0] = i % 2 ? 40 : 3;
		assert_int_equal(runtime_run(cx, &in, out, &err), 0);
		check_view_out(x, (int)in.dims[0], out);
	}
	assert_int_equal(base_alloc_thread_count(), before);
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* Ten classes through a cache of eight: the least recently used is
 * evicted (its next run records again), the recent ones stay planned. */
static void test_plan_cache_bound(void **state)
{
	(void)state;
	struct rt_model *m = load(view_model());
	struct rt_ctx *cx;
	struct strata_error err;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float x[4 * 12];
	fill(x, 4 * 12, 5);
	struct rt_tensor in = { BASE_DT_FLOAT, 2, { 1, 4 }, x }, out[3];
	for (int round = 0; round < 2; round++)
		for (int b = 1; b <= 10; b++) {
			in.dims[0] = b;
			assert_int_equal(runtime_run(cx, &in, out, &err), 0);
			check_view_out(x, b, out);
		}
	/* 3..10 are the eight most recent: planned. */
	uint64_t before = base_alloc_thread_count();
	for (int b = 10; b >= 3; b--) {
		in.dims[0] = b;
		assert_int_equal(runtime_run(cx, &in, out, &err), 0);
		check_view_out(x, b, out);
	}
	assert_int_equal(base_alloc_thread_count(), before);
	/* 1 was evicted: it records a plan again. */
	in.dims[0] = 1;
	assert_int_equal(runtime_run(cx, &in, out, &err), 0);
	check_view_out(x, 1, out);
	assert_true(base_alloc_thread_count() > before);
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* NonZero's output size depends on the data, not on the input's shape: a
 * plan recorded with few nonzero cells must not be overrun by more. */
static void test_plan_data_dependent(void **state)
{
	(void)state;
	struct mb_model *mb = mb_new("nz", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 32 }, NULL);
	mb_node(mb, "NonZero", "x", "idx");
	mb_node(mb, "Neg", "idx", "nidx");
	mb_node(mb, "Abs", "nidx", "y");
	mb_output(mb, "y", BASE_DT_INT64, 2, (int64_t[]){ 1, -1 }, NULL);
	struct rt_model *m = load(mb);
	struct rt_ctx *cx;
	struct strata_error err;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float x[32];
	struct rt_tensor in = { BASE_DT_FLOAT, 1, { 32 }, x }, out;
	static const int counts[] = { 2, 32, 0, 5, 17, 2 };
	for (size_t t = 0; t < sizeof counts / sizeof *counts; t++) {
		memset(x, 0, sizeof x);
		for (int i = 0; i < counts[t]; i++)
			x[(i * 5) % 32] = 1;
		assert_int_equal(runtime_run(cx, &in, &out, &err), 0);
		assert_int_equal(out.dims[1], counts[t]);
		int64_t prev = -1;
		for (int i = 0; i < counts[t]; i++) {
			int64_t v = ((int64_t *)out.data)[i];
			assert_true(v > prev && v < 32 && x[v] == 1);
			prev = v;
		}
	}
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* A failing run (a bad Reshape shape given as an input) leaves the context
 * usable, in a recording run and in a planned one. */
static void test_plan_failure(void **state)
{
	(void)state;
	struct mb_model *mb = mb_new("fail", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 6 }, NULL);
	mb_input(mb, "shape", BASE_DT_INT64, 1, (int64_t[]){ 2 }, NULL);
	mb_node(mb, "Relu", "x", "r");
	mb_node(mb, "Reshape", "r,shape", "v");
	mb_node(mb, "Neg", "v", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, -1 }, NULL);
	struct rt_model *m = load(mb);
	struct rt_ctx *cx;
	struct strata_error err;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float x[6] = { 1, -2, 3, -4, 5, -6 };
	int64_t good[2] = { 2, 3 }, bad[2] = { 4, 4 };
	struct rt_tensor in[2] = { { BASE_DT_FLOAT, 1, { 6 }, x },
	                           { BASE_DT_INT64, 1, { 2 }, bad } };
	struct rt_tensor out;
	for (int i = 0; i < 3; i++) {
		in[1].data = bad;
		assert_int_equal(runtime_run(cx, in, &out, &err), STRATA_RUNTIME);
		assert_non_null(strstr(err.msg, "Reshape"));
		in[1].data = good;
		assert_int_equal(runtime_run(cx, in, &out, &err), 0);
		assert_int_equal(out.dims[0], 2);
		assert_int_equal(out.dims[1], 3);
		for (int k = 0; k < 6; k++)
			assert_float_equal(((float *)out.data)[k], x[k] > 0 ? -x[k] : 0, 0);
	}
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* Every allocation of the first runs of two classes fails in turn: each
 * ends in success or STRATA_NOMEM, and the context then runs correctly. */
static void test_plan_alloc_failures(void **state)
{
	(void)state;
	void *buf;
	size_t n;
	struct mb_model *mb = view_model();
	assert_int_equal(mb_serialize(mb, &buf, &n), 0);
	mb_free(mb);
	struct strata_error err;
	struct rt_model *m = NULL;
	assert_int_equal(runtime_model_load_buffer(buf, n, NULL, &m, &err), 0);
	float x[4 * 9];
	fill(x, 4 * 9, 7);
	int clean = 0;
	for (long k = 1; k < 400 && clean < 3; k++) {
		struct rt_ctx *cx = NULL;
		assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
		struct rt_tensor in = { BASE_DT_FLOAT, 2, { 9, 4 }, x }, out[3];
		base_alloc_fail_after(k);
		int rc = 0;
		for (int r = 0; r < 4 && rc == 0; r++) {
			in.dims[0] = r % 2 ? 2 : 9;
			rc = runtime_run(cx, &in, out, &err);
		}
		base_alloc_fail_after(0);
		if (rc != 0)
			assert_int_equal(rc, STRATA_NOMEM);
		else
			clean++;
		for (int r = 0; r < 3; r++) {
			in.dims[0] = r % 2 ? 2 : 9;
			assert_int_equal(runtime_run(cx, &in, out, &err), 0);
			check_view_out(x, (int)in.dims[0], out);
		}
		runtime_ctx_free(cx);
	}
	assert_true(clean > 0);
	runtime_model_free(m);
	free(buf);
}

/* Views of graph inputs and constants are never written, and an output
 * that views a graph input is the caller's own copy. */
static void test_views_of_inputs(void **state)
{
	(void)state;
	static const float c[4] = { 1, 2, 3, 4 };
	struct mb_model *mb = mb_new("inview", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 2, (int64_t[]){ 2, 2 }, NULL);
	mb_init(mb, "c", BASE_DT_FLOAT, 2, (int64_t[]){ 2, 2 }, c);
	mb_node(mb, "Flatten", "x", "fx");
	mb_node(mb, "Identity", "c", "ic");
	mb_node(mb, "Unsqueeze", "ic,axes", "uc");
	mb_init(mb, "axes", BASE_DT_INT64, 1, (int64_t[]){ 1 }, (int64_t[]){ 0 });
	mb_node(mb, "Squeeze", "uc,axes", "sc");
	mb_node(mb, "Add", "x,sc", "y");
	mb_output(mb, "fx", BASE_DT_FLOAT, 2, (int64_t[]){ 2, 2 }, NULL);
	mb_output(mb, "y", BASE_DT_FLOAT, 2, (int64_t[]){ 2, 2 }, NULL);
	mb_output(mb, "sc", BASE_DT_FLOAT, 2, (int64_t[]){ 2, 2 }, NULL);
	struct rt_model *m = load(mb);
	struct rt_ctx *cx;
	struct strata_error err;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float x[4] = { 10, 20, 30, 40 };
	struct rt_tensor in = { BASE_DT_FLOAT, 2, { 2, 2 }, x }, out[3];
	for (int i = 0; i < 3; i++) {
		assert_int_equal(runtime_run(cx, &in, out, &err), 0);
		assert_ptr_not_equal(out[0].data, x);
		assert_memory_equal(out[0].data, x, sizeof x);
		assert_memory_equal(out[2].data, c, sizeof c);
		for (int k = 0; k < 4; k++)
			assert_float_equal(((float *)out[1].data)[k], x[k] + c[k], 0);
		((float *)out[0].data)[0] = -1; /* the caller may write its outputs */
		((float *)out[2].data)[0] = -1;
	}
	assert_float_equal(x[0], 10, 0);
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_reuse),
		cmocka_unit_test(test_plan_classes),
		cmocka_unit_test(test_plan_cache_bound),
		cmocka_unit_test(test_plan_data_dependent),
		cmocka_unit_test(test_plan_failure),
		cmocka_unit_test(test_plan_alloc_failures),
		cmocka_unit_test(test_views_of_inputs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
