/*
 * dbtest.h: an application opened through the library's API for the tests
 * of nearest-neighbour search: made in /tmp (apptest.h), fed, queried.
 * Failures fail the running cmocka test.  Header-only, so that the tests of
 * rank/ that link apptest.c do not link the engine with it.
 */
#ifndef DBTEST_H
#define DBTEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../engine/strata.h"
#include "apptest.h"

/* A new application folder (apptest_new(prefix)) holding schemas/name with
 * the text sd, opened with strata_open into *db.  Returns the folder
 * (apptest_remove it after strata_close). */
static inline char *dbtest_open(const char *prefix, const char *name, const char *sd,
                                struct strata **db)
{
	char *app = apptest_new(prefix);
	char path[256];
	snprintf(path, sizeof path, "schemas/%s", name);
	apptest_write(app, path, sd);
	struct strata_error err = {0};
	if (strata_open(app, NULL, db, &err) != 0)
		fail_msg("open %s: %s", app, err.msg);
	return app;
}

/* Feed the document operations of the file path into db. */
static inline void dbtest_feed(struct strata *db, const char *path)
{
	struct strata_feed_stats st;
	struct strata_error err = {0};
	if (strata_feed_file(db, path, NULL, NULL, &st, &err) != 0)
		fail_msg("feed %s: %s", path, err.msg);
}

/* Run the search request req (Vespa search JSON) on db: the result, parsed
 * (the caller json_decrefs it). */
static inline json_t *dbtest_query(struct strata *db, const char *req)
{
	char *out = NULL;
	struct strata_error err = {0};
	if (strata_query_json(db, req, &out, &err) != 0)
		fail_msg("query %s: %s", req, err.msg);
	json_t *j = json_loads(out, 0, NULL);
	assert_non_null(j);
	strata_free(out);
	return j;
}

/* A result's hits (root.children, borrowed from r). */
static inline json_t *dbtest_hits(json_t *r)
{
	return json_object_get(json_object_get(r, "root"), "children");
}

/* The number N of a hit's document id (id:ns:type::N). */
static inline int dbtest_hit_key(json_t *hit)
{
	const char *id = json_string_value(json_object_get(hit, "id"));
	assert_non_null(id);
	const char *p = strrchr(id, ':');
	assert_non_null(p);
	return atoi(p + 1);
}

#endif
