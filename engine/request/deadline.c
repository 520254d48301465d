/*
 * deadline.c: the time limit of one search, as Vespa's query API sets it.
 *
 * A request's "timeout" (seconds, or a number with unit ms, s or m; its
 * YQL's "timeout N", in milliseconds, before it) starts when
 * strata_query_json() has read the request.  With Vespa's soft timeout on (its
 * default; "ranking.softtimeout.enable": false turns it off) the query stops
 * its work at timeout x "ranking.softtimeout.factor" (0.5, the default of
 * Vespa's content nodes) and answers with what it has, its coverage marked
 * degraded by timeout; with it off, passing the timeout fails the query with
 * STRATA_TIMEOUT.  query.c asks eng_deadline_check() between blocks of
 * documents (matching, first phase) and between second-phase batches, never
 * before the first block: a query always gets some work done, and the check
 * is one clock read per block.  A request without "timeout" has no deadline.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../engine_int.h"

#define DEFAULT_FACTOR 0.5

int eng_timeout_text(const char *s, double *out)
{
	char *end;
	double x = strtod(s, &end);
	if (end == s)
		return -1;
	while (*end == ' ')
		end++;
	double unit = !*end || !strcmp(end, "s") ? 1 : !strcmp(end, "ms") ? 1e-3
	            : !strcmp(end, "m") ? 60 : -1;
	if (unit < 0 || !(x >= 0) || !isfinite(x))
		return -1;
	*out = x * unit;
	return 0;
}

int eng_timeout_parse(const json_t *v, double *out)
{
	if (json_is_string(v))
		return eng_timeout_text(json_string_value(v), out);
	double x = json_is_number(v) ? json_number_value(v) : -1;
	if (!(x >= 0) || !isfinite(x))
		return -1;
	*out = x;
	return 0;
}

static int get_bool(const json_t *v, int *out)
{
	if (json_is_boolean(v)) {
		*out = json_is_true(v);
		return 0;
	}
	if (json_is_string(v) && (!strcmp(json_string_value(v), "true") ||
	                          !strcmp(json_string_value(v), "false"))) {
		*out = !strcmp(json_string_value(v), "true");
		return 0;
	}
	return -1;
}

static int get_number(const json_t *v, double *out)
{
	if (json_is_number(v)) {
		*out = json_number_value(v);
		return 0;
	}
	if (!json_is_string(v))
		return -1;
	char *end;
	*out = strtod(json_string_value(v), &end);
	return end == json_string_value(v) || *end ? -1 : 0;
}

int eng_deadline_init(struct eng_deadline *d, const struct eng_request *req, long yql_ms,
                      struct strata_error *err)
{
	memset(d, 0, sizeof *d);
	d->soft = 1;
	d->at = INFINITY;
	const json_t *v = req->timeout;
	if (v && eng_timeout_parse(v, &d->timeout))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "\"timeout\": expected seconds, or a number with unit ms, s or m");
	double factor = DEFAULT_FACTOR;
	const json_t *en = req->soft_enable;
	if (en && get_bool(en, &d->soft))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "\"ranking.softtimeout.enable\": expected true or false");
	const json_t *fv = req->soft_factor;
	if (fv && (get_number(fv, &factor) || !(factor > 0 && factor <= 1)))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "\"ranking.softtimeout.factor\": expected a number above 0 and at most 1");
	if (yql_ms >= 0) /* YQL's "timeout N", as in Vespa, wins */
		d->timeout = (double)yql_ms * 1e-3;
	if (v || yql_ms >= 0)
		d->at = base_now() + d->timeout * (d->soft ? factor : 1);
	return 0;
}

int eng_deadline_check(struct eng_deadline *d, struct strata_error *err)
{
	if (d->passed)
		return 1;
	if (isinf(d->at) || base_now() < d->at)
		return 0;
	if (!d->soft)
		return base_err(err, STRATA_TIMEOUT,
		                "the query timed out: it ran past its timeout of %.0f ms "
		                "(ranking.softtimeout.enable is false)", d->timeout * 1e3);
	d->passed = 1;
	return 1;
}

json_t *eng_coverage_json(uint64_t docs, uint64_t covered, int degraded)
{
	/* below 100 whenever a document was left out, rounded down */
	uint64_t pct = !degraded || !docs ? 100 : covered * 100 / docs;
	if (degraded && covered < docs && pct > 99)
		pct = 99;
	json_t *c = json_pack("{s:I, s:I, s:b, s:i, s:i, s:i}", "coverage", (json_int_t)pct,
	                      "documents", (json_int_t)(degraded ? covered : docs), "full", !degraded,
	                      "nodes", 1, "results", 1, "resultsFull", !degraded);
	if (c && degraded &&
	    json_object_set_new(c, "degraded",
	                        json_pack("{s:b, s:b, s:b, s:b}", "match-phase", 0, "timeout", 1,
	                                  "adaptive-timeout", 0, "non-ideal-state", 0))) {
		json_decref(c);
		return NULL;
	}
	return c;
}
