/*
 * wsetmatch.c: the weighted-set query operators, with Vespa's semantics:
 *
 *   dotProduct(f, {"a": 2, "b": 1})   documents whose f holds a token; the
 *                                     score, rawScore(f), is the sum over
 *                                     the tokens it holds of the query's
 *                                     weight times the document's
 *   wand(f, {...})                    the same, and with scoreThreshold only
 *                                     the documents scoring above it;
 *                                     targetHits prunes nothing (every
 *                                     match is kept, like weakAnd)
 *   weightedSet(f, {...})             a filter: documents whose f holds a
 *                                     token; no score
 *
 * f is a weighted set (a key's weight is the document's weight), an array
 * (each element weight 1, counted as often as it occurs) or a single value
 * (weight 1) of strings or integers.  On a field with a text index, tokens
 * and values are compared as the index folds a whole value (lowercased,
 * accents removed unless the field says otherwise); elsewhere strings
 * compare exactly.  Integer tokens compare with integer values by their
 * decimal text.  itemRawScore(label) is the score of the operator labelled
 * so.  Before a document type's scan, eng_wset_open sorts each operator's
 * tokens, folded, for a binary search per value the scan reads.  On a field
 * whose index holds whole values (match: word or exact) the index answers
 * instead, without reading the document: each token's posting list gives
 * the documents that hold it, and the element table of the document's
 * length entry the weight of each occurrence (store_text_element).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine_int.h"

#define MAX_ITEMS 64  /* operators of one query */

struct wtok {
	const char *s;
	size_t n;
	double w;
	int ix;                  /* its place in the query */
};

/* A document an operator matched, and its score: rawScore reads it there
 * instead of matching the document again. */
struct scored {
	uint32_t lid;
	double score;
};

struct witem {
	const struct yql_node *n;
	int ntok;
	struct wtok *tok;        /* sorted by bytes */
	int fold;                /* tokenizer flags to fold values with, 0: compare as they are */
	struct store_postings **pl; /* ntok: the tokens' posting lists (NULL: a term the
	                               index cannot hold), or pl NULL: read the document */
	struct scored *hit;      /* the documents matched in the scan, lids increasing */
	size_t nhit, hit_cap;
};

struct eng_wset {
	struct base_arena arena; /* tokens */
	struct base_tokenizer *tk;
	struct store_txn *txn;
	const struct eng_doctype *dt;
	struct strata_error *err;    /* while opening */
	int n;
	struct witem item[MAX_ITEMS];
};

/* What f holds: 1 strings, 2 integers, 0 neither; *coll the collection type
 * (0 for a single value). */
static int holds(const struct rank_field *rf, int *coll)
{
	int t = rf->type;
	*coll = 0;
	if ((t == RANK_FT_ARRAY || t == RANK_FT_WSET) && rf->vtype) {
		*coll = t;
		t = rf->vtype->elem->type;
	}
	return t == RANK_FT_STRING ? 1 : t == RANK_FT_INT || t == RANK_FT_LONG ? 2 : 0;
}

int eng_wset_check(const struct eng_doctype *dt, const struct yql_node *n,
                   struct strata_error *err)
{
	int coll;
	static const char *const names[] = {"", "dotProduct", "wand", "weightedSet"};
	if (!holds(rank_schema_field(dt->schema, n->fidx), &coll))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "yql:1:%d: %s needs a weighted set, an array or a single value of "
		                "strings or integers; '%s' is not one", n->col, names[n->op], n->field);
	return 0;
}

static int cmp_tok(const void *a, const void *b)
{
	const struct wtok *x = a, *y = b;
	size_t n = x->n < y->n ? x->n : y->n;
	int c = memcmp(x->s, y->s, n);
	return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* By bytes, then by place in the query. */
static int cmp_sorted(const void *a, const void *b)
{
	int c = cmp_tok(a, b);
	if (c)
		return c;
	const struct wtok *x = a, *y = b;
	return (x->ix > y->ix) - (x->ix < y->ix);
}

/* s[0..n) folded as flags say (a whole value), into the tokenizer's buffer
 * (valid until its next use). */
static void fold(struct base_tokenizer *tk, int flags, const char **s, size_t *n)
{
	size_t off = 0;
	int pos;
	if (base_token_next(tk, *s, *n, &off, flags, s, n, &pos) <= 0)
		*n = 0;
}

static int open_item(struct eng_wset *w, const struct yql_node *n, struct strata_error *err)
{
	struct witem *it = &w->item[w->n];
	const struct store_field *sf = &w->dt->fields[n->fidx];
	it->n = n;
	it->fold = sf->text ? BASE_TOKEN_WHOLE | (STORE_TEXT_TOKEN_FLAGS(sf->text) &
	                                          (BASE_TOKEN_NORMALIZE | BASE_TOKEN_CASED))
	                    : 0;
	if (n->nvals && !(it->tok = base_arena_alloc(&w->arena, (size_t)n->nvals * sizeof *it->tok,
	                                             8)))
		return base_nomem(err, "the tokens of %s", n->field);
	for (int i = 0; i < n->nvals; i++) {
		const char *s = n->strs[i];
		size_t len = strlen(s);
		if (it->fold) {
			fold(w->tk, it->fold, &s, &len);
			if (!(s = base_arena_strndup(&w->arena, s, len)))
				return base_nomem(err, "the tokens of %s", n->field);
		}
		it->tok[i] = (struct wtok){s, len, n->nums[i], i};
	}
	/* sorted; of tokens given twice (or folding alike) the last one counts */
	if (n->nvals > 1) /* none: no array to sort (qsort's base may not be NULL) */
		qsort(it->tok, (size_t)n->nvals, sizeof *it->tok, cmp_sorted);
	int k = 0;
	for (int i = 0; i < n->nvals; i++) {
		if (k && cmp_tok(&it->tok[k - 1], &it->tok[i]) == 0)
			k--;
		it->tok[k++] = it->tok[i];
	}
	it->ntok = k;
	w->n++;
	int tf = STORE_TEXT_TOKEN_FLAGS(sf->text);
	if (!sf->text || !(tf & BASE_TOKEN_WHOLE) || !k)
		return 0;
	/* whole values in the index: the tokens' posting lists */
	if (!(it->pl = base_arena_alloc(&w->arena, (size_t)k * sizeof *it->pl, 8)))
		return base_nomem(err, "the tokens of %s", n->field);
	memset(it->pl, 0, (size_t)k * sizeof *it->pl);
	for (int i = 0; i < k; i++) {
		const struct wtok *t = &it->tok[i];
		if (!t->n || t->n > BASE_TOKEN_MAX || memchr(t->s, 0, t->n))
			continue; /* never indexed: matches nothing */
		int rc = store_postings_open(w->txn, w->dt->store_id, n->fidx, t->s, t->n, &it->pl[i],
		                             err);
		if (rc)
			return rc;
	}
	return 0;
}

/* Match item it against document lid through the index. */
static int index_match(struct eng_wset *w, const struct witem *it, uint32_t lid, double *score)
{
	int matched = 0;
	uint32_t pos[64], elem[64];
	int32_t dw[64];
	for (int i = 0; i < it->ntok; i++) {
		uint32_t at = lid;
		if (!it->pl[i] || store_postings_seek(it->pl[i], &at) != 0 || at != lid)
			continue;
		/* each occurrence: its element's weight (1 in an array); past the
		 * positions read, occurrences count 1 each */
		uint32_t np = store_postings_positions(it->pl[i], pos, 64), nr = np < 64 ? np : 64;
		int rc = store_text_elements(w->txn, w->dt->store_id, it->n->fidx, lid, pos, nr, elem, dw,
		                             NULL);
		for (uint32_t k = 0; k < np; k++) {
			if (k < nr && (rc || elem[k] == UINT32_MAX))
				continue;
			matched = 1;
			*score += it->tok[i].w * (k < nr ? dw[k] : 1);
		}
	}
	return matched;
}

/* yql_each: one operator, or (no ud) the finding that there is one. */
static int open_node(void *ud, const struct yql_node *n)
{
	struct eng_wset *w = ud;
	if (!w)
		return 1;
	if (n->fidx < 0)
		return 0;
	if (w->n == MAX_ITEMS)
		return base_err(w->err, STRATA_LIMIT, "yql:1:%d: more than %d dotProduct, wand and "
		                "weightedSet operators", n->col, MAX_ITEMS);
	return open_item(w, n, w->err);
}

int eng_wset_open(struct store_txn *txn, const struct eng_doctype *dt,
                  const struct yql_node *where, struct eng_wset **out, struct strata_error *err)
{
	*out = NULL;
	if (!yql_each(where, YQL_WSET, open_node, NULL))
		return 0;
	struct eng_wset *w = base_calloc(1, sizeof *w);
	if (!w)
		return base_nomem(err, "weighted-set operators");
	base_arena_init(&w->arena, 4096);
	w->dt = dt;
	w->txn = txn;
	w->err = err;
	int rc = base_tokenizer_new(&w->tk, err);
	if (!rc)
		rc = yql_each(where, YQL_WSET, open_node, w);
	if (rc) {
		eng_wset_close(w);
		return rc;
	}
	*out = w;
	return 0;
}

void eng_wset_close(struct eng_wset *w)
{
	if (!w)
		return;
	for (int i = 0; i < w->n; i++) {
		for (int k = 0; w->item[i].pl && k < w->item[i].ntok; k++)
			store_postings_close(w->item[i].pl[k]);
		base_free(w->item[i].hit, w->item[i].hit_cap * sizeof *w->item[i].hit);
	}
	base_tokenizer_free(w->tk);
	base_arena_free(&w->arena);
	base_free(w, sizeof *w);
}

/* The query weight of value s[0..n), or 0 with *found = 0. */
static double weight_of(struct eng_wset *w, const struct witem *it, const char *s, size_t n,
                        int *found)
{
	if (it->fold)
		fold(w->tk, it->fold, &s, &n);
	struct wtok key = {s, n, 0, 0};
	const struct wtok *t = it->ntok ? bsearch(&key, it->tok, (size_t)it->ntok, sizeof *it->tok,
	                                          cmp_tok)
	                                : NULL; /* none given: no array (bsearch's may not be NULL) */
	*found = t != NULL;
	return t ? t->w : 0;
}

/* Add value s[0..n) of document weight dw to the match. */
static void add(struct eng_wset *w, const struct witem *it, const char *s, size_t n, double dw,
                int *matched, double *score)
{
	int found;
	double qw = weight_of(w, it, s, n, &found);
	if (found) {
		*matched = 1;
		*score += qw * dw;
	}
}

/* An element or key as text: a string's bytes, an integer's decimal. */
static int elem_text(const json_t *e, char *buf, size_t cap, const char **s, size_t *n)
{
	if (json_is_string(e)) {
		*s = json_string_value(e);
		*n = json_string_length(e);
		return 1;
	}
	if (json_is_integer(e)) {
		*n = (size_t)snprintf(buf, cap, "%lld", (long long)json_integer_value(e));
		*s = buf;
		return 1;
	}
	return 0;
}

/* n's item in w. */
static struct witem *item_of(struct eng_wset *w, const struct yql_node *n)
{
	for (int i = 0; w && i < w->n; i++)
		if (w->item[i].n == n)
			return &w->item[i];
	return NULL;
}

/* Match item it against value v of its field, read from the document: 1,
 * 0, or -1 when memory ran out. */
static int value_match(struct eng_wset *w, const struct witem *it, const struct store_value *v,
                       double *score)
{
	int coll, matched = 0;
	int kind = holds(rank_schema_field(w->dt->schema, it->n->fidx), &coll);
	char buf[32];
	if (!coll) {
		if (kind == 1)
			add(w, it, v->s, v->n, 1, &matched, score);
		else
			add(w, it, buf, (size_t)snprintf(buf, sizeof buf, "%lld", (long long)v->i), 1,
			    &matched, score);
		return matched;
	}
	json_error_t je;
	int oom;
	json_t *j = eng_json_parse(v->s, v->n, 0, &je, &oom);
	if (!j)
		return oom ? -1 : 0;
	const char *s;
	size_t len;
	if (json_is_array(j)) {
		for (size_t i = 0; i < json_array_size(j); i++)
			if (elem_text(json_array_get(j, i), buf, sizeof buf, &s, &len))
				add(w, it, s, len, 1, &matched, score);
	} else if (json_is_object(j)) {
		const char *key;
		json_t *wt;
		json_object_foreach(j, key, wt) {
			add(w, it, key, strlen(key), (double)json_integer_value(wt), &matched, score);
		}
	}
	json_decref(j);
	return matched;
}

static int cmp_hit(const void *a, const void *b)
{
	uint32_t x = ((const struct scored *)a)->lid, y = ((const struct scored *)b)->lid;
	return (x > y) - (x < y);
}

/* Remember that it matched lid with score (lids in increasing order, as the
 * scan visits them; others are not kept).  Memory running out only loses
 * the memo. */
static void remember(struct witem *it, uint32_t lid, double score)
{
	if (it->nhit && it->hit[it->nhit - 1].lid >= lid)
		return;
	if (it->nhit == it->hit_cap && base_grow((void **)&it->hit, &it->hit_cap, it->nhit + 1,
	                                         sizeof *it->hit, UINT32_MAX))
		return;
	it->hit[it->nhit++] = (struct scored){lid, score};
}

int eng_wset_match(struct eng_wset *w, const struct yql_node *n, uint32_t lid,
                   const struct store_value *(*value)(void *ud, int field, uint32_t lid),
                   void *ud, double *score)
{
	struct witem *it = item_of(w, n);
	*score = 0;
	if (!it)
		return 0;
	struct scored key = {lid, 0};
	const struct scored *h = it->nhit ? bsearch(&key, it->hit, it->nhit, sizeof *h, cmp_hit) : NULL;
	if (h) {
		*score = h->score;
		return 1;
	}
	int matched;
	if (it->pl) {
		matched = index_match(w, it, lid, score);
	} else {
		const struct store_value *v = value(ud, n->fidx, lid);
		if (!v || (matched = value_match(w, it, v, score)) < 0)
			return v ? -1 : 0;
	}
	if (n->op == YQL_WEIGHTEDSET)
		*score = 0;
	if (matched && n->op == YQL_WAND && !(*score > n->num))
		matched = 0;
	if (matched)
		remember(it, lid, *score);
	return matched;
}

double eng_wset_feature(struct eng_wset *w, int feature, int field, const char *label,
                        uint32_t lid,
                        const struct store_value *(*value)(void *ud, int field, uint32_t lid),
                        void *ud, int *nomem)
{
	double sum = 0;
	for (int i = 0; w && i < w->n; i++) {
		const struct yql_node *n = w->item[i].n;
		if (n->op == YQL_WEIGHTEDSET)
			continue;
		if (feature == RANK_TF_RAW_SCORE ? n->fidx != field
		                                 : !label || !n->label || strcmp(n->label, label) != 0)
			continue;
		double s;
		int m = eng_wset_match(w, n, lid, value, ud, &s);
		if (m > 0)
			sum += s;
		else if (m < 0)
			*nomem = 1;
	}
	return sum;
}

/* ---- the dotProduct, wand and weightedSet operators ---------------------------------- */

static const struct store_value *doc_value(void *ud, int field, uint32_t lid)
{
	struct eng_match *m = ud;
	return m->value(m->ud, lid, field);
}

static int wset_match(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	double score;
	int r = eng_wset_match(m->wset, n, lid, doc_value, m, &score);
	if (r < 0)
		m->nomem = 1;
	return r > 0;
}

const struct eng_op eng_op_wset = { "weightedSet", 0, eng_wset_check, wset_match, NULL };
