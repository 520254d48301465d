/*
 * test_rank_phases.c: what a profile does around its expressions: the
 * global phase and its cross-hit normalizers (normalize_linear,
 * reciprocal_rank, reciprocal_rank_fusion), first-phase
 * rank-score-drop-limit, query inputs left out by a query (defaults, and the
 * error for a tensor with none), and the errors of each, with positions.
 * Documents come from a fake store of two numeric fields.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../rank/rank_eval.h"
#include "apptest.h"

/* ---- the fake document store --------------------------------------------- */
#define NDOCS 5
static double fa[NDOCS] = { 1, 2, 3, 4, 5 };
static double fb[NDOCS] = { 50, 40, 30, 0, 10 };
static float fv[NDOCS][3] = { { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 }, { 1, 1, 1 }, { 2, 0, 0 } };

static const void *fake_attr(void *ud, int field, uint32_t lid)
{
	const char *name = rank_schema_field(ud, field)->name;
	if (strcmp(name, "a") == 0)
		return &fa[lid];
	if (strcmp(name, "b") == 0)
		return &fb[lid];
	return fv[lid];
}

#define NEAR(x, y) assert_true(fabs((double)(x) - (double)(y)) < 1e-12 * (1 + fabs((double)(y))))

/* ---- application folders ------------------------------------------------- */

/* A new application folder with schemas/x.sd = sd and each extra file
 * (name, text pairs, NULL-terminated) written into it. */
static char *make_app(const char *sd, ...)
{
	char *dir = apptest_new("strata_rank_phases");
	char sub[512];
	snprintf(sub, sizeof sub, "%s/constants", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(sub, sizeof sub, "%s/schemas", dir);
	apptest_write(sub, "x.sd", sd);
	va_list ap;
	va_start(ap, sd);
	const char *name;
	while ((name = va_arg(ap, const char *)) != NULL)
		apptest_write(dir, name, va_arg(ap, const char *));
	va_end(ap);
	return dir;
}

#define DOC \
	"schema doc {\n" \
	"  document doc {\n" \
	"    field a type double { indexing: attribute }\n" \
	"    field b type double { indexing: attribute }\n" \
	"    field v type tensor<float>(x[3]) { indexing: attribute }\n" \
	"  }\n"

/* Load sd; 0 or the error, with the message in err. */
static int load(const char *sd, struct rank_app **app, struct strata_error *err)
{
	char *dir = make_app(sd, NULL);
	int rc = rank_app_load(dir, app, err);
	apptest_remove(dir);
	return rc;
}

/* Load sd, which must fail with code and a message containing want. */
static void load_fails(const char *sd, int code, const char *want)
{
	struct rank_app *app = NULL;
	struct strata_error err = { 0 };
	int rc = load(sd, &app, &err);
	if (rc != code || !strstr(err.msg, want))
		fprintf(stderr, "got %d '%s', want %d '%s'\n", rc, err.msg, code, want);
	assert_int_equal(rc, code);
	assert_non_null(strstr(err.msg, want));
	assert_null(app);
}

struct run {
	struct rank_app *app;
	const struct rank_schema *s;
	struct rank_docs docs;
	struct rank_query *q;
};

static void open_profile(struct run *r, const char *sd, const char *profile)
{
	struct strata_error err = { 0 };
	int rc = load(sd, &r->app, &err);
	if (rc)
		fprintf(stderr, "load: %s\n", err.msg);
	assert_int_equal(rc, 0);
	r->s = rank_app_schema_find(r->app, "doc");
	r->docs.ud = (void *)r->s;
	r->docs.attr = fake_attr;
	const struct rank_profile *p = rank_profile_find(r->s, profile);
	assert_non_null(p);
	assert_int_equal(rank_query_new(p, &r->q, &err), 0);
}

static void close_run(struct run *r)
{
	rank_query_free(r->q);
	rank_app_free(r->app);
}

/* ---- the global phase ------------------------------------------------------ */

static const char *global_sd =
	DOC
	"  rank-profile lin {\n"
	"    first-phase { expression: attribute(a) }\n"
	"    global-phase {\n"
	"      expression: normalize_linear(attribute(a)) + 2 * normalize_linear(attribute(b))\n"
	"      rerank-count: 7\n"
	"    }\n"
	"  }\n"
	"  rank-profile rr inherits lin {\n"
	"    function neg_b() { expression: -attribute(b) }\n"
	"    global-phase { expression: reciprocal_rank(neg_b, 1) + firstPhase }\n"
	"  }\n"
	"  rank-profile rrf {\n"
	"    global-phase { expression: reciprocal_rank_fusion(attribute(a), attribute(b)) }\n"
	"  }\n"
	"  rank-profile flat {\n"
	"    global-phase { expression: normalize_linear(attribute(a) * 0 + 3) }\n"
	"  }\n"
	"}\n";

static void test_global_phase(void **state)
{
	(void)state;
	struct strata_error err = { 0 };
	uint32_t lids[NDOCS] = { 0, 1, 2, 3, 4 };
	double first[NDOCS] = { 1, 2, 3, 4, 5 }, s[NDOCS];
	struct run r;

	/* normalize_linear: (a - 1) / 4 + 2 * b / 50; inherited rerank-count */
	open_profile(&r, global_sd, "lin");
	const struct rank_profile *p = rank_profile_find(r.s, "lin");
	assert_true(rank_profile_has_global_phase(p));
	assert_int_equal(rank_profile_global_rerank_count(p), 7);
	assert_int_equal(rank_query_global_phase(r.q, &r.docs, lids, first, NDOCS, s, &err), 0);
	for (int i = 0; i < NDOCS; i++)
		NEAR(s[i], (fa[i] - 1) / 4 + 2 * fb[i] / 50);
	/* over three candidates only, the range is theirs */
	assert_int_equal(rank_query_global_phase(r.q, &r.docs, lids + 2, first, 3, s, &err), 0);
	NEAR(s[0], 0 + 2 * 1.0);  /* a 3 is the lowest of 3..5, b 30 the highest */
	NEAR(s[1], 0.5 + 0);
	NEAR(s[2], 1 + 2 * (10.0 / 30));

	/* EXPLAIN shows the normalizers' programs and the NORM that reads them */
	char *ex = rank_profile_explain(p);
	assert_non_null(ex);
	assert_non_null(strstr(ex, "global-phase rerank-count 7\n"));
	assert_non_null(strstr(ex, "program global-phase normalizer 1 -> double"));
	assert_non_null(strstr(ex, "NORM    1 normalize_linear"));
	base_strfree(ex);
	close_run(&r);

	/* reciprocal_rank(x, 1) through a function, plus firstPhase */
	open_profile(&r, global_sd, "rr");
	assert_int_equal(rank_profile_global_rerank_count(rank_profile_find(r.s, "rr")), 7);
	assert_int_equal(rank_query_global_phase(r.q, &r.docs, lids, first, NDOCS, s, &err), 0);
	/* -b: 4 (b 0) ranks 1st, 4 (b 10) 2nd, 2 3rd, 1 4th, 0 5th */
	static const int rank_of[NDOCS] = { 5, 4, 3, 1, 2 };
	for (int i = 0; i < NDOCS; i++)
		NEAR(s[i], 1.0 / (1 + rank_of[i]) + first[i]);
	close_run(&r);

	/* reciprocal_rank_fusion: the sum of both, k 60; default rerank-count */
	open_profile(&r, global_sd, "rrf");
	assert_int_equal(rank_profile_global_rerank_count(rank_profile_find(r.s, "rrf")), 100);
	assert_int_equal(rank_query_global_phase(r.q, &r.docs, lids, first, NDOCS, s, &err), 0);
	static const int rank_a[NDOCS] = { 5, 4, 3, 2, 1 }, rank_b[NDOCS] = { 1, 2, 3, 5, 4 };
	for (int i = 0; i < NDOCS; i++)
		NEAR(s[i], 1.0 / (60 + rank_a[i]) + 1.0 / (60 + rank_b[i]));
	close_run(&r);

	/* all equal: 0.5 each */
	open_profile(&r, global_sd, "flat");
	assert_int_equal(rank_query_global_phase(r.q, &r.docs, lids, first, NDOCS, s, &err), 0);
	for (int i = 0; i < NDOCS; i++)
		NEAR(s[i], 0.5);
	/* a profile without global phase: first-phase scores pass through */
	close_run(&r);
	open_profile(&r, global_sd, "default");
	assert_false(rank_profile_has_global_phase(rank_profile_find(r.s, "default")));
	assert_int_equal(rank_query_global_phase(r.q, &r.docs, lids, first, NDOCS, s, &err), 0);
	for (int i = 0; i < NDOCS; i++)
		NEAR(s[i], first[i]);
	close_run(&r);
}

static void test_global_phase_errors(void **state)
{
	(void)state;
	load_fails(DOC "  rank-profile p {\n"
	               "    first-phase { expression: normalize_linear(attribute(a)) }\n"
	               "  }\n}\n",
	           STRATA_TYPE, "x.sd:8:31: normalize_linear() is only available in global-phase");
	load_fails(DOC "  rank-profile p {\n"
	               "    global-phase { expression: normalize_linear(reciprocal_rank(attribute(a))) }\n"
	               "  }\n}\n",
	           STRATA_TYPE, "x.sd:8:49: reciprocal_rank() cannot be nested in another normalizer");
	load_fails(DOC "  rank-profile p {\n"
	               "    global-phase { expression: normalize_linear(attribute(a), 2) }\n"
	               "  }\n}\n",
	           STRATA_TYPE, "x.sd:8:32: normalize_linear(x) takes one argument");
	load_fails(DOC "  rank-profile p {\n"
	               "    global-phase { expression: reciprocal_rank(attribute(a), attribute(b)) }\n"
	               "  }\n}\n",
	           STRATA_TYPE, "the k of reciprocal_rank() must be a number");
	load_fails(DOC "  rank-profile p {\n"
	               "    global-phase { expression: reciprocal_rank(attribute(a), -1) }\n"
	               "  }\n}\n",
	           STRATA_TYPE, "must not be negative");
	load_fails(DOC "  rank-profile p {\n"
	               "    global-phase { expression: normalize_linear(attribute(v)) }\n"
	               "  }\n}\n",
	           STRATA_TYPE, "must produce a number");
	load_fails(DOC "  rank-profile p {\n"
	               "    global-phase { expression: attribute(v) }\n"
	               "  }\n}\n",
	           STRATA_TYPE, "global-phase must produce a number");
}

/* ---- rank-score-drop-limit ---------------------------------------------------- */

static void test_drop_limit(void **state)
{
	(void)state;
	static const char *sd =
		DOC
		"  rank-profile p {\n"
		"    first-phase {\n"
		"      expression: attribute(a)\n"
		"      rank-score-drop-limit: -2.5\n"
		"    }\n"
		"  }\n"
		"  rank-profile child inherits p {\n"
		"    first-phase { expression: attribute(b) }\n"
		"  }\n"
		"  rank-profile own inherits p {\n"
		"    first-phase { rank-score-drop-limit: 1e3 }\n"
		"    second-phase { expression: 1 rank-score-drop-limit: 7 }\n"
		"    global-phase { rank-score-drop-limit: -8 expression: 2 }\n"
		"  }\n"
		"  rank-profile heir inherits own {\n"
		"    global-phase { rank-score-drop-limit: 9 }\n"
		"  }\n"
		"}\n";
	struct run r;
	double lim = 0;
	open_profile(&r, sd, "p");
	assert_int_equal(rank_profile_drop_limit(rank_profile_find(r.s, "p"), &lim), 1);
	NEAR(lim, -2.5);
	assert_int_equal(rank_profile_drop_limit(rank_profile_find(r.s, "child"), &lim), 1);
	NEAR(lim, -2.5);
	assert_int_equal(rank_profile_drop_limit(rank_profile_find(r.s, "own"), &lim), 1);
	NEAR(lim, 1000);
	assert_int_equal(rank_profile_drop_limit(rank_profile_find(r.s, "default"), &lim), 0);
	/* second and global phase: their own, inherited phase by phase */
	const struct rank_profile *own = rank_profile_find(r.s, "own");
	const struct rank_profile *heir = rank_profile_find(r.s, "heir");
	assert_int_equal(rank_profile_phase_drop_limit(own, 1, &lim), 1);
	NEAR(lim, 1000);
	assert_int_equal(rank_profile_phase_drop_limit(own, 2, &lim), 1);
	NEAR(lim, 7);
	assert_int_equal(rank_profile_phase_drop_limit(own, 3, &lim), 1);
	NEAR(lim, -8);
	assert_int_equal(rank_profile_phase_drop_limit(heir, 2, &lim), 1);
	NEAR(lim, 7);
	assert_int_equal(rank_profile_phase_drop_limit(heir, 3, &lim), 1);
	NEAR(lim, 9);
	assert_int_equal(rank_profile_phase_drop_limit(rank_profile_find(r.s, "p"), 2, &lim), 0);
	assert_int_equal(rank_profile_phase_drop_limit(rank_profile_find(r.s, "p"), 3, &lim), 0);
	close_run(&r);

	load_fails(DOC "  rank-profile p {\n"
	               "    first-phase { rank-score-drop-limit: 1 rank-score-drop-limit: 2 }\n"
	               "  }\n}\n",
	           STRATA_TYPE, "x.sd:8:44: rank-score-drop-limit is given twice");
	load_fails(DOC "  rank-profile p {\n"
	               "    first-phase { rank-score-drop-limit: low }\n"
	               "  }\n}\n",
	           STRATA_PARSE, "x.sd:8:42: expected a number, found 'low'");
	load_fails(DOC "  rank-profile p {\n"
	               "    global-phase { rank-score-drop-limit: 1 rank-score-drop-limit: 1 }\n"
	               "  }\n}\n",
	           STRATA_TYPE, "x.sd:8:45: rank-score-drop-limit is given twice");
	load_fails(DOC "  rank-profile p {\n"
	               "    second-phase { keep-rank-count: 1 }\n"
	               "  }\n}\n",
	           STRATA_NOT_IMPLEMENTED, "x.sd:8:20: 'keep-rank-count' in second-phase");
}

/* ---- query inputs a query leaves out --------------------------------------------- */

static void test_missing_inputs(void **state)
{
	(void)state;
	static const char *sd =
		DOC
		"  rank-profile need {\n"
		"    inputs {\n"
		"      query(q) tensor<float>(x[3])\n"
		"      query(unused) tensor<float>(x[3])\n"
		"      query(w) double\n"
		"    }\n"
		"    first-phase { expression: sum(query(q) * attribute(v)) + query(w) }\n"
		"  }\n"
		"  rank-profile dflt {\n"
		"    inputs {\n"
		"      query(q) tensor<float>(x[3]): [1, 2, 3]\n"
		"      query(w) double: 0.5\n"
		"    }\n"
		"    first-phase { expression: sum(query(q) * attribute(v)) + query(w) }\n"
		"  }\n"
		"}\n";
	struct strata_error err = { 0 };
	uint32_t lids[NDOCS] = { 0, 1, 2, 3, 4 };
	double s[NDOCS];
	struct run r;
	open_profile(&r, sd, "need");
	const struct rank_profile *p = rank_profile_find(r.s, "need");
	const struct rank_input_info *in = rank_profile_input(p, rank_profile_input_index(p, "q"));
	assert_int_equal(in->required, 1);
	assert_int_equal(in->has_default, 0);
	in = rank_profile_input(p, rank_profile_input_index(p, "unused"));
	assert_int_equal(in->required, 0); /* not read by the profile */
	in = rank_profile_input(p, rank_profile_input_index(p, "w"));
	assert_int_equal(in->required, 0); /* a number: 0 */
	assert_int_equal(rank_query_first_phase(r.q, &r.docs, lids, NDOCS, s, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "query(q) is not given, and profile 'need' declares no "
	                                "default for it"));
	assert_non_null(strstr(err.msg, "x.sd:9:13"));
	assert_int_equal(rank_query_set_nn(r.q, "v", "q", &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "nearestNeighbor: query(q) is not given"));
	double q[3] = { 1, 1, 1 };
	assert_int_equal(rank_query_set_input(r.q, "q", q, 3, &err), 0);
	assert_int_equal(rank_query_set_nn(r.q, "v", "q", &err), 0);
	assert_int_equal(rank_query_first_phase(r.q, &r.docs, lids, NDOCS, s, &err), 0);
	NEAR(s[3], 3.0); /* w is 0 */
	/* taken back from the pool, the query forgets what it was given */
	rank_query_free(r.q);
	assert_int_equal(rank_query_new(p, &r.q, &err), 0);
	assert_int_equal(rank_query_first_phase(r.q, &r.docs, lids, NDOCS, s, &err),
	                 STRATA_INVALID_ARGUMENT);
	close_run(&r);

	open_profile(&r, sd, "dflt");
	assert_int_equal(rank_query_set_nn(r.q, "v", "q", &err), 0);
	assert_int_equal(rank_query_first_phase(r.q, &r.docs, lids, NDOCS, s, &err), 0);
	for (int i = 0; i < NDOCS; i++)
		NEAR(s[i], fv[i][0] + 2 * fv[i][1] + 3 * fv[i][2] + 0.5);
	close_run(&r);
}

/* ---- constants ------------------------------------------------------------------ */

/* A loader that reads no model and gives every constant file cells 1, 2, 3,
 * ... (or fails with ENOENT for a file named missing.json). */
static int no_model(void *ud, const char *file, const char *path, struct rt_model **out,
                    struct strata_error *err)
{
	(void)ud, (void)file, (void)out;
	return base_err(err, STRATA_NOT_FOUND, "%s: no models here", path);
}

static int count_cells(void *ud, const char *path, const struct rank_input_info *shape,
                       double *cells, struct strata_error *err)
{
	int *calls = ud;
	++*calls;
	if (strstr(path, "missing.json"))
		return base_err(err, STRATA_NOT_FOUND, "file %s not found", path);
	for (size_t i = 0; i < shape->ncells; i++)
		cells[i] = (double)(i + 1);
	return 0;
}

static void test_constants(void **state)
{
	(void)state;
	static const char *sd =
		DOC
		"  rank-profile p {\n"
		"    constants {\n"
		"      c tensor<float>(x[3]): file: constants/c.json\n"
		"      constant(k): 2\n"
		"    }\n"
		"    first-phase { expression: sum(constant(c) * attribute(v)) * constant(k) }\n"
		"  }\n"
		"  rank-profile child inherits p {\n"
		"  }\n"
		"}\n";
	/* without a loader that reads files: refused where the file is named */
	load_fails(sd, STRATA_NOT_IMPLEMENTED,
	           "x.sd:9:36: constant 'c': files are read only by the engine's loader");

	char *dir = make_app(sd, NULL);
	int calls = 0;
	struct rank_loader loader = { .load = no_model, .ud = &calls,
	                              .load_constant = count_cells };
	struct rank_app *app;
	struct strata_error err = { 0 };
	assert_int_equal(rank_app_load_with(dir, &loader, &app, &err), 0);
	assert_int_equal(calls, 1); /* read once, inherited by child */
	const struct rank_schema *s = rank_app_schema_find(app, "doc");
	struct rank_docs docs = { .ud = (void *)s, .attr = fake_attr };
	uint32_t lids[NDOCS] = { 0, 1, 2, 3, 4 };
	double f[NDOCS];
	const char *names[2] = { "p", "child" };
	for (int k = 0; k < 2; k++) {
		struct rank_query *q;
		assert_int_equal(rank_query_new(rank_profile_find(s, names[k]), &q, &err), 0);
		assert_int_equal(rank_query_first_phase(q, &docs, lids, NDOCS, f, &err), 0);
		for (int i = 0; i < NDOCS; i++)
			NEAR(f[i], 2 * (fv[i][0] + 2 * fv[i][1] + 3 * fv[i][2]));
		rank_query_free(q);
	}
	rank_app_free(app);
	apptest_remove(dir);

	/* the loader's error, after the position of the file name */
	static const char *missing = DOC "  rank-profile p {\n"
	                             "    constants { c tensor(x[2]): file: missing.json }\n"
	                             "  }\n}\n";
	dir = make_app(missing, NULL);
	memset(&err, 0, sizeof err);
	app = NULL;
	assert_int_equal(rank_app_load_with(dir, &loader, &app, &err), STRATA_NOT_FOUND);
	assert_null(app);
	assert_non_null(strstr(err.msg, "x.sd:8:39: constant 'c': file "));
	assert_non_null(strstr(err.msg, "missing.json not found"));
	apptest_remove(dir);

	load_fails(DOC "  rank-profile p {\n"
	               "    constants { c tensor(x[2]): file: c.json.lz4 }\n"
	               "  }\n}\n",
	           STRATA_NOT_IMPLEMENTED, "x.sd:8:39: compressed constant files (.lz4)");
	load_fails(DOC "  rank-profile p {\n"
	               "    constants { c tensor(x{}): file: c.json }\n"
	               "  }\n}\n",
	           STRATA_NOT_IMPLEMENTED, "x.sd:8:");
	load_fails(DOC "  rank-profile p {\n"
	               "    inputs { query(q) tensor(x[2]): file: c.json }\n"
	               "  }\n}\n",
	           STRATA_NOT_IMPLEMENTED, "only constants are read from files");
	load_fails(DOC "  rank-profile p {\n"
	               "    constants { c tensor(x[2]): [1, 2, 3] }\n"
	               "  }\n}\n",
	           STRATA_TYPE, "the value has 3 cells, its type 2");
}

/* ---- rank-properties -------------------------------------------------------------- */

static void test_rank_properties(void **state)
{
	(void)state;
	static const char *sd =
		DOC
		"  rank-profile p {\n"
		"    rank-properties {\n"
		"      query(w): 0.5\n"
		"      $bias:-2e0\n"
		"      query(declared) : 3\n"
		"    }\n"
		"    inputs { query(declared) double }\n"
		"    first-phase { expression: query(w) * attribute(a) + query(bias) + query(declared) }\n"
		"  }\n"
		"  rank-profile child inherits p {\n"
		"    rank-properties { query(w): 10 }\n"
		"  }\n"
		"}\n";
	struct strata_error err = { 0 };
	uint32_t lids[NDOCS] = { 0, 1, 2, 3, 4 };
	double f[NDOCS];
	struct run r;
	open_profile(&r, sd, "p");
	assert_int_equal(rank_query_first_phase(r.q, &r.docs, lids, NDOCS, f, &err), 0);
	for (int i = 0; i < NDOCS; i++)
		NEAR(f[i], 0.5 * fa[i] - 2 + 3);
	/* a query still sets them */
	double w = 4;
	assert_int_equal(rank_query_set_input(r.q, "w", &w, 1, &err), 0);
	assert_int_equal(rank_query_first_phase(r.q, &r.docs, lids, NDOCS, f, &err), 0);
	NEAR(f[1], 4 * fa[1] + 1);
	rank_query_free(r.q);
	assert_int_equal(rank_query_new(rank_profile_find(r.s, "child"), &r.q, &err), 0);
	assert_int_equal(rank_query_first_phase(r.q, &r.docs, lids, NDOCS, f, &err), 0);
	NEAR(f[2], 10 * fa[2] + 1);
	close_run(&r);

	load_fails(DOC "  rank-profile p {\n"
	               "    rank-properties { fieldMatch(a).maxOccurrences: 5 }\n"
	               "  }\n}\n",
	           STRATA_NOT_IMPLEMENTED,
	           "x.sd:8:23: rank property 'fieldMatch(a).maxOccurrences' is not supported");
	load_fails(DOC "  rank-profile p {\n"
	               "    rank-properties { query(q): [1, 2] }\n"
	               "  }\n}\n",
	           STRATA_NOT_IMPLEMENTED, "x.sd:8:33: rank property 'query(q)': only a number");
	load_fails(DOC "  rank-profile p {\n"
	               "    inputs { query(q) tensor(x[2]) }\n"
	               "    rank-properties { query(q): 1 }\n"
	               "  }\n}\n",
	           STRATA_NOT_IMPLEMENTED, "x.sd:9:29: rank property for query(q), a tensor");
	load_fails(DOC "  rank-profile p {\n"
	               "    inputs { query(q) double: 1 }\n"
	               "    rank-properties { query(q): 1 }\n"
	               "  }\n}\n",
	           STRATA_TYPE, "x.sd:9:29: query(q) has a default in inputs { } already (8:20)");
	load_fails(DOC "  rank-profile p {\n"
	               "    rank-properties { $q: 1\n $q: 2 }\n"
	               "  }\n}\n",
	           STRATA_TYPE, "x.sd:9:2: rank property '$q' is given twice");
	load_fails(DOC "  rank-profile p {\n"
	               "    rank-properties { $q: 1\n",
	           STRATA_PARSE, "rank-properties is not closed");
}

/* ---- every error of an application in one load ------------------------------------- */

static const char *bad_a =
	"schema a {\n"
	"  document a {\n"
	"    field x type double { indexing: attribute }\n"
	"    field y type strin { indexing: attribute }\n"
	"    field z type array<int> { indexing: attribute }\n"
	"  }\n"
	"  struct f { }\n"
	"  annotation f { }\n"
	"  rank-profile p1 {\n"
	"    first-phase { expression: attribute(x) + }\n"
	"  }\n"
	"  rank-profile p2 { first-phase { expression: attribute(x) } }\n"
	"  bogus\n"
	"  rank-profile p3 { first-phase { expresion: 1 } }\n"
	"}\n";
static const char *bad_b =
	"schema b {\n"
	"  document b { field x type double { indexing: attribute } }\n"
	"  rank-profile p1 { first-phase { expression: attribute(nope) } }\n"
	"  rank-profile p2 { first-phase { expression: attribute(x) } }\n"
	"  rank-profile p3 { first-phase { expression: normalize_linear(attribute(x)) } }\n"
	"  rank-profile p4 inherits p3, missing { }\n"
	"  rank-profile p5 inherits p4 { first-phase { expression: 1 } }\n"
	"}\n";

static void test_all_errors(void **state)
{
	(void)state;
	char *dir = make_app(bad_a, "schemas/b.sd", bad_b, NULL);
	/* Every file parses first (b.sd sorts before x.sd, and parses); the
	 * schemas that parsed are then resolved together and their profiles
	 * compiled, and p5 fails with p4, with no error of its own.  A type
	 * name ('strin') is resolved with the documents, so it waits until
	 * x.sd parses. */
	static const char *const want[] = {
		"x.sd:7:3: 'struct' is not supported",
		"x.sd:8:3: 'annotation' is not supported",
		"x.sd:10:46: expected an expression, found '}'",
		"x.sd:13:3: unexpected 'bogus' in schema 'a'",
		"x.sd:14:35: expected 'expression', 'rank-score-drop-limit' or '}' in first-phase",
		"b.sd:6:32: rank-profile 'p4' inherits 'missing', which is not defined",
		"b.sd:3:57: unknown attribute 'nope'",
		"b.sd:5:47: normalize_linear() is only available in global-phase",
	};
	const int nwant = (int)(sizeof want / sizeof want[0]);
	struct strata_errors errs;
	memset(&errs, 0x55, sizeof errs); /* the load resets it */
	struct strata_error err = { 0 };
	struct rank_app *app = NULL;
	int rc = rank_app_load_all(dir, NULL, &errs, &app, &err);
	assert_int_equal(rc, STRATA_NOT_IMPLEMENTED);
	assert_null(app);
	assert_int_equal(errs.n, nwant);
	assert_int_equal(errs.dropped, 0);
	for (int i = 0; i < nwant; i++)
		assert_non_null(strstr(errs.e[i].msg, want[i]));
	assert_string_equal(err.msg, errs.e[0].msg); /* err is the first */
	assert_int_equal(errs.e[0].code, STRATA_NOT_IMPLEMENTED);
	assert_int_equal(errs.e[2].code, STRATA_PARSE);
	assert_int_equal(errs.e[5].code, STRATA_TYPE);

	/* without a list: the first error only, as before */
	memset(&err, 0, sizeof err);
	assert_int_equal(rank_app_load(dir, &app, &err), STRATA_NOT_IMPLEMENTED);
	assert_string_equal(err.msg, errs.e[0].msg);

	/* out of memory anywhere: reported as such, nothing leaks */
	struct base_alloc_stats before, after;
	base_alloc_stats(&before);
	int failures = 0;
	for (int k = 1; k < 100000; k++) {
		memset(&err, 0, sizeof err);
		base_alloc_fail_after(k);
		rc = rank_app_load_all(dir, NULL, &errs, &app, &err);
		base_alloc_fail_after(0);
		assert_null(app);
		if (rc != STRATA_NOMEM) {
			assert_int_equal(rc, STRATA_NOT_IMPLEMENTED);
			assert_int_equal(errs.n, nwant);
			break;
		}
		assert_non_null(strstr(err.msg, "out of memory"));
		failures++;
	}
	assert_true(failures > 20);
	base_alloc_stats(&after);
	assert_int_equal(after.live_bytes, before.live_bytes);
	apptest_remove(dir);

	/* braces inside a type's parentheses are no block: no error follows
	 * from skipping the field */
	dir = make_app("schema c {\n"
	               "  document c {\n"
	               "    field t type tensor<float>(x{}, y[]) { indexing: attribute }\n"
	               "    field u type strin { indexing: attribute }\n"
	               "  }\n"
	               "  rank-profile p { constants { k tensor(y{}): 1 } }\n"
	               "  rank-profile p2 { first-phase { expression: 1 + } }\n"
	               "}\n", NULL);
	assert_int_equal(rank_app_load_all(dir, NULL, &errs, &app, &err), STRATA_NOT_IMPLEMENTED);
	assert_int_equal(errs.n, 3); /* 'strin' is resolved once the file parses */
	assert_non_null(strstr(errs.e[0].msg, "x.sd:3:"));
	assert_non_null(strstr(errs.e[1].msg, "x.sd:6:"));
	assert_non_null(strstr(errs.e[2].msg, "x.sd:7:"));
	apptest_remove(dir);

	/* inside a rank-profile: each item on its own */
	dir = make_app("schema a {\n"
	               "  document a { field x type double { indexing: attribute } }\n"
	               "  rank-profile p6 {\n"
	               "    function f() { expression: 1 + }\n"
	               "    first-phase { expression: 2 * }\n"
	               "    first-phase { expression: 3 }\n"
	               "    match-features: attribute(x) )\n"
	               "    bogus: 1\n"
	               "    num-threads-per-search: 2\n"
	               "    inputs { query(q) tensor(x{}): 1 }\n"
	               "    match-phase { attribute: x }\n"
	               "    global-phase { expression: 1 + }\n"
	               "  }\n"
	               "  rank-profile ok { first-phase { expression: 1 } }\n"
	               "  rank-profile p7 { first-phase { expression: ( } }\n"
	               "}\n", NULL);
	static const char *const in_profile[] = {
		"x.sd:4:36:", "x.sd:5:35:", "x.sd:6:5: 'first-phase' is given twice", "x.sd:7:34:",
		"x.sd:8:5: unexpected 'bogus'", "x.sd:10:34: default values of query inputs with mapped",
		"x.sd:11:5: 'match-phase'", "x.sd:12:36:", "x.sd:15:49:",
	};
	assert_int_equal(rank_app_load_all(dir, NULL, &errs, &app, &err), STRATA_PARSE);
	assert_int_equal(errs.n, 9);
	for (int i = 0; i < 9; i++)
		assert_non_null(strstr(errs.e[i].msg, in_profile[i]));
	apptest_remove(dir);

	/* more than the list holds: the rest are counted */
	char big[8192];
	size_t k = (size_t)snprintf(big, sizeof big, "schema c {\n  document c {\n");
	for (int i = 0; i < STRATA_MAX_ERRORS + 5; i++)
		k += (size_t)snprintf(big + k, sizeof big - k, "    field f%d type nope { }\n", i);
	snprintf(big + k, sizeof big - k, "  }\n}\n");
	dir = make_app(big, NULL);
	assert_int_equal(rank_app_load_all(dir, NULL, &errs, &app, &err), STRATA_TYPE);
	assert_int_equal(errs.n, STRATA_MAX_ERRORS);
	assert_true(errs.dropped >= 1);
	assert_non_null(strstr(errs.e[STRATA_MAX_ERRORS - 1].msg, "x.sd:22:20: unknown field type"));
	apptest_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_global_phase),
		cmocka_unit_test(test_global_phase_errors),
		cmocka_unit_test(test_drop_limit),
		cmocka_unit_test(test_missing_inputs),
		cmocka_unit_test(test_constants),
		cmocka_unit_test(test_rank_properties),
		cmocka_unit_test(test_all_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
