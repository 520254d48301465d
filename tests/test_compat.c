/*
 * test_compat.c: constructs of Vespa's schemas beyond the core
 * algebra: unpack_bits over dense and mixed tensors (values written out by
 * hand from the bits of the int8 cells), its types and its errors; top(n,
 * t) over mapped tensors (the cells kept, ties, NaN, n past the cells) and
 * its errors; query
 * inputs read without a declaration (numbers, 0 unless given, a tensor
 * for them refused by the engine); bm25 rank properties of names that are
 * no text field, accepted and told once each through the loader's notices
 * and the log callback of strata_open().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../include/strata.h"
#include "../rank/rank_eval.h"
#include "apptest.h"

static const char *compat_sd =
	"schema doc {\n"
	"  document doc {\n"
	"    field price type double { indexing: attribute }\n"
	"    field title type string { indexing: index }\n"
	"  }\n"
	"  rank-profile base {\n"
	"    inputs {\n"
	"      query(b) tensor<int8>(x[2])\n"
	"      query(mx) tensor<int8>(dt{}, x[2])\n"
	"      query(f) tensor<float>(x[2])\n"
	"    }\n"
	"    function unpack() {\n"
	"      expression: unpack_bits(query(mx))\n"
	"    }\n"
	"    first-phase {\n"
	"      expression: sum(unpack())\n"
	"    }\n"
	"  }\n"
	"  rank-profile implicit {\n"
	"    inputs {\n"
	"      query(t) tensor(x[2])\n"
	"    }\n"
	"    function f() {\n"
	"      expression: 10 * query(v)\n"
	"    }\n"
	"    first-phase {\n"
	"      expression: if (query(u) == 1, 100, 0) + query(u) + f + sum(query(t))\n"
	"    }\n"
	"  }\n"
	"  rank-profile child inherits implicit {\n"
	"    inputs {\n"
	"      query(v) double: 4\n"
	"    }\n"
	"  }\n"
	"  rank-profile props {\n"
	"    rank-properties {\n"
	"      bm25(title).k1: 0.5\n"
	"      bm25(abstract).k1: -1\n"
	"      bm25(price).b: 0.4\n"
	"    }\n"
	"  }\n"
	"  rank-profile props2 inherits props {\n"
	"  }\n"
	"}\n";

struct world {
	char *dir;
	struct rank_app *app;
	struct rank_profile *p;
	struct rank_query *q;
	struct rank_docs docs;
};

static const void *no_attr(void *ud, int field, uint32_t lid)
{
	return NULL;
}

static int setup(void **state)
{
	struct world *w = calloc(1, sizeof *w);
	struct strata_error err = { 0 };
	w->dir = apptest_new("strata_compat");
	apptest_write(w->dir, "schemas/doc.sd", compat_sd);
	w->app = apptest_load(w->dir);
	const struct rank_schema *s = rank_app_schema_find(w->app, "doc");
	assert_non_null(s);
	w->p = (struct rank_profile *)rank_profile_find(s, "base");
	assert_non_null(w->p);
	assert_int_equal(rank_query_new(w->p, &w->q, &err), 0);
	const double b[2] = { 5, -3 };
	assert_int_equal(rank_query_set_input(w->q, "b", b, 2, &err), 0);
	const char *labels[2] = { "a", "z" };
	const double mx[4] = { 5, -3, -128, 127 };
	assert_int_equal(rank_query_set_input_sparse(w->q, "mx", 2, labels, mx, &err), 0);
	w->docs.attr = no_attr;
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;
	rank_query_free(w->q);
	rank_app_free(w->app);
	apptest_remove(w->dir);
	free(w);
	return 0;
}

/* Evaluate text against profile base: its value and the text of its type.
 * Returns the error code (err says why). */
static int eval(struct world *w, const char *text, struct rank_val *v, char *type, size_t n,
                struct strata_error *err)
{
	const struct rank_type *t;
	int rc = apptest_eval(w->p, w->q, &w->docs, text, 0, v, &t, err);
	if (rc == 0)
		rank_type_str(t, type, n);
	return rc;
}

/* The value of text, which must evaluate to type want_type. */
static struct rank_val eval_ok(struct world *w, const char *text, const char *want_type)
{
	struct rank_val v;
	char type[256];
	struct strata_error err = { 0 };
	int rc = eval(w, text, &v, type, sizeof type, &err);
	if (rc)
		fprintf(stderr, "%s: %s\n", text, err.msg);
	assert_int_equal(rc, 0);
	assert_string_equal(type, want_type);
	return v;
}

/* The dense value of text must have type want_type and the cells want. */
static void dense(struct world *w, const char *text, const char *want_type, const double *want,
                  size_t n)
{
	struct rank_val v = eval_ok(w, text, want_type);
	for (size_t i = 0; i < n; i++)
		assert_true(rank_cell(v.cell, v.cells, i) == want[i]);
}

/* 5 is 00000101, -3 is 0xfd 11111101, -128 is 0x80, 127 is 0x7f. */
static const double five_big[8] = { 0, 0, 0, 0, 0, 1, 0, 1 };
static const double m3_big[8] = { 1, 1, 1, 1, 1, 1, 0, 1 };

static void test_unpack_dense(void **state)
{
	struct world *w = *state;
	double want[16];
	memcpy(want, five_big, sizeof five_big);
	memcpy(want + 8, m3_big, sizeof m3_big);
	dense(w, "unpack_bits(query(b))", "tensor<float>(x[16])", want, 16);
	dense(w, "unpack_bits(query(b), double)", "tensor(x[16])", want, 16);
	dense(w, "unpack_bits(query(b), int8, big)", "tensor<int8>(x[16])", want, 16);
	const double little[16] = { 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1 };
	dense(w, "unpack_bits(query(b), float, little)", "tensor<float>(x[16])", little, 16);
	/* a number of the result: bits set in 5 and -3 */
	struct rank_val v;
	char type[64];
	struct strata_error err = { 0 };
	assert_int_equal(eval(w, "sum(unpack_bits(query(b), bfloat16))", &v, type, sizeof type,
	                      &err), 0);
	assert_true(v.num == 2 + 7);
}

/* Two indexed dimensions: y comes after a in name order, so y is the one
 * unpacked, though declared first: cell (y j, a i) is bit j of (a i). */
static void test_unpack_innermost_by_name(void **state)
{
	struct world *w = *state;
	double want[16];
	for (int j = 0; j < 8; j++) {
		want[2 * j] = five_big[j];
		want[2 * j + 1] = m3_big[j];
	}
	dense(w, "unpack_bits(cell_cast(tensor(y[1],a[2]):[[5, -3]], int8))",
	      "tensor<float>(y[8],a[2])", want, 16);
	/* declared last and last by name: plain concatenation of the bytes */
	double cat[16];
	memcpy(cat, five_big, sizeof five_big);
	memcpy(cat + 8, m3_big, sizeof m3_big);
	dense(w, "unpack_bits(cell_cast(tensor(a[2],y[1]):[[5], [-3]], int8))",
	      "tensor<float>(a[2],y[8])", cat, 16);
}

static void test_unpack_mixed(void **state)
{
	struct world *w = *state;
	struct rank_val v;
	char type[256];
	struct strata_error err = { 0 };
	assert_int_equal(eval(w, "unpack_bits(query(mx))", &v, type, sizeof type, &err), 0);
	assert_string_equal(type, "tensor<float>(dt{},x[16])");
	const struct rank_sparse *s = v.cells;
	assert_int_equal(s->nblocks, 2);
	static const double a[16] = { 0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1 };
	static const double z[16] = { 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1 };
	for (size_t b = 0; b < 2; b++) {
		const double *want = strcmp(s->labels[b], "a") == 0 ? a : z;
		assert_true(strcmp(s->labels[b], "a") == 0 || strcmp(s->labels[b], "z") == 0);
		for (int i = 0; i < 16; i++)
			assert_true(s->cells[b * 16 + (size_t)i] == want[i]);
	}
	/* the profile's program, as EXPLAIN shows it */
	char *ex = rank_profile_explain(w->p);
	assert_non_null(strstr(ex, "UNPACK  along x, big endian  : tensor<float>(dt{},x[16])"));
	base_strfree(ex);
	/* through the profile's function: 2 + 7 + 1 + 7 bits set */
	assert_int_equal(eval(w, "sum(unpack)", &v, type, sizeof type, &err), 0);
	assert_true(v.num == 17);
	assert_int_equal(eval(w, "unpack_bits(query(mx)){dt:z}", &v, type, sizeof type, &err), 0);
	assert_string_equal(type, "tensor<float>(x[16])");
	for (int i = 0; i < 16; i++)
		assert_true(rank_cell(v.cell, v.cells, (size_t)i) == z[i]);
}

static void expect_error(struct world *w, const char *text, const char *what)
{
	struct rank_val v;
	char type[64];
	struct strata_error err = { 0 };
	assert_int_equal(eval(w, text, &v, type, sizeof type, &err), STRATA_TYPE);
	if (!strstr(err.msg, what))
		fprintf(stderr, "%s: %s\n", text, err.msg);
	assert_non_null(strstr(err.msg, what));
}

static void test_unpack_errors(void **state)
{
	struct world *w = *state;
	expect_error(w, "unpack_bits(query(f))",
	             "expr:1:1: unpack_bits needs int8 cells and an indexed dimension, "
	             "not tensor<float>(x[2])");
	expect_error(w, "unpack_bits(cell_cast(tensor(k{}):{a:1}, int8))",
	             "needs int8 cells and an indexed dimension, not tensor<int8>(k{})");
	expect_error(w, "unpack_bits(2)", "not double");
	expect_error(w, "unpack_bits(query(b), half)", "expr:1:23: unknown cell type 'half'");
	expect_error(w, "unpack_bits(query(b), float, middle)",
	             "expr:1:30: unpack_bits: unknown endian 'middle' (expected big or little)");
	expect_error(w, "unpack_bits()", "unpack_bits(tensor [, cell type [, endian]])");
	expect_error(w, "unpack_bits(query(b), float, big, 1)",
	             "unpack_bits(tensor [, cell type [, endian]])");
}

/* The cells of the mapped value text evaluates to (nm mapped dimensions),
 * "label,...:value,..." in the value's order; its type must be want_type. */
static void sparse_cells(struct world *w, const char *text, const char *want_type, int nm,
                         const char *want)
{
	char got[256] = "";
	const struct rank_sparse *s = eval_ok(w, text, want_type).cells;
	for (size_t b = 0; b < s->nblocks; b++) {
		for (int k = 0; k < nm; k++)
			snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s",
			         b || k ? "," : "", s->labels[b * (size_t)nm + (size_t)k]);
		snprintf(got + strlen(got), sizeof got - strlen(got), ":%g", s->cells[b]);
	}
	if (strcmp(got, want) != 0)
		fail_msg("%s: got %s, wanted %s", text, got, want);
}

/* top(n, t): the n cells of the largest values, the earlier of equal ones,
 * NaN below every number, t's order and type kept. */
static void test_top(void **state)
{
	struct world *w = *state;
	const char *t = "tensor(c{}):{a:1, b:5, c:3, d:5, e:-2}";
	char text[256];
	static const struct { const char *n, *want; } cases[] = {
		{ "2", "b:5,d:5" },  { "3", "b:5,c:3,d:5" }, { "1", "b:5" },
		{ "1 + 1", "b:5,d:5" }, { "0", "" }, { "-1", "" },
		{ "9", "a:1,b:5,c:3,d:5,e:-2" }, { "2.7", "b:5,d:5" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(text, sizeof text, "top(%s, %s)", cases[i].n, t);
		sparse_cells(w, text, "tensor(c{})", 1, cases[i].want);
	}
	sparse_cells(w, "top(2, tensor(c{}):{x:2, y:2, z:2})", "tensor(c{})", 1, "x:2,y:2");
	sparse_cells(w, "top(1, map(tensor(c{}):{x:0, y:-7}, f(v)(if(v == 0, 0 / 0, v))))",
	             "tensor(c{})", 1, "y:-7");
	sparse_cells(w, "top(2, tensor<float>(c{}, k{}):{{c:a, k:1}:4, {c:a, k:2}:6, {c:b, k:1}:5})",
	             "tensor<float>(c{},k{})", 2, "a,2:6,b,1:5");
	/* through a reduce: the three largest of five, summed */
	struct rank_val v;
	char type[64];
	struct strata_error err = { 0 };
	snprintf(text, sizeof text, "reduce(top(3, %s), sum, c)", t);
	assert_int_equal(eval(w, text, &v, type, sizeof type, &err), 0);
	assert_true(v.num == 13);
	static const struct { const char *text; int code; const char *msg; } bad[] = {
		{ "top(2, query(f))", STRATA_NOT_IMPLEMENTED,
		  "expr:1:8: top of tensor<float>(x[2]) is not supported (only of a tensor whose "
		  "dimensions are all mapped)" },
		{ "top(2, query(mx))", STRATA_NOT_IMPLEMENTED, "top of tensor<int8>(dt{},x[2])" },
		{ "top(2, 3)", STRATA_NOT_IMPLEMENTED, "top of double" },
		{ "top(query(f), tensor(c{}):{a:1})", STRATA_TYPE,
		  "expr:1:5: top: n must be a number, not tensor<float>(x[2])" },
		{ "top(2)", STRATA_TYPE, "top(n, tensor)" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&err, 0, sizeof err);
		int rc = eval(w, bad[i].text, &v, type, sizeof type, &err);
		if (rc != bad[i].code || !strstr(err.msg, bad[i].msg))
			fail_msg("%s: got %d '%s', wanted %d '%s'", bad[i].text, rc, err.msg,
			         bad[i].code, bad[i].msg);
	}
}

/* query(u) and query(v) are read, never declared: numbers, 0 by default,
 * set as declared ones are; a tensor for them is refused. */
static void test_undeclared_inputs(void **state)
{
	struct world *w = *state;
	const struct rank_schema *s = rank_app_schema_find(w->app, "doc");
	struct rank_profile *p = (struct rank_profile *)rank_profile_find(s, "implicit");
	struct strata_error err = { 0 };
	int u = rank_profile_input_index(p, "u"), v = rank_profile_input_index(p, "v");
	assert_true(u >= 0 && v >= 0);
	assert_int_equal(rank_profile_input(p, u)->rank, 0);
	assert_int_equal(rank_profile_input(p, u)->has_default, 0);
	assert_int_equal(rank_profile_input(p, u)->required, 0);
	assert_int_equal(rank_profile_input_index(p, "never"), -1);
	struct rank_query *q;
	assert_int_equal(rank_query_new(p, &q, &err), 0);
	const double t[2] = { 1, 2 };
	assert_int_equal(rank_query_set_input(q, "t", t, 2, &err), 0);
	struct rank_val val;
	const struct rank_type *ty;
	const char *expr = "if (query(u) == 1, 100, 0) + query(u) + f + sum(query(t))";
	assert_int_equal(apptest_eval(p, q, &w->docs, expr, 0, &val, &ty, &err), 0);
	assert_true(val.num == 3);
	const double one = 1, half = 0.5;
	assert_int_equal(rank_query_set_input(q, "u", &one, 1, &err), 0);
	assert_int_equal(rank_query_set_input(q, "v", &half, 1, &err), 0);
	assert_int_equal(apptest_eval(p, q, &w->docs, expr, 0, &val, &ty, &err), 0);
	assert_true(val.num == 100 + 1 + 5 + 3);
	assert_int_equal(rank_query_set_input(q, "u", t, 2, &err), STRATA_INVALID_ARGUMENT);
	rank_query_free(q);
	/* the child declares v with a default; u stays implicit */
	p = (struct rank_profile *)rank_profile_find(s, "child");
	v = rank_profile_input_index(p, "v");
	assert_true(v >= 0 && rank_profile_input(p, v)->has_default);
	assert_true(rank_profile_input_index(p, "u") >= 0);
	assert_int_equal(rank_query_new(p, &q, &err), 0);
	assert_int_equal(rank_query_set_input(q, "t", t, 2, &err), 0);
	assert_int_equal(apptest_eval(p, q, &w->docs, expr, 0, &val, &ty, &err), 0);
	assert_true(val.num == 40 + 3);
	rank_query_free(q);
}

/* The notices of a load, one per line. */
struct notes {
	char text[2048];
	int n;
};

static void note(void *ud, const char *msg)
{
	struct notes *ns = ud;
	ns->n++;
	strncat(ns->text, msg, sizeof ns->text - strlen(ns->text) - 2);
	strcat(ns->text, "\n");
}

/* Properties of bm25(abstract) (no field) and bm25(price) (no text index)
 * load, change nothing, and are told once though props2 inherits them. */
static void test_props_of_no_text_field(void **state)
{
	struct world *w = *state;
	const struct rank_schema *s = rank_app_schema_find(w->app, "doc");
	const struct rank_profile *p = rank_profile_find(s, "props2");
	int title = -1;
	for (int i = 0; i < rank_schema_nfields(s); i++)
		if (strcmp(rank_schema_field(s, i)->name, "title") == 0)
			title = i;
	assert_true(title >= 0);
	struct rank_bm25 b;
	rank_profile_bm25(p, title, &b);
	assert_true(b.k1 == 0.5 && b.b == 0.75 && b.avgdl == 0);
	struct notes ns = { "", 0 };
	struct rank_loader loader = { .ud = &ns, .notice = note };
	struct rank_app *app;
	struct strata_error err = { 0 };
	assert_int_equal(rank_app_load_with(w->dir, &loader, &app, &err), 0);
	rank_app_free(app);
	assert_int_equal(ns.n, 2);
	assert_non_null(strstr(ns.text, "doc.sd:38:7: rank property 'bm25(abstract).k1' changes "
	                                "nothing: 'abstract' is no field of the schema\n"));
	assert_non_null(strstr(ns.text, "doc.sd:39:7: rank property 'bm25(price).b' changes "
	                                "nothing: 'price' is a field without a text index\n"));
}

static void log_note(void *ud, int level, const char *msg)
{
	assert_int_equal(level, STRATA_LOG_NOTICE);
	note(ud, msg);
}

/* Through the engine: the notices reach the log callback, a number for
 * an undeclared input ranks, a tensor for it is refused. */
static void test_engine(void **state)
{
	struct world *w = *state;
	struct notes ns = { "", 0 };
	struct strata_options o = { .log = log_note, .log_ud = &ns };
	struct strata *db;
	struct strata_error err = { 0 };
	assert_int_equal(strata_open(w->dir, &o, &db, &err), 0);
	assert_int_equal(ns.n, 2);
	assert_non_null(strstr(ns.text, "'abstract' is no field of the schema"));
	assert_int_equal(strata_feed_json(db, "{\"put\": \"id:doc:doc::1\", \"fields\": "
	                                      "{\"price\": 2}}", &err), 0);
	char *out = NULL;
	const char *req = "{\"yql\": \"select * from doc where true\", \"ranking\": "
	                  "\"implicit\", \"input.query(t)\": [1, 2], \"input.query(u)\": %s}";
	char buf[512];
	snprintf(buf, sizeof buf, req, "1");
	assert_int_equal(strata_query_json(db, buf, &out, &err), 0);
	assert_non_null(strstr(out, "\"relevance\":104.0"));
	strata_free(out);
	out = NULL;
	snprintf(buf, sizeof buf, req, "[1]");
	assert_int_equal(strata_query_json(db, buf, &out, &err), STRATA_INVALID_ARGUMENT);
	assert_null(out);
	assert_string_equal(err.msg, "query input 'query(u)': expected a number (rank profile "
	                             "'implicit' reads it without declaring it in its inputs)");
	snprintf(buf, sizeof buf, req, "\"tensor(x[1]):[1]\"");
	assert_int_equal(strata_query_json(db, buf, &out, &err), STRATA_INVALID_ARGUMENT);
	strata_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unpack_dense),
		cmocka_unit_test(test_unpack_innermost_by_name),
		cmocka_unit_test(test_unpack_mixed),
		cmocka_unit_test(test_unpack_errors),
		cmocka_unit_test(test_top),
		cmocka_unit_test(test_undeclared_inputs),
		cmocka_unit_test(test_props_of_no_text_field),
		cmocka_unit_test(test_engine),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
