/*
 * tool.c: the programs' own helpers (tool.h): malloc checked, a monotonic
 * clock, the "strata: ..." lines on stderr, and JSON read from
 * the command line or a request body.
 *
 * It is linked into the `strata` program only, never into the library,
 * and uses nothing of the library but strata.h's codes: the programs' own
 * memory is malloc's, kept apart from the library's allocator.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool.h"

/* ---- memory ----------------------------------------------------------------------------- */

void *tool_alloc(size_t n)
{
	return malloc(n ? n : 1);
}

void *tool_calloc(size_t count, size_t size)
{
	return count && size ? calloc(count, size) : malloc(1); /* calloc checks the product */
}

void *tool_realloc(void *p, size_t n)
{
	return realloc(p, n ? n : 1);
}

void tool_free(void *p)
{
	free(p);
}

char *tool_strndup(const char *s, size_t n)
{
	n = strnlen(s, n);
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

char *tool_strdup(const char *s)
{
	return s ? tool_strndup(s, strlen(s)) : NULL;
}

int tool_nomem(struct strata_error *err, const char *what)
{
	if (err) {
		err->code = STRATA_NOMEM;
		snprintf(err->msg, sizeof err->msg, "out of memory: %s", what);
	}
	return STRATA_NOMEM;
}

/* ---- time and text ------------------------------------------------------------------------ */

double tool_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- messages ------------------------------------------------------------------------------- */

int tool_vfail(const char *fmt, va_list ap)
{
	fputs("strata: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	return 1;
}

int tool_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tool_vfail(fmt, ap);
	va_end(ap);
	return 1;
}

void tool_log(void *ud, int level, const char *msg)
{
	(void)ud;
	(void)level; /* warnings and notices alike */
	fprintf(stderr, "strata: %s\n", msg);
}

/* ---- JSON ------------------------------------------------------------------------------------ */

json_t *tool_json_parse(const char *text, size_t len, size_t flags, json_error_t *je, int *oom)
{
	json_t *v = json_loadb(text, len, flags, je);
	*oom = !v && json_error_code(je) == json_error_out_of_memory;
	return v;
}

json_t *tool_input_value(const char *text)
{
	json_error_t je;
	int oom;
	json_t *v = tool_json_parse(text, strlen(text), JSON_DECODE_ANY, &je, &oom);
	return v || oom ? v : json_string(text);
}
