/*
 * err.c: the one way errors are reported.  A failing function fills the
 * caller's struct strata_error (when given) and returns the code in the same
 * statement: `return base_err(err, STRATA_PARSE, "%s:%d:%d: ...", ...)`.
 * strata_strerror() names every code, negative project codes and positive
 * errno values alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

const char *strata_strerror(int code)
{
	switch (code) {
	case STRATA_OK: return "success";
	case STRATA_ERROR: return "error";
	case STRATA_NOMEM: return "out of memory";
	case STRATA_INVALID_ARGUMENT: return "invalid argument";
	case STRATA_NOT_FOUND: return "not found";
	case STRATA_PARSE: return "syntax error";
	case STRATA_TYPE: return "type error";
	case STRATA_NOT_IMPLEMENTED: return "not implemented";
	case STRATA_INVALID_GRAPH: return "invalid graph";
	case STRATA_INVALID_PROTOBUF: return "invalid protobuf";
	case STRATA_CORRUPT: return "corrupt data";
	case STRATA_LIMIT: return "limit reached";
	case STRATA_STORE: return "store error";
	case STRATA_TXN_FAILED: return "transaction failed earlier";
	case STRATA_EXISTS: return "already exists";
	case STRATA_RUNTIME: return "model run failed";
	case STRATA_TIMEOUT: return "timed out";
	case STRATA_CONDITION_FAILED: return "condition not met";
	}
	if (code > 0)
		return strerror(code);
	return "unknown error code";
}

int base_verr(struct strata_error *err, int code, const char *fmt, va_list ap)
{
	if (err) {
		err->code = code;
		if (fmt)
			vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		else
			err->msg[0] = 0;
	}
	return code;
}

int base_err(struct strata_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	base_verr(err, code, fmt, ap);
	va_end(ap);
	return code;
}

int base_nomem(struct strata_error *err, const char *fmt, ...)
{
	if (!err)
		return STRATA_NOMEM;
	char what[STRATA_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return base_err(err, STRATA_NOMEM, "out of memory: %s", what);
}

void base_errs_add(struct strata_errors *list, const struct strata_error *e)
{
	if (!list)
		return;
	for (int i = 0; i < list->n; i++) /* one error found along several paths */
		if (list->e[i].code == e->code && strcmp(list->e[i].msg, e->msg) == 0)
			return;
	if (list->n < STRATA_MAX_ERRORS)
		list->e[list->n++] = *e;
	else
		list->dropped++;
}

int base_err_prefix(struct strata_error *err, int code, const char *fmt, ...)
{
	if (!err)
		return code;
	char head[STRATA_ERRMSG_MAX];
	char old[STRATA_ERRMSG_MAX];
	char both[2 * STRATA_ERRMSG_MAX + 2];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(head, sizeof head, fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof old);
	if (old[0])
		snprintf(both, sizeof both, "%s: %s", head, old);
	else
		snprintf(both, sizeof both, "%s", head);
	memcpy(err->msg, both, sizeof err->msg - 1);
	err->msg[sizeof err->msg - 1] = 0;
	if (err->code == 0)
		err->code = code;
	return err->code;
}

_Noreturn void base_assert_fail(const char *what, const char *file, int line)
{
	fprintf(stderr, "strata: assertion failed at %s:%d: %s\n", file, line, what);
	abort();
}
