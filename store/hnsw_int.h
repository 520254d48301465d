/*
 * hnsw_int.h: what the graph files share: hnsw.c (records, searching,
 * checking), hnsw_write.c (inserting, removing, rebuilding), hnsw_cache.c
 * (a write transaction's records, read once and written at commit) and
 * hnsw_snap.c (the record and column block pointers of a snapshot, shared
 * by the searches of every read transaction on it).  The layout of the
 * records is described in hnsw.c.
 */
#ifndef HNSW_INT_H
#define HNSW_INT_H

#include <string.h>

#include "store_int.h"

#define HNSW_MAX_LEVEL 16
#define HNSW_MAX_M 256          /* max-links-per-node */

/* The head of a graph, stored as is. */
struct hnsw_head {
	uint32_t entry;  /* the entry point, a node on the top level */
	uint32_t level;  /* the top level */
	uint64_t count;  /* nodes; 0 (no head stored) for an empty graph */
	double max_norm2; /* dotproduct: the largest squared norm inserted */
};

struct hnsw_cand {
	double d;
	uint32_t lid;
};

/* Buffers reused across operations: one per write transaction (kept in
 * struct store_txn), one per search. */
struct hnsw_scratch {
	uint64_t *vbits;              /* visited set: a bitmap of local ids */
	size_t vwords, vhi;           /* words allocated; words [0, vhi) may be set */
	struct hnsw_cand *cand;       /* candidates, a min-heap */
	size_t ccap;
	struct hnsw_cand *res;        /* results, a max-heap of at most ef */
	size_t rcap, nres;
	struct hnsw_cand *sel;        /* neighbour selection */
	size_t selcap;
	uint8_t *q;                   /* the vector being searched or inserted */
	size_t qcap;
	uint32_t *rec;                /* a copy of a node record being rewritten */
	size_t reccap;
	uint32_t *rec2;               /* the record on the other side of a link */
	size_t rec2cap;
	uint32_t *old;                /* a copy of a removed node's record */
	size_t oldcap;
	uint32_t *lists;              /* a new node's links, cap0 per level */
	size_t lcap;
	const void **vptr;            /* vectors of the chosen neighbours */
	size_t vpcap;
	/* Column blocks of one graph's field looked up (direct-mapped by block
	 * number, nblk entries: HNSW_BLOCK_CACHE, doubled up to
	 * HNSW_BLOCK_CACHE_MAX as higher blocks come, so that a graph's blocks
	 * do not take each other's places).  An entry is valid while its epoch is the scratch's epoch,
	 * which hnsw_forget_all bumps, and, for a block outside the memory map
	 * (a page written in this transaction), while its gen is the scratch's
	 * gen, which every graph write bumps: a write may move or spill dirty
	 * pages, never a page of the map the transaction sees. */
	struct hnsw_block {
		const uint8_t *p;
		uint32_t block, gen, epoch;
		int mapped;
	} *blocks;
	size_t nblk;
	uint32_t gen, epoch;
	const struct doctype *owner;  /* the graph the blocks belong to */
	int owner_sf;
	struct hnsw_cache *cache;     /* write scratches: records kept (hnsw_cache.c) */
};
#define HNSW_BLOCK_CACHE 4096
#define HNSW_BLOCK_CACHE_MAX ((size_t)1 << 20)

/* One graph during one operation. */
struct hnsw_graph {
	struct store_txn *stx;
	MDB_txn *txn;
	struct doctype *dt;
	int sf;
	const struct sfield *f;
	uint32_t m, cap0, efc;
	size_t n;                     /* cells per vector */
	struct hnsw_scratch *s;
	/* dotproduct while writing: distances between documents are euclidean
	 * after the transformation that makes inner products a metric: each
	 * vector x gains a cell sqrt(max_norm2 - |x|^2).  Queries compare with
	 * -a.b, which orders documents the same way. */
	int mips;
	double max_norm2;
	struct hnsw_snap *snap;       /* read txns: the snapshot's pointers (hnsw_snap.c) */
	const uint64_t *filter;       /* search only: a bitmap of local ids, or NULL */
	size_t nbits;
	struct strata_error *err;
};

static inline uint32_t hnsw_cap(const struct hnsw_graph *g, uint32_t level)
{
	return level ? g->m : g->cap0;
}

int hnsw_graph_init(struct hnsw_graph *g, struct store_txn *txn, struct doctype *dt, int sf,
                    struct hnsw_scratch *s, struct strata_error *err);
void hnsw_scratch_release(struct hnsw_scratch *s);
int hnsw_reserve(struct hnsw_graph *g, void **p, size_t *cap, size_t need, size_t elem);

/* Word i of a record (LMDB aligns values on 2 bytes only). */
static inline uint32_t hnsw_rd(const void *p, size_t i)
{
	uint32_t w;
	memcpy(&w, (const uint8_t *)p + i * 4, 4);
	return w;
}
size_t hnsw_list_off(const struct hnsw_graph *g, uint32_t level); /* word of level's count */
size_t hnsw_rec_words(const struct hnsw_graph *g, uint32_t level);
void hnsw_node_key(const struct hnsw_graph *g, uint32_t lid, uint8_t key[6]);
void hnsw_key_of(int sf, uint32_t lid, uint8_t key[6]); /* the same for field sf */
/* lid's record (*rec NULL when lid is no node), valid until the next write;
 * through the scratch's cache when it has one. */
int hnsw_node_get(struct hnsw_graph *g, uint32_t lid, const void **rec, uint32_t *level);
/* The head; count 0 when the graph is empty. */
int hnsw_head_get(struct hnsw_graph *g, struct hnsw_head *h);
/* The same two read from the store itself. */
int hnsw_node_read(struct hnsw_graph *g, uint32_t lid, const void **rec, uint32_t *level);
int hnsw_head_read(struct hnsw_graph *g, struct hnsw_head *h);
/* lid's vector (NULL: none), valid until the next write (which must call
 * hnsw_forget). */
const void *hnsw_vec(struct hnsw_graph *g, uint32_t lid);
/* Before a write to the graph: pointers into pages written in this
 * transaction go. */
void hnsw_forget(struct hnsw_graph *g);
/* The same for a scratch: the column blocks outside the map go. */
void hnsw_scratch_forget(struct hnsw_scratch *s);
/* Every column block the scratch keeps goes. */
void hnsw_forget_all(struct hnsw_scratch *s);
/* lid's column value was written: its block goes too. */
void hnsw_forget_block(struct hnsw_graph *g, uint32_t lid);
/* The distance between two vectors (documents, or a document and a query). */
double hnsw_pair(const struct hnsw_graph *g, const void *a, const void *b);
/* Distance of q to lid's vector: 0, or -1 when lid has none. */
int hnsw_dist_to(struct hnsw_graph *g, const void *q, uint32_t lid, double *d);

/* Move ep to the nearest node reachable greedily on level. */
int hnsw_greedy(struct hnsw_graph *g, const void *q, struct hnsw_cand *ep, uint32_t level);
/* The ef nearest nodes found from ep on level into s->res (a max-heap; the
 * filter limits what enters it). */
int hnsw_search_layer(struct hnsw_graph *g, const void *q, struct hnsw_cand ep, uint32_t ef,
                      uint32_t level);
void hnsw_sort_results(struct hnsw_scratch *s);

/* hnsw_cache.c: a write scratch's records and head, read once and written
 * at hnsw_cache_flush.  hnsw_cache_start makes the cache or, when it holds
 * another graph or transaction, flushes it first. */
int hnsw_cache_start(struct hnsw_graph *g);
int hnsw_cache_node(struct hnsw_graph *g, uint32_t lid, const void **rec, uint32_t *level);
int hnsw_cache_head(struct hnsw_graph *g, struct hnsw_head *h);
/* lid's record becomes rec (words long), or goes; the head becomes h. */
int hnsw_cache_put(struct hnsw_graph *g, uint32_t lid, const uint32_t *rec, size_t words);
int hnsw_cache_del(struct hnsw_graph *g, uint32_t lid);
void hnsw_cache_set_head(struct hnsw_graph *g, const struct hnsw_head *h);
/* Write what changed to the store (nothing without a cache); the cache is
 * empty after. */
int hnsw_cache_flush(struct hnsw_scratch *s, struct strata_error *err);
void hnsw_cache_free(struct hnsw_scratch *s);

/* hnsw_snap.c: the table of g's graph for the snapshot of g's read txn, in
 * use until hnsw_snap_release (NULL: none, everything is looked up); lid's
 * record and a column block through it. */
struct hnsw_snap *hnsw_snap_acquire(struct hnsw_graph *g);
void hnsw_snap_release(struct store_env *env, struct hnsw_snap *t);
int hnsw_snap_node(struct hnsw_graph *g, uint32_t lid, const void **rec, uint32_t *level);
uint32_t hnsw_snap_lids(const struct hnsw_snap *t); /* the local ids it covers */
const uint8_t *hnsw_snap_block(struct hnsw_graph *g, uint32_t block);

#endif
