/*
 * iter.c: iterators over documents in increasing local id order, the
 * building blocks the operators' open functions return: a sorted array
 * (a nearestNeighbor or weakAnd set, a dictionary's documents), posting
 * lists (all of them: a phrase's words; any: a prefix's expansions), and
 * the and / or of other iterators.  An and seeks its operands to the
 * document of the one with the fewest (leapfrogging), so it costs what
 * its rarest operand costs; an or merges.
 */
#include "../engine_int.h"

void eng_iter_close(struct eng_iter *it)
{
	if (it)
		it->close(it);
}

int eng_iter_give(struct eng_match *m, struct eng_iter *it, struct eng_iter **out)
{
	*out = it;
	return it ? 0 : base_nomem(m->err, "an iterator");
}

/* ---- a sorted array ---------------------------------------------------------------- */

struct arr {
	struct eng_iter it;
	const uint32_t *v;
	size_t n, at;
	uint32_t *own;
	size_t cap;
};

static int arr_seek(struct eng_iter *it, uint32_t *lid)
{
	struct arr *a = (struct arr *)it;
	/* gallop from where it is, then halve */
	size_t lo = a->at, step = 1, hi;
	while (lo + step < a->n && a->v[lo + step] < *lid)
		lo += step, step *= 2;
	hi = lo + step < a->n ? lo + step : a->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a->v[mid] < *lid)
			lo = mid + 1;
		else
			hi = mid;
	}
	a->at = lo;
	if (lo == a->n)
		return STRATA_NOT_FOUND;
	*lid = a->v[lo];
	return 0;
}

static void arr_close(struct eng_iter *it)
{
	struct arr *a = (struct arr *)it;
	base_free(a->own, a->cap * sizeof *a->own);
	base_free(a, sizeof *a);
}

struct eng_iter *eng_iter_array(const uint32_t *lids, size_t n, uint32_t *own, size_t cap)
{
	struct arr *a = base_calloc(1, sizeof *a);
	if (!a) {
		base_free(own, cap * sizeof *own);
		return NULL;
	}
	a->it.seek = arr_seek;
	a->it.close = arr_close;
	a->it.est = n;
	a->v = lids;
	a->n = n;
	a->own = own;
	a->cap = cap;
	return &a->it;
}

/* ---- and, or of iterators ------------------------------------------------------------ */

struct group {
	struct eng_iter it;
	int any, n, cap, primed;   /* primed: every kid sought once */
	uint32_t *cur;             /* or: each kid's document (UINT32_MAX: ended) */
	struct eng_iter *kids[];   /* and: the lowest estimate first */
};

static int and_seek(struct eng_iter *it, uint32_t *lid)
{
	struct group *g = (struct group *)it;
	uint32_t want = *lid;
	int agree = 0, i = 0;
	while (agree < g->n) { /* until every kid is on want */
		uint32_t at = want;
		int rc = g->kids[i]->seek(g->kids[i], &at);
		if (rc)
			return rc;
		if (at == want) {
			agree++;
		} else {
			want = at;
			agree = 1;
		}
		i = (i + 1) % g->n;
	}
	*lid = want;
	return 0;
}

static int or_seek(struct eng_iter *it, uint32_t *lid)
{
	struct group *g = (struct group *)it;
	uint32_t best = UINT32_MAX;
	int found = 0;
	for (int i = 0; i < g->n; i++) {
		if (g->primed && g->cur[i] == UINT32_MAX)
			continue;
		if (!g->primed || g->cur[i] < *lid) {
			uint32_t at = *lid;
			int rc = g->kids[i]->seek(g->kids[i], &at);
			if (rc == STRATA_NOT_FOUND) {
				g->cur[i] = UINT32_MAX;
				continue;
			}
			if (rc)
				return rc;
			g->cur[i] = at;
		}
		if (g->cur[i] < best)
			best = g->cur[i];
		found = 1;
	}
	g->primed = 1;
	if (!found)
		return STRATA_NOT_FOUND;
	*lid = best;
	return 0;
}

static void group_close(struct eng_iter *it)
{
	struct group *g = (struct group *)it;
	for (int i = 0; i < g->n; i++)
		eng_iter_close(g->kids[i]);
	base_free(g->cur, (size_t)g->cap * sizeof *g->cur);
	base_free(g, sizeof *g + (size_t)g->cap * sizeof g->kids[0]);
}

/* An and (any 0) or or of up to cap kids, none yet; NULL when memory runs out. */
static struct group *group_new(int cap, int any)
{
	struct group *g = base_calloc(1, sizeof *g + (size_t)cap * sizeof g->kids[0]);
	if (!g)
		return NULL;
	if (any && !(g->cur = base_alloc((size_t)cap * sizeof *g->cur))) {
		base_free(g, sizeof *g + (size_t)cap * sizeof g->kids[0]);
		return NULL;
	}
	g->any = any;
	g->cap = cap;
	g->it.seek = any ? or_seek : and_seek;
	g->it.close = group_close;
	g->it.est = any ? 0 : UINT64_MAX;
	return g;
}

/* Take kid into g: an and keeps its kids by estimate, the lowest first. */
static void group_add(struct group *g, struct eng_iter *kid)
{
	int at = g->n++;
	if (!g->any)
		while (at > 0 && g->kids[at - 1]->est > kid->est) {
			g->kids[at] = g->kids[at - 1];
			at--;
		}
	g->kids[at] = kid;
	if (!g->any)
		g->it.est = kid->est < g->it.est ? kid->est : g->it.est;
	else
		g->it.est = g->it.est + kid->est < g->it.est ? UINT64_MAX : g->it.est + kid->est;
}

static struct eng_iter *group(struct eng_iter **kids, int n, int any)
{
	if (n == 1)
		return kids[0]; /* itself */
	if (n == 0)
		return eng_iter_array(NULL, 0, NULL, 0);
	struct group *g = group_new(n, any);
	for (int i = 0; i < n; i++)
		if (g)
			group_add(g, kids[i]);
		else
			eng_iter_close(kids[i]);
	return g ? &g->it : NULL;
}

struct eng_iter *eng_iter_and(struct eng_iter **kids, int n)
{
	return group(kids, n, 0);
}

struct eng_iter *eng_iter_or(struct eng_iter **kids, int n)
{
	return group(kids, n, 1);
}

/* ---- posting lists ------------------------------------------------------------------ */

/* One list, borrowed. */
struct list {
	struct eng_iter it;
	struct store_postings *p;
};

static int list_seek(struct eng_iter *it, uint32_t *lid)
{
	return store_postings_seek(((struct list *)it)->p, lid);
}

static void list_close(struct eng_iter *it)
{
	base_free(it, sizeof(struct list));
}

static struct eng_iter *list_new(struct store_postings *p)
{
	struct list *l = base_calloc(1, sizeof *l);
	if (!l)
		return NULL;
	l->it.seek = list_seek;
	l->it.close = list_close;
	l->it.est = store_postings_df(p);
	l->p = p;
	return &l->it;
}

struct eng_iter *eng_iter_postings(struct store_postings *const *pl, int n, int any)
{
	if (n <= 1) /* no list: no document; one: itself */
		return n ? list_new(pl[0]) : eng_iter_array(NULL, 0, NULL, 0);
	struct group *g = group_new(n, any);
	for (int i = 0; g && i < n; i++) {
		struct eng_iter *l = list_new(pl[i]);
		if (!l) {
			group_close(&g->it);
			return NULL;
		}
		group_add(g, l);
	}
	return g ? &g->it : NULL;
}
