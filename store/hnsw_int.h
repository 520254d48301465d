/*
 * hnsw_int.h: what the graph files share, in layers: hnsw_rec.c (the
 * records as stored: words, keys, reads), hnsw_cache.c (a write
 * transaction's records, read once and written at commit) and hnsw_snap.c
 * (the record and column block pointers of a snapshot, shared by the
 * searches of every read transaction on it), above them hnsw.c (records
 * through those, distances, searching a level), hnsw_write.c (inserting
 * and removing a node), hnsw_multi.c (the graphs of multi-vector fields),
 * and at the top hnsw_api.c (the store's search and check calls) and
 * hnsw_sync.c (keeping graphs in line with documents and settings).  The
 * layout of the records is described in hnsw.c.
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
	uint32_t *hood;               /* filter-first search: the nodes reached, then */
	size_t hcap;                  /* those of them the filter passes */
	uint32_t *found;
	size_t fcap;
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
	int cell;                     /* their type, BASE_DT_* */
	uint32_t vbytes;              /* bytes of a vector */
	/* A multi-vector graph (hnsw_multi.c): node ids are not local ids; a
	 * node's column cell holds its vector, then at lid_off its document's
	 * local id. */
	int multi;
	uint32_t lid_off;
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
	double slack;                 /* search only: struct store_hnsw_params' */
	int filter_first;
	double exploration;
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
/* The value of key in the graph DB itself (v->mv_data NULL when there is
 * none), valid until the next write.  Node records and the head are kept
 * by a write transaction's cache: they are read through hnsw_node_get and
 * hnsw_head_get, never through this. */
int hnsw_db_get(struct hnsw_graph *g, const void *key, size_t klen, MDB_val *v);
/* lid's record (*rec NULL when lid is no node), valid until the next write;
 * through the scratch's cache or the snapshot's table when there is one. */
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
/* Empty s's visited set; hnsw_visit marks x: 1 when it was not yet
 * marked, 0 when it was, or an error. */
void hnsw_visited_clear(struct hnsw_scratch *s);
int hnsw_visit(struct hnsw_graph *g, uint32_t x);
/* Room in g's visited set for the ids below n at once. */
int hnsw_visited_reserve(struct hnsw_graph *g, uint32_t n);
/* The document of node (its lid; UINT32_MAX when node has no vector). */
uint32_t hnsw_node_doc(struct hnsw_graph *g, uint32_t node);
/* The vector x (g->n numbers) in the graph's cell type at out. */
void hnsw_cells(const struct hnsw_graph *g, const double *x, void *out);
/* hnsw_multi.c: store_hnsw_check's look at one document of a multi-vector
 * graph: its nodes are its vectors, in order; *nodes grows by their
 * number. */
int hnsw_multi_check_doc(struct hnsw_graph *g, uint32_t lid, uint64_t *nodes);
int hnsw_check_fail(struct hnsw_graph *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* hnsw_write.c: insert node (its vector in s->q; lid for the level's hash)
 * and remove it, keeping the links symmetric and the head right. */
int hnsw_insert(struct hnsw_graph *g, uint32_t node);
int hnsw_remove(struct hnsw_graph *g, uint32_t node);

/* hnsw_multi.c */
/* Bring lid's nodes in multi-vector graph g in line with its stored
 * value: the old nodes (and their vectors) go, a node per vector comes. */
int hnsw_multi_sync(struct hnsw_graph *g, uint32_t lid);
/* After the descent to level 0 from ep: the k nearest documents (at most)
 * into out, exploring until max(ef, k) distinct documents are found or the
 * graph is exhausted. */
int hnsw_multi_search(struct hnsw_graph *g, struct hnsw_cand ep, uint32_t k, uint32_t ef,
                      uint64_t count, struct store_hit *out, size_t *nout);
/* Drop the vectors of stored field sf's graph (its column). */
int hnsw_multi_drop(MDB_txn *t, struct doctype *dt, int sf, struct strata_error *err);

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
uint32_t hnsw_snap_lids(const struct hnsw_snap *t); /* the node ids it covers */
const uint8_t *hnsw_snap_block(struct hnsw_graph *g, uint32_t block);

#endif
