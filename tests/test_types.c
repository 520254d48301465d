/*
 * test_types.c: the field types byte, uri, raw, reference and predicate,
 * imported fields and the YQL predicate() operator.  The schema side: what
 * each type sets, and its errors with positions; the engine side: feed and
 * get round trips, bad values with their messages (nothing written),
 * predicates matched against a truth table evaluated by hand, and imported
 * fields in ranking and summaries as the parent comes, changes and goes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>

#include "../rank/rank.h"
#include "dbtest.h"

static const char *const PARENT_SD =
	"schema parent {\n"
	"  document parent {\n"
	"    field ctrs type tensor<float>(cat{}) { indexing: attribute }\n"
	"    field pop type int { indexing: attribute | summary }\n"
	"    field name type string { indexing: attribute | summary }\n"
	"  }\n"
	"}\n";

static const char *const CHILD_SD =
	"schema child {\n"
	"  document child {\n"
	"    field b type byte { indexing: summary | attribute\n attribute: paged }\n"
	"    field img type raw { indexing: summary }\n"
	"    field link type uri { indexing: summary }\n"
	"    field target type predicate {\n"
	"      indexing: attribute | summary\n"
	"      index {\n"
	"        arity: 2\n"
	"        lower-bound: 0\n"
	"        upper-bound: 100\n"
	"        dense-posting-list-threshold: 0.4\n"
	"      }\n"
	"    }\n"
	"    field cats type tensor<float>(cat{}) { indexing: attribute }\n"
	"    field ref type reference<parent> { indexing: attribute }\n"
	"  }\n"
	"  import field ref.ctrs as pctrs {}\n"
	"  import field ref.pop as ppop {}\n"
	"  import field ref.name as pname { }\n"
	"  raw-as-base64-in-summary: true\n"
	"  document-summary withparent {\n"
	"    summary b {}\n"
	"    summary ppop {}\n"
	"    summary pname {}\n"
	"  }\n"
	"  rank-profile default {\n"
	"    first-phase {\n"
	"      expression: attribute(b) + attribute(ppop) + sum(attribute(cats) * attribute(pctrs))\n"
	"    }\n"
	"    summary-features: subqueries(target).lsb subqueries(target).msb\n"
	"  }\n"
	"}\n";

/* ---- the schema side --------------------------------------------------------- */

static char *new_app(const char *child_sd)
{
	char *dir = dbtest_app("strata-types.", "parent.sd", PARENT_SD);
	apptest_write(dir, "schemas/child.sd", child_sd);
	return dir;
}

static const struct rank_field *field_of(const struct rank_schema *s, const char *name)
{
	int i = rank_schema_field_index(s, name);
	if (i < 0)
		fail_msg("no field %s", name);
	return rank_schema_field(s, i);
}

static void test_schema(void **state)
{
	(void)state;
	char *dir = new_app(CHILD_SD);
	apptest_write(dir, "schemas/kid.sd", "schema kid {\n  document kid inherits child {\n  }\n}\n");
	struct rank_app *app = apptest_load(dir);
	const struct rank_schema *s = rank_app_schema_find(app, "child");
	assert_non_null(s);
	const struct rank_field *f = field_of(s, "b");
	assert_int_equal(f->type, RANK_FT_INT);
	assert_true(f->byte && f->attribute);
	assert_int_equal(field_of(s, "img")->type, RANK_FT_RAW);
	assert_int_equal(field_of(s, "link")->type, RANK_FT_STRING);
	f = field_of(s, "target");
	assert_int_equal(f->type, RANK_FT_PREDICATE);
	assert_int_equal(f->pred_arity, 2);
	assert_true(f->pred_lower == 0 && f->pred_upper == 100);
	f = field_of(s, "ref");
	assert_int_equal(f->type, RANK_FT_REFERENCE);
	assert_string_equal(f->ref_doctype, "parent");
	/* imported fields take the parent attribute's type */
	f = field_of(s, "pctrs");
	assert_true(f->imported && f->attribute);
	assert_int_equal(f->type, RANK_FT_TENSOR);
	assert_true(f->rank == 1 && f->dims[0] == -1 && !strcmp(f->dim_names[0], "cat"));
	assert_int_equal(f->import_ref, rank_schema_field_index(s, "ref"));
	assert_string_equal(f->import_field, "ctrs");
	f = field_of(s, "pname");
	assert_true(f->imported && f->type == RANK_FT_STRING);
	/* a document inheriting child's gets its fields, not its imports */
	s = rank_app_schema_find(app, "kid");
	assert_true(rank_schema_field_index(s, "b") >= 0 && rank_schema_field_index(s, "ref") >= 0);
	assert_int_equal(rank_schema_field_index(s, "ppop"), -1);
	rank_app_free(app);
	/* every allocation of loading them fails in turn, cleanly */
	assert_true(apptest_load_failures(dir) > 20);
	apptest_remove(dir);
}

/* A child schema with body in place of CHILD_SD's document fields. */
static void child_fails(const char *body, int code, const char *where, const char *what)
{
	char sd[2048];
	snprintf(sd, sizeof sd, "schema child {\n  document child {\n%s\n}\n", body);
	apptest_expect_load_error(new_app(sd), code, where, what);
}

static void test_schema_errors(void **state)
{
	(void)state;
	child_fails("field r type reference<nobody> { indexing: attribute }\n  }", STRATA_TYPE,
	            "child.sd:3:24",
	            "field 'r' references document type 'nobody', which no schema of the "
	            "application declares");
	child_fails("field r type reference<parent> { indexing: attribute }\n  field s type string "
	            "{ indexing: attribute }\n  }\n  import field s.pop as p {}", STRATA_TYPE,
	            "child.sd:6:16", "import field: 's' is not a reference field of document 'child'");
	child_fails("field r type reference<parent> { indexing: attribute }\n  }\n"
	            "  import field r.nope as p {}", STRATA_TYPE, "child.sd:5:16",
	            "import field: 'nope' is not an attribute of document type 'parent'");
	child_fails("field r type reference<parent> { indexing: attribute }\n  }\n"
	            "  import field r.pop as p { indexing: summary }", STRATA_NOT_IMPLEMENTED,
	            "child.sd:5:29", "settings of an imported field ('indexing') are not supported");
	child_fails("field r type reference<parent> { indexing: attribute }\n  }\n"
	            "  import field r.pop as r {}", STRATA_TYPE, "child.sd:5:25",
	            "field 'r' is declared twice");
	child_fails("field x type raw { indexing: summary | attribute }\n  }", STRATA_NOT_IMPLEMENTED,
	            "child.sd:3:7", "raw field 'x' cannot be an attribute");
	child_fails("field x type predicate { indexing: attribute }\n  }", STRATA_TYPE, "child.sd:3:7",
	            "predicate field 'x' needs 'index { arity: N }'");
	child_fails("field x type predicate { indexing: summary\n index { arity: 2 } }\n  }",
	            STRATA_TYPE, "child.sd:3:7", "predicate field 'x' needs 'indexing: attribute'");
	child_fails("field x type predicate { indexing: attribute\n index { arity: 2\n "
	            "lower-bound: 5\n upper-bound: 4 } }\n  }", STRATA_TYPE, "child.sd:4:2",
	            "lower-bound is above upper-bound in field 'x'");
	child_fails("field x type predicate { indexing: attribute\n index { arity: 1 } }\n  }",
	            STRATA_TYPE, "child.sd:4:17", "'arity' must be an integer from 2 to 64");
	/* past int64's range: refused before any conversion (fuzz_sd) */
	child_fails("field x type predicate { indexing: attribute\n index { arity: 2\n "
	            "upper-bound: 2222222222222222222222222222 } }\n  }", STRATA_TYPE, "child.sd:5:15",
	            "'upper-bound' must be an integer from");
	child_fails("field x type int8 { }\n  }", STRATA_TYPE, "child.sd:3:14",
	            "unknown field type 'int8'");
	child_fails("field x type float16 { }\n  }", STRATA_TYPE, "child.sd:3:14",
	            "unknown field type 'float16'");
	child_fails("field x type int { }\n  }\n  raw-as-base64-in-summary: false", STRATA_NOT_IMPLEMENTED,
	            "child.sd:5:29", "raw-as-base64-in-summary: false is not supported");
	child_fails("field x type int { indexing: attribute }\n  }\n  rank-profile p { first-phase {"
	            " expression: subqueries(x).lsb } }", STRATA_TYPE, "child.sd:5:57",
	            "subqueries(): 'x' is not a predicate field");
	child_fails("field r type reference<parent> { indexing: attribute }\n  }\n  rank-profile p {"
	            " first-phase { expression: attribute(r) } }", STRATA_NOT_IMPLEMENTED,
	            "child.sd:5:56", "attribute 'r' is a reference, which rank expressions do not read");
}

/* ---- the engine side ---------------------------------------------------------- */

static int setup(void **state)
{
	struct dbtest *fx = calloc(1, sizeof *fx);
	fx->dir = new_app(CHILD_SD);
	dbtest_open_dir(fx->dir, &fx->db);
	*state = fx;
	return 0;
}

static void feed_ok(struct dbtest *fx, const char *op)
{
	dbtest_feed_json(fx->db, op);
}

static void feed_fails(struct dbtest *fx, const char *op, int code, const char *msg)
{
	dbtest_feed_fails(fx->db, op, code, msg);
}

/* The fields of document id, compact JSON with sorted keys, must be want. */
static void expect_fields(struct dbtest *fx, const char *id, const char *want)
{
	dbtest_expect_fields(fx->db, id, JSON_REAL_PRECISION(15), want);
}

static json_t *query(struct dbtest *fx, const char *request)
{
	return dbtest_query(fx->db, request);
}

static void test_feed_get(void **state)
{
	struct dbtest *fx = *state;
	feed_ok(fx, "{\"put\": \"id:t:child::1\", \"fields\": {\"b\": -128, \"img\": \"AP8QZm9v\","
	            " \"link\": \"https://a.b/c?d=1\", \"ref\": \"id:t:parent::p\","
	            " \"target\": \"  Gender  IN [ Female,'x y'] AND NOT (age in [ -5 .. ] or"
	            " \\\"a'b\\\" not in [c])\"}}");
	/* AP8QZm9v is 00 ff 10 66 6f 6f: shown as it came; the predicate in
	 * its canonical form */
	expect_fields(fx, "id:t:child::1",
	              "{\"b\":-128,\"img\":\"AP8QZm9v\",\"link\":\"https://a.b/c?d=1\","
	              "\"ref\":\"id:t:parent::p\",\"target\":\"Gender in [Female, 'x y'] and not "
	              "(age in [-5..] or 'a\\\\'b' not in [c])\"}");
	feed_ok(fx, "{\"put\": \"id:t:child::2\", \"fields\": {\"b\": 127, \"img\": \"\","
	            " \"target\": \"true\"}}");
	/* a byte is searched and ranked as an int */
	json_t *r = query(fx, "{\"yql\": \"select * from child where b < 0\"}");
	assert_int_equal(json_array_size(dbtest_hits(r)), 1);
	assert_true(json_number_value(json_object_get(json_array_get(dbtest_hits(r), 0), "relevance")) ==
	            -128.0);
	json_decref(r);
	expect_fields(fx, "id:t:child::2", "{\"b\":127,\"img\":\"\",\"target\":\"true\"}");
	feed_ok(fx, "{\"update\": \"id:t:child::2\", \"fields\": {\"img\": {\"assign\": \"YQ==\"},"
	            " \"b\": {\"assign\": 3.0}}}");
	expect_fields(fx, "id:t:child::2", "{\"b\":3,\"img\":\"YQ==\",\"target\":\"true\"}");
	/* bad values: the operation fails whole, the document stays as it was */
	static const struct {
		const char *fields, *msg;
	} bad[] = {
		{"\"b\": 128", "field 'b': 128 is out of range for byte (-128 to 127)"},
		{"\"b\": -129", "field 'b': -129 is out of range for byte (-128 to 127)"},
		{"\"b\": 1.5", "field 'b': expected an integer (byte)"},
		{"\"b\": \"1x\"", "field 'b': expected an integer (byte), got '1x'"},
		{"\"img\": \"YQ=\"", "field 'img': not base64: the length is not a multiple of 4"},
		{"\"img\": \"Y*==\"", "field 'img': not base64: a bad character at character 2"},
		{"\"img\": \"Y===\"", "field 'img': not base64: a bad character at character 2"},
		{"\"img\": \"=YQ=\"", "field 'img': not base64: a bad character at character 1"},
		{"\"img\": [1]", "field 'img': expected raw bytes as a base64 string"},
		{"\"target\": \"a in [b\"", "field 'target': bad predicate: column 8: expected ',' or "
		 "']' in a list of values"},
		{"\"target\": \"a in [b] and\"", "bad predicate: column 13: expected an attribute name"},
		{"\"target\": \"a [b]\"", "bad predicate: column 3: expected 'in' after the attribute 'a'"},
		{"\"target\": \"a in [5..1]\"", "column 12: a range's lower bound is above its upper"},
		{"\"target\": \"(a in [b]\"", "column 10: expected ')'"},
		{"\"target\": \"a in [b] c\"", "column 10: unexpected 'c'"},
		{"\"target\": \"'a in [b]\"", "column 10: a quoted value is not closed"},
		{"\"target\": \"and in [b]\"", "column 4: expected an attribute name, found 'and'"},
		{"\"target\": \"a in [99999999999999999999..]\"", "99999999999999999999 does not fit a long"},
		{"\"target\": 3", "field 'target': expected a predicate as a string"},
		{"\"ref\": \"id:t:other::x\"", "field 'ref': 'id:t:other::x' is a document of type "
		 "'other'; the field references 'parent'"},
		{"\"ref\": \"parent-7\"", "field 'ref': bad document id 'parent-7'"},
		{"\"pctrs\": {\"a\": 1}", "field 'pctrs' is imported (from field 'ctrs' of the "
		 "referenced document): it cannot be fed"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char op[512];
		snprintf(op, sizeof op, "{\"put\": \"id:t:child::2\", \"fields\": {%s}}", bad[i].fields);
		feed_fails(fx, op, STRATA_INVALID_ARGUMENT, bad[i].msg);
		expect_fields(fx, "id:t:child::2", "{\"b\":3,\"img\":\"YQ==\",\"target\":\"true\"}");
	}
}

/* Documents 1 to 7 carry the predicates below; each query's hits are the
 * documents whose predicate holds, as evaluated by hand in want. */
static void test_predicate_truth_table(void **state)
{
	struct dbtest *fx = *state;
	static const char *const preds[] = {
		"gender in [Female] and age in [20..30]",
		"gender in [Male] or age in [..19]",
		"not (hobby in [Music, Hiking])",
		"gender not in [Female] and age in [40..]",
		"true",
		"false",
		"'x y' in ['a b', \\\"c\\\\\\\"d\\\"]",
	};
	for (size_t i = 0; i < sizeof preds / sizeof preds[0]; i++) {
		char op[256];
		snprintf(op, sizeof op, "{\"put\": \"id:t:child::%zu\", \"fields\": {\"target\": \"%s\"}}",
		         i + 1, preds[i]);
		feed_ok(fx, op);
	}
	feed_ok(fx, "{\"put\": \"id:t:child::8\", \"fields\": {\"b\": 1}}"); /* no predicate */
	static const struct {
		const char *args, *want;
	} cases[] = {
		/* 1 T, 2 F (not Male, 25 > 19), 3 T (no hobby), 4 F (Female), 5 T, 6 F, 7 F */
		{"{'gender': 'Female'}, {'age': 25L}", "1,3,5"},
		/* 1 F (45), 2 T (Male), 3 F (Music), 4 F (Female given too), 5 T */
		{"{'gender': ['Female', 'Male'], 'hobby': 'Music'}, {'age': 45L}", "2,5"},
		/* 2 T (19 <= 19), 3 T, 4 F (19 < 40), 5 T */
		{"{}, {'age': 19L}", "2,3,5"},
		/* 4 T (no gender, 40 >= 40) */
		{"{}, {'age': 40L}", "3,4,5"},
		/* 7 T (a quoted key and value) */
		{"{'x y': 'c\\\"d'}, {}", "3,5,7"},
		/* ranges never match features, nor features ranges */
		{"{'age': '25'}, {'gender': 1L}", "3,5"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char req[512], got[128] = "";
		snprintf(req, sizeof req, "{\"yql\": \"select * from child where predicate(target, %s)\","
		         " \"hits\": 20}", cases[i].args);
		json_t *r = query(fx, req);
		json_t *hits = dbtest_hits(r);
		int ids[16] = {0}, n = 0;
		for (size_t k = 0; k < json_array_size(hits); k++) {
			ids[n++] = dbtest_hit_key(json_array_get(hits, k));
			json_t *sf = json_object_get(json_object_get(json_array_get(hits, k), "fields"),
			                             "summaryfeatures");
			/* every subquery matched: all 32 bits of each half */
			assert_true(json_number_value(json_object_get(sf, "subqueries(target).lsb")) ==
			            4294967295.0);
			assert_true(json_number_value(json_object_get(sf, "subqueries(target).msb")) ==
			            4294967295.0);
		}
		for (int a = 0; a < n; a++) /* by id */
			for (int b = a + 1; b < n; b++)
				if (ids[b] < ids[a]) {
					int t = ids[a];
					ids[a] = ids[b];
					ids[b] = t;
				}
		for (int a = 0; a < n; a++)
			snprintf(got + strlen(got), sizeof got - strlen(got), "%s%d", a ? "," : "", ids[a]);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("predicate(target, %s): got %s, expected %s", cases[i].args, got,
			         cases[i].want);
		json_decref(r);
	}
	/* a document outside the predicate() of an OR has no subqueries */
	json_t *r = query(fx, "{\"yql\": \"select * from child where b = 1 or "
	                                 "predicate(target, {}, {\\\"age\\\": 40L})\", \"hits\": 20}");
	int seen = 0;
	for (size_t k = 0; k < json_array_size(dbtest_hits(r)); k++) {
		json_t *h = json_array_get(dbtest_hits(r), k);
		if (strcmp(json_string_value(json_object_get(h, "id")), "id:t:child::8"))
			continue;
		seen = 1;
		json_t *sf = json_object_get(json_object_get(h, "fields"), "summaryfeatures");
		assert_true(json_number_value(json_object_get(sf, "subqueries(target).lsb")) == 0.0);
	}
	assert_true(seen);
	json_decref(r);
	/* subqueries, as in Vespa's example: placement 1 is subquery 0, 2 is 1;
	 * a document's bitmap has the subqueries its predicate holds for (the
	 * other 62 are empty: only predicates true without attributes hold
	 * there).  By hand: 2 holds for Male (0x3), 3 and 5 always, 11 needs
	 * pos 1 (0x1), 12 pos 1 or 2 (0x3), 13 pos 2 (0x2). */
	feed_ok(fx, "{\"put\": \"id:t:child::11\", \"fields\": {\"target\": \"age in [20..30] and "
	            "gender in [Female, Male] and pos in [1]\"}}");
	feed_ok(fx, "{\"put\": \"id:t:child::12\", \"fields\": {\"target\": \"gender in [Male] and "
	            "pos in [1, 2]\"}}");
	feed_ok(fx, "{\"put\": \"id:t:child::13\", \"fields\": {\"target\": \"age in [20..] and "
	            "gender in [Female, Male] and pos in [2]\"}}");
	static const char *const subq[] = {
		"{'[0,1]': {'gender': 'Male'}, '[0]': {'pos': '1'}, '[1]': {'pos': '2'}}, "
		"{'[0, 1]': {'age': 25L}}",
		"{'0x3': {'gender': 'Male'}, '0x1': {'pos': '1'}, '0X2': {'pos': '2'}}, "
		"{'0x3': {'age': 25L}}",
	};
	static const struct {
		int id;
		double lsb, msb;
	} bits[] = {{2, 3, 0}, {3, 4294967295.0, 4294967295.0}, {5, 4294967295.0, 4294967295.0},
	            {11, 1, 0}, {12, 3, 0}, {13, 2, 0}};
	for (size_t i = 0; i < sizeof subq / sizeof subq[0]; i++) {
		char req[512];
		snprintf(req, sizeof req, "{\"yql\": \"select * from child where predicate(target, %s)\","
		         " \"hits\": 20}", subq[i]);
		r = query(fx, req);
		json_t *hits = dbtest_hits(r);
		assert_int_equal(json_array_size(hits), sizeof bits / sizeof bits[0]);
		for (size_t k = 0; k < json_array_size(hits); k++) {
			json_t *h = json_array_get(hits, k);
			int id = dbtest_hit_key(h);
			json_t *sf = json_object_get(json_object_get(h, "fields"), "summaryfeatures");
			size_t b = 0;
			while (b < sizeof bits / sizeof bits[0] && bits[b].id != id)
				b++;
			if (b == sizeof bits / sizeof bits[0])
				fail_msg("document %d should not match", id);
			assert_true(json_number_value(json_object_get(sf, "subqueries(target).lsb")) ==
			            bits[b].lsb);
			assert_true(json_number_value(json_object_get(sf, "subqueries(target).msb")) ==
			            bits[b].msb);
		}
		json_decref(r);
	}
	/* query errors */
	static const struct {
		const char *yql, *msg;
	} bad[] = {
		{"predicate(target, {}, {\\\"age\\\": 101L})",
		 "yql:1:27: predicate(): 'age' is 101, outside the bounds of field 'target' (0 to 100)"},
		{"predicate(target, {}, {\\\"age\\\": -1L})", "'age' is -1, outside the bounds"},
		{"predicate(b, {}, {})", "yql:1:27: predicate() needs a predicate field; 'b' is not one"},
		{"predicate(target, {\\\"0x0\\\": {\\\"a\\\": \\\"b\\\"}}, {})",
		 "'0x0' is no subquery bitmap"},
		{"predicate(target, {\\\"[64]\\\": {\\\"a\\\": \\\"b\\\"}}, {})",
		 "'[64]' is no subquery bitmap"},
		{"predicate(target, {\\\"0x1\\\": {\\\"0x2\\\": {}}}, {})",
		 "'0x2' is no subquery bitmap"},
		{"predicate(target, {\\\"a\\\": 1}, {})", "expected a string or an array of strings"},
		{"predicate(target, {}, {\\\"a\\\": \\\"x\\\"})", "expected an integer (such as 25L)"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char req[512], *out = NULL;
		struct strata_error err = {0};
		snprintf(req, sizeof req, "{\"yql\": \"select * from child where %s\"}", bad[i].yql);
		assert_int_not_equal(strata_query_json(fx->db, req, &out, &err), 0);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("%s: got '%s', expected '%s'", bad[i].yql, err.msg, bad[i].msg);
	}
}

/* The relevance of id:t:child::1 and its summary's fields, in r. */
static double child_hit(json_t *r, json_t **fields)
{
	json_t *hits = dbtest_hits(r);
	assert_int_equal(json_array_size(hits), 1);
	*fields = json_object_get(json_array_get(hits, 0), "fields");
	return json_number_value(json_object_get(json_array_get(hits, 0), "relevance"));
}

static const char *const CHILD_QUERY =
	"{\"yql\": \"select * from child where true\", \"presentation.summary\": \"withparent\"}";

static void test_imports(void **state)
{
	struct dbtest *fx = *state;
	json_t *f;
	/* the child first: no parent, so the imported attributes are absent
	 * (0 and the empty tensor) */
	feed_ok(fx, "{\"put\": \"id:t:child::1\", \"fields\": {\"b\": 5, \"cats\": {\"a\": 1, "
	            "\"b\": 2}, \"ref\": \"id:t:parent::p\"}}");
	json_t *r = query(fx, CHILD_QUERY);
	assert_true(child_hit(r, &f) == 5.0);
	assert_null(json_object_get(f, "ppop"));
	assert_null(json_object_get(f, "pname"));
	json_decref(r);
	/* the parent fed after: 5 + 100 + (1 * 0.5 + 2 * 0.25) */
	feed_ok(fx, "{\"put\": \"id:t:parent::p\", \"fields\": {\"ctrs\": {\"a\": 0.5, \"b\": 0.25,"
	            " \"c\": 9}, \"pop\": 100, \"name\": \"P one\"}}");
	r = query(fx, CHILD_QUERY);
	assert_true(child_hit(r, &f) == 106.0);
	assert_int_equal(json_integer_value(json_object_get(f, "ppop")), 100);
	assert_string_equal(json_string_value(json_object_get(f, "pname")), "P one");
	json_decref(r);
	/* filtering on an imported attribute */
	r = query(fx, "{\"yql\": \"select * from child where ppop > 99\"}");
	assert_int_equal(json_array_size(dbtest_hits(r)), 1);
	json_decref(r);
	/* the parent updated: 5 + 7 + (1 * 2) */
	feed_ok(fx, "{\"update\": \"id:t:parent::p\", \"fields\": {\"pop\": {\"assign\": 7},"
	            " \"ctrs\": {\"assign\": {\"a\": 2}}}}");
	r = query(fx, CHILD_QUERY);
	assert_true(child_hit(r, &f) == 14.0);
	assert_int_equal(json_integer_value(json_object_get(f, "ppop")), 7);
	json_decref(r);
	/* get shows the child's own fields only */
	expect_fields(fx, "id:t:child::1", "{\"b\":5,\"cats\":{\"cells\":{\"a\":1.0,\"b\":2.0},"
	              "\"type\":\"tensor<float>(cat{})\"},\"ref\":\"id:t:parent::p\"}");
	/* the parent removed: absent again */
	feed_ok(fx, "{\"remove\": \"id:t:parent::p\"}");
	r = query(fx, CHILD_QUERY);
	assert_true(child_hit(r, &f) == 5.0);
	assert_null(json_object_get(f, "ppop"));
	json_decref(r);
	r = query(fx, "{\"yql\": \"select * from child where ppop > 0\"}");
	assert_int_equal(json_array_size(dbtest_hits(r)), 0);
	json_decref(r);
}

/* Each allocation of feeding the new types fails in turn: STRATA_NOMEM,
 * nothing kept, nothing written.  (Strings stay under 14 bytes: jansson
 * 2.14 crashes when growing its token buffer fails, past 16 bytes with
 * the quotes.) */
static void test_alloc_failures(void **state)
{
	struct dbtest *fx = *state;
	static const char *const op =
		"{\"put\": \"id:t:child::9\", \"fields\": {\"b\": 1, \"img\": \"AP8=\","
		" \"target\": \"not c in [1]\"}}";
	char *none;
	assert_int_equal(dbtest_get_fields(fx->db, "id:t:child::9", 0, &none), STRATA_NOT_FOUND);
	assert_true(dbtest_feed_failing(fx->db, op, "id:t:child::9") > 3); /* absent after each */
	/* queries reading predicates and imported fields: each failure is
	 * STRATA_NOMEM and takes back what it took */
	feed_ok(fx, "{\"put\": \"id:t:parent::p\", \"fields\": {\"pop\": 4, \"name\": \"n\"}}");
	feed_ok(fx, "{\"put\": \"id:t:child::8\", \"fields\": {\"b\": 2, \"ref\": \"id:t:parent::p\","
	            " \"target\": \"a in [b]\"}}");
	static const char *const req =
		"{\"yql\": \"select * from child where ppop > 3 and predicate(target, {'[0]': {'a': 'b'}},"
		" {})\", \"presentation.summary\": \"withparent\"}";
	json_decref(query(fx, req)); /* the pools of retired queries filled first */
	long qfailures;
	char *out = dbtest_query_failing(fx->db, req, &qfailures);
	json_t *r = json_loads(out, 0, NULL);
	strata_free(out);
	json_t *h = json_array_get(dbtest_hits(r), 0);
	assert_int_equal(json_array_size(dbtest_hits(r)), 1);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(h, "fields"), "ppop")), 4);
	json_decref(r);
	assert_true(qfailures > 10);
	expect_fields(fx, "id:t:child::9", "{\"b\":1,\"img\":\"AP8=\",\"target\":\"not c in [1]\"}");
}


static const char *const BIZ_SD =
	"schema biz {\n"
	"  document biz {\n"
	"    field title type string { indexing: summary | attribute }\n"
	"    field loc type position { indexing: attribute | summary }\n"
	"    field other type position { indexing: summary }\n"
	"  }\n"
	"  rank-profile default {\n"
	"    first-phase { expression: closeness(loc) }\n"
	"    summary-features: distance(loc) distance(loc).km distance(loc).latitude "
	"distance(loc).longitude closeness(loc)\n"
	"  }\n"
	"}\n";

static double feature_of(json_t *hit, const char *name)
{
	json_t *sf = json_object_get(json_object_get(hit, "fields"), "summaryfeatures");
	json_t *v = json_object_get(sf, name);
	if (!json_is_number(v))
		fail_msg("no feature %s", name);
	return json_number_value(v);
}

/* Positions: the feed forms, get, geoLocation and the distance features,
 * checked against the distances worked out here. */
static void test_positions(void **state)
{
	(void)state;
	struct dbtest fx0, *fx = &fx0;
	fx->dir = dbtest_open("strata-types.", "biz.sd", BIZ_SD, &fx->db);
	feed_ok(fx, "{\"put\": \"id:b:biz::sfo\", \"fields\": {\"title\": \"sfo\","
	            " \"loc\": {\"lat\": 37.618806, \"lng\": -122.375416},"
	            " \"other\": \"S33.94611;E151.177222\"}}");
	feed_ok(fx, "{\"put\": \"id:b:biz::osl\", \"fields\": {\"loc\": \"N60.193917;E11.100361\"}}");
	feed_ok(fx, "{\"put\": \"id:b:biz::trd\", \"fields\": {\"loc\": {\"x\": 10924250, "
	            "\"y\": 63457556}}}");
	feed_ok(fx, "{\"put\": \"id:b:biz::none\", \"fields\": {\"title\": \"none\"}}");
	expect_fields(fx, "id:b:biz::sfo", "{\"loc\":{\"lat\":37.618806,\"lng\":-122.375416},"
	              "\"other\":{\"lat\":-33.94611,\"lng\":151.177222},\"title\":\"sfo\"}");
	expect_fields(fx, "id:b:biz::trd", "{\"loc\":{\"lat\":63.457556,\"lng\":10.92425}}");
	static const struct {
		const char *loc, *msg;
	} bad[] = {
		{"{\"lat\": 90.5, \"lng\": 0}", "latitude 90.5 or longitude 0 is out of range"},
		{"{\"lat\": 1, \"lng\": -181}", "latitude 1 or longitude -181 is out of range"},
		{"\"N1;N2\"", "'N1;N2' is no position"},
		{"\"N1,E2\"", "'N1,E2' is no position"},
		{"{\"lat\": 1}", "expected a position"},
		{"[1, 2]", "expected a position"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char op[256];
		snprintf(op, sizeof op, "{\"put\": \"id:b:biz::sfo\", \"fields\": {\"loc\": %s}}",
		         bad[i].loc);
		feed_fails(fx, op, STRATA_INVALID_ARGUMENT, bad[i].msg);
	}
	/* Within 300 km of (60, 11): Oslo, 200304 millionths (22.3 km) away (dy 193917,
	 * dx 100361 * cos 60 degrees); Trondheim is 3457763 away (384 km). */
	double d_osl = sqrt(193917.0 * 193917.0 + 50180.5 * 50180.5);
	json_t *r = query(fx, "{\"yql\": \"select * from biz where geoLocation(loc, 60.0, 11.0, "
	                                 "'300 km')\"}");
	json_t *hits = dbtest_hits(r);
	assert_int_equal(json_array_size(hits), 1);
	json_t *h = json_array_get(hits, 0);
	assert_string_equal(json_string_value(json_object_get(h, "id")), "id:b:biz::osl");
	assert_true(fabs(feature_of(h, "distance(loc)") - d_osl) < 0.01);
	assert_true(fabs(feature_of(h, "distance(loc).km") - d_osl * 0.00011119508) < 1e-6);
	assert_true(fabs(feature_of(h, "closeness(loc)") - (1 - d_osl / 9013305.0)) < 1e-12);
	assert_true(feature_of(h, "distance(loc).latitude") == 60.193917);
	assert_true(feature_of(h, "distance(loc).longitude") == 11.100361);
	json_decref(r);
	/* radii in other units; a negative one keeps every position */
	static const struct {
		const char *radius;
		size_t n;
	} radii[] = {{"385 km", 2}, {"383 km", 1}, {"250 mi", 2}, {"3.5 deg", 2}, {"3 deg", 1},
	             {"20000 m", 0}, {"23 km", 1}, {"-1 m", 3}, {"-1", 3}};
	for (size_t i = 0; i < sizeof radii / sizeof radii[0]; i++) {
		char req[256];
		snprintf(req, sizeof req, "{\"yql\": \"select * from biz where geoLocation(loc, 60.0, "
		         "11.0, '%s')\"}", radii[i].radius);
		r = query(fx, req);
		if (json_array_size(dbtest_hits(r)) != radii[i].n)
			fail_msg("%s: %zu hits, expected %zu", radii[i].radius,
			         json_array_size(dbtest_hits(r)), radii[i].n);
		json_decref(r);
	}
	/* no geoLocation: Vespa's defaults */
	r = query(fx, "{\"yql\": \"select * from biz where title contains 'none'\"}");
	h = json_array_get(dbtest_hits(r), 0);
	assert_true(feature_of(h, "distance(loc)") == 6400000000.0);
	assert_true(feature_of(h, "closeness(loc)") == 0.0);
	assert_true(feature_of(h, "distance(loc).latitude") == 90.0);
	json_decref(r);
	static const struct {
		const char *yql, *msg;
	} qbad[] = {
		{"geoLocation(title, 1, 2, '1 km')",
		 "yql:1:25: geoLocation() needs a position field; 'title' is not one"},
		{"loc > 3", "yql:1:25: 'loc' is a position: search it with geoLocation()"},
		{"geoLocation(loc, 1, 2, '1 parsec')", "expected a radius"},
		{"geoLocation(loc, 1, 2, 5)", "expected a radius"},
	};
	for (size_t i = 0; i < sizeof qbad / sizeof qbad[0]; i++) {
		char req[256], *out = NULL;
		struct strata_error err = {0};
		snprintf(req, sizeof req, "{\"yql\": \"select * from biz where %s\"}", qbad[i].yql);
		assert_int_not_equal(strata_query_json(fx->db, req, &out, &err), 0);
		if (!strstr(err.msg, qbad[i].msg))
			fail_msg("%s: got '%s', expected '%s'", qbad[i].yql, err.msg, qbad[i].msg);
	}
	strata_close(fx->db);
	apptest_remove(fx->dir);
	/* the features need a position field */
	child_fails("field x type int { indexing: attribute }\n  }\n  rank-profile p { first-phase {"
	            " expression: distance(x).km } }", STRATA_TYPE, "child.sd:5:55",
	            "distance(): 'x' is not a position field");
	child_fails("field x type position { indexing: attribute }\n  }\n  rank-profile p { first-phase {"
	            " expression: distance(x).miles } }", STRATA_TYPE, "child.sd:5:46",
	            "distance(field).miles is not a feature");
}

/* closeness(f) and distance(f) of a tensor attribute are Vespa's short
 * forms of closeness(field, f) and distance(field, f). */
static void test_tensor_closeness(void **state)
{
	(void)state;
	struct dbtest fx0, *fx = &fx0;
	fx->dir = dbtest_open("strata-types.", "v.sd",
	                      "schema v {\n"
	                      "  document v {\n"
	                      "    field e type tensor<float>(x[2]) { indexing: attribute }\n"
	                      "  }\n"
	                      "  rank-profile p {\n"
	                      "    inputs { query(q) tensor<float>(x[2]) }\n"
	                      "    first-phase { expression: closeness(e) }\n"
	                      "    summary-features: distance(e) distance(field, e) closeness(field, e)\n"
	                      "  }\n"
	                      "}\n", &fx->db);
	feed_ok(fx, "{\"put\": \"id:v:v::1\", \"fields\": {\"e\": [3, 4]}}");
	json_t *r = query(fx, "{\"yql\": \"select * from v where {targetHits: 1}nearestNeighbor(e, q)\","
	                                 " \"ranking.profile\": \"p\", \"input.query(q)\": [0, 0]}");
	json_t *h = json_array_get(dbtest_hits(r), 0);
	/* euclidean: distance 5, closeness 1 / (1 + 5) */
	assert_true(feature_of(h, "distance(e)") == 5.0);
	assert_true(feature_of(h, "distance(field, e)") == 5.0);
	assert_true(json_number_value(json_object_get(h, "relevance")) == 1.0 / 6.0);
	json_decref(r);
	strata_close(fx->db);
	apptest_remove(fx->dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schema),
		cmocka_unit_test(test_schema_errors),
		cmocka_unit_test_setup_teardown(test_feed_get, setup, dbtest_teardown),
		cmocka_unit_test_setup_teardown(test_predicate_truth_table, setup, dbtest_teardown),
		cmocka_unit_test_setup_teardown(test_imports, setup, dbtest_teardown),
		cmocka_unit_test_setup_teardown(test_alloc_failures, setup, dbtest_teardown),
		cmocka_unit_test(test_positions),
		cmocka_unit_test(test_tensor_closeness),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
