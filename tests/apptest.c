/*
 * apptest.c: application folders for the tests of rank/ (apptest.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "../rank/rank_eval.h"
#include "apptest.h"

char *apptest_new(const char *prefix)
{
	char tmpl[256];
	snprintf(tmpl, sizeof tmpl, "/tmp/%sXXXXXX", prefix);
	char *dir = mkdtemp(tmpl);
	assert_non_null(dir);
	char sub[512];
	snprintf(sub, sizeof sub, "%s/schemas", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(sub, sizeof sub, "%s/models", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	return strdup(dir);
}

void apptest_write(const char *dir, const char *name, const char *text)
{
	char path[1100];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

void apptest_remove(char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(dir);
}

struct rank_app *apptest_load(const char *dir)
{
	struct rank_app *app = NULL;
	struct strata_error err = { 0 };
	int rc = rank_app_load(dir, &app, &err);
	if (rc)
		fprintf(stderr, "load: %d %s\n", rc, err.msg);
	assert_int_equal(rc, 0);
	return app;
}

void apptest_expect_load_error(char *dir, int code, const char *where, const char *what)
{
	struct rank_app *app = NULL;
	struct strata_error err = { 0 };
	int rc = rank_app_load(dir, &app, &err);
	if (rc != code || !strstr(err.msg, where) || !strstr(err.msg, what))
		fprintf(stderr, "got %d '%s', wanted %d '%s' '%s'\n", rc, err.msg, code, where, what);
	assert_int_equal(rc, code);
	assert_non_null(strstr(err.msg, where));
	assert_non_null(strstr(err.msg, what));
	assert_null(app);
	apptest_remove(dir);
}

long apptest_load_failures(const char *dir)
{
	long failures = 0;
	for (long k = 1; k < 100000; k++) {
		struct rank_app *app = NULL;
		struct strata_error err = { 0 };
		base_alloc_fail_after(k);
		int rc = rank_app_load(dir, &app, &err);
		base_alloc_fail_after(0);
		rank_app_free(app);
		if (rc == 0)
			break; /* k passed the last allocation */
		if (rc != STRATA_NOMEM || !strstr(err.msg, "out of memory: "))
			fail_msg("allocation %ld: %d '%s'", k, rc, err.msg);
		assert_null(app);
		failures++;
	}
	return failures;
}

int apptest_eval(struct rank_profile *p, struct rank_query *q, const struct rank_docs *d,
                 const char *text, uint32_t lid, struct rank_val *v, const struct rank_type **t,
                 struct strata_error *err)
{
	struct rank_ast *a;
	int rc = rank_expr_parse("expr", text, &a, err);
	if (rc)
		return rc;
	static struct rank_prog prog; /* kept until the next call: results may point at it */
	rank_prog_release(&prog);
	rc = rank_expr_compile(p, a, &prog, err);
	if (rc == 0)
		rc = rank_query_eval(q, &prog, d, lid, 0.0, v, err);
	if (t)
		*t = &p->types[prog.result];
	rank_ast_free(a);
	return rc;
}
