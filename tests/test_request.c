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
	assert_non_null(r.input);
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
	json_decref(j);
	assert_int_equal(read_text("{\"yql\": \"y\", \"ranking\": \"a\"}", &r, &j, &err), 0);
	assert_string_equal(r.profile, "a");
	json_decref(j);
	/* ranking.profile wins over the alias */
	assert_int_equal(read_text("{\"yql\": \"y\", \"ranking\": \"a\", \"ranking.profile\": \"b\"}",
	                           &r, &j, &err), 0);
	assert_string_equal(r.profile, "b");
	json_decref(j);
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
		{"{\"yql\": \"y\", \"ranking\": 5}", "\"ranking\" must be a string"},
		{"{\"yql\": \"y\", \"presentation\": {\"summary\": []}}",
		 "\"presentation.summary\" must be a string"},
		{"{\"yql\": \"y\", \"ranking.properties.vespa.now\": \"soon\"}",
		 "ranking.properties.vespa.now: expected a number"},
		{"{\"yql\": \"y\", \"query\": 12}", "\"query\" must be a string"},
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
		json_decref(j);
	}
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
		cmocka_unit_test(test_param),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
