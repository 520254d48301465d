/*
 * test_multivec.c: nearestNeighbor over multi-vector fields (a tensor of
 * one mapped and one indexed dimension, several vectors per document)
 * through the library's query path: the hits, their order and their
 * distance, closeness and closest features against a brute force computed
 * here over every document's vectors, with and without a filter and a
 * label, in the euclidean and angular metrics, from the graph (emb has an
 * index) and exactly (approximate: false, and ang without an index);
 * updates that change the number of vectors and removes; a feed killed
 * with SIGKILL, then reopened; features outside
 * a nearestNeighbor query; and the schema and query errors.
 *
 * Cells are multiples of 1/64, exact in float and double, so the brute
 * force's sums are the engine's and ties order the same (by document id).
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

#include "../store/store.h"
#include "dbtest.h"
#include "killwriter.h"
#include "vecgen.h"

#define DIM 4
#define NDOC 300
#define MAXV 4
#define NQ 12
#define K 7

static const char mv_sd[] =
	"schema mv {\n"
	"    document mv {\n"
	"        field tag type int {\n"
	"            indexing: attribute | summary\n"
	"        }\n"
	"        field emb type tensor<float>(p{}, x[4]) {\n"
	"            indexing: attribute | index\n"
	"            attribute { distance-metric: euclidean }\n"
	"        }\n"
	"        field ang type tensor<float>(s{}, x[4]) {\n"
	"            indexing: attribute\n"
	"            attribute { distance-metric: angular }\n"
	"        }\n"
	"        field cats type tensor<float>(c{}) {\n"
	"            indexing: attribute\n"
	"        }\n"
	"    }\n"
	"    rank-profile emb {\n"
	"        inputs {\n"
	"            query(q) tensor<float>(x[4])\n"
	"        }\n"
	"        first-phase {\n"
	"            expression: closeness(field, emb)\n"
	"        }\n"
	"        match-features: distance(field, emb) closeness(field, emb) closest(emb) "
	"closest(emb, lab) closeness(label, lab)\n"
	"    }\n"
	"    rank-profile ang {\n"
	"        inputs {\n"
	"            query(q) tensor<float>(x[4])\n"
	"        }\n"
	"        first-phase {\n"
	"            expression: closeness(field, ang)\n"
	"        }\n"
	"        match-features: distance(field, ang) closest(ang)\n"
	"    }\n"
	"    rank-profile wrong {\n"
	"        inputs {\n"
	"            query(q) tensor<float>(x[3])\n"
	"        }\n"
	"        first-phase {\n"
	"            expression: closeness(field, emb)\n"
	"        }\n"
	"    }\n"
	"}\n";

struct fx {
	struct dbtest app; /* first: dbtest_teardown frees the fixture */
	int nv[NDOC];              /* vectors of the document (0: no value) */
	double v[NDOC][MAXV][DIM]; /* emb's; ang holds the same vectors */
};

static double cell(uint64_t *s)
{
	return (double)((int)(vg_next(s) % 257) - 128) / 64.0;
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	fx->app.dir = dbtest_open("strata-multivec.", "mv.sd", mv_sd, &fx->app.db);
	char path[256];
	snprintf(path, sizeof path, "%s/feed.jsonl", fx->app.dir);
	FILE *f = fopen(path, "w");
	uint64_t s = 42;
	for (int k = 0; k < NDOC; k++) {
		fx->nv[k] = (int)(vg_next(&s) % (MAXV + 1));
		fprintf(f, "{\"put\": \"id:t:mv::%d\", \"fields\": {\"tag\": %d", k, k % 100);
		for (int fld = 0; fx->nv[k] && fld < 2; fld++) {
			fprintf(f, ", \"%s\": {\"blocks\": {", fld ? "ang" : "emb");
			for (int j = 0; j < fx->nv[k]; j++) {
				fprintf(f, "%s\"v%d_%d\": [", j ? ", " : "", k, j);
				for (int i = 0; i < DIM; i++) {
					if (!fld)
						fx->v[k][j][i] = cell(&s);
					fprintf(f, "%s%.17g", i ? ", " : "", fx->v[k][j][i]);
				}
				fprintf(f, "]");
			}
			fprintf(f, "}}");
		}
		fprintf(f, "}}\n");
	}
	fclose(f);
	dbtest_feed(fx->app.db, path);
	*state = fx;
	return 0;
}

static double dist(int angular, const double *a, const double *b)
{
	double s = 0, ab = 0, aa = 0, bb = 0;
	for (int i = 0; i < DIM; i++) {
		s += (a[i] - b[i]) * (a[i] - b[i]);
		ab += a[i] * b[i];
		aa += a[i] * a[i];
		bb += b[i] * b[i];
	}
	if (!angular)
		return sqrt(s);
	if (aa == 0 || bb == 0)
		return M_PI / 2;
	double c = ab / sqrt(aa * bb);
	return acos(c > 1 ? 1 : c < -1 ? -1 : c);
}

/* The brute force: document k's distance (its nearest vector's) and that
 * vector's number in *best (-1: no vector). */
static double doc_dist(struct fx *fx, int angular, int k, const double *q, int *best)
{
	double d = INFINITY;
	*best = -1;
	for (int j = 0; j < fx->nv[k]; j++) {
		double e = dist(angular, fx->v[k][j], q);
		if (e < d) {
			d = e;
			*best = j;
		}
	}
	return d;
}

struct ref {
	double d;
	char id[32];
	int k;
};

static int ref_cmp(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;
	return x->d < y->d ? -1 : x->d > y->d ? 1 : strcmp(x->id, y->id);
}

/* The one label of a closest() value, or NULL when it is empty. */
static const char *closest_label(json_t *mf, const char *name)
{
	json_t *c = json_object_get(json_object_get(mf, name), "cells");
	assert_true(json_is_object(c));
	assert_true(json_object_size(c) <= 1);
	const char *key;
	json_t *val;
	json_object_foreach(c, key, val) {
		assert_true(json_number_value(val) == 1.0);
		return key;
	}
	return NULL;
}

static void request(char *buf, size_t n, const char *profile, const double *q, const char *yql)
{
	int o = snprintf(buf, n, "{\"yql\": \"%s\", \"ranking.profile\": \"%s\", \"hits\": 50, "
	                 "\"input.query(q)\": [", yql, profile);
	for (int i = 0; i < DIM; i++)
		o += snprintf(buf + o, n - (size_t)o, "%s%.17g", i ? ", " : "", q[i]);
	snprintf(buf + o, n - (size_t)o, "]}");
}

/* Queries of one profile (field emb or ang), with the filter tag < below
 * (100: none) and the label lab or none, approximate (exploring enough
 * that the graph finds the nearest) or with approximate: false: the hits
 * are the brute force's K nearest in its order, with its distance and
 * nearest vector. */
static void run_as(struct fx *fx, int angular, int below, int labelled, int exact)
{
	const char *field = angular ? "ang" : "emb";
	for (int qi = 0; qi < NQ; qi++) {
		uint64_t s = 1000 + (uint64_t)qi;
		double q[DIM];
		for (int i = 0; i < DIM; i++)
			q[i] = cell(&s);
		char yql[300], req[1024];
		snprintf(yql, sizeof yql,
		         "select * from sources * where {targetHits: %d%s%s}nearestNeighbor(%s, q)%s", K,
		         labelled ? ", label: 'lab'" : "",
		         exact ? ", approximate: false" : ", hnsw.exploreAdditionalHits: 200", field,
		         below < 100 ? " and tag < " : "");
		if (below < 100)
			snprintf(yql + strlen(yql), sizeof yql - strlen(yql), "%d", below);
		request(req, sizeof req, angular ? "ang" : "emb", q, yql);
		struct ref r[NDOC];
		int n = 0, best[NDOC];
		for (int k = 0; k < NDOC; k++) {
			double d = fx->nv[k] < 0 ? INFINITY : doc_dist(fx, angular, k, q, &best[k]);
			if (fx->nv[k] < 0)
				best[k] = -1;
			if (best[k] >= 0 && k % 100 < below) {
				r[n] = (struct ref){d, "", k};
				snprintf(r[n++].id, sizeof r[0].id, "id:t:mv::%d", k);
			}
		}
		qsort(r, (size_t)n, sizeof *r, ref_cmp);
		json_t *res = dbtest_query(fx->app.db, req);
		json_t *hits = dbtest_hits(res);
		assert_int_equal(json_array_size(hits), n < K ? n : K);
		for (size_t i = 0; i < json_array_size(hits); i++) {
			json_t *h = json_array_get(hits, i);
			int k = dbtest_hit_key(h);
			if (k != r[i].k)
				fail_msg("%s query %d hit %zu: %d, expected %d", exact ? "exact" : "graph",
				         qi, i, k, r[i].k);
			json_t *mf = json_object_get(json_object_get(h, "fields"), "matchfeatures");
			char name[64], want[32];
			snprintf(name, sizeof name, "distance(field, %s)", field);
			assert_true(fabs(json_number_value(json_object_get(mf, name)) - r[i].d) < 1e-12);
			snprintf(name, sizeof name, "closest(%s)", field);
			snprintf(want, sizeof want, "v%d_%d", k, best[k]);
			const char *got = closest_label(mf, name);
			assert_non_null(got);
			assert_string_equal(got, want);
			if (angular)
				continue;
			double c = json_number_value(json_object_get(mf, "closeness(field, emb)"));
			assert_true(fabs(c - 1 / (1 + r[i].d)) < 1e-12);
			assert_true(fabs(json_number_value(json_object_get(h, "relevance")) - c) < 1e-12);
			/* by label: the item's when it carries 'lab', else none */
			const char *lab = closest_label(mf, "closest(emb, lab)");
			double cl = json_number_value(json_object_get(mf, "closeness(label, lab)"));
			if (labelled) {
				assert_non_null(lab);
				assert_string_equal(lab, want);
				assert_true(cl == c);
			} else {
				assert_null(lab);
				assert_true(cl == 0);
			}
		}
		json_decref(res);
	}
}

static void run(struct fx *fx, int angular, int below, int labelled)
{
	run_as(fx, angular, below, labelled, 0);
	if (!angular)
		run_as(fx, angular, below, labelled, 1);
}

static void test_exact(void **state)
{
	struct fx *fx = *state;
	run(fx, 0, 100, 0);
	run(fx, 0, 100, 1);
	run(fx, 1, 100, 0);
}

static void test_filtered(void **state)
{
	struct fx *fx = *state;
	run(fx, 0, 30, 1);
	run(fx, 1, 3, 0);
	run(fx, 0, 1, 0); /* fewer documents pass than targetHits */
	run(fx, 0, 0, 0); /* none */
}

/* Updates that give documents more or fewer vectors (or none), and
 * removes: the graph follows, the hits stay the brute force's.  Last, as
 * it changes the documents. */
static void test_update_remove(void **state)
{
	struct fx *fx = *state;
	char path[256];
	snprintf(path, sizeof path, "%s/update.jsonl", fx->app.dir);
	FILE *f = fopen(path, "w");
	uint64_t s = 4242;
	for (int k = 0; k < NDOC; k += 4) {
		if (k % 3 == 0) {
			fprintf(f, "{\"remove\": \"id:t:mv::%d\"}\n", k);
			fx->nv[k] = -1;
			continue;
		}
		int nv = (fx->nv[k] + 1 + k % 3) % (MAXV + 1);
		fx->nv[k] = nv;
		fprintf(f, "{\"update\": \"id:t:mv::%d\", \"fields\": {\"emb\": {\"assign\": "
		        "{\"blocks\": {", k);
		for (int j = 0; j < nv; j++) {
			fprintf(f, "%s\"v%d_%d\": [", j ? ", " : "", k, j);
			for (int i = 0; i < DIM; i++) {
				fx->v[k][j][i] = cell(&s);
				fprintf(f, "%s%.17g", i ? ", " : "", fx->v[k][j][i]);
			}
			fprintf(f, "]");
		}
		fprintf(f, "}}}}}\n");
	}
	fclose(f);
	dbtest_feed(fx->app.db, path);
	run(fx, 0, 100, 1);
	run(fx, 0, 30, 0);
}

/* kill_after's child: puts of documents 0..39 with 0 to MAXV vectors (0:
 * the field left out), one commit each. */
static void kill_feeder(void *ud, int fd)
{
	struct strata *db;
	struct strata_error err = {0};
	if (strata_open(ud, NULL, &db, &err) != 0)
		_exit(2);
	uint64_t s = (uint64_t)getpid();
	for (int n = 0;; n++) {
		char op[2048];
		int nv = (int)(vg_next(&s) % (MAXV + 1));
		int o = snprintf(op, sizeof op, "{\"put\": \"id:t:mv::%d\", \"fields\": {\"tag\": %d",
		                 n % 40, n);
		if (nv)
			o += snprintf(op + o, sizeof op - (size_t)o, ", \"emb\": {\"blocks\": {");
		for (int j = 0; j < nv; j++) {
			o += snprintf(op + o, sizeof op - (size_t)o, "%s\"b%d\": [", j ? ", " : "", j);
			for (int i = 0; i < DIM; i++)
				o += snprintf(op + o, sizeof op - (size_t)o, "%s%.9g", i ? ", " : "",
				              vg_gauss(&s));
			o += snprintf(op + o, sizeof op - (size_t)o, "]");
		}
		snprintf(op + o, sizeof op - (size_t)o, "%s}}", nv ? "}}" : "");
		if (strata_feed_json(db, op, &err) != 0)
			_exit(4);
		if (write(fd, "x", 1) != 1)
			_exit(6);
	}
}

/* The keys of the hits of a query for q, from the graph exploring past
 * every node, or exact. */
static void nn_keys(struct strata *db, const double *q, int exact, int *keys, size_t *n)
{
	char yql[300], req[1024];
	snprintf(yql, sizeof yql, "select * from sources * where {targetHits: 5, %s}"
	         "nearestNeighbor(emb, q)", exact ? "approximate: false" :
	         "hnsw.exploreAdditionalHits: 1000");
	request(req, sizeof req, "emb", q, yql);
	json_t *r = dbtest_query(db, req);
	json_t *hits = dbtest_hits(r);
	*n = json_array_size(hits);
	for (size_t i = 0; i < *n; i++)
		keys[i] = dbtest_hit_key(json_array_get(hits, i));
	json_decref(r);
}

/* A feed killed with SIGKILL between or inside its commits: reopened, the
 * graph agrees with the documents stored, so that a search that explores
 * all of it finds what exact search finds. */
static void test_kill9(void **state)
{
	(void)state;
	char *app = dbtest_app("strata-multivec-kill.", "mv.sd", mv_sd);
	for (int round = 0; round < 3; round++) {
		kill_after(10 + round * 10, kill_feeder, app);
		struct strata *db;
		dbtest_open_dir(app, &db);
		for (int qi = 0; qi < 6; qi++) {
			uint64_t s = 99 + (uint64_t)qi;
			double q[DIM];
			for (int i = 0; i < DIM; i++)
				q[i] = vg_gauss(&s);
			int a[5], b[5];
			size_t na, nb;
			nn_keys(db, q, 0, a, &na);
			nn_keys(db, q, 1, b, &nb);
			assert_true(nb > 0);
			assert_int_equal(na, nb);
			assert_memory_equal(a, b, na * sizeof *a);
		}
		strata_close(db);
	}
	apptest_remove(app);
}

/* Without a nearestNeighbor item the features have no query to measure:
 * closeness 0 and closest empty, as in Vespa. */
static void test_without_item(void **state)
{
	struct fx *fx = *state;
	double q[DIM] = {1, 0, 0, 0};
	char req[1024];
	request(req, sizeof req, "emb", q, "select * from sources * where tag < 2");
	json_t *res = dbtest_query(fx->app.db, req);
	json_t *hits = dbtest_hits(res);
	assert_int_equal(json_array_size(hits), 6);
	for (size_t i = 0; i < json_array_size(hits); i++) {
		json_t *h = json_array_get(hits, i);
		json_t *mf = json_object_get(json_object_get(h, "fields"), "matchfeatures");
		assert_true(json_number_value(json_object_get(mf, "closeness(field, emb)")) == 0);
		assert_null(closest_label(mf, "closest(emb)"));
	}
	json_decref(res);
}

static void test_query_errors(void **state)
{
	struct fx *fx = *state;
	struct strata_error err = {0};
	char *out = NULL;
	/* the query's type is the field's vector: x[4], not the whole field */
	const char *req = "{\"yql\": \"select * from sources * where {targetHits: 3}"
	                  "nearestNeighbor(emb, q)\", \"ranking.profile\": \"emb\", "
	                  "\"input.query(q)\": [1, 2, 3]}";
	dbtest_query_fails(fx->app.db, req, STRATA_INVALID_ARGUMENT, "3 values, expected 4");
	req = "{\"yql\": \"select * from sources * where {targetHits: 3}"
	      "nearestNeighbor(emb, q)\", \"ranking.profile\": \"wrong\", "
	      "\"input.query(q)\": [1, 2, 3]}";
	dbtest_query_fails(fx->app.db, req, STRATA_TYPE,
	                   "nearestNeighbor: query(q) and field 'emb' differ in shape");
	/* a mapped tensor without indexed dimensions holds no vectors */
	req = "{\"yql\": \"select * from sources * where {targetHits: 3}"
	      "nearestNeighbor(cats, q)\", \"ranking.profile\": \"emb\", "
	      "\"input.query(q)\": [1, 2, 3, 4]}";
	assert_int_equal(strata_query_json(fx->app.db, req, &out, &err), STRATA_NOT_IMPLEMENTED);
	assert_string_equal(err.msg, "yql:1:31: nearestNeighbor on 'cats', a tensor with mapped "
	                             "dimensions other than one mapped and some indexed, is not "
	                             "supported");
	assert_null(out);
}

/* Schema errors: closest() of a dense field or of no field, and closeness
 * of a tensor with two mapped dimensions; nearestNeighbor on a mapped
 * tensor without indexed dimensions or with a query of another shape. */
static void test_schema_errors(void **state)
{
	(void)state;
	static const struct {
		const char *fields, *profile, *where, *what;
		int code;
	} bad[] = {
		{"field d type tensor<float>(x[2]) { indexing: attribute }",
		 "first-phase { expression: sum(closest(d)) }", "s.sd:5:40",
		 "closest(d) is not supported: it needs a tensor with one mapped and some indexed "
		 "dimensions", STRATA_NOT_IMPLEMENTED},
		{"field d type tensor<float>(x[2]) { indexing: attribute }",
		 "first-phase { expression: sum(closest(e)) }", "s.sd:5:40",
		 "closest(): 'e' is not a tensor attribute", STRATA_TYPE},
		{"field d type tensor<float>(a{}, b{}, x[2]) { indexing: attribute }",
		 "first-phase { expression: closeness(field, d) }", "s.sd:5:45",
		 "attribute 'd' has mapped dimensions: closeness() needs a dense tensor or one mapped "
		 "and some indexed dimensions", STRATA_TYPE},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char sd[1024];
		snprintf(sd, sizeof sd,
		         "schema s { document s {\n%s\n}\nrank-profile r {\n %s\n}\n}\n",
		         bad[i].fields, bad[i].profile);
		dbtest_expect_open_error(dbtest_app("strata-multivec-bad.", "s.sd", sd), bad[i].code,
		                         bad[i].where, bad[i].what);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_filtered),
		cmocka_unit_test(test_without_item),
		cmocka_unit_test(test_query_errors),
		cmocka_unit_test(test_schema_errors),
		cmocka_unit_test(test_update_remove),
		cmocka_unit_test(test_kill9),
	};
	return cmocka_run_group_tests(tests, setup, dbtest_teardown);
}
