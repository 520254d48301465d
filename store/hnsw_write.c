/*
 * hnsw_write.c: inserting a node into a graph and removing one
 * (hnsw_insert, hnsw_remove), which hnsw_sync.c and hnsw_multi.c call for
 * the writes that change a document's value.
 *
 * A node's level is floor(-ln(u) / ln(M)) for u drawn from a hash of its
 * local id, so feeding the same documents in the same order builds the same
 * graph.  Every function here reads what it needs, then writes (hnsw.c:
 * no pointer into LMDB survives a write).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hnsw_int.h"

static uint32_t level_of(uint32_t lid, uint32_t m)
{
	uint64_t z = (uint64_t)lid + 0x9e3779b97f4a7c15ULL; /* splitmix64 */
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	double u = ((double)(z >> 11) + 1.0) * 0x1p-53; /* (0, 1] */
	double l = -log(u) / log((double)(m < 2 ? 2 : m));
	return l >= HNSW_MAX_LEVEL ? HNSW_MAX_LEVEL : (uint32_t)l;
}

static int has(const uint32_t *list, uint32_t n, uint32_t x)
{
	for (uint32_t i = 0; i < n; i++)
		if (list[i] == x)
			return 1;
	return 0;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct hnsw_cand *x = a, *y = b;
	if (x->d != y->d)
		return x->d < y->d ? -1 : 1;
	return x->lid < y->lid ? -1 : x->lid > y->lid;
}

/* The neighbour-selection heuristic over c[0..n) (distances to the base
 * node, nearest first by cand_cmp): keep a candidate unless it is nearer to one already
 * kept than to the base, at most max; with fill, the nearest of those left
 * out then fill the list up to max (an existing node keeps its degree:
 * every link it drops is dropped on the other side too).  The kept lids go
 * to out; returns their number, or a negative error.  self (the base) is
 * never kept. */
static int select_links(struct hnsw_graph *g, struct hnsw_cand *c, size_t n, uint32_t max,
                        uint32_t self, int fill, uint32_t *out)
{
	struct hnsw_scratch *s = g->s;
	int rc = hnsw_reserve(g, (void **)&s->vptr, &s->vpcap, max + 1, sizeof *s->vptr);
	if (rc)
		return rc;
	uint32_t kept = 0;
	for (size_t i = 0; i < n && kept < max; i++) {
		const void *v = c[i].lid == self ? NULL : hnsw_vec(g, c[i].lid);
		if (!v)
			continue;
		/* a candidate equal to one kept adds nothing (without this, a
		 * group of equal vectors links only within itself) */
		int good = 1;
		for (uint32_t j = 0; j < kept && good; j++)
			good = hnsw_pair(g, v, s->vptr[j]) >= c[i].d &&
			       memcmp(v, s->vptr[j], g->vbytes) != 0;
		if (good) {
			s->vptr[kept] = v;
			out[kept++] = c[i].lid;
		}
	}
	for (size_t i = 0; fill && i < n && kept < max; i++)
		if (c[i].lid != self && !has(out, kept, c[i].lid) && hnsw_vec(g, c[i].lid))
			out[kept++] = c[i].lid;
	return (int)kept;
}

static int put_node(struct hnsw_graph *g, uint32_t lid, const uint32_t *rec, size_t words)
{
	return hnsw_cache_put(g, lid, rec, words);
}

static int put_head(struct hnsw_graph *g, const struct hnsw_head *h)
{
	hnsw_cache_set_head(g, h);
	return 0;
}

/* Copy lid's record into s->rec (*level; *found 0 when lid is no node). */
static int copy_node(struct hnsw_graph *g, uint32_t lid, uint32_t *level, int *found)
{
	const void *rec;
	int rc = hnsw_node_get(g, lid, &rec, level);
	*found = rec != NULL;
	if (rc || !rec)
		return rc;
	size_t words = hnsw_rec_words(g, *level);
	if ((rc = hnsw_reserve(g, (void **)&g->s->rec, &g->s->reccap, words, 4)) != 0)
		return rc;
	memcpy(g->s->rec, rec, words * 4);
	return 0;
}

/* Add (add = 1) a link x -> y on level when x's list has room, or remove
 * it; *done = 1 when x's list has (add) or lacks (remove) the link after.
 * Works in s->rec2, so s->rec is left alone. */
static int edit_link(struct hnsw_graph *g, uint32_t x, uint32_t y, uint32_t level, int add,
                     int *done)
{
	struct hnsw_scratch *s = g->s;
	const void *rec;
	uint32_t lv;
	*done = !add;
	int rc = hnsw_node_get(g, x, &rec, &lv);
	if (rc || !rec || level > lv)
		return rc;
	size_t words = hnsw_rec_words(g, lv);
	if ((rc = hnsw_reserve(g, (void **)&s->rec2, &s->rec2cap, words, 4)) != 0)
		return rc;
	memcpy(s->rec2, rec, words * 4);
	uint32_t *list = s->rec2 + hnsw_list_off(g, level), cnt = list[0], at = cnt;
	for (uint32_t i = 0; i < cnt; i++)
		if (list[1 + i] == y)
			at = i;
	*done = 1;
	if (add ? at < cnt : at == cnt)
		return 0;
	if (add && cnt >= hnsw_cap(g, level)) {
		*done = 0;
		return 0;
	}
	if (add)
		list[1 + cnt] = y;
	else
		list[1 + at] = list[cnt];
	list[0] = add ? cnt + 1 : cnt - 1;
	return put_node(g, x, s->rec2, words);
}

/* Give nb's list on level (nb's record in s->rec, level lv) the links
 * chosen from cand[0..n) (distances to nb) and write it, keeping links
 * symmetric: a link nb gains is added on the other side too (when that
 * side is full, nb does without it); a link nb loses is removed on the
 * other side. */
static int relink(struct hnsw_graph *g, uint32_t nb, uint32_t lv, uint32_t level,
                  struct hnsw_cand *cand, size_t n)
{
	uint32_t *list = g->s->rec + hnsw_list_off(g, level);
	uint32_t old[2 * HNSW_MAX_M], chosen[2 * HNSW_MAX_M], nold = list[0];
	memcpy(old, list + 1, nold * sizeof *old);
	qsort(cand, n, sizeof *cand, cand_cmp);
	int kept = select_links(g, cand, n, hnsw_cap(g, level), nb, 1, chosen);
	if (kept < 0)
		return kept;
	uint32_t cnt = 0;
	int rc = 0, done;
	for (int i = 0; i < kept && !rc; i++) {
		if (!has(old, nold, chosen[i]) &&
		    ((rc = edit_link(g, chosen[i], nb, level, 1, &done)) != 0 || !done))
			continue;
		list[1 + cnt++] = chosen[i];
	}
	for (uint32_t i = 0; i < nold && !rc; i++)
		if (!has(list + 1, cnt, old[i]))
			rc = edit_link(g, old[i], nb, level, 0, &done);
	if (rc)
		return rc;
	list[0] = cnt;
	return put_node(g, nb, g->s->rec, hnsw_rec_words(g, lv));
}

/* Add the link nb -> lid on level, lid already linking to nb; a full list
 * is pruned by the heuristic, and when lid does not make the cut, lid
 * drops its link to nb. */
static int link_back(struct hnsw_graph *g, uint32_t nb, uint32_t lid, uint32_t level)
{
	uint32_t lv;
	int found, rc = copy_node(g, nb, &lv, &found);
	if (rc || !found || level > lv)
		return rc;
	uint32_t *list = g->s->rec + hnsw_list_off(g, level);
	uint32_t cnt = list[0], cap = hnsw_cap(g, level);
	if (has(list + 1, cnt, lid))
		return 0;
	if (cnt < cap) {
		list[1 + cnt] = lid;
		list[0] = cnt + 1;
		return put_node(g, nb, g->s->rec, hnsw_rec_words(g, lv));
	}
	const void *base = hnsw_vec(g, nb);
	struct hnsw_scratch *s = g->s;
	if ((rc = hnsw_reserve(g, (void **)&s->sel, &s->selcap, cnt + 1, sizeof *s->sel)) != 0)
		return rc;
	size_t n = 0;
	for (uint32_t i = 0; i <= cnt && base; i++) {
		uint32_t x = i < cnt ? list[1 + i] : lid;
		if (hnsw_dist_to(g, base, x, &s->sel[n].d) == 0)
			s->sel[n++].lid = x;
	}
	if ((rc = relink(g, nb, lv, level, s->sel, n)) != 0)
		return rc;
	if (has(list + 1, list[0], lid))
		return 0;
	return edit_link(g, lid, nb, level, 0, &found);
}

int hnsw_insert(struct hnsw_graph *g, uint32_t lid)
{
	struct hnsw_scratch *s = g->s;
	const void *q = s->q;
	uint32_t level = level_of(lid, g->m);
	struct hnsw_head h;
	int rc = hnsw_head_get(g, &h);
	if (rc)
		return rc;
	size_t words = hnsw_rec_words(g, level);
	if ((rc = hnsw_reserve(g, (void **)&s->lists, &s->lcap, words, 4)) != 0)
		return rc;
	uint32_t *rec = s->lists;
	memset(rec, 0, words * 4);
	rec[0] = level;
	if (g->mips) {
		double n2 = -g->f->dist(q, q, g->n);
		h.max_norm2 = g->max_norm2 = n2 > h.max_norm2 ? n2 : h.max_norm2;
	}
	if (!h.count) {
		struct hnsw_head nh = {lid, level, 1, h.max_norm2};
		if ((rc = put_node(g, lid, rec, words)) != 0)
			return rc;
		return put_head(g, &nh);
	}
	struct hnsw_cand ep = {0, h.entry};
	if (hnsw_dist_to(g, q, h.entry, &ep.d) != 0)
		return base_err(g->err, STRATA_CORRUPT,
		                "document type '%s', field '%s': the graph's entry point %u has no value",
		                g->dt->name, g->f->name, h.entry);
	for (uint32_t l = h.level; l > level; l--)
		if ((rc = hnsw_greedy(g, q, &ep, l)) != 0)
			return rc;
	uint32_t top = level < h.level ? level : h.level;
	for (uint32_t l = top + 1; l-- > 0;) {
		if ((rc = hnsw_search_layer(g, q, ep, g->efc, l)) != 0)
			return rc;
		hnsw_sort_results(s); /* nearest first, as select_links wants */
		if (s->nres)
			ep = s->res[0];
		uint32_t *list = rec + hnsw_list_off(g, l);
		/* a stale link may lead the search to lid itself */
		int kept = select_links(g, s->res, s->nres, g->m, lid, 0, list + 1);
		if (kept < 0)
			return kept;
		list[0] = (uint32_t)kept;
	}
	if ((rc = put_node(g, lid, rec, words)) != 0)
		return rc;
	/* rec is s->lists, which link_back leaves alone */
	for (uint32_t l = 0; l <= top; l++) {
		const uint32_t *list = rec + hnsw_list_off(g, l);
		for (uint32_t i = 0; i < list[0]; i++)
			if ((rc = link_back(g, list[1 + i], lid, l)) != 0)
				return rc;
	}
	h.count++;
	if (level > h.level) {
		h.level = level;
		h.entry = lid;
	}
	return put_head(g, &h);
}

/* After removing lid (its record in s->old, level lv): nb drops its link to
 * lid on level and is offered lid's neighbours there instead. */
static int repair(struct hnsw_graph *g, uint32_t nb, uint32_t lid, uint32_t level,
                  const uint32_t *old)
{
	uint32_t lv;
	int found, rc = copy_node(g, nb, &lv, &found);
	if (rc || !found || level > lv)
		return rc;
	uint32_t *list = g->s->rec + hnsw_list_off(g, level);
	uint32_t cnt = list[0], at = cnt;
	for (uint32_t i = 0; i < cnt; i++)
		if (list[1 + i] == lid)
			at = i;
	if (at == cnt)
		return 0;
	list[1 + at] = list[cnt];
	list[0] = --cnt;
	/* The free slots go to lid's other neighbours, nearest first, where
	 * they have room too; the links nb has stay. */
	const void *base = hnsw_vec(g, nb);
	struct hnsw_scratch *s = g->s;
	if ((rc = hnsw_reserve(g, (void **)&s->sel, &s->selcap, old[0] + 1, sizeof *s->sel)) != 0)
		return rc;
	size_t n = 0;
	for (uint32_t i = 0; i < old[0] && base; i++) {
		uint32_t x = old[1 + i];
		if (x != nb && !has(list + 1, cnt, x) && hnsw_dist_to(g, base, x, &s->sel[n].d) == 0)
			s->sel[n++].lid = x;
	}
	qsort(s->sel, n, sizeof *s->sel, cand_cmp);
	for (size_t i = 0; i < n && list[0] < hnsw_cap(g, level) && !rc; i++) {
		int done;
		if ((rc = edit_link(g, s->sel[i].lid, nb, level, 1, &done)) == 0 && done)
			list[1 + list[0]++] = s->sel[i].lid;
	}
	return rc ? rc : put_node(g, nb, s->rec, hnsw_rec_words(g, lv));
}

/* A node of the graph other than lid on the highest level found, from
 * lid's old lists first, else any node: *entry, *level; *found 0 if none. */
static int new_entry(struct hnsw_graph *g, uint32_t lid, uint32_t lv, const uint32_t *old,
                     uint32_t *entry, uint32_t *level, int *found)
{
	*found = 0;
	for (uint32_t l = lv + 1; l-- > 0 && !*found;) {
		const uint32_t *list = old + hnsw_list_off(g, l);
		for (uint32_t i = 0; i < list[0]; i++) {
			const void *rec;
			uint32_t nl;
			int rc = hnsw_node_get(g, list[1 + i], &rec, &nl);
			if (rc)
				return rc;
			if (rec && (!*found || nl > *level)) {
				*entry = list[1 + i];
				*level = nl;
				*found = 1;
			}
		}
	}
	if (*found)
		return 0;
	/* lid was linked to nothing alive: take the node of the highest level
	 * (the cursor reads the store: the changes so far go there first) */
	MDB_cursor *c;
	int rc = hnsw_cache_flush(g->s, g->err);
	if (rc)
		return rc;
	rc = mdb_cursor_open(g->txn, g->dt->hnsw, &c);
	if (rc)
		return store_mdb_err(g->err, rc, "reading the nearest-neighbour graph");
	uint8_t key[6];
	hnsw_node_key(g, 0, key);
	MDB_val k = {sizeof key, key}, v;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		const uint8_t *kb = k.mv_data;
		if (k.mv_size < 2 || kb[0] != key[0] || kb[1] != key[1])
			break;
		if (k.mv_size != 6) /* a multi-vector graph's other keys */
			continue;
		uint32_t x = (uint32_t)kb[2] << 24 | (uint32_t)kb[3] << 16 | (uint32_t)kb[4] << 8 | kb[5];
		uint32_t nl = v.mv_size >= 4 ? hnsw_rd(v.mv_data, 0) : 0;
		if (x != lid && (!*found || nl > *level)) {
			*entry = x;
			*level = nl;
			*found = 1;
		}
	}
	mdb_cursor_close(c);
	return rc == 0 || rc == MDB_NOTFOUND ? 0
	                                     : store_mdb_err(g->err, rc, "reading the graph");
}

int hnsw_remove(struct hnsw_graph *g, uint32_t lid)
{
	struct hnsw_scratch *s = g->s;
	const void *rec;
	uint32_t lv;
	int rc = hnsw_node_get(g, lid, &rec, &lv);
	if (rc || !rec)
		return rc;
	size_t words = hnsw_rec_words(g, lv);
	if ((rc = hnsw_reserve(g, (void **)&s->old, &s->oldcap, words, 4)) != 0)
		return rc;
	memcpy(s->old, rec, words * 4);
	struct hnsw_head h;
	if ((rc = hnsw_head_get(g, &h)) != 0)
		return rc;
	g->max_norm2 = h.max_norm2;
	if ((rc = hnsw_cache_del(g, lid)) != 0)
		return rc;
	for (uint32_t l = 0; l <= lv; l++) {
		const uint32_t *list = s->old + hnsw_list_off(g, l);
		for (uint32_t i = 0; i < list[0]; i++)
			if ((rc = repair(g, list[1 + i], lid, l, list)) != 0)
				return rc;
	}
	if (!h.count)
		return base_err(g->err, STRATA_CORRUPT,
		                "document type '%s', field '%s': a graph node but no head", g->dt->name,
		                g->f->name);
	h.count--;
	if (h.entry == lid && h.count) {
		int found;
		if ((rc = new_entry(g, lid, lv, s->old, &h.entry, &h.level, &found)) != 0)
			return rc;
		if (!found)
			h.count = 0;
	}
	return put_head(g, &h);
}
