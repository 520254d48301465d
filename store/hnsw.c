/*
 * hnsw.c: the nearest-neighbour graphs of tensor fields (HNSW), searched
 * straight from the memory map and kept in the doctype's "hnsw" DB.
 *
 * A graph has a head (key: field number, u16 big-endian) holding the entry
 * point, the top level and the node count, and one record per node (key:
 * field number, local id, u32 big-endian), u32 words in host order:
 *     level, then for each level l = 0..level: count, cap(l) link slots
 * where cap(0) = 2M and cap(l > 0) = M.  The record has a fixed size for
 * its level, so a neighbour list is found by arithmetic.  LMDB aligns
 * values on 2 bytes only, so words are read with memcpy.
 *
 * A search may explore further than the paper's (store_hnsw_params): with
 * slack it follows candidates somewhat beyond the worst kept (Vespa's
 * adaptive beam search), and filter-first it computes distances only to
 * nodes the filter passes, found up to three hops away (ACORN-1, as Vespa's
 * filter-first-threshold does).
 *
 * Writes (hnsw_write.c) follow Malkov and Yashunin: an insert descends
 * greedily to the node's level, then on each level below keeps the best ef
 * candidates (search_layer) and links to M of them chosen by the
 * neighbour-selection heuristic, and each new neighbour links back,
 * pruning its list with the same heuristic when it is full.  A removed
 * node's neighbours drop their link to it and are offered its neighbours
 * instead.
 *
 * Invariants: links are symmetric (a links to b on level l exactly when b
 * links to a there; a link dropped on one side is dropped on the other),
 * so a removed node leaves no link behind, and every node a link reaches
 * has a value (store_hnsw_check verifies both).  No pointer into LMDB is
 * held across a write (a write may move or spill the pages of the running
 * transaction): every update reads, computes, then writes.  The exceptions
 * are pointers into the memory map, which a write never moves or
 * overwrites: the column blocks a scratch keeps (doc.c's column writes
 * are followed by store_hnsw_sync_doc for the document and hnsw_multi.c's
 * by hnsw_forget_block, which forget the block), the records a write transaction keeps (hnsw_cache.c:
 * the graph's DB is written only when they are dropped) and a snapshot's
 * table (hnsw_snap.c: read transactions only).
 *
 * A search reads the node records and column blocks through its snapshot's
 * table when it can have one, so that the engine's queries, each in its own
 * read transaction, do not each look up the same records and blocks again.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hnsw_int.h"

/* ---- records ------------------------------------------------------------------------ */

int hnsw_node_get(struct hnsw_graph *g, uint32_t lid, const void **rec, uint32_t *level)
{
	if (g->snap)
		return hnsw_snap_node(g, lid, rec, level);
	if (g->s && g->s->cache)
		return hnsw_cache_node(g, lid, rec, level);
	return hnsw_node_read(g, lid, rec, level);
}

int hnsw_head_get(struct hnsw_graph *g, struct hnsw_head *h)
{
	if (g->s && g->s->cache)
		return hnsw_cache_head(g, h);
	return hnsw_head_read(g, h);
}

/* ---- distances -------------------------------------------------------------------- */

/* Room in s->blocks for block: the entries, all unknown, at twice the
 * size (nothing changes without memory: blocks share entries). */
static void blocks_grow(struct hnsw_scratch *s, uint32_t block)
{
	size_t n = s->nblk;
	while (n <= block && n < HNSW_BLOCK_CACHE_MAX)
		n *= 2;
	struct hnsw_block *p = n > s->nblk ? base_calloc(n, sizeof *p) : NULL;
	if (!p)
		return;
	base_free(s->blocks, s->nblk * sizeof *s->blocks);
	s->blocks = p;
	s->nblk = n;
}

/* A search or an insert looks up many vectors of the same column blocks:
 * it keeps them (s->blocks, which must exist). */
static const uint8_t *cached_block(struct hnsw_graph *g, uint32_t block)
{
	struct hnsw_scratch *s = g->s;
	if (block >= s->nblk && s->nblk < HNSW_BLOCK_CACHE_MAX)
		blocks_grow(s, block);
	struct hnsw_block *e = &s->blocks[block & (s->nblk - 1)];
	if (e->block != block || e->epoch != s->epoch || (e->gen != s->gen && !e->mapped)) {
		e->p = store_col_block(g->stx, g->dt, g->sf, block);
		e->block = block;
		e->gen = s->gen;
		e->epoch = s->epoch;
		e->mapped = store_in_map(g->stx->env, e->p);
	}
	return e->p;
}

/* A column block: through the snapshot's table, the scratch's cache, or
 * looked up. */
static const uint8_t *block_of(struct hnsw_graph *g, uint32_t block)
{
	if (g->snap)
		return hnsw_snap_block(g, block);
	if (g->s && g->s->blocks)
		return cached_block(g, block);
	return store_col_block(g->stx, g->dt, g->sf, block);
}

const void *hnsw_vec(struct hnsw_graph *g, uint32_t lid)
{
	const uint8_t *b = block_of(g, lid >> g->f->block_shift);
	return b ? store_col_cell(g->f, b, lid) : NULL;
}

/* The vector of a node reached by a link: by the graph's invariant it has a
 * value, so the presence bit (another cache line) is not read. */
static const void *linked_vec(struct hnsw_graph *g, uint32_t lid)
{
	const uint8_t *b = block_of(g, lid >> g->f->block_shift);
	if (!b)
		return NULL;
	uint32_t slot = lid & ((1u << g->f->block_shift) - 1);
	return b + g->f->bitmap_bytes + (size_t)slot * g->f->cell_bytes;
}

void hnsw_forget(struct hnsw_graph *g)
{
	if (g->s)
		hnsw_scratch_forget(g->s);
}

void hnsw_forget_block(struct hnsw_graph *g, uint32_t lid)
{
	uint32_t block = lid >> g->f->block_shift;
	if (g->s && g->s->blocks)
		g->s->blocks[block & (g->s->nblk - 1)].epoch = 0;
}

double hnsw_pair(const struct hnsw_graph *g, const void *a, const void *b)
{
	double d = g->f->dist(a, b, g->n);
	if (!g->mips)
		return d;
	double aa = -g->f->dist(a, a, g->n), bb = -g->f->dist(b, b, g->n);
	double m = g->max_norm2 > aa ? g->max_norm2 : aa;
	m = m > bb ? m : bb;
	double ea = sqrt(m - aa), eb = sqrt(m - bb);
	return aa + bb + 2 * d + (ea - eb) * (ea - eb); /* d is -a.b */
}

int hnsw_dist_to(struct hnsw_graph *g, const void *q, uint32_t lid, double *d)
{
	const void *v = hnsw_vec(g, lid);
	if (!v)
		return -1;
	*d = hnsw_pair(g, q, v);
	return 0;
}

/* ---- scratch: heaps and the visited set ------------------------------------------- */

static int grow(struct hnsw_graph *g, void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	int rc = base_grow(p, cap, need, elem, (size_t)1 << 32);
	if (rc == STRATA_NOMEM)
		return base_nomem(g->err, "nearest-neighbour search");
	return rc ? base_err(g->err, rc, "nearest-neighbour search: too many candidates") : 0;
}

int hnsw_reserve(struct hnsw_graph *g, void **p, size_t *cap, size_t need, size_t elem)
{
	return grow(g, p, cap, need, elem);
}

static int before(struct hnsw_cand a, struct hnsw_cand b)
{
	return a.d < b.d || (a.d == b.d && a.lid < b.lid);
}

/* Heaps over struct hnsw_cand: max = 1 keeps the farthest on top. */
static void heap_up(struct hnsw_cand *h, size_t i, int max)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (max ? !before(h[p], h[i]) : !before(h[i], h[p]))
			break;
		struct hnsw_cand t = h[p];
		h[p] = h[i];
		h[i] = t;
		i = p;
	}
}

static void heap_down(struct hnsw_cand *h, size_t n, size_t i, int max)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, b = i;
		if (l < n && (max ? before(h[b], h[l]) : before(h[l], h[b])))
			b = l;
		if (r < n && (max ? before(h[b], h[r]) : before(h[r], h[b])))
			b = r;
		if (b == i)
			return;
		struct hnsw_cand t = h[b];
		h[b] = h[i];
		h[i] = t;
		i = b;
	}
}

static int heap_push(struct hnsw_graph *g, struct hnsw_cand **h, size_t *cap, size_t *n,
                     struct hnsw_cand c, int max)
{
	int rc = grow(g, (void **)h, cap, *n + 1, sizeof **h);
	if (rc)
		return rc;
	(*h)[(*n)++] = c;
	heap_up(*h, *n - 1, max);
	return 0;
}

static struct hnsw_cand heap_pop(struct hnsw_cand *h, size_t *n, int max)
{
	struct hnsw_cand top = h[0];
	h[0] = h[--*n];
	heap_down(h, *n, 0, max);
	return top;
}

void hnsw_visited_clear(struct hnsw_scratch *s)
{
	if (s->vhi)
		memset(s->vbits, 0, s->vhi * sizeof *s->vbits);
	s->vhi = 0;
}

/* The visited set is a bitmap over the node ids (local ids, or a
 * multi-vector graph's own, then its documents' local ids): one bit test
 * per link, and clearing costs the words up to the highest one touched.
 * Grow it to hold word w. */
static int visited_grow(struct hnsw_graph *g, size_t w)
{
	struct hnsw_scratch *s = g->s;
	size_t ncap = s->vwords ? s->vwords : 64;
	while (ncap <= w)
		ncap *= 2;
	uint64_t *nb = base_realloc(s->vbits, s->vwords * sizeof *nb, ncap * sizeof *nb);
	if (!nb)
		return base_nomem(g->err, "nearest-neighbour search");
	memset(nb + s->vwords, 0, (ncap - s->vwords) * sizeof *nb);
	s->vbits = nb;
	s->vwords = ncap;
	return 0;
}

int hnsw_visited_reserve(struct hnsw_graph *g, uint32_t n)
{
	return n ? visited_grow(g, (n - 1) >> 6) : 0;
}

int hnsw_visit(struct hnsw_graph *g, uint32_t lid)
{
	struct hnsw_scratch *s = g->s;
	size_t w = lid >> 6;
	if (w >= s->vwords) {
		int rc = visited_grow(g, w);
		if (rc)
			return rc;
	}
	uint64_t bit = (uint64_t)1 << (lid & 63);
	if (s->vbits[w] & bit)
		return 0;
	s->vbits[w] |= bit;
	if (w >= s->vhi)
		s->vhi = w + 1;
	return 1;
}

void hnsw_scratch_release(struct hnsw_scratch *s)
{
	base_free(s->vbits, s->vwords * sizeof *s->vbits);
	base_free(s->cand, s->ccap * sizeof *s->cand);
	base_free(s->res, s->rcap * sizeof *s->res);
	base_free(s->sel, s->selcap * sizeof *s->sel);
	base_free(s->q, s->qcap);
	base_free(s->rec, s->reccap * sizeof *s->rec);
	base_free(s->rec2, s->rec2cap * sizeof *s->rec2);
	base_free(s->old, s->oldcap * sizeof *s->old);
	base_free(s->lists, s->lcap * sizeof *s->lists);
	base_free(s->hood, s->hcap * sizeof *s->hood);
	base_free(s->found, s->fcap * sizeof *s->found);
	base_free(s->vptr, s->vpcap * sizeof *s->vptr);
	base_free(s->blocks, s->nblk * sizeof *s->blocks);
	hnsw_cache_free(s);
	memset(s, 0, sizeof *s);
}

uint32_t hnsw_node_doc(struct hnsw_graph *g, uint32_t node)
{
	const uint8_t *v = hnsw_vec(g, node);
	uint32_t lid = UINT32_MAX;
	if (v)
		memcpy(&lid, v + g->lid_off, 4);
	return lid;
}

static int passes(struct hnsw_graph *g, uint32_t node)
{
	if (!g->filter)
		return 1;
	uint32_t lid = g->multi ? hnsw_node_doc(g, node) : node;
	return lid < g->nbits && (g->filter[lid >> 6] >> (lid & 63)) & 1;
}

/* ---- searching ------------------------------------------------------------------------ */

int hnsw_greedy(struct hnsw_graph *g, const void *q, struct hnsw_cand *ep, uint32_t level)
{
	for (int moved = 1; moved;) {
		moved = 0;
		const void *rec;
		uint32_t lv;
		int rc = hnsw_node_get(g, ep->lid, &rec, &lv);
		if (rc || !rec || level > lv)
			return rc;
		size_t off = hnsw_list_off(g, level);
		uint32_t cnt = hnsw_rd(rec, off);
		for (uint32_t i = 0; i < cnt && i < hnsw_cap(g, level); i++) {
			uint32_t nb = hnsw_rd(rec, off + 1 + i);
			double d;
			if (hnsw_dist_to(g, q, nb, &d) == 0 && d < ep->d) {
				ep->d = d;
				ep->lid = nb;
				moved = 1;
			}
		}
	}
	return 0;
}

/* The distance up to which a search follows candidates when the worst of
 * those it keeps is at worst (exploration slack). */
static double beyond(const struct hnsw_graph *g, double worst)
{
	return worst + g->slack * fabs(worst);
}

/* Mark node's unvisited neighbours on level visited and append them to
 * ids (*n of them). */
static int unvisited(struct hnsw_graph *g, uint32_t node, uint32_t level, uint32_t *ids,
                     uint32_t *n, size_t max)
{
	const void *rec;
	uint32_t lv;
	int rc = hnsw_node_get(g, node, &rec, &lv);
	if (rc || !rec || level > lv)
		return rc;
	size_t off = hnsw_list_off(g, level);
	uint32_t cnt = hnsw_rd(rec, off);
	for (uint32_t i = 0; i < cnt && i < hnsw_cap(g, level) && *n < max; i++) {
		uint32_t nb = hnsw_rd(rec, off + 1 + i);
		if ((rc = hnsw_visit(g, nb)) < 0)
			return rc;
		if (rc)
			ids[(*n)++] = nb;
	}
	return 0;
}

/* Filter-first: the nodes the filter passes among node's neighbours on
 * level, and theirs (two hops; three where few nodes lie within two), up
 * to the level's list length; when none does, node's own neighbours.
 * Every node reached is marked visited, as its filter bit is then known. */
static int filtered_hood(struct hnsw_graph *g, uint32_t node, uint32_t level, uint32_t *ids,
                         uint32_t *n)
{
	struct hnsw_scratch *s = g->s;
	uint32_t cap = hnsw_cap(g, level);
	size_t head = 0, tail = 1;
	int rc;
	*n = 0;
	if ((rc = hnsw_reserve(g, (void **)&s->hood, &s->hcap, 1, sizeof *s->hood)) != 0)
		return rc;
	s->hood[0] = node;
	if ((rc = hnsw_reserve(g, (void **)&s->found, &s->fcap, cap, sizeof *s->found)) != 0)
		return rc;
	uint32_t spare = 0; /* one-hop neighbours first seen here that the filter drops */
	for (int hop = 0; hop < 3 && *n < cap; hop++) {
		if (hop == 2 && (double)(tail - head) >= g->exploration * cap * cap)
			break;
		size_t end = tail;
		for (; head < end && *n < cap; head++) {
			const void *rec;
			uint32_t lv;
			if ((rc = hnsw_node_get(g, s->hood[head], &rec, &lv)) != 0)
				return rc;
			if (!rec || level > lv)
				continue;
			size_t off = hnsw_list_off(g, level);
			uint32_t cnt = hnsw_rd(rec, off);
			if ((rc = hnsw_reserve(g, (void **)&s->hood, &s->hcap, tail + cnt,
			                       sizeof *s->hood)) != 0)
				return rc;
			for (uint32_t i = 0; i < cnt && i < cap && *n < cap; i++) {
				uint32_t nb = hnsw_rd(rec, off + 1 + i);
				s->hood[tail++] = nb; /* reached again: still a way on */
				if ((rc = hnsw_visit(g, nb)) < 0)
					return rc;
				if (rc && passes(g, nb))
					ids[(*n)++] = nb;
				else if (rc && hop == 0)
					s->found[spare++] = nb;
			}
		}
	}
	/* None passes within reach: the search goes on through the new plain
	 * neighbours (candidates, never results) rather than stop here. */
	if (*n == 0) {
		memcpy(ids, s->found, spare * sizeof *ids);
		*n = spare;
	}
	return 0;
}

/* The nodes whose distances the search computes next, from node on
 * level. */
static int neighbours(struct hnsw_graph *g, uint32_t node, uint32_t level, uint32_t *ids,
                      uint32_t *n)
{
	*n = 0;
	if (g->filter_first && g->filter)
		return filtered_hood(g, node, level, ids, n);
	return unvisited(g, node, level, ids, n, 2 * HNSW_MAX_M);
}

int hnsw_search_layer(struct hnsw_graph *g, const void *q, struct hnsw_cand ep, uint32_t ef,
                      uint32_t level)
{
	struct hnsw_scratch *s = g->s;
	size_t nc = 0;
	int rc;
	hnsw_visited_clear(s);
	s->nres = 0;
	if ((rc = hnsw_visit(g, ep.lid)) < 0 ||
	    (rc = heap_push(g, &s->cand, &s->ccap, &nc, ep, 0)) != 0)
		return rc;
	if (passes(g, ep.lid) && (rc = heap_push(g, &s->res, &s->rcap, &s->nres, ep, 1)) != 0)
		return rc;
	while (nc) {
		struct hnsw_cand c = heap_pop(s->cand, &nc, 0);
		if (s->nres >= ef && c.d > beyond(g, s->res[0].d))
			break;
		/* The unvisited neighbours' vectors first, fetched into the cache
		 * while the next are looked up; then their distances. */
		uint32_t n = 0, m = 0;
		uint32_t ids[2 * HNSW_MAX_M];
		const void *vecs[2 * HNSW_MAX_M];
		if ((rc = neighbours(g, c.lid, level, ids, &n)) != 0)
			return rc;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t nb = ids[i];
			const void *v = s->blocks || g->snap ? linked_vec(g, nb) : hnsw_vec(g, nb);
			if (!v)
				continue;
			for (size_t b = 0; b < g->f->cell_bytes && b < 512; b += 64)
				__builtin_prefetch((const char *)v + b);
			ids[m] = nb;
			vecs[m++] = v;
		}
		for (uint32_t i = 0; i < m; i++) {
			double d = hnsw_pair(g, q, vecs[i]);
			int full = s->nres >= ef;
			if (full && d >= beyond(g, s->res[0].d))
				continue;
			struct hnsw_cand e = {d, ids[i]};
			if ((rc = heap_push(g, &s->cand, &s->ccap, &nc, e, 0)) != 0)
				return rc;
			if ((full && d >= s->res[0].d) || !passes(g, ids[i]))
				continue;
			if (s->nres >= ef) { /* full: e takes the farthest one's place */
				s->res[0] = e;
				heap_down(s->res, s->nres, 0, 1);
			} else if ((rc = heap_push(g, &s->res, &s->rcap, &s->nres, e, 1)) != 0) {
				return rc;
			}
		}
	}
	return 0;
}

/* The results of hnsw_search_layer, nearest first, in s->res itself. */
void hnsw_sort_results(struct hnsw_scratch *s)
{
	size_t n = s->nres;
	while (s->nres > 1) { /* heap sort: the farthest goes to the end */
		struct hnsw_cand top = heap_pop(s->res, &s->nres, 1);
		s->res[s->nres] = top;
	}
	s->nres = n;
}

int hnsw_graph_init(struct hnsw_graph *g, struct store_txn *txn, struct doctype *dt, int sf,
                    struct hnsw_scratch *s, struct strata_error *err)
{
	memset(g, 0, sizeof *g);
	g->stx = txn;
	g->txn = txn->txn;
	g->dt = dt;
	g->sf = sf;
	g->f = &dt->stored[sf];
	g->m = (uint32_t)g->f->hnsw_m;
	g->cap0 = 2 * g->m;
	g->efc = (uint32_t)g->f->hnsw_ef;
	g->n = g->f->ncells;
	g->multi = g->f->multi;
	g->cell = g->multi ? g->f->vec_cell : g->f->cell;
	g->vbytes = (uint32_t)(g->n * base_dtype_size(g->cell));
	g->lid_off = (g->vbytes + 3) & ~3u;
	g->s = s;
	g->err = err;
	if (s && !txn->write)
		g->snap = hnsw_snap_acquire(g);
	if (s && !s->blocks && !g->snap) { /* without it (no memory) vectors are looked up each time */
		s->blocks = base_calloc(HNSW_BLOCK_CACHE, sizeof *s->blocks);
		s->nblk = s->blocks ? HNSW_BLOCK_CACHE : 0;
		s->gen = 1;
		s->epoch = 1;
	} else if (s && (s->owner != dt || s->owner_sf != sf)) {
		hnsw_forget_all(s);
	}
	if (s) {
		s->owner = dt;
		s->owner_sf = sf;
	}
	return 0;
}

void hnsw_cells(const struct hnsw_graph *g, const double *v, void *out)
{
	for (size_t i = 0; i < g->n; i++) {
		double x = v[i];
		switch (g->cell) {
		case BASE_DT_FLOAT: ((float *)out)[i] = (float)x; break;
		case BASE_DT_DOUBLE: ((double *)out)[i] = x; break;
		case BASE_DT_BFLOAT16: ((uint16_t *)out)[i] = base_f32_to_bf16((float)x); break;
		case BASE_DT_INT8:
			((int8_t *)out)[i] = !(x > -128.0) ? -128 : x > 127.0 ? 127 : (int8_t)x;
			break;
		}
	}
}

/* ---- checking (hnsw_api.c) ---------------------------------------------------------- */

int hnsw_check_fail(struct hnsw_graph *g, const char *fmt, ...)
{
	char what[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return base_err(g->err, STRATA_CORRUPT, "document type '%s', field '%s': graph %s",
	                g->dt->name, g->f->name, what);
}
