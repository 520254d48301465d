/*
 * test_queryprofile.c: query profiles, their types, and the Java
 * components of services.xml, through strata.h.
 *
 * The application tests/data/queryprofile (one schema, profiles default,
 * base, cheap, fixed, sub, vec, needs, types root and needsuser, and a
 * services.xml with Java components) is deployed into a data folder in
 * /tmp and queried: the default profile applies when the request names
 * none, queryProfile chooses another, inheritance goes left to right, the
 * request wins unless a field is not overridable, %{x} substitutes, a
 * typed tensor input parses from text, aliases rename, mandatory fields
 * are required.  Applications with one fault each are refused at open
 * with the file, line and column; the Java components are named once at
 * deploy, and not at a later open.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <jansson.h>

#include "../include/strata.h"
#include "apptest.h"

#define APP "tests/data/queryprofile"

struct fix {
	char *data; /* a folder in /tmp for the store */
	char datadir[600];
	struct strata *db;
};

struct logs {
	int n, notices;
	char msg[8][1024];
	char notice[1024];
};

static void log_cb(void *ud, int level, const char *msg)
{
	struct logs *l = ud;
	if (level == STRATA_LOG_WARNING && l->n < 8)
		snprintf(l->msg[l->n++], sizeof l->msg[0], "%s", msg);
	if (level == STRATA_LOG_NOTICE && strstr(msg, "searchChain") && !l->notices++)
		snprintf(l->notice, sizeof l->notice, "%s", msg);
}

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof *f);
	f->data = apptest_new("strata-qp-");
	snprintf(f->datadir, sizeof f->datadir, "%s/data", f->data);
	struct strata_options o = { .data_dir = f->datadir };
	struct strata_error err;
	if (strata_open(APP, &o, &f->db, &err))
		fail_msg("%s", err.msg);
	static const char *const docs[] = {
		"{\"put\": \"id:t:doc::a\", \"fields\": {\"title\": \"a\", \"price\": 10, "
		"\"emb\": [1, 0, 0]}}",
		"{\"put\": \"id:t:doc::b\", \"fields\": {\"title\": \"b\", \"price\": 20, "
		"\"emb\": [0, 1, 0]}}",
		"{\"put\": \"id:t:doc::c\", \"fields\": {\"title\": \"c\", \"price\": 30, "
		"\"emb\": [0, 0, 1]}}",
	};
	for (int i = 0; i < 3; i++)
		if (strata_feed_json(f->db, docs[i], &err))
			fail_msg("%s", err.msg);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;
	strata_close(f->db);
	apptest_remove(f->data);
	free(f);
	return 0;
}

/* Run request; the ids of the hits, "a,b" ("" for none), into ids. */
static int query(struct strata *db, const char *request, char *ids, size_t n,
                 struct strata_error *err)
{
	char *res;
	int rc = strata_query_json(db, request, &res, err);
	ids[0] = 0;
	if (rc)
		return rc;
	json_t *j = json_loads(res, 0, NULL);
	strata_free(res);
	assert_non_null(j);
	json_t *ch = json_object_get(json_object_get(j, "root"), "children");
	size_t i;
	json_t *h;
	json_array_foreach(ch, i, h) {
		const char *id = json_string_value(json_object_get(h, "id"));
		const char *key = strrchr(id, ':');
		size_t l = strlen(ids);
		snprintf(ids + l, n - l, "%s%s", l ? "," : "", key ? key + 1 : id);
	}
	json_decref(j);
	return 0;
}

static void expect(struct strata *db, const char *request, const char *want)
{
	char ids[256];
	struct strata_error err;
	int rc = query(db, request, ids, sizeof ids, &err);
	if (rc)
		fail_msg("%s: %s", request, err.msg);
	if (strcmp(ids, want))
		fail_msg("%s: hits %s, expected %s", request, ids, want);
}

static void expect_error(struct strata *db, const char *request, int code, const char *what)
{
	char ids[256];
	struct strata_error err;
	int rc = query(db, request, ids, sizeof ids, &err);
	if (rc != code || !strstr(err.msg, what))
		fail_msg("%s: rc %d '%s', expected %d with '%s'", request, rc, rc ? err.msg : "",
		         code, what);
}

#define ALL "\"yql\": \"select * from doc where true\""

static void test_default_profile(void **state)
{
	struct fix *f = *state;
	expect(f->db, "{" ALL "}", "c");                      /* default: hits 1, by price */
	expect(f->db, "{" ALL ", \"hits\": 3}", "c,b,a");     /* the request wins */
	expect(f->db, "{" ALL ", \"hits\": \"2\"}", "c,b");   /* as a URL gives it */
	expect(f->db, "{" ALL ", \"count\": 2}", "c,b");        /* Vespa's alias of hits */
	expect(f->db, "{" ALL ", \"queryProfile\": \"default\"}", "c");
}

static void test_choose_and_inherit(void **state)
{
	struct fix *f = *state;
	/* cheap: its ranking.profile, base's hits 2 and yql (base before default) */
	expect(f->db, "{\"queryProfile\": \"cheap\"}", "a,b");
	expect(f->db, "{\"queryProfile\": \"cheap\", \"ranking\": \"default\"}", "c,b");
	expect(f->db, "{\"queryProfile\": \"cheap\", \"ranking\": {\"profile\": \"default\"}}",
	       "c,b");
	/* fixed: hits is not overridable */
	expect(f->db, "{" ALL ", \"queryProfile\": \"fixed\", \"hits\": 3}", "a");
	expect_error(f->db, "{" ALL ", \"queryProfile\": \"nope\"}", STRATA_NOT_FOUND,
	             "queryProfile 'nope' is not defined");
	expect_error(f->db, "{" ALL ", \"queryProfile\": 3}", STRATA_INVALID_ARGUMENT,
	             "\"queryProfile\" must be a string");
}

static void test_substitution_and_types(void **state)
{
	struct fix *f = *state;
	expect(f->db, "{\"queryProfile\": \"sub\"}", "c,b");              /* price > 15 */
	expect(f->db, "{\"queryProfile\": \"sub\", \"minprice\": 25}", "c"); /* request's value */
	expect(f->db, "{\"queryProfile\": \"sub\", \"minprice\": \"5\"}", "c,b,a");
	expect(f->db, "{\"queryProfile\": \"sub\", \"Min-Price\": \"25\"}", "c"); /* an alias */
	expect(f->db, "{\"queryProfile\": \"sub\", \"lowest\": \"25\"}", "c");
	expect_error(f->db, "{\"queryProfile\": \"sub\", \"minprice\": \"many\"}",
	             STRATA_INVALID_ARGUMENT, "wants a 32-bit integer");
	/* the type declares query(q), which byq reads undeclared: a text tensor parses */
	expect(f->db, "{\"queryProfile\": \"vec\", " ALL "}", "c,a,b");
	expect(f->db,
	       "{\"queryProfile\": \"vec\", " ALL ", \"ranking.features.query(q)\": \"[0, 1, 0]\"}",
	       "b,a,c");
	expect(f->db, "{\"queryProfile\": \"vec\", " ALL ", \"input.query(q)\": [1, 0, 0]}",
	       "a,b,c");
	expect(f->db, "{" ALL ", \"ranking.profile\": \"byq\", \"hits\": 3, "
	              "\"input.query(q)\": \"[0, 1, 0]\"}", "b,a,c");
	expect_error(f->db, "{\"queryProfile\": \"vec\", " ALL ", \"input.query(q)\": \"[1, 0]\"}",
	             STRATA_INVALID_ARGUMENT, "query(q)");
}

/* A profile holding a parameter Strata does not honour deploys (told once);
 * the searches that choose it fail with the reason, the others run. */
static void test_refused_parameter(void **state)
{
	struct fix *f = *state;
	expect_error(f->db, "{" ALL ", \"queryProfile\": \"streamed\"}", STRATA_NOT_IMPLEMENTED,
	             "search/query-profiles/streamed.xml:2:3: query profile 'streamed': request "
	             "parameter 'presentation.format' may only be json");
	expect(f->db, "{" ALL ", \"queryProfile\": \"cheap\", \"hits\": 1}", "a");
}

static void test_mandatory(void **state)
{
	struct fix *f = *state;
	expect_error(f->db, "{\"queryProfile\": \"needs\", " ALL "}", STRATA_INVALID_ARGUMENT,
	             "\"customer\" is mandatory in query profile type 'needsuser'");
	expect(f->db, "{\"queryProfile\": \"needs\", " ALL ", \"customer\": \"u1\"}", "c,b,a");
}

/* ---- deploy-time faults ---------------------------------------------------------------- */

static const char *schema =
        "schema doc {\n document doc {\n  field price type int {\n"
        "   indexing: summary | attribute\n  }\n }\n}\n";

/* An application with profile files name[i] = text[i] (NULL-ended);
 * opening it must fail with code and a message holding where and what. */
static void bad_app(const char *const *files, int code, const char *where, const char *what)
{
	char *dir = apptest_new("strata-qpbad-");
	char p[700];
	apptest_write(dir, "schemas/doc.sd", schema);
	snprintf(p, sizeof p, "%s/search", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/search/query-profiles", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/search/query-profiles/types", dir);
	mkdir(p, 0755);
	for (int i = 0; files[i]; i += 2)
		apptest_write(dir, files[i], files[i + 1]);
	struct strata *db = NULL;
	struct strata_error err;
	snprintf(p, sizeof p, "%s/data", dir);
	struct strata_options o = { .data_dir = p };
	int rc = strata_open(dir, &o, &db, &err);
	if (rc != code || !strstr(err.msg, where) || !strstr(err.msg, what))
		fail_msg("rc %d '%s', expected %d with '%s' and '%s'", rc, rc ? err.msg : "", code,
		         where, what);
	assert_null(db);
	apptest_remove(dir);
}

#define QP "search/query-profiles/"

static void test_deploy_errors(void **state)
{
	(void)state;
	bad_app((const char *[]){ QP "default.xml", "<query-profile id=\"default\">\n <field>",
	                          NULL },
	        STRATA_PARSE, QP "default.xml:2:", "no name");
	bad_app((const char *[]){ QP "default.xml",
	                          "<query-profile id=\"default\">\n <field name=\"a\">1</fild>\n",
	                          NULL },
	        STRATA_PARSE, QP "default.xml:2:", "mismatched tag");
	bad_app((const char *[]){ QP "default.xml",
	                          "<query-profile id=\"default\" inherits=\"gone\"/>", NULL },
	        STRATA_NOT_FOUND, QP "default.xml:1:1:", "inherits 'gone', which is not defined");
	bad_app((const char *[]){ QP "default.xml", "<query-profile id=\"default\" type=\"t\"/>",
	                          NULL },
	        STRATA_NOT_FOUND, QP "default.xml:1:1:", "type 't', which is not defined");
	bad_app((const char *[]){ QP "default.xml",
	                          "<query-profile id=\"default\">\n"
	                          "  <dimensions>region</dimensions>\n</query-profile>",
	                          NULL },
	        STRATA_NOT_IMPLEMENTED, QP "default.xml:2:3:", "variants are not supported");
	bad_app((const char *[]){ QP "default.xml",
	                          "<query-profile id=\"default\">\n"
	                          "  <query-profile for=\"us\"/>\n</query-profile>",
	                          NULL },
	        STRATA_NOT_IMPLEMENTED, QP "default.xml:2:3:", "variants are not supported");
	bad_app((const char *[]){ QP "default.xml", "<query-profile id=\"other\"/>", NULL },
	        STRATA_PARSE, QP "default.xml:1:1:", "must be named after it");
	bad_app((const char *[]){ QP "a.xml", "<query-profile id=\"a\" inherits=\"b\"/>", QP "b.xml",
	                          "<query-profile id=\"b\" inherits=\"a\"/>", NULL },
	        STRATA_INVALID_ARGUMENT, QP "a.xml:1:1:", "inherits or refers to itself");
	bad_app((const char *[]){ QP "types/t.xml",
	                          "<query-profile-type id=\"t\">\n"
	                          " <field name=\"n\" type=\"integer\"/>\n</query-profile-type>",
	                          QP "default.xml",
	                          "<query-profile id=\"default\" type=\"t\">\n"
	                          "  <field name=\"n\">ten</field>\n</query-profile>",
	                          NULL },
	        STRATA_INVALID_ARGUMENT, QP "default.xml:2:3:", "wants a 32-bit integer");
	bad_app((const char *[]){ QP "types/t.xml",
	                          "<query-profile-type id=\"t\">\n <strict/>\n</query-profile-type>",
	                          NULL },
	        STRATA_NOT_IMPLEMENTED, QP "types/t.xml:2:2:", "strict");
	bad_app((const char *[]){ QP "types/t.xml",
	                          "<query-profile-type id=\"t\">\n"
	                          " <field name=\"ranking.features.query(v)\" type=\"tensor(x[\"/>\n"
	                          "</query-profile-type>",
	                          NULL },
	        STRATA_PARSE, QP "types/t.xml:2:2:", "query(v): 'tensor(x[' is not a type");
	bad_app((const char *[]){ QP "default.xml",
	                          "<query-profile id=\"default\">\n"
	                          " <field name=\"yql\">select %{x</field>\n</query-profile>",
	                          NULL },
	        STRATA_PARSE, QP "default.xml:2:2:", "'%{' is not closed");
	bad_app((const char *[]){ QP "default.xml",
	                          "<query-profile id=\"default\">\n"
	                          " <field name=\"a\" hidden=\"true\">1</field>\n</query-profile>",
	                          NULL },
	        STRATA_NOT_IMPLEMENTED, QP "default.xml:2:2:", "<field hidden=...> is not supported");
	bad_app((const char *[]){ QP "default.xml", "<query-profile id=\"default:1.0\"/>", NULL },
	        STRATA_NOT_IMPLEMENTED, QP "default.xml:1:1:", "versioned ids");
	bad_app((const char *[]){ QP "default.xml",
	                          "<query-profile id=\"default\">\n"
	                          " <field name=\"u\"><ref>nobody</ref></field>\n</query-profile>",
	                          NULL },
	        STRATA_NOT_FOUND, QP "default.xml:2:2:", "query profile 'nobody'");
}

/* ---- services.xml's Java components --------------------------------------------------------- */

static void test_java_components(void **state)
{
	(void)state;
	char *dir = apptest_new("strata-qpjava-");
	char data[600];
	snprintf(data, sizeof data, "%s/data", dir);
	struct logs l = { 0 };
	struct strata_options o = { .data_dir = data, .log = log_cb, .log_ud = &l };
	struct strata *db;
	struct strata_error err;
	if (strata_deploy(APP, &o, &db, &err))
		fail_msg("%s", err.msg);
	strata_close(db);
	int java = 0;
	for (int i = 0; i < l.n; i++)
		java += strstr(l.msg[i], "is a Java component") != NULL;
	assert_int_equal(java, 3);
	assert_non_null(strstr(l.msg[0], APP "/services.xml:6:9: searcher 'ai.example.UserSearcher' "
	                                     "(bundle 'user-searcher', in chain 'user')"));
	assert_non_null(strstr(l.msg[0], "a single node without a JVM cannot run it"));
	assert_non_null(strstr(l.msg[1], "services.xml:10:5: component 'my.Component' "
	                                 "(class 'ai.example.MyComponent')"));
	assert_non_null(strstr(l.msg[2], "services.xml:15:9: documentprocessor 'ai.example.Dp'"));
	/* a profile's searchChain of Java searchers: told, and left out */
	assert_int_equal(l.notices, 1);
	assert_non_null(strstr(l.notice, QP "base.xml:4:5: query profile 'base': searchChain "
	                                 "'user' is a chain of Java components"));
	/* once: a later open of the deployed application is quiet */
	l.n = 0;
	o.must_be_deployed = 1;
	if (strata_open(APP, &o, &db, &err))
		fail_msg("%s", err.msg);
	for (int i = 0; i < l.n; i++)
		assert_null(strstr(l.msg[i], "Java component"));
	strata_close(db);
	apptest_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_default_profile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_choose_and_inherit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_substitution_and_types, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_parameter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mandatory, setup, teardown),
		cmocka_unit_test(test_deploy_errors),
		cmocka_unit_test(test_java_components),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
