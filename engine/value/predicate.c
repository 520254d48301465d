/*
 * predicate.c: predicate fields, Vespa's boolean constraints on a query's
 * attributes, such as "gender in [Female] and age in [20..30]".
 *
 *   predicate   = disjunction
 *   disjunction = conjunction { 'or' conjunction }
 *   conjunction = unit { 'and' unit }
 *   unit        = [ 'not' ] ( '(' disjunction ')' | leaf ) | 'true' | 'false'
 *   leaf        = value [ 'not' ] 'in' ( '[' value { ',' value } ']' | range | value )
 *   range       = '[' [ integer ] '..' [ integer ] ']'
 *   value       = { letter | digit | '_' } | 'text' | "text"   (\ escapes a quote)
 *
 * Keywords are case-insensitive.  A document's predicate is checked and
 * stored in a canonical form (single spaces, lowercase keywords, values
 * quoted only when they must be: 'a b'), which get and summaries show.  The
 * YQL operator predicate(field, {"key": "value", ...}, {"key": 123L, ...})
 * matches a document whose predicate holds for the query's attributes:
 * "key in [v, ...]" holds when the query gives key one of the values (a
 * key may be given several, as an array), "key in [lo..hi]" when it gives
 * the range attribute key a value from lo to hi (bounds included, either
 * may be left out), "not" negates.  A query may hold up to 64 subqueries,
 * each with the attributes whose bitmap names it ({"0x3": {...}}); the
 * result is the bitmap of those for which the predicate holds.  Evaluation
 * is exact: the stored text is parsed again for each document tested (and
 * each distinct subquery), with no index and no memory allocated (one
 * parser does both checking and evaluating).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../engine_int.h"

#define VALUE_MAX 1024  /* bytes of one value */
#define DEPTH_MAX 64    /* nested parentheses */

struct pp {
	const char *s, *p, *end;
	const struct yql_node *q; /* evaluate for this query, or NULL */
	int bit;                  /* ... its subquery bit (its attributes with it) */
	char *out;                /* the canonical text, or NULL */
	size_t len, cap;
	int depth;
	int failed;
	char msg[200];
	char val[VALUE_MAX];      /* the last value read, unescaped */
	size_t vlen;
	int quoted;               /* it was quoted (so no keyword) */
};

static int fail(struct pp *pp, const char *fmt, const char *arg)
{
	if (!pp->failed) {
		char m[160];
		snprintf(m, sizeof m, fmt, arg);
		snprintf(pp->msg, sizeof pp->msg, "column %d: %s", (int)(pp->p - pp->s) + 1, m);
	}
	pp->failed = 1;
	return -1;
}

static void emit(struct pp *pp, const char *s, size_t n)
{
	if (!pp->out)
		return;
	if (pp->len + n >= pp->cap) {
		fail(pp, "the predicate is too long%s", "");
		return;
	}
	memcpy(pp->out + pp->len, s, n);
	pp->len += n;
}

static void emits(struct pp *pp, const char *s)
{
	emit(pp, s, strlen(s));
}

static void skip_ws(struct pp *pp)
{
	while (pp->p < pp->end && isspace((unsigned char)*pp->p))
		pp->p++;
}

static int word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* The next token is the keyword kw (a bare word): consume it, 1. */
static int take_kw(struct pp *pp, const char *kw)
{
	skip_ws(pp);
	size_t n = strlen(kw);
	if ((size_t)(pp->end - pp->p) < n || strncasecmp(pp->p, kw, n) != 0 ||
	    (pp->p + n < pp->end && word_char(pp->p[n])))
		return 0;
	pp->p += n;
	return 1;
}

static int take_punct(struct pp *pp, const char *s)
{
	skip_ws(pp);
	size_t n = strlen(s);
	if ((size_t)(pp->end - pp->p) < n || strncmp(pp->p, s, n) != 0)
		return 0;
	pp->p += n;
	return 1;
}

static int is_keyword(const char *s, size_t n)
{
	static const char *const kw[] = {"and", "or", "not", "in", "true", "false"};
	for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
		if (strlen(kw[i]) == n && strncasecmp(s, kw[i], n) == 0)
			return 1;
	return 0;
}

/* A value into pp->val: a bare word or a quoted string. */
static int value(struct pp *pp, const char *what)
{
	skip_ws(pp);
	pp->vlen = 0;
	pp->quoted = 0;
	if (pp->p < pp->end && (*pp->p == '\'' || *pp->p == '"')) {
		char q = *pp->p++;
		pp->quoted = 1;
		for (;;) {
			if (pp->p >= pp->end)
				return fail(pp, "a quoted value is not closed%s", "");
			char c = *pp->p++;
			if (c == q)
				break;
			if (c == '\\') {
				if (pp->p >= pp->end)
					return fail(pp, "a quoted value is not closed%s", "");
				c = *pp->p++;
			}
			if (pp->vlen + 1 >= VALUE_MAX)
				return fail(pp, "a value is longer than 1023 bytes%s", "");
			pp->val[pp->vlen++] = c;
		}
	} else {
		while (pp->p < pp->end && word_char(*pp->p)) {
			if (pp->vlen + 1 >= VALUE_MAX)
				return fail(pp, "a value is longer than 1023 bytes%s", "");
			pp->val[pp->vlen++] = *pp->p++;
		}
		if (!pp->vlen)
			return fail(pp, "expected %s", what);
	}
	pp->val[pp->vlen] = 0;
	return 0;
}

/* pp->val as the canonical text writes it: bare when it may be. */
static void emit_value(struct pp *pp)
{
	int bare = pp->vlen > 0 && !is_keyword(pp->val, pp->vlen);
	for (size_t i = 0; i < pp->vlen && bare; i++)
		bare = word_char(pp->val[i]);
	if (bare) {
		emit(pp, pp->val, pp->vlen);
		return;
	}
	emits(pp, "'");
	for (size_t i = 0; i < pp->vlen; i++) {
		if (pp->val[i] == '\'' || pp->val[i] == '\\')
			emits(pp, "\\");
		emit(pp, &pp->val[i], 1);
	}
	emits(pp, "'");
}

/* An integer bound of a range; *has = 0 when left out. */
static int bound(struct pp *pp, int *has, int64_t *v)
{
	skip_ws(pp);
	const char *b = pp->p;
	if (pp->p < pp->end && (*pp->p == '-' || *pp->p == '+'))
		pp->p++;
	while (pp->p < pp->end && isdigit((unsigned char)*pp->p))
		pp->p++;
	*has = pp->p > b;
	if (!*has)
		return 0;
	char buf[32];
	size_t n = (size_t)(pp->p - b);
	if (n >= sizeof buf || !isdigit((unsigned char)pp->p[-1])) {
		pp->p = b;
		return fail(pp, "expected an integer%s", "");
	}
	memcpy(buf, b, n);
	buf[n] = 0;
	errno = 0;
	long long x = strtoll(buf, NULL, 10);
	if (errno) {
		pp->p = b;
		return fail(pp, "%s does not fit a long", buf);
	}
	*v = x;
	return 0;
}

/* Whether the query gives feature key the value pp->val. */
static int has_feature(const struct pp *pp, const char *key)
{
	const struct yql_node *q = pp->q;
	for (int i = 0; q && i < q->nvals; i++)
		if ((q->fmasks[i] >> pp->bit & 1) && !strcmp(q->strs[2 * i], key) &&
		    strlen(q->strs[2 * i + 1]) == pp->vlen &&
		    !memcmp(q->strs[2 * i + 1], pp->val, pp->vlen))
			return 1;
	return 0;
}

static int has_range(const struct pp *pp, const char *key, int has_lo, int64_t lo, int has_hi,
                     int64_t hi)
{
	const struct yql_node *q = pp->q;
	for (int i = 0; q && i < q->nranges; i++)
		if ((q->rmasks[i] >> pp->bit & 1) && !strcmp(q->rkeys[i], key) &&
		    (!has_lo || q->rvals[i] >= lo) &&
		    (!has_hi || q->rvals[i] <= hi))
			return 1;
	return 0;
}

/* After "key [not] in": the values or the range; the leaf's truth. */
static int leaf_set(struct pp *pp, const char *key)
{
	int hit = 0;
	if (!take_punct(pp, "[")) {
		if (value(pp, "'[' or a value after 'in'"))
			return -1;
		emits(pp, "[");
		emit_value(pp);
		emits(pp, "]");
		return has_feature(pp, key);
	}
	emits(pp, "[");
	skip_ws(pp);
	const char *save = pp->p;
	int has_lo, has_hi;
	int64_t lo = 0, hi = 0;
	if (bound(pp, &has_lo, &lo) == 0 && take_punct(pp, "..")) {
		if (bound(pp, &has_hi, &hi) || !take_punct(pp, "]"))
			return fail(pp, "expected ']' after a range%s", "");
		if (has_lo && has_hi && lo > hi)
			return fail(pp, "a range's lower bound is above its upper bound%s", "");
		char b[64];
		if (has_lo) {
			snprintf(b, sizeof b, "%lld", (long long)lo);
			emits(pp, b);
		}
		emits(pp, "..");
		if (has_hi) {
			snprintf(b, sizeof b, "%lld", (long long)hi);
			emits(pp, b);
		}
		emits(pp, "]");
		return has_range(pp, key, has_lo, lo, has_hi, hi);
	}
	if (pp->failed)
		return -1;
	pp->p = save;
	for (int first = 1;; first = 0) {
		if (value(pp, "a value or a range in '[...]'"))
			return -1;
		if (!first)
			emits(pp, ", ");
		emit_value(pp);
		hit |= has_feature(pp, key);
		if (take_punct(pp, "]"))
			break;
		if (!take_punct(pp, ","))
			return fail(pp, "expected ',' or ']' in a list of values%s", "");
	}
	emits(pp, "]");
	return hit;
}

static int disjunction(struct pp *pp);

static int unit(struct pp *pp)
{
	int neg = take_kw(pp, "not");
	if (neg)
		emits(pp, "not ");
	int v;
	if (take_punct(pp, "(")) {
		if (++pp->depth > DEPTH_MAX)
			return fail(pp, "parentheses nest deeper than 64%s", "");
		emits(pp, "(");
		if ((v = disjunction(pp)) < 0)
			return -1;
		if (!take_punct(pp, ")"))
			return fail(pp, "expected ')'%s", "");
		emits(pp, ")");
		pp->depth--;
	} else if (!neg && take_kw(pp, "true")) {
		emits(pp, "true");
		return 1;
	} else if (!neg && take_kw(pp, "false")) {
		emits(pp, "false");
		return 0;
	} else {
		if (value(pp, "an attribute name, '(', 'not', 'true' or 'false'"))
			return -1;
		if (!pp->quoted && is_keyword(pp->val, pp->vlen))
			return fail(pp, "expected an attribute name, found '%.60s'", pp->val);
		char key[VALUE_MAX];
		memcpy(key, pp->val, pp->vlen + 1);
		emit_value(pp);
		int not_in = take_kw(pp, "not");
		if (!take_kw(pp, "in"))
			return fail(pp, "expected 'in' after the attribute '%.60s'", key);
		emits(pp, not_in ? " not in " : " in ");
		if ((v = leaf_set(pp, key)) < 0)
			return -1;
		v = not_in ? !v : v;
	}
	return neg ? !v : v;
}

static int conjunction(struct pp *pp)
{
	int v = unit(pp);
	while (v >= 0 && take_kw(pp, "and")) {
		emits(pp, " and ");
		int w = unit(pp);
		v = w < 0 ? -1 : (v && w);
	}
	return v;
}

static int disjunction(struct pp *pp)
{
	int v = conjunction(pp);
	while (v >= 0 && take_kw(pp, "or")) {
		emits(pp, " or ");
		int w = conjunction(pp);
		v = w < 0 ? -1 : (v || w);
	}
	return v;
}

/* Parse (and evaluate, with pp->q) the whole text. */
static int whole(struct pp *pp)
{
	int v = disjunction(pp);
	skip_ws(pp);
	if (v >= 0 && pp->p < pp->end)
		return fail(pp, "unexpected '%.1s'", pp->p);
	return pp->failed ? -1 : v;
}

int eng_predicate_text(const json_t *j, struct base_arena *a, struct store_value *v,
                       const char *what, struct strata_error *err)
{
	if (!json_is_string(j))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: expected a predicate as a string (\"a in [x] and b in [1..9]\")",
		                what);
	size_t n = json_string_length(j);
	struct pp pp = { .s = json_string_value(j), .end = json_string_value(j) + n };
	pp.p = pp.s;
	pp.cap = 3 * n + 16;
	if (!(pp.out = base_arena_alloc(a, pp.cap, 1)))
		return base_nomem(err, "%s", what);
	if (whole(&pp) < 0)
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s: bad predicate: %s", what, pp.msg);
	memset(v, 0, sizeof *v);
	v->set = 1;
	v->s = pp.out;
	v->n = pp.len;
	return 0;
}

uint64_t eng_predicate_match(const char *s, size_t n, const struct yql_node *q)
{
	/* Subqueries holding the same attributes share one evaluation (the
	 * parser found them once); without subqueries all 64 do. */
	uint64_t hits = 0;
	for (int b = 0; b < 64; b++) {
		int first = q->pred_first[b];
		if (first != b) {
			hits |= (hits >> first & 1) << b;
			continue;
		}
		struct pp pp = { .s = s, .p = s, .end = s + n, .q = q, .bit = b };
		if (whole(&pp) > 0)
			hits |= (uint64_t)1 << b;
	}
	return hits;
}

int eng_predicate_check(const struct rank_field *rf, const struct yql_node *q,
                        struct strata_error *err)
{
	if (rf->type != RANK_FT_PREDICATE)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "yql:1:%d: predicate() needs a predicate field; '%s' is not one", q->col,
		                q->field);
	for (int i = 0; i < q->nranges; i++)
		if (q->rvals[i] < rf->pred_lower || q->rvals[i] > rf->pred_upper)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "yql:1:%d: predicate(): '%s' is %lld, outside the bounds of field "
			                "'%s' (%lld to %lld)", q->col, q->rkeys[i], (long long)q->rvals[i],
			                rf->name, (long long)rf->pred_lower, (long long)rf->pred_upper);
	return 0;
}
