/*
 * test_wand.c: weakAnd (engine/match/wand.c) through the library.  300 documents
 * of words drawn from a small vocabulary with skewed frequencies are fed;
 * the weakAnd scores (term weight 100 times log(1 + (N - n + 0.5) / (n +
 * 0.5)) summed over the query terms a document holds) are computed here by
 * brute force from the generated texts.  Checked: with targetHits at least
 * the number of matches weakAnd matches exactly what the OR matches; with a
 * small targetHits every document scoring above the targetHits-th best
 * score is kept, at least targetHits are, and every one kept is an OR
 * match, and its bm25 is the OR's; weakAnd under an AND, as rank()'s first condition and over a
 * fieldset; the terms it refuses, with their positions; allocation
 * failures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>
#include <jansson.h>

#include "dbtest.h"

#define NDOCS 300
#define NWORDS 12

static const char *const words[NWORDS] = {
	"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
	"kilo", "lima",
};

static const char *const SD =
	"schema doc {\n"
	"  document doc {\n"
	"    field body type string { indexing: summary | index\n stemming: none\n index: enable-bm25 }\n"
	"    field extra type string { indexing: summary | index\n stemming: none }\n"
	"    field plain type string { indexing: summary | attribute }\n"
	"    field n type int { indexing: summary | attribute }\n"
	"  }\n"
	"  fieldset both { fields: body, extra }\n"
	"  rank-profile default { first-phase { expression: attribute(n) } }\n"
	"  rank-profile text { first-phase { expression: bm25(body) } }\n"
	"}\n";

struct fixture {
	struct dbtest app;                /* first: dbtest_teardown frees the fixture */
	unsigned char has[NDOCS][NWORDS]; /* has[d][w]: document d's body holds word w */
	unsigned char extra[NDOCS];       /* the word its extra field holds */
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof *fx);
	fx->app.dir = dbtest_open("strata-wand.", "doc.sd", SD, &fx->app.db);
	/* word w is in a document with probability about 1 / (w + 1.5) */
	unsigned seed = 12345;
	for (int d = 0; d < NDOCS; d++) {
		char body[512] = "", op[1024];
		for (int w = 0; w < NWORDS; w++) {
			seed = seed * 1103515245u + 12345u;
			if ((seed >> 8) % 1000 < (unsigned)(1000 / (w + 1.5))) {
				fx->has[d][w] = 1;
				strcat(body, words[w]);
				strcat(body, (seed >> 20) & 1 ? " " : ", ");
			}
		}
		seed = seed * 1103515245u + 12345u;
		fx->extra[d] = (unsigned char)((seed >> 8) % NWORDS);
		snprintf(op, sizeof op,
		         "{\"put\": \"id:doc:doc::%d\", \"fields\": {\"body\": \"%s\", \"extra\": \"%s\","
		         " \"plain\": \"alpha\", \"n\": %d}}", d, body, words[fx->extra[d]], d);
		dbtest_feed_json(fx->app.db, op);
	}
	*state = fx;
	return 0;
}

/* The documents a query matches: in[d] set, their number returned (the
 * result's totalCount, checked against the hits). */
static int matches_rel(struct fixture *fx, const char *where, const char *profile, int in[NDOCS],
                       double rel[NDOCS])
{
	char req[1024];
	snprintf(req, sizeof req,
	         "{\"yql\": \"select * from sources * where %s\", \"hits\": 400,"
	         " \"ranking.profile\": \"%s\"}", where, profile);
	json_t *r = dbtest_query(fx->app.db, req);
	json_t *root = json_object_get(r, "root");
	int total = (int)json_integer_value(json_object_get(json_object_get(root, "fields"),
	                                                    "totalCount"));
	json_t *kids = json_object_get(root, "children");
	memset(in, 0, NDOCS * sizeof *in);
	size_t i;
	json_t *h;
	json_array_foreach(kids, i, h) {
		int d = dbtest_hit_key(h);
		assert_true(d >= 0 && d < NDOCS);
		in[d] = 1;
		if (rel)
			rel[d] = json_real_value(json_object_get(h, "relevance"));
	}
	assert_int_equal(json_array_size(kids), total);
	json_decref(r);
	return total;
}

static int matches(struct fixture *fx, const char *where, const char *profile, int in[NDOCS])
{
	return matches_rel(fx, where, profile, in, NULL);
}

static void expect_error(struct fixture *fx, const char *where, int code, const char *msg)
{
	char req[512];
	snprintf(req, sizeof req, "{\"yql\": \"select * from sources * where %s\"}", where);
	dbtest_query_fails(fx->app.db, req, code, msg);
}

/* The brute-force weakAnd score of each document for the body terms q. */
static void scores(const struct fixture *fx, const int *q, int nq, double s[NDOCS])
{
	for (int d = 0; d < NDOCS; d++)
		s[d] = 0;
	for (int i = 0; i < nq; i++) {
		int df = 0;
		for (int d = 0; d < NDOCS; d++)
			df += fx->has[d][q[i]];
		double idf = log(1 + (NDOCS - df + 0.5) / (df + 0.5));
		for (int d = 0; d < NDOCS; d++)
			if (fx->has[d][q[i]])
				s[d] += 100 * idf;
	}
}

static int desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x > y ? -1 : x < y;
}

/* weakAnd over the body terms q with targetHits k, against the OR and the
 * brute-force scores. */
static void check_terms(struct fixture *fx, const int *q, int nq, int k)
{
	char wand[512], orq[512];
	int o = snprintf(wand, sizeof wand, "{targetHits: %d}weakAnd(", k);
	int p = 0;
	for (int i = 0; i < nq; i++) {
		o += snprintf(wand + o, sizeof wand - (size_t)o, "%sbody contains \\\"%s\\\"",
		              i ? ", " : "", words[q[i]]);
		p += snprintf(orq + p, sizeof orq - (size_t)p, "%sbody contains \\\"%s\\\"",
		              i ? " or " : "", words[q[i]]);
	}
	snprintf(wand + o, sizeof wand - (size_t)o, ")");
	int in_w[NDOCS], in_or[NDOCS];
	double rel_w[NDOCS], rel_or[NDOCS];
	int nw = matches_rel(fx, wand, "text", in_w, rel_w);
	int nor = matches_rel(fx, orq, "text", in_or, rel_or);
	/* bm25 of a weakAnd match (its terms' occurrences kept by the walk) is
	 * the OR's (read from the posting lists) */
	for (int d = 0; d < NDOCS; d++)
		if (in_w[d] && fabs(rel_w[d] - rel_or[d]) > 1e-12 * fabs(rel_or[d]))
			fail_msg("%s: document %d: bm25 %.17g, by the OR %.17g", wand, d, rel_w[d],
			         rel_or[d]);
	double s[NDOCS], sorted[NDOCS];
	scores(fx, q, nq, s);
	int nscored = 0;
	for (int d = 0; d < NDOCS; d++) {
		assert_int_equal(in_or[d], s[d] > 0); /* the OR, against the texts */
		if (in_w[d])
			assert_true(in_or[d]);
		if (s[d] > 0)
			sorted[nscored++] = s[d];
	}
	assert_int_equal(nor, nscored);
	if (k >= nor) {
		assert_int_equal(nw, nor);
		return;
	}
	qsort(sorted, (size_t)nscored, sizeof *sorted, desc);
	double kth = sorted[k - 1];
	assert_true(nw >= k);
	assert_true(nw < nor); /* it pruned */
	for (int d = 0; d < NDOCS; d++)
		if (s[d] > kth + 1e-9)
			assert_true(in_w[d]);
}

static void test_weakand_vs_or(void **state)
{
	struct fixture *fx = *state;
	static const int q1[] = {0}, q3[] = {1, 5, 9}, q8[] = {0, 1, 2, 3, 6, 8, 10, 11};
	check_terms(fx, q1, 1, 400);
	check_terms(fx, q3, 3, 400);
	check_terms(fx, q8, 8, 300);
	check_terms(fx, q3, 3, 5);
	check_terms(fx, q3, 3, 1);
	check_terms(fx, q8, 8, 10);
	check_terms(fx, q8, 8, 3);
	check_terms(fx, q1, 1, 7);
}

static void test_weakand_in_tree(void **state)
{
	struct fixture *fx = *state;
	int a[NDOCS], b[NDOCS];
	/* under an AND: the weakAnd's matches that pass the filter */
	int n = matches(fx, "{targetHits: 1000}weakAnd(body contains \\\"golf\\\", body contains "
	                    "\\\"kilo\\\") and n < 100", "default", a);
	int want = 0;
	for (int d = 0; d < NDOCS; d++) {
		int w = d < 100 && (fx->has[d][6] || fx->has[d][10]);
		assert_int_equal(a[d], w);
		want += w;
	}
	assert_int_equal(n, want);
	/* rank(): matched by its first condition */
	n = matches(fx, "rank(weakAnd(body contains \\\"lima\\\"), body contains \\\"alpha\\\")",
	            "text", a);
	want = 0;
	for (int d = 0; d < NDOCS; d++) {
		assert_int_equal(a[d], fx->has[d][11]);
		want += fx->has[d][11];
	}
	assert_int_equal(n, want);
	/* in an OR and under a NOT: a condition like the others */
	n = matches(fx, "weakAnd(body contains \\\"lima\\\") or n = 0", "default", a);
	assert_int_equal(n, want + !fx->has[0][11]);
	n = matches(fx, "!weakAnd(body contains \\\"lima\\\")", "default", b);
	assert_int_equal(n, NDOCS - want);
	/* over a fieldset: each field's term */
	n = matches(fx, "weakAnd(both contains \\\"india\\\")", "default", a);
	want = 0;
	for (int d = 0; d < NDOCS; d++) {
		int w = fx->has[d][8] || fx->extra[d] == 8;
		assert_int_equal(a[d], w);
		want += w;
	}
	assert_int_equal(n, want);
	/* a term of no word, and a field the type lacks, match nothing */
	assert_int_equal(matches(fx, "weakAnd(body contains \\\" , \\\")", "default", a), 0);
}

static void test_weakand_errors(void **state)
{
	struct fixture *fx = *state;
	expect_error(fx, "weakAnd(plain contains \\\"alpha\\\")", STRATA_NOT_IMPLEMENTED,
	             "yql:1:39: weakAnd() over 'plain', a field without a text index, is not "
	             "supported");
	expect_error(fx, "weakAnd(body contains \\\"alpha\\\", n < 3)", STRATA_NOT_IMPLEMENTED,
	             "yql:1:62: weakAnd() takes terms ('field contains \"word\"'); other conditions");
	expect_error(fx, "weakAnd(body contains \\\"alpha bravo\\\")", STRATA_NOT_IMPLEMENTED,
	             "yql:1:39: a phrase in weakAnd() (\"alpha bravo\": several words)");
	expect_error(fx, "{targetHits: -1}weakAnd(body contains \\\"alpha\\\")", STRATA_PARSE,
	             "yql:1:44: targetHits must be a positive integer");
	expect_error(fx, "{label: \\\"x\\\"}weakAnd(body contains \\\"alpha\\\")", STRATA_PARSE,
	             "yql:1:32: weakAnd takes the annotation targetHits only");
	expect_error(fx, "weakAnd(nosuch contains \\\"alpha\\\")", STRATA_NOT_FOUND,
	             "field 'nosuch' not found");
}

/* Every allocation of a weakAnd query failing in turn: each failure is
 * STRATA_NOMEM, nothing leaks, and the query then runs. */
static void test_weakand_alloc(void **state)
{
	struct fixture *fx = *state;
	const char *req = "{\"yql\": \"select * from sources * where {targetHits: 4}weakAnd(body "
	                  "contains \\\"alpha\\\", body contains \\\"echo\\\", both contains "
	                  "\\\"kilo\\\")\", \"ranking.profile\": \"text\"}";
	char *good = NULL;
	struct strata_error err = {0};
	assert_int_equal(strata_query_json(fx->app.db, req, &good, &err), 0);
	long failures;
	char *out = dbtest_query_failing(fx->app.db, req, &failures);
	assert_string_equal(out, good);
	strata_free(out);
	assert_true(failures > 3);
	strata_free(good);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_weakand_vs_or),
		cmocka_unit_test(test_weakand_in_tree),
		cmocka_unit_test(test_weakand_errors),
		cmocka_unit_test(test_weakand_alloc),
	};
	return cmocka_run_group_tests(tests, setup, dbtest_teardown);
}
