/*
 * test_rank_gbdt.c: lightgbm("f.json") and xgboost("f.json") rank features:
 * small hand-written model dumps evaluated over documents held in test
 * arrays, every expected score added up by hand below from the trees; the
 * splits' edge cases (a value equal to the threshold, NaN and 0 as missing,
 * categorical splits, XGBoost's float thresholds), objectives, features
 * that are functions and query inputs, errors with their positions, and
 * allocation failures.
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
#include <jansson.h>

#include "../rank/rank_eval.h"
#include "apptest.h"

/* |got - want| <= tol, with both printed when not */
#define assert_double_equal(got, want, tol) near((got), (want), (tol), __LINE__)
static void near(double got, double want, double tol, int line)
{
	if (!(fabs(got - want) <= tol))
		fail_msg("line %d: got %.17g, wanted %.17g", line, got, want);
}

#define NDOCS 5
static double price[NDOCS] = { 1.5, 7.0, 3.0, NAN, 0.0 };
static int32_t count_[NDOCS] = { 1, 2, 3, 4, 5 };
static double wgt[NDOCS] = { 0.1, 0.2, NAN, 0.0, 0.0 };

static const void *fake_attr(void *ud, int field, uint32_t lid)
{
	const char *name = rank_schema_field(ud, field)->name;
	if (strcmp(name, "price") == 0)
		return &price[lid];
	if (strcmp(name, "count") == 0)
		return &count_[lid];
	if (strcmp(name, "w") == 0)
		return &wgt[lid];
	return NULL;
}

/* A LightGBM dump: features by index, five trees (the last with one leaf
 * is tree 3; tree 4 reads a query input), objective regression. */
static const char *lgb_json =
	"{\"name\": \"tree\", \"version\": \"v4\", \"num_class\": 1, \"objective\": \"regression\",\n"
	" \"feature_names\": [\"attribute(price)\", \"attribute(count)\", \"twice\", \"query(boost)\",\n"
	"                     \"bm25(unused)\"],\n"
	" \"tree_info\": [\n"
	"  {\"tree_index\": 0, \"tree_structure\": {\"split_feature\": 0, \"threshold\": 3.0,\n"
	"    \"decision_type\": \"<=\", \"default_left\": false, \"missing_type\": \"NaN\",\n"
	"    \"left_child\": {\"leaf_value\": 1.0},\n"
	"    \"right_child\": {\"split_feature\": 1, \"threshold\": 2.5, \"decision_type\": \"<=\",\n"
	"      \"default_left\": true, \"missing_type\": \"None\",\n"
	"      \"left_child\": {\"leaf_value\": 10}, \"right_child\": {\"leaf_value\": 20}}}},\n"
	"  {\"tree_index\": 1, \"tree_structure\": {\"split_feature\": 2, \"threshold\": 6.0,\n"
	"    \"decision_type\": \"<=\", \"default_left\": true, \"missing_type\": \"Zero\",\n"
	"    \"left_child\": {\"leaf_value\": 0.5}, \"right_child\": {\"leaf_value\": -0.5}}},\n"
	"  {\"tree_index\": 2, \"tree_structure\": {\"split_feature\": 1, \"threshold\": \"1||4\",\n"
	"    \"decision_type\": \"==\", \"default_left\": false, \"missing_type\": \"None\",\n"
	"    \"left_child\": {\"leaf_value\": 100}, \"right_child\": {\"leaf_value\": 0}}},\n"
	"  {\"tree_index\": 3, \"tree_structure\": {\"leaf_value\": 0.25}},\n"
	"  {\"tree_index\": 4, \"tree_structure\": {\"split_feature\": 3, \"threshold\": 0.5,\n"
	"    \"decision_type\": \"<=\", \"default_left\": true, \"missing_type\": \"None\",\n"
	"    \"left_child\": {\"leaf_value\": 0}, \"right_child\": {\"leaf_value\": 1000}}}\n"
	" ]}\n";

/* Binary objective with sigmoid:2, and average_output over two trees. */
static const char *bin_json =
	"{\"objective\": \"binary sigmoid:2\", \"feature_names\": [\"attribute(price)\"],\n"
	" \"tree_info\": [{\"tree_structure\": {\"split_feature\": 0, \"threshold\": 3,\n"
	"   \"decision_type\": \"<=\", \"default_left\": true, \"missing_type\": \"NaN\",\n"
	"   \"left_child\": {\"leaf_value\": -1}, \"right_child\": {\"leaf_value\": 1}}}]}\n";
static const char *avg_json =
	"{\"objective\": \"poisson\", \"average_output\": true, \"feature_names\": [\"x\"],\n"
	" \"tree_info\": [{\"tree_structure\": {\"leaf_value\": 1}},\n"
	"               {\"tree_structure\": {\"leaf_value\": 2}}]}\n";

/* An XGBoost dump: children listed in either order, matched by nodeid;
 * tree 0 sends a missing price the yes way, tree 1 a missing w the no way. */
static const char *xgb_json =
	"[{\"nodeid\": 0, \"depth\": 0, \"split\": \"attribute(price)\", \"split_condition\": 3.0,\n"
	"  \"yes\": 1, \"no\": 2, \"missing\": 1, \"children\": [\n"
	"   {\"nodeid\": 1, \"leaf\": 0.5},\n"
	"   {\"nodeid\": 2, \"depth\": 1, \"split\": \"attribute(count)\", \"split_condition\": 2,\n"
	"    \"yes\": 4, \"no\": 3, \"missing\": 4, \"children\": [\n"
	"     {\"nodeid\": 3, \"leaf\": -1.25}, {\"nodeid\": 4, \"leaf\": 2.0}]}]},\n"
	" {\"nodeid\": 0, \"split\": \"attribute(w)\", \"split_condition\": 0.1,\n"
	"  \"yes\": 2, \"no\": 1, \"missing\": 1, \"children\": [\n"
	"   {\"nodeid\": 1, \"leaf\": 7}, {\"nodeid\": 2, \"leaf\": 8}]}]\n";

#define FIELDS \
	"  document doc {\n" \
	"    field price type double { indexing: attribute }\n" \
	"    field count type int { indexing: attribute }\n" \
	"    field w type double { indexing: attribute }\n" \
	"    field emb type tensor<float>(x[4]) { indexing: attribute }\n" \
	"  }\n"

static const char *main_sd =
	"schema doc {\n" FIELDS
	"  rank-profile lgb {\n"
	"    inputs { query(boost) double: 0 }\n"
	"    function twice() { expression: attribute(price) * 2 }\n"
	"    first-phase { expression: lightgbm(\"lgb.json\") }\n"
	"  }\n"
	"  rank-profile bin {\n"
	"    first-phase { expression: lightgbm(\"sub/bin.json\") }\n"
	"  }\n"
	"  rank-profile avg {\n"
	"    function x() { expression: 0 }\n"
	"    first-phase { expression: lightgbm(\"avg.json\") }\n"
	"  }\n"
	"  rank-profile xgb {\n"
	"    first-phase { expression: xgboost(\"xgb.json\") }\n"
	"    second-phase { expression: firstPhase + 2 * xgboost(\"xgb.json\") }\n"
	"  }\n"
	"}\n";

static char *make_app(const char *sd)
{
	char *dir = apptest_new("strata_rank_gbdt");
	apptest_write(dir, "schemas/x.sd", sd);
	apptest_write(dir, "models/lgb.json", lgb_json);
	apptest_write(dir, "models/avg.json", avg_json);
	apptest_write(dir, "models/xgb.json", xgb_json);
	apptest_write(dir, "models/bad.json", "{\"tree_info\": [\n  {]\n}");
	apptest_write(dir, "models/multi.json",
	              "{\"num_class\": 3, \"feature_names\": [], \"tree_info\": []}");
	apptest_write(dir, "models/unknown.json",
	              "{\"feature_names\": [\"bm25(title)\"], \"tree_info\": [{\"tree_structure\":\n"
	              " {\"split_feature\": 0, \"threshold\": 1, \"decision_type\": \"<=\",\n"
	              "  \"left_child\": {\"leaf_value\": 1}, \"right_child\": {\"leaf_value\": 2}}}]}");
	apptest_write(dir, "models/pandas.json",
	              "{\"feature_names\": [\"attribute(count)\"], \"pandas_categorical\": [[\"a\", \"b\"]],\n"
	              " \"tree_info\": [{\"tree_structure\": {\"split_feature\": 0, \"threshold\": \"1\",\n"
	              "  \"decision_type\": \"==\", \"left_child\": {\"leaf_value\": 1},\n"
	              "  \"right_child\": {\"leaf_value\": 2}}}]}");
	apptest_write(dir, "models/linear.json",
	              "{\"feature_names\": [], \"tree_info\": [{\"tree_structure\": {\"leaf_value\": 1,\n"
	              "  \"leaf_coeff\": [0.5], \"leaf_features\": [0]}}]}");
	apptest_write(dir, "models/tensor.json",
	              "[{\"nodeid\": 0, \"split\": \"attribute(emb)\", \"split_condition\": 1,\n"
	              "  \"yes\": 1, \"no\": 2, \"children\": [{\"nodeid\": 1, \"leaf\": 1},\n"
	              "  {\"nodeid\": 2, \"leaf\": 2}]}]");
	apptest_write(dir, "models/nochild.json",
	              "[{\"nodeid\": 0, \"split\": \"attribute(w)\", \"split_condition\": 1,\n"
	              "  \"yes\": 1, \"no\": 5, \"children\": [{\"nodeid\": 1, \"leaf\": 1},\n"
	              "  {\"nodeid\": 2, \"leaf\": 2}]}]");
	char sub[512];
	snprintf(sub, sizeof sub, "%s/models/sub", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	apptest_write(dir, "models/sub/bin.json", bin_json);
	return dir;
}

struct world {
	char *dir;
	struct rank_app *app;
	const struct rank_schema *s;
	struct rank_docs docs;
};

static int setup(void **state)
{
	struct world *w = calloc(1, sizeof *w);
	w->dir = make_app(main_sd);
	w->app = apptest_load(w->dir);
	w->s = rank_app_schema_find(w->app, "doc");
	w->docs.ud = (void *)w->s;
	w->docs.attr = fake_attr;
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;
	rank_app_free(w->app);
	apptest_remove(w->dir);
	free(w);
	return 0;
}

/* First-phase scores of every document under profile name (query(boost)
 * set when boost >= 0). */
static void scores(struct world *w, const char *name, double boost, double *out)
{
	struct strata_error err = { 0 };
	struct rank_query *q;
	assert_int_equal(rank_query_new(rank_profile_find(w->s, name), &q, &err), 0);
	if (boost >= 0)
		assert_int_equal(rank_query_set_input(q, "boost", &boost, 1, &err), 0);
	uint32_t lids[NDOCS] = { 0, 1, 2, 3, 4 };
	assert_int_equal(rank_query_first_phase(q, &w->docs, lids, NDOCS, out, &err), 0);
	rank_query_free(q);
}

/* LightGBM by hand, tree by tree (price, count, twice = 2 * price):
 *   doc 0 (1.5, 1, 3):   1 (1.5 <= 3)        + 0.5 + 100 (1 in {1,4}) + 0.25 = 101.75
 *   doc 1 (7, 2, 14):    10 (7 > 3, 2 <= 2.5) - 0.5 + 0               + 0.25 = 9.75
 *   doc 2 (3, 3, 6):     1 (3 <= 3: equal goes left) + 0.5 (6 <= 6)   + 0.25 = 1.75
 *   doc 3 (NaN, 4, NaN): 20 (NaN goes right, 4 > 2.5) + 0.5 (NaN is missing:
 *                        default left) + 100 (4 in {1,4})             + 0.25 = 120.75
 *   doc 4 (0, 5, 0):     1 + 0.5 (0 is missing: default left) + 0     + 0.25 = 1.75
 * and tree 4 adds 1000 when query(boost) > 0.5. */
static void test_lightgbm(void **state)
{
	struct world *w = *state;
	const double want[NDOCS] = { 101.75, 9.75, 1.75, 120.75, 1.75 };
	double got[NDOCS];
	scores(w, "lgb", -1, got);
	for (int i = 0; i < NDOCS; i++)
		assert_double_equal(got[i], want[i], 0);
	scores(w, "lgb", 1, got);
	for (int i = 0; i < NDOCS; i++)
		assert_double_equal(got[i], want[i] + 1000, 0);
	scores(w, "lgb", 0.5, got); /* 0.5 <= 0.5 goes left */
	assert_double_equal(got[0], want[0], 0);
}

/* binary sigmoid:2: 1 / (1 + exp(-2 s)), s = -1 for price <= 3 or NaN
 * (default left), else 1.  poisson with average_output: exp((1 + 2) / 2). */
static void test_objectives(void **state)
{
	struct world *w = *state;
	double got[NDOCS];
	scores(w, "bin", -1, got);
	double lo = 1 / (1 + exp(2.0)), hi = 1 / (1 + exp(-2.0));
	const double want[NDOCS] = { lo, hi, lo, lo, lo };
	for (int i = 0; i < NDOCS; i++)
		assert_double_equal(got[i], want[i], 1e-15);
	scores(w, "avg", -1, got);
	assert_double_equal(got[0], exp(1.5), 1e-12);
}

/* XGBoost by hand (price < 3 yes, missing yes; count < 2 yes; w < 0.1f yes,
 * missing no; 0.1 < (double)0.1f, so w = 0.1 goes yes):
 *   doc 0 (1.5, 1, 0.1):   0.5 + 8 = 8.5
 *   doc 1 (7, 2, 0.2):     -1.25 (2 < 2 is false) + 7 = 5.75
 *   doc 2 (3, 3, NaN):     -1.25 (3 < 3 is false) + 7 (NaN goes no) = 5.75
 *   doc 3 (NaN, 4, 0):     0.5 (NaN goes yes) + 8 = 8.5
 *   doc 4 (0, 5, 0):       0.5 + 8 = 8.5
 * and the second phase is that times 3. */
static void test_xgboost(void **state)
{
	struct world *w = *state;
	const double want[NDOCS] = { 8.5, 5.75, 5.75, 8.5, 8.5 };
	double got[NDOCS], second[NDOCS];
	scores(w, "xgb", -1, got);
	for (int i = 0; i < NDOCS; i++)
		assert_double_equal(got[i], want[i], 0);
	struct strata_error err = { 0 };
	struct rank_query *q;
	assert_int_equal(rank_query_new(rank_profile_find(w->s, "xgb"), &q, &err), 0);
	uint32_t lids[NDOCS] = { 0, 1, 2, 3, 4 };
	assert_int_equal(rank_query_second_phase(q, &w->docs, lids, got, NDOCS, second, &err), 0);
	rank_query_free(q);
	for (int i = 0; i < NDOCS; i++)
		assert_double_equal(second[i], 3 * want[i], 0);
}

/* A profile whose first phase is expr: the load's code and message. */
static void expect_error(const char *expr, int code, const char *where, const char *what)
{
	char sd[2048];
	snprintf(sd, sizeof sd,
	         "schema doc {\n" FIELDS "  rank-profile bad {\n    first-phase { expression: %s }\n"
	         "  }\n}\n", expr);
	apptest_expect_load_error(make_app(sd), code, where, what);
}

/* The first phase's expression is on line 9, from column 31. */
static void test_errors(void **state)
{
	(void)state;
	expect_error("lightgbm(\"nope.json\")", STRATA_NOT_FOUND, "x.sd:9:31: lightgbm model "
	             "'nope.json'", "models/nope.json");
	expect_error("xgboost(\"../x.json\")", STRATA_TYPE, "x.sd:9:31:", "inside the models folder");
	expect_error("lightgbm(nope)", STRATA_TYPE, "x.sd:9:31:", "one file name in quotes");
	expect_error("lightgbm(\"bad.json\")", STRATA_PARSE, "models/bad.json:2:4: ",
	             "lightgbm model used at ");
	expect_error("xgboost(\"lgb.json\")", STRATA_PARSE, "x.sd:9:31: xgboost model 'lgb.json'",
	             "not an XGBoost model dump");
	expect_error("lightgbm(\"xgb.json\")", STRATA_PARSE, "x.sd:9:31:", "not a LightGBM model dump");
	expect_error("lightgbm(\"multi.json\")", STRATA_NOT_IMPLEMENTED, "x.sd:9:31:", "multiclass");
	expect_error("1 + lightgbm(\"unknown.json\")", STRATA_TYPE,
	             "x.sd:9:35: lightgbm model 'unknown.json': feature 'bm25(title)': ",
	             "bm25(): 'title' is not a field with a text index");
	expect_error("xgboost(\"tensor.json\")", STRATA_TYPE, "x.sd:9:31:",
	             "feature 'attribute(emb)' is a tensor");
	expect_error("lightgbm(\"pandas.json\")", STRATA_NOT_IMPLEMENTED, "x.sd:9:31:",
	             "tree 0: a split on string categories (pandas_categorical) is not supported");
	expect_error("lightgbm(\"linear.json\")", STRATA_NOT_IMPLEMENTED, "x.sd:9:31:",
	             "linear trees (leaf_coeff) are not supported");
	expect_error("xgboost(\"nochild.json\")", STRATA_PARSE, "x.sd:9:31:", "tree 0: node 0");
	/* a model's feature that the profile lacks: query(boost) is not declared */
	expect_error("lightgbm(\"lgb.json\")", STRATA_TYPE, "feature 'twice'", "unknown name 'twice'");
}

/* Each allocation of loading the application made to fail in turn: each
 * failure says out of memory and leaves nothing behind. */
static void test_alloc_failures(void **state)
{
	struct world *w = *state;
	struct base_alloc_stats before, after;
	base_alloc_stats(&before);
	long failures = apptest_load_failures(w->dir);
	assert_true(failures > 50);
	base_alloc_stats(&after);
	assert_int_equal(after.live_bytes, before.live_bytes);
}

/* A loader's parse_json: jansson's parse, or out of memory when told. */
static int parse_calls, parse_oom;
static json_t *counted_parse(const char *text, size_t len, size_t flags, json_error_t *je, int *oom)
{
	parse_calls++;
	*oom = parse_oom;
	return parse_oom ? NULL : json_loadb(text, len, flags, je);
}

/* The model files are parsed by the loader's parse_json, and a parse that
 * ran out of memory is out of memory, not a model that is not JSON. */
static void test_loader_parse(void **state)
{
	struct world *w = *state;
	struct rank_loader loader = { .parse_json = counted_parse };
	struct rank_app *app = NULL;
	struct strata_error err = { 0 };
	parse_calls = parse_oom = 0;
	assert_int_equal(rank_app_load_with(w->dir, &loader, &app, &err), 0);
	assert_true(parse_calls >= 4); /* lgb.json, sub/bin.json, avg.json, xgb.json */
	rank_app_free(app);

	struct base_alloc_stats before, after;
	base_alloc_stats(&before);
	app = NULL;
	parse_calls = 0;
	parse_oom = 1;
	int rc = rank_app_load_with(w->dir, &loader, &app, &err);
	parse_oom = 0;
	assert_int_equal(rc, STRATA_NOMEM);
	assert_int_equal(parse_calls, 1);
	assert_non_null(strstr(err.msg, "out of memory: "));
	assert_non_null(strstr(err.msg, "lightgbm model 'lgb.json'"));
	assert_null(app);
	base_alloc_stats(&after);
	assert_int_equal(after.live_bytes, before.live_bytes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lightgbm),
		cmocka_unit_test(test_objectives),
		cmocka_unit_test(test_xgboost),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_alloc_failures),
		cmocka_unit_test(test_loader_parse),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
