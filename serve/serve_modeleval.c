/*
 * serve_modeleval.c: /model-evaluation/v1/, Vespa's stateless model
 * evaluation API, on the library's strata_modeleval_* calls.
 *
 *   /model-evaluation/v1/                      the models: {"NAME": URL, ...}
 *   /model-evaluation/v1/MODEL                 {"model", "functions": [...]}
 *   /model-evaluation/v1/MODEL/FUNCTION        {"model", "function", "info",
 *                                              "eval", "arguments"}
 *   /model-evaluation/v1/MODEL[/FUNCTION]/eval the output tensor
 *
 * GET or POST, as Vespa's handler takes either.  The arguments are the
 * query parameters and, in a POST, the body: form parameters
 * (a=...&b=..., as Vespa reads a form body) or a JSON object of them (a
 * Strata extension: literal strings or JSON tensors).  format.tensors
 * chooses the output's form.  A function given as two path segments is
 * their names joined by '.', as Vespa joins them.  Errors are Vespa's:
 * {"error": MESSAGE} with 404 (no such API version, model, function or
 * argument; evaluation not enabled) or 400 (a bad or missing value, an
 * unknown format), 500 when a model cannot be loaded.
 *
 * The library's handle is opened on the first request and lives as long as
 * the process (the application does not change while it is served); an
 * open that failed answers every request with its error.  Links are
 * written as paths from the server's root ("/model-evaluation/v1/m"):
 * the request's Host is not at hand here.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "serve_int.h"

#define BASE_URL "/model-evaluation/v1/"
#define MAX_SEGMENTS 8

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct strata_modeleval *me; /* once opened */
static int open_rc;                 /* the open's failure, kept */
static struct strata_error open_err;

static void close_at_exit(void)
{
	strata_modeleval_close(me);
	me = NULL;
}

static void fail(struct srv_req *rq, int status, const char *msg)
{
	json_t *j = json_pack("{s:s}", "error", msg);
	char *s = j ? strata_json_dump(j, 0) : NULL;
	json_decref(j);
	srv_req_answer(rq, status, s, 1);
}

static void fail_rc(struct srv_req *rq, int rc, const struct strata_error *err)
{
	const char *msg = err->msg[0] ? err->msg : strata_strerror(rc);
	int status = rc == STRATA_NOT_FOUND ? 404
	             : rc == STRATA_INVALID_ARGUMENT || rc == STRATA_PARSE ? 400 : 500;
	fail(rq, status, msg);
}

static int open_once(struct srv *s, struct strata_error *err)
{
	pthread_mutex_lock(&open_lock);
	int rc = 0;
	if (!me && !open_rc) {
		rc = strata_modeleval_open(s->db, &me, &open_err);
		if (rc == 0)
			atexit(close_at_exit);
		else if (rc != STRATA_NOMEM)
			open_rc = rc; /* the application will not change: kept */
		else
			*err = open_err;
	}
	if (open_rc) {
		rc = open_rc;
		*err = open_err;
	}
	pthread_mutex_unlock(&open_lock);
	return rc;
}

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : isxdigit(c) ? (tolower(c) - 'a' + 10) : -1;
}

/* Decode a form value in place: '+' is a space, %XX a byte. */
static void form_decode(char *p)
{
	char *w = p;
	for (; *p; p++) {
		if (*p == '+') {
			*w++ = ' ';
		} else if (*p == '%' && hexval((unsigned char)p[1]) >= 0 &&
		           hexval((unsigned char)p[2]) >= 0) {
			*w++ = (char)(hexval((unsigned char)p[1]) * 16 + hexval((unsigned char)p[2]));
			p += 2;
		} else {
			*w++ = *p;
		}
	}
	*w = 0;
}

/* Put name -> v (consumed) into args; a name given twice is refused. */
static int add_arg(json_t *args, const char *name, json_t *v, char *why, size_t n)
{
	if (json_object_get(args, name)) {
		json_decref(v);
		snprintf(why, n, "'%.100s' is given twice (the URL and the body)", name);
		return -1;
	}
	if (!v || json_object_set_new(args, name, v)) {
		snprintf(why, n, "out of memory");
		return -1;
	}
	return 0;
}

/* The POST body's parameters into args: a JSON object, or form parameters. */
static int body_args(const struct srv_req *rq, json_t *args, char *why, size_t n)
{
	const char *p = rq->body;
	while (p && isspace((unsigned char)*p))
		p++;
	if (!p || !*p)
		return 0;
	if (*p == '{') {
		json_error_t je;
		json_t *j = json_loadb(rq->body, rq->len, 0, &je);
		if (!j) {
			snprintf(why, n, "the body is not JSON: %d:%d: %s", je.line, je.column, je.text);
			return -1;
		}
		const char *k;
		json_t *v;
		int rc = 0;
		json_object_foreach(j, k, v) {
			if (!rc)
				rc = add_arg(args, k, json_incref(v), why, n);
		}
		json_decref(j);
		return rc;
	}
	char *copy = tool_alloc(rq->len + 1);
	if (!copy) {
		snprintf(why, n, "out of memory");
		return -1;
	}
	memcpy(copy, rq->body, rq->len);
	copy[rq->len] = 0;
	int rc = 0;
	char *save = NULL;
	for (char *kv = strtok_r(copy, "&", &save); kv && !rc; kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		if (eq)
			*eq = 0;
		form_decode(kv);
		if (eq)
			form_decode(eq + 1);
		if (*kv)
			rc = add_arg(args, kv, json_string(eq ? eq + 1 : ""), why, n);
	}
	tool_free(copy);
	return rc;
}

static void evaluate(struct srv_req *rq, const char *model, const char *function)
{
	char why[256] = "";
	json_t *args = json_object();
	const char *k;
	json_t *v;
	int bad = !args;
	json_object_foreach(rq->args, k, v) {
		if (!bad && strcmp(k, "format.tensors"))
			bad = add_arg(args, k, json_incref(v), why, sizeof why);
	}
	if (!bad && rq->method == SRV_POST)
		bad = body_args(rq, args, why, sizeof why);
	/* format.tensors: from the URL, or a body that gave it */
	json_t *fv = json_object_get(args, "format.tensors");
	const char *format = json_string_value(json_object_get(rq->args, "format.tensors"));
	if (!bad && fv) {
		if (format || !json_is_string(fv)) {
			snprintf(why, sizeof why, "format.tensors is given twice, or is not a string");
			bad = 1;
		} else {
			format = json_string_value(fv);
		}
	}
	char *text = NULL;
	if (!bad && fv) {
		json_incref(fv);
		json_object_del(args, "format.tensors");
	}
	char *argtext = !bad ? strata_json_dump(args, 0) : NULL;
	if (bad || !argtext) {
		fail(rq, why[0] && strcmp(why, "out of memory") ? 400 : 500,
		     why[0] ? why : "out of memory");
	} else {
		struct strata_error err = { 0 };
		int rc = strata_modeleval_run(me, model, function, argtext, format, &text, &err);
		if (rc)
			fail_rc(rq, rc, &err);
		else
			srv_req_answer(rq, 200, text, 1);
	}
	if (!bad && fv)
		json_decref(fv);
	strata_free(argtext);
	json_decref(args);
}

/* The answer of rq, a path under /model-evaluation. */
static void route(struct srv *s, struct srv_req *rq)
{
	struct strata_error err = { 0 };
	int rc = open_once(s, &err);
	if (rc) { /* not enabled: no such API; else the application is at fault */
		fail(rq, rc == STRATA_NOT_FOUND ? 404 : 500, err.msg[0] ? err.msg : strata_strerror(rc));
		return;
	}
	/* The segments after "/model-evaluation/" */
	char path[4097];
	snprintf(path, sizeof path, "%s", rq->path + strlen("/model-evaluation"));
	char *seg[MAX_SEGMENTS], *save = NULL;
	int n = 0;
	for (char *t = strtok_r(path, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
		if (n == MAX_SEGMENTS) {
			fail(rq, 404, "unknown API: too many path segments");
			return;
		}
		seg[n++] = t;
	}
	if (n == 0 || strcasecmp(seg[0], "v1")) {
		fail(rq, 404, "unknown API version");
		return;
	}
	char *out = NULL;
	if (n == 1) {
		rc = strata_modeleval_list(me, BASE_URL, &out, &err);
	} else {
		int ev = -1;
		for (int i = n - 1; i >= 2 && ev < 0; i--)
			if (!strcasecmp(seg[i], "eval"))
				ev = i;
		int end = ev >= 0 ? ev : n;
		char function[4097] = "";
		for (int i = 2, off = 0; i < end; i++)
			off += snprintf(function + off, sizeof function - (size_t)off, "%s%s",
			                i > 2 ? "." : "", seg[i]);
		if (ev >= 0) {
			evaluate(rq, seg[1], function[0] ? function : NULL);
			return;
		}
		rc = strata_modeleval_describe(me, seg[1], function[0] ? function : NULL, BASE_URL,
		                               &out, &err);
	}
	if (rc)
		fail_rc(rq, rc, &err);
	else
		srv_req_answer(rq, 200, out, 1);
}

void srv_modeleval(struct srv *s, struct srv_req *rq)
{
	if (rq->method != SRV_GET && rq->method != SRV_POST)
		fail(rq, 405, "/model-evaluation/v1/ takes GET or POST");
	else
		route(s, rq);
}
