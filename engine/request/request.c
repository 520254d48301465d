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
#include <strings.h>

#include "../engine_int.h"

enum kind {
	ELSEWHERE,  /* read where it is used (named in `what`) */
	TEXT,       /* a string */
	COUNT,      /* a count: an integer, or a string of one, 0 .. max */
	NUMBER,     /* a number, kept as its JSON value */
	ANY,        /* its JSON value, checked by the part that reads it */
	ONLY,       /* accepted with the value in `what` only (what Strata always does) */
	BOOL,       /* true or false (or their text), into an int */
	REFUSED,    /* a parameter of Vespa's that Strata does not have: `what` says why */
};

/* A parameter by its full name, with Vespa's aliases (case-insensitive in
 * a request).  A name ending in ".*" stands for every name below it. */
struct key {
	const char *name;
	const char *alias[3];
	enum kind kind;
	size_t at;         /* where it goes in struct eng_request */
	long max;          /* COUNT: the largest */
	const char *what;
};

#define AT(m) offsetof(struct eng_request, m)
#define NO_ALIAS { NULL }

static const struct key keys[] = {
	{"yql", NO_ALIAS, TEXT, AT(yql), 0, "the query (else userQuery() of model.queryString)"},
	{"hits", {"count"}, COUNT, AT(hits), ENG_MAX_HITS, "the hits to show"},
	{"offset", {"start"}, COUNT, AT(offset), ENG_MAX_OFFSET, "the hits to skip first"},
	{"timeout", NO_ALIAS, ANY, AT(timeout), 0, "seconds, or with unit ms, s, m (deadline.c)"},
	{"queryProfile", NO_ALIAS, TEXT, AT(query_profile), 0, "the query profile to apply"},
	{"groupingSessionCache", NO_ALIAS, ANY, 0, 0, "accepted: Strata keeps no grouping cache"},
	{"noCache", NO_ALIAS, ANY, 0, 0, "accepted: Strata keeps no result cache"},
	{"searchChain", NO_ALIAS, ONLY, 0, 0, "vespa"},
	{"model.defaultIndex", {"default-index"}, TEXT, AT(default_index), 0,
	 "userQuery()'s field or fieldset"},
	{"model.queryString", {"query"}, TEXT, AT(query), 0, "the text of userQuery()"},
	{"model.type", {"type"}, TEXT, AT(type), 0,
	 "how userQuery() reads its text: all, any, weakAnd, phrase, web, tokenize, linguistics"},
	{"model.type.composite", NO_ALIAS, TEXT, AT(composite), 0, "and, or, weakAnd, phrase"},
	{"model.type.tokenization", NO_ALIAS, TEXT, AT(tokenization), 0,
	 "internal, linguistics"},
	{"model.type.syntax", NO_ALIAS, TEXT, AT(syntax), 0, "simple, web, none"},
	{"model.type.isYqlDefault", NO_ALIAS, ONLY, 0, 0, "false"},
	{"model.type.profile", NO_ALIAS, REFUSED, 0, 0, "Strata has one linguistics profile"},
	{"model.language", {"lang", "language"}, ONLY, 0, 0, "en"},
	{"model.locale", {"locale"}, ONLY, 0, 0, "en"},
	{"model.encoding", {"encoding"}, ONLY, 0, 0, "utf-8"},
	{"model.filter", {"filter"}, TEXT, AT(filter), 0,
	 "terms that filter userQuery()'s matches: +word, -word, \"phrase\"; others rank"},
	{"model.restrict", {"restrict"}, REFUSED, 0, 0,
	 "name the document types in the YQL's from clause"},
	{"model.sources", {"search", "sources"}, REFUSED, 0, 0,
	 "name the sources in the YQL's from clause"},
	{"model.searchPath", {"path"}, REFUSED, 0, 0, "a single node has no search path"},
	{"model.searchGroup", {"searchgroup"}, REFUSED, 0, 0, "a single node has no groups"},
	{"ranking.profile", {"ranking"}, TEXT, AT(profile), 0, "the rank profile"},
	{"ranking.features.*", {"input.*", "rankfeature.*"}, ELSEWHERE, 0, 0,
	 "query(NAME): the profile's input (query.c)"},
	{"ranking.matching.*", NO_ALIAS, ELSEWHERE, 0, 0,
	 "nearest-neighbour settings (match/nearest.c)"},
	{"ranking.properties.vespa.now", {"rankproperty.vespa.now"}, NUMBER, AT(now), 0,
	 "seconds: the time of the feature now"},
	{"ranking.properties.*", {"rankproperty.*"}, REFUSED, 0, 0,
	 "Strata's rank features read no rank properties but vespa.now"},
	{"ranking.softtimeout.enable", NO_ALIAS, ANY, AT(soft_enable), 0, "false: a timeout fails"},
	{"ranking.softtimeout.factor", NO_ALIAS, ANY, AT(soft_factor), 0,
	 "the timeout's share to stop at"},
	{"ranking.listFeatures", {"rankfeatures"}, ONLY, 0, 0, "false"},
	{"ranking.sorting", {"sorting"}, TEXT, AT(sorting), 0,
	 "Vespa's sorting language: [+|-]field, lowercase(), uca(), raw(), [relevance]"},
	{"ranking.freshness", NO_ALIAS, REFUSED, 0, 0, "use the freshness rank feature"},
	{"ranking.location", NO_ALIAS, REFUSED, 0, 0, "use geoLocation() in the YQL"},
	{"ranking.keepRankCount", NO_ALIAS, REFUSED, 0, 0, "set keep-rank-count in the profile"},
	{"ranking.totalKeepRankCount", NO_ALIAS, REFUSED, 0, 0, "set keep-rank-count in the profile"},
	{"ranking.rankScoreDropLimit", NO_ALIAS, REFUSED, 0, 0,
	 "set rank-score-drop-limit in the profile"},
	{"ranking.secondPhase.*", NO_ALIAS, REFUSED, 0, 0, "set rerank-count in the profile"},
	{"ranking.globalPhase.*", NO_ALIAS, REFUSED, 0, 0, "set rerank-count in the profile"},
	{"ranking.matchPhase.*", {"ranking.matchphase.*"}, REFUSED, 0, 0,
	 "Strata has no match phase degradation"},
	{"ranking.queryCache", NO_ALIAS, ONLY, 0, 0, "false"},
	{"ranking.elementGap.*", NO_ALIAS, REFUSED, 0, 0, "set element-gap in the schema"},
	{"ranking.significance.*", NO_ALIAS, REFUSED, 0, 0,
	 "significance comes from the corpus"},
	{"presentation.summary", {"summary"}, TEXT, AT(summary), 0, "the summary class to show"},
	{"presentation.format", {"format"}, ONLY, 0, 0, "json"},
	{"presentation.bolding", {"bolding"}, ONLY, 0, 0, "true"},
	{"presentation.timing", NO_ALIAS, BOOL, AT(timing), 0, "true: the result says its times"},
	{"presentation.template", NO_ALIAS, REFUSED, 0, 0, "Strata renders JSON only"},
	{"presentation.format.tensors", {"format.tensors"}, TEXT, AT(tensor_format), 0,
	 "short (the default) or short-value"},
	{"select", NO_ALIAS, ELSEWHERE, 0, 0, "a grouping, as after '|' in the YQL (query.c)"},
	{"collapsefield", NO_ALIAS, TEXT, AT(collapse_field), 0,
	 "fields (comma-separated) whose values a higher hit already showed collapsesize times"},
	{"collapsesize", NO_ALIAS, COUNT, AT(collapse_size), ENG_MAX_COLLAPSE,
	 "the hits kept for each value (1)"},
	{"collapsesize.*", NO_ALIAS, ELSEWHERE, 0, 0, "collapsesize of one field (query.c)"},
	{"collapse.summary", NO_ALIAS, REFUSED, 0, 0,
	 "Strata reads the collapse fields from the stored documents, whatever the summary class"},
	{"grouping.*", NO_ALIAS, REFUSED, 0, 0, "write max() and precision() in the grouping"},
	{"timezone", NO_ALIAS, REFUSED, 0, 0, "grouping's time functions are in UTC"},
	{"trace.level", {"tracelevel"}, ELSEWHERE, 0, 0, "over HTTP: 1 or more adds a trace (serve/)"},
	{"trace.*", NO_ALIAS, REFUSED, 0, 0, "Strata traces with trace.level only"},
	{"streaming.*", NO_ALIAS, REFUSED, 0, 0, "Strata has no streaming search"},
	{"rules.off", NO_ALIAS, ONLY, 0, 0, "true"},
	{"rules.*", NO_ALIAS, REFUSED, 0, 0, "Strata has no semantic rules"},
	{"tracelevel.rules", NO_ALIAS, REFUSED, 0, 0, "Strata has no semantic rules"},
	{"dispatch.*", NO_ALIAS, REFUSED, 0, 0, "a single node does not dispatch"},
	{"recall", NO_ALIAS, REFUSED, 0, 0, "write the condition in the YQL"},
	{"user", NO_ALIAS, REFUSED, 0, 0, "Strata has no user profiles"},
	{"hitcountestimate", NO_ALIAS, REFUSED, 0, 0, "Strata counts every match"},
	{"metrics.ignore", NO_ALIAS, ANY, 0, 0, "accepted: Strata keeps no per-query metrics"},
	{"weakAnd.replace", NO_ALIAS, ONLY, 0, 0, "false"},
	{"wand.hits", NO_ALIAS, REFUSED, 0, 0, "annotate the weakAnd or wand with targetHits"},
	{"sorting.degrading", NO_ALIAS, REFUSED, 0, 0, "Strata has no match phase degradation"},
	{"matchPhase.*", NO_ALIAS, REFUSED, 0, 0, "Strata has no match phase degradation"},
};

/* The first parts of the names above: a key under one of them that the
 * table does not list is a parameter of Vespa's that Strata lacks, not one
 * of the application's own. */
static const char *const spaces[] = {
	"model", "ranking", "presentation", "trace", "grouping", "streaming", "rules",
	"dispatch", "collapse", "matchPhase", "metrics", "weakAnd", "wand", "sorting",
	"tracelevel", "input", "rankfeature", "rankproperty",
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

/* Whether name matches pattern pat (a name, or one ending in ".*": any name
 * below it), case-insensitively when nocase; *rest is what the ".*" took. */
static int match_name(const char *pat, const char *name, int nocase, const char **rest)
{
	size_t n = strlen(pat);
	if (n > 2 && !strcmp(pat + n - 2, ".*")) {
		n--; /* keep the dot */
		if (strlen(name) <= n ||
		    (nocase ? strncasecmp(pat, name, n) : strncmp(pat, name, n)))
			return 0;
		*rest = name + n;
		return 1;
	}
	*rest = NULL;
	return nocase ? !strcasecmp(pat, name) : !strcmp(pat, name);
}

/* The row of name (its full name or an alias), its full name into full. */
static const struct key *find_key(const char *name, char *full, size_t size)
{
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const struct key *k = &keys[i];
		const char *rest;
		int hit = match_name(k->name, name, 0, &rest);
		for (int a = 0; !hit && a < 3 && k->alias[a]; a++)
			hit = match_name(k->alias[a], name, 1, &rest);
		if (!hit)
			continue;
		if (rest)
			snprintf(full, size, "%.*s%s", (int)strlen(k->name) - 1, k->name, rest);
		else
			snprintf(full, size, "%s", k->name);
		return k;
	}
	return NULL;
}

/* Whether name's first part is one of Vespa's parameter spaces. */
static int in_space(const char *name)
{
	size_t n = strcspn(name, ".");
	for (size_t i = 0; i < sizeof spaces / sizeof spaces[0]; i++)
		if (strlen(spaces[i]) == n && !strncasecmp(spaces[i], name, n))
			return 1;
	return 0;
}

/* Whether some row's name lies below prefix ("ranking." for "ranking"). */
static int is_space(const char *prefix)
{
	size_t n = strlen(prefix);
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		if (!strncasecmp(keys[i].name, prefix, n) && keys[i].name[n] == '.')
			return 1;
		for (int a = 0; a < 3 && keys[i].alias[a]; a++)
			if (!strncasecmp(keys[i].alias[a], prefix, n) && keys[i].alias[a][n] == '.')
				return 1;
	}
	return 0;
}

/* The text of a value that a request gives as a string or a JSON scalar. */
static const char *scalar_text(const json_t *v, char *buf, size_t size)
{
	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_boolean(v))
		return json_is_true(v) ? "true" : "false";
	if (json_is_integer(v)) {
		snprintf(buf, size, "%lld", (long long)json_integer_value(v));
		return buf;
	}
	return NULL;
}

static int check_row(const struct key *k, const char *name, const char *full, const json_t *v,
                     struct strata_error *err)
{
	char buf[32];
	const char *t;
	switch (k->kind) {
	case REFUSED:
		return base_err(err, STRATA_NOT_IMPLEMENTED, "request parameter '%s' is not supported: %s",
		                name, k->what);
	case ONLY:
		t = scalar_text(v, buf, sizeof buf);
		if (!t || (strcasecmp(t, k->what) &&
		           !(!strcmp(k->what, "en") && !strncasecmp(t, "en-", 3)) &&
		           !(!strcmp(k->what, "en") && !strncasecmp(t, "en_", 3))))
			return base_err(err, STRATA_NOT_IMPLEMENTED,
			                "request parameter '%s' may only be %s in Strata", name, k->what);
		return 0;
	default:
		break;
	}
	if (!strncmp(full, "ranking.features.", 17) &&
	    (strncmp(full + 17, "query(", 6) || full[strlen(full) - 1] != ')'))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "request parameter '%s': only query(NAME) features may be set", name);
	if (!strncmp(full, "ranking.matching.", 17)) {
		for (int i = 0; i < RANK_NN_NSETTINGS; i++)
			if (!strcmp(rank_nn_setting_info(i)->query_name, full + 17))
				return 0;
		return base_err(err, STRATA_NOT_IMPLEMENTED,
		                "request parameter '%s' is not a ranking.matching setting Strata has",
		                name);
	}
	return 0;
}

/* The members of object o, named under prefix, into the flat object out. */
static int flatten(const json_t *o, const char *prefix, json_t *out, int depth,
                   struct strata_error *err)
{
	const char *key;
	json_t *v;
	if (depth > 8)
		return base_err(err, STRATA_INVALID_ARGUMENT, "request: objects nested too deep");
	json_object_foreach((json_t *)o, key, v) {
		char name[512], full[512];
		if ((size_t)snprintf(name, sizeof name, "%s%s%s", prefix, *prefix ? "." : "", key) >=
		    sizeof name)
			return base_err(err, STRATA_INVALID_ARGUMENT, "request parameter '%.60s...' is "
			                "too long", name);
		const struct key *k = find_key(name, full, sizeof full);
		int scalar_row = k && (k->kind == TEXT || k->kind == COUNT || k->kind == NUMBER ||
		                       k->kind == ONLY || k->kind == REFUSED);
		if (json_is_object(v) && (!k || scalar_row) && (k || in_space(name)) &&
		    (is_space(name) || (k && k->kind != REFUSED))) {
			int rc = flatten(v, name, out, depth + 1, err);
			if (rc)
				return rc;
			continue;
		}
		if (!k && is_space(name) && !json_is_object(v))
			return base_err(err, STRATA_INVALID_ARGUMENT, "\"%s\" must be an object",
			                name);
		if (!k && in_space(name))
			return base_err(err, STRATA_NOT_IMPLEMENTED,
			                "request parameter '%s' is not one Strata knows", name);
		if (k) {
			int rc = check_row(k, name, full, v, err);
			if (rc)
				return rc;
		} else {
			snprintf(full, sizeof full, "%s", name);
		}
		if (json_object_get(out, full))
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "request parameter '%s' is given twice (also as another of its "
			                "names)", full);
		if (json_object_set(out, full, v))
			return base_nomem(err, "request");
	}
	return 0;
}

int eng_request_flatten(const json_t *json, json_t **out, struct strata_error *err)
{
	*out = NULL;
	if (!json_is_object(json))
		return base_err(err, STRATA_INVALID_ARGUMENT, "the request must be a JSON object");
	json_t *flat = json_object();
	if (!flat)
		return base_nomem(err, "request");
	int rc = flatten(json, "", flat, 0, err);
	if (rc) {
		json_decref(flat);
		return rc;
	}
	*out = flat;
	return 0;
}

/* ---- model.type: how userQuery() reads its text (userquery.c) ---------------------- */

static const struct {
	const char *name;
	struct eng_grammar g;
} grammars[] = {
	{"all", {ENG_COMPOSITE_AND, ENG_SYNTAX_SIMPLE, 0}},
	{"any", {ENG_COMPOSITE_OR, ENG_SYNTAX_SIMPLE, 0}},
	{"weakAnd", {ENG_COMPOSITE_WEAKAND, ENG_SYNTAX_SIMPLE, 0}},
	{"phrase", {ENG_COMPOSITE_PHRASE, ENG_SYNTAX_NONE, 0}},
	{"web", {ENG_COMPOSITE_AND, ENG_SYNTAX_WEB, 0}},
	{"tokenize", {ENG_COMPOSITE_WEAKAND, ENG_SYNTAX_NONE, 0}},
	{"linguistics", {ENG_COMPOSITE_WEAKAND, ENG_SYNTAX_NONE, 1}},
};

int eng_grammar_named(const char *name, struct eng_grammar *g)
{
	for (size_t i = 0; i < sizeof grammars / sizeof grammars[0]; i++)
		if (!strcmp(grammars[i].name, name)) {
			*g = grammars[i].g;
			return 0;
		}
	return -1;
}

static int pick(const char *key, const char *v, const char *const *names, int n, int *out,
                struct strata_error *err)
{
	for (int i = 0; i < n; i++)
		if (names[i] && !strcmp(names[i], v)) {
			*out = i;
			return 0;
		}
	if (!strcmp(v, "near") || !strcmp(v, "oNear"))
		return base_err(err, STRATA_NOT_IMPLEMENTED, "%s '%s' is not supported", key, v);
	return base_err(err, STRATA_INVALID_ARGUMENT, "%s '%s' is not one of Vespa's", key, v);
}

int eng_query_type(struct eng_request *r, struct strata_error *err)
{
	static const char *const composites[] = { NULL, "and", "or", "weakAnd", "phrase" };
	static const char *const syntaxes[] = { NULL, "simple", "web", "none" };
	static const char *const tokenizers[] = { "internal", "linguistics" };
	eng_grammar_named("weakAnd", &r->grammar);
	if (r->type && eng_grammar_named(r->type, &r->grammar)) {
		if (!strcmp(r->type, "yql"))
			return base_err(err, STRATA_NOT_IMPLEMENTED,
			                "model.type 'yql' is not supported: give the YQL as \"yql\"");
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "model.type '%s' is not one of all, any, weakAnd, phrase, web, tokenize, "
		                "linguistics", r->type);
	}
	int rc = 0;
	if (r->composite)
		rc = pick("model.type.composite", r->composite, composites, 5, &r->grammar.composite,
		          err);
	if (!rc && r->syntax)
		rc = pick("model.type.syntax", r->syntax, syntaxes, 4, &r->grammar.syntax, err);
	if (!rc && r->tokenization)
		rc = pick("model.type.tokenization", r->tokenization, tokenizers, 2,
		          &r->grammar.linguistics, err);
	return rc;
}

int strata_request_flatten(const json_t *req, json_t **out, struct strata_error *err)
{
	return eng_request_flatten(req, out, err);
}

int eng_request_read(const json_t *json, struct eng_request *r, struct strata_error *err)
{
	memset(r, 0, sizeof *r);
	r->hits = -1;
	r->offset = -1;
	r->collapse_size = -1;
	int rc = eng_request_flatten(json, &r->flat, err);
	if (rc)
		return rc;
	r->json = r->flat;
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const struct key *k = &keys[i];
		const json_t *v = json_object_get(r->flat, k->name);
		char *at = (char *)r + k->at;
		if (!v || !k->at)
			continue;
		switch (k->kind) {
		case TEXT:
			if (!json_is_string(v))
				return base_err(err, STRATA_INVALID_ARGUMENT, "\"%s\" must be a string",
				                k->name);
			*(const char **)at = json_string_value(v);
			break;
		case COUNT:
			if ((rc = count(v, k->name, k->max, (long *)(void *)at, err)) != 0)
				return rc;
			break;
		case NUMBER:
			if (json_is_string(v)) {
				char *end;
				double x = strtod(json_string_value(v), &end);
				if (end == json_string_value(v) || *end)
					return base_err(err, STRATA_INVALID_ARGUMENT,
					                "%s: expected a number (%s)", k->name, k->what);
				json_t *num = json_real(x);
				if (!num || json_object_set_new(r->flat, k->name, num))
					return base_nomem(err, "request");
				v = json_object_get(r->flat, k->name);
			}
			if (!json_is_number(v))
				return base_err(err, STRATA_INVALID_ARGUMENT, "%s: expected a number (%s)",
				                k->name, k->what);
			*(const json_t **)at = v;
			break;
		case ANY:
			*(const json_t **)at = v;
			break;
		case BOOL: {
			char buf[32];
			const char *t = scalar_text(v, buf, sizeof buf);
			if (!t || (strcmp(t, "true") && strcmp(t, "false")))
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "\"%s\" must be true or false", k->name);
			*(int *)(void *)at = !strcmp(t, "true");
			break;
		}
		default:
			break;
		}
	}
	if (r->tensor_format && strcmp(r->tensor_format, "short")) {
		if (strcmp(r->tensor_format, "short-value"))
			return base_err(err, STRATA_NOT_IMPLEMENTED,
			                "presentation.format.tensors '%s' is not supported: Strata writes "
			                "tensors in the short form, or short-value", r->tensor_format);
		r->short_value = 1;
	}
	if (!r->yql && r->query)
		r->yql = "select * from sources * where userQuery()";
	if (!r->yql)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "the request has no \"yql\" (nor a \"query\" to search for)");
	if (!r->profile)
		r->profile = "default";
	return eng_query_type(r, err);
}

void eng_request_done(struct eng_request *r)
{
	json_decref(r->flat);
	r->flat = NULL;
	r->json = NULL;
}
