/*
 * test_rank_eval.c: the rank evaluation back end: compiling profiles,
 * running the VM over documents held in test arrays, tensor functions,
 * closeness/distance, ONNX models per document and batched, and the errors
 * with their file:line:col.  Every expected value is computed here
 * independently of rank/.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../rank/rank_eval.h"
#include "apptest.h"
#include "modelbuild.h"
#include "runwrap.h"

/* ---- the fake document store --------------------------------------------- */
#define NDOCS 5
static double price[NDOCS] = { 1.5, 7.0, 3.0, 10.0, 0.25 };
static int32_t count_[NDOCS] = { 1, 2, 3, 4, 5 };
static float emb[NDOCS][4] = {
	{ 1, 2, 3, 4 }, { 0.5f, -1, 2, 0 }, { 3, 3, 3, 3 }, { -2, 1, 0, 1 }, { 0.1f, 0.2f, 0.3f, 0.4f },
};
static int has_emb[NDOCS] = { 1, 1, 1, 1, 0 }; /* the last document has no embedding */

struct fake {
	const struct rank_schema *s;
};

static const void *fake_attr(void *ud, int field, uint32_t lid)
{
	struct fake *f = ud;
	const char *name = rank_schema_field(f->s, field)->name;
	if (strcmp(name, "price") == 0)
		return &price[lid];
	if (strcmp(name, "count") == 0)
		return &count_[lid];
	if (strncmp(name, "emb", 3) == 0)
		return has_emb[lid] ? emb[lid] : NULL;
	return NULL;
}

static const float qv[4] = { 0.5f, -0.25f, 1.0f, 2.0f };
static const double qd[4] = { 0.5, -0.25, 1.0, 2.0 };
static const float wv[4] = { 0.1f, 0.2f, -0.3f, 0.4f };

/* ---- application folders ------------------------------------------------- */

/* x * w with w = wv, input shape [batch,4] (batch != 0) or [4]. */
static void save_model(const char *path, int batch)
{
	struct mb_model *m = mb_new("mul", 17);
	const char *names[2] = { "batch", "" };
	if (batch) {
		mb_input(m, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, names);
		mb_output(m, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, names);
	} else {
		mb_input(m, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 4 }, NULL);
		mb_output(m, "y", BASE_DT_FLOAT, 1, (int64_t[]){ 4 }, NULL);
	}
	mb_init(m, "w", BASE_DT_FLOAT, 1, (int64_t[]){ 4 }, wv);
	mb_node(m, "Mul", "x,w", "y");
	assert_int_equal(mb_save(m, path), 0);
	mb_free(m);
}

static char *make_app(const char *sd)
{
	char *dir = apptest_new("strata_rank_eval");
	char sub[512];
	snprintf(sub, sizeof sub, "%s/models/batch.onnx", dir);
	save_model(sub, 1);
	snprintf(sub, sizeof sub, "%s/models/single.onnx", dir);
	save_model(sub, 0);
	apptest_write(dir, "schemas/x.sd", sd);
	return dir;
}

#define FIELDS \
	"  document doc {\n" \
	"    field price type double { indexing: attribute }\n" \
	"    field count type int { indexing: attribute }\n" \
	"    field title type string { indexing: summary }\n" \
	"    field emb type tensor<float>(x[4]) { indexing: attribute }\n" \
	"    field emba type tensor<float>(x[4]) {\n" \
	"      indexing: attribute\n" \
	"      attribute { distance-metric: angular }\n" \
	"    }\n" \
	"    field embd type tensor<float>(x[4]) {\n" \
	"      indexing: attribute\n" \
	"      attribute { distance-metric: dotproduct }\n" \
	"    }\n" \
	"    field embp type tensor<float>(x[4]) {\n" \
	"      indexing: attribute\n" \
	"      attribute { distance-metric: prenormalized-angular }\n" \
	"    }\n" \
	"  }\n"

static const char *main_sd =
	"schema doc {\n"
	FIELDS
	"  rank-profile base {\n"
	"    inputs {\n"
	"      query(w) double: 2\n"
	"      query(q) tensor<float>(x[4])\n"
	"      query(m) tensor<float>(x[4],y[2])\n"
	"      query(c) tensor(cat{})\n"
	"      query(mx) tensor<float>(p{},x[2])\n"
	"    }\n"
	"    function lin(a, b) {\n"
	"      expression: a * attribute(price) + b\n"
	"    }\n"
	"    function twice(v) {\n"
	"      expression: lin(v, 0) * 2\n"
	"    }\n"
	"    first-phase {\n"
	"      expression: lin(query(w), 1)\n"
	"    }\n"
	"  }\n"
	"  rank-profile child inherits base {\n"
	"    second-phase {\n"
	"      expression: firstPhase + twice(attribute(count))\n"
	"      rerank-count: 3\n"
	"    }\n"
	"    match-features: attribute(price) attribute(emb)\n"
	"  }\n"
	"  rank-profile batched inherits base {\n"
	"    onnx-model mb {\n"
	"      file: models/batch.onnx\n"
	"      input \"x\": attribute(emb)\n"
	"      output \"y\": out\n"
	"    }\n"
	"    first-phase {\n"
	"      expression: sum(onnx(mb).out)\n"
	"    }\n"
	"    second-phase {\n"
	"      expression: sum(onnx(mb).out)\n"
	"    }\n"
	"    match-features: onnx(mb).out\n"
	"  }\n"
	"  rank-profile tensors inherits base {\n"
	"    first-phase {\n"
	"      expression: (tensor(k{}):{a:1, b:2} * attribute(price)){k:b} + "
	"concat(query(q), tensor(x[1]):[attribute(count)], x)[4]\n"
	"    }\n"
	"  }\n"
	"  rank-profile single inherits base {\n"
	"    onnx-model ms {\n"
	"      file: models/single.onnx\n"
	"      input \"x\": attribute(emb)\n"
	"    }\n"
	"    first-phase {\n"
	"      expression: sum(onnx(ms))\n"
	"    }\n"
	"    second-phase {\n"
	"      expression: sum(onnx(ms).y)\n"
	"    }\n"
	"  }\n"
	"  rank-profile qmodel inherits base {\n"
	"    onnx-model mq {\n"
	"      file: models/batch.onnx\n"
	"      input \"x\": query(q)\n"
	"    }\n"
	"    second-phase {\n"
	"      expression: sum(onnx(mq)) + attribute(price)\n"
	"    }\n"
	"  }\n"
	"}\n";

struct world {
	char *dir;
	struct rank_app *app;
	const struct rank_schema *s;
	struct fake fake;
	struct rank_docs docs;
};

static int setup(void **state)
{
	struct world *w = calloc(1, sizeof *w);
	w->dir = make_app(main_sd);
	w->app = apptest_load(w->dir);
	w->s = rank_app_schema_find(w->app, "doc");
	assert_non_null(w->s);
	w->fake.s = w->s;
	w->docs.ud = &w->fake;
	w->docs.attr = fake_attr;
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;
	rank_app_free(w->app);
	apptest_remove(w->dir);
	free(w);
	return 0;
}

static struct rank_query *new_query(struct world *w, const char *profile)
{
	struct strata_error err = { 0 };
	const struct rank_profile *p = rank_profile_find(w->s, profile);
	assert_non_null(p);
	struct rank_query *q;
	assert_int_equal(rank_query_new(p, &q, &err), 0);
	assert_int_equal(rank_query_set_input(q, "q", qd, 4, &err), 0);
	double m[8];
	for (int i = 0; i < 8; i++)
		m[i] = i - 3;
	assert_int_equal(rank_query_set_input(q, "m", m, 8, &err), 0);
	return q;
}

/* Evaluate expression text against profile base for doc lid. */
static int eval_expr(struct world *w, struct rank_query *q, const char *text, uint32_t lid,
                     struct rank_val *v, const struct rank_type **t, struct strata_error *err)
{
	struct rank_profile *p = (struct rank_profile *)rank_profile_find(w->s, "base");
	return apptest_eval(p, q, &w->docs, text, lid, v, t, err);
}

static double num(struct world *w, struct rank_query *q, const char *text, uint32_t lid)
{
	struct rank_val v;
	const struct rank_type *t;
	struct strata_error err = { 0 };
	int rc = eval_expr(w, q, text, lid, &v, &t, &err);
	if (rc)
		fprintf(stderr, "%s: %s\n", text, err.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(t->rank, 0);
	return v.num;
}

static void cells(struct world *w, struct rank_query *q, const char *text, uint32_t lid,
                  double *out, size_t n)
{
	struct rank_val v;
	const struct rank_type *t;
	struct strata_error err = { 0 };
	int rc = eval_expr(w, q, text, lid, &v, &t, &err);
	if (rc)
		fprintf(stderr, "%s: %s\n", text, err.msg);
	assert_int_equal(rc, 0);
	size_t k = 1;
	for (int i = 0; i < t->rank; i++)
		k *= (size_t)t->dims[i];
	assert_int_equal(k, n);
	for (size_t i = 0; i < n; i++)
		out[i] = rank_cell(v.cell, v.cells, i);
}

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) < 1e-6 * (1 + fabs((double)(b))))

static void test_arithmetic(void **state)
{
	struct world *w = *state;
	struct rank_query *q = new_query(w, "base");
	for (uint32_t d = 0; d < NDOCS; d++) {
		double p = price[d];
		NEAR(num(w, q, "1 + 2 * attribute(price) - 6 / 3 * 2", d), 1 + 2 * p - 6.0 / 3 * 2);
		NEAR(num(w, q, "(1 + 2) * attribute(price)", d), 3 * p);
		NEAR(num(w, q, "-attribute(price) + attribute(count) % 2", d), -p + count_[d] % 2);
		NEAR(num(w, q, "if(attribute(price) > 5, 10, 20)", d), p > 5 ? 10 : 20);
		NEAR(num(w, q, "if(attribute(price) >= 3 && attribute(count) < 4, 1, 0)", d),
		     (p >= 3 && count_[d] < 4) ? 1 : 0);
	}
	NEAR(num(w, q, "exp(0.5) + log(2) + log10(100) + sqrt(attribute(price))", 1),
	     exp(0.5) + log(2) + 2 + sqrt(7.0));
	NEAR(num(w, q, "tanh(0.3) + sigmoid(0.1) + relu(-3) + relu(2)", 0),
	     tanh(0.3) + 1 / (1 + exp(-0.1)) + 2);
	NEAR(num(w, q, "pow(2, 3) + max(1, 4) + min(1, 4) + fabs(-2) + abs(-1)", 0), 8 + 4 + 1 + 2 + 1);
	NEAR(num(w, q, "floor(2.5) + ceil(2.5) + sin(1) + cos(1) + atan2(1, 2) + fmod(7, 3)", 0),
	     2 + 3 + sin(1) + cos(1) + atan2(1, 2) + 1);
	NEAR(num(w, q, "isNan(0) + query(w)", 0), 2.0); /* query(w) default 2 */
	rank_query_free(q);
}

static void test_tensor_functions(void **state)
{
	struct world *w = *state;
	struct rank_query *q = new_query(w, "base");
	double out[8];
	for (uint32_t d = 0; d < 4; d++) {
		const float *e = emb[d];
		double s = 0, dot = 0, sq = 0, mx = -1e300;
		for (int i = 0; i < 4; i++) {
			s += e[i];
			dot += e[i] * qd[i];
			sq += e[i] * e[i];
			if (e[i] > mx)
				mx = e[i];
		}
		NEAR(num(w, q, "sum(attribute(emb))", d), s);
		NEAR(num(w, q, "sum(attribute(emb) * query(q))", d), dot);    /* fused dot */
		NEAR(num(w, q, "sum(attribute(emb) * query(q) + 0)", d), dot); /* generic join */
		NEAR(num(w, q, "reduce(attribute(emb), max, x)", d), mx);
		NEAR(num(w, q, "reduce(attribute(emb), avg)", d), s / 4);
		NEAR(num(w, q, "reduce(attribute(emb), count, x)", d), 4);
		NEAR(num(w, q, "sum(map(attribute(emb), f(x)(x * x)))", d), sq);
		NEAR(num(w, q, "sum(join(attribute(emb), query(q), f(a,b)(a - b)))", d),
		     s - (qd[0] + qd[1] + qd[2] + qd[3]));
		cells(w, q, "l2_normalize(attribute(emb), x)", d, out, 4);
		for (int i = 0; i < 4; i++)
			NEAR(out[i], e[i] / sqrt(sq));
		/* matmul with query(m) (x[4],y[2], cells i - 3 row-major) */
		cells(w, q, "matmul(attribute(emb), query(m), x)", d, out, 2);
		for (int y = 0; y < 2; y++) {
			double r = 0;
			for (int x = 0; x < 4; x++)
				r += e[x] * (x * 2 + y - 3);
			NEAR(out[y], r);
		}
		cells(w, q, "softmax(attribute(emb), x)", d, out, 4);
		double z = 0;
		for (int i = 0; i < 4; i++)
			z += exp(e[i]);
		for (int i = 0; i < 4; i++)
			NEAR(out[i], exp(e[i]) / z);
		cells(w, q, "argmax(attribute(emb), x)", d, out, 4);
		for (int i = 0; i < 4; i++)
			NEAR(out[i], e[i] == mx ? 1.0 : 0.0);
		/* a dimension pair: join by name broadcasts emb along y */
		cells(w, q, "attribute(emb) * query(m)", d, out, 8);
		for (int x = 0; x < 4; x++)
			for (int y = 0; y < 2; y++)
				NEAR(out[x * 2 + y], e[x] * (x * 2 + y - 3));
		cells(w, q, "reduce(query(m), sum, x)", d, out, 2);
		NEAR(out[0], -3 - 1 + 1 + 3);
		NEAR(out[1], -2 + 0 + 2 + 4);
	}
	/* the document without emb reads as zeros */
	NEAR(num(w, q, "sum(attribute(emb) * query(q))", 4), 0.0);
	rank_query_free(q);
}

/* The value of query(m) at (x, y): rows of y[2]. */
static double mv(int x, int y)
{
	return 2 * x + y - 3;
}

/* concat, rename, in, ~= and the scalar functions; Vespa's cell types of
 * results; a map's lambda leaves the values below it on the stack alone. */
static void test_tensor_algebra(void **state)
{
	struct world *w = *state;
	struct rank_query *q = new_query(w, "base");
	double out[16];
	cells(w, q, "concat(query(q), query(q), x)", 0, out, 8);
	for (int i = 0; i < 8; i++)
		NEAR(out[i], qd[i % 4]);
	cells(w, q, "concat(query(m), query(m) * 10, y)", 0, out, 16);
	for (int x = 0; x < 4; x++)
		for (int y = 0; y < 4; y++)
			NEAR(out[x * 4 + y], y < 2 ? mv(x, y) : 10 * mv(x, y - 2));
	cells(w, q, "concat(query(q), 7, x)", 0, out, 5);
	NEAR(out[3], qd[3]);
	NEAR(out[4], 7);
	/* (x, y) swapped: the result is laid out x[2], y[4] */
	cells(w, q, "rename(query(m), (x, y), (y, x))", 0, out, 8);
	for (int x = 0; x < 2; x++)
		for (int y = 0; y < 4; y++)
			NEAR(out[x * 4 + y], mv(y, x));
	cells(w, q, "rename(query(m), y, a)", 0, out, 8);
	for (int x = 0; x < 4; x++)
		for (int a = 0; a < 2; a++)
			NEAR(out[a * 4 + x], mv(x, a));
	cells(w, q, "query(m) in [0, 1, -3]", 0, out, 8);
	for (int i = 0; i < 8; i++)
		NEAR(out[i], (i - 3 == 0 || i - 3 == 1 || i - 3 == -3) ? 1 : 0);
	NEAR(num(w, q, "(2 in [1, 2]) + (3 in [1, 2])", 0), 1);
	NEAR(num(w, q, "1 + sum(map(query(q), f(v)(v * 2)))", 0),
	     1 + 2 * (qd[0] + qd[1] + qd[2] + qd[3]));
	NEAR(num(w, q, "cosh(1) + sinh(1) + elu(-1) + elu(2) + ldexp(3, 2.7)", 0),
	     cosh(1) + sinh(1) + exp(-1) - 1 + 2 + 12);
	NEAR(num(w, q, "(1 ~= 1.0000000001) + 10 * (1 ~= 1.1)", 0), 1);
	NEAR(num(w, q, "round(2.5) + round(-1.4) + sign(-3) + sign(0) + square(3) + erf(0.5)", 0),
	     3 - 1 - 1 + 0 + 9 + erf(0.5));
	/* -3 is 0b11111101 as int8 */
	NEAR(num(w, q, "bit(-3, 0) + 2 * bit(-3, 1) + 4 * bit(-3, 7) + 8 * bit(-3, 8)", 0), 1 + 4);
	NEAR(num(w, q, "hamming(-3, 3) + 10 * hamming(5, 5)", 0), 7);

	struct rank_val v;
	const struct rank_type *t;
	struct strata_error err = { 0 };
	assert_int_equal(eval_expr(w, q, "map(query(q), f(v)(v + 1))", 0, &v, &t, &err), 0);
	assert_int_equal(t->cell, BASE_DT_FLOAT);
	assert_int_equal(eval_expr(w, q, "reduce(query(m), max, y) * 2", 0, &v, &t, &err), 0);
	assert_int_equal(t->cell, BASE_DT_FLOAT);
	assert_int_equal(eval_expr(w, q, "query(m) + attribute(price)", 0, &v, &t, &err), 0);
	assert_int_equal(t->cell, BASE_DT_FLOAT);
	assert_int_equal(eval_expr(w, q, "sum(query(q))", 0, &v, &t, &err), 0);
	assert_int_equal(t->cell, BASE_DT_DOUBLE);

	assert_int_equal(eval_expr(w, q, "concat(query(m), concat(query(q), query(q), x), y)", 0,
	                           &v, &t, &err), STRATA_TYPE);
	assert_string_equal(err.msg, "expr:1:1: dimension 'x' differs in size: "
	                             "tensor<float>(x[4],y[1]) and tensor<float>(x[8])");
	assert_int_equal(eval_expr(w, q, "rename(query(m), (x, y), z)", 0, &v, &t, &err),
	                 STRATA_TYPE);
	assert_string_equal(err.msg, "expr:1:1: rename() of 2 dimensions to 1");
	assert_int_equal(eval_expr(w, q, "rename(query(m), x, y)", 0, &v, &t, &err), STRATA_TYPE);
	assert_string_equal(err.msg, "expr:1:1: rename() makes two dimensions 'y'");
	assert_int_equal(eval_expr(w, q, "rename(query(m), z, y)", 0, &v, &t, &err), STRATA_TYPE);
	assert_string_equal(err.msg, "expr:1:18: tensor<float>(x[4],y[2]) has no dimension 'z'");
	rank_query_free(q);
}

/* Tensor literals (every form), generators, and mapped and mixed tensors
 * through map, join and reduce, with the errors of literals. */
/* Query inputs with mapped dimensions: empty until given, then the blocks
 * given; every wrong call is refused and leaves the value as it was. */
static void test_mapped_inputs(void **state)
{
	struct world *w = *state;
	struct strata_error err = { 0 };
	struct rank_val v;
	struct rank_query *q = new_query(w, "base");
	assert_int_equal(eval_expr(w, q, "reduce(query(c), count) + reduce(query(mx), sum)", 0, &v,
	                           NULL, &err), 0);
	assert_true(v.num == 0.0);

	const char *cl[] = { "a", "b" };
	const double cc[] = { 2, 3 };
	assert_int_equal(rank_query_set_input_sparse(q, "c", 2, cl, cc, &err), 0);
	const char *ml[] = { "u", "v" };
	const double mc[] = { 1, 2, 3, 4 };
	assert_int_equal(rank_query_set_input_sparse(q, "mx", 2, ml, mc, &err), 0);
	assert_int_equal(eval_expr(w, q, "reduce(query(c), sum) * 10 + query(c){cat:b}", 0, &v, NULL,
	                           &err), 0);
	assert_true(v.num == 53.0);
	assert_int_equal(eval_expr(w, q, "query(mx){p:v,x:1} * 100 + reduce(query(mx), sum)", 0, &v,
	                           NULL, &err), 0);
	assert_true(v.num == 410.0);

	const char *dup[] = { "a", "a" };
	assert_int_equal(rank_query_set_input_sparse(q, "c", 2, dup, cc, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "query(c): the address with label 'a' is given twice"));
	assert_int_equal(rank_query_set_input_sparse(q, "q", 1, cl, cc, &err), STRATA_INVALID_ARGUMENT);
	assert_int_equal(rank_query_set_input_sparse(q, "zz", 1, cl, cc, &err), STRATA_NOT_FOUND);
	assert_int_equal(rank_query_set_input(q, "c", cc, 1, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "mapped dimensions"));
	assert_int_equal(eval_expr(w, q, "reduce(query(c), sum)", 0, &v, NULL, &err), 0);
	assert_true(v.num == 5.0);

	/* A query taken back from the pool starts empty again. */
	const struct rank_profile *p = rank_profile_find(w->s, "base");
	assert_int_equal(rank_profile_input(p, rank_profile_input_index(p, "c"))->dims[0], -1);
	rank_query_free(q);
	q = new_query(w, "base");
	assert_int_equal(eval_expr(w, q, "reduce(query(c), count)", 0, &v, NULL, &err), 0);
	assert_true(v.num == 0.0);
	rank_query_free(q);
}

static void test_tensor_literals(void **state)
{
	struct world *w = *state;
	struct rank_query *q = new_query(w, "base");
	double out[16];
	NEAR(num(w, q, "sum(tensor(x[3]):[1, 2, -3])", 0), 0);
	cells(w, q, "tensor<float>(x[2],y[2]):[[1, 2], [3, 4]] * 2", 0, out, 4);
	for (int i = 0; i < 4; i++)
		NEAR(out[i], 2 * (i + 1));
	cells(w, q, "tensor(x[2],y[2]):{{x:1,y:0}:5, {y:1,x:0}:7}", 0, out, 4);
	NEAR(out[0], 0);
	NEAR(out[1], 7);
	NEAR(out[2], 5);
	NEAR(out[3], 0);
	cells(w, q, "tensor(x[3],y[2])(x * 10 + y)", 0, out, 6);
	for (int i = 0; i < 6; i++)
		NEAR(out[i], (i / 2) * 10 + i % 2);
	cells(w, q, "tensor(x[4])(query(q){x:x} * 2 + attribute(price))", 1, out, 4);
	for (int i = 0; i < 4; i++)
		NEAR(out[i], qd[i] * 2 + price[1]);
	NEAR(num(w, q, "reduce(tensor(k{}):{a:1, b:2, \"c d\":4}, sum)", 0), 7);
	NEAR(num(w, q, "reduce(tensor(k{}):{a:1, b:2}, count)", 0), 2);
	NEAR(num(w, q, "reduce(tensor(k{}):{}, max)", 0), 0);
	NEAR(num(w, q, "reduce(tensor(k{},x[2]):{a:[1, 2], b:[3, 5]}, avg)", 0), 11.0 / 4);
	cells(w, q, "reduce(tensor(k{},x[2]):{a:[1, 2], b:[3, 5]}, sum, k)", 0, out, 2);
	NEAR(out[0], 4);
	NEAR(out[1], 7);
	/* joined on k: only b is in both */
	NEAR(num(w, q, "sum(tensor(k{}):{a:1, b:2} * tensor(k{}):{b:10, c:5})", 0), 20);
	/* joins of larger operands: a, g, h and i are in both */
	NEAR(num(w, q, "sum(tensor(k{}):{a:1, b:2, c:3, d:4, e:5, f:6, g:7, h:8, i:9} * "
	               "tensor(k{}):{i:1, h:10, g:100, z:1000, y:0, x:0, w:0, v:0, a:10000})", 0),
	     10789);
	static const char *const kj =
		"tensor(k{},j{}):{{k:a,j:p}:1, {k:a,j:q}:2, {k:b,j:p}:3, {k:b,j:q}:4, "
		"{k:c,j:p}:5, {k:c,j:q}:6, {k:d,j:p}:7, {k:d,j:q}:8}";
	static const char *const kk =
		"tensor(k{}):{a:10, b:100, c:1000, d:10000, e:1, f:1, g:1, h:1}";
	char both[512];
	snprintf(both, sizeof both, "sum(%s * %s)", kj, kk);
	NEAR(num(w, q, both, 0), 161730);
	snprintf(both, sizeof both, "sum(%s * %s)", kk, kj);
	NEAR(num(w, q, both, 0), 161730);
	snprintf(both, sizeof both, "(%s * %s){k:c, j:q}", kk, kj);
	NEAR(num(w, q, both, 0), 6000);
	snprintf(both, sizeof both, "reduce(%s * %s, count)", kj, kk);
	NEAR(num(w, q, both, 0), 8);
	NEAR(num(w, q, "sum(tensor(k{}):{a:1, b:2} * query(q))", 0),
	     3 * (qd[0] + qd[1] + qd[2] + qd[3]));
	NEAR(num(w, q, "sum(map(tensor(k{}):{a:1, b:-2}, f(v)(v * v)))", 0), 5);
	NEAR(num(w, q, "sum(join(tensor(k{}):{a:1}, tensor(j{}):{x:2, y:3}, f(s, t)(s - t)))", 0),
	     -3);
	NEAR(num(w, q, "reduce(exp(tensor(k{}):{a:0, b:0}), sum)", 0), 2);

	NEAR(num(w, q, "sum(merge(tensor(k{}):{a:1, b:2}, tensor(k{}):{b:10, c:5}, f(x, y)(x + y)))",
	         0), 18);
	NEAR(num(w, q, "reduce(merge(tensor(k{},x[2]):{a:[1, 2]}, "
	               "tensor(k{},x[2]):{a:[10, 20], b:[3, 4]}, f(x, y)(y - x)), max)", 0), 18);
	NEAR(num(w, q, "sum(merge(tensor(k{},x[2]):{a:[1, 2]}, "
	               "tensor(k{},x[2]):{a:[10, 20], b:[3, 4]}, f(x, y)(y - x)))", 0), 34);
	NEAR(num(w, q, "sum(merge(query(q), query(q), f(x, y)(x * y)))", 0),
	     qd[0] * qd[0] + qd[1] * qd[1] + qd[2] * qd[2] + qd[3] * qd[3]);
	cells(w, q, "cell_cast(tensor(x[3]):[0.1, 1.7, -300], float)", 0, out, 3);
	assert_true(out[0] == (double)0.1f);
	cells(w, q, "cell_cast(tensor(x[3]):[0.1, 1.7, -300], int8)", 0, out, 3);
	NEAR(out[1], 1);
	NEAR(out[2], -128);
	cells(w, q, "cell_cast(tensor(x[1]):[1.00390625], bfloat16)", 0, out, 1);
	NEAR(out[0], 1.0);

	/* distances, similarity, l1_normalize */
	{
		double ed = 0, ab = 0, aa = 0, bb = 0, s1 = 0;
		for (int i = 0; i < 4; i++) {
			double x = emb[1][i], y = qd[i];
			ed += (x - y) * (x - y);
			ab += x * y;
			aa += x * x;
			bb += y * y;
			s1 += y;
		}
		NEAR(num(w, q, "euclidean_distance(attribute(emb), query(q), x)", 1), sqrt(ed));
		NEAR(num(w, q, "cosine_similarity(attribute(emb), query(q), x)", 1), ab / sqrt(aa * bb));
		cells(w, q, "l1_normalize(query(q), x)", 0, out, 4);
		NEAR(out[2], qd[2] / s1);
		NEAR(num(w, q, "sum(cosine_similarity(tensor(k{},x[2]):{a:[1, 0], b:[0, 2]}, "
		               "tensor(x[2]):[3, 0], x))", 0), 1);
	}

	/* if() of a float and a double tensor: a double tensor */
	for (uint32_t d = 0; d < 2; d++)
		NEAR(num(w, q, "sum(if(attribute(price) > 5, query(q), "
		               "query(q) * 2 + tensor(x[4]):[0, 0, 0, 0]))", d),
		     (price[d] > 5 ? 1 : 2) * (qd[0] + qd[1] + qd[2] + qd[3]));

	/* concat and rename with mapped dimensions */
	NEAR(num(w, q, "sum(concat(tensor(k{},x[2]):{a:[1, 2], b:[3, 4]}, "
	               "tensor(k{},x[1]):{a:[9]}, x))", 0), 12);
	NEAR(num(w, q, "concat(tensor(k{},x[2]):{a:[1, 2], b:[3, 4]}, "
	               "tensor(k{},x[1]):{a:[9]}, x){k:a, x:2}", 0), 9);
	NEAR(num(w, q, "concat(tensor(k{}):{a:1, b:2}, tensor(k{}):{a:5}, y){k:a, y:1}", 0), 5);
	NEAR(num(w, q, "rename(tensor(k{},x[2]):{a:[1, 2]}, (k, x), (z, a)){z:a, a:1}", 0), 2);
	NEAR(num(w, q, "rename(tensor(k{}):{a:1}, k, j){j:a}", 0), 1);

	/* literal cells computed per document */
	NEAR(num(w, q, "sum(tensor(x[2]):[1, query(w)])", 0), 3);
	for (uint32_t d = 0; d < 2; d++)
		NEAR(num(w, q, "sum(tensor(k{}):{a:query(w), b:attribute(price) * 2, c:1})", d),
		     2 + 2 * price[d] + 1);
	cells(w, q, "map(query(q), f(v)(sum(tensor(x[2]):[v, -1 / 2])))", 0, out, 4);
	for (int i = 0; i < 4; i++)
		NEAR(out[i], qd[i] - 0.5);

	/* slices */
	NEAR(num(w, q, "query(m){x:1, y:0} + 10 * query(m){y:1, x:3}", 0), mv(1, 0) + 10 * mv(3, 1));
	cells(w, q, "query(m){x:1}", 0, out, 2);
	NEAR(out[0], mv(1, 0));
	NEAR(out[1], mv(1, 1));
	NEAR(num(w, q, "query(q)[2] + 10 * query(q)[attribute(count) - 1] + query(q){x:(1 + 2)}", 0),
	     qd[2] + 10 * qd[0] + qd[3]);
	NEAR(num(w, q, "query(q)[7] + query(q)[-1]", 0), 0);
	NEAR(num(w, q, "tensor(k{}):{a:1, b:2}{k:b} + 10 * tensor(k{}):{a:1}{k:c}", 0), 2);
	NEAR(num(w, q, "tensor(k{}):{a:1, b:2}{b} + tensor(k{}):{\"3\":5}{k:(1 + 2)}", 0), 7);
	cells(w, q, "tensor(k{},x[2]):{a:[1, 2], b:[3, 4]}{k:b}", 0, out, 2);
	NEAR(out[0], 3);
	NEAR(out[1], 4);
	NEAR(num(w, q, "sum(tensor(k{},x[2]):{a:[1, 2], b:[3, 4]}{x:1})", 0), 6);

	struct rank_val v;
	const struct rank_type *t;
	struct strata_error err = { 0 };
	assert_int_equal(eval_expr(w, q, "cell_cast(query(q), bfloat16)", 0, &v, &t, &err), 0);
	assert_int_equal(t->cell, BASE_DT_BFLOAT16);
	assert_int_equal(eval_expr(w, q, "cell_cast(query(q) * 2, double)", 0, &v, &t, &err), 0);
	assert_int_equal(t->cell, BASE_DT_DOUBLE);
	assert_int_equal(eval_expr(w, q, "tensor(k{}):{a:1} * 2", 0, &v, &t, &err), 0);
	assert_int_equal(t->rank, 1);
	assert_true(t->dims[0] == RANK_DIM_MAPPED);
	const struct rank_sparse *sp = v.cells;
	assert_int_equal(sp->nblocks, 1);
	assert_string_equal(sp->labels[0], "a");
	NEAR(sp->cells[0], 2);

	static const struct {
		const char *text;
		int code;
		const char *msg;
	} bad[] = {
		{ "tensor(x[2]):[1, 2, 3]", STRATA_TYPE,
		  "expr:1:1: tensor(x[2]) has 2 cells, the literal gives 3" },
		{ "tensor(x[2]):{{x:2}:1}", STRATA_TYPE,
		  "expr:1:1: index '2' of dimension 'x' is outside [0, 2)" },
		{ "tensor(x[2]):{{y:0}:1}", STRATA_TYPE, "expr:1:1: tensor(x[2]) has no dimension 'y'" },
		{ "tensor(x{}):{a:1, a:2}", STRATA_TYPE,
		  "expr:1:21: a cell of tensor(x{}) is given twice" },
		{ "tensor(x[2]):[1, query(q)]", STRATA_TYPE,
		  "expr:1:18: a tensor literal's cell must be a number" },
		{ "tensor(x{}):[1]", STRATA_TYPE,
		  "expr:1:1: tensor(x{}) has mapped dimensions: its cells need addresses, not a list" },
		{ "tensor(x{})(1)", STRATA_NOT_IMPLEMENTED,
		  "expr:1:1: tensor generators with mapped dimensions are not supported" },
		{ "tensor(x{}):{a:1} + query(q)", STRATA_TYPE,
		  "expr:1:19: dimension 'x' is mapped on one side, indexed on the other: "
		  "tensor(x{}) and tensor<float>(x[4])" },
		{ "merge(query(q), query(m), f(x, y)(x))", STRATA_TYPE,
		  "expr:1:1: merge() needs the same dimensions: tensor<float>(x[4]) and "
		  "tensor<float>(x[4],y[2])" },
		{ "cell_cast(query(q), half)", STRATA_TYPE,
		  "expr:1:21: unknown cell type 'half' (expected double, float, bfloat16 or int8)" },
		{ "query(q){y:1}", STRATA_TYPE, "expr:1:12: tensor<float>(x[4]) has no dimension 'y'" },
		{ "query(m)[1]", STRATA_TYPE,
		  "expr:1:10: tensor<float>(x[4],y[2]) has no single indexed dimension to address" },
		{ "query(q){x:a}", STRATA_TYPE, "expr:1:12: dimension 'x' is indexed: 'a' is no index" },
		{ "query(q){x:\"1e300\"}", STRATA_TYPE,
		  "expr:1:12: dimension 'x' is indexed: '1e300' is no index" },
		{ "query(q){x:1, x:2}", STRATA_TYPE, "expr:1:17: the slice names 'x' twice" },
		{ "concat(tensor(x{}):{a:1}, 1, x)", STRATA_NOT_IMPLEMENTED,
		  "expr:1:30: concat() along a mapped dimension ('x') is not supported" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&err, 0, sizeof err);
		int rc = eval_expr(w, q, bad[i].text, 0, &v, &t, &err);
		if (rc != bad[i].code || strcmp(err.msg, bad[i].msg) != 0)
			fail_msg("%s: got %d '%s'", bad[i].text, rc, err.msg);
	}

	/* every allocation of compiling and running a mixed expression may fail */
	long k, failures = 0;
	for (k = 1; k < 10000; k++) {
		memset(&err, 0, sizeof err);
		base_alloc_fail_after(k);
		int rc = eval_expr(w, q, "reduce(tensor(k{},x[2]):{a:[1,2]} * tensor(k{}):{a:3}, sum, k)",
		                   0, &v, &t, &err);
		base_alloc_fail_after(0);
		if (rc == 0)
			break;
		assert_int_equal(rc, STRATA_NOMEM);
		assert_non_null(strstr(err.msg, "out of memory: "));
		failures++;
	}
	assert_true(failures > 3);
	NEAR(rank_cell(v.cell, v.cells, 1), 6);
	rank_query_free(q);
}

static void test_closeness(void **state)
{
	struct world *w = *state;
	struct strata_error err = { 0 };
	struct rank_query *q = new_query(w, "base");
	/* no nearestNeighbor item: distance +inf, closeness 0 */
	assert_true(isinf(num(w, q, "distance(field, emb)", 0)));
	NEAR(num(w, q, "closeness(field, emb)", 0), 0.0);
	assert_int_equal(rank_query_set_nn(q, "emb", "q", &err), 0);
	assert_int_equal(rank_query_set_nn(q, "emba", "q", &err), 0);
	assert_int_equal(rank_query_set_nn(q, "embd", "q", &err), 0);
	assert_int_equal(rank_query_set_nn(q, "embp", "q", &err), 0);
	assert_int_equal(rank_query_set_nn(q, "price", "q", &err), STRATA_TYPE);
	assert_int_equal(rank_query_set_nn(q, "emb", "w", &err), STRATA_TYPE);
	assert_int_equal(rank_query_set_nn(q, "nope", "q", &err), STRATA_NOT_FOUND);
	for (uint32_t d = 0; d < 4; d++) {
		const float *e = emb[d];
		double sd = 0, dot = 0, ee = 0, qq = 0;
		for (int i = 0; i < 4; i++) {
			sd += (e[i] - qd[i]) * (e[i] - qd[i]);
			dot += e[i] * qd[i];
			ee += e[i] * e[i];
			qq += qd[i] * qd[i];
		}
		double eu = sqrt(sd), an = acos(dot / sqrt(ee * qq));
		NEAR(num(w, q, "distance(field, emb)", d), eu);
		NEAR(num(w, q, "closeness(field, emb)", d), 1 / (1 + eu));
		NEAR(num(w, q, "distance(field, emba)", d), an);
		NEAR(num(w, q, "closeness(field, emba)", d), 1 / (1 + an));
		NEAR(num(w, q, "distance(field, embd)", d), -dot);
		NEAR(num(w, q, "closeness(field, embd)", d), dot);
		NEAR(num(w, q, "distance(field, embp)", d), 1 - dot);
		NEAR(num(w, q, "closeness(field, embp)", d), 1 / (1 + (1 - dot)));
	}
	/* a document without the value */
	assert_true(isinf(num(w, q, "distance(field, emb)", 4)));
	NEAR(num(w, q, "closeness(field, emb)", 4), 0.0);
	rank_query_free(q);
}

static void test_phases_functions_inherits(void **state)
{
	struct world *w = *state;
	struct strata_error err = { 0 };
	struct rank_query *q = new_query(w, "child");
	const struct rank_profile *p = rank_profile_find(w->s, "child");
	assert_int_equal(rank_profile_rerank_count(p), 3);
	assert_true(rank_profile_has_second_phase(p));
	assert_false(rank_profile_has_second_phase(rank_profile_find(w->s, "base")));
	uint32_t lids[NDOCS] = { 0, 1, 2, 3, 4 };
	double s1[NDOCS], s2[NDOCS];
	/* inherited first phase lin(query(w), 1) with query(w) defaulting to 2 */
	assert_int_equal(rank_query_first_phase(q, &w->docs, lids, NDOCS, s1, &err), 0);
	for (int d = 0; d < NDOCS; d++)
		NEAR(s1[d], 2 * price[d] + 1);
	double wv2 = 3;
	assert_int_equal(rank_query_set_input(q, "w", &wv2, 1, &err), 0);
	assert_int_equal(rank_query_first_phase(q, &w->docs, lids, NDOCS, s1, &err), 0);
	for (int d = 0; d < NDOCS; d++)
		NEAR(s1[d], 3 * price[d] + 1);
	/* second phase: firstPhase + twice(count) = first + count * price * 2 */
	assert_int_equal(rank_query_second_phase(q, &w->docs, lids, s1, NDOCS, s2, &err), 0);
	for (int d = 0; d < NDOCS; d++)
		NEAR(s2[d], s1[d] + count_[d] * price[d] * 2);
	assert_int_equal(rank_query_set_input(q, "w", qd, 4, &err), STRATA_INVALID_ARGUMENT);
	assert_int_equal(rank_query_set_input(q, "zz", qd, 1, &err), STRATA_NOT_FOUND);
	char *ex = rank_profile_explain(p);
	assert_non_null(ex);
	assert_non_null(strstr(ex, "program second-phase"));
	assert_non_null(strstr(ex, "FIRST"));
	base_strfree(ex);
	rank_query_free(q);

	/* a first phase of mapped tensors, slices and a literal with a computed
	 * cell: scores, and the instructions EXPLAIN names */
	p = rank_profile_find(w->s, "tensors");
	assert_int_equal(rank_query_new(p, &q, &err), 0);
	assert_int_equal(rank_query_set_input(q, "q", qd, 4, &err), 0);
	assert_int_equal(rank_query_first_phase(q, &w->docs, lids, NDOCS, s1, &err), 0);
	for (int d = 0; d < NDOCS; d++)
		NEAR(s1[d], 2 * price[d] + count_[d]);
	ex = rank_profile_explain(p);
	assert_non_null(ex);
	assert_non_null(strstr(ex, "SJOIN   *  : tensor(k{})"));
	assert_non_null(strstr(ex, "LIT     literal1 (1 computed)  : tensor(x[1])"));
	assert_non_null(strstr(ex, "PEEK    address0 (0 computed)"));
	assert_non_null(strstr(ex, "CONCAT  along x"));
	assert_non_null(strstr(ex, ": tensor(k{})"));
	base_strfree(ex);
	rank_query_free(q);
}

struct seen {
	int n;
	char names[4][64];
	double first_cells[4];
	size_t ncells[4];
};

static int on_feature(void *ud, const struct rank_feature *f)
{
	struct seen *s = ud;
	if (s->n < 4) {
		snprintf(s->names[s->n], sizeof s->names[0], "%s", f->name);
		s->first_cells[s->n] = f->cells[0];
		s->ncells[s->n] = f->ncells;
	}
	s->n++;
	return 0;
}

static void test_features(void **state)
{
	struct world *w = *state;
	struct strata_error err = { 0 };
	struct rank_query *q = new_query(w, "child");
	struct seen s = { 0 };
	assert_int_equal(rank_query_features(q, &w->docs, 1, 0.0, RANK_MATCH_FEATURES, on_feature, &s,
	                                     &err), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.names[0], "attribute(price)");
	NEAR(s.first_cells[0], price[1]);
	assert_string_equal(s.names[1], "attribute(emb)");
	assert_int_equal(s.ncells[1], 4);
	NEAR(s.first_cells[1], emb[1][0]);
	rank_query_free(q);
}

static double model_score(uint32_t d)
{
	if (!has_emb[d])
		return 0.0;
	double r = 0;
	for (int i = 0; i < 4; i++)
		r += (double)(emb[d][i] * wv[i]); /* float products, as the model computes */
	return r;
}

/* The model runs rank/ makes: this binary is linked with
 * -Wl,--wrap=runtime_run (runwrap.h), and the wrapper counts the runs and
 * keeps where the last one's first input was read from. */
static struct {
	long n;
	const void *last;
} model_runs;

int __wrap_runtime_run(struct rt_ctx *cx, const struct rt_tensor *in, struct rt_tensor *out,
                       struct strata_error *err)
{
	model_runs.n++;
	model_runs.last = in[0].data;
	return __real_runtime_run(cx, in, out, err);
}

static void test_models(void **state)
{
	struct world *w = *state;
	struct strata_error err = { 0 };
	uint32_t lids[NDOCS] = { 0, 1, 2, 3, 4 };
	double fb[NDOCS], sb[NDOCS], fs[NDOCS], ss[NDOCS];
	struct rank_query *qb = new_query(w, "batched"), *qs = new_query(w, "single");
	int rc = rank_query_first_phase(qb, &w->docs, lids, NDOCS, fb, &err);
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	assert_int_equal(rc, 0);
	/* per document, the model got the attribute's cells themselves */
	assert_int_equal(rank_query_first_phase(qb, &w->docs, lids, 4, fb, &err), 0);
	assert_ptr_equal(model_runs.last, emb[3]);
	assert_int_equal(rank_query_first_phase(qs, &w->docs, lids, 4, fs, &err), 0);
	assert_ptr_equal(model_runs.last, emb[3]);
	for (uint32_t d = 0; d < 4; d++) {
		NEAR(fb[d], model_score(d));
		NEAR(fs[d], model_score(d));
	}
	/* second phase: batched (one run, stacked input) equals per document */
	long runs = model_runs.n;
	assert_int_equal(rank_query_second_phase(qb, &w->docs, lids, fb, NDOCS, sb, &err), 0);
	assert_int_equal(model_runs.n, runs + 1);
	const float *stacked = model_runs.last;
	for (int d = 0; d < NDOCS; d++) {
		assert_ptr_not_equal(stacked + 4 * d, emb[d]);
		for (int i = 0; i < 4; i++)
			NEAR(stacked[4 * d + i], has_emb[d] ? emb[d][i] : 0.0f);
	}
	assert_int_equal(rank_query_second_phase(qs, &w->docs, lids, fs, NDOCS, ss, &err), 0);
	for (uint32_t d = 0; d < NDOCS; d++) {
		NEAR(sb[d], model_score(d));
		NEAR(ss[d], sb[d]);
	}
	/* features of a re-ranked document come from the cache: no new run */
	struct seen s = { 0 };
	runs = model_runs.n;
	assert_int_equal(rank_query_features(qb, &w->docs, 2, fb[2], RANK_MATCH_FEATURES, on_feature,
	                                     &s, &err), 0);
	assert_int_equal(model_runs.n, runs);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.ncells[0], 4);
	NEAR(s.first_cells[0], (double)(emb[2][0] * wv[0]));
	char *ex = rank_profile_explain(rank_profile_find(w->s, "batched"));
	assert_non_null(strstr(ex, "batched"));
	base_strfree(ex);
	rank_query_free(qb);
	rank_query_free(qs);

	/* a model fed by a query input, repeated for every candidate */
	struct rank_query *qq = new_query(w, "qmodel");
	assert_int_equal(rank_query_second_phase(qq, &w->docs, lids, fb, NDOCS, sb, &err), 0);
	double qs_ = 0;
	for (int i = 0; i < 4; i++)
		qs_ += (double)(qv[i] * wv[i]);
	for (uint32_t d = 0; d < NDOCS; d++)
		NEAR(sb[d], qs_ + price[d]);
	rank_query_free(qq);
}

static void test_no_alloc_per_doc(void **state)
{
	struct world *w = *state;
	struct strata_error err = { 0 };
	uint32_t lids[NDOCS] = { 0, 1, 2, 3, 4 };
	double f[NDOCS], s[NDOCS];
	const char *profiles[] = { "child", "batched", "single" };
	for (int k = 0; k < 3; k++) {
		struct rank_query *q = new_query(w, profiles[k]);
		assert_int_equal(rank_query_set_nn(q, "emb", "q", &err), 0);
		/* warm up: arena blocks, pooled model buffers, runtime contexts */
		assert_int_equal(rank_query_first_phase(q, &w->docs, lids, NDOCS, f, &err), 0);
		assert_int_equal(rank_query_second_phase(q, &w->docs, lids, f, NDOCS, s, &err), 0);
		uint64_t before = base_alloc_thread_count();
		for (int rep = 0; rep < 3; rep++) {
			assert_int_equal(rank_query_first_phase(q, &w->docs, lids, NDOCS, f, &err), 0);
			assert_int_equal(rank_query_second_phase(q, &w->docs, lids, f, NDOCS, s, &err), 0);
		}
		assert_int_equal(base_alloc_thread_count(), before);
		rank_query_free(q);
	}
}

/* rank_query_free retires a query into its profile's pool and rank_query_new
 * takes it back: the same object, reset (inputs at their defaults, no
 * nearestNeighbor item), and from its second use on nothing is allocated
 * from rank_query_new to rank_query_free, model runs included (the models
 * keep one run context each: the runtime's default pool). */
static void test_query_reuse(void **state)
{
	struct world *w = *state;
	struct strata_error err = { 0 };
	uint32_t lids[NDOCS] = { 0, 1, 2, 3, 4 };
	double f[NDOCS], s[NDOCS];
	struct rank_val v;
	struct rank_query *q, *first = NULL;
	for (int rep = 0; rep < 4; rep++) {
		uint64_t before = base_alloc_thread_count();
		q = new_query(w, "batched");
		assert_int_equal(rank_query_first_phase(q, &w->docs, lids, NDOCS, f, &err), 0);
		assert_int_equal(rank_query_second_phase(q, &w->docs, lids, f, NDOCS, s, &err), 0);
		struct seen seen = { 0 };
		assert_int_equal(rank_query_features(q, &w->docs, 1, f[1], RANK_MATCH_FEATURES,
		                                     on_feature, &seen, &err), 0);
		for (uint32_t d = 0; d < NDOCS; d++)
			NEAR(s[d], model_score(d));
		rank_query_free(q);
		if (rep == 0) {
			first = q;
		} else {
			assert_ptr_equal(q, first);
			assert_int_equal(base_alloc_thread_count() - before, 0);
		}
	}

	/* taken back at its defaults: query(w) is 2 again, no nearestNeighbor */
	const struct rank_profile *p = rank_profile_find(w->s, "base");
	assert_int_equal(rank_query_new(p, &q, &err), 0);
	double wv5 = 5;
	assert_int_equal(rank_query_set_input(q, "w", &wv5, 1, &err), 0);
	/* a nearestNeighbor tensor with no default must be given */
	assert_int_equal(rank_query_set_nn(q, "emb", "q", &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "query(q) is not given"));
	double zero4[4] = { 0, 0, 0, 0 };
	assert_int_equal(rank_query_set_input(q, "q", zero4, 4, &err), 0);
	assert_int_equal(rank_query_set_nn(q, "emb", "q", &err), 0);
	assert_int_equal(rank_query_first_phase(q, &w->docs, lids, 2, f, &err), 0);
	NEAR(f[1], 5 * price[1] + 1);
	assert_int_equal(eval_expr(w, q, "closeness(field, emb)", 1, &v, NULL, &err), 0);
	assert_true(v.num > 0);
	rank_query_free(q);
	struct rank_query *again;
	assert_int_equal(rank_query_new(p, &again, &err), 0);
	assert_ptr_equal(again, q);
	assert_int_equal(rank_query_first_phase(again, &w->docs, lids, 2, f, &err), 0);
	NEAR(f[1], 2 * price[1] + 1);
	assert_int_equal(eval_expr(w, again, "closeness(field, emb)", 1, &v, NULL, &err), 0);
	NEAR(v.num, 0.0);
	rank_query_free(again);

	/* two at once: the second is new; both retire with room for two, and
	 * both come back without an allocation */
	assert_int_equal(rank_app_set_query_pool(w->app, 2, &err), 0);
	struct rank_query *a, *b, *c, *d;
	assert_int_equal(rank_query_new(p, &a, &err), 0);
	assert_int_equal(rank_query_new(p, &b, &err), 0);
	assert_ptr_not_equal(a, b);
	rank_query_free(a);
	rank_query_free(b);
	uint64_t before = base_alloc_thread_count();
	assert_int_equal(rank_query_new(p, &c, &err), 0);
	assert_int_equal(rank_query_new(p, &d, &err), 0);
	assert_int_equal(base_alloc_thread_count() - before, 0);
	assert_true((c == a && d == b) || (c == b && d == a));
	rank_query_free(c);
	rank_query_free(d);

	/* no pool: every query allocates (and the kept ones are freed now) */
	assert_int_equal(rank_app_set_query_pool(w->app, 0, &err), 0);
	for (int rep = 0; rep < 2; rep++) {
		before = base_alloc_thread_count();
		q = new_query(w, "batched");
		assert_int_equal(rank_query_first_phase(q, &w->docs, lids, NDOCS, f, &err), 0);
		rank_query_free(q);
		assert_true(base_alloc_thread_count() - before > 0);
	}
	assert_int_equal(rank_app_set_query_pool(w->app, -1, &err), STRATA_INVALID_ARGUMENT);
	assert_int_equal(rank_app_set_query_pool(w->app, RANK_QUERY_POOL_MAX + 1, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_int_equal(rank_app_set_query_pool(w->app, 1, &err), 0);
}

/* ---- errors ---------------------------------------------------------------------- */

static void expect_error(const char *profile_body, int code, const char *where, const char *what)
{
	char sd[4096];
	snprintf(sd, sizeof sd,
	         "schema doc {\n" FIELDS "  rank-profile bad {\n%s  }\n}\n", profile_body);
	apptest_expect_load_error(make_app(sd), code, where, what);
}

/* FIELDS is 18 lines after "schema doc {"; the profile starts on line 20. */
static void test_errors(void **state)
{
	(void)state;
	expect_error("    first-phase {\n      expression: attribute(nope) + 1\n    }\n", STRATA_TYPE,
	             "x.sd:22:", "unknown attribute 'nope'");
	expect_error("    first-phase {\n      expression: attribute(title)\n    }\n", STRATA_TYPE,
	             "x.sd:22:", "unknown attribute 'title'");
	expect_error("    first-phase {\n      expression: attribute(emb)\n    }\n", STRATA_TYPE,
	             "x.sd:22:", "must produce a number");
	expect_error("    first-phase {\n      expression: firstPhase\n    }\n", STRATA_TYPE,
	             "x.sd:22:", "firstPhase");
	expect_error("    function f(a) {\n      expression: f(a) + 1\n    }\n"
	             "    first-phase {\n      expression: f(1)\n    }\n",
	             STRATA_TYPE, "x.sd:", "calls itself");
	expect_error("    onnx-model m {\n      file: models/batch.onnx\n"
	             "      input \"nope\": attribute(emb)\n    }\n",
	             STRATA_TYPE, "x.sd:23:", "has no input 'nope'");
	expect_error("    onnx-model m {\n      file: models/single.onnx\n"
	             "      input \"x\": attribute(price)\n    }\n",
	             STRATA_TYPE, "x.sd:23:", "input 'x' is float[4]");
	expect_error("    onnx-model m {\n      file: models/missing.onnx\n"
	             "      input \"x\": attribute(emb)\n    }\n",
	             STRATA_NOT_FOUND, "x.sd:21:", "missing.onnx");
	expect_error("    first-phase {\n      expression: sum(attribute(emb), y)\n    }\n", STRATA_TYPE,
	             "x.sd:22:", "no dimension 'y'");
	expect_error("    first-phase {\n      expression: onnx(nomodel)\n    }\n", STRATA_TYPE,
	             "x.sd:22:", "unknown onnx model 'nomodel'");
	/* mapped tensors stay inside expressions: a model input of one is
	 * refused (match and summary features may have one) */
	expect_error("    onnx-model m {\n      file: models/single.onnx\n"
	             "      input \"x\": tensor(k{}):{a:1}\n    }\n",
	             STRATA_NOT_IMPLEMENTED, "x.sd:23:",
	             "tensors with mapped dimensions are not supported here");
	expect_error("    first-phase {\n      expression: sum(tensor(k{}):{a:1}) + tensor(x{})(1)\n"
	             "    }\n", STRATA_NOT_IMPLEMENTED, "x.sd:22:",
	             "tensor generators with mapped dimensions are not supported");
}

/* Schema-level onnx-model blocks (lines 20 to 23 here, before the profile):
 * a profile reads one through onnx(), and every block is loaded with the
 * application, one no profile reads too, so its missing file is an error at
 * its position. */
#define SCHEMA_MODEL(name, file) \
	"  onnx-model " name " {\n    file: " file "\n    input \"x\": attribute(emb)\n  }\n"
#define READS_SM "  rank-profile p {\n    first-phase {\n      expression: sum(onnx(sm))\n" \
	"    }\n  }\n}\n"

static void test_schema_models(void **state)
{
	(void)state;
	char *dir = make_app("schema doc {\n" FIELDS SCHEMA_MODEL("sm", "models/single.onnx")
	                     READS_SM);
	struct rank_app *app = NULL;
	struct strata_error err = { 0 };
	assert_int_equal(rank_app_load(dir, &app, &err), 0);
	struct fake fake = { rank_app_schema_find(app, "doc") };
	struct rank_docs docs = { .ud = &fake, .attr = fake_attr };
	struct rank_query *q;
	assert_int_equal(rank_query_new(rank_profile_find(fake.s, "p"), &q, &err), 0);
	uint32_t lids[NDOCS] = { 0, 1, 2, 3, 4 };
	double f[NDOCS];
	assert_int_equal(rank_query_first_phase(q, &docs, lids, NDOCS, f, &err), 0);
	for (uint32_t d = 0; d < NDOCS; d++)
		NEAR(f[d], model_score(d));
	rank_query_free(q);
	rank_app_free(app);
	apptest_remove(dir);

	dir = make_app("schema doc {\n" FIELDS SCHEMA_MODEL("unused", "models/missing.onnx")
	               SCHEMA_MODEL("sm", "models/single.onnx") READS_SM);
	assert_int_equal(rank_app_load(dir, &app, &err), STRATA_NOT_FOUND);
	assert_null(app);
	assert_non_null(strstr(err.msg, "x.sd:20:"));
	assert_non_null(strstr(err.msg, "onnx-model unused"));
	assert_non_null(strstr(err.msg, "missing.onnx"));
	apptest_remove(dir);
}

/* An allocation failure: STRATA_NOMEM, reported with a message (err is
 * cleared before each try, so no earlier message counts) that says so. */
static void expect_nomem(int rc, const struct strata_error *err, long k)
{
	if (rc != STRATA_NOMEM || !strstr(err->msg, "out of memory: "))
		fail_msg("allocation %ld: %d '%s'", k, rc, err->msg);
}

/* Each allocation of loading the application, then of a whole query over
 * its models, made to fail in turn: every failure is reported as such, and
 * leaves nothing allocated behind. */
static void test_alloc_failures(void **state)
{
	struct world *w = *state;
	struct base_alloc_stats before, after;
	base_alloc_stats(&before);
	long k, failures = apptest_load_failures(w->dir);
	assert_true(failures > 100);

	/* queries, with no retired query to take back */
	struct strata_error err = { 0 };
	assert_int_equal(rank_app_set_query_pool(w->app, 0, &err), 0);
	const struct rank_profile *p = rank_profile_find(w->s, "batched");
	uint32_t lids[NDOCS] = { 0, 1, 2, 3, 4 };
	double f[NDOCS], sc[NDOCS];
	struct seen seen = { 0 };
	for (failures = 0, k = 1; k < 100000; k++) {
		struct rank_query *q = NULL;
		memset(&err, 0, sizeof err);
		base_alloc_fail_after(k);
		int rc = rank_query_new(p, &q, &err);
		if (rc == 0 && (rc = rank_query_first_phase(q, &w->docs, lids, NDOCS, f, &err)) == 0 &&
		    (rc = rank_query_second_phase(q, &w->docs, lids, f, NDOCS, sc, &err)) == 0)
			rc = rank_query_features(q, &w->docs, 1, f[1], RANK_MATCH_FEATURES, on_feature,
			                         &seen, &err);
		base_alloc_fail_after(0);
		rank_query_free(q);
		if (rc == 0)
			break;
		expect_nomem(rc, &err, k);
		failures++;
	}
	assert_true(failures > 10);
	assert_int_equal(rank_app_set_query_pool(w->app, 1, &err), 0);
	base_alloc_stats(&after);
	assert_int_equal(after.live_bytes, before.live_bytes);
}

/* The dot product of every cell-type pair, at every length around its
 * unrolled step of 8, against a long double sum. */
static void test_dot_lengths(void **state)
{
	(void)state;
	float f[41], g[41];
	double d[41], e[41];
	for (int i = 0; i < 41; i++) {
		f[i] = (float)((i * 13) % 17 - 8) / 7.0f;
		g[i] = (float)((i * 5) % 11 - 5) / 3.0f;
		d[i] = f[i];
		e[i] = g[i];
	}
	for (size_t n = 0; n <= 41; n++) {
		long double want = 0;
		for (size_t i = 0; i < n; i++)
			want += (long double)f[i] * g[i];
		double got[4] = { rank_tensor_dot(BASE_DT_FLOAT, f, BASE_DT_FLOAT, g, n),
			          rank_tensor_dot(BASE_DT_FLOAT, f, BASE_DT_DOUBLE, e, n),
			          rank_tensor_dot(BASE_DT_DOUBLE, d, BASE_DT_FLOAT, g, n),
			          rank_tensor_dot(BASE_DT_DOUBLE, d, BASE_DT_DOUBLE, e, n) };
		for (int k = 0; k < 4; k++) {
			assert_true(fabsl(got[k] - want) <= 1e-12L * (1 + fabsl(want)));
			assert_true(got[k] == got[0]); /* one order for every pair */
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arithmetic),
		cmocka_unit_test(test_tensor_functions),
		cmocka_unit_test(test_dot_lengths),
		cmocka_unit_test(test_tensor_algebra),
		cmocka_unit_test(test_tensor_literals),
		cmocka_unit_test(test_mapped_inputs),
		cmocka_unit_test(test_closeness),
		cmocka_unit_test(test_phases_functions_inherits),
		cmocka_unit_test(test_features),
		cmocka_unit_test(test_models),
		cmocka_unit_test(test_no_alloc_per_doc),
		cmocka_unit_test(test_query_reuse),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_schema_models),
		cmocka_unit_test(test_alloc_failures),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
