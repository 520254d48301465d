/*
 * test_pool.c: the session buffer pool (runtime_ctx_new / runtime_ctx_free
 * with session.buffer_pool_generations).
 *
 * A small MLP with a symbolic batch is loaded with 0, 1 and 3 generations.
 * The tests count the allocator's calls (base_alloc_thread_count) around a
 * whole evaluation, new context to freed context, and the pool's hits and
 * misses: after the first evaluation of a shape nothing is allocated with the
 * pool on, and every evaluation allocates with it off.  Retired contexts
 * leave oldest first; live contexts never share a buffer; two threads
 * evaluating at once get their own results (the tsan target runs this file
 * under ThreadSanitizer).
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../runtime/runtime.h"
#include "modelbuild.h"

#define IN 16
#define HID 32
#define OUT 4

static float w1[IN * HID], b1[HID], w2[HID * OUT];

static void *model_bytes(size_t *n)
{
	for (int i = 0; i < IN * HID; i++)
		w1[i] = (float)((i * 37) % 17 - 8) / 16.0f;
	for (int i = 0; i < HID; i++)
		b1[i] = (float)(i % 5 - 2) / 8.0f;
	for (int i = 0; i < HID * OUT; i++)
		w2[i] = (float)((i * 11) % 13 - 6) / 12.0f;
	struct mb_model *m = mb_new("mlp", 17);
	mb_input(m, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, IN }, (const char *[]){ "batch", "" });
	mb_init(m, "w1", BASE_DT_FLOAT, 2, (int64_t[]){ IN, HID }, w1);
	mb_init(m, "b1", BASE_DT_FLOAT, 1, (int64_t[]){ HID }, b1);
	mb_init(m, "w2", BASE_DT_FLOAT, 2, (int64_t[]){ HID, OUT }, w2);
	mb_node(m, "MatMul", "x,w1", "h");
	mb_node(m, "Add", "h,b1", "h2");
	mb_node(m, "Relu", "h2", "h3");
	mb_node(m, "MatMul", "h3,w2", "y");
	mb_output(m, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, OUT }, (const char *[]){ "batch", "" });
	void *buf;
	assert_int_equal(mb_serialize(m, &buf, n), 0);
	mb_free(m);
	return buf;
}

/* The model with gens generations ("" for the default). */
static struct rt_model *load(const char *gens)
{
	size_t n;
	void *buf = model_bytes(&n);
	struct rt_options *o;
	struct strata_error err;
	assert_int_equal(runtime_options_new(&o, &err), 0);
	if (*gens)
		assert_int_equal(runtime_options_set(o, "session.buffer_pool_generations", gens, &err), 0);
	struct rt_model *m;
	int rc = runtime_model_load_buffer_opts(buf, n, NULL, o, &m, &err);
	if (rc)
		fail_msg("%s", err.msg);
	runtime_options_free(o);
	free(buf);
	return m;
}

/* y = relu(x w1 + b1) w2 in double, for row r of x. */
static void expect(const float *x, int rows, double *y)
{
	for (int r = 0; r < rows; r++)
		for (int o = 0; o < OUT; o++) {
			double acc = 0;
			for (int h = 0; h < HID; h++) {
				double a = b1[h];
				for (int i = 0; i < IN; i++)
					a += (double)x[r * IN + i] * w1[i * HID + h];
				acc += (a > 0 ? a : 0) * w2[h * OUT + o];
			}
			y[r * OUT + o] = acc;
		}
}

static void fill(float *x, int rows, int seed)
{
	for (int i = 0; i < rows * IN; i++)
		x[i] = (float)(((i + seed) * 29) % 23 - 11) / 10.0f;
}

/* One evaluation: new context, run on rows x, check, free.  Returns the
 * allocations it made. */
static uint64_t evaluate(const struct rt_model *m, int rows, int seed)
{
	float x[64 * IN];
	double want[64 * OUT];
	fill(x, rows, seed);
	expect(x, rows, want);
	uint64_t before = base_alloc_thread_count();
	struct rt_ctx *cx;
	struct strata_error err;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	struct rt_tensor in = { BASE_DT_FLOAT, 2, { rows, IN }, x }, out;
	assert_int_equal(runtime_run(cx, &in, &out, &err), 0);
	const float *y = out.data;
	for (int i = 0; i < rows * OUT; i++)
		if (!(fabs(y[i] - want[i]) <= 1e-4 * (1 + fabs(want[i]))))
			fail_msg("cell %d: %g, want %g", i, y[i], want[i]);
	runtime_ctx_free(cx);
	return base_alloc_thread_count() - before;
}

static void test_option_strict(void **state)
{
	struct rt_options *o;
	struct strata_error err;
	assert_int_equal(runtime_options_new(&o, &err), 0);
	const char *bad[] = { "1foo", "-1", "", " 1", "1 ", "+1", "0x2", "1025", "99999999999999999999" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_int_equal(runtime_options_set(o, "session.buffer_pool_generations", bad[i], &err),
		                 STRATA_INVALID_ARGUMENT);
		assert_non_null(strstr(err.msg, "session.buffer_pool_generations"));
	}
	const char *good[] = { "0", "1", "2", "1024", "007" };
	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		assert_int_equal(runtime_options_set(o, "session.buffer_pool_generations", good[i], &err),
		                 0);
	runtime_options_free(o);
}

/* The default keeps one generation: from the second evaluation of a shape
 * on, no allocation and no miss. */
static void test_default_reuses(void **state)
{
	struct rt_model *m = load("");
	struct rt_pool_stats st;
	assert_true(evaluate(m, 8, 1) > 0);
	runtime_model_pool_stats(m, &st);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.hits, 0);
	assert_int_equal(st.retired, 1);
	for (int k = 0; k < 20; k++)
		assert_int_equal(evaluate(m, 8, k), 0);
	/* a new shape costs its first run only */
	evaluate(m, 3, 0);
	for (int k = 0; k < 5; k++) {
		assert_int_equal(evaluate(m, 3, k), 0);
		assert_int_equal(evaluate(m, 8, k), 0);
	}
	runtime_model_pool_stats(m, &st);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.hits, 31);
	runtime_model_free(m);
}

/* Generations 0: every evaluation allocates its context. */
static void test_disabled(void **state)
{
	struct rt_model *m = load("0");
	for (int k = 0; k < 5; k++)
		assert_true(evaluate(m, 8, k) > 0);
	struct rt_pool_stats st;
	runtime_model_pool_stats(m, &st);
	assert_int_equal(st.hits, 0);
	assert_int_equal(st.misses, 5);
	assert_int_equal(st.retired, 0);
	runtime_model_free(m);
}

/* N generations keep N retired contexts, the oldest leaving first; live
 * contexts never share buffers. */
static void test_generations(void **state)
{
	struct rt_model *m = load("2");
	struct strata_error err;
	struct rt_ctx *c[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(runtime_ctx_new(m, &c[i], &err), 0);
	/* three live contexts at once: each its own outputs */
	float x[3][4 * IN];
	const float *y[3];
	for (int i = 0; i < 3; i++) {
		fill(x[i], 4, 100 * i);
		struct rt_tensor in = { BASE_DT_FLOAT, 2, { 4, IN }, x[i] }, out;
		assert_int_equal(runtime_run(c[i], &in, &out, &err), 0);
		y[i] = out.data;
	}
	for (int i = 0; i < 3; i++) {
		double want[4 * OUT];
		expect(x[i], 4, want);
		for (int k = 0; k < 4 * OUT; k++)
			assert_true(fabs(y[i][k] - want[k]) <= 1e-4 * (1 + fabs(want[k])));
		for (int j = 0; j < i; j++)
			assert_ptr_not_equal(y[i], y[j]);
	}
	for (int i = 0; i < 3; i++)
		runtime_ctx_free(c[i]);
	struct rt_pool_stats st;
	runtime_model_pool_stats(m, &st);
	assert_int_equal(st.retired, 2);
	/* c[0], retired first, was freed; the newest comes back first */
	struct rt_ctx *a, *b, *d;
	assert_int_equal(runtime_ctx_new(m, &a, &err), 0);
	assert_int_equal(runtime_ctx_new(m, &b, &err), 0);
	assert_ptr_equal(a, c[2]);
	assert_ptr_equal(b, c[1]);
	uint64_t before = base_alloc_thread_count();
	assert_int_equal(runtime_ctx_new(m, &d, &err), 0); /* the pool is empty: a miss */
	assert_true(base_alloc_thread_count() > before);
	runtime_model_pool_stats(m, &st);
	assert_int_equal(st.hits, 2);
	assert_int_equal(st.misses, 4);
	assert_int_equal(st.retired, 0);
	runtime_ctx_free(a);
	runtime_ctx_free(b);
	runtime_ctx_free(d);
	runtime_model_free(m); /* frees the retired ones (ASan checks) */
}

struct worker {
	const struct rt_model *m;
	int seed;
	int bad;
};

static void *work(void *p)
{
	struct worker *w = p;
	for (int k = 0; k < 200; k++) {
		float x[5 * IN];
		double want[5 * OUT];
		int rows = 1 + (k + w->seed) % 5;
		fill(x, rows, w->seed * 1000 + k);
		expect(x, rows, want);
		struct rt_ctx *cx;
		struct strata_error err;
		if (runtime_ctx_new(w->m, &cx, &err) != 0) {
			w->bad++;
			continue;
		}
		struct rt_tensor in = { BASE_DT_FLOAT, 2, { rows, IN }, x }, out;
		if (runtime_run(cx, &in, &out, &err) != 0) {
			w->bad++;
		} else {
			const float *y = out.data;
			for (int i = 0; i < rows * OUT; i++)
				w->bad += !(fabs(y[i] - want[i]) <= 1e-4 * (1 + fabs(want[i])));
		}
		runtime_ctx_free(cx);
	}
	return NULL;
}

/* Two threads take contexts from one pool and give them back, at once. */
static void test_two_threads(void **state)
{
	const char *gens[] = { "1", "2" };
	for (int g = 0; g < 2; g++) {
		struct rt_model *m = load(gens[g]);
		pthread_t t[2];
		struct worker w[2] = { { m, 1, 0 }, { m, 2, 0 } };
		for (int i = 0; i < 2; i++)
			assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
		for (int i = 0; i < 2; i++) {
			assert_int_equal(pthread_join(t[i], NULL), 0);
			assert_int_equal(w[i].bad, 0);
		}
		struct rt_pool_stats st;
		runtime_model_pool_stats(m, &st);
		assert_int_equal(st.hits + st.misses, 400);
		assert_true(st.misses <= 400);
		runtime_model_free(m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_option_strict),
		cmocka_unit_test(test_default_reuses),
		cmocka_unit_test(test_disabled),
		cmocka_unit_test(test_generations),
		cmocka_unit_test(test_two_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
