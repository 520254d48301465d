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

/* ---- posting lists ------------------------------------------------------------------ */

struct post {
	struct eng_iter it;
	int n, any, primed;            /* primed: every list sought once */
	uint32_t *cur;                 /* any: each list's document (UINT32_MAX: ended) */
	struct store_postings *pl[];   /* and: the rarest first */
};

static int post_and_seek(struct eng_iter *it, uint32_t *lid)
{
	struct post *p = (struct post *)it;
	uint32_t want = *lid;
	int agree = 0, i = 0;
	while (agree < p->n) { /* until every list is on want */
		uint32_t at = want;
		int rc = store_postings_seek(p->pl[i], &at);
		if (rc)
			return rc;
		if (at == want) {
			agree++;
		} else {
			want = at;
			agree = 1;
		}
		i = (i + 1) % p->n;
	}
	*lid = want;
	return 0;
}

static int post_any_seek(struct eng_iter *it, uint32_t *lid)
{
	struct post *p = (struct post *)it;
	uint32_t best = UINT32_MAX;
	int found = 0;
	for (int i = 0; i < p->n; i++) {
		if (p->primed && p->cur[i] == UINT32_MAX)
			continue; /* ended */
		if (!p->primed || p->cur[i] < *lid) {
			uint32_t at = *lid;
			int rc = store_postings_seek(p->pl[i], &at);
			if (rc == STRATA_NOT_FOUND) {
				p->cur[i] = UINT32_MAX;
				continue;
			}
			if (rc)
				return rc;
			p->cur[i] = at;
		}
		if (p->cur[i] < best)
			best = p->cur[i];
		found = 1;
	}
	p->primed = 1;
	if (!found)
		return STRATA_NOT_FOUND;
	*lid = best;
	return 0;
}

static void post_close(struct eng_iter *it)
{
	struct post *p = (struct post *)it;
	base_free(p->cur, (size_t)p->n * sizeof *p->cur);
	base_free(p, sizeof *p + (size_t)p->n * sizeof p->pl[0]);
}

struct eng_iter *eng_iter_postings(struct store_postings *const *pl, int n, int any)
{
	struct post *p = base_calloc(1, sizeof *p + (size_t)n * sizeof p->pl[0]);
	if (!p)
		return NULL;
	p->n = n;
	p->any = any;
	p->it.seek = any ? post_any_seek : post_and_seek;
	p->it.close = post_close;
	p->it.est = any ? 0 : UINT64_MAX;
	for (int i = 0; i < n; i++) {
		uint64_t df = store_postings_df(pl[i]);
		int at = i;
		if (!any) /* the rarest first: it leads */
			while (at > 0 && store_postings_df(p->pl[at - 1]) > df) {
				p->pl[at] = p->pl[at - 1];
				at--;
			}
		p->pl[at] = pl[i];
		p->it.est = any ? p->it.est + df : (df < p->it.est ? df : p->it.est);
	}
	if (!n)
		p->it.est = 0;
	if (any) {
		if (!(p->cur = base_alloc((size_t)n * sizeof *p->cur))) {
			base_free(p, sizeof *p + (size_t)n * sizeof p->pl[0]);
			return NULL;
		}
	}
	if (!any && !n) { /* no list: no document */
		post_close(&p->it);
		return eng_iter_array(NULL, 0, NULL, 0);
	}
	return &p->it;
}

/* ---- and, or of iterators ------------------------------------------------------------ */

struct group {
	struct eng_iter it;
	int n, primed;             /* primed: every kid sought once */
	uint32_t *cur;             /* or: each kid's document (UINT32_MAX: ended) */
	struct eng_iter *kids[];   /* and: the lowest estimate first */
};

static int and_seek(struct eng_iter *it, uint32_t *lid)
{
	struct group *g = (struct group *)it;
	uint32_t want = *lid;
	int agree = 0, i = 0;
	while (agree < g->n) {
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
	base_free(g->cur, (size_t)g->n * sizeof *g->cur);
	base_free(g, sizeof *g + (size_t)g->n * sizeof g->kids[0]);
}

static struct eng_iter *group(struct eng_iter **kids, int n, int any)
{
	struct group *g = base_calloc(1, sizeof *g + (size_t)n * sizeof g->kids[0]);
	uint32_t *cur = g && any ? base_alloc((size_t)n * sizeof *cur) : NULL;
	if (!g || (any && !cur)) {
		base_free(g, sizeof *g + (size_t)n * sizeof g->kids[0]);
		for (int i = 0; i < n; i++)
			eng_iter_close(kids[i]);
		return NULL;
	}
	g->n = n;
	g->cur = cur;
	g->it.seek = any ? or_seek : and_seek;
	g->it.close = group_close;
	g->it.est = any ? 0 : UINT64_MAX;
	for (int i = 0; i < n; i++) {
		int at = i;
		if (!any)
			while (at > 0 && g->kids[at - 1]->est > kids[i]->est) {
				g->kids[at] = g->kids[at - 1];
				at--;
			}
		g->kids[at] = kids[i];
		if (any)
			g->it.est = g->it.est + kids[i]->est < g->it.est ? UINT64_MAX
			                                                 : g->it.est + kids[i]->est;
		else if (kids[i]->est < g->it.est)
			g->it.est = kids[i]->est;
	}
	return &g->it;
}

struct eng_iter *eng_iter_and(struct eng_iter **kids, int n)
{
	return group(kids, n, 0);
}

struct eng_iter *eng_iter_or(struct eng_iter **kids, int n)
{
	return group(kids, n, 1);
}
