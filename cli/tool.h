/*
 * tool.h: what the programs (the `strata` command in cli/, `strata serve` in
 * serve/) share beside the library: memory, a clock, messages on stderr,
 * JSON from the command line, and the commands' entry points.  It is part
 * of the programs, compiled into them and not into the library: the
 * programs reach the library through include/strata.h alone, and
 * jansson, which they link anyway.
 *
 *     char *s = tool_strndup(arg, n);
 *     if (!s)
 *         return tool_fail("out of memory");
 *     ...
 *     tool_free(s);
 *
 * Memory: the programs' own blocks come from malloc through the tool_
 * functions below, never from the library, and go back with tool_free().
 * What the library hands out (strata_query_json()'s result,
 * strata_json_dump()'s text, ...) goes back with strata_free().  JSON
 * values are jansson's, made and freed through jansson (whose allocator
 * the library sets: so a program never frees json_dumps()'s text itself,
 * and prints JSON with strata_json_dump()).
 *
 * Threads: everything here may be called from any thread.
 */
#ifndef TOOL_H
#define TOOL_H

#include <stdarg.h>
#include <stddef.h>

#include <jansson.h>

#include "../include/strata.h"

/* ---- memory (tool.c) ------------------------------------------------------------
 * malloc's, checked: each returns NULL when memory runs out or the size
 * overflows, and the caller says so. */

void *tool_alloc(size_t n);
/* count * size zeroed bytes. */
void *tool_calloc(size_t count, size_t size);
/* p (NULL: a new block) grown or shrunk to n bytes; on failure p is left
 * as it was. */
void *tool_realloc(void *p, size_t n);
/* NULL is ignored. */
void tool_free(void *p);
/* A copy of s (NULL for NULL). */
char *tool_strdup(const char *s);
/* A copy of the first n bytes of s, or of s up to its NUL when shorter. */
char *tool_strndup(const char *s, size_t n);
/* Describe a failed allocation in err (may be NULL), as the library does:
 * code STRATA_NOMEM, message "out of memory: WHAT".  Returns STRATA_NOMEM. */
int tool_nomem(struct strata_error *err, const char *what);

/* ---- time and text (tool.c) ------------------------------------------------------ */

/* Seconds on a monotonic clock (for durations, not dates). */
double tool_now(void);

/* ---- messages ------------------------------------------------------------------------ */

/* Print "strata: MSG" on stderr; returns 1, the exit code of a failure
 * (tool.c).  tool_vfail takes the arguments as a va_list. */
int tool_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int tool_vfail(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
/* Print "strata: MSG" and the usage of command cmd (NULL: the command
 * list) on stderr; returns 2, the exit code of a usage error (cli.c, which
 * knows every command's usage). */
int tool_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The library's log messages (strata_options.log): "strata: MSG" on
 * stderr (tool.c). */
void tool_log(void *ud, int level, const char *msg);

/* ---- JSON (tool.c) ------------------------------------------------------------------ */

/* Parse the len bytes at text with jansson (flags as json_loadb()'s:
 * JSON_DECODE_ANY for any value, 0 for an object or array).  The value, or
 * NULL with *oom = 1 when memory ran out, or NULL with *oom = 0 and the
 * reason, line and column in je when the text is not JSON. */
json_t *tool_json_parse(const char *text, size_t len, size_t flags, json_error_t *je, int *oom);
/* The value of a query input given as text (--input, a query parameter):
 * the JSON it is when it parses (a number, an array, a tensor object),
 * else the text as a string (a tensor literal such as {{x:0}:1}).  NULL
 * when out of memory. */
json_t *tool_input_value(const char *text);

/* ---- the commands ----------------------------------------------------------------------
 * argv[0] is the command's name; each returns the program's exit code. */

/* strata run MODEL [--input name=JSON ...] [--profile] (cli_run.c) */
int cli_cmd_run(int argc, char **argv);
/* strata inspect MODEL (cli_run.c) */
int cli_cmd_inspect(int argc, char **argv);
/* strata compile MODEL... [--embed] [--share] [--prefix P] [-o DIR] (cli_run.c) */
int cli_cmd_compile(int argc, char **argv);
/* strata serve APP [options] (serve/serve.c) */
int srv_cmd_serve(int argc, char **argv);
/* strata test PATH [--endpoint URL] [--app APP] (cli_test.c) */
int cli_cmd_test(int argc, char **argv);

#endif
