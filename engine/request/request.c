/*
 * request.c: what a search request may hold, listed once (keys[]), and the
 * request read once into struct eng_request.
 *
 * A request is a JSON object.  A key is found as Vespa's query API takes
 * it: flat ("ranking.profile") or as the same path through nested objects
 * ({"ranking": {"profile": ...}}).  The keys every search reads are read
 * here, their types checked, into the struct; the rows marked ELSEWHERE
 * are read by the part of the engine that uses them (named in the row),
 * from the request's JSON, which the struct keeps: query inputs, the
 * nearest-neighbour settings, the server's trace.  Any other key is a
 * parameter, for userInput(@p) and embed(ID, @p).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../engine_int.h"

enum kind {
	ELSEWHERE,  /* read where it is used */
	TEXT,       /* a string */
	COUNT,      /* a count: an integer, or a string of one, 0 .. max */
	NUMBER,     /* a number, kept as its JSON value */
	ANY,        /* its JSON value, checked by the part that reads it */
	OBJECT,     /* an object */
	ALIAS,      /* a string: the key named in `what`, when that is not given */
};

struct key {
	const char *name;
	enum kind kind;
	size_t at;         /* where it goes in struct eng_request */
	long max;          /* COUNT: the largest */
	const char *what;
};

#define AT(m) offsetof(struct eng_request, m)

static const struct key keys[] = {
	{"yql", TEXT, AT(yql), 0, "the query (required)"},
	{"hits", COUNT, AT(hits), ENG_MAX_HITS, "the hits to show"},
	{"offset", COUNT, AT(offset), ENG_MAX_OFFSET, "the hits to skip first"},
	{"ranking.profile", TEXT, AT(profile), 0, "the rank profile"},
	{"ranking", ALIAS, AT(profile), 0, "ranking.profile"},
	{"timeout", ANY, AT(timeout), 0, "seconds, or with unit ms, s, m (deadline.c)"},
	{"ranking.softtimeout.enable", ANY, AT(soft_enable), 0, "false: a timeout fails"},
	{"ranking.softtimeout.factor", ANY, AT(soft_factor), 0, "the timeout's share to stop at"},
	{"ranking.properties.vespa.now", NUMBER, AT(now), 0, "seconds: the time of the feature now"},
	{"presentation.summary", TEXT, AT(summary), 0, "the summary class to show"},
	{"query", TEXT, AT(query), 0, "the text of userQuery()"},
	{"model.defaultIndex", TEXT, AT(default_index), 0, "userQuery()'s field or fieldset"},
	{"input", OBJECT, AT(input), 0, "inputs: {\"query(q)\": ...}"},
	{"input.query(NAME)", ELSEWHERE, 0, 0, "the profile's input query(NAME) (query.c)"},
	{"ranking.features.query(NAME)", ELSEWHERE, 0, 0, "the same (query.c)"},
	{"ranking.matching.*", ELSEWHERE, 0, 0, "nearest-neighbour settings (match/nearest.c)"},
	{"trace.level", ELSEWHERE, 0, 0, "over HTTP: 1 or more adds a trace (serve/)"},
};

const json_t *eng_request_param(const json_t *req, const char *name)
{
	const json_t *v = json_object_get(req, name);
	if (v)
		return v;
	char part[300];
	const char *p = name;
	v = req;
	while (json_is_object(v)) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		if (n >= sizeof part)
			return NULL;
		memcpy(part, p, n);
		part[n] = 0;
		v = json_object_get(v, part);
		if (!dot)
			return v;
		p = dot + 1;
	}
	return NULL;
}

static int count(const json_t *v, const char *name, long max, long *out,
                 struct strata_error *err)
{
	long long x;
	if (json_is_integer(v)) {
		x = json_integer_value(v);
	} else if (json_is_string(v)) {
		char *end;
		x = strtoll(json_string_value(v), &end, 10);
		if (*end || end == json_string_value(v))
			return base_err(err, STRATA_INVALID_ARGUMENT, "\"%s\" must be a number", name);
	} else {
		return base_err(err, STRATA_INVALID_ARGUMENT, "\"%s\" must be a number", name);
	}
	if (x < 0)
		return base_err(err, STRATA_INVALID_ARGUMENT, "\"%s\" must not be negative", name);
	if (x > max)
		return base_err(err, STRATA_INVALID_ARGUMENT, "\"%s\" is %lld, the maximum is %ld",
		                name, x, max);
	*out = (long)x;
	return 0;
}

int eng_request_read(const json_t *json, struct eng_request *r, struct strata_error *err)
{
	memset(r, 0, sizeof *r);
	r->json = json;
	r->hits = -1;
	r->offset = -1;
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const struct key *k = &keys[i];
		const json_t *v = k->kind == ELSEWHERE ? NULL : eng_request_param(json, k->name);
		char *at = (char *)r + k->at;
		if (!v)
			continue;
		switch (k->kind) {
		case ELSEWHERE:
			break;
		case ALIAS: /* "ranking": "P"; as an object it holds ranking.profile and others */
			if (json_is_string(v) && !*(const char **)at)
				*(const char **)at = json_string_value(v);
			else if (!json_is_string(v) && !json_is_object(v))
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "\"%s\" must be a string (%s) or an object", k->name, k->what);
			break;
		case TEXT:
			if (!json_is_string(v))
				return base_err(err, STRATA_INVALID_ARGUMENT, "\"%s\" must be a string",
				                k->name);
			*(const char **)at = json_string_value(v);
			break;
		case COUNT: {
			int rc = count(v, k->name, k->max, (long *)(void *)at, err);
			if (rc)
				return rc;
			break;
		}
		case NUMBER:
			if (!json_is_number(v))
				return base_err(err, STRATA_INVALID_ARGUMENT, "%s: expected a number (%s)",
				                k->name, k->what);
			*(const json_t **)at = v;
			break;
		case OBJECT:
			if (!json_is_object(v))
				return base_err(err, STRATA_INVALID_ARGUMENT, "\"%s\" must be an object (%s)",
				                k->name, k->what);
			/* fall through */
		case ANY:
			*(const json_t **)at = v;
			break;
		}
	}
	if (!r->yql)
		return base_err(err, STRATA_INVALID_ARGUMENT, "the request has no \"yql\"");
	if (!r->profile)
		r->profile = "default";
	return 0;
}
