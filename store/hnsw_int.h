/*
 * hnsw_int.h: what the graph files share: hnsw.c (records, searching,
 * checking) and hnsw_write.c (inserting, removing, rebuilding).  The layout
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
	struct hnsw_scratch *s;
	/* dotproduct while writing: distances between documents are euclidean
	 * after the transformation that makes inner products a metric: each
	 * vector x gains a cell sqrt(max_norm2 - |x|^2).  Queries compare with
	 * -a.b, which orders documents the same way. */
	int mips;
	double max_norm2;
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

uint32_t hnsw_rd(const void *p, size_t i);               /* word i of a record */
size_t hnsw_list_off(const struct hnsw_graph *g, uint32_t level); /* word of level's count */
size_t hnsw_rec_words(const struct hnsw_graph *g, uint32_t level);
void hnsw_node_key(const struct hnsw_graph *g, uint32_t lid, uint8_t key[6]);
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

#endif
