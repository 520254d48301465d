/*
 * test_text_props.c: the schema side of text indexes beyond strings: text
 * indexes on arrays and weighted sets of strings, and bm25's rank
 * properties (bm25(f).k1, .b, .averageFieldLength): the values a profile
 * gives each field, inherited property by property, the defaults
 * elsewhere, and the errors of each, with positions; every allocation of a
 * load made to fail in turn.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../rank/rank.h"
#include "apptest.h"

#define DOC                                                                     \
	"schema doc {\n"                                                        \
	"  document doc {\n"                                                    \
	"    field title type string { indexing: index\n index: enable-bm25 }\n" \
	"    field tags type array<string> { indexing: index | summary }\n"    \
	"    field kw type weightedset<string> { indexing: index\n match: word }\n" \
	"    field n type int { indexing: attribute }\n"                        \
	"  }\n"

static char *app_of(const char *sd)
{
	char *dir = apptest_new("strata_text_props");
	char sub[512];
	snprintf(sub, sizeof sub, "%s/schemas", dir);
	apptest_write(sub, "doc.sd", sd);
	return dir;
}

static const char *const good = DOC
	"  rank-profile p {\n"
	"    rank-properties {\n"
	"      bm25(title).k1: 0.9\n"
	"      bm25(title).b: 0.4\n"
	"      $w: 2\n"
	"      bm25(tags).averageFieldLength: 12.5\n"
	"    }\n"
	"    first-phase { expression: bm25(title) * query(w) }\n"
	"  }\n"
	"  rank-profile c inherits p {\n"
	"    rank-properties { bm25(title).b: 1 }\n"
	"  }\n"
	"}\n";

static void expect_bm25(const struct rank_profile *p, int field, double k1, double b,
                        double avgdl)
{
	struct rank_bm25 bm;
	rank_profile_bm25(p, field, &bm);
	assert_true(bm.k1 == k1);
	assert_true(bm.b == b);
	assert_true(bm.avgdl == avgdl);
}

static void test_bm25_properties(void **state)
{
	(void)state;
	char *dir = app_of(good);
	struct rank_app *app = apptest_load(dir);
	const struct rank_schema *s = rank_app_schema_find(app, "doc");
	assert_non_null(s);
	int title = rank_schema_field_index(s, "title"), tags = rank_schema_field_index(s, "tags");
	int kw = rank_schema_field_index(s, "kw");
	/* the collections have text indexes */
	assert_true(rank_field_token_flags(rank_schema_field(s, tags)) >= 0);
	assert_true(rank_field_token_flags(rank_schema_field(s, kw)) >= 0);
	assert_true(rank_field_token_flags(rank_schema_field(s, rank_schema_field_index(s, "n"))) < 0);
	const struct rank_profile *p = rank_profile_find(s, "p"), *c = rank_profile_find(s, "c");
	const struct rank_profile *d = rank_profile_find(s, "default");
	expect_bm25(p, title, 0.9, 0.4, 0);
	expect_bm25(p, tags, 1.2, 0.75, 12.5);
	expect_bm25(p, kw, 1.2, 0.75, 0);
	/* inherited one by one: c's own b, p's k1 and average */
	expect_bm25(c, title, 0.9, 1, 0);
	expect_bm25(c, tags, 1.2, 0.75, 12.5);
	expect_bm25(d, title, 1.2, 0.75, 0);
	expect_bm25(NULL, title, 1.2, 0.75, 0);
	rank_app_free(app);
	assert_true(apptest_load_failures(dir) > 0);
	apptest_remove(dir);
}

static void fails(const char *profile, int code, const char *where, const char *what)
{
	char sd[4096];
	snprintf(sd, sizeof sd, "%s  rank-profile p {\n    rank-properties {\n      %s\n    }\n  }\n}\n",
	         DOC, profile);
	apptest_expect_load_error(app_of(sd), code, where, what);
}

static void test_bm25_property_errors(void **state)
{
	(void)state;
	/* the property lines are line 12 of the file */
	fails("bm25(n).k1: 1", STRATA_TYPE, "doc.sd:12:7:",
	      "rank property 'bm25(n).k1': 'n' is not a field with a text index");
	fails("bm25(nosuch).b: 0.5", STRATA_TYPE, "doc.sd:12:7:", "'nosuch' is not a field");
	fails("bm25(title).b: 1.5", STRATA_TYPE, "doc.sd:12:7:", "b lies in [0, 1]");
	fails("bm25(title).k1: -1", STRATA_TYPE, "doc.sd:12:7:", "k1 may not be negative");
	fails("bm25(title).averageFieldLength: 0", STRATA_TYPE, "doc.sd:12:7:",
	      "an average length is positive");
	fails("bm25(title).k2: 1", STRATA_NOT_IMPLEMENTED, "doc.sd:12:7:",
	      "bm25 takes k1, b and averageFieldLength");
	fails("bm25(title).k1: 1\n bm25(title).k1: 2", STRATA_TYPE, "doc.sd:13:2:", "given twice");
	fails("nativeRank(title).x: 1", STRATA_NOT_IMPLEMENTED, "doc.sd:12:7:",
	      "rank property 'nativeRank(title).x' is not supported");
	fails("bm25(title).k1: \"x\"", STRATA_NOT_IMPLEMENTED, "doc.sd:12:23:",
	      "only a number is supported");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bm25_properties),
		cmocka_unit_test(test_bm25_property_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
