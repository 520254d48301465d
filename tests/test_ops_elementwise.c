/*
 * test_ops_elementwise.c: unit tests of the elementwise operators
 * (runtime/ops/elementwise.c, unary.c, cast.c).
 *
 * Every test builds a one-node ONNX model with tests/modelbuild.h, loads it
 * from memory, runs it and compares the output with values computed here.
 * Covered: numpy broadcasting (same shape, bias rows, columns, outer
 * products, scalars, empty tensors, a sweep of shape pairs against an
 * index-by-index reference), integer division and modulo edge cases, Pow
 * with mixed types, the variadic ops, comparisons and logic, Where with
 * three-way broadcasting and strings, the unary math ops with their
 * attributes, Clip with and without bounds (inputs and old-style
 * attributes), Cast (bfloat16 rounding, float to integer truncation, strings),
 * CastLike, float16 arithmetic, and the error paths: mismatched types and
 * bad conditions at load (INVALID_GRAPH), types without a kernel
 * (NOT_IMPLEMENTED) and incompatible shapes at run time (RUNTIME).
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

#include "../runtime/runtime.h"
#include "modelbuild.h"
#include "opcase.h"

/* ---- harness ------------------------------------------------------------------ */

/* A tensor description for the builder; dtype 0 marks an omitted input.  A
 * one-letter name for oc_tensor keeps the tables of inputs below readable. */
static struct rt_tensor T(int dtype, int rank, const int64_t *dims, void *data)
{
	return oc_tensor(dtype, rank, dims, data);
}

struct h {
	struct mb_model *mb;
	struct mb_node *node;
	struct rt_model *m;
	struct rt_ctx *cx;
	int nin;
	struct rt_tensor in[4];
	struct rt_tensor out;
	struct strata_error err;
};

/* Start a model with one node op over the given inputs (named i0, i1, ...)
 * and one output y of type out_dt. */
static void build(struct h *h, const char *op, int opset, int nin, const struct rt_tensor *in,
                  int out_dt)
{
	char names[64] = "";
	memset(h, 0, sizeof *h);
	h->mb = mb_new("t", opset);
	for (int i = 0; i < nin; i++) {
		char nm[16];
		snprintf(nm, sizeof nm, "i%d", i);
		if (i)
			strcat(names, ",");
		if (!in[i].dtype)
			continue;
		mb_input(h->mb, nm, in[i].dtype, in[i].rank, in[i].dims, NULL);
		strcat(names, nm);
		h->in[h->nin++] = in[i];
	}
	h->node = mb_node(h->mb, op, names, "y");
	mb_output(h->mb, "y", out_dt, -1, NULL, NULL);
}

static int load(struct h *h)
{
	void *buf;
	size_t n;
	assert_int_equal(mb_serialize(h->mb, &buf, &n), 0);
	mb_free(h->mb);
	h->mb = NULL;
	int rc = runtime_model_load_buffer(buf, n, NULL, &h->m, &h->err);
	free(buf);
	if (rc == 0)
		assert_int_equal(runtime_ctx_new(h->m, &h->cx, &h->err), 0);
	return rc;
}

static int run(struct h *h)
{
	return runtime_run(h->cx, h->in, &h->out, &h->err);
}

static void done(struct h *h)
{
	if (h->mb)
		mb_free(h->mb);
	if (h->cx)
		runtime_ctx_free(h->cx);
	if (h->m)
		runtime_model_free(h->m);
}

/* Build, load and run; the run must succeed. */
static void go(struct h *h)
{
	int rc = load(h);
	if (rc)
		fail_msg("load: %d %s", rc, h->err.msg);
	rc = run(h);
	if (rc)
		fail_msg("run: %d %s", rc, h->err.msg);
}

static void check_shape(const struct rt_tensor *t, int rank, const int64_t *dims)
{
	assert_int_equal(t->rank, rank);
	for (int i = 0; i < rank; i++)
		assert_int_equal(t->dims[i], dims[i]);
}

static void check_floats(const float *got, const float *want, int n, float tol)
{
	for (int i = 0; i < n; i++) {
		if (isnan(want[i])) {
			if (!isnan(got[i]))
				fail_msg("cell %d: got %g, want NaN", i, got[i]);
			continue;
		}
		if (!(fabsf(got[i] - want[i]) <= tol * (1 + fabsf(want[i]))))
			fail_msg("cell %d: got %.9g, want %.9g", i, got[i], want[i]);
	}
}

static uint32_t fbits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static float bitsf(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* ---- broadcasting ------------------------------------------------------------------ */

static void test_add_bias_row(void **state)
{
	struct h h;
	float a[6] = { 1, 2, 3, 4, 5, 6 }, b[3] = { 10, 20, 30 };
	struct rt_tensor in[2] = { T(BASE_DT_FLOAT, 2, (int64_t[]){ 2, 3 }, a),
	                           T(BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, b) };
	build(&h, "Add", 17, 2, in, BASE_DT_FLOAT);
	go(&h);
	check_shape(&h.out, 2, (int64_t[]){ 2, 3 });
	check_floats(h.out.data, (float[]){ 11, 22, 33, 14, 25, 36 }, 6, 0);
	done(&h);
}

static void test_mul_outer(void **state)
{
	struct h h;
	float a[8], b[3], want[24];
	for (int i = 0; i < 8; i++)
		a[i] = (float)(i + 1);
	for (int j = 0; j < 3; j++)
		b[j] = (float)(j + 1) * 0.5f;
	/* [2,1,4] * [3,1] -> [2,3,4]: y[i][j][k] = a[i][0][k] * b[j][0] */
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			for (int k = 0; k < 4; k++)
				want[(i * 3 + j) * 4 + k] = a[i * 4 + k] * b[j];
	struct rt_tensor in[2] = { T(BASE_DT_FLOAT, 3, (int64_t[]){ 2, 1, 4 }, a),
	                           T(BASE_DT_FLOAT, 2, (int64_t[]){ 3, 1 }, b) };
	build(&h, "Mul", 14, 2, in, BASE_DT_FLOAT);
	go(&h);
	check_shape(&h.out, 3, (int64_t[]){ 2, 3, 4 });
	check_floats(h.out.data, want, 24, 0);
	done(&h);
}

static void test_scalar_both_sides(void **state)
{
	struct h h;
	int32_t v[4] = { 5, -6, 7, 100 }, s = 3;
	struct rt_tensor in[2] = { T(BASE_DT_INT32, 1, (int64_t[]){ 4 }, v),
	                           T(BASE_DT_INT32, 0, NULL, &s) };
	build(&h, "Sub", 14, 2, in, BASE_DT_INT32);
	go(&h);
	check_shape(&h.out, 1, (int64_t[]){ 4 });
	int32_t *y = h.out.data;
	assert_int_equal(y[0], 2);
	assert_int_equal(y[1], -9);
	assert_int_equal(y[3], 97);
	done(&h);

	struct rt_tensor in2[2] = { T(BASE_DT_INT32, 0, NULL, &s),
	                            T(BASE_DT_INT32, 1, (int64_t[]){ 4 }, v) };
	build(&h, "Sub", 14, 2, in2, BASE_DT_INT32);
	go(&h);
	y = h.out.data;
	assert_int_equal(y[0], -2);
	assert_int_equal(y[1], 9);
	assert_int_equal(y[3], -97);
	done(&h);

	/* scalar op scalar gives a scalar */
	int32_t t = 10;
	struct rt_tensor in3[2] = { T(BASE_DT_INT32, 0, NULL, &t), T(BASE_DT_INT32, 0, NULL, &s) };
	build(&h, "Mul", 14, 2, in3, BASE_DT_INT32);
	go(&h);
	assert_int_equal(h.out.rank, 0);
	assert_int_equal(*(int32_t *)h.out.data, 30);
	done(&h);
}

/* Index-by-index reference for a broadcast binary op over doubles. */
static void ref_broadcast_sub(const double *a, int ra, const int64_t *da, const double *b, int rb,
                              const int64_t *db, double *y, int ry, const int64_t *dy)
{
	int64_t count = 1;
	for (int i = 0; i < ry; i++)
		count *= dy[i];
	for (int64_t flat = 0; flat < count; flat++) {
		int64_t idx[8], rem = flat;
		for (int i = ry - 1; i >= 0; i--) {
			idx[i] = rem % dy[i];
			rem /= dy[i];
		}
		int64_t ia = 0, ib = 0;
		for (int i = 0; i < ra; i++) {
			int64_t d = da[i], k = idx[ry - ra + i];
			ia = ia * d + (d == 1 ? 0 : k);
		}
		for (int i = 0; i < rb; i++) {
			int64_t d = db[i], k = idx[ry - rb + i];
			ib = ib * d + (d == 1 ? 0 : k);
		}
		y[flat] = a[ia] - b[ib];
	}
}

static void test_broadcast_sweep(void **state)
{
	static const struct {
		int ra, rb;
		int64_t da[4], db[4];
	} cases[] = {
		{ 3, 3, { 2, 3, 4 }, { 2, 3, 4 } }, { 2, 2, { 3, 4 }, { 3, 1 } },
		{ 2, 2, { 1, 4 }, { 3, 4 } },       { 2, 2, { 4, 1 }, { 1, 5 } },
		{ 3, 1, { 2, 3, 4 }, { 1 } },       { 4, 2, { 2, 1, 3, 1 }, { 3, 5 } },
		{ 3, 3, { 2, 1, 5 }, { 2, 3, 1 } }, { 4, 4, { 1, 2, 1, 3 }, { 2, 1, 4, 3 } },
		{ 1, 3, { 5 }, { 2, 1, 5 } },       { 3, 3, { 3, 1, 1 }, { 1, 1, 7 } },
		{ 4, 3, { 2, 3, 1, 4 }, { 3, 2, 4 } },
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		int ra = cases[c].ra, rb = cases[c].rb, ry = ra > rb ? ra : rb;
		int64_t dy[4], na = 1, nb = 1, ny = 1;
		for (int i = 0; i < ry; i++) {
			int ia = i - (ry - ra), ib = i - (ry - rb);
			int64_t x = ia >= 0 ? cases[c].da[ia] : 1, z = ib >= 0 ? cases[c].db[ib] : 1;
			dy[i] = x == 1 ? z : x;
			ny *= dy[i];
		}
		for (int i = 0; i < ra; i++)
			na *= cases[c].da[i];
		for (int i = 0; i < rb; i++)
			nb *= cases[c].db[i];
		double a[256], b[256], want[256];
		for (int64_t i = 0; i < na; i++)
			a[i] = (double)(i * 7 % 11) + 0.25 * (double)i;
		for (int64_t i = 0; i < nb; i++)
			b[i] = (double)(i * 3 % 5) - 0.5 * (double)i;
		ref_broadcast_sub(a, ra, cases[c].da, b, rb, cases[c].db, want, ry, dy);

		struct h h;
		struct rt_tensor in[2] = { T(BASE_DT_DOUBLE, ra, cases[c].da, a),
		                           T(BASE_DT_DOUBLE, rb, cases[c].db, b) };
		build(&h, "Sub", 14, 2, in, BASE_DT_DOUBLE);
		go(&h);
		check_shape(&h.out, ry, dy);
		const double *y = h.out.data;
		for (int64_t i = 0; i < ny; i++)
			if (y[i] != want[i])
				fail_msg("case %zu cell %lld: got %g want %g", c, (long long)i, y[i], want[i]);
		done(&h);
	}
}

/* Many short rows against one bias row, both ways round, and a
 * comparison: the rows are processed in blocks, the last one partial. */
static void test_short_bias_rows(void **state)
{
	enum { M = 1000, N = 5 };
	static float a[M * N];
	float b[N] = { 0.5f, -1, 2, 1000, -3 };
	for (int i = 0; i < M * N; i++)
		a[i] = (float)(i % 97) - 40;
	struct rt_tensor in[2] = { T(BASE_DT_FLOAT, 2, (int64_t[]){ M, N }, a),
	                           T(BASE_DT_FLOAT, 1, (int64_t[]){ N }, b) };
	struct rt_tensor rev[2] = { in[1], in[0] };
	struct h h;

	build(&h, "Add", 14, 2, in, BASE_DT_FLOAT);
	go(&h);
	check_shape(&h.out, 2, (int64_t[]){ M, N });
	for (int i = 0; i < M * N; i++)
		if (((float *)h.out.data)[i] != a[i] + b[i % N])
			fail_msg("Add cell %d", i);
	done(&h);

	build(&h, "Sub", 14, 2, rev, BASE_DT_FLOAT);
	go(&h);
	for (int i = 0; i < M * N; i++)
		if (((float *)h.out.data)[i] != b[i % N] - a[i])
			fail_msg("Sub cell %d", i);
	done(&h);

	build(&h, "Less", 13, 2, in, BASE_DT_BOOL);
	go(&h);
	for (int i = 0; i < M * N; i++)
		if (((uint8_t *)h.out.data)[i] != (a[i] < b[i % N]))
			fail_msg("Less cell %d", i);
	done(&h);
}

static void test_empty(void **state)
{
	struct h h;
	float a[1] = { 0 }, b[3] = { 1, 2, 3 }; /* a: storage for zero cells */
	struct rt_tensor in[2] = { T(BASE_DT_FLOAT, 2, (int64_t[]){ 0, 3 }, a),
	                           T(BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, b) };
	build(&h, "Add", 14, 2, in, BASE_DT_FLOAT);
	go(&h);
	check_shape(&h.out, 2, (int64_t[]){ 0, 3 });
	done(&h);
}

static void test_legacy_axis(void **state)
{
	/* Opset 6: broadcast=1 with axis=0 matches b's [2] to a's first axis. */
	struct h h;
	float a[6] = { 1, 2, 3, 4, 5, 6 }, b[2] = { 100, 200 };
	struct rt_tensor in[2] = { T(BASE_DT_FLOAT, 2, (int64_t[]){ 2, 3 }, a),
	                           T(BASE_DT_FLOAT, 1, (int64_t[]){ 2 }, b) };
	build(&h, "Add", 6, 2, in, BASE_DT_FLOAT);
	mb_attr_int(h.node, "broadcast", 1);
	mb_attr_int(h.node, "axis", 0);
	go(&h);
	check_shape(&h.out, 2, (int64_t[]){ 2, 3 });
	check_floats(h.out.data, (float[]){ 101, 102, 103, 204, 205, 206 }, 6, 0);
	done(&h);
}

/* ---- integer arithmetic --------------------------------------------------------------- */

static void test_int_div(void **state)
{
	struct h h;
	int32_t a[6] = { -7, 7, 5, INT32_MIN, 9, -9 }, b[6] = { 2, -2, 0, -1, 3, -4 };
	struct rt_tensor in[2] = { T(BASE_DT_INT32, 1, (int64_t[]){ 6 }, a),
	                           T(BASE_DT_INT32, 1, (int64_t[]){ 6 }, b) };
	build(&h, "Div", 14, 2, in, BASE_DT_INT32);
	go(&h);
	int32_t *y = h.out.data;
	assert_int_equal(y[0], -3); /* truncation, not floor */
	assert_int_equal(y[1], -3);
	assert_int_equal(y[2], 0);  /* division by zero is defined as 0 */
	assert_int_equal(y[3], INT32_MIN); /* wraps, no trap */
	assert_int_equal(y[4], 3);
	assert_int_equal(y[5], 2);
	done(&h);

	uint8_t ua[3] = { 200, 7, 9 }, ub[3] = { 3, 0, 2 };
	struct rt_tensor in2[2] = { T(BASE_DT_UINT8, 1, (int64_t[]){ 3 }, ua),
	                            T(BASE_DT_UINT8, 1, (int64_t[]){ 3 }, ub) };
	build(&h, "Div", 14, 2, in2, BASE_DT_UINT8);
	go(&h);
	uint8_t *u = h.out.data;
	assert_int_equal(u[0], 66);
	assert_int_equal(u[1], 0);
	assert_int_equal(u[2], 4);
	done(&h);
}

static void test_int_wrap(void **state)
{
	struct h h;
	int64_t a[2] = { INT64_MAX, INT64_MIN }, b[2] = { 1, 1 };
	struct rt_tensor in[2] = { T(BASE_DT_INT64, 1, (int64_t[]){ 2 }, a),
	                           T(BASE_DT_INT64, 1, (int64_t[]){ 2 }, b) };
	build(&h, "Add", 14, 2, in, BASE_DT_INT64);
	go(&h);
	int64_t *y = h.out.data;
	assert_true(y[0] == INT64_MIN);
	assert_true(y[1] == INT64_MIN + 1);
	done(&h);
}

static void test_mod(void **state)
{
	struct h h;
	int64_t a[5] = { -7, 7, -7, 7, 5 }, b[5] = { 3, -3, -3, 3, 0 };
	struct rt_tensor in[2] = { T(BASE_DT_INT64, 1, (int64_t[]){ 5 }, a),
	                           T(BASE_DT_INT64, 1, (int64_t[]){ 5 }, b) };
	build(&h, "Mod", 13, 2, in, BASE_DT_INT64);
	go(&h);
	int64_t *y = h.out.data;
	/* fmod=0: the sign of the divisor */
	assert_int_equal(y[0], 2);
	assert_int_equal(y[1], -2);
	assert_int_equal(y[2], -1);
	assert_int_equal(y[3], 1);
	assert_int_equal(y[4], 0);
	done(&h);

	build(&h, "Mod", 13, 2, in, BASE_DT_INT64);
	mb_attr_int(h.node, "fmod", 1);
	go(&h);
	y = h.out.data;
	/* fmod=1: the sign of the dividend */
	assert_int_equal(y[0], -1);
	assert_int_equal(y[1], 1);
	assert_int_equal(y[2], -1);
	assert_int_equal(y[3], 1);
	done(&h);

	float fa[2] = { -4.5f, 5.25f }, fb[2] = { 2.0f, -2.0f };
	struct rt_tensor in2[2] = { T(BASE_DT_FLOAT, 1, (int64_t[]){ 2 }, fa),
	                            T(BASE_DT_FLOAT, 1, (int64_t[]){ 2 }, fb) };
	build(&h, "Mod", 13, 2, in2, BASE_DT_FLOAT);
	mb_attr_int(h.node, "fmod", 1);
	go(&h);
	check_floats(h.out.data, (float[]){ -0.5f, 1.25f }, 2, 0);
	done(&h);

	build(&h, "Mod", 13, 2, in, BASE_DT_INT64);
	mb_attr_int(h.node, "fmod", 2);
	assert_int_equal(load(&h), STRATA_INVALID_GRAPH);
	assert_non_null(strstr(h.err.msg, "fmod"));
	done(&h);
}

static void test_pow_mixed(void **state)
{
	struct h h;
	float base[3] = { 2, 3, 0.5f };
	int32_t e[3] = { 3, 2, -1 };
	struct rt_tensor in[2] = { T(BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, base),
	                           T(BASE_DT_INT32, 1, (int64_t[]){ 3 }, e) };
	build(&h, "Pow", 15, 2, in, BASE_DT_FLOAT);
	go(&h);
	assert_int_equal(h.out.dtype, BASE_DT_FLOAT);
	check_floats(h.out.data, (float[]){ 8, 9, 2 }, 3, 0);
	done(&h);

	int64_t ib[4] = { 2, 3, 2, -2 }, ie[4] = { 10, 3, -1, 3 };
	struct rt_tensor in2[2] = { T(BASE_DT_INT64, 1, (int64_t[]){ 4 }, ib),
	                            T(BASE_DT_INT64, 1, (int64_t[]){ 4 }, ie) };
	build(&h, "Pow", 15, 2, in2, BASE_DT_INT64);
	go(&h);
	int64_t *y = h.out.data;
	assert_int_equal(y[0], 1024);
	assert_int_equal(y[1], 27);
	assert_int_equal(y[2], 0);
	assert_int_equal(y[3], -8);
	done(&h);

	int32_t b32[3] = { 1, 2, 3 };
	float fe[1] = { 2.0f };
	struct rt_tensor in3[2] = { T(BASE_DT_INT32, 1, (int64_t[]){ 3 }, b32),
	                            T(BASE_DT_FLOAT, 1, (int64_t[]){ 1 }, fe) };
	build(&h, "Pow", 15, 2, in3, BASE_DT_INT32);
	go(&h);
	int32_t *z = h.out.data;
	assert_int_equal(z[0], 1);
	assert_int_equal(z[1], 4);
	assert_int_equal(z[2], 9);
	done(&h);

	/* before opset 12 the types must match */
	build(&h, "Pow", 7, 2, in, BASE_DT_FLOAT);
	assert_int_equal(load(&h), STRATA_INVALID_GRAPH);
	done(&h);
}

/* ---- variadic ------------------------------------------------------------------------------ */

static void test_variadic(void **state)
{
	struct h h;
	float a[6] = { 1, 2, 3, 4, 5, 6 }, b[3] = { 10, -10, NAN }, c = 2;
	struct rt_tensor in[3] = { T(BASE_DT_FLOAT, 2, (int64_t[]){ 2, 3 }, a),
	                           T(BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, b),
	                           T(BASE_DT_FLOAT, 0, NULL, &c) };
	build(&h, "Sum", 13, 3, in, BASE_DT_FLOAT);
	go(&h);
	check_shape(&h.out, 2, (int64_t[]){ 2, 3 });
	check_floats(h.out.data, (float[]){ 13, -6, NAN, 16, -3, NAN }, 6, 0);
	done(&h);

	build(&h, "Mean", 13, 3, in, BASE_DT_FLOAT);
	go(&h);
	check_floats(h.out.data, (float[]){ 13.f / 3, -2, NAN, 16.f / 3, -1, NAN }, 6, 1e-6f);
	done(&h);

	build(&h, "Max", 13, 3, in, BASE_DT_FLOAT);
	go(&h);
	check_floats(h.out.data, (float[]){ 10, 2, NAN, 10, 5, NAN }, 6, 0);
	done(&h);

	build(&h, "Min", 13, 3, in, BASE_DT_FLOAT);
	go(&h);
	check_floats(h.out.data, (float[]){ 1, -10, NAN, 2, -10, NAN }, 6, 0);
	done(&h);

	/* one input: a copy */
	build(&h, "Max", 13, 1, in, BASE_DT_FLOAT);
	go(&h);
	check_floats(h.out.data, a, 6, 0);
	done(&h);

	int64_t ia[2] = { 3, -4 }, ib[2] = { -1, 9 };
	struct rt_tensor in2[2] = { T(BASE_DT_INT64, 1, (int64_t[]){ 2 }, ia),
	                            T(BASE_DT_INT64, 1, (int64_t[]){ 2 }, ib) };
	build(&h, "Max", 13, 2, in2, BASE_DT_INT64);
	go(&h);
	assert_int_equal(((int64_t *)h.out.data)[0], 3);
	assert_int_equal(((int64_t *)h.out.data)[1], 9);
	done(&h);

	/* Mean of integers has no kernel */
	build(&h, "Mean", 13, 2, in2, BASE_DT_INT64);
	assert_int_equal(load(&h), STRATA_NOT_IMPLEMENTED);
	done(&h);
}

/* ---- comparisons, logic, Where -------------------------------------------------------------- */

static void test_compare(void **state)
{
	struct h h;
	int64_t a[6] = { 1, 5, 3, 4, 2, 6 }, b[3] = { 3, 3, 3 };
	struct rt_tensor in[2] = { T(BASE_DT_INT64, 2, (int64_t[]){ 2, 3 }, a),
	                           T(BASE_DT_INT64, 1, (int64_t[]){ 3 }, b) };
	static const struct {
		const char *op;
		uint8_t want[6];
	} ops[] = {
		{ "Less", { 1, 0, 0, 0, 1, 0 } },         { "Greater", { 0, 1, 0, 1, 0, 1 } },
		{ "LessOrEqual", { 1, 0, 1, 0, 1, 0 } },  { "GreaterOrEqual", { 0, 1, 1, 1, 0, 1 } },
		{ "Equal", { 0, 0, 1, 0, 0, 0 } },
	};
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		build(&h, ops[k].op, 16, 2, in, BASE_DT_BOOL);
		go(&h);
		assert_int_equal(h.out.dtype, BASE_DT_BOOL);
		assert_memory_equal(h.out.data, ops[k].want, 6);
		done(&h);
	}

	const char *sa[3] = { "apple", "pear", "" }, *sb[3] = { "apple", "peach", "" };
	struct rt_tensor in2[2] = { T(BASE_DT_STRING, 1, (int64_t[]){ 3 }, sa),
	                            T(BASE_DT_STRING, 1, (int64_t[]){ 3 }, sb) };
	build(&h, "Equal", 19, 2, in2, BASE_DT_BOOL);
	go(&h);
	assert_memory_equal(h.out.data, ((uint8_t[]){ 1, 0, 1 }), 3);
	done(&h);

	/* NaN compares false */
	float fa[2] = { NAN, 1 }, fb[2] = { NAN, 1 };
	struct rt_tensor in3[2] = { T(BASE_DT_FLOAT, 1, (int64_t[]){ 2 }, fa),
	                            T(BASE_DT_FLOAT, 1, (int64_t[]){ 2 }, fb) };
	build(&h, "Equal", 13, 2, in3, BASE_DT_BOOL);
	go(&h);
	assert_memory_equal(h.out.data, ((uint8_t[]){ 0, 1 }), 2);
	done(&h);
}

static void test_logic(void **state)
{
	struct h h;
	uint8_t a[4] = { 0, 0, 1, 1 }, b[4] = { 0, 1, 0, 1 };
	struct rt_tensor in[2] = { T(BASE_DT_BOOL, 1, (int64_t[]){ 4 }, a),
	                           T(BASE_DT_BOOL, 1, (int64_t[]){ 4 }, b) };
	static const struct {
		const char *op;
		uint8_t want[4];
	} ops[] = { { "And", { 0, 0, 0, 1 } }, { "Or", { 0, 1, 1, 1 } }, { "Xor", { 0, 1, 1, 0 } } };
	for (size_t k = 0; k < 3; k++) {
		build(&h, ops[k].op, 7, 2, in, BASE_DT_BOOL);
		go(&h);
		assert_memory_equal(h.out.data, ops[k].want, 4);
		done(&h);
	}
	build(&h, "Not", 1, 1, in, BASE_DT_BOOL);
	go(&h);
	assert_memory_equal(h.out.data, ((uint8_t[]){ 1, 1, 0, 0 }), 4);
	done(&h);

	/* And of floats has no kernel */
	float f[1] = { 1 };
	struct rt_tensor in2[2] = { T(BASE_DT_FLOAT, 1, (int64_t[]){ 1 }, f),
	                            T(BASE_DT_FLOAT, 1, (int64_t[]){ 1 }, f) };
	build(&h, "And", 7, 2, in2, BASE_DT_BOOL);
	assert_int_equal(load(&h), STRATA_NOT_IMPLEMENTED);
	assert_non_null(strstr(h.err.msg, "float"));
	done(&h);
}

static void test_where(void **state)
{
	struct h h;
	uint8_t c[2] = { 1, 0 };
	int32_t xv[3] = { 1, 2, 3 }, yv = -1;
	/* [2,1] ? [1,3] : [] -> [2,3] */
	struct rt_tensor in[3] = { T(BASE_DT_BOOL, 2, (int64_t[]){ 2, 1 }, c),
	                           T(BASE_DT_INT32, 2, (int64_t[]){ 1, 3 }, xv),
	                           T(BASE_DT_INT32, 0, NULL, &yv) };
	build(&h, "Where", 16, 3, in, BASE_DT_INT32);
	go(&h);
	check_shape(&h.out, 2, (int64_t[]){ 2, 3 });
	int32_t want[6] = { 1, 2, 3, -1, -1, -1 };
	assert_memory_equal(h.out.data, want, sizeof want);
	done(&h);

	uint8_t c2[4] = { 1, 0, 0, 1 };
	const char *sx[4] = { "a", "b", "c", "d" }, *sy[1] = { "z" };
	struct rt_tensor in2[3] = { T(BASE_DT_BOOL, 1, (int64_t[]){ 4 }, c2),
	                            T(BASE_DT_STRING, 1, (int64_t[]){ 4 }, sx),
	                            T(BASE_DT_STRING, 1, (int64_t[]){ 1 }, sy) };
	build(&h, "Where", 16, 3, in2, BASE_DT_STRING);
	go(&h);
	char **s = h.out.data;
	assert_string_equal(s[0], "a");
	assert_string_equal(s[1], "z");
	assert_string_equal(s[2], "z");
	assert_string_equal(s[3], "d");
	done(&h);

	/* the condition must be bool */
	float fc[1] = { 1 };
	struct rt_tensor in3[3] = { T(BASE_DT_FLOAT, 1, (int64_t[]){ 1 }, fc),
	                            T(BASE_DT_INT32, 1, (int64_t[]){ 3 }, xv),
	                            T(BASE_DT_INT32, 0, NULL, &yv) };
	build(&h, "Where", 16, 3, in3, BASE_DT_INT32);
	assert_int_equal(load(&h), STRATA_INVALID_GRAPH);
	assert_non_null(strstr(h.err.msg, "bool"));
	done(&h);

	/* incompatible shapes fail at run time */
	uint8_t c3[2] = { 1, 0 };
	struct rt_tensor in4[3] = { T(BASE_DT_BOOL, 1, (int64_t[]){ 2 }, c3),
	                            T(BASE_DT_INT32, 1, (int64_t[]){ 3 }, xv),
	                            T(BASE_DT_INT32, 0, NULL, &yv) };
	build(&h, "Where", 16, 3, in4, BASE_DT_INT32);
	assert_int_equal(load(&h), 0);
	assert_int_equal(run(&h), STRATA_RUNTIME);
	assert_non_null(strstr(h.err.msg, "broadcast"));
	done(&h);
}

/* ---- unary ------------------------------------------------------------------------------------ */

static void unary_f(const char *op, int opset, const float *x, int n, float *y,
                    void (*attrs)(struct mb_node *))
{
	struct h h;
	struct rt_tensor in[1] = { T(BASE_DT_FLOAT, 1, (int64_t[]){ n }, (void *)x) };
	build(&h, op, opset, 1, in, BASE_DT_FLOAT);
	if (attrs)
		attrs(h.node);
	go(&h);
	memcpy(y, h.out.data, (size_t)n * sizeof *y);
	done(&h);
}

static void alpha_02(struct mb_node *n)
{
	mb_attr_float(n, "alpha", 0.2f);
}

static void shrink_soft(struct mb_node *n)
{
	mb_attr_float(n, "lambd", 1.0f);
	mb_attr_float(n, "bias", 1.0f);
}

static void approx_tanh(struct mb_node *n)
{
	mb_attr_string(n, "approximate", "tanh");
}

static void test_unary_math(void **state)
{
	const float x[7] = { -3.0f, -1.0f, -0.5f, 0.0f, 0.5f, 2.0f, 30.0f };
	float y[7], w[7];

	unary_f("Relu", 14, x, 7, y, NULL);
	for (int i = 0; i < 7; i++)
		w[i] = x[i] > 0 ? x[i] : 0;
	check_floats(y, w, 7, 0);

	unary_f("Sigmoid", 13, x, 7, y, NULL);
	for (int i = 0; i < 7; i++)
		w[i] = (float)(1 / (1 + exp(-(double)x[i])));
	check_floats(y, w, 7, 1e-6f);

	unary_f("Tanh", 13, x, 7, y, NULL);
	for (int i = 0; i < 7; i++)
		w[i] = tanhf(x[i]);
	check_floats(y, w, 7, 1e-6f);

	unary_f("Erf", 13, x, 7, y, NULL);
	for (int i = 0; i < 7; i++)
		w[i] = erff(x[i]);
	check_floats(y, w, 7, 1e-6f);

	unary_f("Exp", 13, x, 6, y, NULL);
	for (int i = 0; i < 6; i++)
		w[i] = expf(x[i]);
	check_floats(y, w, 6, 1e-6f);

	unary_f("LeakyRelu", 16, x, 7, y, alpha_02);
	for (int i = 0; i < 7; i++)
		w[i] = x[i] < 0 ? 0.2f * x[i] : x[i];
	check_floats(y, w, 7, 1e-7f);

	unary_f("LeakyRelu", 16, x, 7, y, NULL); /* default alpha 0.01 */
	check_floats(y, (float[]){ -0.03f, -0.01f, -0.005f, 0, 0.5f, 2, 30 }, 7, 1e-6f);

	unary_f("Softplus", 1, x, 7, y, NULL);
	for (int i = 0; i < 7; i++)
		w[i] = (float)log(1 + exp((double)x[i]));
	check_floats(y, w, 7, 1e-6f);

	unary_f("HardSigmoid", 6, x, 7, y, NULL);
	for (int i = 0; i < 7; i++)
		w[i] = fmaxf(0, fminf(1, 0.2f * x[i] + 0.5f));
	check_floats(y, w, 7, 1e-6f);

	unary_f("HardSwish", 14, x, 7, y, NULL);
	for (int i = 0; i < 7; i++)
		w[i] = x[i] * fmaxf(0, fminf(1, x[i] / 6 + 0.5f));
	check_floats(y, w, 7, 1e-6f);

	unary_f("Selu", 6, x, 7, y, NULL);
	for (int i = 0; i < 7; i++)
		w[i] = x[i] > 0 ? 1.0507009873554805f * x[i]
		                : 1.0507009873554805f * 1.6732632423543772f * (expf(x[i]) - 1);
	check_floats(y, w, 7, 1e-6f);

	unary_f("Elu", 6, x, 7, y, NULL);
	for (int i = 0; i < 7; i++)
		w[i] = x[i] < 0 ? expf(x[i]) - 1 : x[i];
	check_floats(y, w, 7, 1e-6f);

	unary_f("Gelu", 20, x, 7, y, NULL);
	for (int i = 0; i < 7; i++)
		w[i] = (float)(0.5 * x[i] * (1 + erf(x[i] / sqrt(2.0))));
	check_floats(y, w, 7, 1e-6f);

	unary_f("Gelu", 20, x, 7, y, approx_tanh);
	for (int i = 0; i < 7; i++)
		w[i] = (float)(0.5 * x[i] *
		               (1 + tanh(sqrt(2 / M_PI) * (x[i] + 0.044715 * pow(x[i], 3)))));
	check_floats(y, w, 7, 1e-5f);

	unary_f("Shrink", 9, x, 7, y, NULL); /* lambd 0.5, bias 0 */
	check_floats(y, (float[]){ -3, -1, 0, 0, 0, 2, 30 }, 7, 0);
	unary_f("Shrink", 9, x, 7, y, shrink_soft);
	check_floats(y, (float[]){ -2, 0, 0, 0, 0, 1, 29 }, 7, 0);

	unary_f("Sign", 13, x, 7, y, NULL);
	check_floats(y, (float[]){ -1, -1, -1, 0, 1, 1, 1 }, 7, 0);

	const float r[6] = { 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f };
	unary_f("Round", 11, r, 6, y, NULL);
	check_floats(y, (float[]){ 0, 2, 2, -0.f, -2, 2 }, 6, 0); /* half to even */

	unary_f("Floor", 13, r, 6, y, NULL);
	check_floats(y, (float[]){ 0, 1, 2, -1, -2, 2 }, 6, 0);

	unary_f("Reciprocal", 13, r, 3, y, NULL);
	check_floats(y, (float[]){ 2, 1 / 1.5f, 0.4f }, 3, 1e-7f);

	const float nanin[2] = { NAN, -1 };
	unary_f("Sqrt", 13, nanin, 2, y, NULL);
	assert_true(isnan(y[0]) && isnan(y[1]));
	unary_f("Relu", 14, nanin, 1, y, NULL);
	assert_true(isnan(y[0]));
	unary_f("HardSigmoid", 6, nanin, 1, y, NULL);
	assert_true(isnan(y[0]));
	unary_f("Sigmoid", 13, nanin, 1, y, NULL);
	assert_true(isnan(y[0]));
}

static void test_unary_int_and_bool_out(void **state)
{
	struct h h;
	int32_t v[4] = { -5, 0, 7, INT32_MIN };
	struct rt_tensor in[1] = { T(BASE_DT_INT32, 1, (int64_t[]){ 4 }, v) };
	build(&h, "Neg", 13, 1, in, BASE_DT_INT32);
	go(&h);
	assert_memory_equal(h.out.data, ((int32_t[]){ 5, 0, -7, INT32_MIN }), 16);
	done(&h);

	build(&h, "Abs", 13, 1, in, BASE_DT_INT32);
	go(&h);
	assert_memory_equal(h.out.data, ((int32_t[]){ 5, 0, 7, INT32_MIN }), 16);
	done(&h);

	build(&h, "Sign", 13, 1, in, BASE_DT_INT32);
	go(&h);
	assert_memory_equal(h.out.data, ((int32_t[]){ -1, 0, 1, -1 }), 16);
	done(&h);

	build(&h, "Relu", 14, 1, in, BASE_DT_INT32);
	go(&h);
	assert_memory_equal(h.out.data, ((int32_t[]){ 0, 0, 7, 0 }), 16);
	done(&h);

	/* Sqrt of integers has no kernel: the message names op, opset and type */
	build(&h, "Sqrt", 13, 1, in, BASE_DT_INT32);
	assert_int_equal(load(&h), STRATA_NOT_IMPLEMENTED);
	assert_non_null(strstr(h.err.msg, "Sqrt"));
	assert_non_null(strstr(h.err.msg, "13"));
	assert_non_null(strstr(h.err.msg, "int32"));
	done(&h);

	float f[5] = { 1, INFINITY, -INFINITY, NAN, 0 };
	struct rt_tensor in2[1] = { T(BASE_DT_FLOAT, 1, (int64_t[]){ 5 }, f) };
	build(&h, "IsNaN", 13, 1, in2, BASE_DT_BOOL);
	go(&h);
	assert_memory_equal(h.out.data, ((uint8_t[]){ 0, 0, 0, 1, 0 }), 5);
	done(&h);

	build(&h, "IsInf", 10, 1, in2, BASE_DT_BOOL);
	go(&h);
	assert_memory_equal(h.out.data, ((uint8_t[]){ 0, 1, 1, 0, 0 }), 5);
	done(&h);

	build(&h, "IsInf", 10, 1, in2, BASE_DT_BOOL);
	mb_attr_int(h.node, "detect_negative", 0);
	go(&h);
	assert_memory_equal(h.out.data, ((uint8_t[]){ 0, 1, 0, 0, 0 }), 5);
	done(&h);
}

/* ---- Clip -------------------------------------------------------------------------------------- */

static void test_clip(void **state)
{
	struct h h;
	float x[5] = { -3, -1, 0, 2, NAN }, lo = -1.5f, hi = 1.0f;
	struct rt_tensor in[3] = { T(BASE_DT_FLOAT, 1, (int64_t[]){ 5 }, x),
	                           T(BASE_DT_FLOAT, 0, NULL, &lo), T(BASE_DT_FLOAT, 0, NULL, &hi) };

	build(&h, "Clip", 13, 1, in, BASE_DT_FLOAT); /* no bounds: a copy */
	go(&h);
	check_floats(h.out.data, x, 5, 0);
	done(&h);

	build(&h, "Clip", 13, 3, in, BASE_DT_FLOAT);
	go(&h);
	check_floats(h.out.data, (float[]){ -1.5f, -1, 0, 1, NAN }, 5, 0);
	done(&h);

	/* max only, min omitted */
	struct rt_tensor in2[3] = { in[0], T(0, 0, NULL, NULL), in[2] };
	build(&h, "Clip", 13, 3, in2, BASE_DT_FLOAT);
	go(&h);
	check_floats(h.out.data, (float[]){ -3, -1, 0, 1, NAN }, 5, 0);
	done(&h);

	/* min > max: everything becomes max */
	float lo2 = 5;
	struct rt_tensor in3[3] = { in[0], T(BASE_DT_FLOAT, 0, NULL, &lo2), in[2] };
	build(&h, "Clip", 13, 3, in3, BASE_DT_FLOAT);
	go(&h);
	check_floats(h.out.data, (float[]){ 1, 1, 1, 1, NAN }, 4, 0);
	done(&h);

	/* integers */
	int64_t iv[4] = { -100, 5, 50, INT64_MAX }, ilo = 0, ihi = 10;
	struct rt_tensor in4[3] = { T(BASE_DT_INT64, 1, (int64_t[]){ 4 }, iv),
	                            T(BASE_DT_INT64, 0, NULL, &ilo), T(BASE_DT_INT64, 0, NULL, &ihi) };
	build(&h, "Clip", 13, 3, in4, BASE_DT_INT64);
	go(&h);
	assert_memory_equal(h.out.data, ((int64_t[]){ 0, 5, 10, 10 }), 32);
	done(&h);

	/* opset 6: bounds are attributes */
	build(&h, "Clip", 6, 1, in, BASE_DT_FLOAT);
	mb_attr_float(h.node, "min", -0.5f);
	go(&h);
	check_floats(h.out.data, (float[]){ -0.5f, -0.5f, 0, 2, NAN }, 5, 0);
	done(&h);

	/* a bound of another type is a graph error */
	double dlo = 0;
	struct rt_tensor in5[2] = { in[0], T(BASE_DT_DOUBLE, 0, NULL, &dlo) };
	build(&h, "Clip", 13, 2, in5, BASE_DT_FLOAT);
	assert_int_equal(load(&h), STRATA_INVALID_GRAPH);
	done(&h);

	/* a bound that is not a scalar fails at run time */
	float two[2] = { 0, 1 };
	struct rt_tensor in6[2] = { in[0], T(BASE_DT_FLOAT, 1, (int64_t[]){ 2 }, two) };
	build(&h, "Clip", 13, 2, in6, BASE_DT_FLOAT);
	assert_int_equal(load(&h), 0);
	assert_int_equal(run(&h), STRATA_RUNTIME);
	assert_non_null(strstr(h.err.msg, "min"));
	done(&h);
}

/* ---- Cast ------------------------------------------------------------------------------------------ */

static void cast_to(struct h *h, int from, int to, int n, void *data)
{
	struct rt_tensor in[1] = { T(from, 1, (int64_t[]){ n }, data) };
	build(h, "Cast", 19, 1, in, to);
	mb_attr_int(h->node, "to", to);
	go(h);
	assert_int_equal(h->out.dtype, to);
}

static void test_cast_bf16_rounding(void **state)
{
	struct h h;
	float x[5] = {
		bitsf(0x3F808000), /* exactly halfway, even below: rounds down */
		bitsf(0x3F818000), /* halfway, odd below: rounds up */
		bitsf(0x3F808001), /* just above halfway: up */
		1.0f,
		NAN,
	};
	cast_to(&h, BASE_DT_FLOAT, BASE_DT_BFLOAT16, 5, x);
	uint16_t *y = h.out.data;
	assert_int_equal(y[0], 0x3F80);
	assert_int_equal(y[1], 0x3F82);
	assert_int_equal(y[2], 0x3F81);
	assert_int_equal(y[3], 0x3F80);
	assert_true((y[4] & 0x7F80) == 0x7F80 && (y[4] & 0x7F) != 0);
	done(&h);

	uint16_t b[2] = { 0x3FC0, 0xC000 }; /* 1.5, -2 */
	cast_to(&h, BASE_DT_BFLOAT16, BASE_DT_FLOAT, 2, b);
	check_floats(h.out.data, (float[]){ 1.5f, -2 }, 2, 0);
	done(&h);

	float hx[2] = { 0.333333f, 65504.0f };
	cast_to(&h, BASE_DT_FLOAT, BASE_DT_FLOAT16, 2, hx);
	uint16_t *hy = h.out.data;
	assert_int_equal(hy[0], 0x3555);
	assert_int_equal(hy[1], 0x7BFF);
	done(&h);
	(void)fbits;
}

static void test_cast_numeric(void **state)
{
	struct h h;
	float x[6] = { 2.7f, -2.7f, 0.5f, -0.0f, NAN, 3e9f };
	cast_to(&h, BASE_DT_FLOAT, BASE_DT_INT32, 6, x);
	int32_t *y = h.out.data;
	assert_int_equal(y[0], 2);
	assert_int_equal(y[1], -2); /* truncation toward zero */
	assert_int_equal(y[2], 0);
	assert_int_equal(y[3], 0);
	assert_int_equal(y[4], INT32_MIN); /* what the hardware gives, without a trap */
	assert_int_equal(y[5], INT32_MIN);
	done(&h);

	int64_t big[3] = { INT64_MAX, -1, 0 };
	cast_to(&h, BASE_DT_INT64, BASE_DT_BOOL, 3, big);
	assert_memory_equal(h.out.data, ((uint8_t[]){ 1, 1, 0 }), 3);
	done(&h);

	cast_to(&h, BASE_DT_INT64, BASE_DT_UINT8, 3, big);
	assert_memory_equal(h.out.data, ((uint8_t[]){ 255, 255, 0 }), 3);
	done(&h);

	cast_to(&h, BASE_DT_INT64, BASE_DT_DOUBLE, 3, big);
	assert_true(((double *)h.out.data)[0] == 9223372036854775807.0);
	assert_true(((double *)h.out.data)[1] == -1.0);
	done(&h);

	uint8_t bl[2] = { 1, 0 };
	cast_to(&h, BASE_DT_BOOL, BASE_DT_FLOAT, 2, bl);
	check_floats(h.out.data, (float[]){ 1, 0 }, 2, 0);
	done(&h);

	/* a missing 'to' is a graph error */
	struct rt_tensor in[1] = { T(BASE_DT_FLOAT, 1, (int64_t[]){ 6 }, x) };
	build(&h, "Cast", 13, 1, in, BASE_DT_INT32);
	assert_int_equal(load(&h), STRATA_INVALID_GRAPH);
	assert_non_null(strstr(h.err.msg, "to"));
	done(&h);
}

static void test_cast_strings(void **state)
{
	struct h h;
	const char *s[6] = { "3.5", "1e-5", "INF", "-inf", "NaN", " 42" };
	cast_to(&h, BASE_DT_STRING, BASE_DT_FLOAT, 6, s);
	float *y = h.out.data;
	assert_true(y[0] == 3.5f);
	assert_true(y[1] == 1e-5f);
	assert_true(isinf(y[2]) && y[2] > 0);
	assert_true(isinf(y[3]) && y[3] < 0);
	assert_true(isnan(y[4]));
	assert_true(y[5] == 42.0f);
	done(&h);

	const char *si[3] = { "9007199254740993", "-12", "7" };
	cast_to(&h, BASE_DT_STRING, BASE_DT_INT64, 3, si);
	int64_t *iy = h.out.data;
	assert_true(iy[0] == 9007199254740993LL); /* exact, not through double */
	assert_int_equal(iy[1], -12);
	done(&h);

	const char *bad[2] = { "1.0", "pear" };
	struct rt_tensor in[1] = { T(BASE_DT_STRING, 1, (int64_t[]){ 2 }, bad) };
	build(&h, "Cast", 13, 1, in, BASE_DT_FLOAT);
	mb_attr_int(h.node, "to", BASE_DT_FLOAT);
	assert_int_equal(load(&h), 0);
	assert_int_equal(run(&h), STRATA_RUNTIME);
	assert_non_null(strstr(h.err.msg, "pear"));
	done(&h);

	/* numbers to strings: the shortest text that reads back exactly */
	float f[3] = { 1.5f, 100.0f, -0.25f };
	cast_to(&h, BASE_DT_FLOAT, BASE_DT_STRING, 3, f);
	char **sy = h.out.data;
	assert_string_equal(sy[0], "1.5");
	assert_string_equal(sy[1], "100.0");
	assert_string_equal(sy[2], "-0.25");
	done(&h);
}

static void test_castlike(void **state)
{
	struct h h;
	double d[3] = { 1.9, -1.9, 300.0 };
	int16_t like[1] = { 0 };
	struct rt_tensor in[2] = { T(BASE_DT_DOUBLE, 1, (int64_t[]){ 3 }, d),
	                           T(BASE_DT_INT16, 1, (int64_t[]){ 1 }, like) };
	build(&h, "CastLike", 15, 2, in, BASE_DT_INT16);
	go(&h);
	assert_int_equal(h.out.dtype, BASE_DT_INT16);
	assert_memory_equal(h.out.data, ((int16_t[]){ 1, -1, 300 }), 6);
	done(&h);
}

/* ---- half types ----------------------------------------------------------------------------------- */

static void test_float16_add(void **state)
{
	struct h h;
	uint16_t a[3] = { 0x3C00, 0x4000, 0xBC00 }; /* 1, 2, -1 */
	uint16_t b[1] = { 0x3800 };                 /* 0.5 */
	struct rt_tensor in[2] = { T(BASE_DT_FLOAT16, 1, (int64_t[]){ 3 }, a),
	                           T(BASE_DT_FLOAT16, 1, (int64_t[]){ 1 }, b) };
	build(&h, "Add", 14, 2, in, BASE_DT_FLOAT16);
	go(&h);
	assert_memory_equal(h.out.data, ((uint16_t[]){ 0x3E00, 0x4100, 0xB800 }), 6);
	done(&h);

	build(&h, "Less", 13, 2, in, BASE_DT_BOOL);
	go(&h);
	assert_memory_equal(h.out.data, ((uint8_t[]){ 0, 0, 1 }), 3);
	done(&h);

	uint16_t bf[2] = { 0xC000, 0x3F80 }; /* -2, 1 */
	struct rt_tensor in2[1] = { T(BASE_DT_BFLOAT16, 1, (int64_t[]){ 2 }, bf) };
	build(&h, "Relu", 14, 1, in2, BASE_DT_BFLOAT16);
	go(&h);
	assert_memory_equal(h.out.data, ((uint16_t[]){ 0, 0x3F80 }), 4);
	done(&h);
}

/* ---- errors ------------------------------------------------------------------------------------------ */

static void test_type_mismatch(void **state)
{
	struct h h;
	float a[1] = { 1 };
	int64_t b[1] = { 1 };
	struct rt_tensor in[2] = { T(BASE_DT_FLOAT, 1, (int64_t[]){ 1 }, a),
	                           T(BASE_DT_INT64, 1, (int64_t[]){ 1 }, b) };
	build(&h, "Add", 14, 2, in, BASE_DT_FLOAT);
	assert_int_equal(load(&h), STRATA_INVALID_GRAPH);
	assert_non_null(strstr(h.err.msg, "float"));
	assert_non_null(strstr(h.err.msg, "int64"));
	done(&h);

	const char *s[1] = { "x" };
	struct rt_tensor in2[2] = { T(BASE_DT_STRING, 1, (int64_t[]){ 1 }, s),
	                            T(BASE_DT_STRING, 1, (int64_t[]){ 1 }, s) };
	build(&h, "Add", 14, 2, in2, BASE_DT_STRING);
	assert_int_equal(load(&h), STRATA_NOT_IMPLEMENTED);
	assert_non_null(strstr(h.err.msg, "Add"));
	assert_non_null(strstr(h.err.msg, "string"));
	done(&h);
}

static void test_bad_broadcast(void **state)
{
	struct h h;
	float a[6] = { 0 }, b[4] = { 0 };
	struct rt_tensor in[2] = { T(BASE_DT_FLOAT, 2, (int64_t[]){ 2, 3 }, a),
	                           T(BASE_DT_FLOAT, 1, (int64_t[]){ 4 }, b) };
	build(&h, "Mul", 14, 2, in, BASE_DT_FLOAT);
	assert_int_equal(load(&h), 0);
	assert_int_equal(run(&h), STRATA_RUNTIME);
	assert_non_null(strstr(h.err.msg, "[2,3]"));
	assert_non_null(strstr(h.err.msg, "[4]"));
	done(&h);

	build(&h, "Sum", 13, 2, in, BASE_DT_FLOAT);
	assert_int_equal(load(&h), 0);
	assert_int_equal(run(&h), STRATA_RUNTIME);
	done(&h);
}

static void test_bitwise(void **state)
{
	struct h h;
	uint8_t a[3] = { 0xF0, 1, 0x81 }, b[3] = { 0x3C, 9, 1 };
	struct rt_tensor in[2] = { T(BASE_DT_UINT8, 1, (int64_t[]){ 3 }, a),
	                           T(BASE_DT_UINT8, 1, (int64_t[]){ 3 }, b) };
	build(&h, "BitShift", 11, 2, in, BASE_DT_UINT8);
	mb_attr_string(h.node, "direction", "LEFT");
	go(&h);
	/* shifting by the width or more gives 0 */
	assert_memory_equal(h.out.data, ((uint8_t[]){ 0, 0, 0x02 }), 3);
	done(&h);

	build(&h, "BitwiseXor", 18, 2, in, BASE_DT_UINT8);
	go(&h);
	assert_memory_equal(h.out.data, ((uint8_t[]){ 0xCC, 8, 0x80 }), 3);
	done(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_bias_row),
		cmocka_unit_test(test_mul_outer),
		cmocka_unit_test(test_scalar_both_sides),
		cmocka_unit_test(test_broadcast_sweep),
		cmocka_unit_test(test_short_bias_rows),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_legacy_axis),
		cmocka_unit_test(test_int_div),
		cmocka_unit_test(test_int_wrap),
		cmocka_unit_test(test_mod),
		cmocka_unit_test(test_pow_mixed),
		cmocka_unit_test(test_variadic),
		cmocka_unit_test(test_compare),
		cmocka_unit_test(test_logic),
		cmocka_unit_test(test_where),
		cmocka_unit_test(test_unary_math),
		cmocka_unit_test(test_unary_int_and_bool_out),
		cmocka_unit_test(test_clip),
		cmocka_unit_test(test_cast_bf16_rounding),
		cmocka_unit_test(test_cast_numeric),
		cmocka_unit_test(test_cast_strings),
		cmocka_unit_test(test_castlike),
		cmocka_unit_test(test_float16_add),
		cmocka_unit_test(test_type_mismatch),
		cmocka_unit_test(test_bad_broadcast),
		cmocka_unit_test(test_bitwise),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
