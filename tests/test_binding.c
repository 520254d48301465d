/*
 * test_binding.c: IO binding (runtime.h): inputs read from caller memory
 * at an offset, outputs written into caller memory in place, rebinding
 * without allocation, the binding's checks and messages, static memory
 * plans across bound and unbound runs, and the sliding-window state loop
 * of decoder models on a small stateful model built here.
 *
 * Every result is compared with what runtime_run gives on the same
 * inputs; "no allocation" is read from base_alloc_thread_count(), and "in
 * place" from the context's own view of the value (runtime_int.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../runtime/exec_int.h"
#include "modelbuild.h"

/* ---- helpers -------------------------------------------------------------------- */

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

static struct rt_ctx *ctx(const struct rt_model *m)
{
	struct rt_ctx *cx;
	struct strata_error err;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	return cx;
}

static int has(const char *hay, const char *needle)
{
	if (!strstr(hay, needle)) {
		print_error("message \"%s\" lacks \"%s\"\n", hay, needle);
		return 0;
	}
	return 1;
}

/* Fail with the message when rc is not 0. */
static void ok(int rc, const struct strata_error *err)
{
	if (rc != 0)
		print_error("%s\n", err->msg);
	assert_int_equal(rc, 0);
}

/* Where the context holds value name's cells now (the kernel's output
 * buffer, or what it views). */
static const void *cells_of(struct rt_ctx *cx, const struct rt_model *m, const char *name)
{
	struct rt_exec *x = &cx->x;
	int v = rt_graph_find(&m->g, name);
	assert_true(v >= 0);
	assert_int_equal(x->hold[v], RT_HOLD_TENSOR);
	return x->vals[v].data;
}

static void fill(float *x, int n, int seed)
{
	for (int i = 0; i < n; i++)
		x[i] = (float)((i * 7 + seed) % 11) - 5;
}

/* y = x @ w + b with x [batch,4], w [4,2], b [2]. */
static struct mb_model *mlp(void)
{
	static const float w[8] = { 1, 0, 0, 1, 1, 1, -1, 2 };
	static const float b[2] = { 0.5f, -0.5f };
	struct mb_model *mb = mb_new("mlp", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, (const char *[]){ "batch", "" });
	mb_init(mb, "w", BASE_DT_FLOAT, 2, (int64_t[]){ 4, 2 }, w);
	mb_init(mb, "b", BASE_DT_FLOAT, 1, (int64_t[]){ 2 }, b);
	mb_node(mb, "MatMul", "x,w", "xw");
	mb_node(mb, "Add", "xw,b", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 2 }, (const char *[]){ "batch", "" });
	return mb;
}

static void check_mlp(const float *x, int rows, const float *y)
{
	static const float w[8] = { 1, 0, 0, 1, 1, 1, -1, 2 };
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < 2; c++) {
			float want = c ? -0.5f : 0.5f;
			for (int k = 0; k < 4; k++)
				want += x[r * 4 + k] * w[k * 2 + c];
			assert_float_equal(y[r * 2 + c], want, 1e-5);
		}
}

/* runtime_run's y for rows of x, on a context of its own. */
static void mlp_reference(const struct rt_model *m, const float *x, int rows, float *y)
{
	struct rt_ctx *cx = ctx(m);
	struct strata_error err;
	struct rt_tensor in = { BASE_DT_FLOAT, 2, { rows, 4 }, (void *)x }, out;
	ok(runtime_run(cx, &in, &out, &err), &err);
	memcpy(y, out.data, (size_t)rows * 2 * sizeof *y);
	runtime_ctx_free(cx);
}

/* x [batch,4] -> Relu -> r; flat = Reshape(r, [-1]); y = Sigmoid(flat) +
 * flat; r2 = Reshape(r, [-1,2]), a view of r.  Outputs y, r, r2. */
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
	mb_node(mb, "Add", "s,flat", "y");
	mb_node(mb, "Reshape", "r,pair_shape", "r2");
	mb_output(mb, "y", BASE_DT_FLOAT, 1, (int64_t[]){ -1 }, NULL);
	mb_output(mb, "r", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, NULL);
	mb_output(mb, "r2", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 2 }, NULL);
	return mb;
}

/* ---- inputs ------------------------------------------------------------------------ */

/* An input bound as rows of a larger buffer, at a byte offset: read in
 * place, the same result as runtime_run on those rows. */
static void test_input_at_offset(void **state)
{
	(void)state;
	struct rt_model *m = load(mlp());
	struct rt_ctx *cx = ctx(m);
	struct strata_error err;
	float big[10 * 4];
	fill(big, 40, 3);
	size_t off = 3 * 4 * sizeof(float); /* rows 3 and 4 */
	ok(runtime_bind_input(cx, "x", BASE_DT_FLOAT, 2, (int64_t[]){ 2, 4 }, big, off, &err), &err);
	ok(runtime_run_bound(cx, &err), &err);
	const struct rt_tensor *y = runtime_bound_output(cx, 0);
	assert_non_null(y);
	assert_int_equal(y->rank, 2);
	assert_int_equal(y->dims[0], 2);
	assert_int_equal(y->dims[1], 2);
	check_mlp(big + 12, 2, y->data);
	float want[4];
	mlp_reference(m, big + 12, 2, want);
	assert_memory_equal(y->data, want, sizeof want);
	/* The input was read where it lies: the MatMul saw big's memory. */
	assert_ptr_equal(cx->x.vals[rt_graph_find(&m->g, "x")].data, big + 12);
	assert_null(runtime_bound_output(cx, 1));
	assert_null(runtime_bound_output(cx, -1));
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* Writing a bound input's memory between runs changes the next result:
 * nothing was copied at bind time. */
static void test_update_input_in_place(void **state)
{
	(void)state;
	struct rt_model *m = load(mlp());
	struct rt_ctx *cx = ctx(m);
	struct strata_error err;
	float x[3 * 4], y[3 * 2];
	fill(x, 12, 1);
	ok(runtime_bind_input(cx, "x", BASE_DT_FLOAT, 2, (int64_t[]){ 3, 4 }, x, 0, &err), &err);
	ok(runtime_bind_output(cx, "y", BASE_DT_FLOAT, 2, (int64_t[]){ 3, 2 }, y, 0, &err), &err);
	for (int round = 0; round < 4; round++) {
		fill(x, 12, 5 * round + 2);
		ok(runtime_run_bound(cx, &err), &err);
		check_mlp(x, 3, y);
	}
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* ---- outputs ------------------------------------------------------------------------- */

/* A bound output is written in place: its kernel wrote the caller's
 * memory (no copy), the view returned is that memory, the values are
 * runtime_run's, and nothing around the region moved.  The same on the
 * recording run and on the planned runs after it. */
static void test_output_in_place(void **state)
{
	(void)state;
	struct rt_model *m = load(mlp());
	struct rt_ctx *cx = ctx(m);
	struct strata_error err;
	float x[2 * 4], want[2 * 2];
	fill(x, 8, 4);
	mlp_reference(m, x, 2, want);
	float out[16];
	for (int i = 0; i < 16; i++)
		out[i] = -99;
	float *region = out + 5;
	ok(runtime_bind_input(cx, "x", BASE_DT_FLOAT, 2, (int64_t[]){ 2, 4 }, x, 0, &err), &err);
	ok(runtime_bind_output(cx, "y", BASE_DT_FLOAT, 2, (int64_t[]){ 2, 2 }, out,
	                       5 * sizeof(float), &err), &err);
	for (int run = 0; run < 3; run++) {
		ok(runtime_run_bound(cx, &err), &err);
		const struct rt_tensor *y = runtime_bound_output(cx, 0);
		assert_non_null(y);
		assert_ptr_equal(y->data, region);
		assert_int_equal(y->dtype, BASE_DT_FLOAT);
		assert_int_equal(y->dims[0], 2);
		assert_int_equal(y->dims[1], 2);
		assert_ptr_equal(cells_of(cx, m, "y"), region);
		assert_memory_equal(region, want, sizeof want);
		for (int i = 0; i < 16; i++)
			if (i < 5 || i >= 9)
				assert_float_equal(out[i], -99, 0);
	}
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* Rebinding by index and running allocate nothing once the context is
 * warm: each run reads another row and writes another place. */
static void test_rebind_without_allocation(void **state)
{
	(void)state;
	struct rt_model *m = load(mlp());
	struct rt_ctx *cx = ctx(m);
	struct strata_error err;
	enum { N = 12 };
	float x[N * 4], y[N * 2];
	fill(x, N * 4, 6);
	memset(y, 0, sizeof y);
	const int64_t xd[2] = { 1, 4 }, yd[2] = { 1, 2 };
	/* Warm-up: the first run records a plan, the second is its first. */
	for (int i = 0; i < 2; i++) {
		ok(runtime_bind_input_at(cx, 0, BASE_DT_FLOAT, 2, xd, x, 0, &err), &err);
		ok(runtime_bind_output_at(cx, 0, BASE_DT_FLOAT, 2, yd, y, 0, &err), &err);
		ok(runtime_run_bound(cx, &err), &err);
	}
	uint64_t before = base_alloc_thread_count();
	for (int i = 0; i < N; i++) {
		size_t xo = (size_t)i * 4 * sizeof(float), yo = (size_t)i * 2 * sizeof(float);
		ok(runtime_bind_input_at(cx, 0, BASE_DT_FLOAT, 2, xd, x, xo, &err), &err);
		ok(runtime_bind_output_at(cx, 0, BASE_DT_FLOAT, 2, yd, y, yo, &err), &err);
		ok(runtime_run_bound(cx, &err), &err);
		assert_ptr_equal(runtime_bound_output(cx, 0)->data, y + 2 * i);
	}
	assert_int_equal(base_alloc_thread_count(), before);
	check_mlp(x, N, y);
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* runtime_run's outputs as plain arrays (y 8, r 8, r2 8 floats). */
static void views_reference(const struct rt_model *m, const float *x, float *want)
{
	struct rt_ctx *cx = ctx(m);
	struct strata_error err;
	struct rt_tensor in = { BASE_DT_FLOAT, 2, { 2, 4 }, (void *)x }, out[3];
	ok(runtime_run(cx, &in, out, &err), &err);
	for (int k = 0; k < 3; k++)
		memcpy(want + 8 * k, out[k].data, 8 * sizeof(float));
	runtime_ctx_free(cx);
}

/* Outputs bound and unbound in turn on one context, so that one static
 * memory plan serves runs with and without the binding (the class is the
 * same: x [2,4]).  r2 is a view of r: bound, it is copied into its own
 * region at the end; unbound while r is bound, it gets the context's own
 * copy, so changing r's region afterwards does not change it. */
static void bound_and_unbound_runs(int first)
{
	struct rt_model *m = load(view_model());
	struct rt_ctx *cx = ctx(m);
	struct strata_error err;
	float x[8], want[24];
	float r[8], r2[8], y[8];
	const int64_t rd[2] = { 2, 4 }, r2d[2] = { 4, 2 }, yd[1] = { 8 };
	ok(runtime_bind_input(cx, "x", BASE_DT_FLOAT, 2, rd, x, 0, &err), &err);
	for (int run = 0; run < 12; run++) {
		fill(x, 8, run);
		views_reference(m, x, want);
		int pattern = (first + run) % 4;
		/* 0: nothing bound, 1: r alone, 2: r and r2, 3: all three. */
		ok(runtime_unbind_output(cx, 0, &err), &err);
		ok(runtime_unbind_output(cx, 1, &err), &err);
		ok(runtime_unbind_output(cx, 2, &err), &err);
		if (pattern >= 1)
			ok(runtime_bind_output(cx, "r", BASE_DT_FLOAT, 2, rd, r, 0, &err), &err);
		if (pattern >= 2)
			ok(runtime_bind_output(cx, "r2", BASE_DT_FLOAT, 2, r2d, r2, 0, &err), &err);
		if (pattern >= 3)
			ok(runtime_bind_output(cx, "y", BASE_DT_FLOAT, 1, yd, y, 0, &err), &err);
		ok(runtime_run_bound(cx, &err), &err);
		const struct rt_tensor *o[3];
		for (int k = 0; k < 3; k++) {
			o[k] = runtime_bound_output(cx, k);
			assert_non_null(o[k]);
			assert_memory_equal(o[k]->data, want + 8 * k, 8 * sizeof(float));
		}
		assert_true(pattern < 1 || o[1]->data == r);
		assert_true(pattern < 2 || o[2]->data == r2);
		assert_true(pattern < 3 || o[0]->data == y);
		if (pattern >= 1) {
			/* r's kernel wrote the caller's memory. */
			assert_ptr_equal(cells_of(cx, m, "r"), r);
			/* Unbound outputs never view it. */
			assert_ptr_not_equal(o[0]->data, r);
			if (pattern == 1)
				assert_ptr_not_equal(o[2]->data, r);
			memset(r, 0, sizeof r);
			for (int k = 0; k < 3; k++)
				if (k != 1)
					assert_memory_equal(o[k]->data, want + 8 * k, 8 * sizeof(float));
		}
		if (pattern >= 2)
			/* r2 came out as a view of r: copied into its region. */
			assert_ptr_not_equal(cells_of(cx, m, "r2"), r2);
	}
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* The plan recorded by an unbound run, then by a run with every output
 * bound. */
static void test_bound_and_unbound_runs(void **state)
{
	(void)state;
	bound_and_unbound_runs(0);
	bound_and_unbound_runs(3);
}

/* ---- checks and messages ---------------------------------------------------------------- */

/* Two inputs sharing the symbolic dimension "batch": y = a + b. */
static struct mb_model *add2(void)
{
	struct mb_model *mb = mb_new("add2", 17);
	const char *names[2] = { "batch", "" };
	mb_input(mb, "a", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 2 }, names);
	mb_input(mb, "b", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 2 }, names);
	mb_node(mb, "Add", "a,b", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 2 }, names);
	return mb;
}

static void test_errors(void **state)
{
	(void)state;
	struct rt_model *m = load(mlp());
	struct rt_ctx *cx = ctx(m);
	struct strata_error err;
	float x[16], y[16];
	int64_t ix[4] = { 64, 4, 0, 1 };
	fill(x, 16, 0);
	const int64_t d14[2] = { 1, 4 }, d12[2] = { 1, 2 };

	/* Nothing bound yet: the run names the input. */
	assert_int_equal(runtime_run_bound(cx, &err), STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "input \"x\" is not bound"));
	assert_null(runtime_bound_output(cx, 0));

	/* Wrong element type, rank, fixed dimension: named, with both shapes. */
	assert_int_equal(runtime_bind_input(cx, "x", BASE_DT_INT64, 2, d14, ix, 0, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "input \"x\": expected float [batch,4], given int64 [1,4]"));
	assert_int_equal(runtime_bind_input(cx, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 4 }, x, 0, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "input \"x\": expected float [batch,4], given float [4]"));
	assert_int_equal(runtime_bind_input(cx, "x", BASE_DT_FLOAT, 2, (int64_t[]){ 1, 3 }, x, 0, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "input \"x\": expected float [batch,4], given float [1,3]"));
	assert_int_equal(runtime_bind_input(cx, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, x, 0, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "negative dimension"));
	assert_int_equal(runtime_bind_input(cx, "x", BASE_DT_FLOAT, 9, d14, x, 0, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "input \"x\": rank 9 is out of range"));
	assert_int_equal(runtime_bind_input(cx, "x", BASE_DT_FLOAT, 2, d14, NULL, 0, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "input \"x\" has no data"));
	/* Cells must be aligned to the element size. */
	assert_int_equal(runtime_bind_input(cx, "x", BASE_DT_FLOAT, 2, d14, x, 2, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "input \"x\": cells at offset 2 are not aligned to 4 bytes"));

	/* Unknown names and bad indices. */
	assert_int_equal(runtime_bind_input(cx, "nope", BASE_DT_FLOAT, 2, d14, x, 0, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "the model has no input \"nope\""));
	assert_int_equal(runtime_bind_output(cx, "x", BASE_DT_FLOAT, 2, d12, y, 0, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "the model has no output \"x\""));
	assert_int_equal(runtime_bind_input_at(cx, 1, BASE_DT_FLOAT, 2, d14, x, 0, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "no input 1: the model has 1"));
	assert_int_equal(runtime_bind_input_at(cx, -1, BASE_DT_FLOAT, 2, d14, x, 0, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "no input -1"));
	assert_int_equal(runtime_bind_output_at(cx, 3, BASE_DT_FLOAT, 2, d12, y, 0, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "no output 3: the model has 1"));
	assert_int_equal(runtime_unbind_output(cx, 1, &err), STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "no output 1: the model has 1"));

	/* Outputs are checked the same way against their declared type. */
	assert_int_equal(runtime_bind_output(cx, "y", BASE_DT_DOUBLE, 2, d12, y, 0, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "output \"y\": expected float [batch,2], given double [1,2]"));
	assert_int_equal(runtime_bind_output(cx, "y", BASE_DT_FLOAT, 2, (int64_t[]){ 1, 3 }, y, 0, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "output \"y\": expected float [batch,2], given float [1,3]"));
	assert_int_equal(runtime_bind_output(cx, "y", BASE_DT_FLOAT, 3, (int64_t[]){ 1, 1, 2 }, y, 0,
	                                     &err), STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "output \"y\": expected float [batch,2], given float [1,1,2]"));

	/* A failed bind keeps the previous binding: x stays [1,4] at x[4..8). */
	ok(runtime_bind_input(cx, "x", BASE_DT_FLOAT, 2, d14, x, 4 * sizeof(float), &err), &err);
	assert_int_equal(runtime_bind_input(cx, "x", BASE_DT_FLOAT, 2, (int64_t[]){ 1, 5 }, x, 0, &err),
	                 STRATA_INVALID_ARGUMENT);
	ok(runtime_run_bound(cx, &err), &err);
	check_mlp(x + 4, 1, runtime_bound_output(cx, 0)->data);

	/* The bound region does not hold what the run produces: the run fails
	 * naming the output and both shapes, and leaves the region alone. */
	for (int i = 0; i < 16; i++)
		y[i] = 7;
	ok(runtime_bind_output(cx, "y", BASE_DT_FLOAT, 2, (int64_t[]){ 3, 2 }, y, 0, &err), &err);
	assert_int_equal(runtime_run_bound(cx, &err), STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "output \"y\": the run produced float [1,2], bound to float [3,2]"));
	for (int i = 0; i < 16; i++)
		assert_float_equal(y[i], 7, 0);
	assert_null(runtime_bound_output(cx, 0));
	/* Rebound to fit, it runs again. */
	ok(runtime_bind_output_at(cx, 0, BASE_DT_FLOAT, 2, d12, y, 0, &err), &err);
	ok(runtime_run_bound(cx, &err), &err);
	check_mlp(x + 4, 1, y);
	/* runtime_run ignores the binding, and ends the views of the last
	 * bound run. */
	struct rt_tensor in = { BASE_DT_FLOAT, 2, { 2, 4 }, x }, out;
	y[0] = 7;
	ok(runtime_run(cx, &in, &out, &err), &err);
	assert_ptr_not_equal(out.data, y);
	assert_float_equal(y[0], 7, 0);
	check_mlp(x, 2, out.data);
	assert_null(runtime_bound_output(cx, 0));
	runtime_ctx_free(cx);
	runtime_model_free(m);

	/* Symbolic dimensions are checked across inputs at run time. */
	m = load(add2());
	cx = ctx(m);
	ok(runtime_bind_input(cx, "a", BASE_DT_FLOAT, 2, (int64_t[]){ 1, 2 }, x, 0, &err), &err);
	ok(runtime_bind_input(cx, "b", BASE_DT_FLOAT, 2, (int64_t[]){ 2, 2 }, x, 0, &err), &err);
	assert_int_equal(runtime_run_bound(cx, &err), STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "input \"b\": expected float [batch,2], given float [2,2]: "
	                         "dimension \"batch\" is 2 here but 1 in input \"a\""));
	ok(runtime_bind_input(cx, "b", BASE_DT_FLOAT, 2, (int64_t[]){ 1, 2 }, x, 8, &err), &err);
	ok(runtime_run_bound(cx, &err), &err);
	const float *sum = runtime_bound_output(cx, 0)->data;
	assert_float_equal(sum[0], x[0] + x[2], 0);
	assert_float_equal(sum[1], x[1] + x[3], 0);
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* A context freed into the session buffer pool forgets its bindings: the
 * next runtime_ctx_new may hand it to a caller that never bound them. */
static void test_freed_context_forgets_bindings(void **state)
{
	(void)state;
	struct rt_model *m = load(mlp());
	struct rt_ctx *cx = ctx(m);
	struct strata_error err;
	float x[4], y[2];
	fill(x, 4, 2);
	ok(runtime_bind_input(cx, "x", BASE_DT_FLOAT, 2, (int64_t[]){ 1, 4 }, x, 0, &err), &err);
	ok(runtime_bind_output(cx, "y", BASE_DT_FLOAT, 2, (int64_t[]){ 1, 2 }, y, 0, &err), &err);
	ok(runtime_run_bound(cx, &err), &err);
	runtime_ctx_free(cx);
	cx = ctx(m);
	assert_null(runtime_bound_output(cx, 0));
	assert_int_equal(runtime_run_bound(cx, &err), STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "input \"x\" is not bound"));
	float x2[4];
	fill(x2, 4, 9);
	y[0] = y[1] = 42;
	ok(runtime_bind_input(cx, "x", BASE_DT_FLOAT, 2, (int64_t[]){ 1, 4 }, x2, 0, &err), &err);
	ok(runtime_run_bound(cx, &err), &err);
	check_mlp(x2, 1, runtime_bound_output(cx, 0)->data);
	/* The first owner's output memory is not written. */
	assert_float_equal(y[0], 42, 0);
	assert_float_equal(y[1], 42, 0);
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* ---- the sliding window ---------------------------------------------------------------- */

enum { D = 5, W = 4, STEPS = 10 };

/* A stateful step as decoder models have: x [1,D] the new row, past
 * [1,T,D] the state; present = Concat(past, Unsqueeze(x), axis 1) is
 * [1,T+1,D] and y = ReduceSum(present over axis 1) @ Wm is [1,D]. */
static struct mb_model *window_model(void)
{
	static const int64_t axis1[1] = { 1 };
	float wm[D * D];
	for (int i = 0; i < D * D; i++)
		wm[i] = (float)((i * 5) % 7 - 3) * 0.25f;
	struct mb_model *mb = mb_new("window", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 2, (int64_t[]){ 1, D }, NULL);
	mb_input(mb, "past", BASE_DT_FLOAT, 3, (int64_t[]){ 1, -1, D },
	         (const char *[]){ "", "past_len", "" });
	mb_init(mb, "axis1", BASE_DT_INT64, 1, (int64_t[]){ 1 }, axis1);
	mb_init(mb, "wm", BASE_DT_FLOAT, 2, (int64_t[]){ D, D }, wm);
	mb_node(mb, "Unsqueeze", "x,axis1", "row");
	struct mb_node *c = mb_node(mb, "Concat", "past,row", "present");
	mb_attr_int(c, "axis", 1);
	struct mb_node *r = mb_node(mb, "ReduceSum", "present,axis1", "sum");
	mb_attr_int(r, "keepdims", 0);
	mb_node(mb, "MatMul", "sum,wm", "y");
	mb_output(mb, "present", BASE_DT_FLOAT, 3, (int64_t[]){ 1, -1, D },
	          (const char *[]){ "", "present_len", "" });
	mb_output(mb, "y", BASE_DT_FLOAT, 2, (int64_t[]){ 1, D }, NULL);
	return mb;
}

/* The state loop two ways.  Copying: runtime_run with past and present in
 * separate arrays, the last W-1 rows of present copied into past after
 * each step.  Bound: one buffer of W + STEPS rows; step s binds past as
 * the W-1 rows from row s and present as the W rows from the same row, so
 * Concat finds past already in place and writes only row s + W - 1; the
 * next step's past is this step's present less its first row.  Every y and
 * the final window agree bit for bit, present is written in place at each
 * step, and once warm the bound loop allocates nothing. */
static void test_sliding_window(void **state)
{
	(void)state;
	struct rt_model *m = load(window_model());
	int kx = runtime_model_input_index(m, "x"), kp = runtime_model_input_index(m, "past");
	int kpr = runtime_model_output_index(m, "present"), ky = runtime_model_output_index(m, "y");
	assert_true(kx >= 0 && kp >= 0 && kpr >= 0 && ky >= 0);
	struct strata_error err;
	float xs[STEPS * D], init[(W - 1) * D];
	fill(xs, STEPS * D, 1);
	fill(init, (W - 1) * D, 4);

	/* Copying. */
	struct rt_ctx *cc = ctx(m);
	float past[(W - 1) * D], ycopy[STEPS * D], last[W * D];
	memcpy(past, init, sizeof past);
	for (int s = 0; s < STEPS; s++) {
		struct rt_tensor in[2], out[2];
		in[kx] = (struct rt_tensor){ BASE_DT_FLOAT, 2, { 1, D }, xs + s * D };
		in[kp] = (struct rt_tensor){ BASE_DT_FLOAT, 3, { 1, W - 1, D }, past };
		ok(runtime_run(cc, in, out, &err), &err);
		assert_int_equal(out[kpr].dims[1], W);
		memcpy(ycopy + s * D, out[ky].data, D * sizeof(float));
		memcpy(last, out[kpr].data, sizeof last);
		memcpy(past, (float *)out[kpr].data + D, sizeof past);
	}
	runtime_ctx_free(cc);

	/* Bound, in one buffer. */
	struct rt_ctx *cx = ctx(m);
	float *buf = base_alloc((W + STEPS) * D * sizeof(float));
	assert_non_null(buf);
	for (int i = 0; i < (W + STEPS) * D; i++)
		buf[i] = -1;
	memcpy(buf, init, sizeof init);
	float ybound[STEPS * D];
	const int64_t xd[2] = { 1, D }, yd[2] = { 1, D };
	const int64_t pd[3] = { 1, W - 1, D }, prd[3] = { 1, W, D };
	uint64_t before = 0;
	for (int s = 0; s < STEPS; s++) {
		if (s == 2)
			before = base_alloc_thread_count();
		size_t row = (size_t)s * D * sizeof(float);
		ok(runtime_bind_input_at(cx, kx, BASE_DT_FLOAT, 2, xd, xs, row, &err), &err);
		ok(runtime_bind_input_at(cx, kp, BASE_DT_FLOAT, 3, pd, buf, row, &err), &err);
		ok(runtime_bind_output_at(cx, kpr, BASE_DT_FLOAT, 3, prd, buf, row, &err), &err);
		ok(runtime_bind_output_at(cx, ky, BASE_DT_FLOAT, 2, yd, ybound, row, &err), &err);
		ok(runtime_run_bound(cx, &err), &err);
		/* present is the caller's memory, written there by Concat. */
		assert_ptr_equal(runtime_bound_output(cx, kpr)->data, buf + s * D);
		assert_ptr_equal(cells_of(cx, m, "present"), buf + s * D);
		assert_ptr_equal(cells_of(cx, m, "y"), ybound + s * D);
		/* The row past the window is untouched. */
		assert_float_equal(buf[(s + W) * D], -1, 0);
	}
	assert_int_equal(base_alloc_thread_count(), before);
	assert_memory_equal(ybound, ycopy, sizeof ycopy);
	assert_memory_equal(buf + (STEPS - 1) * D, last, sizeof last);
	/* The buffer holds the whole history: the initial rows, then every x. */
	assert_memory_equal(buf, init, sizeof init);
	assert_memory_equal(buf + (W - 1) * D, xs, sizeof xs);
	base_free(buf, (W + STEPS) * D * sizeof(float));
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_input_at_offset),
		cmocka_unit_test(test_update_input_in_place),
		cmocka_unit_test(test_output_in_place),
		cmocka_unit_test(test_rebind_without_allocation),
		cmocka_unit_test(test_bound_and_unbound_runs),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_freed_context_forgets_bindings),
		cmocka_unit_test(test_sliding_window),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
