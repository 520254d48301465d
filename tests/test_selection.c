/*
 * test_selection.c: Vespa's document selection language (engine/request/selection.c,
 * selection_eval.c), through the library's API: visits with a selection
 * and test-and-set conditions on feed operations.
 *
 * Checked: for each selection of a table, the documents a visit keeps
 * are exactly the ones listed beside it (worked out by hand from the
 * documents below); three-valued logic (a comparison that makes no sense
 * matches neither itself nor its negation); errors name the column and
 * what is wrong; conditions on put, update and remove apply the
 * operation when they match and write nothing when they do not (the
 * stored fields are compared before and after), a missing document fails
 * a condition unless "create" is set; a file feed counts the operations
 * left out apart from the failed ones and reports each; and every
 * allocation failure of a conditional update gives STRATA_NOMEM, leaks
 * nothing and changes nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "dbtest.h"

static const char *music_sd =
	"schema music {\n"
	"  document music {\n"
	"    field title type string { indexing: attribute | summary }\n"
	"    field year type int { indexing: attribute | summary }\n"
	"    field rating type double { indexing: attribute | summary }\n"
	"    field flag type bool { indexing: attribute | summary }\n"
	"    field tags type array<string> { indexing: summary }\n"
	"    field counts type weightedset<string> { indexing: summary }\n"
	"    field sizes type map<string, int> { indexing: summary }\n"
	"    field v type tensor<float>(x[2]) { indexing: attribute | summary }\n"
	"    field nums type weightedset<int> { indexing: summary }\n"
	"    struct pt {\n"
	"      field px type int {}\n"
	"      field py type string {}\n"
	"    }\n"
	"    field p type pt { indexing: summary }\n"
	"    field ps type array<pt> { indexing: summary }\n"
	"  }\n"
	"}\n";

static const char *book_sd =
	"schema book {\n"
	"  document book {\n"
	"    field author type string { indexing: attribute | summary }\n"
	"  }\n"
	"}\n";

static const char *docs[] = {
	"{\"put\": \"id:shop:music::a\", \"fields\": {\"title\": \"Hello World\", \"year\": 1999,"
	" \"rating\": 4.5, \"flag\": true, \"tags\": [\"rock\", \"pop\"], \"counts\": {\"x\": 3},"
	" \"sizes\": {\"k\": 5}, \"v\": [1, 2], \"nums\": {\"7\": 1, \"12\": 2},"
	" \"p\": {\"px\": 3, \"py\": \"s\"}, \"ps\": [{\"px\": 1}, {\"py\": \"q\"}]}}",
	"{\"put\": \"id:shop:music:n=42:b\", \"fields\": {\"title\": \"bye\", \"year\": 2005,"
	" \"rating\": 2, \"flag\": false}}",
	"{\"put\": \"id:other:music:g=grp:c\", \"fields\": {\"year\": 2010}}",
	"{\"put\": \"id:shop:book::d\", \"fields\": {\"author\": \"Doe\"}}",
};

static int setup(void **state)
{
	struct dbtest *fx = calloc(1, sizeof *fx);
	fx->dir = dbtest_app("strata-selection", "music.sd", music_sd);
	apptest_write(fx->dir, "schemas/book.sd", book_sd);
	dbtest_open_dir(fx->dir, &fx->db);
	for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++)
		dbtest_feed_json(fx->db, docs[i]);
	*state = fx;
	return 0;
}

/* The keys (what follows the last ':') of the documents of type doctype
 * that a visit with selection keeps, sorted, space-separated, in out. */
static void visit_keys(struct strata *db, const char *doctype, const char *selection, char *out,
                       size_t n)
{
	char *page;
	struct strata_error err = { 0 };
	if (strata_visit_select_json(db, doctype, NULL, selection, NULL, 100, &page, &err))
		fail_msg("%s: %s", selection, err.msg);
	json_t *j = json_loads(page, 0, NULL);
	strata_free(page);
	json_t *list = json_object_get(j, "documents");
	char keys[16][64];
	size_t k = 0, i;
	json_t *d;
	json_array_foreach(list, i, d) {
		const char *id = json_string_value(json_object_get(d, "id"));
		if (k < 16)
			snprintf(keys[k++], sizeof keys[0], "%s", strrchr(id, ':') + 1);
	}
	qsort(keys, k, sizeof keys[0], (int (*)(const void *, const void *))strcmp);
	out[0] = 0;
	for (i = 0; i < k; i++)
		snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? " " : "", keys[i]);
	json_decref(j);
}

static const struct { const char *sel, *want; } cases[] = {
	{ "true", "a b c" },
	{ "false", "" },
	{ "music", "a b c" },
	{ "book", "" },
	{ "music and True", "a b c" },
	/* fields: presence, comparisons with numbers and strings */
	{ "music.title", "a b" },
	{ "not music.title", "c" },
	{ "music.title == null", "c" },
	{ "music.title != null", "a b" },
	{ "music.year > 2000", "b c" },
	{ "music.year >= 2005", "b c" },
	{ "music.year < 2005", "a" },
	{ "music.year <= 2005", "a b" },
	{ "music.year == 1999", "a" },
	{ "music.year != 1999", "b c" },
	{ "music.year == 1999.0", "a" },
	{ "music.rating > 3", "a" },
	{ "music.rating == 2", "b" },
	{ "music.rating < 4.75 and music.rating > 4.25", "a" },
	{ "music.title == \"bye\"", "b" },
	{ "music.title == 'bye'", "b" },
	{ "music.title < \"a\"", "a" },            /* 'H' < 'a': bytes */
	{ "music.title > \"Hello\"", "a b" },
	{ "music.flag == true", "a" },
	{ "music.flag == 0", "b" },
	/* three-valued: a comparison with null other than == and != is invalid,
	 * and so is its negation; or lets a true side through */
	{ "music.title > \"a\"", "b" },
	{ "not (music.title > \"a\")", "a" },
	{ "not music.year > 3000", "a b c" },
	{ "music.title > \"a\" or music.year == 2010", "b c" },
	{ "not (music.title > \"a\" and true)", "a" },
	{ "not (music.title > \"a\" and false)", "a b c" },
	{ "music.title == 5", "" },                /* a string is no number: false */
	{ "music.title != 5", "a b c" },     /* null != 5 holds */
	{ "music.title < 5", "" },                 /* an order between them: invalid */
	{ "not music.title < 5", "" },
	/* glob and regex */
	{ "music.title = \"Hello*\"", "a" },
	{ "music.title = \"?ye\"", "b" },
	{ "music.title = \"*o*o*\"", "a" },
	{ "music.title = \"b\"", "" },
	{ "music.year = 2005", "b" },              /* a glob between numbers is == */
	{ "music.title =~ \"^b.e$\"", "b" },
	{ "music.title =~ \"orl\"", "a" },
	{ "music.title =~ \"(Hello|bye) ?\"", "a b" },
	{ "music.year =~ \"2005\"", "" },
	/* arithmetic, precedence (% before * and /, those before + and -) */
	{ "music.year + 1 == 2000", "a" },
	{ "music.year - 2000 * 2 == -2001", "a" },
	{ "music.year % 10 == 5", "b" },
	{ "music.year / 2 == 1002", "b" },          /* integer division */
	{ "music.year / 2.0 == 1002.5", "b" },
	{ "2 * music.year % 1000 == 10", "b" },     /* 2 * (2005 % 1000) */
	{ "(music.year - 5) * 2 == 4000", "b" },
	{ "music.year / 0 == 1", "" },
	{ "not music.year / 0 == 1", "" },
	{ "music.title + \"!\" == \"bye!\"", "b" },
	{ "music.title.lowercase() == \"hello world\"", "a" },
	{ "(music.year - 2005).abs() == 6", "a" },
	{ "-3.abs() == 3", "a b c" },
	{ "now() > 1700000000 and now() - 60 < now()", "a b c" },
	/* collections: one element or key is enough; paths */
	{ "music.tags == \"pop\"", "a" },
	{ "music.tags == \"jazz\"", "" },
	{ "music.tags = \"r*\"", "a" },
	{ "music.tags[1] == \"pop\"", "a" },
	{ "music.tags[0] == \"pop\"", "" },
	{ "music.tags[5] == null", "a b c" },
	{ "music.counts == \"x\"", "a" },
	{ "music.counts{x} == 3", "a" },
	{ "music.sizes == \"k\"", "a" },
	{ "music.sizes{k} > 4", "a" },
	{ "music.nums == 12", "a" },
	{ "music.nums > 10", "a" },
	{ "music.nums < 7", "" },
	{ "music.nums == \"12\"", "" },          /* a number is no string */
	{ "music.nums{12} == 2", "a" },
	{ "music.p.px == 3", "a" },
	{ "music.p.py = \"s*\"", "a" },
	{ "music.p == null", "b c" },
	{ "music.p == 3", "" },                     /* a struct: only null compares */
	{ "not music.p == 3", "b c" },           /* null == 3 is false */
	{ "music.ps.py == \"q\"", "a" },
	{ "music.ps.px == 1", "a" },
	{ "music.ps[0].px == 1", "a" },
	{ "music.ps[1].px == null", "a b c" },
	{ "music.v", "a" },
	{ "music.v == null", "b c" },
	{ "music.v == 1", "" },
	/* ids */
	{ "id == \"id:shop:music::a\"", "a" },
	{ "id.namespace == \"shop\"", "a b" },
	{ "id.type == \"music\"", "a b c" },
	{ "id.scheme == \"id\"", "a b c" },
	{ "id.specific == \"c\"", "c" },
	{ "id.user == 42", "b" },
	{ "id.user == null", "a c" },
	{ "id.group == \"grp\"", "c" },
	{ "id.group = \"g*\" or id.user > 40", "b c" },
	{ "ID.NAMESPACE = \"oth*\"", "c" },
	/* escapes */
	{ "music.title == \"\\x62ye\"", "b" },
	{ "music.title == \"Hello\\x20World\"", "a" },
	/* a field of another type is invalid, never a match */
	{ "book.author == null", "" },
	{ "book or music.year == 1999", "a" },
};

static void test_selections(void **state)
{
	struct dbtest *fx = *state;
	char got[256];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		visit_keys(fx->db, "music", cases[i].sel, got, sizeof got);
		if (strcmp(got, cases[i].want))
			fail_msg("%s: kept '%s', expected '%s'", cases[i].sel, got, cases[i].want);
	}
	visit_keys(fx->db, "book", "book.author = \"D*\" and book", got, sizeof got);
	assert_string_equal(got, "d");
	visit_keys(fx->db, "book", "music.year == 1999", got, sizeof got);
	assert_string_equal(got, "");
}

static const struct { const char *sel; int code; const char *msg; } errors[] = {
	{ "music.year >", STRATA_PARSE, "selection:1:13: the selection ends" },
	{ "music.year > 3 and", STRATA_PARSE, "selection:1:19: the selection ends" },
	{ "music.nope == 1", STRATA_INVALID_ARGUMENT,
	  "selection:1:7: 'nope' is not a field of document type 'music'" },
	{ "song.year == 1", STRATA_INVALID_ARGUMENT,
	  "selection:1:1: 'song' is not a document type" },
	{ "music.year == 1 music", STRATA_PARSE, "selection:1:17: unexpected 'music'" },
	{ "music.title == \"abc", STRATA_PARSE, "selection:1:16: the string is not closed" },
	{ "music.title == \"a\\qb\"", STRATA_PARSE, "selection:1:18: unknown escape '\\q'" },
	{ "music.title =~ \"(\"", STRATA_PARSE, "selection:1:16: bad regular expression" },
	/* regcomp would spell out 2^40 copies: refused before it runs */
	{ "music.title =~ \"n++++++++++++++++++++++++++++++++++++++++\"", STRATA_PARSE,
	  "selection:1:16: regular expression too complex: its repetitions would grow to more "
	  "than 10000 nodes" },
	{ "(music.year == 1", STRATA_PARSE, "selection:1:17: expected ')'" },
	{ "music.year + 1", STRATA_PARSE, "selection:1:12: a value where a condition belongs" },
	{ "id.namespace", STRATA_PARSE, "selection:1:1: a value where a condition belongs" },
	{ "3 and true", STRATA_PARSE, "selection:1:1: a value where a condition belongs" },
	{ "(music.year > 1) + 2 == 3", STRATA_PARSE,
	  "selection:1:13: a comparison where a value belongs" },
	{ "music == 1", STRATA_PARSE, "selection:1:1: a document type where a value belongs" },
	{ "id.bucket == 1", STRATA_PARSE, "selection:1:4: 'bucket' is not a part of a document id" },
	{ "music.title.hash() == 1", STRATA_NOT_IMPLEMENTED,
	  "selection:1:13: 'hash()' is not implemented" },
	{ "music.version() == 1", STRATA_NOT_IMPLEMENTED,
	  "selection:1:7: 'version()' of a document type is not implemented" },
	{ "music.title.upper() == 1", STRATA_PARSE, "selection:1:13: 'upper()' is not a function" },
	{ "music.year == 99999999999999999999", STRATA_PARSE, "selection:1:15: the number" },
	{ "music.tags[x] == 1", STRATA_PARSE, "selection:1:11: an array index is a number" },
	{ "music.year # 3", STRATA_PARSE, "selection:1:12: unexpected '# 3'" },
	{ "", STRATA_PARSE, "selection:1:2: the selection ends" },
	{ "not", STRATA_PARSE, "selection:1:4: the selection ends" },
	{ "and", STRATA_PARSE, "selection:1:1: 'and' where a value or condition belongs" },
};

static void test_errors(void **state)
{
	struct dbtest *fx = *state;
	for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
		char *page = NULL;
		struct strata_error err = { 0 };
		/* "" is no selection for the API: one space is an empty one, which ends
		 * at column 2 */
		const char *sel = errors[i].sel[0] ? errors[i].sel : " ";
		int rc = strata_visit_select_json(fx->db, "music", NULL, sel, NULL, 10, &page, &err);
		if (rc != errors[i].code || !strstr(err.msg, errors[i].msg))
			fail_msg("%s: got %d '%s', expected %d '%s'", errors[i].sel, rc, err.msg,
			         errors[i].code, errors[i].msg);
		assert_null(page);
	}
	/* nesting has a limit, not a stack overflow */
	char deep[2100];
	size_t n = 0;
	for (int i = 0; i < 1000; i++)
		deep[n++] = '(';
	memcpy(deep + n, "true", 5);
	char *page = NULL;
	struct strata_error err = { 0 };
	assert_int_equal(strata_visit_select_json(fx->db, "music", NULL, deep, NULL, 10, &page, &err),
	                 STRATA_LIMIT);
	assert_non_null(strstr(err.msg, "nested more than"));
}

/* ---- test-and-set --------------------------------------------------------------------- */

static void expect_not_met(struct strata *db, const char *op, const char *id, const char *msg)
{
	char *before = dbtest_fields(db, id, 0);
	dbtest_feed_fails(db, op, STRATA_CONDITION_FAILED, msg);
	dbtest_expect_fields(db, id, 0, before);
	dbtest_json_free(before);
}

static void test_conditions(void **state)
{
	struct dbtest *fx = *state;
	struct strata *db = fx->db;
	/* update: met, then not met (the year is now 2000) */
	dbtest_feed_json(db, "{\"update\": \"id:shop:music::a\", \"condition\": \"music.year == 1999\","
	                     " \"fields\": {\"year\": {\"assign\": 2000}}}");
	char *f = dbtest_fields(db, "id:shop:music::a", 0);
	assert_non_null(strstr(f, "\"year\":2000"));
	dbtest_json_free(f);
	expect_not_met(db, "{\"update\": \"id:shop:music::a\", \"condition\": \"music.year == 1999\","
	                   " \"fields\": {\"year\": {\"assign\": 1}}}", "id:shop:music::a",
	               "condition 'music.year == 1999' did not match document 'id:shop:music::a'");
	/* put: replaces the document only when the condition holds */
	expect_not_met(db, "{\"put\": \"id:shop:music:n=42:b\","
	                   " \"condition\": \"music.title = \\\"x*\\\"\","
	                   " \"fields\": {\"title\": \"new\"}}", "id:shop:music:n=42:b", "did not match");
	dbtest_feed_json(db, "{\"put\": \"id:shop:music:n=42:b\","
	                     " \"condition\": \"music.title = \\\"b*\\\"\","
	                     " \"fields\": {\"title\": \"new\"}}");
	dbtest_expect_fields(db, "id:shop:music:n=42:b", 0, "{\"title\":\"new\"}");
	/* remove */
	expect_not_met(db, "{\"remove\": \"id:shop:music:n=42:b\", \"condition\": \"music.year\"}",
	               "id:shop:music:n=42:b", "did not match");
	dbtest_feed_json(db, "{\"remove\": \"id:shop:music:n=42:b\", \"condition\": \"not music.year\"}");
	char *s;
	assert_int_equal(dbtest_get_fields(db, "id:shop:music:n=42:b", 0, &s), STRATA_NOT_FOUND);
	/* a missing document fails a condition, unless create ignores it */
	dbtest_feed_fails(db, "{\"remove\": \"id:shop:music::zz\", \"condition\": \"true\"}",
	                  STRATA_CONDITION_FAILED, "document 'id:shop:music::zz' does not exist");
	dbtest_feed_fails(db, "{\"update\": \"id:shop:music::zz\", \"condition\": \"true\","
	                      " \"fields\": {\"year\": {\"assign\": 7}}}",
	                  STRATA_CONDITION_FAILED, "does not exist");
	dbtest_feed_fails(db, "{\"put\": \"id:shop:music::zz\", \"condition\": \"true\","
	                      " \"fields\": {\"year\": 7}}", STRATA_CONDITION_FAILED, "does not exist");
	assert_int_equal(dbtest_get_fields(db, "id:shop:music::zz", 0, &s), STRATA_NOT_FOUND);
	dbtest_feed_json(db, "{\"update\": \"id:shop:music::zz\", \"condition\": \"false\","
	                     " \"create\": true, \"fields\": {\"year\": {\"assign\": 7}}}");
	dbtest_expect_fields(db, "id:shop:music::zz", 0, "{\"year\":7}");
	/* once it exists, create no longer lets a false condition through */
	expect_not_met(db, "{\"update\": \"id:shop:music::zz\", \"condition\": \"false\","
	                   " \"create\": true, \"fields\": {\"year\": {\"assign\": 8}}}",
	               "id:shop:music::zz", "did not match");
	dbtest_feed_json(db, "{\"put\": \"id:shop:music::zy\", \"condition\": \"music.year > 1\","
	                     " \"create\": true, \"fields\": {\"year\": 9}}");
	dbtest_expect_fields(db, "id:shop:music::zy", 0, "{\"year\":9}");
	/* bad conditions are errors, with the column; nothing is written */
	dbtest_feed_fails(db, "{\"update\": \"id:shop:music::zz\", \"condition\": \"music.year >\","
	                      " \"fields\": {\"year\": {\"assign\": 1}}}", STRATA_PARSE,
	                  "condition:1:13: the condition ends");
	dbtest_feed_fails(db, "{\"remove\": \"id:shop:music::zz\", \"condition\": 3}",
	                  STRATA_INVALID_ARGUMENT, "\"condition\" must be a string");
	dbtest_expect_fields(db, "id:shop:music::zz", 0, "{\"year\":7}");
}

struct reports {
	int n, not_met;
	long lines[8];
};

static void on_report(void *ud, long line, int code, const char *msg)
{
	struct reports *r = ud;
	if (r->n < 8)
		r->lines[r->n] = line;
	r->n++;
	r->not_met += code == STRATA_CONDITION_FAILED;
}

static void test_feed_file(void **state)
{
	struct dbtest *fx = *state;
	char path[512];
	snprintf(path, sizeof path, "%s/ops.jsonl", fx->dir);
	apptest_write(fx->dir, "ops.jsonl",
	              "{\"put\": \"id:shop:book::e\", \"fields\": {\"author\": \"Eve\"}}\n"
	              "{\"update\": \"id:shop:book::e\", \"condition\": \"book.author == \\\"Bob\\\"\","
	              " \"fields\": {\"author\": {\"assign\": \"X\"}}}\n"
	              "{\"update\": \"id:shop:book::e\", \"condition\": \"book.author == \\\"Eve\\\"\","
	              " \"fields\": {\"author\": {\"assign\": \"Eva\"}}}\n"
	              "{\"remove\": \"id:shop:book::d\", \"condition\": \"book.author = \\\"Z*\\\"\"}\n"
	              "{\"remove\": \"id:shop:book::q\"}\n");
	struct strata_feed_stats st;
	struct reports r = { 0 };
	struct strata_error err = { 0 };
	assert_int_equal(strata_feed_file(fx->db, path, on_report, &r, &st, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_int_equal(st.ok, 2);
	assert_int_equal(st.not_met, 2);
	assert_int_equal(st.failed, 1);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.not_met, 2);
	assert_int_equal(r.lines[0], 2);
	assert_int_equal(r.lines[1], 4);
	assert_int_equal(r.lines[2], 5);
	dbtest_expect_fields(fx->db, "id:shop:book::e", 0, "{\"author\":\"Eva\"}");
	dbtest_expect_fields(fx->db, "id:shop:book::d", 0, "{\"author\":\"Doe\"}");
	/* only conditions left out: no failure */
	apptest_write(fx->dir, "ops.jsonl",
	              "{\"remove\": \"id:shop:book::d\", \"condition\": \"false\"}\n");
	assert_int_equal(strata_feed_file(fx->db, path, NULL, NULL, &st, &err), 0);
	assert_int_equal(st.not_met, 1);
	assert_int_equal(st.failed, 0);
}

static void test_nomem(void **state)
{
	struct dbtest *fx = *state;
	long n = dbtest_feed_failing(fx->db,
	                             "{\"update\": \"id:shop:music::a\", \"condition\": "
	                             "\"music.tags == \\\"rock\\\" and music.title =~ \\\"W.r\\\" and "
	                             "music.title + \\\"x\\\" != \\\"y\\\"\", "
	                             "\"fields\": {\"rating\": {\"assign\": 1.5}}}",
	                             "id:shop:music::a");
	assert_true(n > 5);
	char *f = dbtest_fields(fx->db, "id:shop:music::a", 0);
	assert_non_null(strstr(f, "\"rating\":1.5"));
	dbtest_json_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_selections, setup, dbtest_teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, dbtest_teardown),
		cmocka_unit_test_setup_teardown(test_conditions, setup, dbtest_teardown),
		cmocka_unit_test_setup_teardown(test_feed_file, setup, dbtest_teardown),
		cmocka_unit_test_setup_teardown(test_nomem, setup, dbtest_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
