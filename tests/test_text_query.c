/*
 * test_text_query.c: queries over text-indexed collections through the
 * library, under failing allocations: dotProduct on a field the index
 * answers (match: word) and on one read from the documents, wand with a
 * threshold, sameElement, and rawScore and itemRawScore as match features.
 * Each allocation of each query made to fail in turn gives STRATA_NOMEM
 * with "out of memory", leaks nothing, and never a wrong answer; the first
 * run that passes the last allocation gives the answer of a run without
 * failures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dbtest.h"

static const char *const SD =
	"schema doc {\n"
	"  document doc {\n"
	"    field nb type weightedset<string> { indexing: summary | index\n match: word }\n"
	"    field ids type weightedset<long> { indexing: attribute }\n"
	"    field sa type array<string> { indexing: index }\n"
	"    field n type int { indexing: attribute }\n"
	"  }\n"
	"  rank-profile default {\n"
	"    first-phase { expression: rawScore(nb) + rawScore(ids) }\n"
	"    match-features: rawScore(nb) rawScore(ids) itemRawScore(l)\n"
	"  }\n"
	"}\n";

static const char *const docs[] = {
	"{\"put\": \"id:doc:doc::1\", \"fields\": {\"nb\": {\"Red\": 3, \"blue\": 5}, \"ids\": "
	"{\"10\": 2, \"20\": 4}, \"sa\": [\"new york\", \"big apple\"], \"n\": 1}}",
	"{\"put\": \"id:doc:doc::2\", \"fields\": {\"nb\": {\"red\": 1, \"green\": 7}, \"ids\": "
	"{\"20\": 1}, \"sa\": [\"new\", \"york city\"], \"n\": 2}}",
	"{\"put\": \"id:doc:doc::3\", \"fields\": {\"n\": 3}}",
};

static const char *const queries[] = {
	"{\"yql\": \"select * from doc where dotProduct(nb, {'RED': 2, 'green': 1})\"}",
	"{\"yql\": \"select * from doc where {label: 'l'}dotProduct(ids, {10: 3, 20: 1})\"}",
	"{\"yql\": \"select * from doc where {scoreThreshold: 6}wand(ids, {10: 1, 20: 2}) or "
	"weightedSet(n, {3: 1})\"}",
	"{\"yql\": \"select * from doc where sa contains sameElement('new', 'york')\"}",
};

static void test_query_alloc_failures(void **state)
{
	(void)state;
	struct strata *db;
	char *dir = dbtest_open("strata_text_query", "doc.sd", SD, &db);
	for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++)
		dbtest_feed_json(db, docs[i]);
	static const char *const hits[] = {"\"id:doc:doc::2\"", "\"id:doc:doc::1\"",
	                                   "\"id:doc:doc::1\"", "\"id:doc:doc::1\""};
	for (size_t q = 0; q < sizeof queries / sizeof queries[0]; q++) {
		char *want;
		struct strata_error err = {0};
		if (strata_query_json(db, queries[q], &want, &err) != 0)
			fail_msg("%s: %s", queries[q], err.msg);
		assert_non_null(strstr(want, hits[q])); /* the best hit */
		long failures;
		char *got = dbtest_query_failing(db, queries[q], &failures);
		/* timings differ from run to run: compare the hits */
		const char *a = strstr(got, "\"children\""), *b = strstr(want, "\"children\"");
		assert_non_null(a);
		assert_non_null(b);
		assert_string_equal(a, b);
		strata_free(got);
		assert_true(failures > 5);
		strata_free(want);
	}
	strata_close(db);
	apptest_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query_alloc_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
