/*
 * test_ann.c: nearestNeighbor through the library's query path on fields
 * with an HNSW index (engine/match/nearest.c over store/hnsw*.c): approximate
 * hits against exact search and against a brute force computed here,
 * filters keeping from every document down to 0.1% of them (where exact
 * search over the filter takes over), distance and closeness features of
 * the hits, a hamming field of int8 bits, removes and updates, reopening,
 * and the schema and query errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbtest.h"
#include "vecgen.h"

#define DIM 16
#define NDOC 4000
#define NQ 20
#define K 10

static const char vec_sd[] =
	"schema vec {\n"
	"    document vec {\n"
	"        field tag type int {\n"
	"            indexing: attribute | summary\n"
	"        }\n"
	"        field emb type tensor<float>(x[16]) {\n"
	"            indexing: attribute | index\n"
	"            attribute {\n"
	"                distance-metric: euclidean\n"
	"            }\n"
	"            index {\n"
	"                hnsw {\n"
	"                    max-links-per-node: 12\n"
	"                    neighbors-to-explore-at-insert: 80\n"
	"                }\n"
	"            }\n"
	"        }\n"
	"        field bits type tensor<int8>(x[8]) {\n"
	"            indexing: attribute | index\n"
	"            attribute: distance-metric: hamming\n"
	"        }\n"
	"    }\n"
	"    rank-profile near {\n"
	"        inputs {\n"
	"            query(q) tensor<float>(x[16])\n"
	"        }\n"
	"        first-phase {\n"
	"            expression: closeness(field, emb)\n"
	"        }\n"
	"        match-features: distance(field, emb) closeness(field, emb)\n"
	"    }\n"
	"    rank-profile bits {\n"
	"        inputs {\n"
	"            query(qb) tensor<int8>(x[8])\n"
	"        }\n"
	"        first-phase {\n"
	"            expression: closeness(field, bits)\n"
	"        }\n"
	"        match-features: distance(field, bits)\n"
	"    }\n"
	"}\n";

struct fx {
	struct dbtest app; /* first: dbtest_teardown frees the fixture */
	float emb[NDOC][DIM];
	int8_t bits[NDOC][8];
	int live[NDOC];
};

/* Vector k of data set seed: near one of 16 centres. */
static void gen(uint64_t seed, int k, float *v, int8_t *b)
{
	uint64_t cs = seed * 100 + (uint64_t)(k % 16), ps = seed * 7717 + (uint64_t)k;
	for (int i = 0; i < DIM; i++)
		v[i] = (float)(vg_gauss(&cs) * 4 + vg_gauss(&ps));
	for (int i = 0; b && i < 8; i++)
		b[i] = (int8_t)(vg_next(&cs) & 0xff) ^ (int8_t)(vg_next(&ps) & 0x11);
}

static void put_line(FILE *f, struct fx *fx, int k)
{
	fprintf(f, "{\"put\": \"id:t:vec::%d\", \"fields\": {\"tag\": %d, \"emb\": [", k, k % 1000);
	for (int i = 0; i < DIM; i++)
		fprintf(f, "%s%.9g", i ? ", " : "", (double)fx->emb[k][i]);
	fprintf(f, "], \"bits\": [");
	for (int i = 0; i < 8; i++)
		fprintf(f, "%s%d", i ? ", " : "", fx->bits[k][i]);
	fprintf(f, "]}}\n");
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	fx->app.dir = dbtest_open("strata-ann.", "vec.sd", vec_sd, &fx->app.db);
	char path[256];
	snprintf(path, sizeof path, "%s/feed.jsonl", fx->app.dir);
	FILE *f = fopen(path, "w");
	for (int k = 0; k < NDOC; k++) {
		gen(1, k, fx->emb[k], fx->bits[k]);
		put_line(f, fx, k);
		fx->live[k] = 1;
	}
	fclose(f);
	dbtest_feed(fx->app.db, path);
	*state = fx;
	return 0;
}

static double l2(const float *a, const float *b)
{
	double s = 0;
	for (int i = 0; i < DIM; i++)
		s += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
	return sqrt(s);
}

/* Brute force: the distance of the K-th nearest live document with tag < below. */
static double kth(struct fx *fx, const float *q, int below, int *n)
{
	struct vg_ref *r = malloc(NDOC * sizeof *r);
	*n = 0;
	for (int k = 0; k < NDOC; k++)
		if (fx->live[k] && k % 1000 < below)
			r[(*n)++] = (struct vg_ref){l2(fx->emb[k], q), k};
	qsort(r, (size_t)*n, sizeof *r, vg_ref_cmp);
	double d = *n ? r[(*n < K ? *n : K) - 1].d : INFINITY;
	free(r);
	return d;
}

static void request(char *buf, size_t n, const float *q, const char *yql)
{
	int o = snprintf(buf, n, "{\"yql\": \"%s\", \"ranking.profile\": \"near\", \"hits\": %d, "
	                 "\"input.query(q)\": [", yql, K);
	for (int i = 0; i < DIM; i++)
		o += snprintf(buf + o, n - (size_t)o, "%s%.9g", i ? ", " : "", (double)q[i]);
	snprintf(buf + o, n - (size_t)o, "]}");
}

/* Recall@K of the query path for the filter tag < below, approximate or
 * not; also checks every hit's features and the filter. */
static double run(struct fx *fx, int below, int approximate, int explore)
{
	long found = 0, wanted = 0;
	for (int qi = 0; qi < NQ; qi++) {
		float q[DIM];
		gen(2, qi * 5 + 1, q, NULL);
		char yql[300], req[2048];
		snprintf(yql, sizeof yql,
		         "select * from sources * where {targetHits: %d, approximate: %s, "
		         "hnsw.exploreAdditionalHits: %d}nearestNeighbor(emb, q)%s",
		         K, approximate ? "true" : "false", explore, below < 1000 ? " and tag < " : "");
		if (below < 1000)
			snprintf(yql + strlen(yql), sizeof yql - strlen(yql), "%d", below);
		request(req, sizeof req, q, yql);
		json_t *r = dbtest_query(fx->app.db, req);
		int n;
		double dk = kth(fx, q, below, &n);
		json_t *hits = dbtest_hits(r);
		size_t want = n < K ? (size_t)n : K;
		assert_int_equal(json_array_size(hits), want);
		for (size_t i = 0; i < json_array_size(hits); i++) {
			json_t *h = json_array_get(hits, i);
			int k = dbtest_hit_key(h);
			assert_true(k >= 0 && k < NDOC && fx->live[k]);
			assert_true(k % 1000 < below);
			double d = l2(fx->emb[k], q);
			json_t *mf = json_object_get(json_object_get(h, "fields"), "matchfeatures");
			double fd = json_number_value(json_object_get(mf, "distance(field, emb)"));
			double fc = json_number_value(json_object_get(mf, "closeness(field, emb)"));
			assert_true(fabs(fd - d) < 1e-4 * (1 + d));
			assert_true(fabs(fc - 1 / (1 + d)) < 1e-6);
			found += d <= dk + 1e-6;
		}
		wanted += (long)want;
		json_decref(r);
	}
	return wanted ? (double)found / (double)wanted : 1.0;
}

static void test_approximate_vs_exact(void **state)
{
	struct fx *fx = *state;
	assert_true(run(fx, 1000, 0, 0) == 1.0); /* exact is exact */
	double a = run(fx, 1000, 1, 100);
	if (a < 0.95)
		fail_msg("approximate recall@%d %.3f", K, a);
}

static void test_filters(void **state)
{
	struct fx *fx = *state;
	/* tag = k % 1000: tag < 1000 keeps all, < 100 10%, < 10 1%, < 1 0.1% */
	static const int below[] = {1000, 500, 100, 10, 1};
	for (size_t i = 0; i < sizeof below / sizeof below[0]; i++) {
		double a = run(fx, below[i], 1, 100);
		if (a < 0.95)
			fail_msg("tag < %d: recall %.3f", below[i], a);
	}
}

static void test_hamming(void **state)
{
	struct fx *fx = *state;
	for (int qi = 0; qi < 10; qi++) {
		int8_t qb[8];
		float tmp[DIM];
		gen(3, qi, tmp, qb);
		char req[1024];
		int o = snprintf(req, sizeof req,
		                 "{\"yql\": \"select * from sources * where {targetHits: 5, "
		                 "hnsw.exploreAdditionalHits: 100}nearestNeighbor(bits, qb)\", "
		                 "\"ranking.profile\": \"bits\", \"input.query(qb)\": [");
		for (int i = 0; i < 8; i++)
			o += snprintf(req + o, sizeof req - (size_t)o, "%s%d", i ? ", " : "", qb[i]);
		snprintf(req + o, sizeof req - (size_t)o, "]}");
		json_t *r = dbtest_query(fx->app.db, req);
		/* the brute-force 5th smallest bit distance */
		int cnt[65] = {0};
		for (int k = 0; k < NDOC; k++) {
			int d = 0;
			for (int i = 0; i < 8; i++)
				d += __builtin_popcount((uint8_t)(fx->bits[k][i] ^ qb[i]));
			cnt[d]++;
		}
		int fifth = 0;
		for (int acc = 0; fifth <= 64 && (acc += cnt[fifth]) < 5; fifth++)
			;
		json_t *hits = dbtest_hits(r);
		assert_int_equal(json_array_size(hits), 5);
		for (size_t i = 0; i < 5; i++) {
			json_t *h = json_array_get(hits, i);
			int k = dbtest_hit_key(h), d = 0;
			for (int j = 0; j < 8; j++)
				d += __builtin_popcount((uint8_t)(fx->bits[k][j] ^ qb[j]));
			json_t *mf = json_object_get(json_object_get(h, "fields"), "matchfeatures");
			assert_int_equal((int)json_number_value(json_object_get(mf, "distance(field, bits)")), d);
			assert_true(d <= fifth);
		}
		json_decref(r);
	}
}

static void test_remove_update_reopen(void **state)
{
	struct fx *fx = *state;
	char path[256];
	snprintf(path, sizeof path, "%s/changes.jsonl", fx->app.dir);
	FILE *f = fopen(path, "w");
	for (int k = 0; k < NDOC; k += 3) {
		if (k % 2) {
			fprintf(f, "{\"remove\": \"id:t:vec::%d\"}\n", k);
			fx->live[k] = 0;
		} else {
			gen(9, k, fx->emb[k], fx->bits[k]);
			fprintf(f, "{\"update\": \"id:t:vec::%d\", \"fields\": {\"emb\": {\"assign\": [", k);
			for (int i = 0; i < DIM; i++)
				fprintf(f, "%s%.9g", i ? ", " : "", (double)fx->emb[k][i]);
			fprintf(f, "]}, \"bits\": {\"assign\": [");
			for (int i = 0; i < 8; i++)
				fprintf(f, "%s%d", i ? ", " : "", fx->bits[k][i]);
			fprintf(f, "]}}}\n");
		}
	}
	fclose(f);
	dbtest_feed(fx->app.db, path);
	/* a third of the corpus changed: the repaired graph needs a wider
	 * search for the same recall (about 0.91 at 100 here) */
	double a = run(fx, 1000, 1, 200);
	if (a < 0.95)
		fail_msg("after changes: recall %.3f", a);
	strata_close(fx->app.db);
	fx->app.db = NULL;
	dbtest_open_dir(fx->app.dir, &fx->app.db);
	double b = run(fx, 100, 1, 200);
	if (b < 0.95)
		fail_msg("reopened, filtered: recall %.3f", b);
}

static void test_errors(void **state)
{
	struct fx *fx = *state;
	float q[DIM] = {0};
	char req[2048];
	request(req, sizeof req, q,
	        "select * from sources * where {targetHits: 3, hnsw.exploreAdditionalHits: -1}"
	        "nearestNeighbor(emb, q)");
	dbtest_query_fails(fx->app.db, req, STRATA_PARSE,
	                   "hnsw.exploreAdditionalHits must be a whole number");
	/* schema errors: an unknown hnsw setting, a bad number, an index setting */
	static const struct {
		const char *sd, *where, *what;
		int code;
	} bad[] = {
		{"schema s { document s { field e type tensor<float>(x[2]) {\n"
		 " indexing: attribute | index\n index { hnsw { max-links: 3 } } } } }",
		 "s.sd:3:17", "hnsw setting 'max-links' is not supported", STRATA_NOT_IMPLEMENTED},
		{"schema s { document s { field e type tensor<float>(x[2]) {\n"
		 " indexing: attribute | index\n index { hnsw { max-links-per-node: 1 } } } } }",
		 "s.sd:3:37", "'max-links-per-node' must be a whole number from 2 to 256", STRATA_TYPE},
		{"schema s { document s { field e type tensor<float>(x[2]) {\n"
		 " indexing: attribute | index\n index { lsh { } } } } }",
		 "s.sd:3:10", "index setting 'lsh' on a tensor is not supported", STRATA_NOT_IMPLEMENTED},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		dbtest_expect_open_error(dbtest_app("strata-ann-bad.", "s.sd", bad[i].sd), bad[i].code,
		                         bad[i].where, bad[i].what);
}

/* Exact search: candidates at the distance of the last one kept are kept
 * by document id, whatever order they were fed (local ids) in. */
static void test_exact_ties(void **state)
{
	(void)state;
	struct strata *db;
	char *app = dbtest_open("strata-ann-ties", "v.sd",
	                        "schema v { document v {\n"
	                        " field emb type tensor<float>(x[2]) { indexing: attribute\n"
	                        "  attribute { distance-metric: euclidean } } }\n"
	                        " rank-profile near { inputs { query(q) tensor<float>(x[2]) }\n"
	                        "  first-phase { expression: closeness(field, emb) } } }\n", &db);
	static const char *const docs[] = {
		"{\"put\": \"id:t:v::5\", \"fields\": {\"emb\": [1, 0]}}",
		"{\"put\": \"id:t:v::4\", \"fields\": {\"emb\": [0, 1]}}",
		"{\"put\": \"id:t:v::6\", \"fields\": {\"emb\": [0, 0]}}",
		"{\"put\": \"id:t:v::3\", \"fields\": {\"emb\": [1, 0]}}",
		"{\"put\": \"id:t:v::2\", \"fields\": {\"emb\": [-1, 0]}}",
		"{\"put\": \"id:t:v::7\", \"fields\": {\"emb\": [3, 0]}}",
	};
	for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
		struct strata_error err = {0};
		if (strata_feed_json(db, docs[i], &err) != 0)
			fail_msg("%s: %s", docs[i], err.msg);
	}
	json_t *r = dbtest_query(db, "{\"yql\": \"select * from v where {targetHits: 3, "
	                             "approximate: false}nearestNeighbor(emb, q)\", "
	                             "\"ranking.profile\": \"near\", \"input.query(q)\": [0, 0]}");
	json_t *hits = dbtest_hits(r);
	assert_int_equal(json_array_size(hits), 3);
	int keys[3];
	for (size_t i = 0; i < 3; i++)
		keys[i] = dbtest_hit_key(json_array_get(hits, i));
	assert_int_equal(keys[0], 6);
	/* 5, 4, 3 and 2 are all at distance 1: 2 and 3 are kept, in id order */
	assert_int_equal(keys[1], 2);
	assert_int_equal(keys[2], 3);
	json_decref(r);
	strata_close(db);
	apptest_remove(app);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_approximate_vs_exact),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_hamming),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_remove_update_reopen),
		cmocka_unit_test(test_exact_ties),
	};
	return cmocka_run_group_tests(tests, setup, dbtest_teardown);
}
