/*
 * test_nntune.c: the tuning of approximate nearestNeighbor search.  The
 * rank-profile settings (approximate-threshold, filter-first-threshold,
 * filter-first-exploration, exploration-slack,
 * target-hits-max-adjustment-factor): parsed, inherited, refused out of
 * range or given twice with file:line:col; the query's
 * ranking.matching.* overrides and their errors; approximate-threshold
 * choosing exact search or the graph, seen through ties, which the two
 * break differently; and in the store, the graph search with exploration
 * slack and filter-first search against a brute force.
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

#include "../rank/rank_syntax.h"
#include "../store/store.h"
#include "dbtest.h"
#include "storetest.h"
#include "vecgen.h"

/* ---- the rank-profile settings ---------------------------------------------------------- */

static const char tuned_sd[] =
	"schema s {\n"
	"  document s {\n"
	"    field tag type int { indexing: attribute | summary }\n"
	"    field v type tensor<float>(x[2]) {\n"
	"      indexing: attribute | index\n"
	"    }\n"
	"  }\n"
	"  rank-profile base {\n"
	"    inputs { query(q) tensor<float>(x[2]) }\n"
	"    first-phase { expression: closeness(field, v) }\n"
	"    approximate-threshold: 0.25\n"
	"    exploration-slack: 0.1\n"
	"  }\n"
	"  rank-profile child inherits base {\n"
	"    approximate-threshold: 0.75\n"
	"    filter-first-threshold: 0.3\n"
	"    filter-first-exploration: 0.5\n"
	"    target-hits-max-adjustment-factor: 4\n"
	"  }\n"
	"  rank-profile exact inherits base {\n"
	"    approximate-threshold: 1\n"
	"  }\n"
	"  rank-profile plain {\n"
	"    inputs { query(q) tensor<float>(x[2]) }\n"
	"    first-phase { expression: closeness(field, v) }\n"
	"  }\n"
	"}\n";

static const struct rank_profile_decl *decl(const struct rank_sd *sd, const char *name)
{
	for (int i = 0; i < sd->nprofiles; i++)
		if (!strcmp(sd->profiles[i].name, name))
			return &sd->profiles[i];
	fail_msg("no profile %s", name);
	return NULL;
}

static void test_parse(void **state)
{
	(void)state;
	struct rank_sd *sd;
	struct strata_error err = {0};
	assert_int_equal(rank_sd_parse("s.sd", tuned_sd, strlen(tuned_sd), &sd, &err), 0);
	assert_int_equal(rank_sd_resolve(sd, &err), 0);
	const struct rank_profile_decl *b = decl(sd, "base"), *c = decl(sd, "child");
	assert_int_equal(b->nn_given, 1u << RANK_NN_APPROXIMATE_THRESHOLD |
	                              1u << RANK_NN_EXPLORATION_SLACK);
	assert_true(b->nn[RANK_NN_APPROXIMATE_THRESHOLD] == 0.25);
	assert_true(b->nn[RANK_NN_EXPLORATION_SLACK] == 0.1);
	/* the child's own settings, and the slack inherited */
	assert_int_equal(c->nn_given, (1u << RANK_NN_NSETTINGS) - 1);
	assert_true(c->nn[RANK_NN_APPROXIMATE_THRESHOLD] == 0.75);
	assert_true(c->nn[RANK_NN_EXPLORATION_SLACK] == 0.1);
	assert_true(c->nn[RANK_NN_FILTER_FIRST_THRESHOLD] == 0.3);
	assert_true(c->nn[RANK_NN_FILTER_FIRST_EXPLORATION] == 0.5);
	assert_true(c->nn[RANK_NN_TARGET_HITS_MAX_ADJUSTMENT_FACTOR] == 4);
	rank_sd_free(sd);
	/* Vespa's defaults */
	static const double def[RANK_NN_NSETTINGS] = {0.05, 0, 0.3, 0, 20};
	for (int i = 0; i < RANK_NN_NSETTINGS; i++)
		assert_true(rank_nn_setting_info(i)->def == def[i]);
}

static void test_parse_errors(void **state)
{
	(void)state;
	static const struct {
		const char *setting, *msg;
		int code;
	} bad[] = {
		{"approximate-threshold: 1.5",
		 "t.sd:3:25: approximate-threshold must be between 0 and 1, not 1.5", STRATA_TYPE},
		{"exploration-slack: -0.1", "t.sd:3:21: exploration-slack: expected a number, found '-'",
		 STRATA_PARSE},
		{"target-hits-max-adjustment-factor: 0.5",
		 "t.sd:3:37: target-hits-max-adjustment-factor must be 1 or more, not 0.5",
		 STRATA_TYPE},
		{"filter-first-threshold 0.2",
		 "t.sd:3:25: expected ':' after 'filter-first-threshold', found '0.2'", STRATA_PARSE},
		{"filter-first-exploration: 0.2\n filter-first-exploration: 0.4",
		 "t.sd:4:2: filter-first-exploration is given twice in rank-profile 'r'", STRATA_TYPE},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char text[512];
		snprintf(text, sizeof text, "schema s { document s { }\nrank-profile r {\n %s\n}\n}\n",
		         bad[i].setting);
		struct rank_sd *sd = NULL;
		struct strata_error err = {0};
		int rc = rank_sd_parse("t.sd", text, strlen(text), &sd, &err);
		if (rc != bad[i].code || strcmp(err.msg, bad[i].msg) != 0)
			fail_msg("case %zu: got %d '%s'\n  expected %d '%s'", i, rc, err.msg, bad[i].code,
			         bad[i].msg);
		assert_null(sd);
	}
}

/* ---- approximate-threshold through queries ---------------------------------------------- */

#define NTIE 30
#define TIE_K 3

/* NTIE documents with the same vector, tag k: every distance ties.  Exact
 * search breaks the ties by document id ("id:t:s::10" before "::2"), the
 * graph by local id (feed order), so the two give different hits. */
static int setup_ties(void **state)
{
	struct dbtest *t = calloc(1, sizeof *t);
	t->dir = dbtest_open("strata-nntune.", "s.sd", tuned_sd, &t->db);
	for (int k = 0; k < NTIE; k++) {
		char op[160];
		snprintf(op, sizeof op,
		         "{\"put\": \"id:t:s::%d\", \"fields\": {\"tag\": %d, \"v\": [0.5, 0.25]}}", k, k);
		dbtest_feed_json(t->db, op);
	}
	*state = t;
	return 0;
}

/* The hits of targetHits TIE_K with the filter tag < 20 (two thirds of the
 * documents), profile and extra request members given: their keys. */
static void tie_hits(struct dbtest *t, const char *profile, const char *extra, int *keys)
{
	char req[1024];
	snprintf(req, sizeof req,
	         "{\"yql\": \"select * from sources * where {targetHits: %d, "
	         "hnsw.exploreAdditionalHits: 100}nearestNeighbor(v, q) and tag < 20\", "
	         "\"ranking.profile\": \"%s\", \"input.query(q)\": [0.5, 0.25]%s}",
	         TIE_K, profile, extra);
	json_t *r = dbtest_query(t->db, req);
	json_t *hits = dbtest_hits(r);
	assert_int_equal(json_array_size(hits), TIE_K);
	for (int i = 0; i < TIE_K; i++)
		keys[i] = dbtest_hit_key(json_array_get(hits, (size_t)i));
	json_decref(r);
}

static void test_threshold(void **state)
{
	struct dbtest *t = *state;
	/* 20 of 30 pass: below 0.75 and 1, exact (ids 0, 1, 10); not below
	 * 0.25 or the default 0.05 (plain), the graph (local ids 0, 1, 2).
	 * The query overrides the profile, flat, nested or as text;
	 * filter-first and slack change how the graph is searched, not what
	 * this one finds. */
	static const struct {
		const char *profile, *extra;
		int exact;
	} cases[] = {
		{"exact", "", 1},
		{"child", "", 1},
		{"base", "", 0},
		{"plain", "", 0},
		{"base", ", \"ranking.matching.approximateThreshold\": 0.9", 1},
		{"child", ", \"ranking\": {\"matching\": {\"approximateThreshold\": 0.5}}", 0},
		{"exact", ", \"ranking.matching.approximateThreshold\": \"0.6\"", 0},
		{"base", ", \"ranking.matching.filterFirstThreshold\": 1, "
		         "\"ranking.matching.explorationSlack\": 1", 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int k[TIE_K], third = cases[i].exact ? 10 : 2;
		tie_hits(t, cases[i].profile, cases[i].extra, k);
		if (k[0] != 0 || k[1] != 1 || k[2] != third)
			fail_msg("case %zu: hits %d %d %d, expected 0 1 %d", i, k[0], k[1], k[2], third);
	}
}

static void test_query_errors(void **state)
{
	struct dbtest *t = *state;
	static const char *const bad[][2] = {
		{"\"ranking.matching.approximateThreshold\": 2",
		 "ranking.matching.approximateThreshold must be a number from 0 to 1"},
		{"\"ranking.matching.explorationSlack\": \"lots\"",
		 "ranking.matching.explorationSlack must be a number from 0 to 1"},
		{"\"ranking\": {\"matching\": {\"targetHitsMaxAdjustmentFactor\": 0}}",
		 "ranking.matching.targetHitsMaxAdjustmentFactor must be a number of 1 or more"},
		{"\"ranking.matching.filterFirstExploration\": null",
		 "ranking.matching.filterFirstExploration must be a number from 0 to 1"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char req[512];
		snprintf(req, sizeof req,
		         "{\"yql\": \"select * from sources * where {targetHits: 3}nearestNeighbor(v, q)\","
		         " \"ranking.profile\": \"base\", \"input.query(q)\": [1, 2], %s}", bad[i][0]);
		dbtest_query_fails(t->db, req, STRATA_INVALID_ARGUMENT, bad[i][1]);
	}
}

/* ---- the store's search: slack and filter-first ------------------------------------------ */

#define DIM 12
#define NDOC 3000
#define NQ 25
#define K 10

/* The filters of recall(): as many documents of every cluster (spread),
 * or the whole of some clusters and none of the others (clustered). */
static int spread(int k, int mod)
{
	return k / 30 % mod == 0;
}

static int clustered(int k, int mod)
{
	return k % mod == 0;
}

struct sfx {
	char dir[64];
	struct store_env *env;
	int dt;
	struct strata_error err;
	struct store_field fields[1];
	struct store_doctype type;
	float v[NDOC][DIM];
};

static struct sfx *sfx_new(void)
{
	struct sfx *fx = calloc(1, sizeof *fx);
	strcpy(fx->dir, "/tmp/strata_nntune_XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	fx->fields[0] = (struct store_field){.name = "v", .type = STORE_T_TENSOR, .attribute = 1,
	                                     .cell = BASE_DT_FLOAT, .rank = 1, .dims = {DIM},
	                                     .hnsw_metric = STORE_METRIC_EUCLIDEAN, .hnsw_m = 8,
	                                     .hnsw_ef = 48};
	fx->type = (struct store_doctype){"item", 1, fx->fields};
	if (storetest_open(fx->dir, &fx->type, &fx->env, &fx->dt, &fx->err) != 0)
		fail_msg("open: %s", fx->err.msg);
	struct store_txn *w;
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	for (int k = 0; k < NDOC; k++) {
		uint64_t cs = 500 + (uint64_t)(k % 30), ps = 9000 + (uint64_t)k;
		for (int i = 0; i < DIM; i++)
			fx->v[k][i] = (float)(vg_gauss(&cs) * 2 + vg_gauss(&ps));
		struct store_value val = {.set = 1, .n = DIM, .cells = fx->v[k]};
		char id[32];
		snprintf(id, sizeof id, "id:t:item::%d", k);
		assert_int_equal(store_put(w, fx->dt, id, &val, &fx->err), 0);
	}
	assert_int_equal(store_txn_commit(w, &fx->err), 0);
	return fx;
}

static void sfx_free(struct sfx *fx)
{
	store_close(fx->env);
	storetest_rmdir(fx->dir);
	free(fx);
}

/* Recall at K of searches with sp (its filter: pass(lid, mod), mod 1:
 * none; local ids are feed order); every hit passes, at its true
 * distance. */
static double recall(struct sfx *fx, struct store_hnsw_params sp, int (*pass)(int, int), int mod)
{
	static uint64_t bits[(NDOC + 63) / 64];
	memset(bits, 0, sizeof bits);
	for (int k = 0; k < NDOC; k++)
		if (pass(k, mod))
			bits[k / 64] |= 1ull << (k % 64);
	if (mod > 1) {
		sp.filter = bits;
		sp.nbits = NDOC;
	}
	struct store_txn *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	int found = 0;
	for (int qi = 0; qi < NQ; qi++) {
		uint64_t qs = 77 + (uint64_t)qi, cs = 500 + (uint64_t)(qi % 30);
		double q[DIM];
		for (int i = 0; i < DIM; i++)
			q[i] = vg_gauss(&cs) * 2 + vg_gauss(&qs);
		struct vg_ref ref[NDOC];
		int n = 0;
		for (int k = 0; k < NDOC; k++) {
			double d = 0;
			if (!pass(k, mod))
				continue;
			for (int i = 0; i < DIM; i++)
				d += (fx->v[k][i] - q[i]) * (fx->v[k][i] - q[i]);
			ref[n++] = (struct vg_ref){d, k};
		}
		qsort(ref, (size_t)n, sizeof *ref, vg_ref_cmp);
		struct store_hit hits[K];
		size_t got;
		if (store_hnsw_search_with(r, fx->dt, 0, q, DIM, &sp, hits, &got, &fx->err) != 0)
			fail_msg("search: %s", fx->err.msg);
		if (got != K)
			fail_msg("%zu hits, mod %d, filter-first %d, slack %g", got, mod, sp.filter_first,
			         sp.slack);
		for (size_t i = 0; i < got; i++) {
			assert_true(pass((int)hits[i].lid, mod));
			assert_true(fabs(hits[i].distance - ref[0].d) >= 0 &&
			            hits[i].distance >= ref[i].d - 1e-3);
			for (int j = 0; j < K; j++)
				found += ref[j].k == (int)hits[i].lid;
		}
	}
	store_txn_abort(r);
	return (double)found / (NQ * K);
}

static void test_store_search(void **state)
{
	(void)state;
	struct sfx *fx = sfx_new();
	struct store_hnsw_params plain = {.k = K, .ef = K};
	double r0 = recall(fx, plain, spread, 1);
	struct store_hnsw_params slack = plain;
	slack.slack = 1.0;
	double r1 = recall(fx, slack, spread, 1);
	/* a wider search finds at least as much; and plenty */
	if (r1 < r0 || r1 < 0.95)
		fail_msg("recall %.3f with slack 1, %.3f without", r1, r0);
	/* filter-first at 1 document in 10, 20 and 50, with exploration from
	 * none to all: a dip in recall at the lowest share, which exploring
	 * further makes up */
	static const int mods[] = {10, 20, 50};
	static const double expl[] = {0, 0.3, 1};
	for (size_t i = 0; i < 3; i++) {
		double first = 0;
		for (size_t j = 0; j < 3; j++) {
			struct store_hnsw_params ff = {.k = K, .ef = 64, .filter_first = 1,
			                               .exploration = expl[j]};
			double r = recall(fx, ff, spread, mods[i]);
			if (r < 0.75 || (j == 2 && r < first) || (j == 2 && r < 0.99))
				fail_msg("filter-first, 1 in %d, exploration %g: recall %.3f", mods[i],
				         expl[j], r);
			first = j == 0 ? r : first;
		}
	}
	/* a filter that drops the query's whole cluster: filter-first search
	 * finds too few and the plain search takes over */
	struct store_hnsw_params ff = {.k = K, .ef = 16, .filter_first = 1};
	if (recall(fx, ff, clustered, 10) < 0.75)
		fail_msg("filter-first over clusters the filter drops: recall too low");
	struct store_hnsw_params neg = {.k = K, .ef = K, .slack = -1};
	struct store_txn *r;
	double q[DIM] = {0};
	struct store_hit hits[K];
	size_t got;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	assert_int_equal(store_hnsw_search_with(r, fx->dt, 0, q, DIM, &neg, hits, &got, &fx->err),
	                 STRATA_INVALID_ARGUMENT);
	assert_string_equal(fx->err.msg, "nearest-neighbour search: slack -1 and exploration 0 "
	                                 "must not be negative");
	store_txn_abort(r);
	sfx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test_setup_teardown(test_threshold, setup_ties, dbtest_teardown),
		cmocka_unit_test_setup_teardown(test_query_errors, setup_ties, dbtest_teardown),
		cmocka_unit_test(test_store_search),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
