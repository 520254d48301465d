/*
 * grouping_expr.c: Vespa's grouping language, parsed into a tree of
 * struct yql_grouping levels.
 *
 * yql.c hands over the text after YQL's '|' (several '| all(...)' are
 * parsed here, one grouping each); query.c the request's "select"
 * parameter, which holds the same language.  A level is all(...) with or
 * without group(EXP); its each(...) clauses say what each group holds
 * (outputs, a hit list, nested levels), its filter(...) which hits go on,
 * its order(...) keys are expressions over aggregators (GX_AGG leaves of
 * the level's oaggs).  Each group list and hit list gets a tag, numbered
 * in the order written across the request, that continuations name.
 * Expressions, predefined() buckets and filters compile to trees in the
 * query's arena (grouping.h); grouping.c evaluates them.  What the
 * language has and Strata does not is refused at its position with
 * STRATA_NOT_IMPLEMENTED, never skipped.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../grouping.h"

static const char *const math1[] = { "exp", "log", "log1p", "log10", "sqrt", "cbrt", "sin",
	                             "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
	                             "asinh", "acosh", "atanh", "floor", "ceil" };
static const char *const timefn[] = { "year", "monthofyear", "dayofmonth", "dayofweek",
	                              "dayofyear", "hourofday", "minuteofhour", "secondofminute",
	                              "date" };
/* name, op, fewest arguments (-1: a list of two or more) */
static const struct { const char *name; int op, nargs; } funcs[] = {
	{ "add", GX_ADD, -1 }, { "sub", GX_SUB, -1 }, { "mul", GX_MUL, -1 }, { "div", GX_DIV, -1 },
	{ "mod", GX_MOD, -1 }, { "neg", GX_NEG, 1 }, { "min", GX_MIN, -1 }, { "max", GX_MAX, -1 },
	{ "and", GX_AND, -1 }, { "or", GX_OR, -1 }, { "xor", GX_XOR, -1 },
	{ "strcat", GX_STRCAT, -1 }, { "strlen", GX_STRLEN, 1 }, { "tostring", GX_TOSTRING, 1 },
	{ "tolong", GX_TOLONG, 1 }, { "todouble", GX_TODOUBLE, 1 }, { "relevance", GX_REL, 0 },
	{ "fixedwidth", GX_FIXEDWIDTH, 2 }, { "now", GX_NOW, 0 },
};
/* Parts of the language that Strata refuses, by the name that starts them. */
static const char *const refused[] = {
	"cat", "md5", "xorbit", "toraw", "uca", "zcurve.x", "zcurve.y", "docidnsspecific",
	"geo_distance", "interpolatedlookup", "reverse", "sort", "size", "attribute",
	"array.at", "quantiles",
};

#define MAX_DEPTH 8 /* levels of groups in groups */
#define MAX_EXPR_DEPTH 64

enum tok { T_EOF, T_IDENT, T_NUM, T_STR, T_PUNCT };

struct gp {
	const char *name;     /* "yql" or "select": the errors' prefix */
	const char *text, *p; /* the whole text; the next unread character */
	struct base_arena *a;
	struct strata_error *err;
	int tok;
	const char *start;
	size_t len;
	double num;
	int integral;         /* T_NUM written without '.' or exponent */
	char *str;
	int tags;             /* lists numbered so far */
	int edepth;
	struct yql_grouping *olevel; /* in order(): the level whose oaggs it reads, else NULL */
	int ocap;             /* olevel->oaggs' room */
};

static int col_of(const struct gp *g, const char *at, int *line)
{
	int col = 1;
	*line = 1;
	for (const char *q = g->text; q < at; q++)
		if (*q == '\n') {
			(*line)++;
			col = 1;
		} else {
			col++;
		}
	return col;
}

static int fail(struct gp *g, int code, const char *at, const char *fmt, const char *a1)
{
	int line, col = col_of(g, at, &line);
	char msg[300];
	snprintf(msg, sizeof msg, fmt, a1);
	return base_err(g->err, code, "%s:%d:%d: %s", g->name, line, col, msg);
}

static int refuse(struct gp *g, const char *at, const char *what)
{
	return fail(g, STRATA_NOT_IMPLEMENTED, at, "%s is not supported", what);
}

static int expected(struct gp *g, const char *what)
{
	char msg[200];
	if (g->tok == T_EOF)
		snprintf(msg, sizeof msg, "expected %s, found the end of the query", what);
	else
		snprintf(msg, sizeof msg, "expected %s, found '%.*s'", what,
		         (int)(g->len > 40 ? 40 : g->len), g->start);
	return fail(g, STRATA_PARSE, g->start, "%s", msg);
}

static int next(struct gp *g)
{
	const char *p = g->p;
	while (isspace((unsigned char)*p))
		p++;
	g->start = p;
	if (!*p) {
		g->tok = T_EOF;
	} else if (isalpha((unsigned char)*p) || *p == '_') {
		while (isalnum((unsigned char)*p) || *p == '_' || *p == '.')
			p++;
		g->tok = T_IDENT;
	} else if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
		char *end;
		g->num = strtod(p, &end);
		g->integral = 1;
		for (const char *q = p; q < end; q++)
			if (*q == '.' || *q == 'e' || *q == 'E')
				g->integral = 0;
		p = end;
		if (*p == 'L' || *p == 'l')
			p++;
		g->tok = T_NUM;
	} else if (*p == '"' || *p == '\'') {
		char quote = *p++;
		const char *s = p;
		while (*p && *p != quote)
			p += p[0] == '\\' && p[1] ? 2 : 1;
		if (!*p) {
			g->p = p;
			return fail(g, STRATA_PARSE, g->start, "unterminated string%s", "");
		}
		char *d = base_arena_alloc(g->a, (size_t)(p - s) + 1, 1);
		if (!d)
			return base_nomem(g->err, "grouping");
		size_t n = 0;
		for (const char *q = s; q < p; q++)
			d[n++] = *q == '\\' && q + 1 < p ? *++q : *q;
		d[n] = 0;
		g->str = d;
		p++;
		g->tok = T_STR;
	} else {
		p++;
		g->tok = T_PUNCT;
	}
	g->len = (size_t)(p - g->start);
	g->p = p;
	return 0;
}

static int is_kw(const struct gp *g, const char *kw)
{
	return g->tok == T_IDENT && g->len == strlen(kw) && !strncasecmp(g->start, kw, g->len);
}

static int is_p(const struct gp *g, char c)
{
	return g->tok == T_PUNCT && *g->start == c;
}

static int expect_p(struct gp *g, char c)
{
	char what[8];
	snprintf(what, sizeof what, "'%c'", c);
	return is_p(g, c) ? next(g) : expected(g, what);
}

/* Is the token after the current one '('? */
static int call_follows(const struct gp *g)
{
	const char *p = g->p;
	while (isspace((unsigned char)*p))
		p++;
	return *p == '(';
}

static char *tokdup(struct gp *g)
{
	char *s = base_arena_strndup(g->a, g->start, g->len);
	if (!s)
		base_nomem(g->err, "grouping");
	return s;
}

/* ---- expressions ----------------------------------------------------------------- */

static struct grp_expr *new_expr(struct gp *g, int op, int nargs)
{
	struct grp_expr *e = base_arena_alloc(g->a, sizeof *e, 8);
	struct grp_expr **args = base_arena_alloc(g->a, (size_t)(nargs ? nargs : 1) * sizeof *args, 8);
	if (!e || !args) {
		base_nomem(g->err, "grouping");
		return NULL;
	}
	memset(e, 0, sizeof *e);
	e->op = op;
	e->nargs = nargs;
	e->args = args;
	int line;
	e->col = col_of(g, g->start, &line);
	return e;
}

static int expr(struct gp *g, struct grp_expr **out);
static int aggregator(struct gp *g, struct yql_agg_expr *e, int signed_);
static int room(struct gp *g, void **v, int *cap, int n, size_t esz);

static const char *const agg_names[] = { NULL, "count", "sum", "avg", "min", "max", "stddev" };

/* In order(): an aggregator, appended to the level's oaggs, as a GX_AGG
 * leaf of the key.  Its argument is a per-hit expression again. */
static int order_agg(struct gp *g, struct grp_expr **out)
{
	struct yql_grouping *s = g->olevel;
	if (!(*out = new_expr(g, GX_AGG, 0)))
		return STRATA_NOMEM;
	if (room(g, (void **)&s->oaggs, &g->ocap, s->noagg, sizeof *s->oaggs))
		return g->err->code;
	g->olevel = NULL;
	int rc = aggregator(g, &s->oaggs[s->noagg], 0);
	g->olevel = s;
	if (rc)
		return rc;
	(*out)->fn = s->noagg++;
	return 0;
}

/* The next bucket end of predefined(): -inf, inf, a number or a string,
 * into *v (kind 1 or 2; inf_lo, inf_hi for the infinities). */
static int bucket_end(struct gp *g, struct grp_val *v)
{
	memset(v, 0, sizeof *v);
	int neg = is_p(g, '-');
	if (neg && next(g))
		return g->err->code;
	if (is_kw(g, "inf")) {
		v->inf_lo = neg;
		v->inf_hi = !neg;
	} else if (g->tok == T_NUM) {
		v->kind = 1;
		v->num = neg ? -g->num : g->num;
		v->integral = g->integral;
	} else if (g->tok == T_STR && !neg) {
		v->kind = 2;
		v->s = g->str;
		v->n = strlen(g->str);
	} else if (is_p(g, '{')) {
		return refuse(g, g->start, "a raw value in a bucket");
	} else {
		return expected(g, "-inf, inf, a number or a string");
	}
	return next(g);
}

/* The smallest value above v of bucket type t (a string: v and a space,
 * as the reference defines bucket("c") as bucket["c", "c ">). */
static int bucket_next(struct gp *g, struct grp_val *v, int t)
{
	if (v->inf_lo || v->inf_hi)
		return 0;
	if (t == BK_LONG) {
		v->num += 1;
	} else if (t == BK_DOUBLE) {
		v->num = nextafter(v->num, INFINITY);
	} else {
		char *d = base_arena_alloc(g->a, v->n + 2, 1);
		if (!d)
			return base_nomem(g->err, "grouping");
		memcpy(d, v->s, v->n);
		d[v->n] = ' ';
		d[v->n + 1] = 0;
		v->s = d;
		v->n++;
	}
	return 0;
}

/* Compare bucket ends a, b as lower (lo) or upper ends. */
int grp_bucket_cmp(const struct grp_val *a, const struct grp_val *b, int t)
{
	int ia = a->inf_lo ? -1 : a->inf_hi, ib = b->inf_lo ? -1 : b->inf_hi;
	if (ia || ib)
		return ia - ib;
	if (t != BK_STRING)
		return a->num < b->num ? -1 : a->num > b->num;
	size_t n = a->n < b->n ? a->n : b->n;
	int c = memcmp(a->s, b->s, n);
	return c ? c : (a->n > b->n) - (a->n < b->n);
}

/* predefined(EXP, bucket..., ...): at 'predefined'.  '(' and '[' include
 * the start, '<' does not; ')' and '>' exclude the end, ']' includes it;
 * bucket(v) alone is [v, next v>.  The buckets ascend without overlap. */
static int predefined(struct gp *g, struct grp_expr **out)
{
	const char *at = g->start;
	struct grp_bucket bk[64];
	int nb = 0, t = 0, paren = 0;
	struct grp_expr *arg;
	if (next(g) || expect_p(g, '(') || expr(g, &arg) || expect_p(g, ','))
		return g->err->code;
	if (is_p(g, '(')) { /* the reference's grammar: a parenthesised list */
		paren = 1;
		if (next(g))
			return g->err->code;
	}
	char open[64], close[64];
	int single[64];
	do {
		if (nb && next(g))
			return g->err->code;
		if (!is_kw(g, "bucket"))
			return expected(g, "bucket(...)");
		if (nb == 64)
			return fail(g, STRATA_PARSE, g->start, "more than 64 buckets in predefined()%s", "");
		if (next(g))
			return g->err->code;
		if (!is_p(g, '(') && !is_p(g, '[') && !is_p(g, '<'))
			return expected(g, "'(', '[' or '<'");
		open[nb] = *g->start;
		struct grp_bucket *b = &bk[nb];
		if (next(g) || bucket_end(g, &b->lo))
			return g->err->code;
		single[nb] = !is_p(g, ',');
		if (!single[nb] && (next(g) || bucket_end(g, &b->hi)))
			return g->err->code;
		if (!is_p(g, ')') && !is_p(g, ']') && !is_p(g, '>'))
			return expected(g, "')', ']' or '>'");
		close[nb] = *g->start;
		if (next(g))
			return g->err->code;
		for (int k = 0; k < 2 - single[nb]; k++) {
			const struct grp_val *v = k ? &b->hi : &b->lo;
			int vt = v->kind == 2 ? BK_STRING : v->kind == 1 ? (v->integral ? BK_LONG : BK_DOUBLE) : 0;
			if ((vt == BK_STRING) != (t == BK_STRING) && vt && t)
				return fail(g, STRATA_PARSE, at, "predefined() buckets mix strings and "
				            "numbers%s", "");
			if (vt > t)
				t = vt;
		}
		nb++;
	} while (is_p(g, ','));
	if (paren && expect_p(g, ')'))
		return g->err->code;
	if (expect_p(g, ')'))
		return g->err->code;
	if (!t)
		t = BK_LONG;
	for (int i = 0; i < nb; i++) {
		struct grp_bucket *b = &bk[i];
		if (single[i]) {
			if (b->lo.inf_lo || b->lo.inf_hi)
				return fail(g, STRATA_PARSE, at, "a bucket of one value needs a number or a "
				            "string%s", "");
			b->hi = b->lo;
			if (bucket_next(g, &b->hi, t))
				return g->err->code;
		} else if ((open[i] == '<' && bucket_next(g, &b->lo, t)) ||
		           (close[i] == ']' && bucket_next(g, &b->hi, t))) {
			return g->err->code;
		}
		b->lo.integral = b->hi.integral = t == BK_LONG;
		if (grp_bucket_cmp(&b->lo, &b->hi, t) >= 0 || (i && grp_bucket_cmp(&bk[i - 1].hi, &b->lo, t) > 0))
			return fail(g, STRATA_PARSE, at, "predefined() buckets must ascend without "
			            "overlapping%s", "");
	}
	if (!(*out = new_expr(g, GX_PREDEF, 1)) ||
	    !((*out)->buckets = base_arena_alloc(g->a, (size_t)nb * sizeof *bk, 8)))
		return base_nomem(g->err, "grouping");
	int line;
	(*out)->col = col_of(g, at, &line);
	(*out)->args[0] = arg;
	(*out)->fn = nb;
	(*out)->btype = t;
	memcpy((*out)->buckets, bk, (size_t)nb * sizeof *bk);
	return 0;
}

/* '(' exp, ... ')' as e's arguments; at the '('. */
static int arg_list(struct gp *g, int op, int want, const char *name, struct grp_expr **out)
{
	struct grp_expr *args[16];
	int n = 0;
	const char *at = g->start;
	if (next(g) || expect_p(g, '('))
		return g->err->code;
	while (!is_p(g, ')')) {
		if (n && expect_p(g, ','))
			return g->err->code;
		if (n == 16)
			return fail(g, STRATA_PARSE, g->start, "more than 16 arguments to %s()", name);
		if (expr(g, &args[n++]))
			return g->err->code;
	}
	if ((want >= 0 && n != want) || (want < 0 && n < 2)) {
		char msg[64];
		if (want >= 0)
			snprintf(msg, sizeof msg, "%s() takes %d argument%s", name, want,
			         want == 1 ? "" : "s");
		else
			snprintf(msg, sizeof msg, "%s() takes two arguments or more", name);
		return fail(g, STRATA_PARSE, at, "%s", msg);
	}
	if (!(*out = new_expr(g, op, n)))
		return STRATA_NOMEM;
	(*out)->col = 0;
	memcpy((*out)->args, args, (size_t)n * sizeof *args);
	return next(g);
}

/* A value: a number, a string, (exp), a function, an attribute's name. */
static int value(struct gp *g, struct grp_expr **out)
{
	const char *at = g->start;
	int line, col = col_of(g, at, &line);
	if (is_p(g, '(')) {
		if (next(g) || expr(g, out))
			return g->err->code;
		return expect_p(g, ')');
	}
	if (is_p(g, '-')) {
		struct grp_expr *a;
		if (next(g) || value(g, &a))
			return g->err->code;
		if (!(*out = new_expr(g, GX_NEG, 1)))
			return STRATA_NOMEM;
		(*out)->args[0] = a;
		return 0;
	}
	if (g->tok == T_NUM || g->tok == T_STR) {
		if (!(*out = new_expr(g, g->tok == T_NUM ? GX_NUM : GX_STR, 0)))
			return STRATA_NOMEM;
		if (g->tok == T_NUM) {
			(*out)->v.kind = 1;
			(*out)->v.num = g->num;
			(*out)->v.integral = g->integral;
		} else {
			(*out)->v.kind = 2;
			(*out)->v.s = g->str;
			(*out)->v.n = strlen(g->str);
		}
		return next(g);
	}
	if (g->tok != T_IDENT)
		return expected(g, "an expression");
	if (g->olevel) {
		for (int i = 1; i <= YQL_AGG_STDDEV; i++)
			if (is_kw(g, agg_names[i]) && call_follows(g))
				return order_agg(g, out);
		if (is_kw(g, "xor") || is_kw(g, "quantiles"))
			return refuse(g, at, is_kw(g, "xor") ? "order by xor()" : "order by quantiles()");
		if (!call_follows(g) || is_kw(g, "relevance")) {
			const char *name = call_follows(g) ? "relevance()" : tokdup(g);
			return name ? fail(g, STRATA_PARSE, at, "order() cannot read '%s' outside an "
			                   "aggregator: it orders groups by their aggregates, not by "
			                   "their hits' values (write it inside one, e.g. max(...))",
			                   name) : STRATA_NOMEM;
		}
	}
	if (is_kw(g, "predefined") && call_follows(g))
		return predefined(g, out);
	for (size_t i = 0; call_follows(g) && i < sizeof refused / sizeof *refused; i++)
		if (is_kw(g, refused[i])) {
			char what[80];
			snprintf(what, sizeof what, "%s() in a grouping expression", refused[i]);
			return refuse(g, at, what);
		}
	if (!call_follows(g)) {
		if (is_kw(g, "inf") || is_kw(g, "true") || is_kw(g, "false"))
			return refuse(g, at, "this constant in a grouping expression");
		const char *p = g->p;
		while (isspace((unsigned char)*p))
			p++;
		if (*p == '{') { /* field{"key"}: a map's value at key */
			if (!(*out = new_expr(g, GX_MAPGET, 0)) || !((*out)->field = tokdup(g)))
				return STRATA_NOMEM;
			if (next(g) || expect_p(g, '{'))
				return g->err->code;
			if (g->tok != T_STR && g->tok != T_IDENT)
				return expected(g, "a key in quotes");
			(*out)->v.kind = 2;
			if (!((*out)->v.s = g->tok == T_STR ? g->str : tokdup(g)))
				return STRATA_NOMEM;
			(*out)->v.n = strlen((*out)->v.s);
			return next(g) || expect_p(g, '}') ? g->err->code : 0;
		}
		if (!(*out = new_expr(g, GX_ATTR, 0)) || !((*out)->field = tokdup(g)))
			return STRATA_NOMEM;
		return next(g);
	}
	int rc;
	if (g->len > 5 && !strncasecmp(g->start, "math.", 5)) {
		for (size_t i = 0; i < sizeof math1 / sizeof *math1; i++)
			if (g->len == 5 + strlen(math1[i]) && !strncasecmp(g->start + 5, math1[i], g->len - 5)) {
				if ((rc = arg_list(g, GX_MATH1, 1, math1[i], out)))
					return rc;
				(*out)->fn = (int)i;
				(*out)->col = col;
				return 0;
			}
		int pw = is_kw(g, "math.pow");
		if (pw || is_kw(g, "math.hypot")) {
			if ((rc = arg_list(g, GX_MATH2, 2, pw ? "math.pow" : "math.hypot", out)))
				return rc;
			(*out)->fn = pw;
			(*out)->col = col;
			return 0;
		}
	}
	if (g->len > 5 && !strncasecmp(g->start, "time.", 5))
		for (size_t i = 0; i < sizeof timefn / sizeof *timefn; i++)
			if (g->len == 5 + strlen(timefn[i]) && !strncasecmp(g->start + 5, timefn[i], g->len - 5)) {
				if ((rc = arg_list(g, GX_TIME, 1, timefn[i], out)))
					return rc;
				(*out)->fn = (int)i;
				(*out)->col = col;
				return 0;
			}
	for (size_t i = 0; i < sizeof funcs / sizeof *funcs; i++)
		if (is_kw(g, funcs[i].name)) {
			if ((rc = arg_list(g, funcs[i].op, funcs[i].nargs, funcs[i].name, out)))
				return rc;
			(*out)->col = col;
			if (funcs[i].op == GX_FIXEDWIDTH &&
			    ((*out)->args[1]->op != GX_NUM || !((*out)->args[1]->v.num > 0)))
				return fail(g, STRATA_PARSE, at, "fixedwidth() takes a positive number as "
				            "its width%s", "");
			return 0;
		}
	char what[80];
	snprintf(what, sizeof what, "the grouping function '%.*s'", (int)(g->len > 40 ? 40 : g->len),
	         g->start);
	return refuse(g, at, what);
}

static int binary(struct gp *g, int op, struct grp_expr **l, struct grp_expr *r)
{
	struct grp_expr *e = new_expr(g, op, 2);
	if (!e)
		return STRATA_NOMEM;
	e->col = (*l)->col;
	e->args[0] = *l;
	e->args[1] = r;
	*l = e;
	return 0;
}

static int term(struct gp *g, struct grp_expr **out)
{
	if (value(g, out))
		return g->err->code;
	while (is_p(g, '*') || is_p(g, '/') || is_p(g, '%')) {
		int op = is_p(g, '*') ? GX_MUL : is_p(g, '/') ? GX_DIV : GX_MOD;
		struct grp_expr *r;
		if (next(g) || value(g, &r) || binary(g, op, out, r))
			return g->err->code;
	}
	return 0;
}

static int expr(struct gp *g, struct grp_expr **out)
{
	if (++g->edepth > MAX_EXPR_DEPTH)
		return fail(g, STRATA_PARSE, g->start, "grouping expression nested too deep%s", "");
	if (term(g, out))
		return g->err->code;
	while (is_p(g, '+') || is_p(g, '-')) {
		int op = is_p(g, '+') ? GX_ADD : GX_SUB;
		struct grp_expr *r;
		if (next(g) || term(g, &r) || binary(g, op, out, r))
			return g->err->code;
	}
	g->edepth--;
	return 0;
}

/* The expression as Vespa prints it: functions with their arguments, the
 * infix forms as add(), sub(), ... */
static void print_expr(const struct grp_expr *e, char *buf, size_t n, size_t *at)
{
	static const char *const names[] = { [GX_ADD] = "add", [GX_SUB] = "sub", [GX_MUL] = "mul",
		[GX_DIV] = "div", [GX_MOD] = "mod", [GX_NEG] = "neg", [GX_MIN] = "min",
		[GX_MAX] = "max", [GX_AND] = "and", [GX_OR] = "or", [GX_XOR] = "xor",
		[GX_STRCAT] = "strcat", [GX_STRLEN] = "strlen", [GX_TOSTRING] = "tostring",
		[GX_TOLONG] = "tolong", [GX_TODOUBLE] = "todouble", [GX_REL] = "relevance", [GX_NOW] = "now",
		[GX_FIXEDWIDTH] = "fixedwidth" };
#define PUT(...) (*at += (size_t)snprintf(buf + (*at < n ? *at : n), *at < n ? n - *at : 0, __VA_ARGS__))
	char num[40];
	switch (e->op) {
	case GX_ATTR: PUT("%s", e->field); return;
	case GX_MAPGET: PUT("%s{\"%s\"}", e->field, e->v.s); return;
	case GX_NUM:
		if (e->v.integral)
			PUT("%lld", (long long)e->v.num);
		else {
			eng_real_str(e->v.num, num, sizeof num);
			PUT("%s", num);
		}
		return;
	case GX_STR: PUT("\"%s\"", e->v.s); return;
	case GX_MATH1: PUT("math.%s(", math1[e->fn]); break;
	case GX_MATH2: PUT("math.%s(", e->fn ? "pow" : "hypot"); break;
	case GX_TIME: PUT("time.%s(", timefn[e->fn]); break;
	case GX_AGG: PUT("$%d", e->fn); return;
	case GX_PREDEF:
		PUT("predefined(");
		print_expr(e->args[0], buf, n, at);
		for (int k = 0; k < e->fn; k++) {
			PUT(", bucket[");
			for (int end = 0; end < 2; end++) {
				const struct grp_val *v = end ? &e->buckets[k].hi : &e->buckets[k].lo;
				if (end)
					PUT(", ");
				if (v->inf_lo || v->inf_hi)
					PUT("%sinf", v->inf_lo ? "-" : "");
				else if (e->btype == BK_STRING)
					PUT("\"%.*s\"", (int)v->n, v->s);
				else if (e->btype == BK_LONG)
					PUT("%lld", (long long)v->num);
				else {
					eng_real_str(v->num, num, sizeof num);
					PUT("%s", num);
				}
			}
			PUT(">");
		}
		PUT(")");
		return;
	default: PUT("%s(", names[e->op]); break;
	}
	for (int i = 0; i < e->nargs; i++) {
		if (i)
			PUT(", ");
		print_expr(e->args[i], buf, n, at);
	}
	PUT(")");
#undef PUT
}

static char *expr_text(struct gp *g, const char *pre, const struct grp_expr *e)
{
	char buf[512];
	size_t at = 0;
	if (pre)
		at = (size_t)snprintf(buf, sizeof buf, "%s(", pre);
	if (e)
		print_expr(e, buf, sizeof buf, &at);
	if (pre && at < sizeof buf)
		at += (size_t)snprintf(buf + at, sizeof buf - at, ")");
	if (at >= sizeof buf)
		at = sizeof buf - 1;
	char *s = base_arena_strndup(g->a, buf, at);
	if (!s)
		base_nomem(g->err, "grouping");
	return s;
}

static int filter_attrs(const struct grp_filter *f,
                        int (*fn)(void *, const char *, int, const char *), void *ud);

static int each_attr(const struct grp_expr *e, int (*fn)(void *, const char *, int, const char *),
                     void *ud, const char *what)
{
	if (!e)
		return 0;
	if (e->op == GX_ATTR)
		return fn(ud, e->field, e->col, what);
	if (e->op == GX_MAPGET) { /* the map's values: m.value, looked up by m.key */
		char path[300];
		snprintf(path, sizeof path, "%s.value", e->field);
		return fn(ud, path, e->col, "a map lookup");
	}
	for (int k = 0; k < e->nargs; k++) {
		int rc = each_attr(e->args[k], fn, ud, what);
		if (rc)
			return rc;
	}
	return 0;
}

static int filter_attrs(const struct grp_filter *f,
                        int (*fn)(void *, const char *, int, const char *), void *ud)
{
	if (!f)
		return 0;
	int rc = each_attr(f->e, fn, ud, "filter()");
	if (!rc)
		rc = filter_attrs(f->a, fn, ud);
	return rc ? rc : filter_attrs(f->b, fn, ud);
}

static int aggs_attrs(const struct yql_agg_expr *e, int n,
                      int (*fn)(void *, const char *, int, const char *), void *ud)
{
	int rc = 0;
	for (int i = 0; !rc && i < n; i++)
		rc = each_attr(e[i].arg, fn, ud, e[i].label);
	return rc;
}

static int level_attrs(const struct yql_grouping *g,
                       int (*fn)(void *, const char *, int, const char *), void *ud)
{
	/* "group()" only for a bare field: a collection is a key there alone */
	int rc = each_attr(g->key, fn, ud, g->key && g->key->op == GX_ATTR ? "group()"
	                                                                    : "a group() expression");
	if (!rc)
		rc = filter_attrs(g->filter, fn, ud);
	if (!rc)
		rc = aggs_attrs(g->out, g->nout, fn, ud);
	if (!rc)
		rc = aggs_attrs(g->lout, g->nlout, fn, ud);
	if (!rc)
		rc = aggs_attrs(g->oaggs, g->noagg, fn, ud);
	for (int k = 0; !rc && k < g->nkids; k++)
		rc = level_attrs(&g->kids[k], fn, ud);
	return rc;
}

int eng_grouping_fields(const struct yql_query *q,
                        int (*fn)(void *ud, const char *field, int col, const char *what),
                        void *ud)
{
	int rc = 0;
	for (int k = 0; !rc && k < q->ngroupings; k++)
		rc = level_attrs(&q->grouping[k], fn, ud);
	return rc;
}

/* ---- the grouping language ----------------------------------------------------------- */

static int room(struct gp *g, void **v, int *cap, int n, size_t esz)
{
	if (n < *cap)
		return 0;
	int nc = *cap ? *cap * 2 : 4;
	while (nc <= n)
		nc *= 2;
	void *nv = base_arena_alloc(g->a, (size_t)nc * esz, 8);
	if (!nv)
		return base_nomem(g->err, "grouping");
	if (n)
		memcpy(nv, *v, (size_t)n * esz);
	*v = nv;
	*cap = nc;
	return 0;
}

/* One aggregator: count(), sum(EXP), avg, min, max, stddev, [as(label)]. */
static int aggregator(struct gp *g, struct yql_agg_expr *e, int signed_)
{
	const char *at = g->start;
	int line;
	memset(e, 0, sizeof *e);
	e->col = col_of(g, at, &line);
	for (int i = 1; i <= YQL_AGG_STDDEV; i++)
		if (is_kw(g, agg_names[i]))
			e->agg = i;
	if (!e->agg) {
		if (is_kw(g, "xor") || is_kw(g, "quantiles") || is_kw(g, "summary")) {
			char what[64];
			snprintf(what, sizeof what, "%.*s() here", (int)g->len, g->start);
			return refuse(g, at, what);
		}
		return g->tok == T_IDENT ? refuse(g, at, "this grouping expression")
		                         : expected(g, "count(), sum(), avg(), min(), max() or stddev()");
	}
	if (next(g) || expect_p(g, '('))
		return g->err->code;
	if (e->agg != YQL_AGG_COUNT) {
		if (is_p(g, ')'))
			return expected(g, "an expression");
		if (expr(g, &e->arg))
			return g->err->code;
		if (e->arg->op == GX_ATTR)
			e->field = e->arg->field;
	}
	if (expect_p(g, ')'))
		return g->err->code;
	if (!(e->label = expr_text(g, agg_names[e->agg], e->arg)))
		return STRATA_NOMEM;
	if (!signed_ && is_kw(g, "as")) {
		if (next(g) || expect_p(g, '('))
			return g->err->code;
		if (g->tok != T_IDENT)
			return expected(g, "a label");
		if (!(e->label = tokdup(g)) || next(g) || expect_p(g, ')'))
			return g->err->code;
	}
	return 0;
}

/* output(AGG, ...) appended to out: at 'output'. */
static int agg_list(struct gp *g, struct yql_agg_expr **out, int *n)
{
	int cap = 0;
	if (next(g) || expect_p(g, '('))
		return g->err->code;
	for (;;) {
		if (room(g, (void **)out, &cap, *n, sizeof **out) || aggregator(g, &(*out)[*n], 0))
			return g->err->code;
		(*n)++;
		if (is_p(g, ')'))
			return next(g);
		if (expect_p(g, ','))
			return g->err->code;
	}
}

/* order([+|-]EXP, ...) of s, each EXP over aggregators: at 'order'. */
static int order_list(struct gp *g, struct yql_grouping *s)
{
	int cap = 0;
	if (next(g) || expect_p(g, '('))
		return g->err->code;
	g->ocap = 0;
	for (;;) {
		if (room(g, (void **)&s->order, &cap, s->norder, sizeof *s->order))
			return g->err->code;
		struct yql_agg_expr *e = &s->order[s->norder];
		int line;
		memset(e, 0, sizeof *e);
		e->col = col_of(g, g->start, &line);
		if (is_p(g, '-') || is_p(g, '+')) {
			e->desc = is_p(g, '-');
			if (next(g))
				return g->err->code;
		}
		g->olevel = s;
		int rc = expr(g, &e->arg);
		g->olevel = NULL;
		if (rc)
			return rc;
		if (e->arg->op == GX_AGG) { /* one aggregator: say which */
			const struct yql_agg_expr *a = &s->oaggs[e->arg->fn];
			e->agg = a->agg;
			e->field = a->field;
			e->label = a->label;
		}
		s->norder++;
		if (is_p(g, ')'))
			return next(g);
		if (expect_p(g, ','))
			return g->err->code;
	}
}

/* max(N | inf) into *out (-1: inf). */
static int max_clause(struct gp *g, long *out, const char *what)
{
	if (next(g) || expect_p(g, '('))
		return g->err->code;
	if (is_kw(g, "inf")) {
		*out = -1;
	} else {
		if (g->tok != T_NUM || g->num < 1 || g->num != floor(g->num) || g->num > 1e9)
			return fail(g, STRATA_PARSE, g->start, "%s takes a positive integer", what);
		*out = (long)g->num;
	}
	if (next(g))
		return g->err->code;
	return expect_p(g, ')');
}

/* ---- filter(...) ---- */

static struct grp_filter *new_filter(struct gp *g, int op)
{
	struct grp_filter *f = base_arena_alloc(g->a, sizeof *f, 8);
	if (!f) {
		base_nomem(g->err, "grouping");
		return NULL;
	}
	memset(f, 0, sizeof *f);
	f->op = op;
	return f;
}

static int filter_or(struct gp *g, struct grp_filter **out);

/* A number of range(), maybe negative. */
static int signed_num(struct gp *g, double *x)
{
	int neg = is_p(g, '-');
	if (neg && next(g))
		return g->err->code;
	if (g->tok != T_NUM)
		return expected(g, "a number");
	*x = neg ? -g->num : g->num;
	return next(g);
}

static int boolean(struct gp *g, int *b)
{
	if (!is_kw(g, "true") && !is_kw(g, "false"))
		return expected(g, "true or false");
	*b = is_kw(g, "true");
	return next(g);
}

/* regex("RE", EXP), range(LO, HI, EXP [, BOOL, BOOL]), istrue(EXP), (FILTER). */
static int filter_prim(struct gp *g, struct grp_filter **out)
{
	const char *at = g->start;
	if (is_p(g, '(')) {
		if (next(g) || filter_or(g, out))
			return g->err->code;
		return expect_p(g, ')');
	}
	int op = is_kw(g, "regex") ? FX_REGEX : is_kw(g, "range") ? FX_RANGE
	         : is_kw(g, "istrue") ? FX_ISTRUE : 0;
	if (!op || !call_follows(g))
		return expected(g, "regex(), range(), istrue(), not or '('");
	struct grp_filter *f = new_filter(g, op);
	if (!f || next(g) || expect_p(g, '('))
		return g->err->code;
	if (op == FX_REGEX) {
		if (g->tok != T_STR)
			return expected(g, "a regular expression in quotes");
		if (base_regex_size(g->str) > BASE_REGEX_MAX)
			return fail(g, STRATA_PARSE, g->start, "regular expression too complex: its "
			            "repetitions would grow past the limit%s", "");
		size_t n = strlen(g->str);
		if (!(f->re = base_arena_alloc(g->a, n + 5, 1)))
			return base_nomem(g->err, "grouping");
		snprintf(f->re, n + 5, "^(%s)$", g->str);
		regex_t re;
		int rc = regcomp(&re, f->re, REG_EXTENDED | REG_NOSUB);
		if (rc) {
			char why[200];
			regerror(rc, &re, why, sizeof why);
			return fail(g, STRATA_PARSE, g->start, "bad regular expression: %s", why);
		}
		regfree(&re);
		if (next(g) || expect_p(g, ','))
			return g->err->code;
	} else if (op == FX_RANGE) {
		f->lo_incl = 1;
		if (signed_num(g, &f->lo) || expect_p(g, ',') || signed_num(g, &f->hi) ||
		    expect_p(g, ','))
			return g->err->code;
	}
	if (expr(g, &f->e))
		return g->err->code;
	if (op == FX_RANGE && is_p(g, ',')) {
		if (next(g) || boolean(g, &f->lo_incl) || expect_p(g, ',') ||
		    boolean(g, &f->hi_incl))
			return g->err->code;
	}
	(void)at;
	*out = f;
	return expect_p(g, ')');
}

static int filter_not(struct gp *g, struct grp_filter **out)
{
	if (!is_kw(g, "not"))
		return filter_prim(g, out);
	if (++g->edepth > MAX_EXPR_DEPTH)
		return fail(g, STRATA_PARSE, g->start, "filter nested too deep%s", "");
	struct grp_filter *f = new_filter(g, FX_NOT);
	if (!f || next(g) || filter_not(g, &f->a))
		return g->err->code;
	g->edepth--;
	*out = f;
	return 0;
}

static int filter_and(struct gp *g, struct grp_filter **out)
{
	if (filter_not(g, out))
		return g->err->code;
	while (is_kw(g, "and")) {
		struct grp_filter *f = new_filter(g, FX_AND);
		if (!f || next(g) || filter_not(g, &f->b))
			return g->err->code;
		f->a = *out;
		*out = f;
	}
	return 0;
}

/* not before and before or, left to right. */
static int filter_or(struct gp *g, struct grp_filter **out)
{
	if (++g->edepth > MAX_EXPR_DEPTH)
		return fail(g, STRATA_PARSE, g->start, "filter nested too deep%s", "");
	if (filter_and(g, out))
		return g->err->code;
	while (is_kw(g, "or")) {
		struct grp_filter *f = new_filter(g, FX_OR);
		if (!f || next(g) || filter_and(g, &f->b))
			return g->err->code;
		f->a = *out;
		*out = f;
	}
	g->edepth--;
	return 0;
}

/* filter(...) or keep(...) of s (a second one and-ed to the first): at the keyword. */
static int filter_clause(struct gp *g, struct yql_grouping *s)
{
	struct grp_filter *f;
	if (next(g) || expect_p(g, '(') || filter_or(g, &f) || expect_p(g, ')'))
		return g->err->code;
	if (s->filter) {
		struct grp_filter *both = new_filter(g, FX_AND);
		if (!both)
			return STRATA_NOMEM;
		both->a = s->filter;
		both->b = f;
		f = both;
	}
	s->filter = f;
	return 0;
}

/* ---- levels ---- */

static void init_level(struct yql_grouping *s)
{
	memset(s, 0, sizeof *s);
	s->max = s->precision = s->hits_max = -1;
	s->tag = s->hits_tag = -1;
}

static int clauses(struct gp *g, struct yql_grouping *s, const char *all_at, int depth);

/* A clause Vespa has and Strata does not, at the current token? */
static int refused_clause(struct gp *g)
{
	static const char *const kws[] = { "where", "alias", "accuracy", "hint", "as" };
	for (size_t i = 0; i < sizeof kws / sizeof *kws; i++)
		if (is_kw(g, kws[i])) {
			char what[64];
			snprintf(what, sizeof what, "'%s' in a grouping", kws[i]);
			return refuse(g, g->start, what);
		}
	return 0;
}

/* each(output(summary([CLASS]))): s's hit list.  At 'each'. */
static int hits_clause(struct gp *g, struct yql_grouping *s)
{
	if (next(g) || expect_p(g, '('))
		return g->err->code;
	if (!is_kw(g, "output"))
		return is_kw(g, "group") || is_kw(g, "each") || is_kw(g, "all")
		               ? refuse(g, g->start, "grouping the hits of a hit list")
		               : expected(g, "output(summary())");
	if (next(g) || expect_p(g, '('))
		return g->err->code;
	if (!is_kw(g, "summary"))
		return g->tok == T_IDENT ? refuse(g, g->start, "this output of hits (only summary())")
		                         : expected(g, "summary()");
	if (next(g) || expect_p(g, '('))
		return g->err->code;
	if (g->tok == T_IDENT) {
		if (!(s->summary_class = tokdup(g)) || next(g))
			return g->err->code;
	}
	if (expect_p(g, ')'))
		return g->err->code;
	if (!is_p(g, ')'))
		return refuse(g, g->start, "more than summary() in the output of hits");
	if (next(g))
		return g->err->code;
	s->summary = 1;
	s->hits_at = s->nkids;
	s->hits_tag = g->tags++;
	return expect_p(g, ')');
}

/* A level inside s: all(...) at 'all', or group(...) ... up to the ')' of
 * the each() it is in (left unread), appended to s's kids. */
static int kid_level(struct gp *g, struct yql_grouping *s, int *kcap, int depth, int in_each)
{
	const char *at = g->start;
	if (depth + 1 >= MAX_DEPTH)
		return refuse(g, at, "grouping nested deeper than 8 levels");
	struct yql_grouping k;
	init_level(&k);
	int all = is_kw(g, "all");
	if (all && (next(g) || expect_p(g, '(')))
		return g->err->code;
	if (clauses(g, &k, at, depth + 1) || (all && next(g)))
		return g->err->code;
	if (in_each && !k.key && !k.nkids && !k.summary) /* its outputs: the group's own */
		return fail(g, STRATA_PARSE, at, "a grouping inside each() needs a group()%s", "");
	if (room(g, (void **)&s->kids, kcap, s->nkids, sizeof *s->kids))
		return g->err->code;
	s->kids[s->nkids++] = k;
	return 0;
}

/* each(...) of s (with a key): what each group holds, its outputs, its hit
 * list (max(N), each(output(summary()))), levels over its hits.  Several
 * each() add up.  At 'each'. */
static int each_clause(struct gp *g, struct yql_grouping *s, int *kcap, int depth)
{
	const char *each_at = g->start;
	int any = 0;
	if (next(g) || expect_p(g, '('))
		return g->err->code;
	while (!is_p(g, ')')) {
		const char *at = g->start;
		any = 1;
		if (is_kw(g, "output")) {
			if (agg_list(g, &s->out, &s->nout))
				return g->err->code;
		} else if (is_kw(g, "max") && s->hits_max < 0) {
			if (max_clause(g, &s->hits_max, "max()"))
				return g->err->code;
		} else if (is_kw(g, "precision")) {
			long p;
			if (max_clause(g, &p, "precision()"))
				return g->err->code;
		} else if (is_kw(g, "each") && !s->summary) {
			if (hits_clause(g, s))
				return g->err->code;
		} else if (is_kw(g, "all") || is_kw(g, "group")) {
			int grp = is_kw(g, "group");
			if (kid_level(g, s, kcap, depth, 1))
				return g->err->code;
			if (grp)
				break; /* group(b) ... runs to the each()'s ')' */
		} else if (is_kw(g, "order")) {
			return refuse(g, at, "order() of hits (they come by relevance)");
		} else if (is_kw(g, "each")) {
			return refuse(g, at, "a second hit list in one group");
		} else if (is_kw(g, "filter") || is_kw(g, "keep")) {
			return refuse(g, at, "filter() of a group's hits (filter the level: "
			              "all(group(...) filter(...) each(...)))");
		} else if (refused_clause(g)) {
			return g->err->code;
		} else {
			return expected(g, "output(), max(), each(), all() or group()");
		}
	}
	if (!any)
		return fail(g, STRATA_PARSE, each_at, "each() needs output() or a grouping%s", "");
	if (s->hits_max >= 0 && !s->summary && !s->nkids)
		return fail(g, STRATA_PARSE, each_at, "max() of hits needs each(output(summary()))%s",
		            "");
	return next(g);
}

/* The clauses of a level up to its ')', left unread. */
static int clauses(struct gp *g, struct yql_grouping *s, const char *all_at, int depth)
{
	int each = 0, any = 0, kcap = 0;
	while (!is_p(g, ')')) {
		const char *at = g->start;
		if (is_kw(g, "group") && !any) {
			if (next(g) || expect_p(g, '('))
				return g->err->code;
			int line;
			s->col = col_of(g, g->start, &line);
			if (is_p(g, ')'))
				return expected(g, "an expression");
			if (expr(g, &s->key) || expect_p(g, ')'))
				return g->err->code;
			if (s->key->op == GX_ATTR)
				s->field = s->key->field;
			if (!(s->label = expr_text(g, NULL, s->key)))
				return STRATA_NOMEM;
			s->tag = g->tags++;
		} else if (is_kw(g, "group") && !s->key && s->nkids) {
			return expected(g, "'all'");
		} else if (is_kw(g, "group")) {
			return fail(g, STRATA_PARSE, at, "group() comes first in its level%s", "");
		} else if (is_kw(g, "filter") || is_kw(g, "keep")) {
			if (filter_clause(g, s))
				return g->err->code;
		} else if (is_kw(g, "max") && s->max < 0) {
			if (max_clause(g, &s->max, "max()"))
				return g->err->code;
		} else if (is_kw(g, "precision") && s->precision < 0) {
			if (max_clause(g, &s->precision, "precision()"))
				return g->err->code;
		} else if (is_kw(g, "order") && !s->norder) {
			if (order_list(g, s))
				return g->err->code;
		} else if (is_kw(g, "each") && s->key) {
			if (each_clause(g, s, &kcap, depth))
				return g->err->code;
			each = 1;
		} else if (is_kw(g, "each") && !s->summary) {
			if (hits_clause(g, s))
				return g->err->code;
		} else if (is_kw(g, "output")) {
			if (s->key ? agg_list(g, &s->lout, &s->nlout) : agg_list(g, &s->out, &s->nout))
				return g->err->code;
		} else if (is_kw(g, "all") && s->key) {
			return refuse(g, at, "'all' in a grouping");
		} else if (is_kw(g, "all")) {
			if (kid_level(g, s, &kcap, depth, 0))
				return g->err->code;
		} else if (refused_clause(g)) {
			return g->err->code;
		} else {
			return expected(g, "group(), filter(), max(), precision(), order(), each(), all() "
			                "or output()");
		}
		any = 1;
	}
	s->sub = s->nkids ? s->kids : NULL;
	if (s->key && !each && !s->nlout)
		return fail(g, STRATA_PARSE, g->start, "group() needs each(...)%s", "");
	if (!s->key && (s->norder || s->precision >= 0))
		return fail(g, STRATA_PARSE, all_at, "order() and precision() need a group()%s", "");
	if (!s->key && !s->nout && !s->nkids && !s->summary)
		return fail(g, STRATA_PARSE, all_at, "all() needs group(), output(), all() or "
		            "each()%s", "");
	return 0;
}

/* {continuations: ['...', ...]}: at the '{'. */
static int annotation(struct gp *g, char **conts)
{
	if (next(g))
		return g->err->code;
	size_t n = 0, cap = 256;
	char *buf = base_arena_alloc(g->a, cap, 1);
	if (!buf)
		return base_nomem(g->err, "grouping");
	buf[0] = 0;
	while (!is_p(g, '}')) {
		if (g->tok == T_STR ? strcmp(g->str, "continuations") : !is_kw(g, "continuations")) {
			if (g->tok == T_IDENT || g->tok == T_STR)
				return refuse(g, g->start, "this grouping annotation (only continuations)");
			return expected(g, "continuations");
		}
		if (next(g) || expect_p(g, ':') || expect_p(g, '['))
			return g->err->code;
		while (!is_p(g, ']')) {
			if (g->tok != T_STR)
				return expected(g, "a continuation in quotes");
			size_t k = strlen(g->str);
			if (n + k + 2 > cap) {
				size_t nc = (n + k + 2) * 2;
				char *nb = base_arena_alloc(g->a, nc, 1);
				if (!nb)
					return base_nomem(g->err, "grouping");
				memcpy(nb, buf, n + 1);
				buf = nb;
				cap = nc;
			}
			if (n)
				buf[n++] = ' ';
			memcpy(buf + n, g->str, k + 1);
			n += k;
			if (next(g) || (!is_p(g, ']') && expect_p(g, ',')))
				return g->err->code;
		}
		if (next(g) || (!is_p(g, '}') && expect_p(g, ',')))
			return g->err->code;
	}
	*conts = buf;
	return next(g);
}

int grp_tags(const struct yql_grouping *s)
{
	int t = s->tag > s->hits_tag ? s->tag + 1 : s->hits_tag + 1;
	for (int k = 0; k < s->nkids; k++) {
		int u = grp_tags(&s->kids[k]);
		t = u > t ? u : t;
	}
	return t;
}

int eng_grouping_parse(const char *name, const char *text, size_t at, struct yql_query *q,
                       size_t *end, struct strata_error *err)
{
	struct gp g = { name, text, text + at, &q->arena, err, 0, text + at, 0, 0, 0, NULL, 0, 0,
	                NULL, 0 };
	int cap = q->ngroupings; /* the groupings so far were allocated to the size they have */
	for (int k = 0; k < q->ngroupings; k++) /* lists are numbered across the request */
		g.tags = grp_tags(&q->grouping[k]) > g.tags ? grp_tags(&q->grouping[k]) : g.tags;
	if (next(&g))
		return err->code;
	/* all(...) [| [{...}] all(...)] ...: each a grouping request of its own */
	int request = q->ngroupings ? q->grouping[q->ngroupings - 1].request + 1 : 0;
	for (int first = 1;; first = 0, request++) {
		char *conts = NULL;
		if (!first && !is_p(&g, '|'))
			break;
		if ((!first && next(&g)) || (is_p(&g, '{') && annotation(&g, &conts)))
			return err->code;
		if (!is_kw(&g, "all"))
			return is_kw(&g, "each") ? refuse(&g, g.start, "each() at the top of a grouping")
			                         : expected(&g, "'all'");
		const char *all_at = g.start;
		if (room(&g, (void **)&q->grouping, &cap, q->ngroupings, sizeof *q->grouping))
			return err->code;
		struct yql_grouping *s = &q->grouping[q->ngroupings];
		init_level(s);
		if (next(&g) || expect_p(&g, '(') || clauses(&g, s, all_at, 0) || next(&g))
			return err->code;
		s->continuations = conts;
		s->request = request;
		q->ngroupings++;
		if (!s->key && !s->filter && s->max < 0 && !s->nout && !s->summary) {
			/* all(all(A) all(B) ...): the groupings A, B, ... side by side */
			struct yql_grouping top = *s;
			q->ngroupings--;
			for (int k = 0; k < top.nkids; k++) {
				if (room(&g, (void **)&q->grouping, &cap, q->ngroupings, sizeof *q->grouping))
					return err->code;
				q->grouping[q->ngroupings] = top.kids[k];
				q->grouping[q->ngroupings].request = request;
				q->grouping[q->ngroupings++].continuations = conts;
			}
		}
	}
	*end = (size_t)(g.start - text);
	return 0;
}

int eng_grouping_select(struct yql_query *q, const char *text, struct strata_error *err)
{
	size_t end = 0;
	int rc = eng_grouping_parse("select", text, 0, q, &end, err);
	if (rc)
		return rc;
	const char *p = text + end;
	while (isspace((unsigned char)*p))
		p++;
	if (*p) {
		int col = 1, line = 1;
		for (const char *c = text; c < p; c++)
			if (*c == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		return base_err(err, STRATA_PARSE, "select:%d:%d: expected the end of the grouping, "
		                "found '%.20s'", line, col, p);
	}
	return 0;
}
