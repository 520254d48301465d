/*
 * apptest.h: application folders for the tests of rank/: made in /tmp with
 * their schemas/ and models/ folders, filled with files, loaded expecting
 * an error, removed.  Failures fail the running cmocka test.
 */
#ifndef APPTEST_H
#define APPTEST_H

#include <stdint.h>

/* A new folder /tmp/<prefix>XXXXXX with empty schemas/ and models/ folders
 * (free with apptest_remove). */
char *apptest_new(const char *prefix);
/* Write text as the file dir/name (its folder must exist). */
void apptest_write(const char *dir, const char *name, const char *text);
/* Remove dir and all it holds, and free the string. */
void apptest_remove(char *dir);
/* Load the application at dir, which must load (the error is printed). */
struct rank_app *apptest_load(const char *dir);
/* Load the application at dir, expecting code and a message that contains
 * both where and what; then remove dir. */
void apptest_expect_load_error(char *dir, int code, const char *where, const char *what);
/* Load the application at dir with each of its allocations made to fail
 * in turn, until a load passes the last one: each failure must be
 * STRATA_NOMEM with "out of memory: " and no application.  Returns the
 * number of failures. */
long apptest_load_failures(const char *dir);

struct rank_profile;
struct rank_query;
struct rank_docs;
struct rank_val;
struct rank_type;
struct strata_error;
/* Parse text as an expression ("expr" its file), compile it against p and
 * evaluate it with q (a query of p) for document lid of d: *v its value, *t
 * (when t is not NULL) its type.  Both stay valid until the next call.
 * Returns 0 or the error's code (err says why). */
int apptest_eval(struct rank_profile *p, struct rank_query *q, const struct rank_docs *d,
                 const char *text, uint32_t lid, struct rank_val *v, const struct rank_type **t,
                 struct strata_error *err);

#endif
