/*
 * appdir.h: application folders for the tests that load schemas from disk.
 */
#ifndef TESTS_APPDIR_H
#define TESTS_APPDIR_H

/* Write text into dir/name (the folder must exist); aborts the test on
 * failure. */
void appdir_write(const char *dir, const char *name, const char *text);
/* Remove dir and all it holds, then free(dir) (it came from strdup). */
void appdir_remove(char *dir);

#endif
