/*
 * wand.c: weakAnd(...), matched as Vespa does, with top-k pruning.  Each
 * term of a weakAnd (a one-word 'contains' on a text-indexed field; a
 * contains on a fieldset counts as one term per field) has a score: its
 * weight (Vespa's default term weight, 100) times its inverse document
 * frequency, log(1 + (N - n + 0.5) / (n + 0.5)) as bm25 has it.  A
 * document's weakAnd score is the sum of the scores of the terms it holds
 * (how often it holds them does not count).  A WAND walk (in its MaxScore
 * form, run() says how) goes over the terms' posting lists in local id
 * order keeping a heap of the best targetHits scores: once the heap is
 * full, a document whose terms cannot sum above the heap's lowest score is
 * skipped without being scored, and the lists of the terms that cannot lift
 * a document above it alone jump past it unread.  Every document that entered the heap when it was
 * scored is a match of the weakAnd (so at least the final top targetHits,
 * and every match when there are no more than targetHits): those go on to
 * the rank profile's phases like any other match, as in Vespa, which also
 * hands its ranking every document that passed the heap's threshold.
 *
 * The matches of each weakAnd are computed once per document type, when
 * its text conditions are open (eng_wand_open), and kept as a sorted lid
 * array: the condition tree tests membership, and a weakAnd at the root
 * (or under an AND or as rank()'s first condition) drives the scan, which
 * then visits its matches only instead of every document.
 */
#include <math.h>
#include <string.h>

#include "../engine_int.h"

#define MAX_WANDS 16
#define MAX_WAND_TERMS 1024
#define TERM_WEIGHT 100.0
#define END UINT32_MAX

struct wand {
	const struct yql_node *node;
	uint32_t *lids;        /* its matches, increasing */
	size_t n, cap;
};

struct eng_wandset {
	int n;
	struct wand w[MAX_WANDS];
};

struct term {
	struct eng_text *text; /* its contains */
	struct store_postings *p;
	double ub;        /* the term's score, also its upper bound */
	uint32_t cur;     /* the list's current lid, END past its end */
};

/* The walk's state: the terms, and a min-heap of the best scores. */
struct walk {
	struct term t[MAX_WAND_TERMS];
	struct term *order[MAX_WAND_TERMS]; /* by score, lowest first */
	int m;
	double *heap;
	size_t nheap, heap_cap, k;
	int io;           /* a posting list could not be read */
	struct strata_error *err;
};

/* The terms of weakAnd kid n, appended to w: its posting list when it is a
 * one-word contains on a text-indexed field, the terms of each kid of an
 * OR (a fieldset); a contains without any word adds nothing. */
static int add_terms(struct walk *w, const struct eng_doctype *dt, const struct eng_textset *ts,
                     const struct yql_node *wn, const struct yql_node *n, double ndocs)
{
	if (n->kind == YQL_OR) {
		for (int i = 0; i < n->nkids; i++) {
			int rc = add_terms(w, dt, ts, wn, n->kids[i], ndocs);
			if (rc)
				return rc;
		}
		return 0;
	}
	if (n->kind != YQL_CONTAINS)
		return base_err(w->err, STRATA_NOT_IMPLEMENTED,
		                "yql:1:%d: weakAnd() takes terms ('field contains \"word\"'); other "
		                "conditions in it are not supported", n->col);
	if (n->fidx < 0)
		return 0; /* the type lacks the field: the term matches nothing here */
	const struct eng_text *t = eng_text_of(ts, n);
	if (!dt->fields[n->fidx].text || !t)
		return base_err(w->err, STRATA_NOT_IMPLEMENTED,
		                "yql:1:%d: weakAnd() over '%s', a field without a text index, is not "
		                "supported", n->col, n->field);
	struct store_postings *p;
	int words = eng_text_single(t, &p);
	if (words < 0)
		return base_err(w->err, STRATA_NOT_IMPLEMENTED,
		                "yql:1:%d: weakAnd() over '%s' (match: prefix) is not supported",
		                n->col, n->field);
	if (words > 1)
		return base_err(w->err, STRATA_NOT_IMPLEMENTED,
		                "yql:1:%d: a phrase in weakAnd() (\"%s\": several words) is not "
		                "supported", n->col, n->str);
	if (words == 0 || !p)
		return 0;
	if (w->m == MAX_WAND_TERMS)
		return base_err(w->err, STRATA_LIMIT, "yql:1:%d: more than %d terms in one weakAnd()",
		                wn->col, MAX_WAND_TERMS);
	double df = (double)store_postings_df(p);
	struct term *tm = &w->t[w->m++];
	tm->text = (struct eng_text *)t; /* the set is the query's: its memo is written here */
	tm->p = p;
	tm->ub = TERM_WEIGHT * log(1 + (ndocs - df + 0.5) / (df + 0.5));
	tm->cur = 0;
	int rc = store_postings_seek(p, &tm->cur);
	if (rc)
		tm->cur = END;
	if (rc && rc != STRATA_NOT_FOUND)
		w->io = rc;
	return 0;
}

static void heap_down(double *h, size_t n, size_t i)
{
	for (;;) {
		size_t m = i, l = 2 * i + 1, r = l + 1;
		if (l < n && h[l] < h[m])
			m = l;
		if (r < n && h[r] < h[m])
			m = r;
		if (m == i)
			return;
		double t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* Offer score s to the heap: 1 when it enters (the heap not yet full, or s
 * above its lowest), 0 when not, or an error. */
static int offer(struct walk *w, double s)
{
	if (w->nheap == w->k) {
		if (!(s > w->heap[0]))
			return 0;
		w->heap[0] = s;
		heap_down(w->heap, w->nheap, 0);
		return 1;
	}
	if (w->nheap == w->heap_cap) {
		int rc = base_grow((void **)&w->heap, &w->heap_cap, w->nheap + 1, sizeof *w->heap, w->k);
		if (rc)
			return rc == STRATA_NOMEM ? base_nomem(w->err, "weakAnd") : rc;
	}
	size_t i = w->nheap++;
	w->heap[i] = s;
	while (i && w->heap[(i - 1) / 2] > w->heap[i]) {
		double t = w->heap[i];
		w->heap[i] = w->heap[(i - 1) / 2];
		w->heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
	return 1;
}

/* Move term t to the first lid >= want (END past its list's end); a read
 * error stays in w->io. */
static void advance(struct walk *w, struct term *t, uint32_t want)
{
	if (t->cur >= want)
		return;
	t->cur = want;
	int rc = store_postings_seek(t->p, &t->cur);
	if (rc)
		t->cur = END;
	if (rc && rc != STRATA_NOT_FOUND)
		w->io = rc;
}

static int by_ub(const void *a, const void *b)
{
	const struct term *x = *(struct term *const *)a, *y = *(struct term *const *)b;
	return x->ub < y->ub ? -1 : x->ub > y->ub;
}

/* lid enters wd; each term's contains remembers how often it occurs there
 * (every term's list has been moved to lid or past it: see run()). */
static int keep(struct walk *w, struct wand *wd, uint32_t lid, struct strata_error *err)
{
	for (int i = 0; i < w->m; i++) {
		struct term *t = &w->t[i];
		int on = t->cur == lid;
		int rc = eng_text_memo(t->text, lid, on ? store_postings_tf(t->p) : 0,
		                       on ? store_postings_dl(t->p) : 0, err);
		if (rc)
			return rc;
	}
	if (wd->n == wd->cap) {
		int rc = base_grow((void **)&wd->lids, &wd->cap, wd->n + 1, sizeof *wd->lids, END);
		if (rc)
			return rc == STRATA_NOMEM ? base_nomem(err, "weakAnd matches") : rc;
	}
	wd->lids[wd->n++] = lid;
	return 0;
}

/* The walk over w's terms into wd, in its MaxScore form.  The terms are
 * ordered by score, prefix[i] the sum of the scores of terms 0..i.  Those
 * whose prefix is at most the heap's threshold cannot lift a document
 * above it by themselves: they are not essential, and only the essential
 * terms' lists propose documents, in lid order.  A proposed document's
 * score is completed from the other lists, the highest first, only while
 * what they could add still lifts it above the threshold; the lists of the
 * frequent terms (low scores) are thus read only where a document may
 * enter the heap.  A document enters when its score is above the
 * threshold, exactly as in the plain WAND walk. */
static int run(struct walk *w, struct wand *wd)
{
	double prefix[MAX_WAND_TERMS];
	for (int i = 0; i < w->m; i++)
		w->order[i] = &w->t[i];
	qsort(w->order, (size_t)w->m, sizeof *w->order, by_ub);
	for (int i = 0; i < w->m; i++)
		prefix[i] = (i ? prefix[i - 1] : 0) + w->order[i]->ub;
	int ess = 0; /* the first essential term */
	for (;;) {
		if (w->io)
			return base_err(w->err, STRATA_STORE, "weakAnd: the text index could not be read");
		double theta = w->nheap == w->k ? w->heap[0] : 0;
		while (ess < w->m && !(prefix[ess] > theta))
			ess++;
		if (ess == w->m)
			return 0;
		uint32_t d = END;
		for (int i = ess; i < w->m; i++)
			if (w->order[i]->cur < d)
				d = w->order[i]->cur;
		if (d == END)
			return 0;
		double s = 0;
		for (int i = ess; i < w->m; i++)
			if (w->order[i]->cur == d)
				s += w->order[i]->ub;
		for (int i = ess - 1; i >= 0 && s + prefix[i] > theta; i--) {
			advance(w, w->order[i], d);
			if (w->order[i]->cur == d)
				s += w->order[i]->ub;
		}
		int in = offer(w, s);
		if (in < 0)
			return in;
		if (in && (in = keep(w, wd, d, w->err)) != 0)
			return in;
		if (d == END - 1)
			return 0;
		for (int i = ess; i < w->m; i++)
			if (w->order[i]->cur == d)
				advance(w, w->order[i], d + 1);
	}
}

static int open_one(struct store_txn *txn, const struct eng_doctype *dt,
                    const struct eng_textset *ts, const struct yql_node *n, struct wand *wd,
                    struct strata_error *err)
{
	struct walk *w = base_calloc(1, sizeof *w);
	if (!w)
		return base_nomem(err, "weakAnd");
	w->err = err;
	w->k = (size_t)n->target_hits;
	double ndocs = (double)store_count(txn, dt->store_id);
	int rc = 0;
	for (int i = 0; i < n->nkids && !rc; i++)
		rc = add_terms(w, dt, ts, n, n->kids[i], ndocs);
	if (!rc)
		rc = run(w, wd);
	if (w->heap)
		base_free(w->heap, w->heap_cap * sizeof *w->heap);
	base_free(w, sizeof *w);
	return rc;
}

static int open_tree(struct store_txn *txn, const struct eng_doctype *dt,
                     const struct eng_textset *ts, const struct yql_node *n,
                     struct eng_wandset *s, struct strata_error *err)
{
	if (n->kind == YQL_WEAKAND) {
		if (s->n == MAX_WANDS)
			return base_err(err, STRATA_LIMIT, "yql:1:%d: more than %d weakAnd() in a query",
			                n->col, MAX_WANDS);
		struct wand *wd = &s->w[s->n++];
		wd->node = n;
		return open_one(txn, dt, ts, n, wd, err);
	}
	for (int i = 0; i < n->nkids; i++) {
		int rc = open_tree(txn, dt, ts, n->kids[i], s, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* yql_each: the finding that there is a weakAnd. */
static int found(void *ud, const struct yql_node *n)
{
	return 1;
}

int eng_wand_open(struct store_txn *txn, const struct eng_doctype *dt,
                  const struct eng_textset *ts, const struct yql_node *where,
                  struct eng_wandset **out, struct strata_error *err)
{
	*out = NULL;
	if (!yql_each(where, YQL_WEAKAND, found, NULL))
		return 0;
	struct eng_wandset *s = base_calloc(1, sizeof *s);
	if (!s)
		return base_nomem(err, "weakAnd");
	int rc = open_tree(txn, dt, ts, where, s, err);
	if (rc) {
		eng_wand_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void eng_wand_close(struct eng_wandset *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n; i++)
		if (s->w[i].lids)
			base_free(s->w[i].lids, s->w[i].cap * sizeof *s->w[i].lids);
	base_free(s, sizeof *s);
}

static const struct wand *find(const struct eng_wandset *s, const struct yql_node *n)
{
	for (int i = 0; s && i < s->n; i++)
		if (s->w[i].node == n)
			return &s->w[i];
	return NULL;
}

int eng_wand_match(const struct eng_wandset *s, const struct yql_node *n, uint32_t lid)
{
	const struct wand *wd = find(s, n);
	return wd && eng_lid_find(wd->lids, wd->n, lid) < wd->n;
}

/* ---- the weakAnd operator ------------------------------------------------------------- */

static int weakand_match(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	return eng_wand_match(m->wand, n, lid);
}

/* Its matches, found when the set opened. */
static int weakand_open(struct eng_match *m, const struct yql_node *n, struct eng_iter **out)
{
	const struct wand *wd = m->wand ? find(m->wand, n) : NULL;
	return eng_iter_give(m, eng_iter_array(wd ? wd->lids : NULL, wd ? wd->n : 0, NULL, 0), out);
}

const struct eng_op eng_op_weakand = { "weakAnd", 1, NULL, weakand_match, weakand_open };
