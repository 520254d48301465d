/*
 * hnsw_snap.c: where a graph's node records and column blocks lie in the
 * memory map for one snapshot of the store, shared by the searches of every
 * read transaction on that snapshot.
 *
 * A search looks up a few hundred node records and column blocks, each a
 * B-tree lookup, and the engine runs each query in its own read transaction,
 * so a cache kept per search or per transaction starts cold every time.  But
 * the pages of a snapshot neither move nor change while a read transaction
 * on it is open (LMDB reuses a page only once no reader can see it), so a
 * pointer one reader of snapshot S found is good for every reader of S.  A
 * table per (graph, S) keeps them, filled in as searches find them, and
 * lives while a search uses it (refs, under env->snap_lock); a search on
 * another snapshot takes a table nobody uses, cleared, or makes one.  When
 * the last user of a table leaves and a table of a later snapshot of the
 * same graph exists, the older one is freed, so a graph keeps about one
 * table per snapshot in use.
 *
 * Slots are atomics: searches on several threads may fill the same slot,
 * with the same value.  0 means not looked up yet, NONE looked up and
 * absent.  Write transactions do not use the tables (their own pages move).
 * Without memory for a table a search looks everything up itself.
 *
 * A multi-vector graph's table is by node id (hnsw_multi.c), its size the
 * graph's node counter; a node's column block is by node id too.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "hnsw_int.h"

#define NONE ((uintptr_t)1)

struct hnsw_snap {
	struct hnsw_snap *next;
	const struct doctype *dt;
	int sf;
	uint64_t id;                 /* the snapshot (mdb_txn_id) */
	int refs;
	uint32_t nlids;              /* node slots: node ids below this */
	uint32_t nblocks;
	size_t lcap, bcap;           /* slots allocated */
	_Atomic uintptr_t *nodes;    /* record pointers by node id */
	_Atomic uintptr_t *blocks;   /* column block pointers by block number */
};

/* The graph's next node id in txn (0 when it cannot be read): the type's
 * next local id, or a multi-vector graph's node counter (hnsw_multi.c). */
static uint32_t id_bound(struct hnsw_graph *g)
{
	char key[STORE_MAX_NAME + 8];
	uint8_t nkey[3] = {(uint8_t)(g->sf >> 8), (uint8_t)g->sf, 'n'};
	MDB_val k = {sizeof nkey, nkey}, v;
	MDB_dbi db = g->dt->hnsw;
	if (!g->multi) {
		k = (MDB_val){(size_t)snprintf(key, sizeof key, "n/%s", g->dt->name), key};
		db = g->stx->env->meta;
	}
	uint32_t next = 0;
	if (mdb_get(g->txn, db, &k, &v) == 0 && v.mv_size == sizeof next)
		memcpy(&next, v.mv_data, sizeof next);
	return next;
}

static void snap_free(struct hnsw_snap *t)
{
	base_free(t->nodes, t->lcap * sizeof *t->nodes);
	base_free(t->blocks, t->bcap * sizeof *t->blocks);
	base_free(t, sizeof *t);
}

/* Make t's slots (refs 0) fit nlids and nblocks, all unknown. */
static int snap_reset(struct hnsw_snap *t, uint32_t nlids, uint32_t nblocks)
{
	t->nlids = t->nblocks = 0; /* on failure: every lookup goes to the store */
	if (t->lcap < nlids) {
		size_t cap = (size_t)nlids + nlids / 4; /* room for the documents to come */
		_Atomic uintptr_t *p = base_alloc(cap * sizeof *p);
		if (!p)
			return -1;
		base_free(t->nodes, t->lcap * sizeof *t->nodes);
		t->nodes = p;
		t->lcap = cap;
	}
	if (t->bcap < nblocks) {
		size_t cap = (size_t)nblocks + nblocks / 4;
		_Atomic uintptr_t *p = base_alloc(cap * sizeof *p);
		if (!p)
			return -1;
		base_free(t->blocks, t->bcap * sizeof *t->blocks);
		t->blocks = p;
		t->bcap = cap;
	}
	for (uint32_t i = 0; i < nlids; i++)
		atomic_init(&t->nodes[i], 0);
	for (uint32_t i = 0; i < nblocks; i++)
		atomic_init(&t->blocks[i], 0);
	t->nlids = nlids;
	t->nblocks = nblocks;
	return 0;
}

static void snaps_free(struct store_env *env);

struct hnsw_snap *hnsw_snap_acquire(struct hnsw_graph *g)
{
	struct store_env *env = g->stx->env;
	uint64_t id = mdb_txn_id(g->txn);
	uint32_t nlids = id_bound(g);
	if (!nlids)
		return NULL;
	uint32_t nblocks = ((nlids - 1) >> g->f->block_shift) + 1;
	struct hnsw_snap *t, *idle = NULL;
	pthread_mutex_lock(&env->snap_lock);
	for (t = env->snaps; t; t = t->next) {
		if (t->dt != g->dt || t->sf != g->sf)
			continue;
		if (t->id == id)
			break;
		if (!t->refs && (!idle || t->id > idle->id))
			idle = t;
	}
	if (!t && idle && snap_reset(idle, nlids, nblocks) == 0) {
		t = idle;
		t->id = id;
	}
	if (!t && (t = base_calloc(1, sizeof *t)) != NULL) {
		if (snap_reset(t, nlids, nblocks) != 0) {
			snap_free(t);
			t = NULL;
		} else {
			t->dt = g->dt;
			t->sf = g->sf;
			t->id = id;
			t->next = env->snaps;
			env->snaps = t;
			env->snaps_free = snaps_free;
		}
	}
	if (t)
		t->refs++;
	pthread_mutex_unlock(&env->snap_lock);
	return t;
}

void hnsw_snap_release(struct store_env *env, struct hnsw_snap *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&env->snap_lock);
	int later = 0;
	if (--t->refs == 0)
		for (struct hnsw_snap *o = env->snaps; o; o = o->next)
			later |= o->dt == t->dt && o->sf == t->sf && o->id > t->id;
	if (later) {
		struct hnsw_snap **pp = &env->snaps;
		while (*pp != t)
			pp = &(*pp)->next;
		*pp = t->next;
		snap_free(t);
	}
	pthread_mutex_unlock(&env->snap_lock);
}

uint32_t hnsw_snap_lids(const struct hnsw_snap *t)
{
	return t->nlids;
}

int hnsw_snap_node(struct hnsw_graph *g, uint32_t lid, const void **rec, uint32_t *level)
{
	struct hnsw_snap *t = g->snap;
	if (lid >= t->nlids)
		return hnsw_node_read(g, lid, rec, level);
	uintptr_t v = atomic_load_explicit(&t->nodes[lid], memory_order_relaxed);
	if (!v) {
		int rc = hnsw_node_read(g, lid, rec, level);
		if (!rc)
			atomic_store_explicit(&t->nodes[lid], *rec ? (uintptr_t)*rec : NONE,
			                      memory_order_relaxed);
		return rc;
	}
	*rec = v == NONE ? NULL : (const void *)v;
	*level = *rec ? hnsw_rd(*rec, 0) : 0;
	return 0;
}

const uint8_t *hnsw_snap_block(struct hnsw_graph *g, uint32_t block)
{
	struct hnsw_snap *t = g->snap;
	if (block >= t->nblocks)
		return store_col_block(g->stx, g->dt, g->sf, block);
	uintptr_t v = atomic_load_explicit(&t->blocks[block], memory_order_relaxed);
	if (!v) {
		const uint8_t *b = store_col_block(g->stx, g->dt, g->sf, block);
		atomic_store_explicit(&t->blocks[block], b ? (uintptr_t)b : NONE,
		                      memory_order_relaxed);
		return b;
	}
	return v == NONE ? NULL : (const uint8_t *)v;
}

/* env->snaps_free: at close. */
static void snaps_free(struct store_env *env)
{
	while (env->snaps) {
		struct hnsw_snap *t = env->snaps;
		env->snaps = t->next;
		snap_free(t);
	}
}
