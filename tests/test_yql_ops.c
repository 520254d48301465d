/*
 * test_yql_ops.c: the YQL of the weighted-set operators: dotProduct, wand
 * (with targetHits, scoreThreshold and label) and weightedSet, their tokens
 * (strings and integers) and weights as the condition tree holds them; and
 * of contains sameElement("a", ...) on arrays of strings; every error with
 * its yql:LINE:COL position.  Also the operator table (one row per kind)
 * and the iterators the operators drive matches with (and, or over sorted
 * sets) against a plain scan of random sets.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../engine/engine_int.h"
#include "rng.h"

static void yql_ok(const char *where, const char *want)
{
	char text[512];
	snprintf(text, sizeof text, "select * from sources * where %s", where);
	struct strata_error err = { 0 };
	struct yql_query *q;
	if (yql_parse(text, &q, &err))
		fail_msg("%s: %s", text, err.msg);
	char *d = yql_dump(q->where);
	assert_string_equal(d, want);
	base_strfree(d);
	yql_free(q);
}

static void yql_bad(const char *where, const char *want)
{
	char text[512];
	snprintf(text, sizeof text, "select * from sources * where %s", where);
	struct strata_error err = { 0 };
	struct yql_query *q = NULL;
	assert_int_equal(yql_parse(text, &q, &err), STRATA_PARSE);
	assert_null(q);
	if (strcmp(err.msg, want) != 0)
		fail_msg("%s: got '%s', want '%s'", where, err.msg, want);
}

static void test_parse(void **state)
{
	(void)state;
	yql_ok("dotProduct(f, {\"a\": 1, \"b\": -2.5})", "DOTPRODUCT(f,{\"a\":1,\"b\":-2.5})");
	yql_ok("dotProduct(f, {})", "DOTPRODUCT(f,{})");
	yql_ok("weightedSet(ids, {10: 1, -20: 2, 'x': 3})", "WEIGHTEDSET(ids,{\"10\":1,\"-20\":2,\"x\":3})");
	yql_ok("{targetHits: 5, scoreThreshold: 0.5, label: \"w\"}wand(f, {\"a\": 2}) and n > 1",
	       "AND(WAND(f,{\"a\":2},label=w),n>1)");
	yql_ok("{label: \"d\"}dotProduct(f, {\"a\": 1}) or weightedSet(g, {\"b\": 1})",
	       "OR(DOTPRODUCT(f,{\"a\":1},label=d),WEIGHTEDSET(g,{\"b\":1}))");
	struct strata_error err = { 0 };
	struct yql_query *q;
	assert_int_equal(yql_parse("select * from sources * where {targetHits: 7, scoreThreshold: 3}"
	                           "wand(f, {\"a\": 2, \"b\": 3})", &q, &err), 0);
	assert_int_equal(q->where->kind, YQL_WSET);
	assert_int_equal(q->where->op, YQL_WAND);
	assert_int_equal(q->where->target_hits, 7);
	assert_true(q->where->num == 3);
	assert_int_equal(q->where->nvals, 2);
	assert_true(q->where->nums[1] == 3);
	yql_free(q);
	assert_int_equal(yql_parse("select * from sources * where wand(f, {\"a\": 2})", &q, &err), 0);
	assert_true(isinf(q->where->num) && q->where->num < 0); /* no threshold */
	yql_free(q);
}

static void test_same_element(void **state)
{
	(void)state;
	yql_ok("tags contains sameElement(\"a\", \"b c\") and n > 1",
	       "AND(tags SAMEELEMENT(\"a\",\"b c\"),n>1)");
	yql_ok("tags contains sameElement(\"a\" and \"b\" and 'c')",
	       "tags SAMEELEMENT(\"a\",\"b\",\"c\")");
	yql_ok("tags contains sameElement(\"a\")", "tags SAMEELEMENT(\"a\")");
	yql_bad("tags contains sameElement()", "yql:1:57: expected a string, found ')'");
	yql_bad("tags contains sameElement(\"a\" \"b\")", "yql:1:61: expected ',', found '\"b\"'");
	yql_bad("tags contains sameElement(\"a\",)", "yql:1:61: expected a string, found ')'");
	struct strata_error err = { 0 };
	struct yql_query *q = NULL;
	assert_int_equal(yql_parse("select * from sources * where m contains sameElement(key "
	                           "contains \"a\", value contains \"b\")", &q, &err),
	                 STRATA_NOT_IMPLEMENTED);
	assert_null(q);
	assert_string_equal(err.msg, "yql:1:54: sameElement over the fields of structs or maps is "
	                    "not supported");
}

static void test_errors(void **state)
{
	(void)state;
	yql_bad("dotProduct(f, [\"a\"])", "yql:1:45: expected '{', found '['");
	yql_bad("dotProduct(f, {\"a\"})", "yql:1:49: expected ':', found '}'");
	yql_bad("dotProduct(f, {\"a\": \"x\"})", "yql:1:51: expected a weight, found '\"x\"'");
	yql_bad("dotProduct(f, {1.5: 2})", "yql:1:46: expected a token: a string or an integer, "
	        "found '1.5'");
	yql_bad("dotProduct(f, {\"a\": 1 \"b\": 2})", "yql:1:53: expected ',', found '\"b\"'");
	yql_bad("dotProduct(f, {\"a\": 1}", "yql:1:53: expected ')', found the end of the query");
	yql_bad("dotProduct({\"a\": 1})", "yql:1:42: expected a field name, found '{'");
	yql_bad("{targetHits: 3}dotProduct(f, {\"a\": 1})",
	        "yql:1:31: targetHits and scoreThreshold annotate wand, not 'dotProduct'");
	yql_bad("{scoreThreshold: 3}weightedSet(f, {\"a\": 1})",
	        "yql:1:31: targetHits and scoreThreshold annotate wand, not 'weightedSet'");
	yql_bad("{scoreThreshold: \"x\"}wand(f, {\"a\": 1})",
	        "yql:1:48: expected a number, found '\"x\"'");
}

/* Every kind has a row with a name and a match; the connectives say so. */
static void test_table(void **state)
{
	assert_null(eng_ops[0]);
	for (int k = 1; k < YQL_KINDS; k++) {
		assert_non_null(eng_ops[k]);
		assert_non_null(eng_ops[k]->name);
		assert_non_null(eng_ops[k]->match);
		int conn = k == YQL_AND || k == YQL_OR || k == YQL_NOT || k == YQL_RANK ||
		           k == YQL_WEAKAND;
		assert_int_equal(eng_ops[k]->connective, conn);
	}
}

static uint64_t rnd_state = 88172645463325252ull;
static uint32_t rnd(uint32_t n)
{
	return test_rng_below(&rnd_state, n);
}

#define SPACE 600

/* A random subset of 0 .. SPACE - 1 as sorted lids and as a membership map. */
static size_t random_set(uint32_t *lids, unsigned char *in, uint32_t density)
{
	size_t n = 0;
	for (uint32_t i = 0; i < SPACE; i++)
		if ((in[i] = rnd(100) < density))
			lids[n++] = i;
	return n;
}

/* and / or of three random sets, each sought from random targets, give
 * the first member >= each target, as a scan finds it. */
static void test_iterators(void **state)
{
	static uint32_t lids[3][SPACE];
	static unsigned char in[3][SPACE];
	for (int round = 0; round < 300; round++) {
		size_t n[3];
		for (int i = 0; i < 3; i++)
			n[i] = random_set(lids[i], in[i], 1 + rnd(60));
		for (int any = 0; any < 2; any++) {
			struct eng_iter *kids[3];
			for (int i = 0; i < 3; i++)
				assert_non_null(kids[i] = eng_iter_array(lids[i], n[i], NULL, 0));
			struct eng_iter *it = any ? eng_iter_or(kids, 3) : eng_iter_and(kids, 3);
			assert_non_null(it);
			uint32_t target = 0;
			for (;;) {
				uint32_t want = target;
				while (want < SPACE && !(any ? in[0][want] || in[1][want] || in[2][want]
				                             : in[0][want] && in[1][want] && in[2][want]))
					want++;
				uint32_t got = target;
				int rc = it->seek(it, &got);
				if (want >= SPACE) {
					assert_int_equal(rc, STRATA_NOT_FOUND);
					break;
				}
				assert_int_equal(rc, 0);
				assert_int_equal(got, want);
				target = got + (rnd(4) ? 1 : 1 + rnd(40)); /* step, or skip ahead */
			}
			eng_iter_close(it);
		}
	}
}

/* One operand is the and / or itself; none gives no document. */
static void test_iterator_edges(void **state)
{
	static const uint32_t v[] = { 3, 8 };
	struct eng_iter *one = eng_iter_array(v, 2, NULL, 0);
	assert_ptr_equal(eng_iter_or(&one, 1), one);
	assert_ptr_equal(eng_iter_and(&one, 1), one);
	uint32_t lid = 4;
	assert_int_equal(one->seek(one, &lid), 0);
	assert_int_equal(lid, 8);
	eng_iter_close(one);
	for (int any = 0; any < 2; any++) {
		struct eng_iter *none = any ? eng_iter_or(NULL, 0) : eng_iter_and(NULL, 0);
		lid = 0;
		assert_int_equal(none->seek(none, &lid), STRATA_NOT_FOUND);
		assert_int_equal(none->est, 0);
		eng_iter_close(none);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_iterators),
		cmocka_unit_test(test_iterator_edges),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_same_element),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
