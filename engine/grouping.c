/*
 * grouping.c: YQL's order by and grouping over the matches of a query.
 *
 * Both run after ranking, over every match (not only the page shown), and
 * read field values through struct eng_hits, which query.c implements on
 * the store.  order by sorts the hits by field values instead of by
 * relevance.  Grouping (parsed by grouping_expr.c) gathers the hits by the
 * value of an expression and aggregates each group, in the shape Vespa
 * gives its grouping result: a "group:root:0" hit holding a
 * "grouplist:<label>" that holds one "group:<type>:<value>" per group with
 * the aggregates in "fields".  Without order() the groups come by their
 * best hit's relevance (Vespa's default order, -max(relevance())); with
 * order() by the aggregates it names, and the groups' relevances fall from
 * 1 in steps of 1/n as Vespa gives them.  Equal groups come by value.  An
 * attribute without a value reads as Vespa's undefined value; a key that
 * has none (time.* of no date) is in no group.  A grouping inside each()
 * runs again over each group's hits, its grouplist in the group's
 * "children", beside the group's "hitlist:hits" when summary() asks for
 * them; all(output(...)) fills the root's "fields".  Lists with max() page
 * by continuations: tokens "S" then "T<tag>P<path>O<offset>" per list, the
 * path a hash of the group ids above the list, so a nested list pages
 * within its own parent group only.  Computed strings live in one arena per
 * request, freed at the end.  Levels form a tree (grouping.h): a level
 * without group() works on the hits (max(N): the best N), one with
 * group() adds a grouplist; what each group holds runs in the order
 * written.  filter() drops hits before a level; the grouping expressions,
 * predefined() buckets and filters are evaluated here (grp_eval), their
 * regexes compiled once per run and freed with it.
 */
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "grouping.h"

/* Values: none last, numbers before strings; numbers by value, strings by
 * their bytes. */
static int val_cmp(const struct eng_hitval *a, const struct eng_hitval *b)
{
	if (a->kind != b->kind)
		return !a->kind ? 1 : !b->kind ? -1 : a->kind - b->kind;
	if (a->kind == 1)
		return a->num < b->num ? -1 : a->num > b->num;
	if (a->kind == 2) {
		size_t n = a->n < b->n ? a->n : b->n;
		int c = memcmp(a->s, b->s, n);
		return c ? c : (a->n > b->n) - (a->n < b->n);
	}
	return 0;
}

/* A stable merge sort of perm[0..n) by cmp(ud, i, j), with tmp of n. */
static void msort(size_t *perm, size_t *tmp, size_t n, int (*cmp)(void *, size_t, size_t),
                  void *ud)
{
	if (n < 2)
		return;
	size_t h = n / 2;
	msort(perm, tmp, h, cmp, ud);
	msort(perm + h, tmp, n - h, cmp, ud);
	size_t i = 0, j = h, k = 0;
	while (i < h && j < n)
		tmp[k++] = cmp(ud, perm[j], perm[i]) < 0 ? perm[j++] : perm[i++];
	while (i < h)
		tmp[k++] = perm[i++];
	while (j < n)
		tmp[k++] = perm[j++];
	memcpy(perm, tmp, n * sizeof *perm);
}

/* Sort perm (0..n) by cmp; 0 or STRATA_NOMEM. */
static int sort_perm(size_t *perm, size_t n, int (*cmp)(void *, size_t, size_t), void *ud,
                     struct strata_error *err, const char *what)
{
	for (size_t i = 0; i < n; i++)
		perm[i] = i;
	size_t *tmp = base_alloc((n ? n : 1) * sizeof *tmp);
	if (!tmp)
		return base_nomem(err, "%s", what);
	msort(perm, tmp, n, cmp, ud);
	base_free(tmp, (n ? n : 1) * sizeof *tmp);
	return 0;
}

/* ---- grouping expressions, evaluated per hit ------------------------------------- */

/* the functions of math.NAME, in the order grouping_expr.c names them */
static double (*const math1_fn[])(double) = { exp, log, log1p, log10, sqrt, cbrt, sin, cos, tan,
	                                      asin, acos, atan, sinh, cosh, tanh, asinh, acosh, atanh,
	                                      floor, ceil };

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

/* time.FN(secs), UTC, into *v (time.date's string in a).  Returns 0, or -1
 * when a runs out. */
static int time_value(int fn, double secs, struct grp_val *v, struct base_arena *a)
{
	struct tm tm;
	memset(v, 0, sizeof *v);
	/* no value where the seconds make no date (NaN, an undefined long) */
	if (!(secs > -0x1p55 && secs < 0x1p55))
		return 0;
	time_t t = (time_t)floor(secs);
	if (!gmtime_r(&t, &tm))
		return 0;
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
		v->kind = 2;
		return v->s ? 0 : -1;
	}
	}
	return 0;
}

/* What an expression is evaluated over: one hit, or (order()) one group's
 * aggregates. */
struct ectx {
	const struct eng_hits *h;
	size_t i;
	struct base_arena *a;
	void (*agg)(void *ud, int k, struct grp_val *v);
	void *ud;
};

/* The bucket of predefined() e holding x, into *v (kind 0 in none). */
static int bucket_of(const struct grp_expr *e, struct grp_val *x, struct base_arena *a,
                     struct grp_val *v)
{
	struct grp_val key = *x;
	if (e->btype == BK_STRING) {
		if (as_string(&key, a))
			return -1;
	} else {
		as_number(&key);
		if (e->btype == BK_LONG)
			key.num = round(key.num); /* a double meets long buckets rounded */
	}
	for (int k = 0; k < e->fn; k++) {
		const struct grp_bucket *b = &e->buckets[k];
		if (grp_bucket_cmp(&key, &b->lo, e->btype) >= 0 && grp_bucket_cmp(&key, &b->hi, e->btype) < 0) {
			memset(v, 0, sizeof *v);
			v->kind = e->btype == BK_STRING ? 4 : 3;
			v->integral = e->btype == BK_LONG;
			v->num = b->lo.inf_lo ? -INFINITY : b->lo.num;
			v->to = b->hi.inf_hi ? INFINITY : b->hi.num;
			v->s = b->lo.s;
			v->n = b->lo.n;
			v->s2 = b->hi.s;
			v->n2 = b->hi.n;
			v->inf_lo = b->lo.inf_lo;
			v->inf_hi = b->hi.inf_hi;
			return 0;
		}
	}
	memset(v, 0, sizeof *v);
	return 0;
}

/* A single-value attribute without a value reads as Vespa's attributes
 * hold it: a string as "", an integer as its type's undefined value (the
 * smallest), a float as NaN, a bool as false; so such hits group together
 * rather than drop out. */
static void undefined_value(struct eng_hitval *v)
{
	switch (v->store_type) {
	case STORE_T_STRING:
		v->kind = 2;
		v->s = "";
		v->n = 0;
		break;
	case STORE_T_INT:
	case STORE_T_LONG:
		v->kind = 1;
		v->integral = 1;
		v->num = v->byte ? -128.0 : v->store_type == STORE_T_INT ? (double)INT32_MIN : -0x1p63;
		break;
	case STORE_T_BOOL:
		v->kind = 1;
		v->integral = 1;
		v->num = 0;
		break;
	case STORE_T_FLOAT:
	case STORE_T_DOUBLE:
		v->kind = 1;
		v->num = NAN;
		break;
	}
}

/* field{"key"}: the value at key of a map (its keys and values come in
 * the same order); none when the map lacks the key.  0, or -1 when the
 * arena runs out. */
static int map_get(const struct grp_expr *e, const struct ectx *c, struct grp_val *v)
{
	char path[300];
	struct eng_hitval *keys = NULL, *vals = NULL;
	size_t nk = 0, nv = 0;
	memset(v, 0, sizeof *v);
	snprintf(path, sizeof path, "%s.key", e->field);
	int rc = c->h->values ? c->h->values(c->h->ud, c->i, path, c->a, &keys, &nk) : 0;
	snprintf(path, sizeof path, "%s.value", e->field);
	if (rc > 0)
		rc = c->h->values(c->h->ud, c->i, path, c->a, &vals, &nv);
	if (rc < 0)
		return -1;
	for (size_t k = 0; rc > 0 && k < nk && k < nv; k++)
		if (keys[k].kind == 2 && keys[k].n == e->v.n && !memcmp(keys[k].s, e->v.s, e->v.n)) {
			v->kind = vals[k].kind;
			v->integral = vals[k].integral;
			v->num = vals[k].num;
			v->s = vals[k].s;
			v->n = vals[k].n;
			break;
		}
	return 0;
}

static int eval(const struct grp_expr *e, const struct ectx *c, struct grp_val *v)
{
	memset(v, 0, sizeof *v);
	struct grp_val x, y;
	switch (e->op) {
	case GX_ATTR: {
		struct eng_hitval hv;
		c->h->value(c->h->ud, c->i, e->field, &hv);
		if (!hv.kind)
			undefined_value(&hv);
		v->kind = hv.kind;
		v->num = hv.num;
		v->integral = hv.integral;
		v->s = hv.s;
		v->n = hv.n;
		return 0;
	}
	case GX_MAPGET:
		return map_get(e, c, v);
	case GX_REL:
		v->kind = 1;
		v->num = c->h->relevance(c->h->ud, c->i);
		return 0;
	case GX_NOW:
		v->kind = 1;
		v->integral = 1;
		v->num = c->h->now;
		return 0;
	case GX_NUM:
	case GX_STR:
		*v = e->v;
		return 0;
	case GX_AGG:
		c->agg(c->ud, e->fn, v);
		return 0;
	case GX_PREDEF:
		if (eval(e->args[0], c, &x))
			return -1;
		return x.kind ? bucket_of(e, &x, c->a, v) : 0;
	case GX_NEG:
		if (eval(e->args[0], c, v))
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
		if (eval(e->args[0], c, &x))
			return -1;
		if (!x.kind)
			return 0;
		if (e->op == GX_TOSTRING) {
			*v = x;
			return as_string(v, c->a);
		}
		if (e->op == GX_STRLEN) {
			if (as_string(&x, c->a))
				return -1;
			v->kind = 1;
			v->integral = 1;
			v->num = (double)x.n;
			return 0;
		}
		as_number(&x);
		if (e->op == GX_TIME) {
			return time_value(e->fn, x.num, v, c->a);
		}
		v->kind = 1;
		if (e->op == GX_MATH1) {
			v->num = math1_fn[e->fn](x.num);
		} else if (e->op == GX_MATH2) {
			if (eval(e->args[1], c, &y))
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
			if (eval(e->args[k], c, &parts[k]) || as_string(&parts[k], c->a))
				return -1;
			n += parts[k].n;
		}
		char *s = base_arena_alloc(c->a, n + 1, 1);
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
		if (eval(e->args[0], c, v))
			return -1;
		if (!v->kind)
			return 0;
		as_number(v);
		if (e->op >= GX_AND)
			v->integral = 1;
		for (int k = 1; k < e->nargs; k++) {
			if (eval(e->args[k], c, &y))
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

int grp_eval(const struct grp_expr *e, const struct eng_hits *h, size_t i, struct base_arena *a,
             struct grp_val *v)
{
	struct ectx c = { h, i, a, NULL, NULL };
	return eval(e, &c, v);
}

int grp_eval_aggs(const struct grp_expr *e, void (*agg)(void *ud, int k, struct grp_val *v),
                  void *ud, struct base_arena *a, struct grp_val *v)
{
	struct ectx c = { NULL, 0, a, agg, ud };
	return eval(e, &c, v);
}

/* ---- filters -------------------------------------------------------------------- */

struct grp_regexes {
	const struct grp_filter *f;
	regex_t re;
	struct grp_regexes *next;
};

static int regex_of(const struct grp_filter *f, struct grp_regexes **res, regex_t **out)
{
	for (struct grp_regexes *r = *res; r; r = r->next)
		if (r->f == f) {
			*out = &r->re;
			return 0;
		}
	struct grp_regexes *r = base_alloc(sizeof *r);
	if (!r)
		return -1;
	if (regcomp(&r->re, f->re, REG_EXTENDED | REG_NOSUB)) { /* it compiled when parsed */
		base_free(r, sizeof *r);
		return -1;
	}
	r->f = f;
	r->next = *res;
	*res = r;
	*out = &r->re;
	return 0;
}

void grp_regexes_free(struct grp_regexes *res)
{
	while (res) {
		struct grp_regexes *next = res->next;
		regfree(&res->re);
		base_free(res, sizeof *res);
		res = next;
	}
}

int grp_filter_eval(const struct grp_filter *f, const struct eng_hits *h, size_t i,
                    struct base_arena *a, struct grp_regexes **res, int *keep)
{
	if (f->op == FX_NOT || f->op == FX_AND || f->op == FX_OR) {
		if (grp_filter_eval(f->a, h, i, a, res, keep))
			return -1;
		if (f->op == FX_NOT) {
			*keep = !*keep;
			return 0;
		}
		if (*keep == (f->op == FX_OR))
			return 0;
		return grp_filter_eval(f->b, h, i, a, res, keep);
	}
	struct grp_val v;
	*keep = 0;
	if (grp_eval(f->e, h, i, a, &v))
		return -1;
	if (!v.kind)
		return 0; /* no value passes no test */
	if (f->op == FX_REGEX) { /* on the value's text, the whole of it */
		regex_t *re;
		if (as_string(&v, a) || regex_of(f, res, &re))
			return -1;
		regmatch_t m = { 0, (regoff_t)v.n };
		*keep = regexec(re, v.s ? v.s : "", 1, &m, REG_STARTEND) == 0;
	} else if (f->op == FX_RANGE) {
		as_number(&v);
		*keep = (f->lo_incl ? v.num >= f->lo : v.num > f->lo) &&
		        (f->hi_incl ? v.num <= f->hi : v.num < f->hi);
	} else { /* istrue: a bool attribute is 1 or 0 */
		*keep = v.kind == 2 ? v.n == 4 && !strncasecmp(v.s, "true", 4) : v.num != 0;
	}
	return 0;
}

/* ---- order by ------------------------------------------------------------------ */

struct order_ctx {
	const struct yql_query *q;
	const struct eng_hits *h;
	int (*tiebreak)(void *ud, size_t i, size_t j);
	struct eng_hitval *keys; /* n * norder */
	struct eng_hitval *folded; /* the string keys as their field's sorting function
	                              compares them (else as keys) */
	struct base_arena arena;   /* the folded strings */
};

static int order_cmp(void *ud, size_t i, size_t j)
{
	struct order_ctx *c = ud;
	int k = c->q->norder;
	for (int o = 0; o < k; o++) {
		const struct yql_order *ord = &c->q->order[o];
		size_t ai = i * (size_t)k + (size_t)o, bi = j * (size_t)k + (size_t)o;
		const struct eng_hitval *a = &c->keys[ai], *b = &c->keys[bi];
		int desc = ord->given ? ord->desc : a->kind ? a->sort_desc : b->sort_desc;
		if (!a->kind || !b->kind) {
			if (a->kind == b->kind)
				continue;
			/* Vespa's missing policies: by default first when ascending */
			int first = ord->missing ? ord->missing == 1 : !desc;
			return (!a->kind) == first ? -1 : 1;
		}
		int r = val_cmp(&c->folded[ai], &c->folded[bi]);
		if (!r && a->kind == 2 && a->sort_function && !a->sort_primary)
			r = val_cmp(a, b); /* equal folded: by the bytes */
		if (r)
			return desc ? -r : r;
	}
	return c->tiebreak(c->h->ud, i, j);
}

/* The string key v folded as its field's sorting function asks (lowercase:
 * lowercased; uca: also without accents) into *out, in c's arena. */
static int fold_key(struct order_ctx *c, struct base_tokenizer *tk, const struct eng_hitval *v,
                    struct eng_hitval *out, struct strata_error *err)
{
	*out = *v;
	if (v->kind != 2 || !v->sort_function)
		return 0;
	int flags = BASE_TOKEN_WHOLE | (v->sort_function == RANK_SORT_UCA ? BASE_TOKEN_NORMALIZE : 0);
	size_t off = 0, n = 0;
	const char *t = "";
	int pos;
	if (!base_token_next(tk, v->s, v->n, &off, flags, &t, &n, &pos))
		n = 0;
	char *s = base_arena_alloc(&c->arena, n + 1, 1);
	if (!s)
		return base_nomem(err, "order by");
	memcpy(s, t, n);
	out->s = s;
	out->n = n;
	return 0;
}

int eng_order_hits(const struct yql_query *q, const struct eng_hits *h,
                   int (*tiebreak)(void *ud, size_t i, size_t j), size_t *perm,
                   struct strata_error *err)
{
	size_t nk = h->n * (size_t)q->norder, sz = (nk ? nk : 1) * sizeof(struct eng_hitval);
	struct order_ctx c = { q, h, tiebreak, base_alloc(sz), base_alloc(sz), {0} };
	struct base_tokenizer *tk = NULL;
	base_arena_init(&c.arena, 1 << 12);
	int rc = !c.keys || !c.folded ? base_nomem(err, "order by") : base_tokenizer_new(&tk, err);
	for (size_t i = 0; !rc && i < h->n; i++)
		for (int o = 0; !rc && o < q->norder; o++) {
			size_t at = i * (size_t)q->norder + (size_t)o;
			const struct yql_order *ord = &q->order[o];
			struct eng_hitval *v = &c.keys[at];
			if (!ord->field) { /* [relevance]: descending unless said */
				memset(v, 0, sizeof *v);
				v->kind = 1;
				v->num = h->relevance(h->ud, i);
				v->sort_desc = 1;
			} else {
				h->value(h->ud, i, ord->field, v);
			}
			if (ord->function >= 0) { /* lowercase(f), uca(f), raw(f) */
				v->sort_function = ord->function;
				v->sort_primary = ord->primary;
			}
			rc = fold_key(&c, tk, v, &c.folded[at], err);
		}
	if (!rc)
		rc = sort_perm(perm, h->n, order_cmp, &c, err, "order by");
	base_tokenizer_free(tk);
	base_arena_free(&c.arena);
	base_free(c.keys, sz);
	base_free(c.folded, sz);
	return rc;
}

/* ---- grouping ------------------------------------------------------------------ */

/* One aggregate over a list of hits. */
struct acc {
	long count;   /* numbers seen */
	double sum, sumsq, min, max;
	int integral; /* every number seen was integral */
	long scount;  /* strings seen: min and max of them by their bytes */
	struct grp_val smin, smax;
};

static int gval_cmp(const struct grp_val *a, const struct grp_val *b);

static void acc_add(struct acc *a, const struct grp_val *v)
{
	if (v->kind == 2) {
		if (!a->scount++ || gval_cmp(v, &a->smin) < 0)
			a->smin = *v;
		if (a->scount == 1 || gval_cmp(v, &a->smax) > 0)
			a->smax = *v;
		return;
	}
	if (v->kind != 1)
		return;
	if (!a->count) {
		a->min = a->max = v->num;
		a->integral = v->integral;
	}
	a->count++;
	a->sum += v->num;
	a->sumsq += v->num * v->num;
	a->min = v->num < a->min ? v->num : a->min;
	a->max = v->num > a->max ? v->num : a->max;
	a->integral &= v->integral;
}

/* The value of aggregate e over a; NAN when it has none (min, max, avg,
 * stddev of no value). */
static double acc_value(const struct acc *a, const struct yql_agg_expr *e, long hits)
{
	double mean = a->count ? a->sum / (double)a->count : NAN, var;
	switch (e->agg) {
	case YQL_AGG_COUNT: return (double)hits;
	case YQL_AGG_SUM: return a->sum;
	case YQL_AGG_AVG: return mean;
	case YQL_AGG_MIN: return a->count ? a->min : NAN;
	case YQL_AGG_MAX: return a->count ? a->max : NAN;
	case YQL_AGG_STDDEV: /* the population's */
		var = a->count ? a->sumsq / (double)a->count - mean * mean : NAN;
		return var > 0 ? sqrt(var) : var == var ? 0 : NAN;
	}
	return NAN;
}

/* Aggregate e over a as a value: a number (integral as Vespa types it),
 * min() or max() of strings when there were only strings, or none. */
static void acc_gval(const struct acc *a, const struct yql_agg_expr *e, long hits,
                     struct grp_val *v)
{
	memset(v, 0, sizeof *v);
	if ((e->agg == YQL_AGG_MIN || e->agg == YQL_AGG_MAX) && !a->count && a->scount) {
		*v = e->agg == YQL_AGG_MIN ? a->smin : a->smax;
		return;
	}
	v->num = acc_value(a, e, hits);
	v->kind = !isnan(v->num) || a->count; /* NaN of NaN values shows, of none not */
	v->integral = e->agg == YQL_AGG_COUNT ||
	              (e->agg != YQL_AGG_AVG && e->agg != YQL_AGG_STDDEV && a->integral && a->count);
}

/* Values: none last, numbers (and number buckets, by their start; NaN
 * first) before strings (and string buckets, by theirs, -inf first). */
static int gval_cmp(const struct grp_val *a, const struct grp_val *b)
{
	int ka = a->kind == 3 ? 1 : a->kind == 4 ? 2 : a->kind;
	int kb = b->kind == 3 ? 1 : b->kind == 4 ? 2 : b->kind;
	if (ka != kb)
		return !ka ? 1 : !kb ? -1 : ka - kb;
	if (ka == 1 && (isnan(a->num) || isnan(b->num))) /* NaN (undefined) first */
		return isnan(b->num) - isnan(a->num);
	if (ka == 1)
		return a->num < b->num ? -1 : a->num > b->num;
	if (ka == 2) {
		if (a->kind == 4 && b->kind == 4 && (a->inf_lo || b->inf_lo))
			return b->inf_lo - a->inf_lo;
		size_t n = a->n < b->n ? a->n : b->n;
		int c = memcmp(a->s, b->s, n);
		return c ? c : (a->n > b->n) - (a->n < b->n);
	}
	return 0;
}

/* A continuation's offset into one list: the list's tag, the path of
 * group ids above it (hashed), where the page starts. */
struct cont {
	int tag;
	uint64_t path;
	long offset;
};

#define MAX_CONTS 64

/* One grouping request's run. */
struct run {
	const struct eng_hits *h;
	struct base_arena a; /* computed strings and the values of group keys */
	struct cont conts[MAX_CONTS];
	int nconts;
	struct grp_regexes *res; /* the filters' regexes */
	struct strata_error *err;
};

struct group {
	size_t first;      /* index into perm of its first hit */
	long hits;
	double relevance;  /* the best hit's */
	struct acc *accs;  /* nout, then noagg */
	struct grp_val *okeys; /* its order() keys, norder */
};

struct group_ctx {
	struct run *r;
	const struct yql_grouping *g;
	const size_t *idx;     /* the hits of the list (indexes into r->h) */
	struct grp_val *vals;  /* per hit: its key */
	size_t *perm;          /* hits by key */
	struct group *groups;
};

static int by_value(void *ud, size_t i, size_t j)
{
	struct group_ctx *c = ud;
	return gval_cmp(&c->vals[i], &c->vals[j]);
}

static int group_cmp(void *ud, size_t i, size_t j)
{
	struct group_ctx *c = ud;
	const struct group *a = &c->groups[i], *b = &c->groups[j];
	const struct yql_grouping *g = c->g;
	for (int o = 0; o < g->norder; o++) {
		const struct grp_val *x = &a->okeys[o], *y = &b->okeys[o];
		if (!x->kind || !y->kind) {
			if (x->kind != y->kind)
				return !x->kind ? 1 : -1; /* a group without the key comes last */
			continue;
		}
		int r = gval_cmp(x, y);
		if (r)
			return g->order[o].desc ? -r : r;
	}
	if (!g->norder && a->relevance != b->relevance)
		return a->relevance > b->relevance ? -1 : 1;
	return gval_cmp(&c->vals[c->perm[a->first]], &c->vals[c->perm[b->first]]);
}

static uint64_t path_hash(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (h ^ '/') * 1099511628211ull;
}

/* The page's start of list tag under path (0 when no continuation names it). */
static long cont_offset(const struct run *r, int tag, uint64_t path)
{
	for (int k = 0; k < r->nconts; k++)
		if (r->conts[k].tag == tag && r->conts[k].path == path)
			return r->conts[k].offset;
	return 0;
}

/* The token of the state in effect with list (tag, path) at offset, into
 * buf: "S" and "T<tag>P<path>O<offset>" per list. */
static void cont_token(const struct run *r, int tag, uint64_t path, long offset, char *buf,
                       size_t n)
{
	size_t at = (size_t)snprintf(buf, n, "S");
	int done = tag < 0;
	for (int k = 0; k <= r->nconts && at < n; k++) {
		struct cont c = { tag, path, offset };
		if (k < r->nconts) {
			c = r->conts[k];
			if (c.tag == tag && c.path == path) {
				c.offset = offset;
				done = 1;
			}
		} else if (done) {
			break;
		}
		if (c.offset || (c.tag == tag && c.path == path))
			at += (size_t)snprintf(buf + at, n - at, "T%dP%016llxO%ld", c.tag,
			                       (unsigned long long)c.path, c.offset);
	}
}

/* {"next", "prev"} of a list whose page starts at off, max long, of total. */
static int cont_json(const struct run *r, int tag, uint64_t path, long off, long max,
                     size_t total, json_t *list)
{
	if (max < 0 || (off == 0 && (size_t)(off + max) >= total))
		return 0;
	char buf[MAX_CONTS * 48];
	json_t *c = json_object();
	int rc = !c;
	if (!rc && (size_t)(off + max) < total) {
		cont_token(r, tag, path, off + max, buf, sizeof buf);
		rc = json_object_set_new(c, "next", json_string(buf));
	}
	if (!rc && off > 0) {
		cont_token(r, tag, path, off > max ? off - max : 0, buf, sizeof buf);
		rc = json_object_set_new(c, "prev", json_string(buf));
	}
	if (!rc)
		rc = json_object_set(list, "continuation", c);
	json_decref(c);
	return rc ? base_nomem(r->err, "grouping") : 0;
}

/* Read the {continuations: [...]} tokens in order, each replacing what an
 * earlier one said of the same list.  ntags: the lists the request has. */
static int read_conts(struct run *r, const char *text, int ntags)
{
	const char *p = text;
	while (p && *p) {
		while (*p == ' ')
			p++;
		const char *tok = p;
		size_t n = strcspn(p, " ");
		p += n;
		if (!n)
			continue;
		const char *q = tok + 1;
		int ok = *tok == 'S';
		while (ok && q < tok + n) {
			char *e1, *e2, *e3;
			long tag = *q == 'T' ? strtol(q + 1, &e1, 10) : -1;
			unsigned long long path = tag >= 0 && *e1 == 'P' ? strtoull(e1 + 1, &e2, 16) : 0;
			long off = tag >= 0 && *e1 == 'P' && *e2 == 'O' ? strtol(e2 + 1, &e3, 10) : -1;
			if (tag < 0 || off < 0 || e3 > tok + n || off > 1000000000L) {
				ok = 0;
				break;
			}
			if (tag >= ntags)
				return base_err(r->err, STRATA_INVALID_ARGUMENT,
				                "continuation '%.*s' names a list this grouping does not have",
				                (int)(n > 60 ? 60 : n), tok);
			int k = 0;
			while (k < r->nconts && (r->conts[k].tag != tag || r->conts[k].path != path))
				k++;
			if (k == MAX_CONTS)
				return base_err(r->err, STRATA_LIMIT, "more than %d continued lists",
				                MAX_CONTS);
			r->conts[k] = (struct cont){ (int)tag, path, off };
			r->nconts += k == r->nconts;
			q = e3;
		}
		if (!ok)
			return base_err(r->err, STRATA_INVALID_ARGUMENT,
			                "bad continuation '%.*s': not one a grouping result gave",
			                (int)(n > 60 ? 60 : n), tok);
	}
	return 0;
}

/* Add the aggregates of e over hit (an index into r->h) to accs. */
static int add_aggs(struct run *r, const struct yql_agg_expr *e, int n, size_t hit,
                    struct acc *accs)
{
	for (int k = 0; k < n; k++)
		if (e[k].arg) {
			struct grp_val v;
			if (grp_eval(e[k].arg, r->h, hit, &r->a, &v))
				return base_nomem(r->err, "grouping");
			acc_add(&accs[k], &v);
		}
	return 0;
}

/* The aggregates out over accs (count(): hits) added to fields. */
static int fields_add(struct run *r, const struct yql_agg_expr *out, int nout,
                      const struct acc *accs, long hits, json_t *fields)
{
	for (int k = 0; k < nout; k++) {
		struct grp_val v;
		acc_gval(&accs[k], &out[k], hits, &v);
		if (!v.kind)
			continue; /* min, max, avg of no value */
		json_t *j = v.kind == 2 ? json_stringn(v.s, v.n)
		            : isnan(v.num) ? json_string("NaN") /* as Vespa writes it */
		            : v.integral ? json_integer((json_int_t)v.num) : json_real(v.num);
		if (json_object_set_new(fields, out[k].label, j))
			return base_nomem(r->err, "grouping");
	}
	return 0;
}

/* The aggregates out over hits idx[0..n) added to fields (count(): count). */
static int aggs_over(struct run *r, const struct yql_agg_expr *out, int nout, const size_t *idx,
                     size_t n, long count, json_t *fields)
{
	if (!nout)
		return 0;
	struct acc *accs = base_calloc((size_t)nout, sizeof *accs);
	if (!accs)
		return base_nomem(r->err, "grouping");
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++)
		rc = add_aggs(r, out, nout, idx[i], accs);
	if (!rc)
		rc = fields_add(r, out, nout, accs, count, fields);
	base_free(accs, (size_t)nout * sizeof *accs);
	return rc;
}

static int run_level(struct run *r, const struct yql_grouping *g, const size_t *idx, size_t n,
                     uint64_t path, json_t *fields, json_t *kids);

/* The text of number x: "3" when integral, else "2.5", "3.0". */
static void num_text(double x, int integral, char *buf, size_t n)
{
	if (integral)
		snprintf(buf, n, "%lld", (long long)x);
	else if (isnan(x))
		snprintf(buf, n, "NaN");
	else
		eng_real_str(x, buf, n);
}

/* One end of bucket v as its group id prints it: a long bucket's infinite
 * ends as the longs' limits, a double's as Infinity, a string's as inf. */
static void bucket_text(const struct grp_val *v, int end, char *buf, size_t n)
{
	int inf = end ? v->inf_hi : v->inf_lo;
	if (v->kind == 4 && !inf)
		snprintf(buf, n, "%.*s", (int)(end ? v->n2 : v->n), end ? v->s2 : v->s);
	else if (v->kind == 4)
		snprintf(buf, n, "%s", end ? "inf" : "-inf");
	else if (inf && v->integral)
		snprintf(buf, n, "%s", end ? "9223372036854775807" : "-9223372036854775808");
	else if (inf)
		snprintf(buf, n, "%s", end ? "Infinity" : "-Infinity");
	else
		num_text(end ? v->to : v->num, v->integral, buf, n);
}

struct by_rel {
	const struct eng_hits *h;
	const size_t *hits;
};

static int rel_cmp(void *ud, size_t i, size_t j)
{
	const struct by_rel *b = ud;
	double x = b->h->relevance(b->h->ud, b->hits[i]), y = b->h->relevance(b->h->ud, b->hits[j]);
	return x > y ? -1 : x < y;
}

/* hits[0..n) best first into perm (indexes into hits). */
static int best_first(struct run *r, const size_t *hits, size_t n, size_t *perm)
{
	struct by_rel b = { r->h, hits };
	return sort_perm(perm, n, rel_cmp, &b, r->err, "grouping");
}

/* The hits of g's hit list, best first, as a "hitlist:hits" of pages of
 * page hits (-1: all), appended to kids. */
static int hitlist_json(struct run *r, const struct yql_grouping *g, const size_t *hits,
                        size_t n, long page, uint64_t path, json_t *kids)
{
	size_t *perm = base_alloc((n ? n : 1) * sizeof *perm);
	json_t *list = json_object(), *arr = json_array();
	int rc = !perm || !list || !arr || json_object_set_new(list, "id", json_string("hitlist:hits")) ||
	         json_object_set_new(list, "relevance", json_real(1.0)) ||
	         json_object_set_new(list, "label", json_string("hits"))
	                 ? base_nomem(r->err, "grouping") : 0;
	if (!rc)
		rc = best_first(r, hits, n, perm);
	long off = cont_offset(r, g->hits_tag, path);
	size_t from = (size_t)off < n ? (size_t)off : n;
	size_t to = page >= 0 && from + (size_t)page < n ? from + (size_t)page : n;
	for (size_t i = from; !rc && i < to; i++) {
		json_t *hit = NULL;
		if (!(rc = r->h->hit_json(r->h->ud, hits[perm[i]], g->summary_class, &hit, r->err)) &&
		    json_array_append_new(arr, hit))
			rc = base_nomem(r->err, "grouping");
	}
	if (!rc)
		rc = cont_json(r, g->hits_tag, path, off, page, n, list);
	if (!rc && ((to > from && json_object_set(list, "children", arr)) ||
	            json_array_append(kids, list)))
		rc = base_nomem(r->err, "grouping");
	json_decref(arr);
	json_decref(list);
	if (perm)
		base_free(perm, (n ? n : 1) * sizeof *perm);
	return rc;
}

/* What g puts in the current group: its levels over khits (into fields
 * and kids, in the order written) and its hit list of lhits. */
static int contents(struct run *r, const struct yql_grouping *g, const size_t *khits, size_t nk,
                    const size_t *lhits, size_t nl, long page, uint64_t path, json_t *fields,
                    json_t *kids)
{
	int rc = 0;
	for (int k = 0; !rc && k <= g->nkids; k++) {
		if (g->summary && k == g->hits_at)
			rc = hitlist_json(r, g, lhits, nl, page, path, kids);
		if (!rc && k < g->nkids)
			rc = run_level(r, &g->kids[k], khits, nk, path, fields, kids);
	}
	return rc;
}

/* One group's hit, appended to kids: {"id": "group:long:3", "relevance",
 * "value" (or a bucket's "limits"), "fields", "children"}. */
static int group_json(struct group_ctx *c, const struct group *gr, double relevance,
                      uint64_t path, json_t *kids)
{
	const struct grp_val *v = &c->vals[c->perm[gr->first]];
	struct run *r = c->r;
	size_t n = (v->kind == 2 || v->kind == 4 ? v->n + v->n2 : 0) + 96;
	char *text = base_alloc(n), *id = base_alloc(n + 32), *to = base_alloc(n);
	size_t nh = (size_t)gr->hits;
	size_t *hits = base_alloc((nh ? nh : 1) * sizeof *hits);
	json_t *j = json_object(), *fields = json_object(), *children = json_array();
	json_t *limits = NULL;
	int rc = !text || !id || !to || !hits || !j || !fields || !children;
	if (!rc && (v->kind == 3 || v->kind == 4)) {
		bucket_text(v, 0, text, n);
		bucket_text(v, 1, to, n);
		snprintf(id, n + 32, "group:%s_bucket:%s:%s",
		         v->kind == 4 ? "string" : v->integral ? "long" : "double", text, to);
		rc = !(limits = json_object()) ||
		     json_object_set_new(limits, "from", json_string(text)) ||
		     json_object_set_new(limits, "to", json_string(to)) ||
		     json_object_set(j, "limits", limits);
	} else if (!rc) {
		const char *type = v->kind == 2 ? "string" : v->integral ? "long" : "double";
		if (v->kind == 2)
			snprintf(text, n, "%.*s", (int)v->n, v->s);
		else
			num_text(v->num, v->integral, text, n);
		snprintf(id, n + 32, "group:%s:%s", type, text);
		rc = json_object_set_new(j, "value", json_string(text));
	}
	rc = rc || json_object_set_new(j, "id", json_string(id)) ||
	     json_object_set_new(j, "relevance", json_real(relevance))
	             ? base_nomem(r->err, "grouping") : 0;
	if (!rc)
		rc = fields_add(r, c->g->out, c->g->nout, gr->accs, gr->hits, fields);
	for (size_t k = 0; !rc && k < nh; k++)
		hits[k] = c->idx[c->perm[gr->first + k]];
	if (!rc)
		rc = contents(r, c->g, hits, nh, hits, nh, c->g->hits_max, path_hash(path, id), fields,
		              children);
	if (!rc && ((json_object_size(fields) && json_object_set(j, "fields", fields)) ||
	            (json_array_size(children) && json_object_set(j, "children", children)) ||
	            json_array_append(kids, j)))
		rc = base_nomem(r->err, "grouping");
	json_decref(limits);
	json_decref(fields);
	json_decref(children);
	json_decref(j);
	if (text)
		base_free(text, n);
	if (to)
		base_free(to, n);
	if (id)
		base_free(id, n + 32);
	if (hits)
		base_free(hits, (nh ? nh : 1) * sizeof *hits);
	return rc;
}

/* The grouplist of g, its groups ordered and paged, appended to kids. */
static int grouplist_json(struct group_ctx *c, size_t ngroups, const size_t *gperm,
                          uint64_t path, json_t *kids)
{
	const struct yql_grouping *g = c->g;
	long off = cont_offset(c->r, g->tag, path);
	size_t from = (size_t)off < ngroups ? (size_t)off : ngroups;
	size_t to = g->max >= 0 && from + (size_t)g->max < ngroups ? from + (size_t)g->max : ngroups;
	size_t shown = to - from, idn = strlen(g->label) + 16;
	char *id = base_alloc(idn);
	json_t *list = json_object(), *groups = json_array();
	int rc = 0;
	if (id)
		snprintf(id, idn, "grouplist:%s", g->label);
	if (!id || !list || !groups || json_object_set_new(list, "id", json_string(id)) ||
	    json_object_set_new(list, "relevance", json_real(1.0)) ||
	    json_object_set_new(list, "label", json_string(g->label)))
		rc = base_nomem(c->r->err, "grouping");
	for (size_t i = from; !rc && i < to; i++) {
		const struct group *gr = &c->groups[gperm[i]];
		double rel = g->norder ? (double)(to - i) / (double)shown : gr->relevance;
		rc = group_json(c, gr, rel, path, groups);
	}
	if (!rc)
		rc = cont_json(c->r, g->tag, path, off, g->max, ngroups, list);
	if (!rc && ((shown && json_object_set(list, "children", groups)) ||
	            json_array_append(kids, list)))
		rc = base_nomem(c->r->err, "grouping");
	json_decref(groups);
	json_decref(list);
	if (id)
		base_free(id, idn);
	return rc;
}

static void group_agg(void *ud, int k, struct grp_val *v)
{
	struct group_ctx *c = ud;
	const struct group *gr = c->groups; /* the one whose keys are computed: see order_keys */
	acc_gval(&gr->accs[c->g->nout + k], &c->g->oaggs[k], gr->hits, v);
}

/* Gather the hits into groups by key (c->perm sorted by key). */
static int make_groups(struct group_ctx *c, size_t n, struct acc *accs, int nacc,
                       struct grp_val *okeys, size_t *ng)
{
	const struct eng_hits *h = c->r->h;
	const struct yql_grouping *g = c->g;
	*ng = 0;
	for (size_t i = 0; i < n; i++) {
		size_t at = c->perm[i], hit = c->idx[at];
		if (!c->vals[at].kind)
			break; /* hits without a key sort last and join no group */
		if (!*ng || gval_cmp(&c->vals[c->perm[c->groups[*ng - 1].first]], &c->vals[at])) {
			struct group *gr = &c->groups[*ng];
			gr->first = i;
			gr->hits = 0;
			gr->relevance = -INFINITY;
			gr->accs = accs + *ng * (size_t)nacc;
			gr->okeys = okeys + *ng * (size_t)g->norder;
			(*ng)++;
		}
		struct group *gr = &c->groups[*ng - 1];
		double rel = h->relevance(h->ud, hit);
		gr->hits++;
		if (rel > gr->relevance || isnan(gr->relevance))
			gr->relevance = rel;
		if (add_aggs(c->r, g->out, g->nout, hit, gr->accs) ||
		    add_aggs(c->r, g->oaggs, g->noagg, hit, gr->accs + g->nout))
			return c->r->err->code;
	}
	/* each group's order() keys, over its aggregates */
	struct group *all = c->groups;
	for (size_t k = 0; k < *ng; k++) {
		c->groups = all + k;
		for (int o = 0; o < g->norder; o++)
			if (grp_eval_aggs(g->order[o].arg, group_agg, c, &c->r->a, &all[k].okeys[o])) {
				c->groups = all;
				return base_nomem(c->r->err, "grouping");
			}
	}
	c->groups = all;
	return 0;
}

/* The keys of hits idx[0 .. n): *ne entries, each a hit (*eidx) and a key
 * (*evals), base_alloc'd.  A key that is a collection field (an array, a
 * weighted set's keys, a map's keys or values) gives an entry for each of
 * its values, so the hit joins the group of each, as in Vespa; a hit of an
 * empty one joins none. */
static int key_entries(struct run *r, const struct yql_grouping *g, const size_t *idx, size_t n,
                       size_t **eidx, struct grp_val **evals, size_t *ne, size_t *ecap)
{
	size_t cap = n ? n : 1, k = 0;
	*eidx = base_alloc(cap * sizeof **eidx);
	*evals = base_calloc(cap, sizeof **evals);
	if (!*eidx || !*evals)
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		struct eng_hitval *hv = NULL;
		size_t nv = 0;
		int multi = g->key->op == GX_ATTR && r->h->values
		                    ? r->h->values(r->h->ud, idx[i], g->key->field, &r->a, &hv, &nv)
		                    : 0;
		if (multi < 0)
			goto nomem;
		if (!multi)
			nv = 1;
		if (k + nv > cap) {
			size_t nc = 2 * (k + nv);
			size_t *ei = base_realloc(*eidx, cap * sizeof **eidx, nc * sizeof **eidx);
			if (!ei)
				goto nomem;
			*eidx = ei;
			struct grp_val *ev = base_realloc(*evals, cap * sizeof **evals, nc * sizeof **evals);
			if (!ev)
				goto nomem;
			*evals = ev;
			memset(ev + cap, 0, (nc - cap) * sizeof *ev);
			cap = nc;
		}
		for (size_t j = 0; j < nv; j++, k++) {
			(*eidx)[k] = idx[i];
			struct grp_val *v = &(*evals)[k];
			if (!multi) {
				if (grp_eval(g->key, r->h, idx[i], &r->a, v))
					goto nomem;
				continue;
			}
			memset(v, 0, sizeof *v);
			v->kind = hv[j].kind;
			v->integral = hv[j].integral;
			v->num = hv[j].num;
			v->s = hv[j].s;
			v->n = hv[j].n;
		}
	}
	*ne = k;
	*ecap = cap;
	return 0;
nomem:
	base_free(*eidx, cap * sizeof **eidx);
	base_free(*evals, cap * sizeof **evals);
	*eidx = NULL;
	*evals = NULL;
	return base_nomem(r->err, "grouping");
}

/* The grouplist of g over the hits idx[0..n), appended to kids; its
 * output() beside group() into fields. */
static int grouped(struct run *r, const struct yql_grouping *g, const size_t *idx, size_t n,
                   uint64_t path, json_t *fields, json_t *kids)
{
	size_t *eidx, ne = 0, cap = 0;
	struct grp_val *evals;
	int rc = key_entries(r, g, idx, n, &eidx, &evals, &ne, &cap);
	if (rc)
		return rc;
	size_t m = ne ? ne : 1;
	int nacc = g->nout + g->noagg;
	struct group_ctx c = { r, g, eidx, evals, base_alloc(m * sizeof *c.perm),
	                       base_calloc(m, sizeof *c.groups) };
	struct acc *accs = base_calloc(m * (size_t)(nacc ? nacc : 1), sizeof *accs);
	struct grp_val *okeys = base_calloc(m * (size_t)(g->norder ? g->norder : 1), sizeof *okeys);
	size_t *gperm = base_alloc(m * sizeof *gperm), ng = 0;
	if (!c.perm || !c.groups || !accs || !okeys || !gperm) {
		rc = base_nomem(r->err, "grouping");
		goto out;
	}
	if ((rc = sort_perm(c.perm, ne, by_value, &c, r->err, "grouping")) ||
	    (rc = make_groups(&c, ne, accs, nacc, okeys, &ng)) ||
	    (rc = sort_perm(gperm, ng, group_cmp, &c, r->err, "grouping")))
		goto out;
	/* count() beside group() counts the groups */
	rc = aggs_over(r, g->lout, g->nlout, idx, n, (long)ng, fields);
	if (!rc)
		rc = grouplist_json(&c, ng, gperm, path, kids);
out:
	base_free(eidx, cap * sizeof *eidx);
	base_free(evals, cap * sizeof *evals);
	base_free(c.perm, m * sizeof *c.perm);
	base_free(c.groups, m * sizeof *c.groups);
	base_free(accs, m * (size_t)(nacc ? nacc : 1) * sizeof *accs);
	base_free(okeys, m * (size_t)(g->norder ? g->norder : 1) * sizeof *okeys);
	base_free(gperm, m * sizeof *gperm);
	return rc;
}

/* A level without group(): max(N) keeps the best N hits; its outputs and
 * levels work on those, its hit list pages through all, N at a time. */
static int over_hits(struct run *r, const struct yql_grouping *g, const size_t *idx, size_t n,
                     uint64_t path, json_t *fields, json_t *kids)
{
	size_t m = n ? n : 1, ns = n;
	size_t *perm = NULL, *sel = NULL;
	int rc = 0;
	if (g->max >= 0 && (size_t)g->max < n) {
		perm = base_alloc(m * sizeof *perm);
		sel = base_alloc(m * sizeof *sel);
		rc = !perm || !sel ? base_nomem(r->err, "grouping") : best_first(r, idx, n, perm);
		ns = (size_t)g->max;
		for (size_t i = 0; !rc && i < ns; i++)
			sel[i] = idx[perm[i]];
	}
	if (!rc)
		rc = aggs_over(r, g->out, g->nout, sel ? sel : idx, ns, (long)ns, fields);
	if (!rc)
		rc = contents(r, g, sel ? sel : idx, ns, idx, n, g->max, path, fields, kids);
	if (perm)
		base_free(perm, m * sizeof *perm);
	if (sel)
		base_free(sel, m * sizeof *sel);
	return rc;
}

/* Level g over the hits idx[0..n) of the current group (its fields, its
 * children kids): the hits its filter keeps, grouped or not. */
static int run_level(struct run *r, const struct yql_grouping *g, const size_t *idx, size_t n,
                     uint64_t path, json_t *fields, json_t *kids)
{
	size_t m = n ? n : 1, nk = 0;
	size_t *kept = g->filter ? base_alloc(m * sizeof *kept) : NULL;
	int rc = g->filter && !kept ? base_nomem(r->err, "grouping") : 0;
	for (size_t i = 0; !rc && g->filter && i < n; i++) {
		int keep;
		if (grp_filter_eval(g->filter, r->h, idx[i], &r->a, &r->res, &keep))
			rc = base_nomem(r->err, "grouping");
		else if (keep)
			kept[nk++] = idx[i];
	}
	if (!g->filter)
		nk = n;
	if (!rc)
		rc = g->key ? grouped(r, g, kept ? kept : idx, nk, path, fields, kids)
		            : over_hits(r, g, kept ? kept : idx, nk, path, fields, kids);
	if (kept)
		base_free(kept, m * sizeof *kept);
	return rc;
}

int eng_grouping_requests(const struct yql_query *q)
{
	return q->ngroupings ? q->grouping[q->ngroupings - 1].request + 1 : 0;
}

int eng_grouping_json(const struct yql_query *q, int req, const struct eng_hits *h,
                      json_t **out, struct strata_error *err)
{
	*out = NULL;
	char id[32];
	snprintf(id, sizeof id, "group:root:%d", req);
	struct run *r = base_calloc(1, sizeof *r);
	size_t n = h->n ? h->n : 1;
	size_t *all = base_alloc(n * sizeof *all);
	json_t *root = json_object(), *cont = json_object();
	json_t *fields = json_object(), *kids = json_array();
	int rc = 0, ntags = 0;
	uint64_t path = path_hash(14695981039346656037ull, id);
	if (r) {
		r->h = h;
		r->err = err;
		base_arena_init(&r->a, 1 << 12);
	}
	if (!r || !all || !root || !cont || !fields || !kids ||
	    json_object_set_new(root, "id", json_string(id)) ||
	    json_object_set_new(root, "relevance", json_real(1.0)))
		rc = base_nomem(err, "grouping");
	for (size_t i = 0; !rc && i < h->n; i++)
		all[i] = i;
	for (int k = 0; k < q->ngroupings; k++)
		ntags = grp_tags(&q->grouping[k]) > ntags ? grp_tags(&q->grouping[k]) : ntags;
	for (int k = 0; !rc && k < q->ngroupings; k++) /* the request's own continuations */
		if (q->grouping[k].request == req && q->grouping[k].continuations) {
			rc = read_conts(r, q->grouping[k].continuations, ntags);
			break;
		}
	if (!rc) {
		char buf[MAX_CONTS * 48];
		cont_token(r, -1, 0, 0, buf, sizeof buf);
		if (json_object_set_new(cont, "this", json_string(r->nconts ? buf : "")) ||
		    json_object_set(root, "continuation", cont))
			rc = base_nomem(err, "grouping");
	}
	for (int k = 0; !rc && k < q->ngroupings; k++)
		if (q->grouping[k].request == req)
			rc = run_level(r, &q->grouping[k], all, h->n, path, fields, kids);
	if (!rc && ((json_object_size(fields) && json_object_set(root, "fields", fields)) ||
	            (json_array_size(kids) && json_object_set(root, "children", kids))))
		rc = base_nomem(err, "grouping");
	json_decref(cont);
	json_decref(fields);
	json_decref(kids);
	if (all)
		base_free(all, n * sizeof *all);
	if (r) {
		grp_regexes_free(r->res);
		base_arena_free(&r->a);
		base_free(r, sizeof *r);
	}
	if (rc) {
		json_decref(root);
		return rc;
	}
	*out = root;
	return 0;
}
