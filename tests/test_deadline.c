/*
 * test_deadline.c: a search's "timeout" as strata_query_json() honours it,
 * against a clock the test moves: base_now is wrapped at link time, and
 * each call returns the clock and then moves it on by clock_step.  The
 * query reads the clock once when it starts and once at each check, which
 * comes after every 1024 documents matched, every 1024 matches first-phase
 * ranked and every 1024 candidates re-ranked; so a timeout places the stop
 * exactly.  3000 documents with n = 0..2999 in feed order; the profile
 * ranks by n in the first phase and by -n in the second, over every match.
 * What each stop leaves (matches, coverage, order) is computed here from
 * those numbers.  Also: Vespa's hard timeout (soft timeout off) fails the
 * query with STRATA_TIMEOUT; a large timeout gives the full result; bad
 * settings are refused with their names; allocation failures of a
 * stopped query report out of memory and keep nothing.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "dbtest.h"

#define NDOCS 3000
#define BLOCK 1024 /* the documents between two looks at the clock */

static double clock_now, clock_step;

double __wrap_base_now(void);
double __wrap_base_now(void)
{
	double t = clock_now;
	clock_now += clock_step;
	return t;
}

static int setup(void **state)
{
	struct dbtest *fx = calloc(1, sizeof *fx);
	fx->dir = dbtest_open("strata-deadline", "item.sd",
	                      "schema item {\n"
	                      "  document item {\n"
	                      "    field n type int { indexing: attribute | summary }\n"
	                      "  }\n"
	                      "  rank-profile p {\n"
	                      "    min-hits-per-thread: 1\n"
	                      "    first-phase { expression: attribute(n) }\n"
	                      "    second-phase {\n"
	                      "      expression: 0 - attribute(n)\n"
	                      "      rerank-count: 5000\n"
	                      "    }\n"
	                      "  }\n"
	                      "}\n", &fx->db);
	char path[512];
	snprintf(path, sizeof path, "%s/feed.jsonl", fx->dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < NDOCS; i++)
		fprintf(f, "{\"put\": \"id:a:item::k%d\", \"fields\": {\"n\": %d}}\n", i, i);
	fclose(f);
	clock_step = 0;
	dbtest_feed(fx->db, path);
	*state = fx;
	return 0;
}

/* Run the request (a printf format) with the clock at 0 moving by one
 * second a read; 0 and the parsed result, or the error code. */
static int vquery(struct strata *db, json_t **out, struct strata_error *err, const char *fmt,
                  va_list ap)
{
	char req[1024];
	vsnprintf(req, sizeof req, fmt, ap);
	clock_now = 0;
	clock_step = 1;
	char *result = NULL;
	int rc = strata_query_json(db, req, &result, err);
	clock_step = 0;
	*out = NULL;
	if (!rc) {
		*out = json_loads(result, 0, NULL);
		assert_non_null(*out);
		strata_free(result);
	}
	return rc;
}

static int query(struct strata *db, json_t **out, struct strata_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = vquery(db, out, err, fmt, ap);
	va_end(ap);
	return rc;
}

static long long member(const json_t *j, const char *path)
{
	const json_t *v = j;
	char key[64];
	while (*path) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);
		memcpy(key, path, n);
		key[n] = 0;
		v = json_object_get(v, key);
		path += n + (dot != NULL);
	}
	if (!json_is_integer(v))
		fail_msg("%s: not an integer", path);
	return json_integer_value(v);
}

/* n of the result's i-th hit. */
static long long hit_n(const json_t *r, size_t i)
{
	const json_t *c = json_array_get(json_object_get(json_object_get(r, "root"), "children"), i);
	if (!c)
		fail_msg("no hit %zu", i);
	return json_integer_value(json_object_get(json_object_get(c, "fields"), "n"));
}

static const json_t *coverage(const json_t *r)
{
	return json_object_get(json_object_get(r, "root"), "coverage");
}

/* The coverage of a result stopped by its soft timeout: documents of NDOCS
 * searched, matches of them counted. */
static void expect_degraded(const json_t *r, long long documents, long long matches)
{
	const json_t *c = coverage(r);
	assert_int_equal(member(r, "root.fields.totalCount"), matches);
	assert_int_equal(member(c, "documents"), documents);
	long long pct = documents * 100 / NDOCS;
	assert_int_equal(member(c, "coverage"), documents < NDOCS && pct > 99 ? 99 : pct);
	assert_true(json_is_false(json_object_get(c, "full")));
	assert_int_equal(member(c, "resultsFull"), 0);
	const json_t *d = json_object_get(c, "degraded");
	assert_true(json_is_true(json_object_get(d, "timeout")));
	assert_true(json_is_false(json_object_get(d, "match-phase")));
}

/* The request (a printf format) must stop at its soft timeout, having
 * searched documents and found matches, with n = top its first hit. */
static void expect_stop(struct strata *db, long long documents, long long matches, long long top,
                        const char *fmt, ...)
{
	json_t *r;
	struct strata_error err = { 0 };
	va_list ap;
	va_start(ap, fmt);
	int rc = vquery(db, &r, &err, fmt, ap);
	va_end(ap);
	if (rc)
		fail_msg("%s: %d %s", fmt, rc, err.msg);
	expect_degraded(r, documents, matches);
	assert_int_equal(hit_n(r, 0), top);
	json_decref(r);
}

#define WHERE(cond) "\"yql\": \"select * from item where " cond "\", \"ranking.profile\": \"p\""

/* No timeout, and one the query never reaches: every document, the second
 * phase over all of them (n = 0 first), no "degraded". */
static void test_full(void **state)
{
	struct dbtest *fx = *state;
	const char *reqs[] = { "{" WHERE("true") "}", "{" WHERE("true") ", \"timeout\": 100}",
	                       "{" WHERE("true") ", \"timeout\": \"100s\","
	                       " \"ranking.softtimeout.enable\": false}" };
	for (size_t k = 0; k < sizeof reqs / sizeof reqs[0]; k++) {
		json_t *r;
		struct strata_error err = { 0 };
		assert_int_equal(query(fx->db, &r, &err, "%s", reqs[k]), 0);
		const json_t *c = coverage(r);
		assert_int_equal(member(r, "root.fields.totalCount"), NDOCS);
		assert_int_equal(member(c, "documents"), NDOCS);
		assert_int_equal(member(c, "coverage"), 100);
		assert_true(json_is_true(json_object_get(c, "full")));
		assert_null(json_object_get(c, "degraded"));
		assert_int_equal(hit_n(r, 0), 0);
		assert_int_equal(hit_n(r, 1), 1);
		json_decref(r);
	}
}

/* Matching stops: started at 0 with a deadline at 1.5 (factor 1), the
 * clock reads 1 after the first block and 2 after the second: 2048
 * documents searched, and the matches among them (n >= 1500) are fewer
 * than a block, so all are ranked. */
static void test_match_stops(void **state)
{
	struct dbtest *fx = *state;
	/* n = 1500 first: the second phase ran over them */
	expect_stop(fx->db, 2 * BLOCK, 2 * BLOCK - 1500, 1500,
	            "{" WHERE("n >= 1500") ", \"timeout\": 1.5, \"ranking.softtimeout.factor\": 1}");
	/* the same with the setting nested, and a factor that halves 3 s */
	expect_stop(fx->db, 2 * BLOCK, 2 * BLOCK - 1500, 1500,
	            "{" WHERE("n >= 1500") ", \"timeout\": \"3000ms\","
	            " \"ranking\": {\"softtimeout\": {\"factor\": \"0.5\"}}}");
}

/* The first phase stops: matching reads 1 and 2 and ends (2000 matches
 * of n >= 1000); the first phase reads 3 after its first block, past 2.5:
 * the 1024 ranked stay, and the documents up to the first match not
 * ranked (n = 1000 + 1024) count as searched. */
static void test_first_phase_stops(void **state)
{
	struct dbtest *fx = *state;
	expect_stop(fx->db, 1000 + BLOCK, BLOCK, 1000,
	            "{" WHERE("n >= 1000") ", \"timeout\": 2.5, \"ranking.softtimeout.factor\": 1.0}");
}

/* The second phase stops: matching reads 1, 2; the first phase 3, 4; the
 * second phase 5 after its first batch, past 4.5.  The best 1024 by n
 * were re-ranked (by -n: n = 3000 - 1024 first); the others follow in
 * their first-phase order (n = 1975 next).  Every document was searched. */
static void test_second_phase_stops(void **state)
{
	struct dbtest *fx = *state;
	json_t *r;
	struct strata_error err = { 0 };
	assert_int_equal(query(fx->db, &r, &err, "{" WHERE("true") ", \"timeout\": 4.5,"
	                       " \"ranking.softtimeout.factor\": 1, \"hits\": 2}"), 0);
	expect_degraded(r, NDOCS, NDOCS);
	assert_int_equal(member(coverage(r), "coverage"), 100);
	assert_int_equal(hit_n(r, 0), NDOCS - BLOCK);
	assert_int_equal(hit_n(r, 1), NDOCS - BLOCK + 1);
	json_decref(r);
	assert_int_equal(query(fx->db, &r, &err, "{" WHERE("true") ", \"timeout\": 4.5,"
	                       " \"ranking.softtimeout.factor\": 1, \"hits\": 2,"
	                       " \"offset\": %d}", BLOCK - 1), 0);
	assert_int_equal(hit_n(r, 0), NDOCS - 1);          /* the last re-ranked */
	assert_int_equal(hit_n(r, 1), NDOCS - BLOCK - 1);  /* the best not re-ranked */
	json_decref(r);
	/* YQL's timeout, in milliseconds, wins over the request's */
	expect_stop(fx->db, NDOCS, NDOCS, NDOCS - BLOCK, "{" WHERE("true timeout 4500")
	            ", \"timeout\": 100, \"ranking.softtimeout.factor\": 1}");
}

/* The first phase split over two search threads (min-hits-per-thread 1):
 * matching reads 1 and 2 and ends; the searching thread reads 3 after its
 * first block, past 2.5, and withdraws the blocks not yet taken.  How many
 * the other thread took by then is the machine's doing (often all of
 * them: then the second phase stops instead), but what was ranked is a
 * prefix of the matches (n below the documents covered), whole blocks of
 * them, or all. */
static void test_split_stops(void **state)
{
	struct dbtest *fx = *state;
	strata_close(fx->db);
	struct strata_options o = { .search_threads = 2 };
	struct strata_error err = { 0 };
	if (strata_open(fx->dir, &o, &fx->db, &err) != 0)
		fail_msg("open: %s", err.msg);
	struct strata_stats s0, s1;
	strata_stats(fx->db, &s0);
	for (int round = 0; round < 20; round++) {
		json_t *r;
		assert_int_equal(query(fx->db, &r, &err, "{" WHERE("true") ", \"timeout\": 2.5,"
		                       " \"ranking.softtimeout.factor\": 1, \"hits\": 100}"), 0);
		long long docs = member(coverage(r), "documents");
		assert_true(docs == BLOCK || docs == 2 * BLOCK || docs == NDOCS);
		assert_int_equal(member(r, "root.fields.totalCount"), docs);
		for (size_t i = 0; i < 100; i++)
			assert_true(hit_n(r, i) < docs);
		json_decref(r);
	}
	strata_stats(fx->db, &s1);
	assert_int_equal(s1.split_first_phases - s0.split_first_phases, 20);
	strata_close(fx->db);
	dbtest_open_dir(fx->dir, &fx->db);
}

/* A timeout of 0 has passed when the query starts: the first block of
 * each step is done, no more. */
static void test_zero(void **state)
{
	struct dbtest *fx = *state;
	struct strata_stats s0, s1;
	strata_stats(fx->db, &s0);
	expect_stop(fx->db, BLOCK, BLOCK, 0, "{" WHERE("true") ", \"timeout\": 0}");
	strata_stats(fx->db, &s1);
	assert_int_equal(s1.degraded - s0.degraded, 1); /* counted as such */
	assert_int_equal(s1.queries - s0.queries, 1);
}

/* Soft timeout off: the query fails at the first check past the timeout,
 * or at its end. */
static void test_hard(void **state)
{
	struct dbtest *fx = *state;
	json_t *r;
	struct strata_error err = { 0 };
	struct strata_stats s0, s1;
	strata_stats(fx->db, &s0);
	assert_int_equal(query(fx->db, &r, &err, "{" WHERE("true") ", \"timeout\": 4.5,"
	                       " \"ranking.softtimeout.enable\": \"false\"}"), STRATA_TIMEOUT);
	assert_non_null(strstr(err.msg, "timed out"));
	assert_non_null(strstr(err.msg, "4500 ms"));
	assert_null(r);
	/* 8 reads: the start at 0, two per step, the end at 7 */
	assert_int_equal(query(fx->db, &r, &err, "{" WHERE("true") ", \"timeout\": 6.5,"
	                       " \"ranking\": {\"softtimeout\": {\"enable\": false}}}"), STRATA_TIMEOUT);
	assert_int_equal(query(fx->db, &r, &err, "{" WHERE("true") ", \"timeout\": 7.5,"
	                       " \"ranking\": {\"softtimeout\": {\"enable\": false}}}"), 0);
	assert_int_equal(member(r, "root.fields.totalCount"), NDOCS);
	json_decref(r);
	assert_string_equal(strata_strerror(STRATA_TIMEOUT), "timed out");
	strata_stats(fx->db, &s1);
	assert_int_equal(s1.queries - s0.queries, 1); /* the one that passed, not degraded */
	assert_int_equal(s1.degraded, s0.degraded);
}

/* Each allocation of a query stopped by its soft timeout made to fail in
 * turn: out of memory, nothing kept; then the degraded result.  The clock
 * moves on from query to query, but each reads it from its own start. */
static void test_nomem(void **state)
{
	struct dbtest *fx = *state;
	long failures;
	clock_step = 1;
	char *out = dbtest_query_failing(fx->db, "{" WHERE("n >= 1500") ", \"timeout\": 1.5,"
	                                 " \"ranking.softtimeout.factor\": 1}", &failures);
	clock_step = 0;
	assert_true(failures > 0);
	json_t *r = json_loads(out, 0, NULL);
	strata_free(out);
	expect_degraded(r, 2 * BLOCK, 2 * BLOCK - 1500);
	json_decref(r);
}

static void test_bad_settings(void **state)
{
	struct dbtest *fx = *state;
	static const struct {
		const char *set, *msg;
	} cases[] = {
		{ "\"timeout\": \"soon\"", "\"timeout\": expected seconds" },
		{ "\"timeout\": -1", "\"timeout\": expected seconds" },
		{ "\"timeout\": \"5 h\"", "\"timeout\": expected seconds" },
		{ "\"timeout\": 1, \"ranking.softtimeout.factor\": 0", "ranking.softtimeout.factor" },
		{ "\"timeout\": 1, \"ranking.softtimeout.factor\": \"1.5\"", "ranking.softtimeout.factor" },
		{ "\"ranking.softtimeout.enable\": \"maybe\"", "ranking.softtimeout.enable" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *r;
		struct strata_error err = { 0 };
		int rc = query(fx->db, &r, &err, "{" WHERE("true") ", %s}", cases[i].set);
		if (rc != STRATA_INVALID_ARGUMENT || !strstr(err.msg, cases[i].msg))
			fail_msg("%s: got %d '%s'", cases[i].set, rc, err.msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_match_stops),
		cmocka_unit_test(test_first_phase_stops),
		cmocka_unit_test(test_second_phase_stops),
		cmocka_unit_test(test_split_stops),
		cmocka_unit_test(test_zero),
		cmocka_unit_test(test_hard),
		cmocka_unit_test(test_nomem),
		cmocka_unit_test(test_bad_settings),
	};
	return cmocka_run_group_tests(tests, setup, dbtest_teardown);
}
