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
 * 1 in steps of 1/n as Vespa gives them.  Equal groups come by value.  A
 * hit whose key has no value is in no group.  A grouping inside each()
 * runs again over each group's hits, its grouplist in the group's
 * "children", beside the group's "hitlist:hits" when summary() asks for
 * them; all(output(...)) fills the root's "fields".  Lists with max() page
 * by continuations: tokens "S" then "T<tag>P<path>O<offset>" per list, the
 * path a hash of the group ids above the list, so a nested list pages
 * within its own parent group only.  Computed strings live in one arena per
 * request, freed at the end.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

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
	long count;   /* values seen */
	double sum, sumsq, min, max;
	int integral; /* every value seen was integral */
};

static void acc_add(struct acc *a, const struct grp_val *v)
{
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

/* Values: none last, numbers (and buckets, by their start) before strings. */
static int gval_cmp(const struct grp_val *a, const struct grp_val *b)
{
	int ka = a->kind == 3 ? 1 : a->kind, kb = b->kind == 3 ? 1 : b->kind;
	if (ka != kb)
		return !ka ? 1 : !kb ? -1 : ka - kb;
	if (ka == 1)
		return a->num < b->num ? -1 : a->num > b->num;
	if (ka == 2) {
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
	struct strata_error *err;
};

struct group {
	size_t first;      /* index into perm of its first hit */
	long hits;
	double relevance;  /* the best hit's */
	struct acc *accs;  /* nout, then norder */
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
		               (out[k].agg != YQL_AGG_AVG && out[k].agg != YQL_AGG_STDDEV &&
		                accs[k].integral && accs[k].count);
		json_t *j = integral ? json_integer((json_int_t)v) : json_real(v);
		if (json_object_set_new(f, out[k].label, j)) {
			json_decref(f);
			return NULL;
		}
	}
	return f;
}

static int grouped(struct run *r, const struct yql_grouping *g, const size_t *idx, size_t n,
                   uint64_t path, json_t *kids);

/* The text of number x: "3" when integral, else "2.5", "3.0". */
static void num_text(double x, int integral, char *buf, size_t n)
{
	if (integral)
		snprintf(buf, n, "%lld", (long long)x);
	else
		eng_real_str(x, buf, n);
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

/* The hits of a group, best first, as its "hitlist:hits". */
static int hitlist_json(struct run *r, const struct yql_grouping *g, const size_t *hits,
                        size_t n, uint64_t path, json_t *kids)
{
	size_t *perm = base_alloc((n ? n : 1) * sizeof *perm);
	struct by_rel b = { r->h, hits };
	json_t *list = json_object(), *arr = json_array();
	int rc = !perm || !list || !arr || json_object_set_new(list, "id", json_string("hitlist:hits")) ||
	         json_object_set_new(list, "relevance", json_real(1.0)) ||
	         json_object_set_new(list, "label", json_string("hits"))
	                 ? base_nomem(r->err, "grouping") : 0;
	if (!rc)
		rc = sort_perm(perm, n, rel_cmp, &b, r->err, "grouping");
	long off = cont_offset(r, g->hits_tag, path);
	size_t from = (size_t)off < n ? (size_t)off : n;
	size_t to = g->hits_max >= 0 && from + (size_t)g->hits_max < n ? from + (size_t)g->hits_max : n;
	for (size_t i = from; !rc && i < to; i++) {
		json_t *hit = NULL;
		if (!(rc = r->h->hit_json(r->h->ud, hits[perm[i]], g->summary_class, &hit, r->err)) &&
		    json_array_append_new(arr, hit))
			rc = base_nomem(r->err, "grouping");
	}
	if (!rc)
		rc = cont_json(r, g->hits_tag, path, off, g->hits_max, n, list);
	if (!rc && ((to > from && json_object_set(list, "children", arr)) ||
	            json_array_append(kids, list)))
		rc = base_nomem(r->err, "grouping");
	json_decref(arr);
	json_decref(list);
	if (perm)
		base_free(perm, (n ? n : 1) * sizeof *perm);
	return rc;
}

/* What a group holds below it: the grouplist of g->sub and the hits. */
static int group_children(struct group_ctx *c, const struct group *gr, uint64_t path, json_t *j)
{
	size_t n = (size_t)gr->hits;
	size_t *hits = base_alloc((n ? n : 1) * sizeof *hits);
	json_t *kids = json_array();
	int rc = !hits || !kids ? base_nomem(c->r->err, "grouping") : 0;
	for (size_t k = 0; !rc && k < n; k++)
		hits[k] = c->idx[c->perm[gr->first + k]];
	if (!rc && c->g->sub)
		rc = grouped(c->r, c->g->sub, hits, n, path, kids);
	if (!rc && c->g->summary)
		rc = hitlist_json(c->r, c->g, hits, n, path, kids);
	if (!rc && json_object_set(j, "children", kids))
		rc = base_nomem(c->r->err, "grouping");
	json_decref(kids);
	if (hits)
		base_free(hits, (n ? n : 1) * sizeof *hits);
	return rc;
}

/* One group's hit, appended to kids: {"id": "group:long:3", "relevance",
 * "value" (or a bucket's "limits"), "fields", "children"}. */
static int group_json(struct group_ctx *c, const struct group *gr, double relevance,
                      uint64_t path, json_t *kids)
{
	const struct grp_val *v = &c->vals[c->perm[gr->first]];
	struct strata_error *err = c->r->err;
	size_t n = (v->kind == 2 ? v->n : 0) + 96;
	char *text = base_alloc(n), *id = base_alloc(n + 32), from[40], to[40];
	json_t *j = json_object(), *fields = fields_json(c->g->out, c->g->nout, gr->accs, gr->hits);
	json_t *limits = NULL;
	int rc = !text || !id || !j || !fields;
	if (!rc && v->kind == 3) {
		num_text(v->num, v->integral, from, sizeof from);
		num_text(v->to, v->integral, to, sizeof to);
		snprintf(id, n + 32, "group:%s_bucket:%s:%s", v->integral ? "long" : "double", from, to);
		rc = !(limits = json_object()) ||
		     json_object_set_new(limits, "from", json_string(from)) ||
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
	     json_object_set_new(j, "relevance", json_real(relevance)) ||
	     (json_object_size(fields) && json_object_set(j, "fields", fields))
	             ? base_nomem(err, "grouping") : 0;
	if (!rc && (c->g->sub || c->g->summary))
		rc = group_children(c, gr, path_hash(path, id), j);
	if (!rc && json_array_append(kids, j))
		rc = base_nomem(err, "grouping");
	json_decref(limits);
	json_decref(fields);
	json_decref(j);
	if (text)
		base_free(text, n);
	if (id)
		base_free(id, n + 32);
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

/* Gather the hits into groups by key (c->perm sorted by key). */
static int make_groups(struct group_ctx *c, size_t n, struct acc *accs, int nacc, size_t *ng)
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
			(*ng)++;
		}
		struct group *gr = &c->groups[*ng - 1];
		double rel = h->relevance(h->ud, hit);
		gr->hits++;
		if (rel > gr->relevance || isnan(gr->relevance))
			gr->relevance = rel;
		if (add_aggs(c->r, g->out, g->nout, hit, gr->accs) ||
		    add_aggs(c->r, g->order, g->norder, hit, gr->accs + g->nout))
			return c->r->err->code;
	}
	return 0;
}

/* The grouplist of g over the hits idx[0..n), appended to kids. */
static int grouped(struct run *r, const struct yql_grouping *g, const size_t *idx, size_t n,
                   uint64_t path, json_t *kids)
{
	size_t m = n ? n : 1;
	int nacc = g->nout + g->norder;
	struct group_ctx c = { r, g, idx, base_calloc(m, sizeof *c.vals),
	                       base_alloc(m * sizeof *c.perm), base_calloc(m, sizeof *c.groups) };
	struct acc *accs = base_calloc(m * (size_t)(nacc ? nacc : 1), sizeof *accs);
	size_t *gperm = base_alloc(m * sizeof *gperm), ng = 0;
	int rc = 0;
	if (!c.vals || !c.perm || !c.groups || !accs || !gperm) {
		rc = base_nomem(r->err, "grouping");
		goto out;
	}
	for (size_t i = 0; !rc && i < n; i++)
		if (grp_eval(g->key, r->h, idx[i], &r->a, &c.vals[i]))
			rc = base_nomem(r->err, "grouping");
	if (rc || (rc = sort_perm(c.perm, n, by_value, &c, r->err, "grouping")) ||
	    (rc = make_groups(&c, n, accs, nacc, &ng)) ||
	    (rc = sort_perm(gperm, ng, group_cmp, &c, r->err, "grouping")))
		goto out;
	rc = grouplist_json(&c, ng, gperm, path, kids);
out:
	base_free(c.vals, m * sizeof *c.vals);
	base_free(c.perm, m * sizeof *c.perm);
	base_free(c.groups, m * sizeof *c.groups);
	base_free(accs, m * (size_t)(nacc ? nacc : 1) * sizeof *accs);
	base_free(gperm, m * sizeof *gperm);
	return rc;
}

/* all(output(...)): aggregates over every hit, into fields. */
static int totals(struct run *r, const struct yql_grouping *g, json_t *fields)
{
	struct acc *accs = base_calloc((size_t)g->nout, sizeof *accs);
	if (!accs)
		return base_nomem(r->err, "grouping");
	int rc = 0;
	for (size_t i = 0; !rc && i < r->h->n; i++)
		rc = add_aggs(r, g->out, g->nout, i, accs);
	json_t *f = rc ? NULL : fields_json(g->out, g->nout, accs, (long)r->h->n);
	if (!rc && (!f || json_object_update(fields, f)))
		rc = base_nomem(r->err, "grouping");
	json_decref(f);
	base_free(accs, (size_t)g->nout * sizeof *accs);
	return rc;
}

static int max_tag(const struct yql_grouping *g)
{
	int t = 0;
	for (; g; g = g->sub) {
		t = g->tag + 1 > t ? g->tag + 1 : t;
		t = g->hits_tag + 1 > t ? g->hits_tag + 1 : t;
	}
	return t;
}

int eng_grouping_json(const struct yql_query *q, const struct eng_hits *h, json_t **out,
                      struct strata_error *err)
{
	*out = NULL;
	struct run *r = base_calloc(1, sizeof *r);
	size_t n = h->n ? h->n : 1;
	size_t *all = base_alloc(n * sizeof *all);
	json_t *root = json_object(), *cont = json_object();
	json_t *fields = json_object(), *kids = json_array();
	int rc = 0, ntags = 0;
	uint64_t path = path_hash(14695981039346656037ull, "group:root:0");
	if (r) {
		r->h = h;
		r->err = err;
		base_arena_init(&r->a, 1 << 12);
	}
	if (!r || !all || !root || !cont || !fields || !kids ||
	    json_object_set_new(root, "id", json_string("group:root:0")) ||
	    json_object_set_new(root, "relevance", json_real(1.0)))
		rc = base_nomem(err, "grouping");
	for (size_t i = 0; !rc && i < h->n; i++)
		all[i] = i;
	for (int k = 0; k < q->ngroupings; k++)
		ntags = max_tag(&q->grouping[k]) > ntags ? max_tag(&q->grouping[k]) : ntags;
	if (!rc && q->ngroupings)
		rc = read_conts(r, q->grouping[0].continuations, ntags);
	if (!rc) {
		char buf[MAX_CONTS * 48];
		cont_token(r, -1, 0, 0, buf, sizeof buf);
		if (json_object_set_new(cont, "this", json_string(r->nconts ? buf : "")) ||
		    json_object_set(root, "continuation", cont))
			rc = base_nomem(err, "grouping");
	}
	for (int k = 0; !rc && k < q->ngroupings; k++) {
		const struct yql_grouping *g = &q->grouping[k];
		rc = g->key ? grouped(r, g, all, h->n, path, kids) : totals(r, g, fields);
	}
	if (!rc && ((json_object_size(fields) && json_object_set(root, "fields", fields)) ||
	            (json_array_size(kids) && json_object_set(root, "children", kids))))
		rc = base_nomem(err, "grouping");
	json_decref(cont);
	json_decref(fields);
	json_decref(kids);
	if (all)
		base_free(all, n * sizeof *all);
	if (r) {
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
