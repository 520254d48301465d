/*
 * apptest.h: application folders for the tests of rank/: made in /tmp with
 * their schemas/ and models/ folders, filled with files, loaded expecting
 * an error, removed.  Failures fail the running cmocka test.
 */
#ifndef APPTEST_H
#define APPTEST_H

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

#endif
