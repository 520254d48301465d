/*
 * serve_api.c: what each HTTP request of `strata serve` does, in the shapes
 * Vespa's container answers with.
 *
 *   /search/                 GET (query parameters) or POST (a JSON request,
 *                            query parameters merged into it): Vespa result
 *                            JSON; errors as {"root": {..., "errors": [{code,
 *                            summary, message}]}} with 400, 504 or 500
 *   /document/v1/NS/TYPE/docid/KEY   (and .../group/G/KEY, .../number/N/KEY)
 *                            GET, POST (put), PUT (update, ?create=true),
 *                            DELETE, each with ?condition= (test-and-set);
 *                            answers {"pathId", "id"[, "fields"]} or
 *                            {"pathId", "message"} with 400, 404 or 500, and
 *                            412 with "id" when the condition fails
 *   /document/v1/NS/TYPE/docid   (and .../group/G, .../number/N) GET:
 *                            visiting, a page of documents (those of
 *                            ?selection= only) and a continuation; DELETE
 *                            with ?cluster= and ?selection=: removing what
 *                            the selection picks, {"pathId", "documentCount"}
 *   /document/v1/            the same over every type of ?cluster=
 *
 * Each /document/v1 operation takes a fixed set of request parameters
 * (doc_params) and refuses any other, naming it; ?dryRun=true checks a
 * write and answers as if it were done.
 *   /state/v1/health         {"status": {"code": "up"}}
 *   /state/v1/metrics, /metrics/v2/values   the counters of struct srv_metrics
 *
 * A search's "timeout" (seconds, or "500ms", "2s"; 10 s when not given)
 * counts from when the request arrived.  Over it when a worker takes the
 * request, or when the query ends, the answer is Vespa's timeout error
 * (504).  The query runs with the time left as its own "timeout", so the
 * library's soft timeout stops it early and a degraded result (its coverage
 * says so) is answered with 200, as Vespa does; with
 * "ranking.softtimeout.enable" false the query fails at its deadline (504).
 * "trace.level" 1 or more adds a "trace" with the time spent queued and
 * searching.  A condition (test-and-set) goes to the library with the
 * operation, which evaluates it in the write transaction.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_int.h"

#define DEFAULT_TIMEOUT 10.0 /* seconds, as Vespa */

/* Vespa's error codes of the search API (com.yahoo.container.protect.Error). */
enum { VE_ILLEGAL_QUERY = 3, VE_INVALID_PARAMETER = 4, VE_UNSPECIFIED = 5, VE_TIMEOUT = 12,
       VE_NOT_FOUND = 16, VE_BAD_REQUEST = 17, VE_INTERNAL = 18, VE_TOO_LARGE = 2 };

static const char *ve_summary(int code)
{
	switch (code) {
	case VE_TOO_LARGE: return "Request too large";
	case VE_ILLEGAL_QUERY: return "Illegal query";
	case VE_INVALID_PARAMETER: return "Invalid query parameter";
	case VE_TIMEOUT: return "Timed out";
	case VE_NOT_FOUND: return "Resource not found";
	case VE_BAD_REQUEST: return "Bad request";
	case VE_INTERNAL: return "Internal server error";
	default: return "Unspecified error";
	}
}

/* Sets rq's answer to the JSON j (consumed); 500 when it cannot be made. */
static void answer(struct srv_req *rq, int status, json_t *j)
{
	char *s = strata_json_dump(j, 0);
	json_decref(j);
	srv_req_answer(rq, status, s, 1);
}

/* A new text (tool_free): the library's compact JSON object text obj
 * with "key": v (consumed) written in as its last member, so that the
 * library's result is not parsed and written again for one member.  key
 * needs no escapes.  NULL when memory runs out or v is NULL. */
static char *with_member(const char *obj, const char *key, json_t *v)
{
	char *vs = strata_json_dump(v, 0);
	json_decref(v);
	size_t n = strlen(obj), kl = strlen(key), vl = vs ? strlen(vs) : 0;
	int members = n > 2; /* not "{}" */
	size_t len = n - 1 + (size_t)members + kl + 3 + vl + 1;
	char *s = vs && n >= 2 && obj[n - 1] == '}' ? tool_alloc(len + 1) : NULL;
	if (s) {
		size_t k = n - 1;
		memcpy(s, obj, k);
		if (members)
			s[k++] = ',';
		s[k++] = '"';
		memcpy(s + k, key, kl);
		k += kl;
		s[k++] = '"';
		s[k++] = ':';
		memcpy(s + k, vs, vl);
		k += vl;
		s[k++] = '}';
		s[k] = 0;
	}
	strata_free(vs);
	return s;
}

/* Vespa's search error result. */
static void search_error(struct srv_req *rq, int status, int code, const char *msg)
{
	answer(rq, status,
	       json_pack("{s:{s:s, s:f, s:{s:i}, s:[{s:i, s:s, s:s}]}}", "root", "id", "toplevel",
	                 "relevance", 1.0, "fields", "totalCount", 0, "errors", "code", code,
	                 "summary", ve_summary(code), "message", msg));
}

/* HTTP status and Vespa code for a library error of a search. */
static void search_fail(struct srv_req *rq, int rc, const struct strata_error *err)
{
	const char *msg = err->msg[0] ? err->msg : strata_strerror(rc);
	switch (rc) {
	case STRATA_TIMEOUT:
		search_error(rq, 504, VE_TIMEOUT, msg);
		break;
	case STRATA_PARSE:
		search_error(rq, 400, VE_ILLEGAL_QUERY, msg);
		break;
	case STRATA_INVALID_ARGUMENT: case STRATA_NOT_FOUND: case STRATA_TYPE:
	case STRATA_NOT_IMPLEMENTED: case STRATA_LIMIT:
		search_error(rq, 400, VE_INVALID_PARAMETER, msg);
		break;
	default:
		search_error(rq, 500, VE_INTERNAL, msg);
	}
}

/* The request's "timeout" v, as the library reads it: seconds as a number,
 * or a string with a unit (strata_timeout_parse).  Returns 0,
 * STRATA_INVALID_ARGUMENT or STRATA_NOMEM. */
static int timeout_of(const json_t *v, double *out)
{
	if (json_is_string(v))
		return strata_timeout_parse(json_string_value(v), out);
	double x = json_number_value(v);
	if (!json_is_number(v) || !(x >= 0) || !isfinite(x))
		return STRATA_INVALID_ARGUMENT;
	*out = x;
	return 0;
}

/* A query parameter's value as the JSON request wants it: inputs as the
 * CLI's --input reads them; everything else stays a string. */
static json_t *arg_value(const char *key, const char *val)
{
	if (!strncmp(key, "input.", 6) || !strncmp(key, "ranking.features.query(", 23) ||
	    !strncmp(key, "query(", 6))
		return tool_input_value(val);
	return json_string(val);
}

/* The search request of rq: its JSON body, with the query parameters set in
 * it.  Returns NULL after setting the error answer. */
static json_t *search_request(struct srv_req *rq)
{
	json_t *req;
	if (rq->method == SRV_POST && rq->len) {
		json_error_t je;
		int oom;
		req = tool_json_parse(rq->body, rq->len, 0, &je, &oom);
		if (!req && oom) {
			search_error(rq, 500, VE_INTERNAL, "out of memory");
			return NULL;
		}
		if (!req) {
			char msg[300];
			snprintf(msg, sizeof msg, "the request body is not JSON: line %d column %d: %s",
			         je.line, je.column, je.text);
			search_error(rq, 400, VE_ILLEGAL_QUERY, msg);
			return NULL;
		}
		if (!json_is_object(req)) {
			json_decref(req);
			search_error(rq, 400, VE_ILLEGAL_QUERY, "the request body must be a JSON object");
			return NULL;
		}
	} else {
		req = json_object();
	}
	const char *key;
	json_t *v;
	json_object_foreach(rq->args, key, v) {
		json_t *x = req ? arg_value(key, json_string_value(v)) : NULL;
		if (!x || json_object_set_new(req, key, x)) {
			json_decref(req);
			req = NULL;
			break;
		}
	}
	if (!req)
		search_error(rq, 500, VE_INTERNAL, "out of memory");
	return req;
}

/* Adds Vespa's "trace" to the library's result text (taken): the time
 * queued and searching.  Returns the new text (tool_free), or when memory
 * runs out the result as it was, *lib set (strata_free). */
static char *with_trace(char *result, double queued, double ran, long level, int *lib)
{
	char m1[96], m2[96];
	snprintf(m1, sizeof m1, "waited %.3f ms in the request queue", queued * 1e3);
	snprintf(m2, sizeof m2, "searched in %.3f ms (trace.level %ld)", ran * 1e3, level);
	char *s = with_member(result, "trace",
	                      json_pack("{s:[{s:i, s:s}, {s:i, s:s}]}", "children", "timestamp", 0,
	                                "message", m1, "timestamp", (int)(queued * 1e3), "message",
	                                m2));
	if (!s)
		return result;
	strata_free(result);
	*lib = 0;
	return s;
}

static void do_search(struct srv *s, struct srv_req *rq)
{
	if (rq->method != SRV_GET && rq->method != SRV_POST) {
		search_error(rq, 405, VE_BAD_REQUEST, "/search/ takes GET or POST");
		return;
	}
	json_t *given = search_request(rq), *req = NULL;
	if (!given)
		return;
	struct strata_error ferr = { 0 };
	int frc = strata_request_flatten(given, &req, &ferr);
	json_decref(given);
	if (frc) {
		search_fail(rq, frc, &ferr);
		return;
	}
	double timeout = DEFAULT_TIMEOUT;
	const json_t *tv = json_object_get(req, "timeout");
	int trc = tv ? timeout_of(tv, &timeout) : 0;
	if (trc == STRATA_NOMEM) {
		json_decref(req);
		search_error(rq, 500, VE_INTERNAL, "out of memory");
		return;
	}
	if (trc) {
		json_decref(req);
		search_error(rq, 400, VE_INVALID_PARAMETER,
		             "timeout: expected seconds, or a number with unit ms, s or m");
		return;
	}
	long trace = 0;
	const json_t *lv = json_object_get(req, "trace.level");
	if (lv && (json_is_integer(lv) || json_is_string(lv)))
		trace = json_is_integer(lv) ? (long)json_integer_value(lv)
		                            : strtol(json_string_value(lv), NULL, 10);
	double start = tool_now(), queued = start - rq->arrived;
	char msg[160];
	if (queued > timeout) {
		json_decref(req);
		snprintf(msg, sizeof msg, "the request waited %.0f ms for a thread, over its timeout of %.0f ms",
		         queued * 1e3, timeout * 1e3);
		search_error(rq, 504, VE_TIMEOUT, msg);
		srv_metrics_query(&s->m, queued, -1);
		return;
	}
	/* the query's own deadline: what is left of the request's */
	char *text = json_object_set_new(req, "timeout", json_real(timeout - queued)) ? NULL
	           : strata_json_dump(req, 0);
	char *result = NULL;
	json_decref(req);
	struct strata_error err = { 0 };
	int rc = text ? strata_query_json(s->db, text, &result, &err) : tool_nomem(&err, "request");
	strata_free(text);
	double end = tool_now();
	if (rc) {
		srv_metrics_query(&s->m, end - rq->arrived, rc == STRATA_TIMEOUT ? -1 : 0);
		search_fail(rq, rc, &err);
		return;
	}
	if (end - rq->arrived > timeout) {
		strata_free(result);
		snprintf(msg, sizeof msg, "the query took %.0f ms, over its timeout of %.0f ms",
		         (end - rq->arrived) * 1e3, timeout * 1e3);
		search_error(rq, 504, VE_TIMEOUT, msg);
		srv_metrics_query(&s->m, end - rq->arrived, -1);
		return;
	}
	int lib = 1;
	if (trace > 0)
		result = with_trace(result, queued, end - start, trace, &lib);
	srv_metrics_query(&s->m, end - rq->arrived, 1);
	srv_req_answer(rq, 200, result, lib);
}

/* ---- /document/v1/ ------------------------------------------------------------------ */

static void doc_error(struct srv_req *rq, int status, const char *msg)
{
	answer(rq, status, json_pack("{s:s, s:s}", "pathId", rq->path, "message", msg));
}

static void doc_fail(struct srv_req *rq, int rc, const struct strata_error *err)
{
	const char *msg = err->msg[0] ? err->msg : strata_strerror(rc);
	int status = rc == STRATA_NOT_FOUND ? 404
	           : rc == STRATA_PARSE || rc == STRATA_INVALID_ARGUMENT || rc == STRATA_TYPE ||
	             rc == STRATA_NOT_IMPLEMENTED ? 400
	           : rc == STRATA_LIMIT ? 507 : 500;
	doc_error(rq, status, msg);
}

/* The document id of a /document/v1/NS/TYPE/{docid/KEY, group/G/KEY,
 * number/N/KEY} path into id (size n).  Returns 0, or -1 for another path. */
static int doc_id(const char *path, char *id, size_t n)
{
	const char *p = path + strlen("/document/v1/");
	const char *ns_end = strchr(p, '/');
	if (!ns_end || ns_end == p)
		return -1;
	const char *t = ns_end + 1, *t_end = strchr(t, '/');
	if (!t_end || t_end == t)
		return -1;
	const char *kind = t_end + 1;
	int w;
	if (!strncmp(kind, "docid/", 6) && kind[6]) {
		w = snprintf(id, n, "id:%.*s:%.*s::%s", (int)(ns_end - p), p, (int)(t_end - t), t,
		             kind + 6);
	} else if (!strncmp(kind, "group/", 6) || !strncmp(kind, "number/", 7)) {
		int g = kind[0] == 'g';
		const char *v = kind + (g ? 6 : 7), *v_end = strchr(v, '/');
		if (!v_end || v_end == v || !v_end[1])
			return -1;
		w = snprintf(id, n, "id:%.*s:%.*s:%s=%.*s:%s", (int)(ns_end - p), p, (int)(t_end - t),
		             t, g ? "g" : "n", (int)(v_end - v), v, v_end + 1);
	} else {
		return -1;
	}
	return w > 0 && (size_t)w < n ? 0 : -1;
}

/* A write under the store's one-writer lock. */
static int doc_write(struct srv *s, const json_t *op, struct strata_error *err)
{
	char *text = strata_json_dump(op, 0);
	if (!text)
		return tool_nomem(err, "operation");
	pthread_mutex_lock(&s->write_lock);
	int rc = strata_feed_json(s->db, text, err);
	pthread_mutex_unlock(&s->write_lock);
	strata_free(text);
	return rc;
}

static void count(struct srv *s, unsigned long long *c, int failed)
{
	pthread_mutex_lock(&s->m.lock);
	if (failed)
		s->m.feed_errors++;
	else
		(*c)++;
	pthread_mutex_unlock(&s->m.lock);
}

/* 200 with the library's JSON object text (freed here) and "pathId". */
static void answer_with_path(struct srv_req *rq, char *text)
{
	char *s = with_member(text, "pathId", json_string(rq->path));
	strata_free(text);
	if (!s) {
		doc_error(rq, 500, "out of memory");
		return;
	}
	srv_req_answer(rq, 200, s, 0);
}

/* What a /document/v1/ path names: the root (every type of a cluster),
 * the documents of NS/TYPE (docid/, or group/G/ and number/N/ with a
 * group), or one document. */
enum { DP_ROOT = 1, DP_TYPE, DP_DOC };

struct dpath {
	int kind;
	char ns[256], type[256];
	char group[256]; /* DP_TYPE: the group value, "" when none */
	int numbered;    /* group is number/N (id.user), not group/G (id.group) */
	char id[2048];   /* DP_DOC */
};

/* Parses path into d.  Returns 0, or -1 for another path. */
static int doc_path(const char *path, struct dpath *d)
{
	memset(d, 0, sizeof *d);
	const char *p = path + strlen("/document/v1/");
	if (!*p) {
		d->kind = DP_ROOT;
		return 0;
	}
	if (!doc_id(path, d->id, sizeof d->id)) {
		d->kind = DP_DOC;
		return 0;
	}
	const char *a = strchr(p, '/');
	const char *b = a ? strchr(a + 1, '/') : NULL;
	if (!a || a == p || !b || b == a + 1 || (size_t)(a - p) >= sizeof d->ns ||
	    (size_t)(b - a - 1) >= sizeof d->type)
		return -1;
	snprintf(d->ns, sizeof d->ns, "%.*s", (int)(a - p), p);
	snprintf(d->type, sizeof d->type, "%.*s", (int)(b - a - 1), a + 1);
	d->kind = DP_TYPE;
	if (!strcmp(b, "/docid") || !strcmp(b, "/docid/"))
		return 0;
	int g = !strncmp(b, "/group/", 7);
	if (!g && strncmp(b, "/number/", 8))
		return -1;
	const char *v = b + (g ? 7 : 8), *end = strchr(v, '/');
	size_t n = end ? (size_t)(end - v) : strlen(v);
	if (!n || n >= sizeof d->group || (end && end[1]))
		return -1;
	snprintf(d->group, sizeof d->group, "%.*s", (int)n, v);
	d->numbered = !g;
	return 0;
}

/* The request parameters an operation takes.  Every parameter of Vespa's
 * /document/v1 that is not among them is refused, naming it and these. */
enum { P_CLUSTER = 1 << 0, P_SELECTION = 1 << 1, P_CONTINUATION = 1 << 2,
       P_WANTED = 1 << 3, P_CONCURRENCY = 1 << 4, P_TIMEOUT = 1 << 5, P_CONDITION = 1 << 6,
       P_CREATE = 1 << 7, P_DRYRUN = 1 << 8, P_FIELDSET = 1 << 9, P_BUCKETSPACE = 1 << 10 };

static const struct {
	const char *name;
	int bit;
} params[] = {
	{ "cluster", P_CLUSTER }, { "selection", P_SELECTION }, { "continuation", P_CONTINUATION },
	{ "wantedDocumentCount", P_WANTED }, { "concurrency", P_CONCURRENCY },
	{ "timeout", P_TIMEOUT }, { "condition", P_CONDITION }, { "create", P_CREATE },
	{ "dryRun", P_DRYRUN }, { "fieldSet", P_FIELDSET }, { "bucketSpace", P_BUCKETSPACE },
};

/* Whether text is "true" or "false"; *v set. */
static int boolean(const char *text, int *v)
{
	*v = !strcmp(text, "true");
	return *v || !strcmp(text, "false");
}

/* Checks rq's parameters against the set allowed for what (an operation's
 * name) and their values; 0, or -1 after setting the error answer. */
static int doc_params(struct srv_req *rq, int allowed, const char *what)
{
	const char *key;
	json_t *v;
	char msg[400];
	json_object_foreach(rq->args, key, v) {
		const char *val = json_string_value(v);
		int bit = 0, b;
		for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
			if (!strcmp(key, params[i].name))
				bit = params[i].bit;
		if (!(bit & allowed)) {
			size_t k = (size_t)snprintf(msg, sizeof msg,
			                            "%s does not take the request parameter '%.64s'; it "
			                            "takes ", what, key);
			int first = 1;
			for (size_t i = 0; i < sizeof params / sizeof params[0] && k < sizeof msg; i++)
				if (params[i].bit & allowed) {
					k += (size_t)snprintf(msg + k, sizeof msg - k, "%s%s", first ? "" : ", ",
					                      params[i].name);
					first = 0;
				}
			if (first && k < sizeof msg)
				snprintf(msg + k, sizeof msg - k, "none");
			doc_error(rq, 400, msg);
			return -1;
		}
		const char *bad = NULL;
		double t;
		if (!*val) {
			bad = "a value";
		} else if (bit == P_WANTED || bit == P_CONCURRENCY) {
			char *end;
			long x = strtol(val, &end, 10);
			if (*end || x < 1)
				bad = "a positive number";
		} else if (bit == P_CREATE || bit == P_DRYRUN) {
			if (!boolean(val, &b))
				bad = "true or false";
		} else if (bit == P_TIMEOUT) {
			if (strata_timeout_parse(val, &t))
				bad = "seconds, or a number with unit ms, s or m";
		} else if (bit == P_BUCKETSPACE) {
			if (strcmp(val, "default"))
				bad = "'default' (no document type is global here)";
		} else if (bit == P_FIELDSET) {
			const char *c = strchr(val, ':');
			if (strcmp(c ? c + 1 : val, "[document]") && strcmp(val, "[all]"))
				bad = "[all], [document] or TYPE:[document] (every field)";
		}
		if (bad) {
			snprintf(msg, sizeof msg, "%s must be %s, not '%.64s'", key, bad, val);
			doc_error(rq, 400, msg);
			return -1;
		}
	}
	return 0;
}

static const char *arg(const struct srv_req *rq, const char *name)
{
	return json_string_value(json_object_get(rq->args, name));
}

/* Whether the request waited in the queue past its ?timeout=; then the
 * answer (504) is set. */
static int doc_late(struct srv_req *rq)
{
	double timeout;
	const char *t = arg(rq, "timeout");
	if (!t || strata_timeout_parse(t, &timeout))
		return 0;
	double waited = tool_now() - rq->arrived;
	if (waited <= timeout)
		return 0;
	char msg[160];
	snprintf(msg, sizeof msg, "the request waited %.0f ms for a thread, over its timeout of %.0f ms",
	         waited * 1e3, timeout * 1e3);
	doc_error(rq, 504, msg);
	return 1;
}

/* The selection of a visit or removal: ?selection=, and the path's
 * group.  NULL when there is neither; *sel is a new text (tool_free) or
 * NULL; -1 after the error answer. */
static int doc_selection(struct srv_req *rq, const struct dpath *d, char **sel)
{
	*sel = NULL;
	const char *s = arg(rq, "selection");
	if (!d->group[0])
		return 0;
	if (strpbrk(d->group, "\"\\") ||
	    (d->numbered && strspn(d->group, "0123456789") != strlen(d->group))) {
		doc_error(rq, 400, d->numbered ? "number/N: N must be a number"
		                               : "group/G: G may not hold '\"' or '\\'");
		return -1;
	}
	size_t n = strlen(d->group) + (s ? strlen(s) : 0) + 40;
	if (!(*sel = tool_alloc(n))) {
		doc_error(rq, 500, "out of memory");
		return -1;
	}
	if (d->numbered)
		snprintf(*sel, n, "(id.user == %s)%s%s%s", d->group, s ? " and (" : "", s ? s : "",
		         s ? ")" : "");
	else
		snprintf(*sel, n, "(id.group == \"%s\")%s%s%s", d->group, s ? " and (" : "",
		         s ? s : "", s ? ")" : "");
	return 0;
}

/* GET /document/v1/ (every type of ?cluster=) or /document/v1/NS/TYPE/docid
 * (or .../group/G, .../number/N): one page of the documents that match
 * ?selection=, and a continuation while more follow. */
static void do_visit(struct srv *s, struct srv_req *rq, const struct dpath *d)
{
	if (doc_params(rq, P_CLUSTER | P_SELECTION | P_CONTINUATION | P_WANTED | P_CONCURRENCY |
	               P_TIMEOUT | P_FIELDSET | P_BUCKETSPACE, "visiting") || doc_late(rq))
		return;
	struct strata_visit v = { .cluster = arg(rq, "cluster"), .continuation =
	                          arg(rq, "continuation"), .count = 100 };
	if (d->kind == DP_ROOT && !v.cluster) {
		doc_error(rq, 400, "visiting /document/v1/ needs ?cluster= (a content cluster)");
		return;
	}
	if (d->kind == DP_TYPE) {
		v.doctype = d->type;
		v.ns = d->ns;
	}
	const char *w = arg(rq, "wantedDocumentCount");
	if (w)
		v.count = strtol(w, NULL, 10) > 1024 ? 1024 : strtol(w, NULL, 10); /* at most 1024 */
	char *sel;
	if (doc_selection(rq, d, &sel))
		return;
	v.selection = sel ? sel : arg(rq, "selection");
	struct strata_error err = { 0 };
	char *page;
	int rc = strata_visit_where_json(s->db, &v, &page, &err);
	tool_free(sel);
	if (rc) {
		doc_fail(rq, rc == STRATA_NOT_FOUND ? STRATA_INVALID_ARGUMENT : rc, &err);
		return;
	}
	count(s, &s->m.visits, 0);
	answer_with_path(rq, page);
}

/* DELETE /document/v1/?cluster=C&selection=S (or NS/TYPE/docid, with
 * group/G or number/N): every document of the cluster's types (or of
 * NS/TYPE) that S selects, removed; {"pathId", "documentCount"}. */
static void do_remove_where(struct srv *s, struct srv_req *rq, const struct dpath *d)
{
	if (doc_params(rq, P_CLUSTER | P_SELECTION | P_TIMEOUT | P_BUCKETSPACE,
	               "removing by selection") || doc_late(rq))
		return;
	char msg[300];
	const char *need = !arg(rq, "selection") ? "selection" : !arg(rq, "cluster") ? "cluster"
	                                                                            : NULL;
	if (need) {
		snprintf(msg, sizeof msg, "removing by selection needs ?%s= at '%.200s'", need, rq->path);
		doc_error(rq, 400, msg);
		return;
	}
	struct strata_visit v = { .cluster = arg(rq, "cluster") };
	if (d->kind == DP_TYPE) {
		v.doctype = d->type;
		v.ns = d->ns;
	}
	char *sel;
	if (doc_selection(rq, d, &sel))
		return;
	v.selection = sel ? sel : arg(rq, "selection");
	struct strata_error err = { 0 };
	long removed = 0;
	pthread_mutex_lock(&s->write_lock);
	int rc = strata_remove_where(s->db, &v, &removed, &err);
	pthread_mutex_unlock(&s->write_lock);
	tool_free(sel);
	pthread_mutex_lock(&s->m.lock);
	s->m.removes += (unsigned long long)removed;
	s->m.feed_errors += rc != 0;
	pthread_mutex_unlock(&s->m.lock);
	if (rc && removed == 0) {
		doc_fail(rq, rc == STRATA_NOT_FOUND ? STRATA_INVALID_ARGUMENT : rc, &err);
		return;
	}
	if (rc) { /* some were removed (and are durable) before the error */
		answer(rq, 500, json_pack("{s:s, s:I, s:s}", "pathId", rq->path, "documentCount",
		                          (json_int_t)removed, "message", err.msg));
		return;
	}
	answer(rq, 200, json_pack("{s:s, s:I}", "pathId", rq->path, "documentCount",
	                          (json_int_t)removed));
}

/* The operation of a single-document write: {kind: id} with the body's
 * "fields", "condition" and "create" (a DELETE's body is optional and may
 * hold "condition" only), and the query parameters.  A body's own "put",
 * "update", "remove" or "id" is accepted when it names the path's id and
 * the request's kind.  NULL after setting the error answer. */
static json_t *doc_op(struct srv_req *rq, const char *kind, const char *id)
{
	json_error_t je;
	int oom = 0;
	json_t *body = rq->len ? tool_json_parse(rq->body, rq->len, 0, &je, &oom) : NULL;
	char msg[600];
	int del = !strcmp(kind, "remove");
	if (oom) {
		doc_error(rq, 500, "out of memory");
		return NULL;
	}
	if (!body && (rq->len || !del)) {
		if (rq->len)
			snprintf(msg, sizeof msg, "the request body is not JSON: line %d column %d: %s",
			         je.line, je.column, je.text);
		else
			snprintf(msg, sizeof msg, "a %s needs a JSON body with \"fields\"", kind);
		doc_error(rq, 400, msg);
		return NULL;
	}
	json_t *op = json_object();
	const char *key;
	json_t *v;
	int bad = body && !json_is_object(body);
	if (bad)
		snprintf(msg, sizeof msg, "the request body must be a JSON object");
	json_object_foreach(body, key, v) {
		if (bad)
			break;
		int idkey = !strcmp(key, "put") || !strcmp(key, "update") || !strcmp(key, "remove") ||
		            !strcmp(key, "id");
		if (idkey && (!json_is_string(v) || strcmp(json_string_value(v), id))) {
			snprintf(msg, sizeof msg, "the body's \"%s\" names another document than the "
			         "path: '%.200s', not '%.200s'", key,
			         json_is_string(v) ? json_string_value(v) : "(not a string)", id);
			bad = 1;
		} else if (idkey && strcmp(key, "id") && strcmp(key, kind)) {
			snprintf(msg, sizeof msg, "the body's \"%s\" does not fit this request, a %s",
			         key, kind);
			bad = 1;
		} else if (!idkey && strcmp(key, "condition") &&
		           (del || (strcmp(key, "fields") && strcmp(key, "create")))) {
			snprintf(msg, sizeof msg, "unknown key \"%.100s\" in the request body of a %s",
			         key, kind);
			bad = 1;
		} else if (!idkey && op) {
			json_object_set(op, key, v);
		}
	}
	json_decref(body);
	const json_t *cond = json_object_get(rq->args, "condition");
	const char *create = arg(rq, "create");
	int cv = 0;
	if (bad) {
		json_decref(op);
		doc_error(rq, 400, msg);
		return NULL;
	}
	if (!op || json_object_set_new(op, kind, json_string(id)) ||
	    (cond && json_object_set(op, "condition", (json_t *)cond)) ||
	    (create && boolean(create, &cv) && json_object_set_new(op, "create", json_boolean(cv)))) {
		json_decref(op);
		doc_error(rq, 500, "out of memory");
		return NULL;
	}
	return op;
}

/* dryRun=true: what a write would check before the store (the document
 * type, the body, the condition's syntax), and nothing written. */
static int doc_dry(struct srv *s, struct srv_req *rq, const struct dpath *d, const json_t *op,
                   struct strata_error *err)
{
	char type[256];
	const char *t = strchr(d->id + 3, ':');
	snprintf(type, sizeof type, "%.*s", t ? (int)strcspn(t + 1, ":") : 0, t ? t + 1 : "");
	const json_t *c = json_object_get(op, "condition");
	struct strata_visit v = { .doctype = type, .selection = json_string_value(c) };
	char *none = NULL;
	int rc = strata_visit_where_json(s->db, &v, &none, err);
	if (rc == STRATA_NOT_FOUND)
		rc = STRATA_INVALID_ARGUMENT;
	if (rc && c && !strncmp(err->msg, "selection:", 10)) { /* it is the condition */
		char m[sizeof err->msg];
		snprintf(m, sizeof m, "condition:%s", err->msg + 10);
		snprintf(err->msg, sizeof err->msg, "%s", m);
	}
	return rc;
}

static void do_document(struct srv *s, struct srv_req *rq)
{
	struct dpath d;
	if (doc_path(rq->path, &d)) {
		doc_error(rq, 400, "expected /document/v1/, /document/v1/NAMESPACE/DOCTYPE/docid/KEY "
		                   "(or .../group/G/KEY, .../number/N/KEY), or a visit's "
		                   "/document/v1/NAMESPACE/DOCTYPE/docid (or .../group/G, .../number/N)");
		return;
	}
	if (d.kind != DP_DOC) {
		if (rq->method == SRV_GET)
			do_visit(s, rq, &d);
		else if (rq->method == SRV_DELETE)
			do_remove_where(s, rq, &d);
		else
			doc_error(rq, 405, "a visit's path takes GET (visiting) or DELETE (removing by "
			                   "selection); copying and updating by selection are not "
			                   "implemented");
		return;
	}
	const char *id = d.id;
	struct strata_error err = { 0 };
	int rc;
	if (rq->method == SRV_GET) {
		if (doc_params(rq, P_CLUSTER | P_TIMEOUT | P_FIELDSET, "a get") || doc_late(rq))
			return;
		const char *cluster = arg(rq, "cluster");
		if (cluster) { /* the document's type must be in that cluster */
			char type[256];
			const char *t = strchr(id + 3, ':');
			snprintf(type, sizeof type, "%.*s", t ? (int)strcspn(t + 1, ":") : 0,
			         t ? t + 1 : "");
			struct strata_visit v = { .cluster = cluster, .doctype = type };
			char *none = NULL;
			if ((rc = strata_visit_where_json(s->db, &v, &none, &err))) {
				doc_fail(rq, rc == STRATA_NOT_FOUND ? STRATA_INVALID_ARGUMENT : rc, &err);
				return;
			}
		}
		char *doc;
		rc = strata_get_json(s->db, id, &doc, &err);
		count(s, &s->m.gets, rc && rc != STRATA_NOT_FOUND);
		if (rc == STRATA_NOT_FOUND) {
			answer(rq, 404, json_pack("{s:s, s:s}", "pathId", rq->path, "id", id));
			return;
		}
		if (rc) {
			doc_fail(rq, rc, &err);
			return;
		}
		answer_with_path(rq, doc);
		return;
	}
	if (rq->method != SRV_POST && rq->method != SRV_PUT && rq->method != SRV_DELETE) {
		doc_error(rq, 405, "/document/v1/ takes GET, POST, PUT or DELETE");
		return;
	}
	int put = rq->method == SRV_POST, del = rq->method == SRV_DELETE;
	const char *kind = put ? "put" : del ? "remove" : "update";
	unsigned long long *counter = put ? &s->m.puts : del ? &s->m.removes : &s->m.updates;
	if (doc_params(rq, P_CONDITION | P_TIMEOUT | P_DRYRUN | (del ? 0 : P_CREATE), kind) ||
	    doc_late(rq))
		return;
	json_t *op = doc_op(rq, kind, id);
	if (!op) {
		count(s, counter, 1);
		return;
	}
	int dry = 0;
	if (arg(rq, "dryRun") && boolean(arg(rq, "dryRun"), &dry) && dry) {
		rc = doc_dry(s, rq, &d, op, &err);
		json_decref(op);
		if (rc)
			doc_fail(rq, rc, &err);
		else
			answer(rq, 200, json_pack("{s:s, s:s}", "pathId", rq->path, "id", id));
		return;
	}
	if (del && json_object_size(op) == 1) { /* no condition */
		pthread_mutex_lock(&s->write_lock);
		rc = strata_remove(s->db, id, &err);
		pthread_mutex_unlock(&s->write_lock);
		if (rc == STRATA_NOT_FOUND)
			rc = 0; /* as in Vespa, removing a missing document succeeds */
	} else {
		rc = doc_write(s, op, &err);
	}
	json_decref(op);
	count(s, rc == STRATA_CONDITION_FAILED ? &s->m.not_met : counter,
	      rc && rc != STRATA_CONDITION_FAILED);
	if (rc == STRATA_CONDITION_FAILED) {
		/* Vespa's answer: the content node's return code in the message. */
		char msg[STRATA_ERRMSG_MAX + 64];
		snprintf(msg, sizeof msg, "ReturnCode(TEST_AND_SET_CONDITION_FAILED, %s)", err.msg);
		answer(rq, 412, json_pack("{s:s, s:s, s:s}", "pathId", rq->path, "id", id, "message",
		                          msg));
		return;
	}
	if (rc) {
		doc_fail(rq, rc, &err);
		return;
	}
	answer(rq, 200, json_pack("{s:s, s:s}", "pathId", rq->path, "id", id));
}

/* ---- state and metrics ------------------------------------------------------------------- */

void srv_metrics_init(struct srv_metrics *m)
{
	memset(m, 0, sizeof *m);
	pthread_mutex_init(&m->lock, NULL);
	for (int i = 0; i < SRV_BUCKETS; i++)
		m->bound_us[i] = 10.0 * pow(1.25, i);
}

/* ok: 1 answered, 0 failed, -1 timed out. */
void srv_metrics_query(struct srv_metrics *m, double seconds, int ok)
{
	int b = 0;
	while (b < SRV_BUCKETS - 1 && seconds * 1e6 >= m->bound_us[b])
		b++;
	pthread_mutex_lock(&m->lock);
	if (ok > 0)
		m->queries++;
	else if (ok == 0)
		m->query_errors++;
	else
		m->timeouts++;
	m->lat[b]++;
	m->lat_sum += seconds;
	if (seconds > m->lat_max)
		m->lat_max = seconds;
	pthread_mutex_unlock(&m->lock);
}

/* The latency below which a fraction q of the searches ended, in ms: the
 * upper bound of its bucket (at most 25% over). */
static double percentile(const struct srv_metrics *m, unsigned long long n, double q)
{
	if (!n)
		return 0;
	unsigned long long want = (unsigned long long)ceil(q * (double)n), seen = 0;
	for (int b = 0; b < SRV_BUCKETS; b++) {
		seen += m->lat[b];
		if (seen >= want)
			return fmin(m->bound_us[b] / 1e3, m->lat_max * 1e3);
	}
	return m->lat_max * 1e3;
}

/* The metrics as name -> value pairs (an object). */
static json_t *metric_values(struct srv *s)
{
	struct strata_stats st;
	strata_stats(s->db, &st);
	struct srv_metrics m;
	pthread_mutex_lock(&s->m.lock);
	memcpy(&m, &s->m, sizeof m);
	pthread_mutex_unlock(&s->m.lock);
	unsigned long long n = m.queries + m.query_errors + m.timeouts;
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:I,"
	                 " s:I, s:I, s:I, s:I, s:f, s:I, s:I}",
	                 "queries.count", (json_int_t)m.queries,
	                 "queries.errors", (json_int_t)m.query_errors,
	                 "queries.timeouts", (json_int_t)m.timeouts,
	                 "queries.degraded", (json_int_t)st.degraded,
	                 "requests.rejected", (json_int_t)m.rejected,
	                 "query_latency.average", n ? m.lat_sum / (double)n * 1e3 : 0.0,
	                 "query_latency.p50", percentile(&m, n, 0.50),
	                 "query_latency.p95", percentile(&m, n, 0.95),
	                 "query_latency.p99", percentile(&m, n, 0.99),
	                 "query_latency.max", m.lat_max * 1e3,
	                 "feed.puts", (json_int_t)m.puts, "feed.updates", (json_int_t)m.updates,
	                 "feed.removes", (json_int_t)m.removes, "feed.errors",
	                 (json_int_t)m.feed_errors, "document.gets", (json_int_t)m.gets,
	                 "pool.hits", (json_int_t)st.pool_hits, "pool.misses",
	                 (json_int_t)st.pool_misses, "document.visits", (json_int_t)m.visits,
	                 "uptime.seconds", tool_now() - s->started,
	                 "requests.open", (json_int_t)m.open,
	                 "feed.condition_not_met", (json_int_t)m.not_met);
}

static void do_metrics(struct srv *s, struct srv_req *rq)
{
	json_t *vals = metric_values(s);
	if (!vals) {
		answer(rq, 500, NULL);
		return;
	}
	if (!strcmp(rq->path, "/state/v1/metrics")) {
		json_t *list = json_array();
		const char *key;
		json_t *v;
		json_object_foreach(vals, key, v)
			json_array_append_new(list, json_pack("{s:s, s:{s:O}}", "name", key, "values",
			                                      "value", v));
		json_decref(vals);
		answer(rq, 200, json_pack("{s:{s:s}, s:{s:o}}", "status", "code", "up", "metrics",
		                          "values", list));
		return;
	}
	answer(rq, 200,
	       json_pack("{s:[{s:s, s:s, s:[{s:s, s:{s:s}, s:[{s:o, s:{}}]}]}]}", "nodes",
	                 "hostname", "localhost", "role", "strata", "services", "name", "strata",
	                 "status", "code", "up", "metrics", "values", vals, "dimensions"));
}

/* ---- dispatch -------------------------------------------------------------------------- */

int srv_api_inline(const char *path)
{
	return !strcmp(path, "/state/v1/health") || !strcmp(path, "/state/v1/metrics") ||
	       !strcmp(path, "/metrics/v2/values") || !strcmp(path, "/state/v1/") ||
	       !strcmp(path, "/state/v1");
}

int srv_api_is_document(const char *path)
{
	return !strncmp(path, "/document/v1/", 13);
}

void srv_api_reject(struct srv_req *rq, int status, const char *msg)
{
	if (srv_api_is_document(rq->path))
		doc_error(rq, status, msg);
	else
		search_error(rq, status, status == 413 ? VE_TOO_LARGE : VE_UNSPECIFIED, msg);
}

void srv_api_handle(struct srv *s, struct srv_req *rq)
{
	const char *p = rq->path;
	if (!strcmp(p, "/search/") || !strcmp(p, "/search")) {
		do_search(s, rq);
	} else if (srv_api_is_document(p)) {
		do_document(s, rq);
	} else if (!strncmp(p, "/model-evaluation", 17) && (!p[17] || p[17] == '/')) {
		srv_modeleval(s, rq);
	} else if (!strcmp(p, "/state/v1/health") || !strcmp(p, "/state/v1") ||
	           !strcmp(p, "/state/v1/")) {
		answer(rq, 200, json_pack("{s:{s:s}}", "status", "code", "up"));
	} else if (srv_api_inline(p)) {
		do_metrics(s, rq);
	} else {
		char msg[256];
		snprintf(msg, sizeof msg, "no such resource '%.100s': try /search/, /document/v1/, "
		                          "/state/v1/health or /metrics/v2/values", p);
		answer(rq, 404, json_pack("{s:s}", "message", msg));
	}
}
