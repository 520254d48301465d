/*
 * hnsw_cache.c: a graph's node records and head during a write transaction
 * (hnsw_write.c): each read from the store once and then kept, and the ones
 * that inserts and removals change kept aside and written once each, in key
 * order, when the transaction commits.
 *
 * An insert reads a few hundred records and rewrites dozens; a batch of
 * inserts reads and rewrites many of them again.  Without this, every read
 * is a B-tree lookup and every rewrite a put, and a put may move the dirty
 * pages that earlier reads pointed into.  Here nothing is written to the
 * graph's DB until the flush, so a record read from the memory map stays
 * where it is (LMDB never writes over a page the transaction sees) and its
 * pointer is kept; a record read from a page written in this transaction
 * (after an earlier flush) is copied, as is every changed record.
 *
 * The flush (hnsw_cache_flush) runs at commit (store_txn's hnsw_flush hook),
 * when the cache holds CACHE_MAX records, and before anything reads the
 * graph's DB other than through the cache:
 * a cursor over the nodes (hnsw_write.c's new_entry, store_hnsw_check,
 * store_hnsw_bytes), a search in the write transaction, or a scratch moving
 * to another graph.  All of it happens inside the one LMDB transaction, so a
 * crash leaves the graph as it was before the transaction or after it.
 */
#include <stdlib.h>
#include <string.h>

#include "hnsw_int.h"

/* Records kept at most: a transaction that touches more (a large batch, a
 * rebuild) is flushed on the way, which bounds the memory (tens of MB). */
#define CACHE_MAX ((size_t)1 << 17)

enum {
	ENT_CLEAN = 1, /* rec is the record as stored (in the map, or a copy) */
	ENT_ABSENT,    /* no record stored */
	ENT_DIRTY,     /* rec (a copy) is to be written */
	ENT_GONE       /* the record is to be deleted */
};

struct hnsw_ent {
	uint32_t key;        /* lid + 1; 0: an empty slot */
	uint8_t state;
	uint8_t own;         /* rec is a copy in the arena, words long */
	uint32_t words;
	uint32_t *rec;       /* const unless own */
};

struct hnsw_cache {
	struct hnsw_ent *ents;   /* open addressing on the lid */
	size_t cap, used;
	struct base_arena arena; /* the copies */
	struct hnsw_head head;
	int head_state;          /* 0: not read, 1: read, 2: changed */
	const struct doctype *dt; /* the graph cached */
	int sf;
	struct store_env *env;
	MDB_txn *txn;
};

static size_t slot_of(uint32_t key, size_t cap)
{
	uint32_t x = key * 0x9e3779b1U;
	return (x ^ (x >> 15)) & (cap - 1);
}

static struct hnsw_ent *find(struct hnsw_cache *c, uint32_t lid)
{
	if (!c->cap)
		return NULL;
	uint32_t key = lid + 1;
	for (size_t j = slot_of(key, c->cap);; j = (j + 1) & (c->cap - 1)) {
		if (c->ents[j].key == key)
			return &c->ents[j];
		if (!c->ents[j].key)
			return NULL;
	}
}

/* A new entry for lid (not in the table), or NULL without memory. */
static struct hnsw_ent *add(struct hnsw_cache *c, uint32_t lid)
{
	if ((c->used + 1) * 2 > c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 4096;
		struct hnsw_ent *ne = base_calloc(ncap, sizeof *ne);
		if (!ne)
			return NULL;
		for (size_t i = 0; i < c->cap; i++) {
			if (!c->ents[i].key)
				continue;
			size_t j = slot_of(c->ents[i].key, ncap);
			while (ne[j].key)
				j = (j + 1) & (ncap - 1);
			ne[j] = c->ents[i];
		}
		base_free(c->ents, c->cap * sizeof *c->ents);
		c->ents = ne;
		c->cap = ncap;
	}
	size_t j = slot_of(lid + 1, c->cap);
	while (c->ents[j].key)
		j = (j + 1) & (c->cap - 1);
	c->used++;
	c->ents[j] = (struct hnsw_ent){.key = lid + 1};
	return &c->ents[j];
}

/* Give e its own copy of rec (words long). */
static int own_copy(struct hnsw_graph *g, struct hnsw_ent *e, const void *rec, size_t words)
{
	if (!e->own || e->words != words) {
		uint32_t *p = base_arena_alloc(&g->s->cache->arena, words * 4, 8);
		if (!p)
			return base_nomem(g->err, "nearest-neighbour graph");
		e->rec = p;
		e->own = 1;
		e->words = (uint32_t)words;
	}
	memmove(e->rec, rec, words * 4);
	return 0;
}

static void clear(struct hnsw_cache *c)
{
	if (c->used)
		memset(c->ents, 0, c->cap * sizeof *c->ents);
	c->used = 0;
	c->head_state = 0;
	base_arena_reset(&c->arena);
}

int hnsw_cache_start(struct hnsw_graph *g)
{
	struct hnsw_scratch *s = g->s;
	struct hnsw_cache *c = s->cache;
	if (!c) {
		if (!(c = base_calloc(1, sizeof *c)))
			return base_nomem(g->err, "nearest-neighbour graph");
		base_arena_init(&c->arena, 1 << 16);
		s->cache = c;
	} else if (c->dt != g->dt || c->sf != g->sf || c->txn != g->txn ||
	           c->used >= CACHE_MAX) {
		int rc = hnsw_cache_flush(s, g->err);
		if (rc)
			return rc;
	}
	c->dt = g->dt;
	c->sf = g->sf;
	c->env = g->stx->env;
	c->txn = g->txn;
	return 0;
}

int hnsw_cache_node(struct hnsw_graph *g, uint32_t lid, const void **rec, uint32_t *level)
{
	struct hnsw_cache *c = g->s->cache;
	struct hnsw_ent *e = find(c, lid);
	if (e) {
		*rec = e->state == ENT_CLEAN || e->state == ENT_DIRTY ? e->rec : NULL;
		*level = *rec ? hnsw_rd(*rec, 0) : 0;
		return 0;
	}
	int rc = hnsw_node_read(g, lid, rec, level);
	if (rc)
		return rc;
	uint32_t *copy = NULL;
	size_t words = *rec ? hnsw_rec_words(g, *level) : 0;
	/* a page written in this transaction may move: keep a copy */
	if (*rec && !store_in_map(c->env, *rec)) {
		if (!(copy = base_arena_alloc(&c->arena, words * 4, 8)))
			return base_nomem(g->err, "nearest-neighbour graph");
		memcpy(copy, *rec, words * 4);
		*rec = copy;
	}
	if (!(e = add(c, lid)))
		return base_nomem(g->err, "nearest-neighbour graph");
	e->state = *rec ? ENT_CLEAN : ENT_ABSENT;
	e->rec = (uint32_t *)*rec;
	e->own = copy != NULL;
	e->words = (uint32_t)words;
	return 0;
}

int hnsw_cache_put(struct hnsw_graph *g, uint32_t lid, const uint32_t *rec, size_t words)
{
	struct hnsw_cache *c = g->s->cache;
	struct hnsw_ent *e = find(c, lid);
	if (!e && !(e = add(c, lid)))
		return base_nomem(g->err, "nearest-neighbour graph");
	int rc = own_copy(g, e, rec, words);
	if (rc)
		return rc;
	e->state = ENT_DIRTY;
	return 0;
}

int hnsw_cache_del(struct hnsw_graph *g, uint32_t lid)
{
	struct hnsw_cache *c = g->s->cache;
	struct hnsw_ent *e = find(c, lid);
	if (!e && !(e = add(c, lid)))
		return base_nomem(g->err, "nearest-neighbour graph");
	e->state = ENT_GONE;
	return 0;
}

int hnsw_cache_head(struct hnsw_graph *g, struct hnsw_head *h)
{
	struct hnsw_cache *c = g->s->cache;
	if (!c->head_state) {
		int rc = hnsw_head_read(g, &c->head);
		if (rc)
			return rc;
		c->head_state = 1;
	}
	*h = c->head;
	return 0;
}

void hnsw_cache_set_head(struct hnsw_graph *g, const struct hnsw_head *h)
{
	g->s->cache->head = *h;
	g->s->cache->head_state = 2;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct hnsw_ent *x = *(struct hnsw_ent *const *)a, *y = *(struct hnsw_ent *const *)b;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int write_head(struct hnsw_cache *c, struct strata_error *err)
{
	uint8_t key[2] = {(uint8_t)(c->sf >> 8), (uint8_t)c->sf};
	MDB_val k = {sizeof key, key}, v = {sizeof c->head, &c->head};
	int rc = c->head.count ? mdb_put(c->txn, c->dt->hnsw, &k, &v, 0)
	                       : mdb_del(c->txn, c->dt->hnsw, &k, NULL);
	if (rc == MDB_NOTFOUND)
		rc = 0;
	return rc ? store_mdb_err(err, rc, "writing the nearest-neighbour graph") : 0;
}

int hnsw_cache_flush(struct hnsw_scratch *s, struct strata_error *err)
{
	struct hnsw_cache *c = s ? s->cache : NULL;
	if (!c || (!c->used && c->head_state != 2))
		return 0;
	size_t n = 0;
	for (size_t i = 0; i < c->cap; i++)
		n += c->ents[i].key && (c->ents[i].state == ENT_DIRTY || c->ents[i].state == ENT_GONE);
	struct hnsw_ent **order = n ? base_alloc(n * sizeof *order) : NULL;
	if (n && !order)
		return base_nomem(err, "writing the nearest-neighbour graph");
	n = 0;
	for (size_t i = 0; i < c->cap; i++)
		if (c->ents[i].key && (c->ents[i].state == ENT_DIRTY || c->ents[i].state == ENT_GONE))
			order[n++] = &c->ents[i];
	if (n > 1) /* key order: the B-tree is filled in order (none: order is NULL) */
		qsort(order, n, sizeof *order, ent_cmp);
	hnsw_scratch_forget(s); /* the writes may move pages written earlier */
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		const struct hnsw_ent *e = order[i];
		uint8_t key[6];
		hnsw_key_of(c->sf, e->key - 1, key);
		MDB_val k = {sizeof key, key}, v = {(size_t)e->words * 4, e->rec};
		rc = e->state == ENT_DIRTY ? mdb_put(c->txn, c->dt->hnsw, &k, &v, 0)
		                           : mdb_del(c->txn, c->dt->hnsw, &k, NULL);
		if (rc == MDB_NOTFOUND)
			rc = 0;
		if (rc)
			rc = store_mdb_err(err, rc, "writing the nearest-neighbour graph");
	}
	base_free(order, n * sizeof *order);
	if (!rc && c->head_state == 2)
		rc = write_head(c, err);
	if (!rc)
		clear(c);
	return rc;
}

void hnsw_cache_free(struct hnsw_scratch *s)
{
	struct hnsw_cache *c = s->cache;
	if (!c)
		return;
	base_free(c->ents, c->cap * sizeof *c->ents);
	base_arena_free(&c->arena);
	base_free(c, sizeof *c);
	s->cache = NULL;
}
