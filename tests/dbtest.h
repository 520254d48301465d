/*
 * dbtest.h: an application opened through the library's API for the tests
 * of the engine: made in /tmp (apptest.h), opened, fed, queried, its
 * documents read, closed and removed.  Failures fail the running cmocka
 * test.  Header-only, so that the tests of rank/ that link apptest.c do not
 * link the engine with it.
 */
#ifndef DBTEST_H
#define DBTEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../base/base.h"
#include "../include/strata.h"
#include "apptest.h"

/* A new application folder (apptest_new(prefix)) holding schemas/name with
 * the text sd.  Returns the folder (apptest_remove it). */
static inline char *dbtest_app(const char *prefix, const char *name, const char *sd)
{
	char *app = apptest_new(prefix);
	char path[256];
	snprintf(path, sizeof path, "schemas/%s", name);
	apptest_write(app, path, sd);
	return app;
}

/* Open the application at dir with strata_open into *db. */
static inline void dbtest_open_dir(const char *dir, struct strata **db)
{
	struct strata_error err = {0};
	if (strata_open(dir, NULL, db, &err) != 0)
		fail_msg("open %s: %s", dir, err.msg);
}

/* A new application folder (dbtest_app) opened into *db.  Returns the
 * folder (apptest_remove it after strata_close). */
static inline char *dbtest_open(const char *prefix, const char *name, const char *sd,
                                struct strata **db)
{
	char *app = dbtest_app(prefix, name, sd);
	dbtest_open_dir(app, db);
	return app;
}

/* Open the application at dir, expecting code and a message that contains
 * where and what (what may be NULL); then remove dir. */
static inline void dbtest_expect_open_error(char *dir, int code, const char *where,
                                            const char *what)
{
	struct strata *db = NULL;
	struct strata_error err = {0};
	int rc = strata_open(dir, NULL, &db, &err);
	if (rc != code || !strstr(err.msg, where) || (what && !strstr(err.msg, what)))
		fail_msg("got %d '%s'\n  wanted %d '%s' '%s'", rc, err.msg, code, where,
		         what ? what : "");
	strata_close(db);
	apptest_remove(dir);
}

/* An application open from a test's setup to its teardown.  A test's own
 * state may begin with one, to share dbtest_teardown. */
struct dbtest {
	char *dir; /* the application folder (apptest_new) */
	struct strata *db;
};

/* A cmocka teardown for a state (calloc'd) that begins with a struct
 * dbtest: closes its application, removes its folder, frees the state. */
static inline int dbtest_teardown(void **state)
{
	struct dbtest *t = *state;
	strata_close(t->db);
	apptest_remove(t->dir);
	free(t);
	return 0;
}

/* Feed the document operations of the file path into db. */
static inline void dbtest_feed(struct strata *db, const char *path)
{
	struct strata_feed_stats st;
	struct strata_error err = {0};
	if (strata_feed_file(db, path, NULL, NULL, &st, &err) != 0)
		fail_msg("feed %s: %s", path, err.msg);
}

/* Feed the one document operation op (Vespa document JSON) into db. */
static inline void dbtest_feed_json(struct strata *db, const char *op)
{
	struct strata_error err = {0};
	if (strata_feed_json(db, op, &err) != 0)
		fail_msg("%s: %s", op, err.msg);
}

/* Feed op into db, expecting code and a message that contains msg. */
static inline void dbtest_feed_fails(struct strata *db, const char *op, int code, const char *msg)
{
	struct strata_error err = {0};
	int rc = strata_feed_json(db, op, &err);
	if (rc != code || !strstr(err.msg, msg))
		fail_msg("%s: got %d '%s', expected %d '%s'", op, rc, err.msg, code, msg);
}

/* Free text jansson made (it comes from the allocator the library gave
 * jansson). */
static inline void dbtest_json_free(char *s)
{
	json_free_t fr;
	json_get_alloc_funcs(NULL, &fr);
	if (s)
		fr(s);
}

/* The fields of document id of db into *fields: compact JSON with sorted
 * keys, dumped with the further jansson flags (such as
 * JSON_REAL_PRECISION(15)), or NULL when it has none (dbtest_json_free
 * it).  Returns 0, or STRATA_NOT_FOUND when db holds no such document. */
static inline int dbtest_get_fields(struct strata *db, const char *id, size_t flags,
                                    char **fields)
{
	char *doc = NULL;
	struct strata_error err = {0};
	*fields = NULL;
	int rc = strata_get_json(db, id, &doc, &err);
	if (rc == STRATA_NOT_FOUND)
		return rc;
	if (rc != 0)
		fail_msg("get %s: %s", id, err.msg);
	json_t *j = json_loads(doc, 0, NULL);
	strata_free(doc);
	*fields = json_dumps(json_object_get(j, "fields"), JSON_COMPACT | JSON_SORT_KEYS | flags);
	json_decref(j);
	return 0;
}

/* The fields of document id, which db must hold (dbtest_get_fields). */
static inline char *dbtest_fields(struct strata *db, const char *id, size_t flags)
{
	char *s;
	if (dbtest_get_fields(db, id, flags, &s) != 0)
		fail_msg("get %s: no such document", id);
	return s;
}

/* Feed op into db with each of its allocations made to fail in turn, until
 * a run passes the last one: each failure must be STRATA_NOMEM with "out of
 * memory", give back all it took and leave the document id as it was
 * (absent, or with the same fields).  Returns the number of runs that
 * failed. */
static inline long dbtest_feed_failing(struct strata *db, const char *op, const char *id)
{
	char *before, *after;
	int had = dbtest_get_fields(db, id, 0, &before) == 0;
	long failures = 0;
	for (long k = 1; k < 100000; k++) {
		struct base_alloc_stats s0, s1;
		struct strata_error err = {0};
		base_alloc_stats(&s0);
		base_alloc_fail_after(k);
		int rc = strata_feed_json(db, op, &err);
		base_alloc_fail_after(0);
		base_alloc_stats(&s1);
		if (rc == 0) {
			dbtest_json_free(before);
			return failures;
		}
		if (rc != STRATA_NOMEM || !strstr(err.msg, "out of memory"))
			fail_msg("%s, allocation %ld: %d '%s'", op, k, rc, err.msg);
		if (s1.live_bytes != s0.live_bytes)
			fail_msg("%s, allocation %ld failed: %lld bytes kept", op, k,
			         (long long)(s1.live_bytes - s0.live_bytes));
		int has = dbtest_get_fields(db, id, 0, &after) == 0;
		if (has != had || !before != !after || (before && strcmp(before, after) != 0))
			fail_msg("%s, allocation %ld failed: %s was %s, is %s", op, k, id,
			         had ? before ? before : "without fields" : "absent",
			         has ? after ? after : "without fields" : "absent");
		dbtest_json_free(after);
		failures++;
	}
	fail_msg("%s: no run passed the last allocation", op);
	return 0;
}

/* The fields of document id (dbtest_fields with flags) must be want. */
static inline void dbtest_expect_fields(struct strata *db, const char *id, size_t flags,
                                        const char *want)
{
	char *s = dbtest_fields(db, id, flags);
	int same = s && strcmp(s, want) == 0;
	char got[2048];
	snprintf(got, sizeof got, "%s", s ? s : "nothing");
	dbtest_json_free(s);
	if (!same)
		fail_msg("%s: got %s\n  expected %s", id, got, want);
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

/* Run the search request req on db, expecting code, no result and a
 * message that contains msg. */
static inline void dbtest_query_fails(struct strata *db, const char *req, int code, const char *msg)
{
	char *out = NULL;
	struct strata_error err = {0};
	int rc = strata_query_json(db, req, &out, &err);
	if (rc != code || !strstr(err.msg, msg))
		fail_msg("%s: got %d '%s', expected %d '%s'", req, rc, err.msg, code, msg);
	assert_null(out);
}

/* Run the search request req on db with each of its allocations made to
 * fail in turn, until a run passes the last one: each failure must be
 * STRATA_NOMEM with "out of memory", give no result and give back all it
 * took.  Returns the result of the run that passed (strata_free it), and
 * the number of runs that failed in *failures. */
static inline char *dbtest_query_failing(struct strata *db, const char *req, long *failures)
{
	*failures = 0;
	for (long k = 1; k < 100000; k++) {
		struct base_alloc_stats s0, s1;
		struct strata_error err = {0};
		char *out = NULL;
		base_alloc_stats(&s0);
		base_alloc_fail_after(k);
		int rc = strata_query_json(db, req, &out, &err);
		base_alloc_fail_after(0);
		if (rc == 0)
			return out;
		base_alloc_stats(&s1);
		if (rc != STRATA_NOMEM || !strstr(err.msg, "out of memory"))
			fail_msg("%s, allocation %ld: %d '%s'", req, k, rc, err.msg);
		assert_null(out);
		if (s1.live_bytes != s0.live_bytes)
			fail_msg("%s, allocation %ld failed: %lld bytes kept", req, k,
			         (long long)(s1.live_bytes - s0.live_bytes));
		(*failures)++;
	}
	fail_msg("%s: no run passed the last allocation", req);
	return NULL;
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
