/*
 * test_request.c: a search request read once (engine/request/request.c):
 * each key flat or nested, the aliases, the defaults, and every key of a
 * wrong type refused with its name; the dotted lookup at any depth.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "../engine/engine_int.h"

static int read_text(const char *text, struct eng_request *r, json_t **keep,
                     struct strata_error *err)
{
	*keep = json_loads(text, 0, NULL);
	assert_non_null(*keep);
	memset(err, 0, sizeof *err);
	return eng_request_read(*keep, r, err);
}

static void test_forms(void **state)
{
	(void)state;
	struct eng_request r;
	struct strata_error err;
	json_t *j;
	assert_int_equal(read_text("{\"yql\": \"select * from sources * where true\"}", &r, &j, &err),
	                 0);
	assert_string_equal(r.profile, "default");
	assert_int_equal(r.hits, -1);
	assert_int_equal(r.offset, -1);
	assert_null(r.summary);
	assert_null(r.timeout);
	assert_null(r.now);
	eng_request_done(&r);
	json_decref(j);
	/* flat */
	assert_int_equal(read_text("{\"yql\": \"y\", \"hits\": 7, \"offset\": \"3\", "
	                           "\"ranking.profile\": \"p\", \"presentation.summary\": \"s\", "
	                           "\"timeout\": \"2s\", \"ranking.properties.vespa.now\": 5, "
	                           "\"query\": \"a b\", \"model.defaultIndex\": \"title\", "
	                           "\"input\": {\"query(q)\": 1}}", &r, &j, &err), 0);
	assert_string_equal(r.yql, "y");
	assert_int_equal(r.hits, 7);
	assert_int_equal(r.offset, 3);
	assert_string_equal(r.profile, "p");
	assert_string_equal(r.summary, "s");
	assert_string_equal(json_string_value(r.timeout), "2s");
	assert_true(json_number_value(r.now) == 5);
	assert_string_equal(r.query, "a b");
	assert_string_equal(r.default_index, "title");
	/* the input object's members by their full names */
	assert_int_equal(json_integer_value(json_object_get(r.json, "ranking.features.query(q)")), 1);
	assert_null(json_object_get(r.json, "input"));
	eng_request_done(&r);
	json_decref(j);
	/* nested, and the "ranking": "P" alias */
	assert_int_equal(read_text("{\"yql\": \"y\", \"ranking\": {\"profile\": \"n\", "
	                           "\"softtimeout\": {\"factor\": 0.3}}, \"presentation\": "
	                           "{\"summary\": \"t\"}, \"model\": {\"defaultIndex\": \"body\"}}",
	                           &r, &j, &err), 0);
	assert_string_equal(r.profile, "n");
	assert_string_equal(r.summary, "t");
	assert_string_equal(r.default_index, "body");
	assert_true(json_real_value(r.soft_factor) == 0.3);
	eng_request_done(&r);
	json_decref(j);
	assert_int_equal(read_text("{\"yql\": \"y\", \"ranking\": \"a\"}", &r, &j, &err), 0);
	assert_string_equal(r.profile, "a");
	eng_request_done(&r);
	json_decref(j);
	/* Vespa's aliases, case-insensitive: count, start, summary, type,
	 * default-index, tracelevel, input.X, rankfeature.X */
	assert_int_equal(read_text("{\"yql\": \"y\", \"Count\": \"4\", \"start\": 2, "
	                           "\"summary\": \"s\", \"type\": \"any\", \"default-index\": "
	                           "\"t\", \"tracelevel\": 3, \"input.query(a)\": 1, "
	                           "\"rankfeature.query(b)\": 2, \"user-query\": \"u\"}",
	                           &r, &j, &err), 0);
	assert_int_equal(r.hits, 4);
	assert_int_equal(r.offset, 2);
	assert_string_equal(r.summary, "s");
	assert_string_equal(r.default_index, "t");
	assert_int_equal(r.grammar.composite, ENG_COMPOSITE_OR);
	assert_int_equal(r.grammar.syntax, ENG_SYNTAX_SIMPLE);
	assert_int_equal(json_integer_value(json_object_get(r.json, "trace.level")), 3);
	assert_int_equal(json_integer_value(json_object_get(r.json, "ranking.features.query(a)")), 1);
	assert_int_equal(json_integer_value(json_object_get(r.json, "ranking.features.query(b)")), 2);
	/* the application's own parameters stay as they are */
	assert_string_equal(json_string_value(json_object_get(r.json, "user-query")), "u");
	eng_request_done(&r);
	json_decref(j);
	/* nested forms in a POST: ranking.features, and the grammar's parts */
	assert_int_equal(read_text("{\"yql\": \"y\", \"ranking\": {\"features\": {\"query(q)\": "
	                           "[1, 2]}, \"matching\": {\"approximateThreshold\": 0.1}}, "
	                           "\"model\": {\"type\": {\"composite\": \"and\", "
	                           "\"syntax\": \"none\"}}}", &r, &j, &err), 0);
	assert_true(json_is_array(json_object_get(r.json, "ranking.features.query(q)")));
	assert_non_null(json_object_get(r.json, "ranking.matching.approximateThreshold"));
	assert_int_equal(r.grammar.composite, ENG_COMPOSITE_AND);
	assert_int_equal(r.grammar.syntax, ENG_SYNTAX_NONE);
	eng_request_done(&r);
	json_decref(j);
	/* no yql: the query is searched as userQuery() over every source,
	 * weakAnd over the simple syntax by default */
	assert_int_equal(read_text("{\"query\": \"a b\"}", &r, &j, &err), 0);
	assert_string_equal(r.yql, "select * from sources * where userQuery()");
	assert_int_equal(r.grammar.composite, ENG_COMPOSITE_WEAKAND);
	eng_request_done(&r);
	json_decref(j);
	/* each model.type */
	static const struct {
		const char *type;
		int composite, syntax, linguistics;
	} types[] = {
		{"all", ENG_COMPOSITE_AND, ENG_SYNTAX_SIMPLE, 0},
		{"any", ENG_COMPOSITE_OR, ENG_SYNTAX_SIMPLE, 0},
		{"weakAnd", ENG_COMPOSITE_WEAKAND, ENG_SYNTAX_SIMPLE, 0},
		{"phrase", ENG_COMPOSITE_PHRASE, ENG_SYNTAX_NONE, 0},
		{"web", ENG_COMPOSITE_AND, ENG_SYNTAX_WEB, 0},
		{"tokenize", ENG_COMPOSITE_WEAKAND, ENG_SYNTAX_NONE, 0},
		{"linguistics", ENG_COMPOSITE_WEAKAND, ENG_SYNTAX_NONE, 1},
	};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		char text[128];
		snprintf(text, sizeof text, "{\"yql\": \"y\", \"model.type\": \"%s\"}", types[i].type);
		assert_int_equal(read_text(text, &r, &j, &err), 0);
		assert_int_equal(r.grammar.composite, types[i].composite);
		assert_int_equal(r.grammar.syntax, types[i].syntax);
		assert_int_equal(r.grammar.linguistics, types[i].linguistics);
		eng_request_done(&r);
		json_decref(j);
	}
}

static void test_refused(void **state)
{
	(void)state;
	static const struct {
		const char *req, *says;
	} bad[] = {
		{"{}", "no \"yql\""},
		{"{\"yql\": 3}", "\"yql\" must be a string"},
		{"{\"yql\": \"y\", \"hits\": -1}", "\"hits\" must not be negative"},
		{"{\"yql\": \"y\", \"hits\": 401}", "\"hits\" is 401, the maximum is 400"},
		{"{\"yql\": \"y\", \"offset\": \"x\"}", "\"offset\" must be a number"},
		{"{\"yql\": \"y\", \"ranking.profile\": 5}", "\"ranking.profile\" must be a string"},
		{"{\"yql\": \"y\", \"ranking\": 5}", "\"ranking.profile\" must be a string"},
		{"{\"yql\": \"y\", \"ranking\": \"a\", \"ranking.profile\": \"b\"}",
		 "'ranking.profile' is given twice"},
		{"{\"yql\": \"y\", \"type\": \"most\"}", "model.type 'most' is not one of all"},
		{"{\"yql\": \"y\", \"model.type.syntax\": \"lisp\"}",
		 "model.type.syntax 'lisp' is not one of Vespa's"},
		{"{\"yql\": \"y\", \"ranking.features.fieldMatch(a)\": 1}",
		 "only query(NAME) features may be set"},
		{"{\"yql\": \"y\", \"presentation\": {\"summary\": []}}",
		 "\"presentation.summary\" must be a string"},
		{"{\"yql\": \"y\", \"ranking.properties.vespa.now\": \"soon\"}",
		 "ranking.properties.vespa.now: expected a number"},
		{"{\"yql\": \"y\", \"query\": 12}", "\"model.queryString\" must be a string"},
		{"{\"yql\": \"y\", \"model\": {\"defaultIndex\": 1}}",
		 "\"model.defaultIndex\" must be a string"},
		{"{\"yql\": \"y\", \"input\": 3}", "\"input\" must be an object"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct eng_request r;
		struct strata_error err;
		json_t *j;
		assert_int_equal(read_text(bad[i].req, &r, &j, &err), STRATA_INVALID_ARGUMENT);
		if (!strstr(err.msg, bad[i].says))
			fail_msg("%s: '%s', expected '%s'", bad[i].req, err.msg, bad[i].says);
		eng_request_done(&r);
		json_decref(j);
	}
}

/* Vespa's parameters that Strata does not honour are refused by name,
 * never ignored; those it honours trivially take the value it has. */
static void test_not_honoured(void **state)
{
	(void)state;
	static const struct {
		const char *req, *says;
	} bad[] = {
		{"{\"yql\": \"y\", \"ranking.freshness\": \"now\"}", "'ranking.freshness' is not supported"},
		{"{\"yql\": \"y\", \"collapse.summary\": \"a\"}", "'collapse.summary' is not supported"},
		{"{\"yql\": \"y\", \"collapse.nosuch\": \"a\"}", "'collapse.nosuch'"},
		{"{\"yql\": \"y\", \"ranking\": {\"listFeatures\": true}}",
		 "'ranking.listFeatures' may only be false"},
		{"{\"yql\": \"y\", \"rankfeatures\": \"true\"}", "'rankfeatures' may only be false"},
		{"{\"yql\": \"y\", \"format\": \"xml\"}", "'format' may only be json"},
		{"{\"yql\": \"y\", \"language\": \"de\"}", "'language' may only be en"},
		{"{\"yql\": \"y\", \"ranking.foo\": 1}", "'ranking.foo' is not one Strata knows"},
		{"{\"yql\": \"y\", \"format.tensors\": \"long\"}",
		 "presentation.format.tensors 'long' is not supported"},
		{"{\"yql\": \"y\", \"ranking.matching.nosuch\": 1}",
		 "'ranking.matching.nosuch' is not a ranking.matching setting"},
		{"{\"yql\": \"y\", \"ranking.properties.foo\": 1}", "read no rank properties"},
		{"{\"yql\": \"y\", \"type\": \"yql\"}", "model.type 'yql' is not supported"},
		{"{\"yql\": \"y\", \"model.type.composite\": \"near\"}",
		 "model.type.composite 'near' is not supported"},
		{"{\"yql\": \"y\", \"restrict\": \"a\"}", "'restrict' is not supported"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct eng_request r;
		struct strata_error err;
		json_t *j;
		assert_int_equal(read_text(bad[i].req, &r, &j, &err), STRATA_NOT_IMPLEMENTED);
		if (!strstr(err.msg, bad[i].says))
			fail_msg("%s: '%s', expected '%s'", bad[i].req, err.msg, bad[i].says);
		eng_request_done(&r);
		json_decref(j);
	}
	/* honoured as Strata always behaves */
	struct eng_request r;
	struct strata_error err;
	json_t *j;
	assert_int_equal(read_text("{\"yql\": \"y\", \"format\": \"JSON\", \"language\": \"en-US\", "
	                           "\"bolding\": true, \"rankfeatures\": false, \"noCache\": true}",
	                           &r, &j, &err), 0);
	eng_request_done(&r);
	json_decref(j);
	assert_int_equal(read_text("{\"yql\": \"y\", \"presentation\": {\"timing\": true, "
	                           "\"format.tensors\": \"short-value\"}}", &r, &j, &err), 0);
	assert_int_equal(r.timing, 1);
	assert_int_equal(r.short_value, 1);
	eng_request_done(&r);
	json_decref(j);
}

/* A dotted name found flat or through nested objects, at any depth. */
static void test_param(void **state)
{
	(void)state;
	json_t *j = json_loads("{\"a.b\": 1, \"c\": {\"d\": {\"e\": 2}}, \"f\": {\"g\": 3}}", 0,
	                       NULL);
	assert_int_equal(json_integer_value(eng_request_param(j, "a.b")), 1);
	assert_int_equal(json_integer_value(eng_request_param(j, "c.d.e")), 2);
	assert_int_equal(json_integer_value(eng_request_param(j, "f.g")), 3);
	assert_null(eng_request_param(j, "f.h"));
	assert_null(eng_request_param(j, "c.d.e.x"));
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_not_honoured),
		cmocka_unit_test(test_param),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
