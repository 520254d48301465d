/*
 * cli_test.c: `strata test PATH [--endpoint URL] [--app APP]`: Vespa's
 * basic HTTP tests (the JSON files `vespa test` runs) against Strata.
 *
 * A test file is read and checked whole before any of its requests is
 * sent: its JSON, its keys, every body and parameters file it names, every
 * URI.  Then its steps run in order, each one request (http_client.h) and
 * the checks of its answer: the status code, and the expected body as a
 * template (every expected key present with a matching value, arrays
 * element by element, numbers within 1e-9 or 4 float ulps, the rest
 * exactly).  A test stops at its first failing step; the next file runs
 * all the same.  Without --endpoint the application is deployed into a
 * temporary data folder and `strata serve` (this program, run again) is
 * started on it on a free loopback port, and stopped and removed at the
 * end, so that the application's own store is never touched.
 *
 * Output: a line per step and one per test on stderr ("ok ..." or
 * "FAILED ...: the first mismatch"), and on stdout one JSON summary:
 * {"tests": N, "passed": P, "failed": F, "failures": [{"file", "test",
 * "step", "message"}]}.  Exit status 0 when every test passed, 1 when one
 * failed or could not run, 2 for a usage error.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http_client.h"
#include "tool.h"

#define MAX_TEST_FILE (64u << 20) /* the largest test, body or parameters file read */
#define STEP_TIMEOUT 600.0        /* seconds a request may take, as vespa test allows */
#define SHOW_MAX 2000             /* bytes of a response shown with a failure */

/* ---- growing strings ------------------------------------------------------------ */

struct sb {
	char *p;
	size_t n, cap;
	int oom;
};

static void sb_addn(struct sb *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t c = b->cap ? b->cap : 256;
		while (c < b->n + n + 1)
			c *= 2;
		char *q = tool_realloc(b->p, c);
		if (!q) {
			b->oom = 1;
			return;
		}
		b->p = q;
		b->cap = c;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

static void sb_add(struct sb *b, const char *s)
{
	sb_addn(b, s, strlen(s));
}

/* s percent-encoded for a query string (all but the unreserved characters). */
static void sb_add_encoded(struct sb *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
		    strchr("-._~", *c)) {
			sb_addn(b, (const char *)c, 1);
		} else {
			char e[3] = { '%', hex[*c >> 4], hex[*c & 15] };
			sb_addn(b, e, 3);
		}
	}
}

/* ---- errors ------------------------------------------------------------------------ */

static int fail(struct strata_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct strata_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	err->code = code;
	return code;
}

/* ---- files ----------------------------------------------------------------------- */

/* The whole file at path, NUL-terminated, in *out (tool_free) and its
 * length in *len; else an error naming the file. */
static int slurp(const char *path, char **out, size_t *len, struct strata_error *err)
{
	*out = NULL;
	FILE *f = fopen(path, "rb");
	if (!f)
		return fail(err, errno, "%s: %s", path, strerror(errno));
	struct sb b = { 0 };
	char chunk[65536];
	size_t r;
	while ((r = fread(chunk, 1, sizeof chunk, f)) > 0 && b.n <= MAX_TEST_FILE)
		sb_addn(&b, chunk, r);
	int e = ferror(f) ? errno : 0;
	fclose(f);
	if (e || b.oom || b.n > MAX_TEST_FILE) {
		tool_free(b.p);
		if (b.oom)
			return tool_nomem(err, path);
		if (e)
			return fail(err, e, "%s: %s", path, strerror(e));
		return fail(err, STRATA_LIMIT, "%s: over %u bytes", path, MAX_TEST_FILE);
	}
	if (!b.p)
		sb_add(&b, "");
	if (b.oom)
		return tool_nomem(err, path);
	*out = b.p;
	*len = b.n;
	return 0;
}

/* JSON text at path (any value), or an error "path:line:column: ...". */
static json_t *load_json(const char *path, const char *text, size_t len, struct strata_error *err)
{
	json_error_t je;
	int oom;
	json_t *j = tool_json_parse(text, len, JSON_DECODE_ANY, &je, &oom);
	if (!j) {
		if (oom)
			tool_nomem(err, path);
		else
			fail(err, STRATA_PARSE, "%s:%d:%d: not JSON: %s", path, je.line, je.column, je.text);
	}
	return j;
}

static int is_dir(const char *p)
{
	struct stat st;
	return !stat(p, &st) && S_ISDIR(st.st_mode);
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);
	return n >= t && !strcmp(s + n - t, tail);
}

/* dir/name as a new string (NULL: out of memory). */
static char *join(const char *dir, const char *name)
{
	struct sb b = { 0 };
	sb_add(&b, dir);
	if (b.n && b.p[b.n - 1] != '/')
		sb_add(&b, "/");
	sb_add(&b, name);
	if (b.oom) {
		tool_free(b.p);
		return NULL;
	}
	return b.p;
}

/* The folder of path (new string), "." when it has none. */
static char *dir_of(const char *path)
{
	const char *s = strrchr(path, '/');
	if (!s)
		return tool_strdup(".");
	return tool_strndup(path, s == path ? 1 : (size_t)(s - path));
}

/* ---- a test, read and checked -------------------------------------------------------- */

struct step {
	char *name;        /* "step N" or "step N: NAME" */
	const char *method;
	char *target;      /* path and query (relative) or the whole URL (absolute) */
	int absolute;
	char *body;        /* the request's body, or NULL */
	size_t blen;
	char **headers;    /* "Name: value" lines, NULL-terminated */
	int code;          /* the status expected */
	json_t *expect;    /* the body expected (a template), or NULL */
};

struct test {
	const char *file;
	char *dir;         /* where its relative file references start */
	char *name;
	int nsteps;
	struct step *steps;
};

static void test_free(struct test *t)
{
	for (int i = 0; i < t->nsteps; i++) {
		struct step *s = &t->steps[i];
		tool_free(s->name);
		tool_free(s->target);
		tool_free(s->body);
		for (char **h = s->headers; h && *h; h++)
			tool_free(*h);
		tool_free(s->headers);
		json_decref(s->expect);
	}
	tool_free(t->steps);
	tool_free(t->dir);
	tool_free(t->name);
	memset(t, 0, sizeof *t);
}

/* Refuse a key of obj that is not in allowed ("comment" is always allowed:
 * Vespa's tests use it for notes). */
static int keys_ok(const char *file, const char *where, json_t *obj, const char *const *allowed,
                   struct strata_error *err)
{
	const char *k;
	json_t *v;
	json_object_foreach(obj, k, v) {
		int known = !strcmp(k, "comment");
		for (const char *const *a = allowed; *a && !known; a++)
			known = !strcmp(*a, k);
		if (!known)
			return fail(err, STRATA_INVALID_ARGUMENT, "%s: %s: unknown key \"%s\"", file, where, k);
	}
	(void)v;
	return 0;
}

/* A file reference of a test (a body or parameters file): refused when
 * absolute; else its path from the test's folder in *path. */
static int file_ref(const struct test *t, const char *where, const char *ref, char **path,
                    struct strata_error *err)
{
	*path = NULL;
	if (!*ref)
		return fail(err, STRATA_INVALID_ARGUMENT, "%s: %s: an empty file name", t->file, where);
	if (ref[0] == '/')
		return fail(err, STRATA_INVALID_ARGUMENT,
		            "%s: %s: \"%s\": a file must be given relative to the test's folder", t->file,
		            where, ref);
	*path = join(t->dir, ref);
	return *path ? 0 : tool_nomem(err, "a path");
}

/* Parameters (an object of strings, or the name of a file holding one):
 * a new object in *out. */
static int read_params(const struct test *t, const char *where, json_t *v, json_t **out,
                       struct strata_error *err)
{
	*out = NULL;
	json_t *obj = v;
	char *path = NULL;
	if (json_is_string(v)) {
		char *text;
		size_t len;
		int rc = file_ref(t, where, json_string_value(v), &path, err);
		if (!rc && (rc = slurp(path, &text, &len, err)) != 0)
			fail(err, rc, "%s: %s: cannot read the parameters file %s: %s", t->file, where, path,
			     strerror(rc > 0 ? rc : ENOENT));
		if (rc) {
			tool_free(path);
			return rc;
		}
		obj = load_json(path, text, len, err);
		tool_free(text);
		if (!obj) {
			tool_free(path);
			return err->code;
		}
	} else {
		json_incref(obj);
	}
	int rc = 0;
	if (!json_is_object(obj)) {
		rc = fail(err, STRATA_INVALID_ARGUMENT, "%s: %s: parameters must be an object of strings",
		          path ? path : t->file, where);
	} else {
		const char *k;
		json_t *pv;
		json_object_foreach(obj, k, pv) {
			if (!json_is_string(pv)) {
				rc = fail(err, STRATA_INVALID_ARGUMENT,
				          "%s: %s: parameter \"%s\" must be a string (as in a URL)",
				          path ? path : t->file, where, k);
				break;
			}
		}
	}
	tool_free(path);
	if (rc) {
		json_decref(obj);
		return rc;
	}
	*out = obj;
	return 0;
}

/* Whether the query string of uri names parameter name. */
static int uri_has_param(const char *uri, const char *name)
{
	const char *q = strchr(uri, '?');
	size_t n = strlen(name);
	while (q) {
		q++;
		if (!strncmp(q, name, n) && (q[n] == '=' || q[n] == '&' || !q[n]))
			return 1;
		q = strchr(q, '&');
	}
	return 0;
}

/* The method m names, as a static string, or NULL when it is none. */
static const char *method_of(const char *m)
{
	static const char *const ms[] = { "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS" };
	for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
		if (!strcmp(ms[i], m))
			return ms[i];
	return NULL;
}

/* Step i of test t from its JSON s, over the defaults' parameters dparams. */
static int read_step(struct test *t, int i, json_t *s, json_t *dparams, int production,
                     struct strata_error *err)
{
	struct step *st = &t->steps[i];
	char where[64];
	snprintf(where, sizeof where, "step %d", i + 1);
	if (!json_is_object(s))
		return fail(err, STRATA_INVALID_ARGUMENT, "%s: %s: a step is a JSON object", t->file, where);
	static const char *const step_keys[] = { "name", "request", "response", NULL };
	int rc = keys_ok(t->file, where, s, step_keys, err);
	if (rc)
		return rc;
	json_t *name = json_object_get(s, "name");
	if (name && !json_is_string(name))
		return fail(err, STRATA_INVALID_ARGUMENT, "%s: %s: \"name\" must be a string", t->file,
		            where);
	struct sb nb = { 0 };
	sb_add(&nb, where);
	if (name && *json_string_value(name)) {
		sb_add(&nb, ": ");
		sb_add(&nb, json_string_value(name));
	}
	if (nb.oom)
		return tool_nomem(err, "a step");
	st->name = nb.p;

	json_t *rq = json_object_get(s, "request");
	json_t *rs = json_object_get(s, "response");
	if (!rq)
		rq = json_object(); /* every part of a request has a default */
	else
		json_incref(rq);
	if (!rq)
		return tool_nomem(err, "a step");
	json_t *params = NULL;
	struct sb url = { 0 };
	rc = 0;
	static const char *const rq_keys[] = { "cluster", "method", "uri", "headers", "parameters",
		                                   "body", NULL };
	static const char *const rs_keys[] = { "code", "body", NULL };
	json_t *v;
	if (!json_is_object(rq)) {
		rc = fail(err, STRATA_INVALID_ARGUMENT, "%s: %s: \"request\" must be an object", t->file,
		          where);
		goto done;
	}
	if ((rc = keys_ok(t->file, where, rq, rq_keys, err)) != 0)
		goto done;
	if ((v = json_object_get(rq, "cluster")) && !json_is_string(v)) {
		rc = fail(err, STRATA_INVALID_ARGUMENT, "%s: %s: \"cluster\" must be a string", t->file,
		          where);
		goto done;
	}
	/* method */
	st->method = "GET";
	if ((v = json_object_get(rq, "method")) != NULL) {
		if (!json_is_string(v) || !(st->method = method_of(json_string_value(v)))) {
			rc = fail(err, STRATA_INVALID_ARGUMENT,
			          "%s: %s: \"method\" must be one of GET, POST, PUT, DELETE, PATCH, HEAD, "
			          "OPTIONS", t->file, where);
			goto done;
		}
	}
	/* uri */
	const char *uri = "/search/";
	if ((v = json_object_get(rq, "uri")) != NULL) {
		if (!json_is_string(v)) {
			rc = fail(err, STRATA_INVALID_ARGUMENT, "%s: %s: \"uri\" must be a string", t->file,
			          where);
			goto done;
		}
		uri = json_string_value(v);
	}
	if (uri[0] == '/') {
		if (production) {
			rc = fail(err, STRATA_INVALID_ARGUMENT,
			          "%s: %s: a production test may not send requests to the application "
			          "(\"uri\" %s is a path)", t->file, where, uri);
			goto done;
		}
	} else {
		char *h, *p;
		const char *path;
		struct strata_error ue = { 0 };
		if (http_url_split(uri, &h, &p, &path, &ue)) {
			rc = fail(err, ue.code, "%s: %s: \"uri\": %s%s", t->file, where, ue.msg,
			          ue.code == STRATA_INVALID_ARGUMENT
			                  ? " (give a path such as /search/, or an http:// URL)" : "");
			goto done;
		}
		tool_free(h);
		tool_free(p);
		st->absolute = 1;
	}
	if (strpbrk(uri, " \r\n\t")) {
		rc = fail(err, STRATA_INVALID_ARGUMENT, "%s: %s: \"uri\" must be encoded (it holds a "
		          "space or a line break)", t->file, where);
		goto done;
	}
	/* parameters: the step's, then the defaults' the step and the URI lack */
	if ((v = json_object_get(rq, "parameters")) != NULL) {
		if ((rc = read_params(t, where, v, &params, err)) != 0)
			goto done;
	}
	sb_add(&url, uri);
	char sep = strchr(uri, '?') ? '&' : '?';
	const char *k;
	json_t *pv;
	for (int pass = 0; pass < 2; pass++) {
		json_t *from = pass ? dparams : params;
		json_object_foreach(from, k, pv) {
			if (pass && ((params && json_object_get(params, k)) || uri_has_param(uri, k)))
				continue;
			sb_addn(&url, &sep, 1);
			sb_add_encoded(&url, k);
			sb_add(&url, "=");
			sb_add_encoded(&url, json_string_value(pv));
			sep = '&';
		}
	}
	if (url.oom) {
		rc = tool_nomem(err, "a URL");
		goto done;
	}
	st->target = url.p;
	url.p = NULL;
	/* headers */
	json_t *hs = json_object_get(rq, "headers");
	if (hs && !json_is_object(hs)) {
		rc = fail(err, STRATA_INVALID_ARGUMENT, "%s: %s: \"headers\" must be an object of strings",
		          t->file, where);
		goto done;
	}
	size_t nh = hs ? json_object_size(hs) : 0;
	st->headers = tool_calloc(nh + 2, sizeof *st->headers);
	if (!st->headers) {
		rc = tool_nomem(err, "headers");
		goto done;
	}
	int has_type = 0;
	size_t hi = 0;
	json_object_foreach(hs, k, pv) {
		const char *hv = json_string_value(pv);
		if (!hv || !*k || strpbrk(k, ": \r\n") || strpbrk(hv, "\r\n")) {
			rc = fail(err, STRATA_INVALID_ARGUMENT,
			          "%s: %s: header \"%s\" must be a name and a string value on one line",
			          t->file, where, k);
			goto done;
		}
		struct sb hb = { 0 };
		sb_add(&hb, k);
		sb_add(&hb, ": ");
		sb_add(&hb, hv);
		if (hb.oom) {
			rc = tool_nomem(err, "headers");
			goto done;
		}
		st->headers[hi++] = hb.p;
		has_type |= !strcasecmp(k, "Content-Type");
	}
	if (!has_type && !(st->headers[hi] = tool_strdup("Content-Type: application/json"))) {
		rc = tool_nomem(err, "headers");
		goto done;
	}
	/* the request's body: inline JSON or a file, sent as it is */
	if ((v = json_object_get(rq, "body")) != NULL) {
		if (json_is_string(v)) {
			char *path;
			if ((rc = file_ref(t, where, json_string_value(v), &path, err)) != 0)
				goto done;
			rc = slurp(path, &st->body, &st->blen, err);
			if (rc && rc != STRATA_NOMEM)
				fail(err, rc, "%s: %s: cannot read the body file %s: %s", t->file, where, path,
				     rc > 0 ? strerror(rc) : err->msg);
			tool_free(path);
			if (rc)
				goto done;
		} else if (json_is_object(v) || json_is_array(v)) {
			char *text = strata_json_dump(v, 0);
			if (!text || !(st->body = tool_strdup(text))) {
				strata_free(text);
				rc = tool_nomem(err, "a body");
				goto done;
			}
			strata_free(text);
			st->blen = strlen(st->body);
		} else {
			rc = fail(err, STRATA_INVALID_ARGUMENT,
			          "%s: %s: the request's \"body\" must be JSON (an object) or a file name",
			          t->file, where);
			goto done;
		}
	}
	/* the response expected */
	st->code = 200;
	if (rs) {
		if (!json_is_object(rs)) {
			rc = fail(err, STRATA_INVALID_ARGUMENT, "%s: %s: \"response\" must be an object",
			          t->file, where);
			goto done;
		}
		if ((rc = keys_ok(t->file, where, rs, rs_keys, err)) != 0)
			goto done;
		if ((v = json_object_get(rs, "code")) != NULL) {
			if (!json_is_integer(v) || json_integer_value(v) < 100 ||
			    json_integer_value(v) > 999) {
				rc = fail(err, STRATA_INVALID_ARGUMENT,
				          "%s: %s: the response's \"code\" must be an HTTP status (100-999)",
				          t->file, where);
				goto done;
			}
			st->code = (int)json_integer_value(v);
		}
		if ((v = json_object_get(rs, "body")) != NULL) {
			if (json_is_string(v)) {
				char *path, *text;
				size_t len;
				if ((rc = file_ref(t, where, json_string_value(v), &path, err)) != 0)
					goto done;
				rc = slurp(path, &text, &len, err);
				if (rc && rc != STRATA_NOMEM)
					fail(err, rc, "%s: %s: cannot read the response body file %s: %s", t->file,
					     where, path, rc > 0 ? strerror(rc) : err->msg);
				if (!rc) {
					st->expect = load_json(path, text, len, err);
					tool_free(text);
					if (!st->expect)
						rc = err->code;
				}
				tool_free(path);
				if (rc)
					goto done;
			} else {
				st->expect = json_incref(v);
			}
		}
	}
done:
	tool_free(url.p);
	json_decref(params);
	json_decref(rq);
	return rc;
}

/* Read and check the test in file (into *t, which test_free() clears). */
static int test_read(const char *file, struct test *t, struct strata_error *err)
{
	memset(t, 0, sizeof *t);
	t->file = file;
	char *text;
	size_t len;
	int rc = slurp(file, &text, &len, err);
	if (rc)
		return rc;
	json_t *j = load_json(file, text, len, err);
	tool_free(text);
	if (!j)
		return err->code;
	json_t *dparams = NULL;
	if (!(t->dir = dir_of(file))) {
		rc = tool_nomem(err, "a path");
		goto done;
	}
	if (!json_is_object(j)) {
		rc = fail(err, STRATA_INVALID_ARGUMENT, "%s: a test is a JSON object", file);
		goto done;
	}
	static const char *const test_keys[] = { "name", "defaults", "steps", NULL };
	if ((rc = keys_ok(file, "the test", j, test_keys, err)) != 0)
		goto done;
	json_t *v = json_object_get(j, "name");
	if (v && !json_is_string(v)) {
		rc = fail(err, STRATA_INVALID_ARGUMENT, "%s: \"name\" must be a string", file);
		goto done;
	}
	const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	t->name = tool_strdup(v && *json_string_value(v) ? json_string_value(v) : base);
	if (!t->name) {
		rc = tool_nomem(err, "a test");
		goto done;
	}
	json_t *d = json_object_get(j, "defaults");
	if (d) {
		static const char *const d_keys[] = { "cluster", "parameters", NULL };
		if (!json_is_object(d)) {
			rc = fail(err, STRATA_INVALID_ARGUMENT, "%s: \"defaults\" must be an object", file);
			goto done;
		}
		if ((rc = keys_ok(file, "defaults", d, d_keys, err)) != 0)
			goto done;
		if ((v = json_object_get(d, "cluster")) && !json_is_string(v)) {
			rc = fail(err, STRATA_INVALID_ARGUMENT, "%s: defaults: \"cluster\" must be a string",
			          file);
			goto done;
		}
		if ((v = json_object_get(d, "parameters")) &&
		    (rc = read_params(t, "defaults", v, &dparams, err)) != 0)
			goto done;
	}
	json_t *steps = json_object_get(j, "steps");
	if (!json_is_array(steps) || !json_array_size(steps)) {
		rc = fail(err, STRATA_INVALID_ARGUMENT, "%s: a test needs \"steps\", a non-empty array",
		          file);
		goto done;
	}
	size_t n = json_array_size(steps);
	if (n > 100000) {
		rc = fail(err, STRATA_LIMIT, "%s: over 100000 steps", file);
		goto done;
	}
	t->steps = tool_calloc(n, sizeof *t->steps);
	if (!t->steps) {
		rc = tool_nomem(err, "steps");
		goto done;
	}
	/* a production test may only call other services (Vespa's rule) */
	size_t dl = strlen(t->dir);
	int production = ends_with(t->dir, "production-test") &&
	                 (dl == 15 || t->dir[dl - 16] == '/');
	for (size_t i = 0; i < n && !rc; i++) {
		t->nsteps = (int)i + 1;
		rc = read_step(t, (int)i, json_array_get(steps, i), dparams, production, err);
	}
done:
	json_decref(dparams);
	json_decref(j);
	return rc;
}

/* ---- matching ------------------------------------------------------------------------ */

/* v as compact JSON, cut at 300 bytes, into b. */
static void sb_add_json(struct sb *b, const json_t *v)
{
	char *s = strata_json_dump(v, 0);
	if (!s) {
		b->oom = 1;
		return;
	}
	size_t n = strlen(s);
	sb_addn(b, s, n > 300 ? 300 : n);
	if (n > 300)
		sb_add(b, "...");
	strata_free(s);
}

static const char *kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER:
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

/* Whether actual matches the template expected; when not, the first
 * mismatch is described in *why, its place (a JSON pointer) in path. */
static int match(const json_t *e, const json_t *a, struct sb *path, struct sb *why)
{
	const char *at = path->n ? path->p : "/";
	if (json_is_number(e) && json_is_number(a)) {
		double u = json_number_value(e), w = json_number_value(a), d = fabs(u - w);
		if (d < 1e-9 || (u != 0 && d <= fabs(u) * 4 * FLT_EPSILON))
			return 1;
	} else if (json_typeof(e) != json_typeof(a) &&
	           !(json_is_boolean(e) && json_is_boolean(a))) {
		sb_add(why, "Unexpected type at ");
		sb_add(why, at);
		sb_add(why, ": expected ");
		sb_add(why, kind(e));
		sb_add(why, " ");
		sb_add_json(why, e);
		sb_add(why, ", actual ");
		sb_add(why, kind(a));
		sb_add(why, " ");
		sb_add_json(why, a);
		return 0;
	} else if (json_is_object(e)) {
		const char *k;
		json_t *ev;
		json_object_foreach((json_t *)e, k, ev) {
			size_t mark = path->n;
			sb_add(path, "/");
			for (const char *c = k; *c; c++)
				sb_add(path, *c == '~' ? "~0" : *c == '/' ? "~1" : (char[2]){ *c, 0 });
			json_t *av = json_object_get(a, k);
			if (!av) {
				sb_add(why, "Missing expected field at ");
				sb_add(why, path->p);
				return 0;
			}
			if (!match(ev, av, path, why))
				return 0;
			path->n = mark;
			if (path->p)
				path->p[mark] = 0;
		}
		return 1;
	} else if (json_is_array(e)) {
		size_t n = json_array_size(e);
		if (n != json_array_size(a)) {
			char num[64];
			snprintf(num, sizeof num, ": expected %zu, actual %zu", n, json_array_size(a));
			sb_add(why, "Unexpected number of elements at ");
			sb_add(why, at);
			sb_add(why, num);
			return 0;
		}
		for (size_t i = 0; i < n; i++) {
			size_t mark = path->n;
			char num[32];
			snprintf(num, sizeof num, "/%zu", i);
			sb_add(path, num);
			if (!match(json_array_get(e, i), json_array_get(a, i), path, why))
				return 0;
			path->n = mark;
			if (path->p)
				path->p[mark] = 0;
		}
		return 1;
	} else if (json_equal((json_t *)e, (json_t *)a)) {
		return 1; /* strings, booleans, null */
	}
	sb_add(why, "Unexpected value at ");
	sb_add(why, at);
	sb_add(why, ": expected ");
	sb_add_json(why, e);
	sb_add(why, ", actual ");
	sb_add_json(why, a);
	return 0;
}

/* ---- running -------------------------------------------------------------------------- */

/* Set by the first SIGINT or SIGTERM: the run stops after the request in
 * flight, stops its server and removes its folder; a second one kills. */
static volatile sig_atomic_t interrupted;


/* Run step s against base (the endpoint, no trailing '/').  1: passed; 0:
 * failed, the reason in *why and what the answer was in *detail. */
static int run_step(const struct step *s, const char *base, struct sb *why, struct sb *detail)
{
	struct sb url = { 0 };
	if (!s->absolute)
		sb_add(&url, base);
	sb_add(&url, s->target);
	if (url.oom) {
		sb_add(why, "out of memory");
		return 0;
	}
	struct http_response r;
	struct strata_error err = { 0 };
	int rc = http_fetch(s->method, url.p, (const char *const *)s->headers, s->body, s->blen,
	                    STEP_TIMEOUT, &r, &err);
	tool_free(url.p);
	if (rc) {
		sb_add(why, err.msg[0] ? err.msg : strata_strerror(rc));
		return 0;
	}
	int ok = 1;
	json_t *actual = NULL;
	if (r.status != s->code) {
		char m[96];
		snprintf(m, sizeof m, "Unexpected status code: expected %d, actual %d", s->code,
		         r.status);
		sb_add(why, m);
		ok = 0;
	} else if (s->expect) {
		json_error_t je;
		int oom;
		actual = tool_json_parse(r.body, r.len, JSON_DECODE_ANY, &je, &oom);
		if (!actual) {
			char m[256];
			snprintf(m, sizeof m, "the response is not JSON (line %d, column %d: %s)", je.line,
			         je.column, je.text);
			sb_add(why, oom ? "out of memory" : m);
			ok = 0;
		} else {
			struct sb path = { 0 };
			ok = match(s->expect, actual, &path, why);
			tool_free(path.p);
			if (path.oom || why->oom)
				ok = 0;
		}
	}
	if (!ok) {
		sb_addn(detail, r.body, r.len > SHOW_MAX ? SHOW_MAX : r.len);
		if (r.len > SHOW_MAX)
			sb_add(detail, "...");
	}
	json_decref(actual);
	http_response_free(&r);
	return ok;
}

/* What a target looks like in a step's line: cut at 160 bytes. */
static void show_target(const struct step *s)
{
	size_t n = strlen(s->target);
	fprintf(stderr, "%s %.*s%s", s->method, (int)(n > 160 ? 160 : n), s->target,
	        n > 160 ? "..." : "");
}

struct tally {
	int tests, passed;
	json_t *failures;
};

static void record_failure(struct tally *ty, const char *file, const char *test, int step,
                           const char *msg)
{
	json_t *f = json_pack("{s:s, s:s?, s:i, s:s}", "file", file, "test", test, "step", step,
	                      "message", msg);
	if (f)
		json_array_append_new(ty->failures, f);
}

/* Run the test in file against base; the outcome goes into ty. */
static void run_test(const char *file, const char *base, struct tally *ty)
{
	struct test t;
	struct strata_error err = { 0 };
	ty->tests++;
	if (test_read(file, &t, &err)) {
		fprintf(stderr, "FAILED %s\n", err.msg); /* the message names the file */
		record_failure(ty, file, t.name, 0, err.msg);
		test_free(&t);
		return;
	}
	fprintf(stderr, "test %s (%s)\n", file, t.name);
	int ok = 1;
	int i;
	for (i = 0; i < t.nsteps && ok && !interrupted; i++) {
		const struct step *s = &t.steps[i];
		struct sb why = { 0 }, detail = { 0 };
		fprintf(stderr, "  %s: ", s->name);
		show_target(s);
		ok = run_step(s, base, &why, &detail);
		if (ok) {
			fprintf(stderr, ": ok\n");
		} else {
			const char *w = why.oom ? "out of memory" : why.p ? why.p : "failed";
			fprintf(stderr, ": FAILED\n    %s\n", w);
			if (s->target && strlen(s->target) > 160)
				fprintf(stderr, "    request: %s %s\n", s->method, s->target);
			if (detail.p)
				fprintf(stderr, "    response: %s\n", detail.p);
			fprintf(stderr, "FAILED %s (%s): %s: %s\n", file, t.name, s->name, w);
			record_failure(ty, file, t.name, i + 1, w);
		}
		tool_free(why.p);
		tool_free(detail.p);
	}
	if (ok && i < t.nsteps) {
		fprintf(stderr, "FAILED %s (%s): interrupted before step %d\n", file, t.name, i + 1);
		record_failure(ty, file, t.name, i + 1, "interrupted");
	} else if (ok) {
		fprintf(stderr, "ok %s (%s): %d step%s\n", file, t.name, t.nsteps,
		        t.nsteps == 1 ? "" : "s");
		ty->passed++;
	}
	test_free(&t);
}

/* ---- the tests to run, and the application -------------------------------------------- */

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.json files directly in dir, in name order (tool_free each and the
 * array); *n 0 when there are none. */
static int list_json(const char *dir, char ***out, int *n)
{
	*out = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return errno;
	struct dirent *e;
	int cap = 0, rc = 0;
	char **v = NULL;
	while ((e = readdir(d)) != NULL) {
		if (!ends_with(e->d_name, ".json") || e->d_name[0] == '.')
			continue;
		char *p = join(dir, e->d_name);
		struct stat st;
		if (p && (stat(p, &st) || !S_ISREG(st.st_mode))) {
			tool_free(p);
			continue;
		}
		if (p && *n == cap) {
			cap = cap ? cap * 2 : 16;
			char **nv = tool_realloc(v, (size_t)cap * sizeof *v);
			if (!nv) {
				tool_free(p);
				p = NULL;
			} else {
				v = nv;
			}
		}
		if (!p) {
			rc = STRATA_NOMEM;
			break;
		}
		v[(*n)++] = p;
	}
	closedir(d);
	if (rc) {
		for (int i = 0; i < *n; i++)
			tool_free(v[i]);
		tool_free(v);
		*n = 0;
		return rc;
	}
	if (*n)
		qsort(v, (size_t)*n, sizeof *v, cmp_names);
	*out = v;
	return 0;
}

/* The application of the tests in folder dir: the folder above the
 * nearest "tests" folder holding it (for APP/src/test/application/tests,
 * APP/src/main/application when it exists).  A new string, or NULL. */
static char *app_of(const char *dir)
{
	char real[PATH_MAX];
	if (!realpath(dir, real))
		return NULL;
	for (;;) {
		char *s = strrchr(real, '/');
		if (!s || s == real)
			return NULL;
		int tests = !strcmp(s + 1, "tests");
		*s = 0;
		if (!tests)
			continue;
		if (ends_with(real, "/src/test/application")) {
			char *main = tool_strdup(real);
			if (!main)
				return NULL;
			strcpy(main + strlen(main) - strlen("test/application"), "main/application");
			if (is_dir(main))
				return main;
			tool_free(main);
		}
		return tool_strdup(real);
	}
}

/* ---- the server ----------------------------------------------------------------------- */

struct server {
	pid_t pid;
	char tmp[PATH_MAX]; /* the temporary folder: data/ and serve.log */
	char log[PATH_MAX + 16];
	char url[128];
};

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p) && errno != ENOENT ? -1 : 0;
}

static void remove_tree(const char *dir)
{
	if (*dir)
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The last 2000 bytes of the server's log, on stderr. */
static void show_log(const struct server *sv)
{
	char *text;
	size_t len;
	struct strata_error err = { 0 };
	if (slurp(sv->log, &text, &len, &err))
		return;
	const char *from = len > 2000 ? text + len - 2000 : text;
	fprintf(stderr, "strata serve said:\n%s%s", from, len && text[len - 1] != '\n' ? "\n" : "");
	tool_free(text);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Deploy app into a temporary data folder and start `strata serve` on it
 * on a free loopback port; *sv says where it listens.  Returns 0 or 1
 * (said on stderr). */
static int server_start(const char *app, struct server *sv)
{
	memset(sv, 0, sizeof *sv);
	sv->pid = -1;
	const char *td = getenv("TMPDIR");
	snprintf(sv->tmp, sizeof sv->tmp, "%s/strata-test.XXXXXX", td && *td ? td : "/tmp");
	if (!mkdtemp(sv->tmp)) {
		int e = errno;
		sv->tmp[0] = 0;
		return tool_fail("cannot make a temporary folder: %s", strerror(e));
	}
	char data[PATH_MAX + 8];
	snprintf(data, sizeof data, "%s/data", sv->tmp);
	snprintf(sv->log, sizeof sv->log, "%s/serve.log", sv->tmp);

	struct strata_error err = { 0 };
	struct strata_options so = { .data_dir = data, .log = tool_log };
	struct strata *db = NULL;
	int rc = strata_deploy(app, &so, &db, &err);
	if (rc)
		return tool_fail("%s", err.msg[0] ? err.msg : strata_strerror(rc));
	strata_close(db);

	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n < 0)
		return tool_fail("cannot find this program (/proc/self/exe): %s", strerror(errno));
	exe[n] = 0;
	int lfd = open(sv->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (lfd < 0)
		return tool_fail("%s: %s", sv->log, strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		close(lfd);
		return tool_fail("cannot start strata serve: %s", strerror(errno));
	}
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);
		if (nul >= 0)
			dup2(nul, 0);
		dup2(lfd, 1);
		dup2(lfd, 2);
		execl(exe, "strata", "serve", app, "--port", "0", "--bind", "127.0.0.1", "--data", data,
		      (char *)NULL);
		dprintf(2, "strata: cannot run %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	close(lfd);
	sv->pid = pid;
	/* ready once it says where it listens (it has opened the store by then) */
	for (int waited = 0;; waited += 20) {
		char *text;
		size_t len;
		if (!slurp(sv->log, &text, &len, &err)) {
			const char *l = strstr(text, "listening on http://");
			const char *e = l ? l + strcspn(l + 13, " \r\n") + 13 : NULL;
			if (l && e && *e == '\n' && (size_t)(e - l - 13) < sizeof sv->url) {
				memcpy(sv->url, l + 13, (size_t)(e - l - 13));
				sv->url[e - l - 13] = 0;
				tool_free(text);
				return 0;
			}
			tool_free(text);
		}
		int status;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			sv->pid = -1;
			tool_fail("strata serve stopped before it listened");
			show_log(sv);
			return 1;
		}
		if (waited > 120000) {
			tool_fail("strata serve did not listen within 120 s");
			show_log(sv);
			return 1;
		}
		sleep_ms(20);
	}
}

/* Stop the server (SIGTERM, then wait) and remove its folder.  Returns 0,
 * or 1 when it had stopped by itself or did not exit cleanly (said, with
 * its log). */
static int server_stop(struct server *sv)
{
	int rc = 0;
	if (sv->pid > 0) {
		int status = 0;
		pid_t w = waitpid(sv->pid, &status, WNOHANG);
		if (w == sv->pid) {
			rc = tool_fail("strata serve stopped during the tests (%s %d)",
			               WIFSIGNALED(status) ? "signal" : "exit status",
			               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		} else {
			kill(sv->pid, SIGTERM);
			while (waitpid(sv->pid, &status, 0) < 0 && errno == EINTR)
				;
			if (!WIFEXITED(status) || WEXITSTATUS(status))
				rc = tool_fail("strata serve did not stop cleanly (%s %d)",
				               WIFSIGNALED(status) ? "signal" : "exit status",
				               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		}
		if (rc)
			show_log(sv);
		sv->pid = -1;
	}
	remove_tree(sv->tmp);
	return rc;
}

/* ---- the command ------------------------------------------------------------------------ */

static void on_signal(int sig)
{
	interrupted = sig;
	signal(sig, SIG_DFL);
}

int cli_cmd_test(int argc, char **argv)
{
	const char *path = NULL, *endpoint = NULL, *app = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **slot = NULL;
		const char *name = NULL;
		if (!strncmp(a, "--endpoint", 10) && (!a[10] || a[10] == '='))
			slot = &endpoint, name = "--endpoint";
		else if (!strncmp(a, "--app", 5) && (!a[5] || a[5] == '='))
			slot = &app, name = "--app";
		if (slot) {
			size_t nl = strlen(name);
			if (a[nl] == '=')
				*slot = a + nl + 1;
			else if (i + 1 < argc)
				*slot = argv[++i];
			else
				return tool_usage("test", "option %s needs a value", name);
			if (!**slot)
				return tool_usage("test", "option %s needs a value", name);
			continue;
		}
		if (a[0] == '-')
			return tool_usage("test", "unknown option '%s'", a);
		if (path)
			return tool_usage("test", "one PATH only (got '%s' and '%s')", path, a);
		path = a;
	}
	if (!path)
		return tool_usage("test", "no PATH given");
	if (endpoint && app)
		return tool_usage("test", "--app starts a server on APP; --endpoint uses a running one: "
		                  "give one of them");

	/* the endpoint's base: without a trailing '/' */
	char *base = NULL;
	if (endpoint) {
		char *h, *p;
		const char *rest;
		struct strata_error err = { 0 };
		if (http_url_split(endpoint, &h, &p, &rest, &err))
			return tool_fail("--endpoint %s", err.msg);
		tool_free(h);
		tool_free(p);
		if (strpbrk(rest, "?#"))
			return tool_fail("--endpoint %s: a base URL has no query", endpoint);
		base = tool_strdup(endpoint);
		if (!base)
			return tool_fail("out of memory");
		size_t bl = strlen(base);
		while (bl > 7 && base[bl - 1] == '/')
			base[--bl] = 0;
	}

	/* the test files */
	struct stat st;
	char **files = NULL;
	int nfiles = 0, rc = 0;
	char *guessed_app = NULL;
	if (stat(path, &st)) {
		rc = tool_fail("%s: %s", path, strerror(errno));
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		int e = list_json(path, &files, &nfiles);
		if (e) {
			rc = tool_fail("%s: %s", path, e > 0 ? strerror(e) : "out of memory");
			goto out;
		}
		if (!nfiles) {
			/* an application: its system tests */
			static const char *const subs[] = { "tests/system-test",
				                                "src/test/application/tests/system-test" };
			for (size_t k = 0; k < 2 && !nfiles; k++) {
				char *sub = join(path, subs[k]);
				if (sub && is_dir(sub)) {
					tool_free(files);
					e = list_json(sub, &files, &nfiles);
				}
				tool_free(sub);
			}
			if (!nfiles) {
				rc = tool_fail("%s: no test files (*.json) in it, nor in its tests/system-test",
				               path);
				goto out;
			}
		}
	} else if (ends_with(path, ".json")) {
		files = tool_calloc(1, sizeof *files);
		if (!files || !(files[0] = tool_strdup(path))) {
			rc = tool_fail("out of memory");
			goto out;
		}
		nfiles = 1;
	} else {
		rc = tool_fail("%s: a test is a .json file (or give a folder of them)", path);
		goto out;
	}

	struct server sv = { .pid = -1 };
	if (!endpoint) {
		if (!app) {
			char *d = dir_of(files[0]);
			guessed_app = d ? app_of(d) : NULL;
			tool_free(d);
			if (!guessed_app) {
				rc = tool_fail("%s: not inside an application's tests/ folder: give --app APP "
				               "(or --endpoint URL)", path);
				goto out;
			}
			app = guessed_app;
		}
		if (server_start(app, &sv)) {
			server_stop(&sv);
			rc = 1;
			goto out;
		}
		fprintf(stderr, "strata: serving %s on %s (a temporary data folder)\n", app, sv.url);
		base = tool_strdup(sv.url);
		if (!base) {
			server_stop(&sv);
			rc = tool_fail("out of memory");
			goto out;
		}
	}

	struct tally ty = { .failures = json_array() };
	if (!ty.failures) {
		rc = tool_fail("out of memory");
	} else {
		struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, &old_int);
		sigaction(SIGTERM, &sa, &old_term);
		for (int i = 0; i < nfiles && !interrupted; i++)
			run_test(files[i], base, &ty);
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		if (interrupted)
			tool_fail("interrupted: the tests after this one did not run");
	}
	int srv_rc = endpoint ? 0 : server_stop(&sv);
	if (ty.failures) {
		int failed = ty.tests - ty.passed;
		fprintf(stderr, "%d test%s: %d passed, %d failed\n", ty.tests, ty.tests == 1 ? "" : "s",
		        ty.passed, failed);
		json_t *sum = json_pack("{s:i, s:i, s:i, s:O}", "tests", ty.tests, "passed", ty.passed,
		                        "failed", failed, "failures", ty.failures);
		char *s = sum ? strata_json_dump(sum, 0) : NULL;
		if (s)
			printf("%s\n", s);
		else
			tool_fail("out of memory");
		strata_free(s);
		json_decref(sum);
		json_decref(ty.failures);
		rc = failed || srv_rc || !s || interrupted ? 1 : 0;
	}
out:
	for (int i = 0; i < nfiles; i++)
		tool_free(files[i]);
	tool_free(files);
	tool_free(base);
	tool_free(guessed_app);
	return rc;
}
