/*
 * test_engine.c: the engine: tensor JSON forms and the library API end to
 * end (open, feed, get, update, remove, query) on a small
 * application written to a temporary folder.  Expected orders and scores are
 * computed here from the documents the tests feed.  Then, on a second
 * application through the real store: model inputs read in place from the
 * store's map, and the evaluation state reused from query to query (no
 * allocation in ranking once a query of the same shape has run).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <math.h>
#include <pthread.h>

#include <cmocka.h>

#include "../engine/engine_int.h"
#include "modelbuild.h"
#include "runwrap.h"

/* ---- tensor JSON ---------------------------------------------------------------------- */

static const int64_t d3[] = { 3 };
static const int64_t d23[] = { 2, 3 };
static const char *const xn[] = { "x" };
static const char *const xyn[] = { "x", "y" };

static int from_text(const char *text, const struct eng_ttype *t, int literal, void *cells,
                     struct strata_error *err)
{
	json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
	assert_non_null(j);
	int rc = eng_tensor_from_json(j, t, literal, cells, "field 'emb'", err);
	json_decref(j);
	return rc;
}

static void test_tensor_forms(void **state)
{
	(void)state;
	struct strata_error err;
	float f[6];
	struct eng_ttype t1 = { BASE_DT_FLOAT, 1, d3, xn };
	assert_int_equal(from_text("[1, 2.5, -3]", &t1, 0, f, &err), 0);
	assert_true(f[0] == 1 && f[1] == 2.5f && f[2] == -3);
	assert_int_equal(from_text("{\"values\": [4, 5, 6]}", &t1, 0, f, &err), 0);
	assert_true(f[0] == 4 && f[2] == 6);
	assert_int_equal(from_text("{\"cells\": [{\"address\": {\"x\": \"2\"}, \"value\": 7},"
	                           " {\"address\": {\"x\": 0}, \"value\": 8}]}", &t1, 0, f, &err), 0);
	assert_true(f[0] == 8 && f[1] == 0 && f[2] == 7);

	struct eng_ttype t2 = { BASE_DT_FLOAT, 2, d23, xyn };
	assert_int_equal(from_text("[[1,2,3],[4,5,6]]", &t2, 0, f, &err), 0);
	assert_true(f[3] == 4 && f[5] == 6);
	assert_int_equal(from_text("{\"values\": [1,2,3,4,5,6]}", &t2, 0, f, &err), 0);
	assert_true(f[4] == 5);
	assert_int_equal(from_text("{\"cells\": [{\"address\": {\"x\": \"1\", \"y\": \"2\"},"
	                           " \"value\": 9}]}", &t2, 0, f, &err), 0);
	assert_true(f[5] == 9 && f[0] == 0);

	/* literals for query inputs */
	double d[6];
	struct eng_ttype td = { BASE_DT_DOUBLE, 1, d3, xn };
	assert_int_equal(from_text("\"[1,2,3]\"", &td, 1, d, &err), 0);
	assert_true(d[2] == 3);
	assert_int_equal(from_text("\"{{x:0}:1.5,{x:2}:2}\"", &td, 1, d, &err), 0);
	assert_true(d[0] == 1.5 && d[1] == 0 && d[2] == 2);
	assert_int_equal(from_text("\"tensor(x[3]):[7,8,9]\"", &td, 1, d, &err), 0);
	assert_true(d[0] == 7 && d[2] == 9);
	struct eng_ttype t0 = { BASE_DT_DOUBLE, 0, NULL, NULL };
	assert_int_equal(from_text("2.5", &t0, 1, d, &err), 0);
	assert_true(d[0] == 2.5);
	assert_int_equal(from_text("\"0.25\"", &t0, 1, d, &err), 0);
	assert_true(d[0] == 0.25);
}

static void test_tensor_errors(void **state)
{
	(void)state;
	struct strata_error err;
	float f[6];
	int8_t i8[3];
	struct eng_ttype t1 = { BASE_DT_FLOAT, 1, d3, xn };
	assert_int_equal(from_text("[1, 2]", &t1, 0, f, &err), STRATA_INVALID_ARGUMENT);
	assert_string_equal(err.msg, "field 'emb': 2 values, expected 3 (tensor<float>(x[3]))");
	assert_int_equal(from_text("[1, \"a\", 3]", &t1, 0, f, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "cell 1 is not a number"));
	assert_int_equal(from_text("\"[1,2,3]\"", &t1, 0, f, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "got a string"));
	assert_int_equal(from_text("{\"cells\": [{\"address\": {\"x\": \"3\"}, \"value\": 1}]}", &t1,
	                           0, f, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "bad index for dimension 'x'"));
	assert_int_equal(from_text("{\"cells\": [{\"address\": {\"y\": \"0\"}, \"value\": 1}]}", &t1,
	                           0, f, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "lacks dimension 'x'"));
	struct eng_ttype t2 = { BASE_DT_FLOAT, 2, d23, xyn };
	assert_int_equal(from_text("[[1,2,3],[4,5]]", &t2, 0, f, &err), STRATA_INVALID_ARGUMENT);
	assert_string_equal(err.msg, "field 'emb': dimension 'y' has 2 values, expected 3 "
	                             "(tensor<float>(x[2],y[3]))");
	struct eng_ttype ti = { BASE_DT_INT8, 1, d3, xn };
	assert_int_equal(from_text("[1, 300, 3]", &ti, 0, i8, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "out of range for int8"));
	assert_int_equal(from_text("[1, 2.5, 3]", &ti, 0, i8, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "not an integer"));
	assert_int_equal(from_text("\"{{x:5}:1}\"", &t1, 1, f, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "out of range"));
	assert_int_equal(from_text("\"[1,2\"", &t1, 1, f, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "malformed tensor literal"));
}

/* ---- tensors with mapped dimensions ---------------------------------------------------- */

static const int64_t dcat[] = { -1 };
static const int64_t dpx[] = { -1, 2 };
static const char *const catn[] = { "cat" };
static const char *const pxn[] = { "p", "x" };

static int sparse_text(const char *text, const struct eng_ttype *t, struct eng_sparse *s,
                       struct strata_error *err)
{
	json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
	assert_non_null(j);
	int rc = eng_sparse_from_json(j, t, s, "query input 'query(q)'", err);
	json_decref(j);
	return rc;
}

/* The cell under label of a one-mapped-dimension value, NAN when absent. */
static double cell_at(const struct eng_sparse *s, const char *label, size_t i)
{
	for (size_t b = 0; b < s->nblocks; b++)
		if (strcmp(s->labels[b * (size_t)s->nmapped], label) == 0)
			return s->cells[b * s->sub + i];
	return NAN;
}

static void test_sparse_forms(void **state)
{
	(void)state;
	struct strata_error err;
	struct eng_sparse s;
	struct eng_ttype tc = { BASE_DT_FLOAT, 1, dcat, catn };
	const char *cat_forms[] = {
		"{\"a\": 1, \"b\": 2.5}",
		"{\"cells\": {\"a\": 1, \"b\": 2.5}}",
		"{\"type\": \"tensor(cat{})\", \"cells\": {\"a\": 1, \"b\": 2.5}}",
		"{\"cells\": [{\"address\": {\"cat\": \"b\"}, \"value\": 2.5},"
		" {\"address\": {\"cat\": \"a\"}, \"value\": 1}]}",
	};
	for (size_t i = 0; i < sizeof cat_forms / sizeof cat_forms[0]; i++) {
		assert_int_equal(sparse_text(cat_forms[i], &tc, &s, &err), 0);
		assert_int_equal(s.nblocks, 2);
		assert_true(cell_at(&s, "a", 0) == 1 && cell_at(&s, "b", 0) == 2.5);
		eng_sparse_free(&s);
	}
	struct eng_ttype tm = { BASE_DT_FLOAT, 2, dpx, pxn };
	const char *mixed_forms[] = {
		"{\"u\": [1, 2], \"v\": [3, 4]}",
		"{\"blocks\": {\"u\": [1, 2], \"v\": [3, 4]}}",
		"{\"blocks\": [{\"address\": {\"p\": \"u\"}, \"values\": [1, 2]},"
		" {\"address\": {\"p\": \"v\"}, \"values\": [3, 4]}]}",
		"{\"cells\": [{\"address\": {\"p\": \"v\", \"x\": \"1\"}, \"value\": 4},"
		" {\"address\": {\"p\": \"u\", \"x\": 0}, \"value\": 1},"
		" {\"address\": {\"p\": \"u\", \"x\": 1}, \"value\": 2},"
		" {\"address\": {\"p\": \"v\", \"x\": 0}, \"value\": 3}]}",
	};
	for (size_t i = 0; i < sizeof mixed_forms / sizeof mixed_forms[0]; i++) {
		assert_int_equal(sparse_text(mixed_forms[i], &tm, &s, &err), 0);
		assert_int_equal(s.nblocks, 2);
		assert_true(cell_at(&s, "u", 0) == 1 && cell_at(&s, "u", 1) == 2);
		assert_true(cell_at(&s, "v", 0) == 3 && cell_at(&s, "v", 1) == 4);
		eng_sparse_free(&s);
	}
	/* Cells left out of a block are 0; integers are labels too. */
	assert_int_equal(sparse_text("{\"cells\": [{\"address\": {\"p\": 7, \"x\": 1}, \"value\": 5}]}",
	                             &tm, &s, &err), 0);
	assert_true(cell_at(&s, "7", 0) == 0 && cell_at(&s, "7", 1) == 5);
	eng_sparse_free(&s);
	assert_int_equal(sparse_text("{}", &tc, &s, &err), 0);
	assert_int_equal(s.nblocks, 0);
	eng_sparse_free(&s);
}

static void test_sparse_errors(void **state)
{
	(void)state;
	struct strata_error err;
	struct eng_sparse s;
	struct eng_ttype tc = { BASE_DT_FLOAT, 1, dcat, catn };
	struct eng_ttype tm = { BASE_DT_FLOAT, 2, dpx, pxn };
	static const struct {
		const char *text;
		int mixed;
		const char *msg;
	} bad[] = {
		{"{\"cells\": [{\"address\": {\"dog\": \"a\"}, \"value\": 1}]}", 0,
		 "query input 'query(q)': cell 0: address lacks dimension 'cat' (tensor<float>(cat{}))"},
		{"{\"cells\": [{\"address\": {\"cat\": \"a\", \"x\": 0}, \"value\": 1}]}", 0,
		 "query input 'query(q)': cell 0: address has 2 dimensions, expected 1 (tensor<float>(cat{}))"},
		{"{\"cells\": [{\"address\": {\"cat\": \"\"}, \"value\": 1}]}", 0,
		 "query input 'query(q)': cell 0: bad label for dimension 'cat' (a string of 1 to 255 bytes)"},
		{"{\"cells\": [{\"address\": {\"cat\": \"a\"}, \"value\": \"x\"}]}", 0,
		 "query input 'query(q)': cell 0: value is not a number"},
		{"{\"a\": \"x\"}", 0, "query input 'query(q)': cell 'a' is not a number"},
		{"{\"values\": [1]}", 0,
		 "query input 'query(q)': a tensor with mapped dimensions needs \"cells\" or \"blocks\" "
		 "(tensor<float>(cat{}))"},
		{"[1, 2]", 0, "query input 'query(q)': expected a tensor object (tensor<float>(cat{}))"},
		{"{\"cells\": [{\"address\": {\"p\": \"u\", \"x\": 2}, \"value\": 1}]}", 1,
		 "query input 'query(q)': cell 0: bad index for dimension 'x' (tensor<float>(p{},x[2]))"},
		{"{\"u\": [1, 2, 3]}", 1, "query input 'query(q)': block 'u' needs 2 numbers"},
		{"{\"u\": [1]}", 1, "query input 'query(q)': block 'u' needs 2 numbers"},
		{"{\"u\": 1}", 1, "query input 'query(q)': block 'u' needs an array of 2 numbers"},
		{"{\"blocks\": [{\"address\": {\"p\": \"u\"}, \"values\": [1, 2]},"
		 " {\"address\": {\"p\": \"u\"}, \"values\": [3, 4]}]}", 1,
		 "query input 'query(q)': block 'u' is given twice"},
		{"{\"blocks\": [{\"address\": {\"x\": \"u\"}, \"values\": [1, 2]}]}", 1,
		 "query input 'query(q)': block 0: bad or missing label for dimension 'p' (a string of 1 "
		 "to 255 bytes)"},
		{"{\"cells\": {\"u\": 1}}", 1,
		 "query input 'query(q)': \"cells\" as an object needs a type without indexed "
		 "dimensions; use \"blocks\" (tensor<float>(p{},x[2]))"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = sparse_text(bad[i].text, bad[i].mixed ? &tm : &tc, &s, &err);
		if (rc != STRATA_INVALID_ARGUMENT || strcmp(err.msg, bad[i].msg) != 0)
			fail_msg("case %zu: got %d '%s'", i, rc, rc ? err.msg : "");
		assert_int_equal(s.nblocks, 0);
	}
	/* A label of 256 bytes is one too long; 255 is fine. */
	char text[600];
	snprintf(text, sizeof text, "{\"%0256d\": 1}", 0);
	assert_int_equal(sparse_text(text, &tc, &s, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "(a string of 1 to 255 bytes)"));
	snprintf(text, sizeof text, "{\"%0255d\": 1}", 0);
	assert_int_equal(sparse_text(text, &tc, &s, &err), 0);
	assert_int_equal(s.nblocks, 1);
	eng_sparse_free(&s);
}

/* A mapped field's stored text: Vespa's short forms where they exist, cells
 * rounded to the field's cell type, and read back as the VM's value. */
static void test_sparse_fields(void **state)
{
	(void)state;
	struct strata_error err;
	struct base_arena a;
	base_arena_init(&a, 1 << 12);
	struct store_value v;
	struct rank_field f = { .type = RANK_FT_TENSOR, .cell = BASE_DT_FLOAT, .rank = 2,
	                        .dims = { -1, 2 }, .dim_names = { "p", "x" } };
	assert_int_equal(eng_field_mapped(&f), 1);
	json_t *j = json_loads("{\"cells\": [{\"address\": {\"p\": \"u\", \"x\": 1}, \"value\": 0.1}]}",
	                       0, NULL);
	assert_int_equal(eng_sparse_field_text(&f, j, &a, &v, "field 'parts'", &err), 0);
	json_decref(j);
	assert_string_equal(v.s, "{\"type\":\"tensor<float>(p{},x[2])\",\"blocks\":{\"u\":[0.0,0.1]}}");
	const struct rank_sparse *r = eng_sparse_from_text(&f, v.s, v.n, &a);
	assert_non_null(r);
	assert_int_equal(r->nblocks, 1);
	assert_string_equal(r->labels[0], "u");
	assert_true(r->cells[0] == 0 && r->cells[1] == (double)0.1f);

	struct rank_field g = { .type = RANK_FT_TENSOR, .cell = BASE_DT_DOUBLE, .rank = 2,
	                        .dims = { -1, -1 }, .dim_names = { "a", "b" } };
	j = json_loads("{\"cells\": [{\"address\": {\"a\": \"x\", \"b\": \"y\"}, \"value\": 0.1}]}",
	               0, NULL);
	assert_int_equal(eng_sparse_field_text(&g, j, &a, &v, "field 'two'", &err), 0);
	json_decref(j);
	assert_string_equal(v.s, "{\"type\":\"tensor(a{},b{})\",\"cells\":[{\"address\":"
	                         "{\"a\":\"x\",\"b\":\"y\"},\"value\":0.1}]}");
	r = eng_sparse_from_text(&g, v.s, v.n, &a);
	assert_non_null(r);
	assert_true(r->nblocks == 1 && r->cells[0] == 0.1);
	assert_string_equal(r->labels[1], "y");
	assert_null(eng_sparse_from_text(&g, "[1]", 3, &a));

	j = json_loads("{\"a\": 1}", 0, NULL);
	assert_int_equal(eng_sparse_field_text(&g, j, &a, &v, "field 'two'", &err),
	                 STRATA_INVALID_ARGUMENT);
	json_decref(j);
	assert_string_equal(err.msg, "field 'two': the short form needs one mapped dimension; use "
	                             "\"cells\" (tensor(a{},b{}))");
	base_arena_free(&a);
}

static void test_tensor_to_json(void **state)
{
	(void)state;
	float f[6] = { 0.1f, 2, 3, 4, 5, 6.5f };
	struct eng_ttype t2 = { BASE_DT_FLOAT, 2, d23, xyn };
	json_t *j = eng_tensor_to_json(&t2, f);
	char *s = eng_json_dump(j, 0);
	assert_string_equal(s, "{\"type\":\"tensor<float>(x[2],y[3])\","
	                       "\"values\":[[0.1,2.0,3.0],[4.0,5.0,6.5]]}");
	base_strfree(s);
	json_decref(j);
	double d[3] = { 0.1, 1e300, -2 };
	struct eng_ttype t1 = { BASE_DT_DOUBLE, 1, d3, xn };
	j = eng_tensor_to_json(&t1, d);
	s = eng_json_dump(j, 0);
	assert_string_equal(s, "{\"type\":\"tensor(x[3])\",\"values\":[0.1,1e+300,-2.0]}");
	base_strfree(s);
	json_decref(j);
}

/* ---- the API on an application ------------------------------------------------------------ */

static const char *item_sd =
	"schema item {\n"
	"    document item {\n"
	"        field title type string {\n"
	"            indexing: summary | attribute\n"
	"        }\n"
	"        field price type int {\n"
	"            indexing: summary | attribute\n"
	"        }\n"
	"        field score type double {\n"
	"            indexing: summary | attribute\n"
	"        }\n"
	"        field flag type bool {\n"
	"            indexing: summary | attribute\n"
	"        }\n"
	"        field emb type tensor<float>(x[3]) {\n"
	"            indexing: summary | attribute\n"
	"            attribute {\n"
	"                distance-metric: euclidean\n"
	"            }\n"
	"        }\n"
	"    }\n"
	"    rank-profile default {\n"
	"        first-phase {\n"
	"            expression: attribute(price)\n"
	"        }\n"
	"    }\n"
	"    rank-profile weighted {\n"
	"        inputs {\n"
	"            query(w) double\n"
	"        }\n"
	"        first-phase {\n"
	"            expression: attribute(price) * query(w) + attribute(score)\n"
	"        }\n"
	"        match-features: attribute(score)\n"
	"    }\n"
	"    rank-profile two {\n"
	"        first-phase {\n"
	"            expression: attribute(price)\n"
	"        }\n"
	"        second-phase {\n"
	"            rerank-count: 2\n"
	"            expression: attribute(score)\n"
	"        }\n"
	"    }\n"
	"    rank-profile model {\n"
	"        onnx-model tiny {\n"
	"            file: models/tiny.onnx\n"
	"            input \"x\": attribute(emb)\n"
	"            output \"y\": out\n"
	"        }\n"
	"        first-phase {\n"
	"            expression: attribute(price)\n"
	"        }\n"
	"        second-phase {\n"
	"            rerank-count: 3\n"
	"            expression: sum(onnx(tiny).out)\n"
	"        }\n"
	"        match-features: firstPhase\n"
	"    }\n"
	"    rank-profile near {\n"
	"        inputs {\n"
	"            query(q) tensor<float>(x[3])\n"
	"        }\n"
	"        first-phase {\n"
	"            expression: closeness(field, emb)\n"
	"        }\n"
	"    }\n"
	"}\n";

/* The documents: key k has price 10k, a score, flag = k odd, and emb. */
#define NDOC 6
static const int prices[NDOC] = { 10, 20, 30, 40, 50, 60 };
static const double scores[NDOC] = { 0.5, 3.0, 1.0, 2.0, 0.25, 1.5 };
static const char *titles[NDOC] = { "lamp", "desk", "lamp", "chair", "sofa", "rug" };
static const float embs[NDOC][3] = {
	{ 0, 0, 0 }, { 1, 0, 0 }, { 0, 2, 0 }, { 0, 0, 3 }, { 1, 1, 1 }, { 4, 4, 4 },
};

struct fixture {
	char dir[64];
	char app[128];
	struct strata *db;
};

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void doc_line(char *buf, size_t n, int i)
{
	snprintf(buf, n,
	         "{\"put\": \"id:test:item::%d\", \"fields\": {\"title\": \"%s\", \"price\": %d, "
	         "\"score\": %g, \"flag\": %s, \"emb\": [%g, %g, %g]}}",
	         i + 1, titles[i], prices[i], scores[i], (i + 1) % 2 ? "true" : "false",
	         (double)embs[i][0], (double)embs[i][1], (double)embs[i][2]);
}

struct reported {
	int n;
	long lines[16];
	int codes[16];
	char msgs[16][256];
};

static void report_cb(void *ud, long line, int code, const char *msg)
{
	struct reported *r = ud;
	if (r->n < 16) {
		r->lines[r->n] = line;
		r->codes[r->n] = code;
		snprintf(r->msgs[r->n], sizeof r->msgs[0], "%s", msg);
	}
	r->n++;
}

static void rm_rf(const char *dir)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

/* A new temporary folder dir (64 bytes, from template tmpl) holding an
 * application app: app/schemas/NAME.sd with the text sd, and app/models
 * for the caller's models.  0 or -1. */
static int make_app(const char *tmpl, char *dir, char *app, size_t napp, const char *name,
                    const char *sd)
{
	snprintf(dir, 64, "%s", tmpl);
	if (!mkdtemp(dir))
		return -1;
	snprintf(app, napp, "%s/app", dir);
	char path[256];
	mkdir(app, 0777);
	snprintf(path, sizeof path, "%s/schemas", app);
	mkdir(path, 0777);
	snprintf(path, sizeof path, "%s/models", app);
	mkdir(path, 0777);
	snprintf(path, sizeof path, "%s/schemas/%s.sd", app, name);
	write_file(path, sd);
	return 0;
}

/* Write the app, open it and feed the documents as JSON Lines with one bad
 * line (line 3) among them. */
static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof *fx);
	if (make_app("/tmp/strata-engine.XXXXXX", fx->dir, fx->app, sizeof fx->app, "item",
	             item_sd) != 0)
		return -1;
	char path[256];
	/* models/tiny.onnx: y[batch, 1] = x[batch, 3] . (1, 2, 3) */
	snprintf(path, sizeof path, "%s/models/tiny.onnx", fx->app);
	struct mb_model *m = mb_new("tiny", 17);
	static const float w[3] = { 1, 2, 3 };
	mb_input(m, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 3 }, (const char *[]){ "batch", "" });
	mb_init(m, "w", BASE_DT_FLOAT, 2, (int64_t[]){ 3, 1 }, w);
	mb_node(m, "MatMul", "x,w", "y");
	mb_output(m, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 1 }, (const char *[]){ "batch", "" });
	if (mb_save(m, path) != 0)
		return -1;
	mb_free(m);
	struct strata_error err = { 0 };
	if (strata_open(fx->app, NULL, &fx->db, &err) != 0) {
		fprintf(stderr, "open: %s\n", err.msg);
		return -1;
	}
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	strata_close(fx->db);
	rm_rf(fx->dir);
	free(fx);
	return 0;
}

static void feed_all(struct fixture *fx)
{
	char path[256], line[512];
	snprintf(path, sizeof path, "%s/feed.jsonl", fx->dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < NDOC; i++) {
		doc_line(line, sizeof line, i);
		fprintf(f, "%s\n", line);
		if (i == 1) /* line 3: a bad price */
			fputs("{\"put\": \"id:test:item::99\", \"fields\": {\"price\": \"cheap\"}}\n", f);
		if (i == 3)
			fputs("\n", f); /* a blank line is skipped */
	}
	fclose(f);
	struct reported r = { 0 };
	struct strata_feed_stats st;
	struct strata_error err = { 0 };
	assert_int_equal(strata_feed_file(fx->db, path, report_cb, &r, &st, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_int_equal(st.ok, NDOC);
	assert_int_equal(st.failed, 1);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.lines[0], 3);
	assert_int_equal(r.codes[0], STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(r.msgs[0], "field 'price': expected an integer"));
	assert_non_null(strstr(r.msgs[0], "id:test:item::99"));
}

/* Run a query and return the parsed result (asserting success). */
static json_t *query(struct fixture *fx, const char *req)
{
	char *out = NULL;
	struct strata_error err = { 0 };
	int rc = strata_query_json(fx->db, req, &out, &err);
	if (rc)
		fail_msg("query %s: %s", req, err.msg);
	json_t *j = json_loads(out, 0, NULL);
	assert_non_null(j);
	strata_free(out);
	return j;
}

static int query_err(struct fixture *fx, const char *req, struct strata_error *err)
{
	char *out = NULL;
	int rc = strata_query_json(fx->db, req, &out, err);
	assert_null(out);
	return rc;
}

static long total_count(json_t *r)
{
	return (long)json_integer_value(
		json_object_get(json_object_get(json_object_get(r, "root"), "fields"), "totalCount"));
}

static json_t *children(json_t *r)
{
	return json_object_get(json_object_get(r, "root"), "children");
}

/* The ids of the hits, "1,3,..." (keys only). */
static void hit_keys(json_t *r, char *buf, size_t n)
{
	buf[0] = 0;
	size_t i;
	json_t *c;
	json_array_foreach(children(r), i, c) {
		const char *id = json_string_value(json_object_get(c, "id"));
		const char *k = strrchr(id, ':') + 1;
		size_t l = strlen(buf);
		snprintf(buf + l, n - l, "%s%s", i ? "," : "", k);
	}
}

static double relevance(json_t *r, size_t i)
{
	return json_number_value(json_object_get(json_array_get(children(r), i), "relevance"));
}

static void expect_keys(struct fixture *fx, const char *req, long total, const char *keys)
{
	json_t *r = query(fx, req);
	char got[256];
	hit_keys(r, got, sizeof got);
	if (strcmp(got, keys) != 0 || total_count(r) != total)
		fail_msg("%s: got [%s] of %ld, want [%s] of %ld", req, got, total_count(r), keys, total);
	json_decref(r);
}

/* The result of "select * from sources * where <cond>". */
static json_t *where(struct fixture *fx, const char *cond)
{
	char req[512];
	snprintf(req, sizeof req, "{\"yql\": \"select * from sources * where %s\"}", cond);
	return query(fx, req);
}

static void expect_where(struct fixture *fx, const char *cond, long total, const char *keys)
{
	char req[512];
	snprintf(req, sizeof req, "{\"yql\": \"select * from sources * where %s\"}", cond);
	expect_keys(fx, req, total, keys);
}

static void test_feed_and_get(void **state)
{
	struct fixture *fx = *state;
	feed_all(fx);
	char *doc = NULL;
	struct strata_error err = { 0 };
	assert_int_equal(strata_get_json(fx->db, "id:test:item::2", &doc, &err), 0);
	json_t *j = json_loads(doc, 0, NULL);
	strata_free(doc);
	json_t *f = json_object_get(j, "fields");
	assert_string_equal(json_string_value(json_object_get(j, "id")), "id:test:item::2");
	assert_string_equal(json_string_value(json_object_get(f, "title")), "desk");
	assert_int_equal(json_integer_value(json_object_get(f, "price")), 20);
	assert_true(json_number_value(json_object_get(f, "score")) == 3.0);
	assert_true(json_is_false(json_object_get(f, "flag")));
	json_t *emb = json_object_get(f, "emb");
	assert_string_equal(json_string_value(json_object_get(emb, "type")), "tensor<float>(x[3])");
	assert_true(json_number_value(json_array_get(json_object_get(emb, "values"), 0)) == 1.0);
	json_decref(j);
	/* the bad one is not there; malformed ids and unknown types are refused */
	assert_int_equal(strata_get_json(fx->db, "id:test:item::99", &doc, &err), STRATA_NOT_FOUND);
	assert_null(doc);
	assert_int_equal(strata_get_json(fx->db, "not-an-id", &doc, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "bad document id 'not-an-id'"));
	assert_int_equal(strata_get_json(fx->db, "id:test:nosuch::1", &doc, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "unknown document type 'nosuch'"));
	/* n= and g= ids are valid (and name other documents than id:test:item::2) */
	assert_int_equal(strata_get_json(fx->db, "id:test:item:n=5:2", &doc, &err), STRATA_NOT_FOUND);
	assert_int_equal(strata_feed_json(fx->db, "{\"put\": \"id:test:item:g=shop:2\", "
	                                          "\"fields\": {\"price\": 7}}", &err), 0);
	assert_int_equal(strata_get_json(fx->db, "id:test:item:g=shop:2", &doc, &err), 0);
	assert_non_null(strstr(doc, "\"price\":7"));
	strata_free(doc);
	assert_int_equal(strata_get_json(fx->db, "id:test:item:x=5:2", &doc, &err),
	                 STRATA_INVALID_ARGUMENT);
}

static void test_feed_array(void **state)
{
	struct fixture *fx = *state;
	char path[256];
	snprintf(path, sizeof path, "%s/feed.json", fx->dir);
	write_file(path,
	           "[\n"
	           "  {\"put\": \"id:test:item::7\", \"fields\": {\"title\": \"a\", \"price\": 70}},\n"
	           "  {\"put\": \"id:test:item::8\",\n"
	           "   \"fields\": {\"emb\": [1, 2]}},\n"
	           "  {\"put\": \"id:test:item::9\", \"fields\": {\"colour\": \"red\"}},\n"
	           "  {\"update\": \"id:test:item::7\", \"fields\": {\"price\": {\"append\": 1}}},\n"
	           "  {\"put\": \"id:test:item::10\", \"fields\": {\"price\": 3000000000}},\n"
	           "  {\"put\": \"id:test:item::11\", \"fields\": {\"title\": \"b\", \"price\": 80}}\n"
	           "]\n");
	struct reported r = { 0 };
	struct strata_feed_stats st;
	struct strata_error err = { 0 };
	assert_int_equal(strata_feed_file(fx->db, path, report_cb, &r, &st, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_int_equal(st.ok, 2);
	assert_int_equal(st.failed, 4);
	assert_int_equal(r.n, 4);
	assert_int_equal(r.lines[0], 3);
	assert_non_null(strstr(r.msgs[0], "field 'emb': 2 values, expected 3"));
	assert_int_equal(r.lines[1], 5);
	assert_non_null(strstr(r.msgs[1], "field 'colour' is not in document type 'item'"));
	assert_int_equal(r.lines[2], 6);
	assert_non_null(strstr(r.msgs[2], "update operation 'append' is not supported"));
	assert_int_equal(r.lines[3], 7);
	assert_non_null(strstr(r.msgs[3], "out of range for int"));
	char *doc;
	assert_int_equal(strata_get_json(fx->db, "id:test:item::11", &doc, &err), 0);
	strata_free(doc);
	assert_int_equal(strata_get_json(fx->db, "id:test:item::8", &doc, &err), STRATA_NOT_FOUND);
	expect_keys(fx, "{\"yql\": \"select * from sources * where true\", \"hits\": 2}", 2,
	            "11,7");

	/* a broken array: reported as a parse error, nothing from before is lost */
	write_file(path, "[{\"put\": \"id:test:item::12\", \"fields\": {}}, {\"put\": ");
	assert_int_equal(strata_feed_file(fx->db, path, NULL, NULL, &st, &err), STRATA_PARSE);
	expect_keys(fx, "{\"yql\": \"select * from sources * where true\", \"hits\": 0}", 3, "");
}

static void test_update_remove(void **state)
{
	struct fixture *fx = *state;
	feed_all(fx);
	struct strata_error err = { 0 };
	assert_int_equal(strata_feed_json(fx->db, "{\"update\": \"id:test:item::1\", \"fields\": "
	                                          "{\"price\": {\"assign\": 100}}}", &err), 0);
	expect_keys(fx, "{\"yql\": \"select * from sources * where true\", \"hits\": 3}", NDOC,
	            "1,6,5");
	/* the other fields kept their values */
	char *doc;
	assert_int_equal(strata_get_json(fx->db, "id:test:item::1", &doc, &err), 0);
	assert_non_null(strstr(doc, "\"title\":\"lamp\""));
	assert_non_null(strstr(doc, "\"price\":100"));
	strata_free(doc);
	assert_int_equal(strata_feed_json(fx->db, "{\"update\": \"id:test:item::50\", \"fields\": "
	                                          "{\"price\": {\"assign\": 5}}}", &err),
	                 STRATA_NOT_FOUND);
	assert_non_null(strstr(err.msg, "id:test:item::50"));
	assert_int_equal(strata_feed_json(fx->db, "{\"update\": \"id:test:item::50\", \"create\": "
	                                          "true, \"fields\": {\"price\": {\"assign\": 5}}}",
	                                  &err), 0);
	assert_int_equal(strata_feed_json(fx->db, "{\"update\": \"id:test:item::1\", \"fields\": "
	                                          "{\"price\": {\"append\": 5}}}", &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "update operation 'append' is not supported (assign, "
	                                "increment, decrement, multiply, divide are)"));
	assert_int_equal(strata_feed_json(fx->db, "{\"put\": ", &err), STRATA_PARSE);
	assert_int_equal(strata_feed_json(fx->db, "{\"put\": \"id:test:item::3\", \"fields\": "
	                                          "{\"emb\": [1, 2, 3, 4]}}", &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "field 'emb': 4 values, expected 3"));
	/* the failed put did not touch document 3 */
	assert_int_equal(strata_get_json(fx->db, "id:test:item::3", &doc, &err), 0);
	assert_non_null(strstr(doc, "\"values\":[0.0,2.0,0.0]"));
	strata_free(doc);

	assert_int_equal(strata_remove(fx->db, "id:test:item::6", &err), 0);
	assert_int_equal(strata_remove(fx->db, "id:test:item::6", &err), STRATA_NOT_FOUND);
	assert_int_equal(strata_get_json(fx->db, "id:test:item::6", &doc, &err), STRATA_NOT_FOUND);
	assert_int_equal(strata_feed_json(fx->db, "{\"remove\": \"id:test:item::5\"}", &err), 0);
	expect_keys(fx, "{\"yql\": \"select * from sources * where true\"}", NDOC - 1,
	            "1,4,3,2,50");
}

static void test_query_filters(void **state)
{
	struct fixture *fx = *state;
	feed_all(fx);
	/* default profile: relevance = price, so the order is by price descending */
	json_t *r = query(fx, "{\"yql\": \"select * from sources * where true\"}");
	assert_int_equal(total_count(r), NDOC);
	char keys[128];
	hit_keys(r, keys, sizeof keys);
	assert_string_equal(keys, "6,5,4,3,2,1");
	for (int i = 0; i < NDOC; i++)
		assert_true(relevance(r, (size_t)i) == prices[NDOC - 1 - i]);
	json_t *c0 = json_array_get(children(r), 0);
	json_t *f0 = json_object_get(c0, "fields");
	assert_string_equal(json_string_value(json_object_get(c0, "source")), "item");
	assert_string_equal(json_string_value(json_object_get(f0, "title")), "rug");
	assert_string_equal(json_string_value(json_object_get(f0, "documentid")), "id:test:item::6");
	json_decref(r);

#define Q(cond, total, keys) expect_where(fx, cond, total, keys)
	Q("price < 35", 3, "3,2,1");
	Q("price <= 30 and price >= 20", 2, "3,2");
	Q("range(price, 20, 40)", 3, "4,3,2");
	Q("title contains 'lamp'", 2, "3,1");
	Q("title contains \\\"lam\\\"", 0, "");
	Q("flag = true", 3, "5,3,1");
	Q("!(flag = true) and price > 20", 2, "6,4");
	Q("score > 1.2 or price = 10", 4, "6,4,2,1");
	Q("false", 0, "");
	Q("true limit 4 offset 1", NDOC, "5,4,3");
	/* hits and offset in the request */
	expect_keys(fx, "{\"yql\": \"select * from item where true\", \"hits\": 2, \"offset\": 3}",
	            NDOC, "3,2");
	expect_keys(fx, "{\"yql\": \"select * from sources item where true\", \"offset\": 10}",
	            NDOC, "");
	/* selected fields only */
	r = query(fx, "{\"yql\": \"select title from sources * where price = 20\"}");
	f0 = json_object_get(json_array_get(children(r), 0), "fields");
	assert_int_equal(json_object_size(f0), 1);
	assert_string_equal(json_string_value(json_object_get(f0, "title")), "desk");
	json_decref(r);
#undef Q
}

/* The group hits of a grouping result: "value:count()" for each. */
static void group_summary(json_t *r, char *buf, size_t n)
{
	json_t *root = json_array_get(children(r), 0);
	assert_string_equal(json_string_value(json_object_get(root, "id")), "group:root:0");
	json_t *list = json_array_get(json_object_get(root, "children"), 0);
	buf[0] = 0;
	size_t i;
	json_t *g;
	json_array_foreach(json_object_get(list, "children"), i, g) {
		size_t l = strlen(buf);
		snprintf(buf + l, n - l, "%s%s:%lld", i ? "," : "",
		         json_string_value(json_object_get(g, "value")),
		         (long long)json_integer_value(
		                 json_object_get(json_object_get(g, "fields"), "count()")));
	}
}

/* in, matches, order by, and grouping in Vespa's shape (titles lamp desk
 * lamp chair sofa rug, prices 10..60, scores .5 3 1 2 .25 1.5). */
static void test_query_yql(void **state)
{
	struct fixture *fx = *state;
	feed_all(fx);
#define Q(cond, total, keys) expect_where(fx, cond, total, keys)
	Q("price in (20, 40, 45)", 2, "4,2");
	Q("title in ('lamp', 'rug')", 3, "6,3,1");
	Q("score in (1.5, 0.25) and !(price in (60))", 1, "5");
	Q("title matches 'A'", 4, "5,4,3,1");     /* case-insensitive, anywhere */
	Q("title matches '^(l|r)' or title matches 'r$'", 4, "6,4,3,1");
	Q("true order by title asc, price desc", NDOC, "4,2,3,1,6,5");
	Q("true order by score desc limit 3", NDOC, "2,4,6");
	Q("true order by flag, price offset 4", NDOC, "3,5");
	Q("price > 10 order by title desc limit 2", 5, "5,6");

	/* groups by their best relevance (= price here), aggregates of each */
	json_t *r = where(fx, "true limit 0 | all(group(title) each(output(count(), sum(price), "
	                  "avg(score), min(price), max(score))))");
	char got[256];
	group_summary(r, got, sizeof got);
	assert_string_equal(got, "rug:1,sofa:1,chair:1,lamp:2,desk:1");
	assert_int_equal(json_array_size(children(r)), 1); /* limit 0: no hits */
	assert_int_equal(total_count(r), NDOC);
	json_t *list = json_array_get(json_object_get(json_array_get(children(r), 0), "children"), 0);
	assert_string_equal(json_string_value(json_object_get(list, "id")), "grouplist:title");
	assert_string_equal(json_string_value(json_object_get(list, "label")), "title");
	json_t *lamp = json_array_get(json_object_get(list, "children"), 3);
	assert_string_equal(json_string_value(json_object_get(lamp, "id")), "group:string:lamp");
	assert_true(json_real_value(json_object_get(lamp, "relevance")) == 30);
	json_t *f = json_object_get(lamp, "fields");
	assert_true(json_is_integer(json_object_get(f, "sum(price)")));
	assert_int_equal(json_integer_value(json_object_get(f, "sum(price)")), 40);
	assert_int_equal(json_integer_value(json_object_get(f, "min(price)")), 10);
	assert_true(json_real_value(json_object_get(f, "avg(score)")) == 0.75);
	assert_true(json_real_value(json_object_get(f, "max(score)")) == 1.0);
	json_decref(r);

	/* order(-count()) and max(2): lamp, then the first of the ties by value */
	r = where(fx, "true limit 0 | all(group(title) max(2) order(-count()) each(output(count())))");
	group_summary(r, got, sizeof got);
	assert_string_equal(got, "lamp:2,chair:1");
	list = json_array_get(json_object_get(json_array_get(children(r), 0), "children"), 0);
	assert_true(json_real_value(json_object_get(json_array_get(json_object_get(list, "children"),
	                                                           1), "relevance")) == 0.5);
	json_decref(r);

	/* numbers: group ids by type; hits still follow the group root */
	r = where(fx, "price >= 50 | all(group(score) each(output(count())))");
	list = json_array_get(json_object_get(json_array_get(children(r), 0), "children"), 0);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	                            json_object_get(list, "children"), 0), "id")), "group:double:1.5");
	assert_int_equal(json_array_size(children(r)), 3);
	json_decref(r);
	/* groups within groups: flag, then title inside each (odd keys 1 3 5 are true) */
	r = where(fx, "true limit 0 | all(group(flag) each(output(count()) group(title) "
	              "each(output(sum(price)))))");
	list = json_array_get(json_object_get(json_array_get(children(r), 0), "children"), 0);
	json_t *g1 = json_array_get(json_object_get(list, "children"), 0); /* rug: best relevance */
	assert_string_equal(json_string_value(json_object_get(g1, "id")), "group:long:0");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(g1, "fields"),
	                                                    "count()")), 3);
	json_t *sub = json_array_get(json_object_get(g1, "children"), 0);
	assert_string_equal(json_string_value(json_object_get(sub, "id")), "grouplist:title");
	json_t *sg = json_object_get(sub, "children");
	assert_int_equal(json_array_size(sg), 3); /* rug 60, chair 40, desk 20 */
	assert_string_equal(json_string_value(json_object_get(json_array_get(sg, 2), "value")), "desk");
	json_t *g2 = json_array_get(json_object_get(list, "children"), 1);
	sg = json_object_get(json_array_get(json_object_get(g2, "children"), 0), "children");
	assert_int_equal(json_array_size(sg), 2); /* sofa 50, lamp 10 + 30 */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(json_array_get(sg, 1),
	                                                                    "fields"), "sum(price)")),
	                 40);
	json_decref(r);

	/* side by side: the totals in the root's fields, one grouplist per group() */
	r = where(fx, "price > 30 limit 0 | all(all(group(flag) each(output(count()))) "
	              "all(output(count(), max(score))) all(group(title) max(1) each(output(count()))))");
	json_t *root = json_array_get(children(r), 0);
	json_t *rf = json_object_get(root, "fields");
	assert_int_equal(json_integer_value(json_object_get(rf, "count()")), 3);
	assert_true(json_real_value(json_object_get(rf, "max(score)")) == 2.0);
	json_t *lists = json_object_get(root, "children");
	assert_int_equal(json_array_size(lists), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(lists, 0), "id")),
	                    "grouplist:flag");
	assert_string_equal(json_string_value(json_object_get(json_array_get(lists, 1), "id")),
	                    "grouplist:title");
	json_decref(r);
	r = where(fx, "price > 30 | all(output(count(), sum(price)))");
	f = json_object_get(json_array_get(children(r), 0), "fields");
	assert_int_equal(json_integer_value(json_object_get(f, "count()")), 3);
	assert_int_equal(json_integer_value(json_object_get(f, "sum(price)")), 150);
	json_decref(r);

	struct strata_error err = { 0 };
	assert_int_equal(query_err(fx, "{\"yql\": \"select * from sources * where true order by emb\"}",
	                           &err), STRATA_INVALID_ARGUMENT);
	assert_string_equal(err.msg, "yql:1:45: order by needs a number or string attribute; "
	                             "'emb' is not one");
	assert_int_equal(query_err(fx, "{\"yql\": \"select * from sources * where true | all(group("
	                               "nope) each(output(count())))\"}", &err), STRATA_NOT_FOUND);
	assert_string_equal(err.msg, "yql:1:48: field 'nope' not found");
	assert_int_equal(query_err(fx, "{\"yql\": \"select * from sources * where price in ('a')\"}",
	                           &err), STRATA_INVALID_ARGUMENT);
	assert_string_equal(err.msg, "yql:1:31: 'in' with strings needs a string field; 'price' is "
	                             "not one");
	assert_int_equal(query_err(fx, "{\"yql\": \"select * from sources * where price matches 'a'\"}",
	                           &err), STRATA_INVALID_ARGUMENT);
	assert_string_equal(err.msg, "yql:1:31: 'matches' needs a string field; 'price' is not one");
#undef Q
}

static void test_query_profiles(void **state)
{
	struct fixture *fx = *state;
	feed_all(fx);
	/* weighted: price * w + score, with w from the request */
	json_t *r = query(fx, "{\"yql\": \"select * from sources * where true\", "
	                      "\"ranking.profile\": \"weighted\", \"input.query(w)\": -0.1}");
	double want[NDOC];
	int order[NDOC];
	for (int i = 0; i < NDOC; i++) {
		want[i] = prices[i] * -0.1 + scores[i];
		order[i] = i;
	}
	for (int i = 0; i < NDOC; i++) /* selection sort by want, descending */
		for (int k = i + 1; k < NDOC; k++)
			if (want[order[k]] > want[order[i]]) {
				int t = order[i];
				order[i] = order[k];
				order[k] = t;
			}
	for (int i = 0; i < NDOC; i++) {
		json_t *c = json_array_get(children(r), (size_t)i);
		char id[32];
		snprintf(id, sizeof id, "id:test:item::%d", order[i] + 1);
		assert_string_equal(json_string_value(json_object_get(c, "id")), id);
		assert_true(fabs(relevance(r, (size_t)i) - want[order[i]]) < 1e-9);
		json_t *mf = json_object_get(json_object_get(c, "fields"), "matchfeatures");
		assert_true(json_number_value(json_object_get(mf, "attribute(score)")) ==
		            scores[order[i]]);
	}
	json_decref(r);
	/* the nested input form and a string literal give the same */
	r = query(fx, "{\"yql\": \"select * from sources * where true\", \"ranking\": "
	              "{\"profile\": \"weighted\"}, \"input\": {\"query(w)\": \"-0.1\"}, \"hits\": 1}");
	assert_true(fabs(relevance(r, 0) - want[order[0]]) < 1e-9);
	json_decref(r);

	/* two: first phase by price, the best 2 re-ranked by score, the rest
	 * below them in price order */
	r = query(fx, "{\"yql\": \"select * from sources * where true\", "
	              "\"ranking.profile\": \"two\"}");
	char keys[128];
	hit_keys(r, keys, sizeof keys);
	assert_string_equal(keys, "6,5,4,3,2,1");
	assert_true(relevance(r, 0) == 1.5);  /* 6: score 1.5 */
	assert_true(relevance(r, 1) == 0.25); /* 5: score 0.25 */
	/* 4, 3, ...: first phase shifted down to 0.25 (the lowest re-ranked
	 * score), keeping their distances: 40 -> 0.25, 30 -> -9.75 */
	assert_true(relevance(r, 2) == 0.25);
	assert_true(relevance(r, 3) == -9.75);
	assert_true(relevance(r, 5) == -29.75);
	json_decref(r);
	r = query(fx, "{\"yql\": \"select * from sources * where price < 50\", "
	              "\"ranking.profile\": \"two\"}");
	hit_keys(r, keys, sizeof keys);
	assert_string_equal(keys, "4,3,2,1"); /* re-ranked: 4 (2.0) above 3 (1.0) */
	json_decref(r);
}

/* The model profile: first phase by price, the best 3 re-ranked by the
 * model's emb . (1, 2, 3). */
static void test_query_model(void **state)
{
	struct fixture *fx = *state;
	feed_all(fx);
	json_t *r = query(fx, "{\"yql\": \"select * from sources * where true\", "
	                      "\"ranking.profile\": \"model\"}");
	/* re-ranked: 6 (4+8+12 = 24), 4 (9), 5 (6); then 3, 2, 1 by price */
	char keys[128];
	hit_keys(r, keys, sizeof keys);
	assert_string_equal(keys, "6,4,5,3,2,1");
	assert_true(fabs(relevance(r, 0) - 24) < 1e-6);
	assert_true(fabs(relevance(r, 1) - 9) < 1e-6);
	assert_true(fabs(relevance(r, 2) - 6) < 1e-6);
	/* the rest: shifted below 6 keeping their first-phase gaps */
	assert_true(fabs(relevance(r, 3) - 6) < 1e-6);
	assert_true(fabs(relevance(r, 4) + 4) < 1e-6);
	json_t *mf = json_object_get(json_object_get(json_array_get(children(r), 1), "fields"),
	                             "matchfeatures");
	assert_true(json_number_value(json_object_get(mf, "firstPhase")) == 40);
	json_decref(r);
}

static void test_query_nn(void **state)
{
	struct fixture *fx = *state;
	feed_all(fx);
	/* q = (1, 0, 0): distances 1, 0, sqrt 5, sqrt 10, sqrt 2, sqrt 41 */
	json_t *r = query(fx, "{\"yql\": \"select * from sources * where {targetHits: 3}"
	                      "nearestNeighbor(emb, q)\", \"ranking.profile\": \"near\", "
	                      "\"input.query(q)\": [1, 0, 0]}");
	char keys[128];
	hit_keys(r, keys, sizeof keys);
	assert_string_equal(keys, "2,1,5");
	assert_int_equal(total_count(r), 3);
	assert_true(fabs(relevance(r, 0) - 1.0) < 1e-6);
	assert_true(fabs(relevance(r, 1) - 0.5) < 1e-6);
	assert_true(fabs(relevance(r, 2) - 1 / (1 + sqrt(2))) < 1e-6);
	json_decref(r);
	/* with a filter: the closest among those with price > 25 */
	r = query(fx, "{\"yql\": \"select * from sources * where {targetHits: 2}"
	              "nearestNeighbor(emb, q) and price > 25\", \"ranking.profile\": \"near\", "
	              "\"input.query(q)\": \"{{x:0}:1}\"}");
	hit_keys(r, keys, sizeof keys);
	assert_string_equal(keys, "5,3");
	json_decref(r);
}

static void test_query_errors(void **state)
{
	struct fixture *fx = *state;
	feed_all(fx);
	struct strata_error err = { 0 };
	assert_int_equal(query_err(fx, "{\"yql\": \"select * from sources * where price <\"}", &err),
	                 STRATA_PARSE);
	assert_non_null(strstr(err.msg, "yql:1:38:"));
	assert_int_equal(query_err(fx, "{\"yql\": ", &err), STRATA_PARSE);
	assert_int_equal(query_err(fx, "{\"hits\": 3}", &err), STRATA_INVALID_ARGUMENT);
	assert_int_equal(query_err(fx, "{\"yql\": \"select * from sources * where colour = 1\"}",
	                           &err), STRATA_NOT_FOUND);
	assert_string_equal(err.msg, "yql:1:31: field 'colour' not found");
	assert_int_equal(query_err(fx, "{\"yql\": \"select * from sources * where title < 1\"}",
	                           &err), STRATA_INVALID_ARGUMENT);
	assert_int_equal(query_err(fx, "{\"yql\": \"select * from nosuch where true\"}", &err),
	                 STRATA_NOT_FOUND);
	assert_non_null(strstr(err.msg, "nosuch"));
	assert_int_equal(query_err(fx, "{\"yql\": \"select * from sources * where true\", "
	                               "\"ranking.profile\": \"nope\"}", &err), STRATA_NOT_FOUND);
	assert_string_equal(err.msg, "rank profile 'nope' not found in schema 'item'");
	assert_int_equal(query_err(fx, "{\"yql\": \"select * from sources * where {targetHits: 2}"
	                               "nearestNeighbor(emb, q)\", \"ranking.profile\": \"near\", "
	                               "\"input.query(q)\": [1, 0]}", &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_string_equal(err.msg, "query input 'query(q)': 2 values, expected 3 "
	                             "(tensor(x[3]))");
	assert_int_equal(query_err(fx, "{\"yql\": \"select * from sources * where true\", "
	                               "\"input.query(zz)\": 1}", &err), STRATA_NOT_FOUND);
	assert_non_null(strstr(err.msg, "query(zz)"));
	assert_int_equal(query_err(fx, "{\"yql\": \"select * from sources * where true\", "
	                               "\"hits\": 1000}", &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "hits"));
	assert_int_equal(query_err(fx, "{\"yql\": \"select * from sources * where true\", "
	                               "\"hits\": \"lots\"}", &err), STRATA_INVALID_ARGUMENT);
	/* nothing was lost */
	expect_keys(fx, "{\"yql\": \"select * from sources * where true\", \"hits\": 1}", NDOC, "6");
}

/* ---- model inputs in place, and the pools ------------------------------------------------ */

/* The "vec" application: VDOCS documents with a tensor<float>(x[VDIM])
 * attribute; lin.onnx, y[batch, 1] = x[batch, VDIM] . lin_w, runs per
 * document in the first phase and once for the best VRERANK in the second. */
#define VDIM 16
#define VDOCS 40
#define VRERANK 5

static const char *vec_sd =
	"schema vec {\n"
	"    document vec {\n"
	"        field emb type tensor<float>(x[16]) {\n"
	"            indexing: attribute\n"
	"        }\n"
	"        field price type int {\n"
	"            indexing: summary | attribute\n"
	"        }\n"
	"    }\n"
	"    rank-profile inplace {\n"
	"        inputs {\n"
	"            query(q) tensor<float>(x[16])\n"
	"        }\n"
	"        onnx-model lin {\n"
	"            file: models/lin.onnx\n"
	"            input \"x\": attribute(emb)\n"
	"            output \"y\": out\n"
	"        }\n"
	"        first-phase {\n"
	"            expression: sum(onnx(lin).out) + sum(query(q) * attribute(emb))\n"
	"        }\n"
	"        second-phase {\n"
	"            rerank-count: 5\n"
	"            expression: sum(onnx(lin).out) * 2 + attribute(price)\n"
	"        }\n"
	"        match-features: onnx(lin).out firstPhase\n"
	"    }\n"
	"}\n";

/* Small multiples of 1/4: every product and sum below is exact in float. */
static float vec_emb(int doc, int i)
{
	return (float)((doc * 7 + i * 3) % 11 - 5) * 0.25f;
}

static float lin_w(int i)
{
	return (float)(i % 5 - 2) * 0.5f;
}

struct vfixture {
	char dir[64];
	char app[128];
	struct strata *db;
};

static int vec_setup(void **state)
{
	struct vfixture *fx = calloc(1, sizeof *fx);
	if (make_app("/tmp/strata-pools.XXXXXX", fx->dir, fx->app, sizeof fx->app, "vec",
	             vec_sd) != 0)
		return -1;
	char path[256];
	snprintf(path, sizeof path, "%s/models/lin.onnx", fx->app);
	float w[VDIM];
	for (int i = 0; i < VDIM; i++)
		w[i] = lin_w(i);
	struct mb_model *m = mb_new("lin", 17);
	mb_input(m, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, VDIM }, (const char *[]){ "batch", "" });
	mb_init(m, "w", BASE_DT_FLOAT, 2, (int64_t[]){ VDIM, 1 }, w);
	mb_node(m, "MatMul", "x,w", "y");
	mb_output(m, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 1 }, (const char *[]){ "batch", "" });
	if (mb_save(m, path) != 0)
		return -1;
	mb_free(m);
	/* the documents, fed in one batch */
	snprintf(path, sizeof path, "%s/feed.jsonl", fx->dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	for (int d = 0; d < VDOCS; d++) {
		fprintf(f, "{\"put\": \"id:test:vec::%d\", \"fields\": {\"price\": %d, \"emb\": [",
		        d, d % 4);
		for (int i = 0; i < VDIM; i++)
			fprintf(f, "%s%g", i ? ", " : "", (double)vec_emb(d, i));
		fputs("]}}\n", f);
	}
	fclose(f);
	struct strata_error err = { 0 };
	struct strata_feed_stats st;
	if (strata_open(fx->app, NULL, &fx->db, &err) != 0 ||
	    strata_feed_file(fx->db, path, NULL, NULL, &st, &err) != 0 || st.ok != VDOCS) {
		fprintf(stderr, "vec setup: %s\n", err.msg);
		return -1;
	}
	strata_close(fx->db);
	fx->db = NULL;
	*state = fx;
	return 0;
}

static int vec_teardown(void **state)
{
	struct vfixture *fx = *state;
	strata_close(fx->db);
	rm_rf(fx->dir);
	free(fx);
	return 0;
}

static void vec_open(struct vfixture *fx, int generations)
{
	struct strata_options o = { .pool_generations = generations };
	struct strata_error err = { 0 };
	strata_close(fx->db);
	fx->db = NULL;
	if (strata_open(fx->app, &o, &fx->db, &err) != 0)
		fail_msg("open: %s", err.msg);
}

/* A request of the inplace profile with query(q)[i] = (i + shift) % 3 - 1. */
static void vec_request(char *buf, size_t n, int shift)
{
	int k = snprintf(buf, n, "{\"yql\": \"select * from sources * where true\", "
	                         "\"ranking.profile\": \"inplace\", \"input.query(q)\": [");
	for (int i = 0; i < VDIM; i++)
		k += snprintf(buf + k, n - (size_t)k, "%s%d", i ? ", " : "", (i + shift) % 3 - 1);
	snprintf(buf + k, n - (size_t)k, "]}");
}

static char *vec_query(struct vfixture *fx, const char *req)
{
	char *out = NULL;
	struct strata_error err = { 0 };
	if (strata_query_json(fx->db, req, &out, &err) != 0)
		fail_msg("query: %s", err.msg);
	return out;
}

/* The model runs the library makes, seen at the runtime's door: this
 * binary is linked with -Wl,--wrap=runtime_run (runwrap.h), so rank/'s calls
 * reach __wrap_runtime_run, which notes where the first input's cells were
 * and how many rows it had, then runs the model.  Noted only while
 * runs.watch is set, by one thread. */
#define MAX_RUNS 64
static struct {
	int watch;
	int n;                         /* runs seen, noted or not */
	const void *data[MAX_RUNS];
	int64_t rows[MAX_RUNS];
} runs;

int __wrap_runtime_run(struct rt_ctx *cx, const struct rt_tensor *in, struct rt_tensor *out,
                       struct strata_error *err)
{
	if (runs.watch) {
		if (runs.n < MAX_RUNS) {
			runs.data[runs.n] = in[0].data;
			runs.rows[runs.n] = in[0].dims[0];
		}
		runs.n++;
	}
	return __real_runtime_run(cx, in, out, err);
}

/* Whether row holds document d's emb. */
static int is_emb_of(const float *row, int d)
{
	for (int i = 0; i < VDIM; i++)
		if (row[i] != vec_emb(d, i))
			return 0;
	return 1;
}

/* One query of the inplace profile, its model runs noted: one per document
 * in the first phase, one batched run of the re-ranked in the second, then
 * one per hit not re-ranked, for its match-features. */
static void watched_query(struct vfixture *fx, const char *req)
{
	memset(&runs, 0, sizeof runs);
	runs.watch = 1;
	char *out = vec_query(fx, req);
	runs.watch = 0;
	strata_free(out);
	assert_true(runs.n > VDOCS && runs.n <= MAX_RUNS);
}

/* Per document the runtime reads the attribute where the store keeps it, in
 * the memory map, not a copy; the batched second phase reads rows stacked
 * into a buffer the query keeps: not in the map, and the same buffer again
 * in the next query (the query is reused with its buffers). */
static void test_inputs_in_place(void **state)
{
	struct vfixture *fx = *state;
	vec_open(fx, 0);
	char req[1024];
	vec_request(req, sizeof req, 0);
	watched_query(fx, req);
	/* the first phase, over the documents in lid order */
	for (int d = 0; d < VDOCS; d++) {
		assert_int_equal(runs.rows[d], 1);
		assert_true(store_in_map(fx->db->env, runs.data[d]));
		assert_true(is_emb_of(runs.data[d], d));
	}
	/* the second phase: the rows of the re-ranked candidates */
	const void *stacked = runs.data[VDOCS];
	assert_int_equal(runs.rows[VDOCS], VRERANK);
	assert_false(store_in_map(fx->db->env, stacked));
	for (int r = 0; r < VRERANK; r++) {
		int found = 0;
		for (int d = 0; d < VDOCS && !found; d++)
			found = is_emb_of((const float *)stacked + r * VDIM, d);
		assert_true(found);
	}
	/* the features of the hits not re-ranked read in place too */
	for (int k = VDOCS + 1; k < runs.n; k++) {
		assert_int_equal(runs.rows[k], 1);
		assert_true(store_in_map(fx->db->env, runs.data[k]));
	}
	int n = runs.n;
	watched_query(fx, req);
	assert_int_equal(runs.n, n);
	assert_ptr_equal(runs.data[VDOCS], stacked);
}

/* The scores the inplace profile gives: lin(d) and the first phase. */
static double lin_of(int d)
{
	float y = 0;
	for (int i = 0; i < VDIM; i++)
		y += vec_emb(d, i) * lin_w(i);
	return y;
}

/* After the first query of a shape, later ones allocate nothing in the rank
 * VM and the runtime and take their model context from the pool (one hit,
 * no miss); the answers stay the same.  Without pools every query
 * allocates and misses. */
static void test_pools_steady_state(void **state)
{
	struct vfixture *fx = *state;
	char req[1024], other[1024];
	vec_request(req, sizeof req, 0);
	vec_request(other, sizeof other, 1);
	struct strata_stats a, b;
	vec_open(fx, 0);
	char *first = NULL;
	for (int i = 0; i < 5; i++) {
		strata_stats(fx->db, &a);
		char *out = vec_query(fx, i == 3 ? other : req);
		strata_stats(fx->db, &b);
		assert_int_equal(b.queries - a.queries, 1);
		if (i == 0) {
			first = out;
			assert_true(b.rank_allocs > a.rank_allocs);
			assert_int_equal(b.pool_misses - a.pool_misses, 1);
			continue;
		}
		assert_int_equal(b.rank_allocs - a.rank_allocs, 0);
		assert_int_equal(b.pool_misses - a.pool_misses, 0);
		assert_int_equal(b.pool_hits - a.pool_hits, 1);
		if (i == 3)
			assert_string_not_equal(out, first);
		else
			assert_string_equal(out, first);
		strata_free(out);
	}
	/* the best hit's relevance is the second phase: 2 lin + price */
	json_t *r = json_loads(first, 0, NULL);
	assert_non_null(r);
	json_t *c0 = json_array_get(children(r), 0);
	const char *id = json_string_value(json_object_get(c0, "id"));
	int d = atoi(strrchr(id, ':') + 1);
	assert_true(fabs(relevance(r, 0) - (2 * lin_of(d) + d % 4)) < 1e-6);
	json_decref(r);

	/* no pools: the same answers, each query allocating and missing */
	vec_open(fx, -1);
	for (int i = 0; i < 3; i++) {
		strata_stats(fx->db, &a);
		char *out = vec_query(fx, req);
		strata_stats(fx->db, &b);
		assert_true(b.rank_allocs > a.rank_allocs);
		assert_int_equal(b.pool_misses - a.pool_misses, 1);
		assert_int_equal(b.pool_hits - a.pool_hits, 0);
		assert_string_equal(out, first);
		strata_free(out);
	}
	strata_free(first);

	/* generations out of range */
	struct strata *db = NULL;
	struct strata_error err = { 0 };
	struct strata_options o = { .pool_generations = -2 };
	assert_int_equal(strata_open(fx->app, &o, &db, &err), STRATA_INVALID_ARGUMENT);
	o.pool_generations = 1025;
	assert_int_equal(strata_open(fx->app, &o, &db, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "pool_generations"));
	assert_null(db);
}

/* Queries from several threads at once on one handle: each thread's answer
 * is the one a lone query gives, and with one generation per thread no
 * more run contexts are ever made than there are threads (a context is
 * made only when every existing one is in use). */
#define VTHREADS 4
#define VTHREAD_QUERIES 8

struct vthread {
	struct strata *db;
	const char *req;
	const char *want;
	int bad;
};

static void *vthread_run(void *ud)
{
	struct vthread *t = ud;
	for (int i = 0; i < VTHREAD_QUERIES; i++) {
		char *out = NULL;
		struct strata_error err = { 0 };
		if (strata_query_json(t->db, t->req, &out, &err) != 0 || strcmp(out, t->want) != 0)
			t->bad++;
		strata_free(out);
	}
	return NULL;
}

/* The ids of a result's hits, in order, into ids[] (at most max). */
static int result_ids(const char *out, char ids[][32], int max)
{
	json_t *r = json_loads(out, 0, NULL);
	assert_non_null(r);
	int n = 0;
	for (size_t i = 0; i < json_array_size(children(r)) && n < max; i++)
		snprintf(ids[n++], 32, "%s",
		         json_string_value(json_object_get(json_array_get(children(r), i), "id")));
	json_decref(r);
	return n;
}

/* Only the page and what comes before it is ordered, and the re-ranked few
 * are picked without ordering the rest: every page must still be the slice
 * of the full ranking, with first and second phase. */
static void test_pages_of_the_ranking(void **state)
{
	struct vfixture *fx = *state;
	vec_open(fx, 0);
	char base[1024], req[1100];
	vec_request(base, sizeof base, 2);
	base[strlen(base) - 1] = 0; /* drop the closing brace */
	snprintf(req, sizeof req, "%s, \"hits\": %d}", base, VDOCS);
	char *out = vec_query(fx, req);
	char all[VDOCS][32], page[VDOCS][32];
	assert_int_equal(result_ids(out, all, VDOCS), VDOCS);
	strata_free(out);
	const int pages[][2] = { { 0, 1 }, { 0, 3 }, { 2, 5 }, { 4, 2 }, { 7, 2 }, { 12, 6 },
		                 { 35, 10 }, { 39, 1 }, { 40, 5 } };
	for (size_t p = 0; p < sizeof pages / sizeof *pages; p++) {
		snprintf(req, sizeof req, "%s, \"offset\": %d, \"hits\": %d}", base, pages[p][0],
		         pages[p][1]);
		out = vec_query(fx, req);
		int n = result_ids(out, page, VDOCS);
		strata_free(out);
		int want = VDOCS - pages[p][0] < pages[p][1] ? VDOCS - pages[p][0] : pages[p][1];
		assert_int_equal(n, want < 0 ? 0 : want);
		for (int i = 0; i < n; i++)
			assert_string_equal(page[i], all[pages[p][0] + i]);
	}
}

static void test_pools_threads(void **state)
{
	struct vfixture *fx = *state;
	char req[1024];
	vec_request(req, sizeof req, 2);
	vec_open(fx, VTHREADS);
	char *want = vec_query(fx, req);
	struct strata_stats a, b;
	strata_stats(fx->db, &a);
	assert_int_equal(a.pool_misses, 1);
	pthread_t th[VTHREADS];
	struct vthread t[VTHREADS];
	for (int i = 0; i < VTHREADS; i++) {
		t[i] = (struct vthread){ fx->db, req, want, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, vthread_run, &t[i]), 0);
	}
	for (int i = 0; i < VTHREADS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(t[i].bad, 0);
	}
	strata_stats(fx->db, &b);
	assert_int_equal(b.queries - a.queries, VTHREADS * VTHREAD_QUERIES);
	assert_true(b.pool_misses <= VTHREADS);
	assert_int_equal(b.pool_hits + b.pool_misses, 1 + VTHREADS * VTHREAD_QUERIES);
	strata_free(want);
}

int main(void)
{
	const struct CMUnitTest unit[] = {
		cmocka_unit_test(test_tensor_forms),
		cmocka_unit_test(test_tensor_errors),
		cmocka_unit_test(test_tensor_to_json),
		cmocka_unit_test(test_sparse_forms),
		cmocka_unit_test(test_sparse_errors),
		cmocka_unit_test(test_sparse_fields),
	};
	const struct CMUnitTest api[] = {
		cmocka_unit_test_setup_teardown(test_feed_and_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_feed_array, setup, teardown),
		cmocka_unit_test_setup_teardown(test_update_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_query_filters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_query_yql, setup, teardown),
		cmocka_unit_test_setup_teardown(test_query_profiles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_query_model, setup, teardown),
		cmocka_unit_test_setup_teardown(test_query_nn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_query_errors, setup, teardown),
	};
	const struct CMUnitTest pools[] = {
		cmocka_unit_test(test_inputs_in_place),
		cmocka_unit_test(test_pools_steady_state),
		cmocka_unit_test(test_pools_threads),
		cmocka_unit_test(test_pages_of_the_ranking),
	};
	int failed = cmocka_run_group_tests_name("engine units", unit, NULL, NULL);
	failed += cmocka_run_group_tests_name("engine api", api, NULL, NULL);
	return failed + cmocka_run_group_tests_name("engine pools", pools, vec_setup, vec_teardown);
}
