/*
 * grouping_expr.c: Vespa's grouping language, parsed into struct
 * yql_grouping, and its expressions, evaluated per hit.
 *
 * yql.c hands over the text after YQL's '|'; query.c the request's "select"
 * parameter, which holds the same language.  A request is
 * [{continuations: ['...']}] all(OPS) or all(all(OPS) all(OPS) ...); a
 * level with group(EXP) becomes one struct yql_grouping: its each(...)
 * gives the groups' outputs, a nested grouping (sub) or the hits shown in
 * each group (each(output(summary()))), with max() of those hits.  Each
 * group list and hit list gets a tag, numbered in the order they are
 * written, that continuations name.  Expressions compile to a tree in the
 * query's arena; grp_eval computes one for one hit, numbers as doubles
 * (integral when every input was), strings in a caller's arena.  What the
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

enum {
	GX_ATTR = 1, GX_REL, GX_NUM, GX_STR, GX_ADD, GX_SUB, GX_MUL, GX_DIV, GX_MOD, GX_NEG,
	GX_MIN, GX_MAX, GX_AND, GX_OR, GX_XOR, GX_MATH1, GX_MATH2, GX_TIME, GX_STRCAT, GX_STRLEN,
	GX_TOSTRING, GX_TOLONG, GX_TODOUBLE, GX_FIXEDWIDTH,
};

struct grp_expr {
	int op;
	int fn;          /* GX_MATH1, GX_MATH2, GX_TIME: which function */
	int nargs;
	struct grp_expr **args;
	char *field;     /* GX_ATTR */
	struct grp_val v; /* GX_NUM, GX_STR */
	int col;
};

static const char *const math1[] = { "exp", "log", "log1p", "log10", "sqrt", "cbrt", "sin",
	                             "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
	                             "asinh", "acosh", "atanh", "floor", "ceil" };
static double (*const math1_fn[])(double) = { exp, log, log1p, log10, sqrt, cbrt, sin, cos, tan,
	                                      asin, acos, atan, sinh, cosh, tanh, asinh, acosh, atanh,
	                                      floor, ceil };
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
	{ "fixedwidth", GX_FIXEDWIDTH, 2 },
};
/* Parts of the language that Strata refuses, by the name that starts them. */
static const char *const refused[] = {
	"cat", "md5", "xorbit", "toraw", "uca", "zcurve.x", "zcurve.y", "docidnsspecific",
	"geo_distance", "interpolatedlookup", "predefined", "reverse", "sort", "size", "attribute",
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
	for (size_t i = 0; call_follows(g) && i < sizeof refused / sizeof *refused; i++)
		if (is_kw(g, refused[i])) {
			char what[80];
			snprintf(what, sizeof what, "%s() in a grouping expression", refused[i]);
			return refuse(g, at, what);
		}
	if (!call_follows(g)) {
		if (is_kw(g, "inf") || is_kw(g, "true") || is_kw(g, "false"))
			return refuse(g, at, "this constant in a grouping expression");
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
		[GX_TOLONG] = "tolong", [GX_TODOUBLE] = "todouble", [GX_REL] = "relevance",
		[GX_FIXEDWIDTH] = "fixedwidth" };
#define PUT(...) (*at += (size_t)snprintf(buf + (*at < n ? *at : n), *at < n ? n - *at : 0, __VA_ARGS__))
	char num[40];
	switch (e->op) {
	case GX_ATTR: PUT("%s", e->field); return;
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

/* ---- evaluation ------------------------------------------------------------------ */

static int as_string(struct grp_val *v, struct base_arena *a)
{
	if (v->kind == 2)
		return 0;
	char buf[64];
	if (v->integral)
		snprintf(buf, sizeof buf, "%lld", (long long)v->num);
	else
		eng_real_str(v->num, buf, sizeof buf);
	v->s = base_arena_strdup(a, buf);
	v->n = strlen(buf);
	v->kind = 2;
	return v->s ? 0 : -1;
}

/* v as a number: a string by its leading number (0 when none). */
static void as_number(struct grp_val *v)
{
	if (v->kind == 2) {
		char buf[64];
		size_t n = v->n < sizeof buf - 1 ? v->n : sizeof buf - 1;
		memcpy(buf, v->s, n);
		buf[n] = 0;
		char *end;
		v->num = strtod(buf, &end);
		v->integral = v->num == floor(v->num) && !strpbrk(buf, ".eE");
		v->kind = 1;
	}
}

static double arith(int op, double x, double y, int integral)
{
	switch (op) {
	case GX_ADD: return x + y;
	case GX_SUB: return x - y;
	case GX_MUL: return x * y;
	case GX_DIV: return integral ? (y ? trunc(x / y) : 0) : x / y;
	case GX_MOD: return integral ? (y ? fmod(x, y) : 0) : fmod(x, y);
	case GX_MIN: return y < x ? y : x;
	case GX_MAX: return y > x ? y : x;
	case GX_AND: return (double)((long long)x & (long long)y);
	case GX_OR: return (double)((long long)x | (long long)y);
	case GX_XOR: return (double)((long long)x ^ (long long)y);
	}
	return NAN;
}

static void time_value(int fn, double secs, struct grp_val *v, struct base_arena *a)
{
	time_t t = (time_t)floor(secs);
	struct tm tm;
	memset(v, 0, sizeof *v);
	if (!gmtime_r(&t, &tm))
		return;
	v->kind = 1;
	v->integral = 1;
	switch (fn) {
	case 0: v->num = tm.tm_year + 1900; break;
	case 1: v->num = tm.tm_mon + 1; break;
	case 2: v->num = tm.tm_mday; break;
	case 3: v->num = (tm.tm_wday + 6) % 7; break; /* Monday is 0 */
	case 4: v->num = tm.tm_yday; break;
	case 5: v->num = tm.tm_hour; break;
	case 6: v->num = tm.tm_min; break;
	case 7: v->num = tm.tm_sec; break;
	default: {
		char buf[32];
		snprintf(buf, sizeof buf, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1,
		         tm.tm_mday);
		v->s = base_arena_strdup(a, buf);
		v->n = strlen(buf);
		v->kind = v->s ? 2 : 0;
	}
	}
}

int grp_eval(const struct grp_expr *e, const struct eng_hits *h, size_t i, struct base_arena *a,
             struct grp_val *v)
{
	memset(v, 0, sizeof *v);
	struct grp_val x, y;
	switch (e->op) {
	case GX_ATTR: {
		struct eng_hitval hv;
		h->value(h->ud, i, e->field, &hv);
		v->kind = hv.kind;
		v->num = hv.num;
		v->integral = hv.integral;
		v->s = hv.s;
		v->n = hv.n;
		return 0;
	}
	case GX_REL:
		v->kind = 1;
		v->num = h->relevance(h->ud, i);
		return 0;
	case GX_NUM:
	case GX_STR:
		*v = e->v;
		return 0;
	case GX_NEG:
		if (grp_eval(e->args[0], h, i, a, v))
			return -1;
		as_number(v);
		v->num = v->kind ? -v->num : 0;
		return 0;
	case GX_MATH1:
	case GX_MATH2:
	case GX_TIME:
	case GX_TOLONG:
	case GX_TODOUBLE:
	case GX_STRLEN:
	case GX_TOSTRING:
	case GX_FIXEDWIDTH:
		if (grp_eval(e->args[0], h, i, a, &x))
			return -1;
		if (!x.kind)
			return 0;
		if (e->op == GX_TOSTRING) {
			*v = x;
			return as_string(v, a);
		}
		if (e->op == GX_STRLEN) {
			if (as_string(&x, a))
				return -1;
			v->kind = 1;
			v->integral = 1;
			v->num = (double)x.n;
			return 0;
		}
		as_number(&x);
		if (e->op == GX_TIME) {
			time_value(e->fn, x.num, v, a);
			return v->kind || e->fn != 8 ? 0 : -1;
		}
		v->kind = 1;
		if (e->op == GX_MATH1) {
			v->num = math1_fn[e->fn](x.num);
		} else if (e->op == GX_MATH2) {
			if (grp_eval(e->args[1], h, i, a, &y))
				return -1;
			as_number(&y);
			v->num = e->fn ? pow(x.num, y.num) : hypot(x.num, y.num);
		} else if (e->op == GX_TOLONG) {
			v->num = trunc(x.num);
			v->integral = 1;
		} else if (e->op == GX_TODOUBLE) {
			v->num = x.num;
		} else { /* fixedwidth: [from, from + width) */
			double w = e->args[1]->v.num;
			v->integral = x.integral && e->args[1]->v.integral;
			v->num = floor(x.num / w) * w;
			v->to = v->num + w;
			v->kind = 3;
		}
		return 0;
	case GX_STRCAT: {
		size_t n = 0;
		struct grp_val parts[16];
		for (int k = 0; k < e->nargs; k++) {
			if (grp_eval(e->args[k], h, i, a, &parts[k]) || as_string(&parts[k], a))
				return -1;
			n += parts[k].n;
		}
		char *s = base_arena_alloc(a, n + 1, 1);
		if (!s)
			return -1;
		n = 0;
		for (int k = 0; k < e->nargs; k++) {
			memcpy(s + n, parts[k].s, parts[k].n);
			n += parts[k].n;
		}
		s[n] = 0;
		v->kind = 2;
		v->s = s;
		v->n = n;
		return 0;
	}
	default: /* add, sub, mul, div, mod, min, max, and, or, xor over two or more */
		if (grp_eval(e->args[0], h, i, a, v))
			return -1;
		if (!v->kind)
			return 0;
		as_number(v);
		if (e->op >= GX_AND)
			v->integral = 1;
		for (int k = 1; k < e->nargs; k++) {
			if (grp_eval(e->args[k], h, i, a, &y))
				return -1;
			if (!y.kind) {
				v->kind = 0;
				return 0;
			}
			as_number(&y);
			v->integral = v->integral && (y.integral || e->op >= GX_AND);
			v->num = arith(e->op, v->num, y.num, v->integral);
		}
		return 0;
	}
}

static int each_attr(const struct grp_expr *e, int (*fn)(void *, const char *, int, const char *),
                     void *ud, const char *what)
{
	if (!e)
		return 0;
	if (e->op == GX_ATTR)
		return fn(ud, e->field, e->col, what);
	for (int k = 0; k < e->nargs; k++) {
		int rc = each_attr(e->args[k], fn, ud, what);
		if (rc)
			return rc;
	}
	return 0;
}

int eng_grouping_fields(const struct yql_query *q,
                        int (*fn)(void *ud, const char *field, int col, const char *what),
                        void *ud)
{
	int rc = 0;
	for (int k = 0; !rc && k < q->ngroupings; k++)
		for (const struct yql_grouping *g = &q->grouping[k]; !rc && g; g = g->sub) {
			rc = each_attr(g->key, fn, ud, "group()");
			for (int i = 0; !rc && i < g->nout + g->norder; i++) {
				const struct yql_agg_expr *e =
					i < g->nout ? &g->out[i] : &g->order[i - g->nout];
				rc = each_attr(e->arg, fn, ud, e->label);
			}
		}
	return rc;
}

/* ---- the grouping language ----------------------------------------------------------- */

static int room(struct gp *g, void **v, int *cap, int n, size_t esz)
{
	if (n < *cap)
		return 0;
	int nc = *cap ? *cap * 2 : 4;
	void *nv = base_arena_alloc(g->a, (size_t)nc * esz, 8);
	if (!nv)
		return base_nomem(g->err, "grouping");
	if (n)
		memcpy(nv, *v, (size_t)n * esz);
	*v = nv;
	*cap = nc;
	return 0;
}

/* One aggregator: count(), sum(EXP), avg, min, max, stddev, [as(label)]; in
 * order() with an optional sign. */
static int aggregator(struct gp *g, struct yql_agg_expr *e, int signed_)
{
	static const char *const names[] = { NULL, "count", "sum", "avg", "min", "max", "stddev" };
	const char *at = g->start;
	int line;
	memset(e, 0, sizeof *e);
	e->col = col_of(g, at, &line);
	if (signed_ && (is_p(g, '-') || is_p(g, '+'))) {
		e->desc = is_p(g, '-');
		if (next(g))
			return g->err->code;
	}
	for (int i = 1; i <= YQL_AGG_STDDEV; i++)
		if (is_kw(g, names[i]))
			e->agg = i;
	if (!e->agg) {
		if (is_kw(g, "xor") || is_kw(g, "quantiles") || is_kw(g, "summary")) {
			char what[64];
			snprintf(what, sizeof what, "%s%.*s() here", signed_ ? "order by " : "",
			         (int)g->len, g->start);
			return refuse(g, at, what);
		}
		if (signed_ && g->tok == T_IDENT)
			return refuse(g, at, "order() by an expression other than an aggregator");
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
	if (!(e->label = expr_text(g, names[e->agg], e->arg)))
		return STRATA_NOMEM;
	if (is_kw(g, "as")) {
		if (next(g) || expect_p(g, '('))
			return g->err->code;
		if (g->tok != T_IDENT)
			return expected(g, "a label");
		if (!(e->label = tokdup(g)) || next(g) || expect_p(g, ')'))
			return g->err->code;
	}
	return 0;
}

static int agg_list(struct gp *g, struct yql_agg_expr **out, int *n, int signed_)
{
	int cap = 0;
	if (next(g) || expect_p(g, '('))
		return g->err->code;
	for (;;) {
		if (room(g, (void **)out, &cap, *n, sizeof **out) || aggregator(g, &(*out)[*n], signed_))
			return g->err->code;
		(*n)++;
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

static struct yql_grouping *new_grouping(struct gp *g)
{
	struct yql_grouping *s = base_arena_alloc(g->a, sizeof *s, 8);
	if (!s) {
		base_nomem(g->err, "grouping");
		return NULL;
	}
	memset(s, 0, sizeof *s);
	s->max = s->precision = s->hits_max = -1;
	s->tag = s->hits_tag = -1;
	return s;
}

static int clauses(struct gp *g, struct yql_grouping *s, const char *all_at, int depth);

/* A clause Vespa has and Strata does not, at the current token? */
static int refused_clause(struct gp *g)
{
	static const char *const kws[] = { "where", "alias", "filter", "keep", "accuracy", "hint",
		                           "as" };
	for (size_t i = 0; i < sizeof kws / sizeof *kws; i++)
		if (is_kw(g, kws[i])) {
			char what[64];
			snprintf(what, sizeof what, "'%s' in a grouping", kws[i]);
			return refuse(g, g->start, what);
		}
	return 0;
}

/* each(output(summary([CLASS]))) of the hits of s's groups: at 'each'. */
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
	s->hits_tag = g->tags++;
	return expect_p(g, ')');
}

/* each(...) of s: the outputs of each group, the hits shown in it (max(N),
 * each(output(summary()))) or a grouping of its hits.  At 'each'. */
static int each_clause(struct gp *g, struct yql_grouping *s, int depth)
{
	const char *each_at = g->start;
	if (next(g) || expect_p(g, '('))
		return g->err->code;
	while (!is_p(g, ')')) {
		const char *at = g->start;
		if (is_kw(g, "output") && !s->nout) {
			if (agg_list(g, &s->out, &s->nout, 0))
				return g->err->code;
		} else if (is_kw(g, "max") && !s->sub && s->hits_max < 0) {
			if (max_clause(g, &s->hits_max, "max()"))
				return g->err->code;
		} else if (is_kw(g, "precision") && !s->sub) {
			long p;
			if (max_clause(g, &p, "precision()"))
				return g->err->code;
		} else if (is_kw(g, "each") && !s->sub && !s->summary) {
			if (hits_clause(g, s))
				return g->err->code;
		} else if ((is_kw(g, "all") || is_kw(g, "group")) && !s->sub && !s->summary) {
			if (depth + 1 >= MAX_DEPTH)
				return refuse(g, at, "grouping nested deeper than 8 levels");
			if (s->hits_max >= 0)
				return refuse(g, at, "max() of hits beside a grouping of them");
			if (!(s->sub = new_grouping(g)))
				return STRATA_NOMEM;
			int all = is_kw(g, "all");
			if (all && (next(g) || expect_p(g, '(')))
				return g->err->code;
			if (clauses(g, s->sub, at, depth + 1))
				return g->err->code;
			if (all && next(g))
				return g->err->code;
			if (!s->sub->key)
				return fail(g, STRATA_PARSE, at, "a grouping inside each() needs a group()%s",
				            "");
			if (!all)
				break; /* group(b) ... runs to the each()'s ')' */
		} else if (is_kw(g, "order") && !s->sub) {
			return refuse(g, at, "order() of hits (they come by relevance)");
		} else if (is_kw(g, "all") || is_kw(g, "group") || is_kw(g, "each")) {
			return refuse(g, at, "a second grouping inside each()");
		} else if (refused_clause(g)) {
			return g->err->code;
		} else {
			return expected(g, "output(), max(), each(), all() or group()");
		}
	}
	if (!s->nout && !s->sub && !s->summary)
		return fail(g, STRATA_PARSE, each_at, "each() needs output() or a grouping%s", "");
	if (s->hits_max >= 0 && !s->summary)
		return fail(g, STRATA_PARSE, each_at, "max() of hits needs each(output(summary()))%s",
		            "");
	return next(g);
}

/* The clauses of a level up to its ')', left unread. */
static int clauses(struct gp *g, struct yql_grouping *s, const char *all_at, int depth)
{
	int each = 0;
	while (!is_p(g, ')')) {
		const char *at = g->start;
		if (is_kw(g, "group") && !s->key && !each && !s->nout) {
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
		} else if (is_kw(g, "max") && s->max < 0) {
			if (max_clause(g, &s->max, "max()"))
				return g->err->code;
		} else if (is_kw(g, "precision") && s->precision < 0) {
			if (max_clause(g, &s->precision, "precision()"))
				return g->err->code;
		} else if (is_kw(g, "order") && !s->norder) {
			if (agg_list(g, &s->order, &s->norder, 1))
				return g->err->code;
		} else if (is_kw(g, "each") && !each) {
			if (!s->key)
				return fail(g, STRATA_PARSE, at, "each() needs a group() before it%s", "");
			if (each_clause(g, s, depth))
				return g->err->code;
			each = 1;
		} else if (is_kw(g, "output") && !s->nout && !s->key) {
			if (agg_list(g, &s->out, &s->nout, 0))
				return g->err->code;
		} else if (is_kw(g, "output") && s->key) {
			return refuse(g, at, "output() beside group() (put it in each())");
		} else if (is_kw(g, "all")) {
			return refuse(g, at, "'all' in a grouping");
		} else if (refused_clause(g)) {
			return g->err->code;
		} else {
			return expected(g, "group(), max(), precision(), order(), each() or output()");
		}
	}
	if (s->key && !each)
		return fail(g, STRATA_PARSE, g->start, "group() needs each(...)%s", "");
	if (!s->key && (each || s->norder || s->max >= 0 || s->precision >= 0))
		return fail(g, STRATA_PARSE, all_at, "each(), order(), max() and precision() need a "
		            "group()%s", "");
	if (!s->key && !s->nout)
		return fail(g, STRATA_PARSE, all_at, "all() needs group() or output()%s", "");
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

/* Is the text after the current token "( all"? */
static int parallel_alls(const struct gp *g)
{
	const char *p = g->p;
	while (isspace((unsigned char)*p))
		p++;
	if (*p++ != '(')
		return 0;
	while (isspace((unsigned char)*p))
		p++;
	return strncasecmp(p, "all", 3) == 0 && !isalnum((unsigned char)p[3]) && p[3] != '_';
}

int eng_grouping_parse(const char *name, const char *text, size_t at, struct yql_query *q,
                       size_t *end, struct strata_error *err)
{
	struct gp g = { name, text, text + at, &q->arena, err, 0, text + at, 0, 0, 0, NULL, 0, 0 };
	char *conts = NULL;
	int rc = next(&g);
	if (!rc && is_p(&g, '{'))
		rc = annotation(&g, &conts);
	if (rc)
		return rc;
	if (!is_kw(&g, "all"))
		return is_kw(&g, "each") ? refuse(&g, g.start, "each() at the top of a grouping")
		                         : expected(&g, "'all'");
	int several = parallel_alls(&g), cap = q->ngroupings, first = q->ngroupings;
	if (several && (next(&g) || expect_p(&g, '(')))
		return err->code;
	do {
		if (several && !is_kw(&g, "all"))
			return expected(&g, "'all'");
		const char *all_at = g.start;
		/* the groupings so far were allocated to the size they have */
		if (room(&g, (void **)&q->grouping, &cap, q->ngroupings, sizeof *q->grouping))
			return err->code;
		struct yql_grouping *s = &q->grouping[q->ngroupings];
		memset(s, 0, sizeof *s);
		s->max = s->precision = s->hits_max = -1;
		s->tag = s->hits_tag = -1;
		if (next(&g) || expect_p(&g, '(') || clauses(&g, s, all_at, 0) || next(&g))
			return err->code;
		q->ngroupings++;
	} while (several && !is_p(&g, ')'));
	if (several && next(&g))
		return err->code;
	for (int k = first; k < q->ngroupings; k++)
		q->grouping[k].continuations = conts;
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
