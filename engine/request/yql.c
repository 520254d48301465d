/*
 * yql.c: the YQL subset Strata understands, parsed into a condition tree.
 *
 *   select <* | f1, f2> from <sources * | sources a, b | doctype>
 *     [where <cond>] [order by f [asc|desc], ...] [limit N] [offset N]
 *     [timeout N (milliseconds)] [| grouping] [;]
 *   cond: true | false | f < n | f <= n | f > n | f >= n | f = n (n a number,
 *         true or false; the number may stand on the left) | range(f, lo, hi)
 *         | f contains "text" | f in (n, ...) | f in ("s", ...)
 *         | f matches "regex" | predicate(f, {"k": "v", ...}, {"k": 1L, ...})
 *         (either map may hold subqueries: {"0x3": {"k": "v"}, "[0, 2]": {...}})
 *         | geoLocation(f, lat, lng, "10 km")
 *         | [{targetHits: K, label: "l", approximate:
 *         false, hnsw.exploreAdditionalHits: N}]nearestNeighbor(f, q) | cond and cond | cond or cond | !cond
 *         | (cond) | dotProduct(f, {"token": weight, ...}) | weightedSet(f, {...})
 *         | [{targetHits: K, scoreThreshold: X, label: "l"}]wand(f, {...})
 *         | f contains sameElement("a", "b")
 *         | [{targetHits: K}]weakAnd(f contains "w", ...)
 *   grouping: Vespa's grouping language (grouping_expr.c parses it)
 *
 * It sits between the request (query.c hands it the "yql" text) and
 * execution (query.c resolves field names per document type and evaluates
 * the tree).  Keywords are case-insensitive.  Every error is STRATA_PARSE
 * with "yql:LINE:COL: " and says what was expected and what was found.
 * Everything a struct yql_query holds lives in its arena, but for the
 * regular expressions of matches, which yql_free releases.  A regular
 * expression is POSIX extended, unanchored and case-insensitive (string
 * attributes are uncased in Vespa unless declared otherwise).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../grouping.h"

enum tok { T_EOF, T_IDENT, T_NUM, T_STR, T_PUNCT };

struct parser {
	const char *text;
	const char *p;        /* next unread character */
	struct base_arena *a;
	struct yql_query *q;
	struct strata_error *err;
	/* the current token */
	int tok;
	const char *start;    /* where it begins */
	size_t len;
	double num;
	char *str;            /* T_STR: decoded text (arena) */
	char punct[3];
	int failed;           /* an error is set */
};

static void position(const struct parser *ps, const char *at, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (const char *q = ps->text; q < at; q++) {
		if (*q == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

static int fail_at(struct parser *ps, const char *at, const char *fmt, const char *a1)
{
	if (ps->failed)
		return STRATA_PARSE;
	int line, col;
	position(ps, at, &line, &col);
	char msg[512];
	snprintf(msg, sizeof msg, fmt, a1);
	ps->failed = 1;
	return base_err(ps->err, STRATA_PARSE, "yql:%d:%d: %s", line, col, msg);
}

/* A construct this version does not implement, at `at`. */
static int refuse(struct parser *ps, const char *at, const char *what)
{
	if (ps->failed)
		return STRATA_NOT_IMPLEMENTED;
	int line, col;
	position(ps, at, &line, &col);
	ps->failed = 1;
	return base_err(ps->err, STRATA_NOT_IMPLEMENTED, "yql:%d:%d: %s is not supported", line, col,
	                what);
}

/* Out of memory while parsing: reported once, like any failure. */
static int nomem(struct parser *ps, const char *what)
{
	ps->failed = 1;
	return base_nomem(ps->err, "%s", what);
}

/* "expected X, found Y" at the current token. */
static int expected(struct parser *ps, const char *what)
{
	char found[96];
	if (ps->tok == T_EOF)
		snprintf(found, sizeof found, "the end of the query");
	else
		snprintf(found, sizeof found, "'%.*s'", (int)(ps->len > 40 ? 40 : ps->len), ps->start);
	char msg[256];
	snprintf(msg, sizeof msg, "expected %s, found %s", what, found);
	return fail_at(ps, ps->start, "%s", msg);
}

static int next(struct parser *ps)
{
	const char *p = ps->p;
	while (isspace((unsigned char)*p))
		p++;
	ps->start = p;
	if (!*p) {
		ps->tok = T_EOF;
		ps->len = 0;
		ps->p = p;
		return 0;
	}
	if (strncmp(p, "-Infinity", 9) == 0 && !isalnum((unsigned char)p[9])) {
		ps->num = -INFINITY;
		p += 9;
		ps->tok = T_NUM;
	} else if (isalpha((unsigned char)*p) || *p == '_') {
		while (isalnum((unsigned char)*p) || *p == '_' || *p == '.')
			p++;
		ps->tok = T_IDENT;
	} else if (isdigit((unsigned char)*p) || (*p == '-' && (isdigit((unsigned char)p[1]) ||
	                                                        p[1] == '.')) ||
	           (*p == '.' && isdigit((unsigned char)p[1]))) {
		char *end;
		ps->num = strtod(p, &end);
		p = end;
		if (*p == 'L' || *p == 'l')
			p++; /* Vespa's long suffix */
		if (isalnum((unsigned char)*p) || *p == '_') {
			ps->len = 1;
			return fail_at(ps, p, "malformed number%s", "");
		}
		ps->tok = T_NUM;
	} else if (*p == '"' || *p == '\'') {
		char q = *p++;
		const char *s = p;
		size_t n = 0;
		while (*p && *p != q) {
			if (*p == '\\' && p[1])
				p++;
			p++;
			n++;
		}
		if (!*p)
			return fail_at(ps, ps->start, "unterminated string%s", "");
		char *out = base_arena_alloc(ps->a, n + 1, 1);
		if (!out) {
			return nomem(ps, "yql string");
		}
		size_t k = 0;
		for (const char *c = s; c < p; c++) {
			if (*c == '\\' && c + 1 < p) {
				c++;
				out[k++] = *c == 'n' ? '\n' : *c == 't' ? '\t' : *c;
			} else {
				out[k++] = *c;
			}
		}
		out[k] = 0;
		ps->str = out;
		p++;
		ps->tok = T_STR;
	} else {
		static const char *two[] = { "<=", ">=", "!=", "&&", "||", "==" };
		ps->tok = T_PUNCT;
		size_t n = 1;
		for (size_t i = 0; i < sizeof two / sizeof two[0]; i++)
			if (p[0] == two[i][0] && p[1] == two[i][1])
				n = 2;
		if (n == 1 && !strchr("()*,{}:;!<>=[]|-+@", *p))
			return fail_at(ps, p, "unexpected character '%.1s'", p);
		memcpy(ps->punct, p, n);
		ps->punct[n] = 0;
		p += n;
	}
	ps->len = (size_t)(p - ps->start);
	ps->p = p;
	return 0;
}

static int is_punct(const struct parser *ps, const char *s)
{
	return ps->tok == T_PUNCT && strcmp(ps->punct, s) == 0;
}

static int is_kw(const struct parser *ps, const char *kw)
{
	return ps->tok == T_IDENT && strlen(kw) == ps->len &&
	       strncasecmp(ps->start, kw, ps->len) == 0;
}

static int expect_punct(struct parser *ps, const char *s)
{
	if (!is_punct(ps, s)) {
		char what[8];
		snprintf(what, sizeof what, "'%s'", s);
		return expected(ps, what);
	}
	return next(ps);
}

static char *ident(struct parser *ps, const char *what)
{
	if (ps->tok != T_IDENT) {
		expected(ps, what);
		return NULL;
	}
	char *s = base_arena_alloc(ps->a, ps->len + 1, 1);
	if (!s) {
		nomem(ps, "yql name");
		return NULL;
	}
	memcpy(s, ps->start, ps->len);
	s[ps->len] = 0;
	if (next(ps))
		return NULL;
	return s;
}

static struct yql_node *node(struct parser *ps, int kind, const char *at)
{
	struct yql_node *n = base_arena_alloc(ps->a, sizeof *n, 8);
	if (!n) {
		nomem(ps, "yql condition");
		return NULL;
	}
	memset(n, 0, sizeof *n);
	n->kind = kind;
	n->fidx = -1;
	int line;
	position(ps, at, &line, &n->col);
	return n;
}

/* A number: a numeric literal, true (1) or false (0), -Infinity/Infinity. */
static int number(struct parser *ps, double *v, const char *what)
{
	if (ps->tok == T_NUM) {
		*v = ps->num;
		return next(ps);
	}
	if (is_kw(ps, "true") || is_kw(ps, "false")) {
		*v = is_kw(ps, "true");
		return next(ps);
	}
	if (is_kw(ps, "Infinity")) {
		*v = INFINITY;
		return next(ps);
	}
	return expected(ps, what);
}

static struct yql_node *cond(struct parser *ps);

static int cmp_op(const struct parser *ps)
{
	if (ps->tok != T_PUNCT)
		return 0;
	if (!strcmp(ps->punct, "<")) return YQL_LT;
	if (!strcmp(ps->punct, "<=")) return YQL_LE;
	if (!strcmp(ps->punct, ">")) return YQL_GT;
	if (!strcmp(ps->punct, ">=")) return YQL_GE;
	if (!strcmp(ps->punct, "=") || !strcmp(ps->punct, "==")) return YQL_EQ;
	return 0;
}

static int flip(int op)
{
	switch (op) {
	case YQL_LT: return YQL_GT;
	case YQL_LE: return YQL_GE;
	case YQL_GT: return YQL_LT;
	case YQL_GE: return YQL_LE;
	}
	return op;
}

/* The annotations {key: value, ...} before a condition, each key known
 * here, which the condition then checks are its own. */
struct annot {
	long target, explore;      /* targetHits (-1: none), hnsw.exploreAdditionalHits */
	char *label;
	int approx;                /* approximate (1 unless false) */
	double threshold;          /* scoreThreshold (-Infinity: none) */
	struct yql_term term;      /* prefix, stem, ranked, filter, weight */
	struct yql_user user;      /* defaultIndex, grammar, allowEmpty */
	const char *nn_only;       /* the first that only nearestNeighbor or wand take */
	const char *user_only;     /* the first that only userInput() takes */
	const char *term_at;       /* the first of the words' annotations */
};

static int boolean(struct parser *ps, int *out)
{
	if (!is_kw(ps, "true") && !is_kw(ps, "false"))
		return expected(ps, "true or false");
	*out = is_kw(ps, "true");
	return next(ps);
}

/* After '{' (or '[{'): the annotations up to '}' into *an. */
static int annotations(struct parser *ps, struct annot *an)
{
	if (next(ps))
		return STRATA_PARSE;
	while (!is_punct(ps, "}")) {
		const char *at = ps->start;
		char *key = ps->tok == T_STR ? ps->str : NULL; /* {"targetHits": 10} too */
		if (key ? next(ps) : !(key = ident(ps, "an annotation name")))
			return STRATA_PARSE;
		if (expect_punct(ps, ":"))
			return STRATA_PARSE;
		int b;
		if (!strcmp(key, "targetHits") || !strcmp(key, "targetNumHits") ||
		    !strcmp(key, "totalTargetHits")) {
			double v;
			const char *vat = ps->start;
			if (number(ps, &v, "a number"))
				return STRATA_PARSE;
			if (v < 1 || v != floor(v) || v > 1e9)
				return fail_at(ps, vat, "targetHits must be a positive integer%s", "");
			an->target = (long)v;
		} else if (!strcmp(key, "label")) {
			if (!an->nn_only)
				an->nn_only = at;
			if (ps->tok != T_STR)
				return expected(ps, "a string");
			an->label = ps->str;
			if (next(ps))
				return STRATA_PARSE;
		} else if (!strcmp(key, "approximate")) {
			if (!an->nn_only)
				an->nn_only = at;
			if (boolean(ps, &an->approx))
				return STRATA_PARSE;
		} else if (!strcmp(key, "scoreThreshold")) {
			if (!an->nn_only)
				an->nn_only = at;
			if (number(ps, &an->threshold, "a number"))
				return STRATA_PARSE;
		} else if (!strcmp(key, "hnsw.exploreAdditionalHits")) {
			double v;
			if (!an->nn_only)
				an->nn_only = at;
			const char *vat = ps->start;
			if (number(ps, &v, "a number"))
				return STRATA_PARSE;
			if (v < 0 || v != floor(v) || v > 1e9)
				return fail_at(ps, vat, "hnsw.exploreAdditionalHits must be a whole number "
				               "from 0%s", "");
			an->explore = (long)v;
		} else if (!strcmp(key, "prefix") || !strcmp(key, "stem") || !strcmp(key, "ranked") ||
		           !strcmp(key, "filter")) {
			if (!an->term_at)
				an->term_at = at;
			if (boolean(ps, &b))
				return STRATA_PARSE;
			if (key[0] == 'p') {
				an->term.prefix = (unsigned char)b;
				an->term.set |= YQL_TERM_PREFIX;
			} else if (key[0] == 's') {
				an->term.no_stem = (unsigned char)!b;
				an->term.set |= YQL_TERM_STEM;
			} else {
				/* ranked: false, or filter: true: matches, not ranked */
				an->term.unranked = (unsigned char)(key[0] == 'r' ? !b : b);
				an->term.set |= YQL_TERM_RANKED;
			}
		} else if (!strcmp(key, "weight")) {
			double v;
			const char *vat = ps->start;
			if (!an->term_at)
				an->term_at = at;
			if (number(ps, &v, "a number"))
				return STRATA_PARSE;
			if (v < 0 || v != floor(v) || v > 1e9)
				return fail_at(ps, vat, "weight must be a whole number from 0%s", "");
			an->term.weight = v ? (int)v : -1;
			an->term.set |= YQL_TERM_WEIGHT;
		} else if (!strcmp(key, "defaultIndex") || !strcmp(key, "grammar")) {
			if (!an->user_only)
				an->user_only = at;
			const char *vat = ps->start;
			if (ps->tok != T_STR)
				return expected(ps, "a string");
			if (key[0] == 'd') {
				an->user.default_index = ps->str;
			} else {
				an->user.grammar = ps->str;
				an->user.raw = !strcmp(ps->str, "raw") || !strcmp(ps->str, "segment");
				if (!an->user.raw && eng_grammar_named(ps->str, &an->user.grammar_of))
					return fail_at(ps, vat, "grammar '%s' is not one of raw, segment, all, "
					               "any, weakAnd, phrase, web, tokenize, linguistics",
					               ps->str);
				if (an->user.raw)
					eng_grammar_named("phrase", &an->user.grammar_of);
			}
			if (next(ps))
				return STRATA_PARSE;
		} else if (!strcmp(key, "allowEmpty")) {
			if (!an->user_only)
				an->user_only = at;
			if (boolean(ps, &an->user.allow_empty))
				return STRATA_PARSE;
		} else if (!strcmp(key, "language")) {
			const char *vat = ps->start;
			if (ps->tok != T_STR)
				return expected(ps, "a string");
			if (strncasecmp(ps->str, "en", 2) || (ps->str[2] && ps->str[2] != '-' &&
			                                      ps->str[2] != '_'))
				return fail_at(ps, vat, "language '%s' is not supported: Strata's "
				               "linguistics is English only", ps->str);
			if (next(ps))
				return STRATA_PARSE;
		} else {
			return fail_at(ps, at, "unknown annotation '%s'", key);
		}
		if (is_punct(ps, ","))
			next(ps);
		else if (!is_punct(ps, "}"))
			return expected(ps, "',' or '}'");
	}
	return next(ps);
}

/* The words' annotations t on every word below n that does not set its
 * own (Vespa looks for a term's annotation from it up through the
 * conditions around it). */
static void inherit_term(struct yql_node *n, const struct yql_term *t)
{
	if (n->kind == YQL_CONTAINS || n->kind == YQL_USERQUERY || n->kind == YQL_USERINPUT ||
	    n->kind == YQL_SAME) {
		if (!(n->term.set & YQL_TERM_PREFIX) && (t->set & YQL_TERM_PREFIX))
			n->term.prefix = t->prefix;
		if (!(n->term.set & YQL_TERM_STEM) && (t->set & YQL_TERM_STEM))
			n->term.no_stem = t->no_stem;
		if (!(n->term.set & YQL_TERM_RANKED) && (t->set & YQL_TERM_RANKED))
			n->term.unranked = t->unranked;
		if (!(n->term.set & YQL_TERM_WEIGHT) && (t->set & YQL_TERM_WEIGHT))
			n->term.weight = t->weight;
		n->term.set |= t->set;
	}
	for (int i = 0; i < n->nkids; i++)
		inherit_term(n->kids[i], t);
}

/* Room for element n of the arena array *v (capacity *cap, elements of esz
 * bytes): doubled into new arena memory when full. */
static int room(struct parser *ps, void **v, int *cap, int n, size_t esz)
{
	if (n < *cap)
		return 0;
	int ncap = *cap ? *cap * 2 : 8;
	void *nv = base_arena_alloc(ps->a, (size_t)ncap * esz, 8);
	if (!nv)
		return nomem(ps, "yql list");
	if (*cap)
		memcpy(nv, *v, (size_t)*cap * esz);
	*v = nv;
	*cap = ncap;
	return 0;
}

/* field in (1, 2) / field in ("a", "b"), at the 'in'. */
static struct yql_node *in_list(struct parser *ps, char *field, const char *at)
{
	struct yql_node *n = node(ps, YQL_IN, at);
	if (!n || next(ps) || expect_punct(ps, "("))
		return NULL;
	n->field = field;
	int strings = ps->tok == T_STR, cap = 0;
	for (;;) {
		if (strings ? room(ps, (void **)&n->strs, &cap, n->nvals, sizeof *n->strs)
		            : room(ps, (void **)&n->nums, &cap, n->nvals, sizeof *n->nums))
			return NULL;
		if (strings) {
			if (ps->tok != T_STR) {
				expected(ps, "a string");
				return NULL;
			}
			n->strs[n->nvals++] = ps->str;
			if (next(ps))
				return NULL;
		} else if (number(ps, &n->nums[n->nvals++], "a number or a string")) {
			return NULL;
		}
		if (is_punct(ps, ")"))
			break;
		if (expect_punct(ps, ","))
			return NULL;
	}
	return next(ps) ? NULL : n;
}

/* A key of a predicate() map: a string or a name. */
static char *pred_key(struct parser *ps)
{
	if (ps->tok == T_STR) {
		char *k = ps->str;
		return next(ps) ? NULL : k;
	}
	return ident(ps, "an attribute name");
}

/* "0x3" or "[0, 1]": the subqueries bitmap a key of predicate() names;
 * 0 when it names none. */
static uint64_t subquery_mask(const char *s)
{
	char *end;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isxdigit((unsigned char)s[2])) {
		unsigned long long v = strtoull(s + 2, &end, 16);
		return *end || strlen(s + 2) > 16 ? 0 : (uint64_t)v;
	}
	if (*s++ != '[')
		return 0;
	uint64_t m = 0;
	for (;;) {
		while (*s == ' ')
			s++;
		if (!isdigit((unsigned char)*s))
			return 0;
		long b = strtol(s, &end, 10);
		if (b > 63 || end - s > 2)
			return 0;
		m |= (uint64_t)1 << b;
		for (s = end; *s == ' '; s++)
			;
		if (*s == ']')
			return s[1] ? 0 : m;
		if (*s++ != ',')
			return 0;
	}
}

/* Growth of the arrays of a predicate() node. */
struct pred_caps {
	int s, fm, rk, rv, rm;
};

/* One attribute of a predicate() map (key k, the ':' passed): a string or
 * an array of strings (features), or an integer (ranges), in the
 * subqueries of mask. */
static int pred_attr(struct parser *ps, struct yql_node *n, int ranges, char *k, uint64_t mask,
                     struct pred_caps *c)
{
	int list = !ranges && is_punct(ps, "[");
	if (list && next(ps))
		return -1;
	do {
		if (ranges) {
			if (ps->tok != T_NUM ||
			    room(ps, (void **)&n->rkeys, &c->rk, n->nranges, sizeof *n->rkeys) ||
			    room(ps, (void **)&n->rvals, &c->rv, n->nranges, sizeof *n->rvals) ||
			    room(ps, (void **)&n->rmasks, &c->rm, n->nranges, sizeof *n->rmasks)) {
				if (!ps->failed)
					expected(ps, "an integer (such as 25L)");
				return -1;
			}
			/* the exact value: doubles lose digits past 2^53 */
			n->rkeys[n->nranges] = k;
			n->rmasks[n->nranges] = mask;
			n->rvals[n->nranges++] = strtoll(ps->start, NULL, 10);
		} else {
			if (ps->tok != T_STR ||
			    room(ps, (void **)&n->strs, &c->s, 2 * n->nvals + 1, sizeof *n->strs) ||
			    room(ps, (void **)&n->fmasks, &c->fm, n->nvals, sizeof *n->fmasks)) {
				if (!ps->failed)
					expected(ps, "a string or an array of strings");
				return -1;
			}
			n->strs[2 * n->nvals] = k;
			n->fmasks[n->nvals] = mask;
			n->strs[2 * n->nvals++ + 1] = ps->str;
		}
		if (next(ps))
			return -1;
	} while (list && is_punct(ps, ",") && !next(ps));
	return list && expect_punct(ps, "]") ? -1 : 0;
}

/* A map of predicate(): {attributes}, some perhaps in subqueries
 * ({"0x3": {attributes}} or {"[0, 1]": {...}}; mask is all ones outside). */
static int pred_map(struct parser *ps, struct yql_node *n, int ranges, uint64_t mask,
                    struct pred_caps *c)
{
	if (expect_punct(ps, "{"))
		return -1;
	while (!is_punct(ps, "}")) {
		const char *kat = ps->start;
		char *k = pred_key(ps);
		if (!k || expect_punct(ps, ":"))
			return -1;
		if (is_punct(ps, "{")) {
			uint64_t m = subquery_mask(k);
			if (!m || mask != ~(uint64_t)0)
				return fail_at(ps, kat, "'%s' is no subquery bitmap (\"0x3\" or \"[0, 1]\", "
				               "not nested)", k);
			if (pred_map(ps, n, ranges, m, c))
				return -1;
		} else if (pred_attr(ps, n, ranges, k, mask, c)) {
			return -1;
		}
		if (!is_punct(ps, "}") && expect_punct(ps, ","))
			return -1;
	}
	return next(ps);
}

/* Whether subqueries a and b of predicate() node q hold the same
 * attributes. */
static int same_subquery(const struct yql_node *q, int a, int b)
{
	for (int i = 0; i < q->nvals; i++)
		if ((q->fmasks[i] >> a & 1) != (q->fmasks[i] >> b & 1))
			return 0;
	for (int i = 0; i < q->nranges; i++)
		if ((q->rmasks[i] >> a & 1) != (q->rmasks[i] >> b & 1))
			return 0;
	return 1;
}

/* n->pred_first: without subqueries all 64 are one. */
static void pred_first(struct yql_node *n)
{
	for (int b = 0; b < 64; b++) {
		int f = b;
		for (int a = 0; a < b && f == b; a++)
			if (n->pred_first[a] == a && same_subquery(n, a, b))
				f = a;
		n->pred_first[b] = (unsigned char)f;
	}
}

/* predicate(field, {"k": "v", "k2": ["a", "b"]}, {"r": 25L}), after the
 * '(': the predicate.c node. */
static struct yql_node *predicate_call(struct parser *ps, const char *at)
{
	struct yql_node *n = node(ps, YQL_PREDICATE, at);
	struct pred_caps c = {0};
	if (!n || !(n->field = ident(ps, "a field name")) || expect_punct(ps, ",") ||
	    pred_map(ps, n, 0, ~(uint64_t)0, &c) || expect_punct(ps, ",") ||
	    pred_map(ps, n, 1, ~(uint64_t)0, &c) || expect_punct(ps, ")"))
		return NULL;
	pred_first(n);
	return n;
}

/* field <operator> "text": the node of kind with its text, the string
 * token still current; at is where the condition begins. */
static struct yql_node *string_op(struct parser *ps, int kind, char *field, const char *at,
                                  const char *what)
{
	struct yql_node *n = node(ps, kind, at);
	if (!n || next(ps))
		return NULL;
	if (ps->tok != T_STR) {
		expected(ps, what);
		return NULL;
	}
	n->field = field;
	n->str = ps->str;
	return n;
}

/* field matches "regex", at the 'matches'. */
static struct yql_node *matches(struct parser *ps, char *field, const char *at)
{
	struct yql_node *n = string_op(ps, YQL_MATCHES, field, at, "a regular expression in quotes");
	if (!n)
		return NULL;
	regex_t *re = base_arena_alloc(ps->a, sizeof *re, 8);
	if (!re) {
		nomem(ps, "yql matches");
		return NULL;
	}
	if (base_regex_size(n->str) > BASE_REGEX_MAX) {
		char limit[24];
		snprintf(limit, sizeof limit, "%d", BASE_REGEX_MAX);
		fail_at(ps, ps->start, "regular expression too complex: its repetitions would grow to "
		        "more than %s nodes", limit);
		return NULL;
	}
	int rc = regcomp(re, n->str, REG_EXTENDED | REG_ICASE | REG_NOSUB);
	if (rc) {
		char why[200];
		regerror(rc, re, why, sizeof why);
		fail_at(ps, ps->start, "bad regular expression: %s", why);
		return NULL;
	}
	n->re = re;
	n->re_next = ps->q->regexes;
	ps->q->regexes = n;
	return next(ps) ? NULL : n;
}

/* ---- text search: phrase, weakAnd, rank, userQuery, userInput ----------------------- */

/* field contains phrase("a", "b", ...), at 'contains': one CONTAINS whose
 * string is the words joined by spaces (several words are a phrase). */
static struct yql_node *phrase(struct parser *ps, char *field, const char *at)
{
	struct yql_node *n = node(ps, YQL_CONTAINS, at);
	if (!n || next(ps) || next(ps) || expect_punct(ps, "("))
		return NULL;
	size_t len = 0, cap = 64;
	char *s = base_arena_alloc(ps->a, cap, 1);
	while (s) {
		if (ps->tok != T_STR) {
			expected(ps, "a word in quotes");
			return NULL;
		}
		size_t w = strlen(ps->str);
		if (len + w + 2 > cap) {
			while (len + w + 2 > cap)
				cap *= 2;
			char *t = base_arena_alloc(ps->a, cap, 1);
			if (!t)
				break;
			memcpy(t, s, len);
			s = t;
		}
		if (len)
			s[len++] = ' ';
		memcpy(s + len, ps->str, w + 1);
		len += w;
		if (next(ps))
			return NULL;
		if (is_punct(ps, ")"))
			break;
		if (expect_punct(ps, ","))
			return NULL;
	}
	if (!s) {
		nomem(ps, "yql phrase");
		return NULL;
	}
	n->field = field;
	n->str = s;
	return next(ps) ? NULL : n;
}

/* After 'name(': weakAnd(c, ...) (its targetHits, Vespa's 100 when not
 * annotated; wand.c matches it), rank(c, ...) (matches as its first
 * condition, the others only feed rank features), userQuery() (the query
 * request parameter), userInput(@param). */
static struct yql_node *text_call(struct parser *ps, const char *name, const char *at,
                                  long target)
{
	int kind = !strcmp(name, "weakAnd") ? YQL_WEAKAND
	           : !strcmp(name, "rank")  ? YQL_RANK
	           : !strcmp(name, "userQuery") ? YQL_USERQUERY : YQL_USERINPUT;
	struct yql_node *n = node(ps, kind, at);
	if (!n)
		return NULL;
	n->target_hits = kind == YQL_WEAKAND && target < 0 ? YQL_WEAKAND_TARGET : target;
	if (kind == YQL_USERINPUT) {
		if (is_punct(ps, "@")) { /* @name: letters, digits, _ . - */
			const char *p = ps->p, *e = p;
			while (isalnum((unsigned char)*e) || *e == '_' || *e == '.' || *e == '-')
				e++;
			if (e == p) {
				if (next(ps))
					return NULL;
				expected(ps, "a parameter name");
				return NULL;
			}
			if (!(n->str = base_arena_alloc(ps->a, (size_t)(e - p) + 1, 1)))
				return nomem(ps, "yql name"), NULL;
			memcpy(n->str, p, (size_t)(e - p));
			n->str[e - p] = 0;
			ps->p = e;
			if (next(ps))
				return NULL;
		} else if (ps->tok == T_STR) {
			n->field = ps->str; /* the text itself */
			if (next(ps))
				return NULL;
		} else {
			expected(ps, "'@parameter' or a string");
			return NULL;
		}
		return expect_punct(ps, ")") ? NULL : n;
	}
	if (kind == YQL_USERQUERY)
		return expect_punct(ps, ")") ? NULL : n;
	int cap = 0;
	while (!is_punct(ps, ")")) {
		if (n->nkids && expect_punct(ps, ","))
			return NULL;
		struct yql_node *k = cond(ps);
		if (!k || room(ps, (void **)&n->kids, &cap, n->nkids + 1, sizeof *n->kids))
			return NULL;
		n->kids[n->nkids++] = k;
	}
	if (!n->nkids) {
		fail_at(ps, at, "%s() needs at least one condition", name);
		return NULL;
	}
	return next(ps) ? NULL : n;
}

/* field contains sameElement("a", "b c" and "d"), at the 'contains': strings
 * that must all be found in one element of an array (each one's words in a
 * row).  Conditions on the fields of structs in it are refused. */
static struct yql_node *same_element(struct parser *ps, char *field, const char *at)
{
	struct yql_node *n = node(ps, YQL_SAME, at);
	if (!n || next(ps) || next(ps) || expect_punct(ps, "("))
		return NULL;
	n->field = field;
	int cap = 0;
	for (;;) {
		if (ps->tok == T_IDENT) {
			refuse(ps, ps->start, "sameElement over the fields of structs or maps");
			return NULL;
		}
		if (ps->tok != T_STR) {
			expected(ps, "a string");
			return NULL;
		}
		if (room(ps, (void **)&n->strs, &cap, n->nvals, sizeof *n->strs))
			return NULL;
		n->strs[n->nvals++] = ps->str;
		if (next(ps))
			return NULL;
		if (is_punct(ps, ")"))
			break;
		if (is_kw(ps, "and") ? next(ps) : expect_punct(ps, ","))
			return NULL;
	}
	return next(ps) ? NULL : n;
}

/* After 'name(': dotProduct, wand or weightedSet(field, {token: weight,
 * ...}); a token is a string or an integer, a weight a number. */
static struct yql_node *wset_call(struct parser *ps, const char *name, const char *at)
{
	struct yql_node *n = node(ps, YQL_WSET, at);
	if (!n || !(n->field = ident(ps, "a field name")) || expect_punct(ps, ",") ||
	    expect_punct(ps, "{"))
		return NULL;
	n->op = !strcmp(name, "dotProduct") ? YQL_DOTPRODUCT : !strcmp(name, "wand") ? YQL_WAND
	                                                                           : YQL_WEIGHTEDSET;
	int cap = 0, wcap = 0;
	while (!is_punct(ps, "}")) {
		if (room(ps, (void **)&n->strs, &cap, n->nvals, sizeof *n->strs) ||
		    room(ps, (void **)&n->nums, &wcap, n->nvals, sizeof *n->nums))
			return NULL;
		if (ps->tok == T_NUM && ps->num == floor(ps->num) && fabs(ps->num) < 9.2e18) {
			char buf[32];
			snprintf(buf, sizeof buf, "%lld", (long long)ps->num);
			if (!(ps->str = base_arena_alloc(ps->a, strlen(buf) + 1, 1)))
				return nomem(ps, "yql token"), NULL;
			strcpy(ps->str, buf);
		} else if (ps->tok != T_STR) {
			expected(ps, "a token: a string or an integer");
			return NULL;
		}
		n->strs[n->nvals] = ps->str;
		if (next(ps) || expect_punct(ps, ":") || number(ps, &n->nums[n->nvals++], "a weight"))
			return NULL;
		if (!is_punct(ps, "}") && expect_punct(ps, ","))
			return NULL;
	}
	if (next(ps) || expect_punct(ps, ")"))
		return NULL;
	return n;
}

/* After 'field': contains "word", or contains ({prefix: true}"word") with
 * the word's annotations (the parentheses may be left out). */
static struct yql_node *contains_word(struct parser *ps, char *field, const char *at)
{
	struct yql_node *n = node(ps, YQL_CONTAINS, at);
	if (!n || next(ps))
		return NULL;
	int paren = is_punct(ps, "(");
	if (paren && next(ps))
		return NULL;
	if (is_punct(ps, "{")) {
		struct annot an = { .target = -1, .approx = 1, .threshold = -INFINITY };
		if (annotations(ps, &an))
			return NULL;
		const char *bad = an.nn_only ? an.nn_only : an.user_only;
		if (bad || an.target >= 0) {
			fail_at(ps, bad ? bad : at, "a word takes only prefix, stem, ranked, filter and "
			        "weight annotations%s", "");
			return NULL;
		}
		n->term = an.term;
	} else if (paren) {
		expected(ps, "'{' or a string");
		return NULL;
	}
	if (ps->tok != T_STR) {
		expected(ps, "a string");
		return NULL;
	}
	n->field = field;
	n->str = ps->str;
	if (next(ps) || (paren && expect_punct(ps, ")")))
		return NULL;
	return n;
}

static struct yql_node *primary(struct parser *ps)
{
	const char *at = ps->start;
	if (is_punct(ps, "(")) {
		if (next(ps))
			return NULL;
		struct yql_node *n = cond(ps);
		if (!n || expect_punct(ps, ")"))
			return NULL;
		return n;
	}
	if (is_punct(ps, "!")) {
		struct yql_node *n = node(ps, YQL_NOT, at);
		if (!n || next(ps))
			return NULL;
		struct yql_node *k = primary(ps);
		if (!k)
			return NULL;
		n->kids = base_arena_alloc(ps->a, sizeof *n->kids, 8);
		if (!n->kids)
			return NULL;
		n->kids[0] = k;
		n->nkids = 1;
		return n;
	}
	struct annot an = { .target = -1, .approx = 1, .threshold = -INFINITY };
	int annotated = 0, bracket = 0;
	if (is_punct(ps, "[")) { /* [{...}]userInput(...): the older form */
		if (next(ps))
			return NULL;
		if (!is_punct(ps, "{")) {
			expected(ps, "'{' after '['");
			return NULL;
		}
		bracket = 1;
	}
	if (is_punct(ps, "{")) {
		if (annotations(ps, &an) || (bracket && expect_punct(ps, "]")))
			return NULL;
		annotated = 1;
		if (is_punct(ps, "(")) { /* {stem: false}(cond): for the words in it */
			if (an.nn_only || an.user_only || an.target >= 0) {
				fail_at(ps, an.nn_only ? an.nn_only : an.user_only ? an.user_only : at,
				        "only the words' annotations (prefix, stem, ranked, filter, weight) "
				        "may stand before '('%s", "");
				return NULL;
			}
			if (next(ps))
				return NULL;
			struct yql_node *n = cond(ps);
			if (!n || expect_punct(ps, ")"))
				return NULL;
			inherit_term(n, &an.term);
			return n;
		}
	}
	long target = an.target, explore = an.explore;
	char *label = an.label;
	int approx = an.approx;
	double threshold = an.threshold;
	const char *nn_only = an.nn_only;
	if (ps->tok == T_IDENT && !annotated && (is_kw(ps, "true") || is_kw(ps, "false"))) {
		const char *kwat = ps->start;
		int t = is_kw(ps, "true");
		if (next(ps))
			return NULL;
		int op = cmp_op(ps);
		if (!op)
			return node(ps, t ? YQL_TRUE : YQL_FALSE, kwat);
		/* "true = flag" */
		struct yql_node *n = node(ps, YQL_CMP, kwat);
		if (!n || next(ps))
			return NULL;
		n->op = flip(op);
		n->num = t;
		n->field = ident(ps, "a field name");
		return n->field ? n : NULL;
	}
	if (ps->tok == T_NUM) {
		struct yql_node *n = node(ps, YQL_CMP, at);
		if (!n)
			return NULL;
		n->num = ps->num;
		if (next(ps))
			return NULL;
		int op = cmp_op(ps);
		if (!op) {
			expected(ps, "a comparison operator");
			return NULL;
		}
		n->op = flip(op);
		if (next(ps))
			return NULL;
		n->field = ident(ps, "a field name");
		return n->field ? n : NULL;
	}
	if (ps->tok != T_IDENT) {
		expected(ps, "a condition");
		return NULL;
	}
	char *name = ident(ps, "a field name");
	if (!name)
		return NULL;
	if (is_punct(ps, "(")) {
		if (next(ps))
			return NULL;
		if (!strcmp(name, "nearestNeighbor")) {
			struct yql_node *n = node(ps, YQL_NN, at);
			if (!n || !(n->field = ident(ps, "a field name")) || expect_punct(ps, ",") ||
			    !(n->input = ident(ps, "a query input name")) || expect_punct(ps, ")"))
				return NULL;
			if (target < 0) {
				fail_at(ps, at, "nearestNeighbor needs a {targetHits: N} annotation%s", "");
				return NULL;
			}
			n->target_hits = target;
			n->explore = explore;
			n->label = label;
			n->approximate = approx;
			return n;
		}
		if (!strcmp(name, "dotProduct") || !strcmp(name, "wand") || !strcmp(name, "weightedSet")) {
			struct yql_node *n = wset_call(ps, name, at);
			if (n && ((threshold != -INFINITY || target >= 0) && n->op != YQL_WAND)) {
				fail_at(ps, at, "targetHits and scoreThreshold annotate wand, not '%s'", name);
				return NULL;
			}
			if (n) {
				n->num = threshold;
				n->target_hits = target;
				n->label = label;
			}
			return n;
		}
		int user = !strcmp(name, "userInput");
		if (an.user_only && !user) {
			fail_at(ps, an.user_only, "this annotation is for userInput(), not '%s'", name);
			return NULL;
		}
		if (an.term_at && (!strcmp(name, "nearestNeighbor") || !strcmp(name, "geoLocation") ||
		                   !strcmp(name, "range") || !strcmp(name, "predicate"))) {
			fail_at(ps, an.term_at, "this annotation is for words, not '%s'", name);
			return NULL;
		}
		if ((!strcmp(name, "weakAnd") || user) && nn_only) {
			fail_at(ps, nn_only, user ? "%s takes no such annotation"
			                     : "%s takes the annotation targetHits only", name);
			return NULL;
		}
		if (annotated && strcmp(name, "weakAnd") && !user) {
			fail_at(ps, at, "annotations are only supported on nearestNeighbor, wand, "
			        "weakAnd, userInput and words, not on '%s'", name);
			return NULL;
		}
		if (!strcmp(name, "weakAnd") || !strcmp(name, "rank") || !strcmp(name, "userQuery") ||
		    user) {
			struct yql_node *n = text_call(ps, name, at, target);
			if (n && user && annotated) {
				n->user = base_arena_alloc(ps->a, sizeof *n->user, 8);
				if (!n->user)
					return nomem(ps, "yql annotation"), NULL;
				*n->user = an.user;
			}
			if (n)
				inherit_term(n, &an.term);
			return n;
		}
		if (!strcmp(name, "predicate"))
			return predicate_call(ps, at);
		if (!strcmp(name, "geoLocation")) {
			struct yql_node *n = node(ps, YQL_GEO, at);
			if (!n || !(n->field = ident(ps, "a field name")) || expect_punct(ps, ",") ||
			    number(ps, &n->lo, "a latitude") || expect_punct(ps, ",") ||
			    number(ps, &n->hi, "a longitude") || expect_punct(ps, ","))
				return NULL;
			if (ps->tok != T_STR || eng_geo_radius(ps->str, &n->num)) {
				expected(ps, "a radius (\"10 km\", \"500 m\", \"2 mi\", \"-1\")");
				return NULL;
			}
			n->str = ps->str;
			return next(ps) || expect_punct(ps, ")") ? NULL : n;
		}
		if (!strcmp(name, "range")) {
			struct yql_node *n = node(ps, YQL_RANGE, at);
			if (!n || !(n->field = ident(ps, "a field name")) || expect_punct(ps, ",") ||
			    number(ps, &n->lo, "a number") || expect_punct(ps, ",") ||
			    number(ps, &n->hi, "a number") || expect_punct(ps, ")"))
				return NULL;
			return n;
		}
		fail_at(ps, at, "unknown function '%s'", name);
		return NULL;
	}
	if (annotated) {
		expected(ps, "'('");
		return NULL;
	}
	if (is_kw(ps, "in"))
		return in_list(ps, name, at);
	if (is_kw(ps, "matches"))
		return matches(ps, name, at);
	if (is_kw(ps, "contains")) {
		if (ps->p[strspn(ps->p, " \t\r\n")] == 'p' && !strncmp(ps->p + strspn(ps->p, " \t\r\n"),
		                                                        "phrase", 6))
			return phrase(ps, name, at);
		if (!strncmp(ps->p + strspn(ps->p, " \t\r\n"), "sameElement", 11))
			return same_element(ps, name, at);
		return contains_word(ps, name, at);
	}
	int op = cmp_op(ps);
	if (!op) {
		expected(ps, "a comparison operator or 'contains'");
		return NULL;
	}
	struct yql_node *n = node(ps, YQL_CMP, at);
	if (!n || next(ps))
		return NULL;
	n->field = name;
	n->op = op;
	if (number(ps, &n->num, "a number"))
		return NULL;
	return n;
}

/* A chain of kind (AND/OR) of sub-conditions parsed by sub. */
static struct yql_node *chain(struct parser *ps, int kind, struct yql_node *(*sub)(struct parser *))
{
	const char *at = ps->start;
	struct yql_node *first = sub(ps);
	if (!first)
		return NULL;
	const char *kw = kind == YQL_AND ? "and" : "or";
	const char *sym = kind == YQL_AND ? "&&" : "||";
	if (!is_kw(ps, kw) && !is_punct(ps, sym))
		return first;
	struct yql_node *n = node(ps, kind, at);
	if (!n)
		return NULL;
	int cap = 4;
	n->kids = base_arena_alloc(ps->a, (size_t)cap * sizeof *n->kids, 8);
	if (!n->kids)
		return NULL;
	n->kids[n->nkids++] = first;
	while (is_kw(ps, kw) || is_punct(ps, sym)) {
		if (next(ps))
			return NULL;
		struct yql_node *k = sub(ps);
		if (!k)
			return NULL;
		if (n->nkids == cap) {
			struct yql_node **nk = base_arena_alloc(ps->a, (size_t)cap * 2 * sizeof *nk, 8);
			if (!nk)
				return NULL;
			memcpy(nk, n->kids, (size_t)cap * sizeof *nk);
			n->kids = nk;
			cap *= 2;
		}
		n->kids[n->nkids++] = k;
	}
	return n;
}

static struct yql_node *and_chain(struct parser *ps)
{
	return chain(ps, YQL_AND, primary);
}

static struct yql_node *cond(struct parser *ps)
{
	return chain(ps, YQL_OR, and_chain);
}

/* A comma-separated list of identifiers into *out. */
static int ident_list(struct parser *ps, char ***out, int *n, const char *what)
{
	int cap = 8;
	char **v = base_arena_alloc(ps->a, (size_t)cap * sizeof *v, 8);
	if (!v)
		return nomem(ps, "yql list");
	for (;;) {
		char *s = ident(ps, what);
		if (!s)
			return STRATA_PARSE;
		if (*n == cap) {
			char **nv = base_arena_alloc(ps->a, (size_t)cap * 2 * sizeof *nv, 8);
			if (!nv)
				return nomem(ps, "yql list");
			memcpy(nv, v, (size_t)cap * sizeof *nv);
			v = nv;
			cap *= 2;
		}
		v[(*n)++] = s;
		if (!is_punct(ps, ","))
			break;
		if (next(ps))
			return STRATA_PARSE;
	}
	*out = v;
	return 0;
}

static int count(struct parser *ps, long *out, const char *what)
{
	if (ps->tok != T_NUM || ps->num < 0 || ps->num != floor(ps->num) || ps->num > 1e9)
		return expected(ps, what);
	*out = (long)ps->num;
	return next(ps);
}

/* order by f [asc|desc], ...: at 'order'. */
static int order_by(struct parser *ps, struct yql_query *q)
{
	if (next(ps))
		return STRATA_PARSE;
	if (!is_kw(ps, "by"))
		return expected(ps, "'by'");
	if (next(ps))
		return STRATA_PARSE;
	int cap = 0;
	do {
		if (q->norder && next(ps))
			return STRATA_PARSE;
		if (room(ps, (void **)&q->order, &cap, q->norder, sizeof *q->order))
			return STRATA_NOMEM;
		struct yql_order *o = &q->order[q->norder];
		int line;
		position(ps, ps->start, &line, &o->col);
		if (!(o->field = ident(ps, "a field name")))
			return STRATA_PARSE;
		o->desc = 0;
		o->given = 0;
		o->function = -1;
		o->primary = 0;
		o->missing = 0;
		o->from_sorting = 0;
		if (is_kw(ps, "asc") || is_kw(ps, "desc")) {
			o->desc = is_kw(ps, "desc");
			o->given = 1;
			if (next(ps))
				return STRATA_PARSE;
		}
		q->norder++;
	} while (is_punct(ps, ","));
	return 0;
}

/* ---- the sorting parameter ------------------------------------------------------ */

static int sort_fail(struct strata_error *err, int code, const char *spec, const char *at,
                     const char *msg, size_t n, const char *what)
{
	return base_err(err, code, "sorting:1:%d: %s%.*s%s", (int)(at - spec) + 1, msg, (int)n,
	                what, code == STRATA_NOT_IMPLEMENTED ? " is not supported" : "");
}

/* A name at *p ([A-Za-z0-9_.]+, or [relevance] and the like): its length. */
static size_t sort_name(const char *p)
{
	if (*p == '[') {
		const char *e = strchr(p, ']');
		return e ? (size_t)(e - p) + 1 : 0;
	}
	size_t n = 0;
	while (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '.')
		n++;
	return n;
}

static int sort_expr(struct yql_query *q, const char *spec, const char **pp, struct yql_order *o,
                     struct strata_error *err)
{
	const char *p = *pp;
	size_t n = sort_name(p);
	if (!n)
		return sort_fail(err, STRATA_PARSE, spec, p, "expected an attribute name or a function",
		                 0, "");
	int fn = -1;
	if (p[n] == '(') {
		if (n == 9 && !strncmp(p, "lowercase", 9))
			fn = RANK_SORT_LOWERCASE;
		else if (n == 3 && !strncmp(p, "raw", 3))
			fn = RANK_SORT_RAW;
		else if (n == 3 && !strncmp(p, "uca", 3))
			fn = RANK_SORT_UCA;
		else if (n == 7 && !strncmp(p, "missing", 7))
			fn = -2;
		else
			return sort_fail(err, STRATA_PARSE, spec, p, "unknown sort function ", n, p);
		const char *fname = p;
		size_t fnlen = n;
		p += n + 1;
		if (fn == -2) { /* missing(SORTOBJECT, first | last | as, V) */
			if (sort_expr(q, spec, &p, o, err))
				return err->code;
			if (*p++ != ',')
				return sort_fail(err, STRATA_PARSE, spec, p - 1, "expected ',' in missing()",
				                 0, "");
			size_t m = sort_name(p);
			if (m == 5 && !strncmp(p, "first", 5))
				o->missing = 1;
			else if (m == 4 && !strncmp(p, "last", 4))
				o->missing = 2;
			else if (m == 2 && !strncmp(p, "as", 2))
				return sort_fail(err, STRATA_NOT_IMPLEMENTED, spec, p,
				                 "missing(..., as, VALUE)", 0, "");
			else
				return sort_fail(err, STRATA_PARSE, spec, p,
				                 "expected first, last or as in missing()", 0, "");
			p += m;
		} else {
			size_t m = sort_name(p);
			if (!m || *p == '[')
				return sort_fail(err, STRATA_PARSE, spec, p, "expected an attribute name in ",
				                 fnlen, fname);
			if (!(o->field = base_arena_strndup(&q->arena, p, m)))
				return base_nomem(err, "sorting");
			o->function = fn;
			p += m;
			if (fn == RANK_SORT_UCA && *p == ',') { /* uca(f, LOCALE[, STRENGTH]) */
				size_t l = sort_name(++p);
				if (!l)
					return sort_fail(err, STRATA_PARSE, spec, p, "expected a locale", 0, "");
				if (!(l >= 2 && !strncmp(p, "en", 2) && (l == 2 || p[2] == '_')))
					return sort_fail(err, STRATA_NOT_IMPLEMENTED, spec, p, "uca() in locale ",
					                 l, p);
				p += l;
				if (*p == ',') {
					size_t t = sort_name(++p);
					static const char *const str[] = { "PRIMARY", "SECONDARY", "TERTIARY",
					                                   "QUATERNARY", "IDENTICAL" };
					int k = 0;
					while (k < 5 && !(strlen(str[k]) == t && !strncmp(p, str[k], t)))
						k++;
					if (k == 5)
						return sort_fail(err, STRATA_PARSE, spec, p,
						                 "expected PRIMARY, SECONDARY, TERTIARY, QUATERNARY "
						                 "or IDENTICAL", 0, "");
					o->primary = k == 0;
					p += t;
				}
			}
		}
		if (*p++ != ')')
			return sort_fail(err, STRATA_PARSE, spec, p - 1, "expected ')' after ", fnlen,
			                 fname);
		*pp = p;
		return 0;
	}
	if (*p == '[') {
		if ((n == 11 && !strncmp(p, "[relevance]", 11)) || (n == 6 && !strncmp(p, "[rank]", 6))) {
			o->field = NULL;
		} else {
			return sort_fail(err, STRATA_NOT_IMPLEMENTED, spec, p, "sorting by ", n, p);
		}
	} else if (!(o->field = base_arena_strndup(&q->arena, p, n))) {
		return base_nomem(err, "sorting");
	}
	*pp = p + n;
	return 0;
}

int yql_sorting(struct yql_query *q, const char *spec, struct strata_error *err)
{
	if (q->norder)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "sorting: the YQL has an order by: give one of them");
	int n = 0;
	for (const char *c = spec; *c; c++)
		n += *c == ' ';
	struct yql_order *o = base_arena_alloc(&q->arena, (size_t)(n + 1) * sizeof *o, 8);
	if (!o)
		return base_nomem(err, "sorting");
	const char *p = spec;
	int k = 0;
	while (*p == ' ')
		p++;
	while (*p) {
		struct yql_order *e = &o[k];
		memset(e, 0, sizeof *e);
		e->function = -1;
		e->from_sorting = 1;
		e->col = (int)(p - spec) + 1;
		if (*p == '+' || *p == '-') {
			e->desc = *p == '-';
			e->given = 1;
			p++;
		}
		if (sort_expr(q, spec, &p, e, err))
			return err->code;
		if (*p && *p != ' ')
			return sort_fail(err, STRATA_PARSE, spec, p, "expected a space between sort "
			                 "expressions", 0, "");
		while (*p == ' ')
			p++;
		k++;
	}
	if (!k)
		return base_err(err, STRATA_INVALID_ARGUMENT, "sorting: no sort expression");
	q->order = o;
	q->norder = k;
	return 0;
}

/* | GROUPING: at the '|'; grouping_expr.c parses the grouping language. */
static int grouping(struct parser *ps, struct yql_query *q)
{
	size_t end;
	int rc = eng_grouping_parse("yql", ps->text, (size_t)(ps->p - ps->text), q, &end, ps->err);
	if (rc) {
		ps->failed = 1;
		return rc;
	}
	ps->p = ps->text + end;
	return next(ps);
}

static int statement(struct parser *ps, struct yql_query *q)
{
	if (next(ps))
		return STRATA_PARSE;
	if (!is_kw(ps, "select"))
		return expected(ps, "'select'");
	if (next(ps))
		return STRATA_PARSE;
	if (is_punct(ps, "*")) {
		q->all_fields = 1;
		if (next(ps))
			return STRATA_PARSE;
	} else if (ident_list(ps, &q->fields, &q->nfields, "a field name or '*'")) {
		return STRATA_PARSE;
	}
	if (!is_kw(ps, "from"))
		return expected(ps, "'from'");
	if (next(ps))
		return STRATA_PARSE;
	if (is_kw(ps, "sources")) {
		if (next(ps))
			return STRATA_PARSE;
		if (is_punct(ps, "*")) {
			q->all_sources = 1;
			if (next(ps))
				return STRATA_PARSE;
		} else if (ident_list(ps, &q->sources, &q->nsources, "a document type or '*'")) {
			return STRATA_PARSE;
		}
	} else if (ident_list(ps, &q->sources, &q->nsources, "'sources' or a document type")) {
		return STRATA_PARSE;
	}
	if (is_kw(ps, "where")) {
		if (next(ps))
			return STRATA_PARSE;
		q->where = cond(ps);
		if (!q->where)
			return STRATA_PARSE;
	} else {
		q->where = node(ps, YQL_TRUE, ps->start);
		if (!q->where)
			return STRATA_NOMEM;
	}
	if (is_kw(ps, "order") && order_by(ps, q))
		return STRATA_PARSE;
	for (;;) {
		if (is_kw(ps, "limit")) {
			if (next(ps) || count(ps, &q->limit, "a number after 'limit'"))
				return STRATA_PARSE;
		} else if (is_kw(ps, "offset")) {
			if (next(ps) || count(ps, &q->offset, "a number after 'offset'"))
				return STRATA_PARSE;
		} else if (is_kw(ps, "timeout")) {
			if (next(ps) || count(ps, &q->timeout_ms, "a number after 'timeout'"))
				return STRATA_PARSE;
		} else {
			break;
		}
	}
	if (is_punct(ps, "|")) {
		int rc = grouping(ps, q);
		if (rc)
			return rc;
	}
	if (is_punct(ps, ";") && next(ps))
		return STRATA_PARSE;
	if (ps->tok != T_EOF)
		return expected(ps, q->ngroupings ? "the end of the query"
		                                : "'and', 'or', 'order by', 'limit', 'offset', '|' or "
		                                  "the end of the query");
	return 0;
}

int yql_parse(const char *text, struct yql_query **out, struct strata_error *err)
{
	*out = NULL;
	/* The code of a failure is the one its report set: keep a report
	 * when the caller wants none. */
	struct strata_error own;
	if (!err)
		err = &own;
	if (!text)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no yql given");
	struct yql_query *q = base_calloc(1, sizeof *q);
	if (!q)
		return base_nomem(err, "yql query");
	base_arena_init(&q->arena, 4096);
	q->limit = -1;
	q->offset = -1;
	q->timeout_ms = -1;
	struct parser ps = { .text = text, .p = text, .a = &q->arena, .q = q, .err = err };
	int rc = statement(&ps, q);
	if (rc) {
		if (!ps.failed)
			base_err(err, STRATA_PARSE, "yql: syntax error");
		yql_free(q);
		return err->code;
	}
	*out = q;
	return 0;
}

const struct yql_node *yql_find(const struct yql_node *n, int kind, const char *field)
{
	if (n->kind == kind && n->field && !strcmp(n->field, field))
		return n;
	for (int i = 0; i < n->nkids; i++) {
		const struct yql_node *f = yql_find(n->kids[i], kind, field);
		if (f)
			return f;
	}
	return NULL;
}

void yql_free(struct yql_query *q)
{
	if (!q)
		return;
	for (struct yql_node *n = q->regexes; n; n = n->re_next)
		regfree(n->re);
	base_arena_free(&q->arena);
	base_free(q, sizeof *q);
}
