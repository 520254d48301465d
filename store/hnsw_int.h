/*
 * hnsw_int.h: what the graph files share, in layers: hnsw.c (records,
 * distances, searching a level), hnsw_write.c (inserting and removing a
 * node), hnsw_multi.c (the graphs of multi-vector fields), and above them
 * hnsw_api.c (the store's search and check calls) and hnsw_sync.c
 * (keeping graphs in line with documents and settings).  The layout
 * of the records is described in hnsw.c.
 */
#ifndef HNSW_INT_H
#define HNSW_INT_H

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
	uint32_t *vkeys;              /* visited set: lid + 1, open addressing */
	size_t vcap, vused;
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
	 * number).  An entry is valid while its epoch is the scratch's epoch,
	 * which hnsw_forget_all bumps, and, for a block outside the memory map
	 * (a page written in this transaction), while its gen is the scratch's
	 * gen, which every graph write bumps: a write may move or spill dirty
	 * pages, never a page of the map the transaction sees. */
	struct hnsw_block {
		const uint8_t *p;
		uint32_t block, gen, epoch;
		int mapped;
	} *blocks;
	uint32_t gen, epoch;
	const struct doctype *owner;  /* the graph the blocks belong to */
	int owner_sf;
};
#define HNSW_BLOCK_CACHE 4096

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

uint32_t hnsw_rd(const void *p, size_t i);               /* word i of a record */
size_t hnsw_list_off(const struct hnsw_graph *g, uint32_t level); /* word of level's count */
size_t hnsw_rec_words(const struct hnsw_graph *g, uint32_t level);
void hnsw_node_key(const struct hnsw_graph *g, uint32_t lid, uint8_t key[6]);
/* The value of key in the graph DB (v->mv_data NULL when there is none),
 * valid until the next write. */
int hnsw_db_get(struct hnsw_graph *g, const void *key, size_t klen, MDB_val *v);
/* lid's record (*rec NULL when lid is no node), valid until the next write. */
int hnsw_node_get(struct hnsw_graph *g, uint32_t lid, const void **rec, uint32_t *level);
/* The head; count 0 when the graph is empty. */
int hnsw_head_get(struct hnsw_graph *g, struct hnsw_head *h);
/* lid's vector (NULL: none), valid until the next write (which must call
 * hnsw_forget). */
const void *hnsw_vec(struct hnsw_graph *g, uint32_t lid);
/* Before a write to the graph: pointers into pages written in this
 * transaction go. */
void hnsw_forget(struct hnsw_graph *g);
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

#endif
