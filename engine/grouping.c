/*
 * grouping.c: YQL's order by and grouping over the matches of a query.
 *
 * Both run after ranking, over every match (not only the page shown), and
 * read field values through struct eng_hits, which query.c implements on
 * the store.  order by sorts the hits by field values instead of by
 * relevance.  Grouping gathers the hits by the value of one field and
 * aggregates each group (count, sum, avg, min, max), in the shape Vespa
 * gives its grouping result: a "group:root:0" hit holding a
 * "grouplist:<field>" that holds one "group:<type>:<value>" per group with
 * the aggregates in "fields".  Without order() the groups come by their
 * best hit's relevance, which is the group's relevance (Vespa's default
 * order, -max(relevance())); with order() by the aggregates it names, and
 * the groups' relevances fall from 1 in steps of 1/n as Vespa gives them.
 * Equal groups come by value.  A hit without a value for the field is in
 * no group.  A grouping inside each() runs again over each group's hits
 * (a struct subset: their indexes in the parent list), its grouplist in
 * the group's "children"; groupings side by side give one grouplist each,
 * all(output(...)) the root's "fields".
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine_int.h"

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
		size_t ai = i * (size_t)k + (size_t)o, bi = j * (size_t)k + (size_t)o;
		const struct eng_hitval *a = &c->keys[ai], *b = &c->keys[bi];
		int r = val_cmp(&c->folded[ai], &c->folded[bi]);
		if (!r && a->kind == 2 && a->sort_function && !a->sort_primary)
			r = val_cmp(a, b); /* equal folded: by the bytes */
		int desc = c->q->order[o].given ? c->q->order[o].desc : a->sort_desc;
		if (r && a->kind && b->kind && desc)
			r = -r; /* a missing value stays last */
		if (r)
			return r;
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
			h->value(h->ud, i, q->order[o].field, &c.keys[at]);
			rc = fold_key(&c, tk, &c.keys[at], &c.folded[at], err);
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
	long count;   /* values seen (hits, for count()) */
	double sum, min, max;
	int integral; /* every value seen was integral (an int field's) */
};

static void acc_add(struct acc *a, const struct eng_hitval *v)
{
	if (v->kind != 1)
		return;
	if (!a->count) {
		a->min = a->max = v->num;
		a->integral = v->integral;
	}
	a->count++;
	a->sum += v->num;
	a->min = v->num < a->min ? v->num : a->min;
	a->max = v->num > a->max ? v->num : a->max;
	a->integral &= v->integral;
}

/* The value of aggregate e over a; NAN when it has none (min, max, avg of
 * no value). */
static double acc_value(const struct acc *a, const struct yql_agg_expr *e, long hits)
{
	switch (e->agg) {
	case YQL_AGG_COUNT: return (double)hits;
	case YQL_AGG_SUM: return a->sum;
	case YQL_AGG_AVG: return a->count ? a->sum / (double)a->count : NAN;
	case YQL_AGG_MIN: return a->count ? a->min : NAN;
	case YQL_AGG_MAX: return a->count ? a->max : NAN;
	}
	return NAN;
}

struct group {
	size_t first;      /* index into the sorted hits of its first hit */
	long hits;
	double relevance;  /* the best hit's */
	struct acc *accs;  /* nout, then norder */
};

struct group_ctx {
	const struct eng_hits *h;
	const struct yql_grouping *g;
	struct eng_hitval *vals; /* per hit: its group value */
	size_t *perm;            /* hits by value */
	struct group *groups;
};

static int by_value(void *ud, size_t i, size_t j)
{
	struct group_ctx *c = ud;
	return val_cmp(&c->vals[i], &c->vals[j]);
}

static int group_cmp(void *ud, size_t i, size_t j)
{
	struct group_ctx *c = ud;
	const struct group *a = &c->groups[i], *b = &c->groups[j];
	const struct yql_grouping *g = c->g;
	for (int o = 0; o < g->norder; o++) {
		const struct yql_agg_expr *e = &g->order[o];
		double x = acc_value(&a->accs[g->nout + o], e, a->hits);
		double y = acc_value(&b->accs[g->nout + o], e, b->hits);
		if (isnan(x) || isnan(y)) {
			if (isnan(x) != isnan(y))
				return isnan(x) ? 1 : -1;
			continue;
		}
		if (x != y)
			return (x < y) == !e->desc ? -1 : 1;
	}
	if (!g->norder && a->relevance != b->relevance)
		return a->relevance > b->relevance ? -1 : 1;
	return val_cmp(&c->vals[c->perm[a->first]], &c->vals[c->perm[b->first]]);
}

/* The aggregates of a group (or of all hits) as "fields". */
static json_t *fields_json(const struct yql_agg_expr *out, int nout, const struct acc *accs,
                           long hits)
{
	json_t *f = json_object();
	for (int k = 0; f && k < nout; k++) {
		double v = acc_value(&accs[k], &out[k], hits);
		if (isnan(v))
			continue; /* min, max, avg of no value */
		int integral = out[k].agg == YQL_AGG_COUNT ||
		               (out[k].agg != YQL_AGG_AVG && accs[k].integral && accs[k].count);
		json_t *j = integral ? json_integer((json_int_t)v) : json_real(v);
		if (json_object_set_new(f, out[k].label, j)) {
			json_decref(f);
			return NULL;
		}
	}
	return f;
}

static int grouped(const struct yql_grouping *g, const struct eng_hits *h, json_t *kids,
                   struct strata_error *err);

/* The hits idx[0..n) of a list of hits, as a list of their own. */
struct subset {
	const struct eng_hits *h;
	const size_t *idx;
};

static double sub_relevance(void *ud, size_t i)
{
	const struct subset *s = ud;
	return s->h->relevance(s->h->ud, s->idx[i]);
}

static void sub_value(void *ud, size_t i, const char *field, struct eng_hitval *v)
{
	const struct subset *s = ud;
	s->h->value(s->h->ud, s->idx[i], field, v);
}

/* The grouplist of g->sub over the hits of group gr, as gr's children. */
static int subgroups(const struct group_ctx *c, const struct group *gr, json_t *j,
                     struct strata_error *err)
{
	struct subset sub = { c->h, c->perm + gr->first };
	struct eng_hits sh = { (size_t)gr->hits, &sub, sub_relevance, sub_value };
	json_t *kids = json_array();
	if (!kids)
		return base_nomem(err, "grouping");
	int rc = grouped(c->g->sub, &sh, kids, err);
	if (!rc && json_object_set(j, "children", kids))
		rc = base_nomem(err, "grouping");
	json_decref(kids);
	return rc;
}

/* The text of a group's value into buf (n bytes), its type's name into
 * *type: "long", "double" or "string" (cut at n - 1 bytes). */
static void value_text(const struct eng_hitval *v, char *buf, size_t n, const char **type)
{
	if (v->kind == 2) {
		*type = "string";
		snprintf(buf, n, "%.*s", (int)(v->n < n ? v->n : n - 1), v->s);
	} else if (v->integral) {
		*type = "long";
		snprintf(buf, n, "%lld", (long long)v->num);
	} else {
		*type = "double";
		eng_real_str(v->num, buf, n);
	}
}

/* One group's hit, appended to kids: {"id": "group:long:3", "relevance",
 * "value", "fields", "children"}. */
static int group_json(const struct group_ctx *c, const struct group *gr, double relevance,
                      json_t *kids, struct strata_error *err)
{
	const struct eng_hitval *v = &c->vals[c->perm[gr->first]];
	size_t n = (v->kind == 2 ? v->n : 0) + 64;
	char *text = base_alloc(n), *id = base_alloc(n + 16);
	const char *type = "";
	if (text && id) {
		value_text(v, text, n, &type);
		snprintf(id, n + 16, "group:%s:%s", type, text);
	}
	json_t *j = json_object();
	json_t *fields = fields_json(c->g->out, c->g->nout, gr->accs, gr->hits);
	int rc = !text || !id || !j || !fields || json_object_set_new(j, "id", json_string(id)) ||
	         json_object_set_new(j, "relevance", json_real(relevance)) ||
	         json_object_set_new(j, "value", json_string(text)) ||
	         (json_object_size(fields) && json_object_set(j, "fields", fields))
	                 ? base_nomem(err, "grouping") : 0;
	if (!rc && c->g->sub)
		rc = subgroups(c, gr, j, err);
	if (!rc && json_array_append(kids, j))
		rc = base_nomem(err, "grouping");
	json_decref(fields);
	json_decref(j);
	base_free(text, n);
	base_free(id, n + 16);
	return rc;
}

/* The grouplist of g->field, its groups ordered and cut to max, appended to
 * kids. */
static int grouplist_json(struct group_ctx *c, size_t ngroups, const size_t *gperm, json_t *kids,
                          struct strata_error *err)
{
	const struct yql_grouping *g = c->g;
	size_t shown = g->max >= 0 && (size_t)g->max < ngroups ? (size_t)g->max : ngroups;
	size_t idn = strlen(g->field) + 16;
	char *id = base_alloc(idn);
	json_t *list = json_object(), *groups = json_array();
	int rc = 0;
	if (id)
		snprintf(id, idn, "grouplist:%s", g->field);
	if (!id || !list || !groups || json_object_set_new(list, "id", json_string(id)) ||
	    json_object_set_new(list, "relevance", json_real(1.0)) ||
	    json_object_set_new(list, "label", json_string(g->field)))
		rc = base_nomem(err, "grouping");
	for (size_t i = 0; !rc && i < shown; i++) {
		const struct group *gr = &c->groups[gperm[i]];
		double rel = g->norder ? (double)(shown - i) / (double)shown : gr->relevance;
		rc = group_json(c, gr, rel, groups, err);
	}
	if (!rc && ((shown && json_object_set(list, "children", groups)) ||
	            json_array_append(kids, list)))
		rc = base_nomem(err, "grouping");
	json_decref(groups);
	json_decref(list);
	if (id)
		base_free(id, idn);
	return rc;
}

/* Gather the hits into groups by value (c->perm sorted by value). */
static size_t make_groups(struct group_ctx *c, struct acc *accs, int nacc)
{
	const struct eng_hits *h = c->h;
	const struct yql_grouping *g = c->g;
	size_t ng = 0;
	for (size_t i = 0; i < h->n; i++) {
		size_t hit = c->perm[i];
		if (!c->vals[hit].kind)
			break; /* hits without a value sort last and join no group */
		if (!ng || val_cmp(&c->vals[c->perm[c->groups[ng - 1].first]], &c->vals[hit])) {
			struct group *gr = &c->groups[ng];
			gr->first = i;
			gr->hits = 0;
			gr->relevance = -INFINITY;
			gr->accs = accs + ng * (size_t)nacc;
			ng++;
		}
		struct group *gr = &c->groups[ng - 1];
		double rel = h->relevance(h->ud, hit);
		gr->hits++;
		if (rel > gr->relevance || isnan(gr->relevance))
			gr->relevance = rel;
		for (int k = 0; k < nacc; k++) {
			const struct yql_agg_expr *e = k < g->nout ? &g->out[k] : &g->order[k - g->nout];
			if (e->field) {
				struct eng_hitval v;
				h->value(h->ud, hit, e->field, &v);
				acc_add(&gr->accs[k], &v);
			}
		}
	}
	return ng;
}

/* The grouplist of g over h, appended to kids. */
static int grouped(const struct yql_grouping *g, const struct eng_hits *h, json_t *kids,
                   struct strata_error *err)
{
	size_t n = h->n ? h->n : 1;
	int nacc = g->nout + g->norder;
	struct group_ctx c = { h, g, base_calloc(n, sizeof *c.vals), base_alloc(n * sizeof *c.perm),
	                       base_calloc(n, sizeof *c.groups) };
	struct acc *accs = base_calloc(n * (size_t)(nacc ? nacc : 1), sizeof *accs);
	size_t *gperm = base_alloc(n * sizeof *gperm);
	int rc = 0;
	if (!c.vals || !c.perm || !c.groups || !accs || !gperm) {
		rc = base_nomem(err, "grouping");
		goto out;
	}
	for (size_t i = 0; i < h->n; i++)
		h->value(h->ud, i, g->field, &c.vals[i]);
	if ((rc = sort_perm(c.perm, h->n, by_value, &c, err, "grouping")))
		goto out;
	size_t ng = make_groups(&c, accs, nacc);
	if ((rc = sort_perm(gperm, ng, group_cmp, &c, err, "grouping")))
		goto out;
	rc = grouplist_json(&c, ng, gperm, kids, err);
out:
	base_free(c.vals, n * sizeof *c.vals);
	base_free(c.perm, n * sizeof *c.perm);
	base_free(c.groups, n * sizeof *c.groups);
	base_free(accs, n * (size_t)(nacc ? nacc : 1) * sizeof *accs);
	base_free(gperm, n * sizeof *gperm);
	return rc;
}

/* all(output(...)): aggregates over every hit, into fields. */
static int totals(const struct yql_grouping *g, const struct eng_hits *h, json_t *fields,
                  struct strata_error *err)
{
	struct acc *accs = base_calloc((size_t)g->nout, sizeof *accs);
	if (!accs)
		return base_nomem(err, "grouping");
	for (size_t i = 0; i < h->n; i++)
		for (int k = 0; k < g->nout; k++)
			if (g->out[k].field) {
				struct eng_hitval v;
				h->value(h->ud, i, g->out[k].field, &v);
				acc_add(&accs[k], &v);
			}
	json_t *f = fields_json(g->out, g->nout, accs, (long)h->n);
	int rc = !f || json_object_update(fields, f) ? base_nomem(err, "grouping") : 0;
	json_decref(f);
	base_free(accs, (size_t)g->nout * sizeof *accs);
	return rc;
}

int eng_grouping_json(const struct yql_query *q, const struct eng_hits *h, json_t **out,
                      struct strata_error *err)
{
	*out = NULL;
	json_t *root = json_object(), *cont = json_object();
	json_t *fields = json_object(), *kids = json_array();
	int rc = 0;
	if (!root || !cont || !fields || !kids ||
	    json_object_set_new(root, "id", json_string("group:root:0")) ||
	    json_object_set_new(root, "relevance", json_real(1.0)) ||
	    json_object_set_new(cont, "this", json_string("")) ||
	    json_object_set(root, "continuation", cont))
		rc = base_nomem(err, "grouping");
	for (int k = 0; !rc && k < q->ngroupings; k++) {
		const struct yql_grouping *g = &q->grouping[k];
		rc = g->field ? grouped(g, h, kids, err) : totals(g, h, fields, err);
	}
	if (!rc && ((json_object_size(fields) && json_object_set(root, "fields", fields)) ||
	            (json_array_size(kids) && json_object_set(root, "children", kids))))
		rc = base_nomem(err, "grouping");
	json_decref(cont);
	json_decref(fields);
	json_decref(kids);
	if (rc) {
		json_decref(root);
		return rc;
	}
	*out = root;
	return 0;
}
