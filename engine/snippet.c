/*
 * snippet.c: summary fields made from the query, for query.c's summaries:
 * dynamic snippets (summary: dynamic), highlighting (bolding: on) and the
 * elements a query matched (summary: matched-elements-only).
 *
 * The query's terms for a string field are the words of its 'contains'
 * conditions on that field (after userQuery() and fieldsets are expanded),
 * outside any negation, tokenized as the field's index tokenizes its text;
 * a token of the value matches when it is one of them (on a match: prefix
 * field, when it begins with one).  A field without a text index is
 * tokenized as text.  Each matched token is put within <hi> and </hi>; the
 * words of a phrase are highlighted wherever they occur.  An array of
 * strings is shown element by element, each as a string field would be.
 *
 * A dynamic summary follows the defaults of Vespa's snippet generator: a
 * text shorter than SNIP_WHOLE bytes (SNIP_LENGTH and room for four
 * separators, as Vespa reckons) is shown whole; a longer one shows up to
 * SNIP_MAX_MATCHES fragments, each a matched token with at most
 * SNIP_SURROUND_MAX bytes of context on either side (less when there are
 * several, so that they add up to about SNIP_LENGTH), cut at token
 * boundaries, overlapping ones merged; "<sep />" stands where text is left
 * out (between fragments, and before the first or after the last when they
 * do not reach the text's ends).  Without a match it shows the text's first
 * SNIP_LENGTH bytes (cut at a token's end), then "<sep />".
 *
 * Matched elements: the elements of an array, the keys of a weighted set or
 * the entries of a map that a condition of the query on the field (contains,
 * comparisons, range; on a map through m.key and m.value paths, on
 * structs through their fields) holds for, outside negations; the field is
 * left out of the summary when none is.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

#define SNIP_LENGTH 256       /* Vespa's defaults (juniper's length, max_matches, */
#define SNIP_MAX_MATCHES 3    /* surround_max) */
#define SNIP_SURROUND_MAX 128
#define SNIP_WHOLE (SNIP_LENGTH + 4 * 8) /* shorter texts are shown whole */
#define MAX_QTERMS 64         /* distinct query terms of one field */
#define MAX_TEXT ((size_t)1 << 30)

/* ---- the query's terms ------------------------------------------------------------ */

struct qterms {
	int n;
	int prefix;                 /* match: prefix: a token matches the terms it begins with */
	size_t len[MAX_QTERMS];
	char term[MAX_QTERMS][BASE_TOKEN_MAX + 1];
};

static void add_terms(struct base_tokenizer *tk, const char *s, int flags, struct qterms *q)
{
	size_t off = 0, n, len = strlen(s);
	const char *t;
	int pos;
	while (q->n < MAX_QTERMS && base_token_next(tk, s, len, &off, flags, &t, &n, &pos) > 0) {
		int k = 0;
		while (k < q->n && !(q->len[k] == n && memcmp(q->term[k], t, n) == 0))
			k++;
		if (k < q->n)
			continue;
		memcpy(q->term[q->n], t, n);
		q->len[q->n++] = n;
	}
}

static void collect_terms(struct base_tokenizer *tk, const struct yql_node *n, const char *name,
                          int flags, struct qterms *q)
{
	if (!n || n->kind == YQL_NOT)
		return;
	for (int i = 0; i < n->nkids; i++)
		collect_terms(tk, n->kids[i], name, flags, q);
	if (n->kind == YQL_CONTAINS && n->field && strcmp(n->field, name) == 0)
		add_terms(tk, n->str, flags, q);
}

static int term_hit(const struct qterms *q, const char *t, size_t n)
{
	for (int k = 0; k < q->n; k++)
		if (q->prefix ? q->len[k] <= n && memcmp(q->term[k], t, q->len[k]) == 0
		              : q->len[k] == n && memcmp(q->term[k], t, n) == 0)
			return 1;
	return 0;
}

/* ---- the value's tokens ----------------------------------------------------------- */

struct span {
	size_t s, e; /* bytes of the token in the text */
	int hit;
};

struct text {
	const char *s;
	size_t n;
	struct span *sp;
	size_t nsp, cap;
	size_t nhits;
	char *out;        /* what is being written */
	size_t olen, ocap;
	int failed;
};

static void put(struct text *x, const char *s, size_t n)
{
	if (x->failed || !n)
		return;
	if (x->olen + n > x->ocap && base_grow((void **)&x->out, &x->ocap, x->olen + n, 1, MAX_TEXT)) {
		x->failed = 1;
		return;
	}
	memcpy(x->out + x->olen, s, n);
	x->olen += n;
}

/* The text's bytes [from, to), its matched tokens within <hi> and </hi>;
 * tokens from index k on are the first ones that may lie inside. */
static void put_range(struct text *x, size_t from, size_t to, size_t k)
{
	size_t at = from;
	for (; k < x->nsp && x->sp[k].e <= to; k++) {
		if (!x->sp[k].hit || x->sp[k].s < from)
			continue;
		put(x, x->s + at, x->sp[k].s - at);
		put(x, "<hi>", 4);
		put(x, x->s + x->sp[k].s, x->sp[k].e - x->sp[k].s);
		put(x, "</hi>", 5);
		at = x->sp[k].e;
	}
	put(x, x->s + at, to - at);
}

static int tokenize(struct text *x, struct base_tokenizer *tk, int flags, const struct qterms *q)
{
	size_t off = 0, n;
	const char *t;
	int pos;
	while (base_token_next(tk, x->s, x->n, &off, flags, &t, &n, &pos) > 0) {
		if (x->nsp == x->cap &&
		    base_grow((void **)&x->sp, &x->cap, x->nsp + 1, sizeof *x->sp, MAX_TEXT))
			return STRATA_NOMEM;
		struct span *sp = &x->sp[x->nsp++];
		sp->s = base_token_start(tk);
		sp->e = off;
		sp->hit = term_hit(q, t, n);
		x->nhits += (size_t)sp->hit;
	}
	return 0;
}

/* The fragments of a dynamic summary (see the top of the file). */
static void dynamic(struct text *x)
{
	if (x->n < SNIP_WHOLE) {
		put_range(x, 0, x->n, 0);
		return;
	}
	if (!x->nhits) { /* the text's beginning */
		size_t k = 0;
		while (k + 1 < x->nsp && x->sp[k + 1].e <= SNIP_LENGTH)
			k++;
		if (x->nsp)
			put_range(x, 0, x->sp[k].e, 0);
		put(x, "<sep />", 7);
		return;
	}
	size_t want = x->nhits < SNIP_MAX_MATCHES ? x->nhits : SNIP_MAX_MATCHES;
	size_t ctx = SNIP_LENGTH / (2 * want);
	if (ctx > SNIP_SURROUND_MAX)
		ctx = SNIP_SURROUND_MAX;
	size_t ws[SNIP_MAX_MATCHES], we[SNIP_MAX_MATCHES], nf = 0;
	for (size_t k = 0; k < x->nsp; k++) {
		if (!x->sp[k].hit)
			continue;
		size_t s = x->sp[k].s > ctx ? x->sp[k].s - ctx : 0, e = x->sp[k].e + ctx;
		if (nf && s <= we[nf - 1]) {
			if (e > we[nf - 1])
				we[nf - 1] = e;
			continue;
		}
		if (nf == SNIP_MAX_MATCHES)
			break;
		ws[nf] = s;
		we[nf++] = e;
	}
	size_t k = 0;
	for (size_t f = 0; f < nf; f++) {
		/* the tokens wholly inside the window */
		while (x->sp[k].s < ws[f])
			k++;
		size_t last = k;
		while (last + 1 < x->nsp && x->sp[last + 1].e <= we[f])
			last++;
		if (f || k > 0)
			put(x, "<sep />", 7);
		/* at the text's ends, what surrounds its first and last tokens too */
		put_range(x, k ? x->sp[k].s : 0, last + 1 < x->nsp ? x->sp[last].e : x->n, k);
		k = last + 1;
	}
	if (k < x->nsp)
		put(x, "<sep />", 7);
}

/* The dynamic summary or the highlighted text (transform) of the text
 * s[0..n) as a JSON string; NULL when memory runs out. */
static json_t *snip_one(struct base_tokenizer *tk, const struct qterms *q, int flags,
                        const char *s, size_t n, int transform)
{
	struct text x = { .s = s, .n = n };
	json_t *out = NULL;
	if (!tokenize(&x, tk, flags, q)) {
		if (transform == RANK_SUMMARY_DYNAMIC)
			dynamic(&x);
		else
			put_range(&x, 0, x.n, 0);
		out = x.failed ? NULL : json_stringn(x.out ? x.out : "", x.olen);
	}
	base_free(x.sp, x.cap * sizeof *x.sp);
	base_free(x.out, x.ocap);
	return out;
}

/* A dynamic summary or the highlighted text of field fi's value v: a
 * string, or an array of strings (each element on its own). */
static int snippet(const struct eng_doctype *dt, const struct yql_node *where, int fi,
                   const struct store_value *v, int transform, json_t **out,
                   struct strata_error *err)
{
	const struct rank_field *rf = rank_schema_field(dt->schema, fi);
	int flags = rank_field_token_flags(rf);
	if (flags < 0)
		flags = BASE_TOKEN_TEXT;
	struct base_tokenizer *tk;
	int rc = base_tokenizer_new(&tk, err);
	if (rc)
		return rc;
	struct qterms *q = base_calloc(1, sizeof *q);
	json_t *all = NULL;
	if (q) {
		q->prefix = rf->match == RANK_MATCH_PREFIX;
		collect_terms(tk, where, rf->name, flags, q);
		if (rf->type == RANK_FT_STRING)
			*out = snip_one(tk, q, flags, v->s ? v->s : "", v->s ? v->n : 0, transform);
		else if ((all = eng_value_json(&dt->fields[fi], NULL, v)) && (*out = json_array()))
			for (size_t i = 0; i < json_array_size(all) && *out; i++) {
				const json_t *e = json_array_get(all, i);
				json_t *one = snip_one(tk, q, flags, json_string_value(e),
				                       json_string_length(e), transform);
				if (!one || json_array_append_new(*out, one)) {
					json_decref(*out);
					*out = NULL;
				}
			}
	}
	if (!*out)
		rc = base_nomem(err, "the summary of '%s'", rf->name);
	json_decref(all);
	base_free(q, sizeof *q);
	base_tokenizer_free(tk);
	return rc;
}

/* ---- matched elements -------------------------------------------------------------- */

/* Whether condition n holds for the string s, or (s NULL) the simple value
 * j (a string key is read as a number by comparisons). */
static int leaf_of(const struct yql_node *n, const char *s, const json_t *j)
{
	double d = s ? strtod(s, NULL) : json_number_value(j);
	switch (n->kind) {
	case YQL_CONTAINS:
		return s && strcmp(s, n->str) == 0;
	case YQL_CMP:
	case YQL_RANGE:
		return (s || json_is_number(j)) && yql_number_test(n, d);
	}
	return 0;
}

static int leaf(const struct yql_node *n, const json_t *j)
{
	return leaf_of(n, json_is_string(j) ? json_string_value(j) : NULL, j);
}

/* Whether n holds for a value at path (components split by '.') inside j:
 * struct fields by name, arrays through any element. */
static int at_path(const struct yql_node *n, const json_t *j, const char *path, int depth)
{
	if (!j || depth > 16)
		return 0;
	if (json_is_array(j)) {
		for (size_t i = 0; i < json_array_size(j); i++)
			if (at_path(n, json_array_get(j, i), path, depth + 1))
				return 1;
		return 0;
	}
	if (!*path)
		return leaf(n, j);
	size_t h = strcspn(path, ".");
	const char *rest = path[h] ? path + h + 1 : path + h;
	char key[256];
	if (!json_is_object(j) || h >= sizeof key)
		return 0;
	memcpy(key, path, h);
	key[h] = 0;
	return at_path(n, json_object_get(j, key), rest, depth + 1);
}

/* Whether a condition of conds[nc] holds for one element: an array's
 * element e, a weighted set's key k, a map's entry (k, e). */
static int elem_hit(const struct yql_node *const *conds, const char *const *paths, int nc,
                    int map, const char *k, const json_t *e)
{
	for (int i = 0; i < nc; i++) {
		const char *p = paths[i];
		if (map) {
			size_t h = strcspn(p, ".");
			const char *rest = p[h] ? p + h + 1 : p + h;
			int key = h == 3 && strncmp(p, "key", 3) == 0;
			if (key ? leaf_of(conds[i], k, NULL)
			        : h == 5 && strncmp(p, "value", 5) == 0 && at_path(conds[i], e, rest, 0))
				return 1;
		} else if (k) {
			if (!*p && leaf_of(conds[i], k, NULL))
				return 1;
		} else if (at_path(conds[i], e, p, 0)) {
			return 1;
		}
	}
	return 0;
}

#define MAX_CONDS 64

static void collect_conds(const struct yql_node *n, const char *name, const struct yql_node **conds,
                          const char **paths, int *nc)
{
	if (!n || n->kind == YQL_NOT)
		return;
	for (int i = 0; i < n->nkids; i++)
		collect_conds(n->kids[i], name, conds, paths, nc);
	size_t len = strlen(name);
	if (*nc == MAX_CONDS || !n->field || strncmp(n->field, name, len) != 0 ||
	    (n->field[len] && n->field[len] != '.'))
		return;
	if (n->kind != YQL_CONTAINS && n->kind != YQL_CMP && n->kind != YQL_RANGE)
		return;
	conds[*nc] = n;
	paths[(*nc)++] = n->field[len] ? n->field + len + 1 : n->field + len;
}

static int matched_elements(const struct eng_doctype *dt, const struct yql_node *where, int fi,
                            const struct store_value *v, json_t **out, struct strata_error *err)
{
	const struct rank_field *rf = rank_schema_field(dt->schema, fi);
	const struct yql_node *conds[MAX_CONDS];
	const char *paths[MAX_CONDS];
	int nc = 0;
	collect_conds(where, rf->name, conds, paths, &nc);
	*out = NULL;
	if (!nc)
		return 0;
	json_t *all = eng_value_json(&dt->fields[fi], NULL, v);
	json_t *keep = json_is_array(all) ? json_array() : json_object();
	int rc = all && keep ? 0 : STRATA_NOMEM;
	if (!rc && json_is_array(all)) {
		for (size_t i = 0; i < json_array_size(all) && !rc; i++) {
			json_t *e = json_array_get(all, i);
			if (elem_hit(conds, paths, nc, 0, NULL, e) && json_array_append(keep, e))
				rc = STRATA_NOMEM;
		}
	} else if (!rc) {
		const char *k;
		json_t *e;
		int map = rf->type == RANK_FT_MAP;
		json_object_foreach(all, k, e) {
			if (elem_hit(conds, paths, nc, map, k, e) && json_object_set(keep, k, e)) {
				rc = STRATA_NOMEM;
				break;
			}
		}
	}
	json_decref(all);
	if (rc) {
		json_decref(keep);
		return base_nomem(err, "the summary of '%s'", rf->name);
	}
	if (json_is_array(keep) ? json_array_size(keep) : json_object_size(keep))
		*out = keep;
	else
		json_decref(keep);
	return 0;
}

int eng_summary_transform(const struct eng_doctype *dt, const struct yql_node *where, int fi,
                          int transform, const struct store_value *v, json_t **out,
                          struct strata_error *err)
{
	*out = NULL;
	if (transform == RANK_SUMMARY_MATCHED_ELEMENTS)
		return matched_elements(dt, where, fi, v, out, err);
	return snippet(dt, where, fi, v, transform, out, err);
}
