/*
 * store.h: the document store, on LMDB.
 *
 * A store holds documents of one or more document types.  Each type has a
 * fixed list of fields (struct store_field); the store keeps every document
 * whole for summaries, and keeps attribute fields of fixed size (numbers,
 * bools, dense tensors) in columns, so that ranking reads a document's
 * attribute straight from the memory map: store_attr() returns a pointer into
 * the map, aligned for its cell type, with no copy.
 *
 *     struct store_env *env;
 *     store_open("app/.strata", &env, &err);
 *     int dt;
 *     store_doctype_add(env, &product_type, &dt, &err);
 *     struct store_txn *w;
 *     store_txn_begin(env, 1, &w, &err);
 *     store_put(w, dt, "id:shop:product::1", values, &err);   // values[nfields]
 *     store_txn_commit(w, &err);
 *
 *     struct store_txn *r;
 *     store_txn_begin(env, 0, &r, &err);
 *     for (uint32_t lid = 0; store_next(r, dt, &lid) == 0; lid++) {
 *         const float *e = store_attr(r, dt, EMB_FIELD, lid);  // into the map
 *         ...
 *     }
 *     store_txn_abort(r);
 *
 * Threads: one write transaction at a time (others wait); any number of read
 * transactions, each used by one thread at a time, never blocked by the
 * writer.  One thread may hold several read transactions.  A read
 * transaction sees the snapshot of its start.  Pointers returned from a read
 * transaction are valid until it ends.  In a write transaction they are valid
 * only until the next put/update/remove, and may point to the transaction's
 * private pages rather than into the map.
 *
 * Limits: a document id is at most 511 bytes (LMDB's key size; longer ids
 * are refused, never truncated), a string or JSON value at most 16 MiB, a tensor
 * value at most 16 MiB.  Local ids are handed out in increasing order and
 * never reused.
 *
 * Failures inside a write transaction mark it failed: every later call on it
 * returns STRATA_TXN_FAILED and only store_txn_abort() is allowed, so nothing
 * half-written is ever committed.  A failed put/update/remove that returns
 * STRATA_INVALID_ARGUMENT or STRATA_NOT_FOUND has written nothing and does
 * NOT fail the transaction.
 */
#ifndef STORE_H
#define STORE_H

#include <stddef.h>
#include <stdint.h>

#include "../base/base.h"

#define STORE_MAX_RANK 8

enum store_type {
	STORE_T_STRING = 1,
	STORE_T_INT,    /* int32 */
	STORE_T_LONG,   /* int64 */
	STORE_T_FLOAT,
	STORE_T_DOUBLE,
	STORE_T_BOOL,
	STORE_T_TENSOR, /* dense tensor: cell type and shape in the field */
	STORE_T_JSON,   /* a structured value (array, weighted set, map, struct) as JSON
	                   text: kept in the document like a string, never in a column */
};

/* One field of a document type. */
struct store_field {
	const char *name;
	int type;          /* enum store_type */
	int attribute;     /* 1: kept in a column (ignored for strings: they are read from the document) */
	int cell;          /* TENSOR: BASE_DT_FLOAT, DOUBLE, INT8, BFLOAT16, INT32 or INT64 */
	int rank;          /* TENSOR: number of dimensions */
	int64_t dims[STORE_MAX_RANK]; /* TENSOR: sizes */
	int text;          /* STRING: STORE_TEXT_ON | BASE_TOKEN_* flags for a text index, else 0;
	                      JSON: the same with STORE_TEXT_ARRAY or STORE_TEXT_WSET */
	int fast_search;   /* 1: a value dictionary (see store_dict_range), for a STRING
	                      field or a column attribute of type INT, LONG, FLOAT, DOUBLE
	                      or BOOL; ignored on other fields */
	/* TENSOR attributes of one dense dimension (cells float, double,
	 * bfloat16 or int8): a nearest-neighbour graph (HNSW) under this
	 * metric, STORE_METRIC_NONE for none; see store_hnsw_search(). */
	int hnsw_metric;   /* enum store_metric */
	int hnsw_m;        /* links per node and level (twice that on level 0); 0: 16 */
	int hnsw_ef;       /* candidates explored per insert; 0: 200 */
	/* JSON fields holding a multi-vector tensor (several vectors of
	 * vec_size cells per document), with hnsw_metric set: a graph whose
	 * nodes are the vectors.  The store keeps the vectors in the field's
	 * cell type vec_cell (float, double, bfloat16 or int8) and reads them
	 * from a stored value with vec_decode(vec_ud, text, n, a, &cells,
	 * &nvec), which sets cells to nvec * vec_size numbers made in arena a
	 * and returns 0, or returns STRATA_NOMEM or STRATA_CORRUPT (not such a
	 * value).  It must give the same vectors for the same text. */
	int vec_cell;
	int64_t vec_size;
	int (*vec_decode)(const void *vec_ud, const char *text, size_t n, struct base_arena *a,
	                  const double **cells, size_t *nvec);
	const void *vec_ud;
};

/* Distance metrics of a nearest-neighbour graph (Vespa's distance-metric). */
enum store_metric {
	STORE_METRIC_NONE = 0,
	STORE_METRIC_EUCLIDEAN,
	STORE_METRIC_ANGULAR,
	STORE_METRIC_DOTPRODUCT,
	STORE_METRIC_PRENORMALIZED_ANGULAR,
	STORE_METRIC_HAMMING,    /* int8 cells: differing bits; else differing cells */
	STORE_METRIC_GEODEGREES, /* (latitude, longitude) in degrees: great-circle km */
};

#define STORE_TEXT_ON 0x100    /* in store_field.text: the field has a text index */
#define STORE_TEXT_ARRAY 0x200 /* ... of a JSON field holding an array of strings */
#define STORE_TEXT_WSET 0x400  /* ... of a JSON field holding a weighted set of strings */
/* The tokenizer flags (base_token_next) of a store_field.text. */
#define STORE_TEXT_TOKEN_FLAGS(t) ((t) & ~(STORE_TEXT_ON | STORE_TEXT_ARRAY | STORE_TEXT_WSET))

struct store_doctype {
	const char *name;
	int nfields;
	const struct store_field *fields;
};

/* One field value.  set = 0 means absent.  Views are borrowed. */
struct store_value {
	int set;
	int64_t i;         /* INT, LONG, BOOL */
	double d;          /* FLOAT, DOUBLE */
	const char *s;     /* STRING, JSON: bytes (not NUL-terminated when read back) */
	size_t n;          /* STRING, JSON: length in bytes; TENSOR: number of cells */
	const void *cells; /* TENSOR: n cells of the field's cell type */
};

struct store_env;
struct store_txn;

/* Open (creating if missing, with its parents, mode 0755) the store in
 * folder dir.  Returns 0, an errno, STRATA_STORE, STRATA_NOMEM.  On success
 * *out is a new handle for store_close().  A folder may be open only once
 * in a process at a time (LMDB's rule); other processes may open it too. */
int store_open(const char *dir, struct store_env **out, struct strata_error *err);

/* Settings for store_open_opts(); zero means the default. */
struct store_options {
	uint64_t map_size; /* largest the store may grow, bytes (default 64 GiB,
	                      address space only: the file grows as it fills) */
};
/* store_open() with options (opts may be NULL).  Past map_size, writes fail
 * with STRATA_STORE ("store is full") and fail their transaction. */
int store_open_opts(const char *dir, const struct store_options *opts,
                    struct store_env **out, struct strata_error *err);

/* Close the store and free the handle.  Every transaction must have ended.
 * NULL is ignored. */
void store_close(struct store_env *env);

/* Make a document type known to the store (each time the store is opened,
 * before transactions begin).  The first time, its layout is recorded; later
 * the given layout must agree with the recorded one: fields may be added (in
 * any order; fields are matched by name), but an existing field whose type,
 * cell type, shape or attribute flag changed is refused with
 * STRATA_INVALID_ARGUMENT naming the field and both types (the stored data
 * is left as it is).  A recorded field the given layout omits is hidden, its
 * data kept.  The attribute flag of a string field is ignored.  The text
 * indexes, graphs and value dictionaries whose settings changed (a
 * fast-search flag set or cleared, or a field that is hidden now) are
 * rebuilt or dropped here, in one transaction with the layout.  Names: the
 * type's is 1-200 of [A-Za-z0-9_.-], fields' 1-200 bytes, unique.  *id is the
 * handle used below; field indexes below are those of the given struct,
 * which may be freed after the call.  Returns 0, STRATA_INVALID_ARGUMENT,
 * STRATA_EXISTS (added twice), STRATA_LIMIT (more than 40 types),
 * STRATA_CORRUPT (an unreadable recorded layout), STRATA_STORE,
 * STRATA_NOMEM. */
int store_doctype_add(struct store_env *env, const struct store_doctype *dt, int *id,
                      struct strata_error *err);

/* Begin a read (write = 0) or write transaction; a write waits for the
 * current writer.  Returns 0, STRATA_LIMIT (too many readers),
 * STRATA_STORE, STRATA_NOMEM.  End it with store_txn_commit() or
 * store_txn_abort(). */
int store_txn_begin(struct store_env *env, int write, struct store_txn **out,
                    struct strata_error *err);
/* Commit a write transaction (synced to disk on return) and free it.  A read
 * transaction is just ended.  On failure nothing is committed and the txn is
 * freed all the same.  Returns 0, STRATA_TXN_FAILED (it failed earlier),
 * STRATA_STORE, or an errno (I/O). */
int store_txn_commit(struct store_txn *txn, struct strata_error *err);
void store_txn_abort(struct store_txn *txn);
/* The snapshot txn reads: two read transactions with the same id see the
 * same data (LMDB's transaction id).  Any thread. */
uint64_t store_txn_id(const struct store_txn *txn);

/* Write a whole document (replacing an earlier one with the same id: fields
 * not set become absent).  values has one entry per field of the type; a
 * FLOAT is stored as float, an INT must fit int32, a BOOL is i != 0.
 * Returns 0, STRATA_INVALID_ARGUMENT (a tensor of the wrong cell count, an
 * empty or too long id, a value out of range, a read transaction),
 * STRATA_LIMIT, STRATA_TXN_FAILED, STRATA_STORE, STRATA_CORRUPT,
 * STRATA_NOMEM, or an errno.  Input errors are found before anything is
 * written and leave the transaction usable; an error after the first write
 * (LMDB failing, a full store) fails the transaction. */
int store_put(struct store_txn *w, int doctype, const char *docid,
              const struct store_value *values, struct strata_error *err);

/* Assign the fields whose value is set; the others keep their value.
 * Returns 0, STRATA_NOT_FOUND (no such document), STRATA_CORRUPT (the stored
 * record is unreadable; nothing written), and store_put's errors. */
int store_update(struct store_txn *w, int doctype, const char *docid,
                 const struct store_value *values, struct strata_error *err);

/* Remove a document.  Returns 0, STRATA_NOT_FOUND, STRATA_TXN_FAILED, STRATA_STORE. */
int store_remove(struct store_txn *w, int doctype, const char *docid,
                 struct strata_error *err);

/* The local id of a document, for the calls below.  Returns 0,
 * STRATA_NOT_FOUND, STRATA_INVALID_ARGUMENT (a bad id), STRATA_TXN_FAILED. */
int store_lookup(struct store_txn *txn, int doctype, const char *docid, uint32_t *lid,
                 struct strata_error *err);

/* The first live local id >= *lid: sets *lid and returns 0, or returns
 * STRATA_NOT_FOUND when there is none.  Ids are visited in increasing order;
 * asking for the id after the last one found is a cursor step, not a search.
 * Other errors: STRATA_INVALID_ARGUMENT (bad handle), STRATA_TXN_FAILED,
 * STRATA_STORE. */
int store_next(struct store_txn *txn, int doctype, uint32_t *lid);

/* Number of live documents of the type (0 on a bad handle). */
uint64_t store_count(struct store_txn *txn, int doctype);
/* Whether the live local ids of the type are exactly 0 .. *n - 1 (none
 * removed, or every gap filled again), so that a scan of them all needs
 * no store_next: 1 with *n set, else 0 (gaps, or an error). */
int store_dense(struct store_txn *txn, int doctype, uint32_t *n);

/* The document id of lid (valid until the txn ends), or NULL. */
const char *store_docid(struct store_txn *txn, int doctype, uint32_t lid);

/* All fields of a document: values[nfields] receives views valid until the
 * transaction ends (absent fields have set = 0).  Column attributes are
 * views into their column (tensors in cells + n, numbers copied into i/d).
 * Returns 0, STRATA_NOT_FOUND, STRATA_CORRUPT, STRATA_TXN_FAILED,
 * STRATA_NOMEM. */
int store_get(struct store_txn *txn, int doctype, uint32_t lid, struct store_value *values,
              struct strata_error *err);

/* The attribute value of field for lid: a pointer into the memory map to the
 * cells (a tensor) or the single value (int32_t, int64_t, float, double, or
 * uint8_t for a bool), aligned to 8 bytes at least, valid until the
 * transaction ends.  NULL when the document has no value for the field, the
 * field is not a column attribute, the handle, field or lid is out of range,
 * or the transaction failed.  Cheap: consecutive lids of one field usually
 * share a block, and the transaction remembers the last block per field. */
const void *store_attr(struct store_txn *txn, int doctype, int field, uint32_t lid);
/* store_attr() for each of lids[0..n) into out[0..n), looking each column
 * block up once for a run of lids in it (lids in increasing order read
 * each block once).  Same lifetime. */
void store_attr_rows(struct store_txn *txn, int doctype, int field, const uint32_t *lids,
                     size_t n, const void **out);

/* ---- the text index ------------------------------------------------------------
 *
 * A string field whose store_field.text has STORE_TEXT_ON is tokenized with
 * base_token_next() (its BASE_TOKEN_* flags) by every put, update and
 * remove, in the same transaction: after a crash the index and the
 * documents agree.  For each term, a posting list in local id order with
 * the term's positions; for each document, the field's length in tokens;
 * for the field, the number of documents with a value and their total
 * length.  Changing a field's text flags rebuilds its index when the
 * doctype is added.  Field indexes are the caller's.
 *
 * A JSON field may be a collection of strings (STORE_TEXT_ARRAY: the value
 * is a JSON array of strings; STORE_TEXT_WSET: a JSON object of int32
 * weights, {"key": weight}).  Each element (key) is tokenized on its own;
 * positions run on from element to element with one unused position
 * between two, so terms at consecutive positions are in one element (a
 * phrase never spans two), and store_text_element() maps a position back to
 * its element and weight.  The field's length is the sum of its elements'.
 * A value that is not such JSON fails the write with STRATA_CORRUPT. */
struct store_postings;
/* Open the posting list of term (n bytes, as the tokenizer makes it) in
 * field, positioned on its first posting.  Returns 0,
 * STRATA_INVALID_ARGUMENT (no text index on the field, a term over
 * BASE_TOKEN_MAX bytes), STRATA_TXN_FAILED, STRATA_STORE, STRATA_NOMEM.
 * Close it before the transaction ends.  A write transaction's own
 * documents are in the text index once it commits (its postings and
 * frequencies are written then). */
int store_postings_open(struct store_txn *txn, int doctype, int field, const char *term, size_t n,
                        struct store_postings **out, struct strata_error *err);
/* Documents that contain the term (the list's length). */
uint64_t store_postings_df(const struct store_postings *p);
/* Move to the first posting whose local id is >= *lid and set *lid: 0, or
 * STRATA_NOT_FOUND past the end (STRATA_STORE if LMDB fails).  Cheapest in
 * increasing order (the next id is one step); any order works. */
int store_postings_seek(struct store_postings *p, uint32_t *lid);
/* The term's number of occurrences in the current document; its first max
 * positions (token numbers in the field, increasing) go to pos (may be NULL). */
uint32_t store_postings_positions(const struct store_postings *p, uint32_t *pos, uint32_t max);
/* The term's occurrences in the current document (the positions' count,
 * without reading them), and the field's length there in tokens (as
 * store_text_length gives it, kept beside the posting). */
uint32_t store_postings_tf(const struct store_postings *p);
uint32_t store_postings_dl(const struct store_postings *p);
/* The block of postings the list is on: its last local id, and bounds of
 * every posting in it, the most occurrences and the shortest field
 * length, for scores that grow with the one and fall with the other.
 * Returns 0, or STRATA_NOT_FOUND past the end. */
int store_postings_block(const struct store_postings *p, uint32_t *last, uint32_t *max_tf,
                         uint32_t *min_dl);
/* The local ids of the block from the current posting on, increasing, in
 * *lids (valid until the list moves); their number, 0 past the end.  A
 * seek past the last moves to the next block. */
uint32_t store_postings_rest(const struct store_postings *p, const uint32_t **lids);
void store_postings_close(struct store_postings *p); /* NULL is ignored */
/* The terms of field that begin with prefix (n bytes), in byte order:
 * fn(ud, term, len) for each (term valid during the call) until it returns
 * non-zero, which is returned.  Returns 0, STRATA_INVALID_ARGUMENT (no
 * text index on the field), STRATA_STORE. */
int store_text_terms(struct store_txn *txn, int doctype, int field, const char *prefix, size_t n,
                     int (*fn)(void *ud, const char *term, size_t len), void *ud,
                     struct strata_error *err);
/* The length in tokens of field's value in lid: 0, STRATA_NOT_FOUND (no
 * value), STRATA_INVALID_ARGUMENT, STRATA_CORRUPT, STRATA_STORE. */
int store_text_length(struct store_txn *txn, int doctype, int field, uint32_t lid, uint32_t *len,
                      struct strata_error *err);
/* The element of lid's value of field that holds token position pos (as
 * store_postings_positions gives them): its number in the value (0, 1,
 * ...) in *elem, and its weight (a weighted set's; 1 in an array) in
 * *weight.  A string field has one element, weight 1.  Returns 0,
 * STRATA_NOT_FOUND (no value, or no element at pos),
 * STRATA_INVALID_ARGUMENT, STRATA_CORRUPT, STRATA_STORE. */
int store_text_element(struct store_txn *txn, int doctype, int field, uint32_t lid, uint32_t pos,
                       uint32_t *elem, int32_t *weight, struct strata_error *err);
/* store_text_element for the n positions pos[] of lid (increasing or not)
 * with one read of its element table: elem[i] and weight[i] for pos[i],
 * elem[i] UINT32_MAX (weight 1) when no element holds it.  Returns 0,
 * STRATA_NOT_FOUND (no value), STRATA_INVALID_ARGUMENT, STRATA_CORRUPT,
 * STRATA_STORE. */
int store_text_elements(struct store_txn *txn, int doctype, int field, uint32_t lid,
                        const uint32_t *pos, uint32_t n, uint32_t *elem, int32_t *weight,
                        struct strata_error *err);
/* store_text_elements for positions pos[0..n) of lid, with each one's
 * element's length in tokens: elem[i] its element (UINT32_MAX, len[i] 0,
 * when none holds it) and len[i] that element's length (a string field:
 * element 0, the field's length).  Returns 0, STRATA_NOT_FOUND (no value),
 * STRATA_INVALID_ARGUMENT, STRATA_CORRUPT, STRATA_STORE. */
int store_text_element_spans(struct store_txn *txn, int doctype, int field, uint32_t lid,
                             const uint32_t *pos, uint32_t n, uint32_t *elem, uint32_t *len,
                             struct strata_error *err);
/* Text tokenized ahead of its write, on any thread (text_tokens.c): the
 * value s[0..n) of text field `field` (a single string) of doctype,
 * tokenized into *pre (made when NULL, else reused) as a write would.
 * Offered to a write transaction with store_txn_pretext, it spares the
 * write tokenizing a value of the same bytes.  s must stay as it is while
 * pre is offered.  Needs only what store_open and the doctype registration
 * made, so another thread may call it while one writes.  Returns 0,
 * STRATA_INVALID_ARGUMENT (not such a field), STRATA_NOMEM, STRATA_LIMIT. */
struct store_pretext;
int store_pretext_make(struct store_env *env, int doctype, int field, const char *s, size_t n,
                       struct store_pretext **pre, struct strata_error *err);
void store_pretext_free(struct store_pretext *pre); /* NULL: nothing */
/* Offer pre[0..n) to the writes of w until the next call (n = 0: none):
 * a text field whose value is the same bytes as one of them, under the
 * same settings, is indexed from its tokens. */
void store_txn_pretext(struct store_txn *w, struct store_pretext *const *pre, int n);
/* Documents with a value in field and their total length in tokens (bm25's
 * average field length).  Returns 0, STRATA_INVALID_ARGUMENT, STRATA_STORE. */
int store_text_stats(struct store_txn *txn, int doctype, int field, uint64_t *docs,
                     uint64_t *tokens, struct strata_error *err);

/* The elements of field over the documents with a value (a string is
 * one; a collection, its elements, empty ones too): the total tokens over
 * it is the average element length.  Returns 0, STRATA_INVALID_ARGUMENT,
 * STRATA_STORE. */
int store_text_element_total(struct store_txn *txn, int doctype, int field, uint64_t *elements,
                             struct strata_error *err);

/* Check doctype's text index against itself and the documents
 * (text_check.c): every block decodes and its bounds are its postings';
 * every posting is of a live document and has its field length; each
 * term's frequency is its number of postings; the fields' totals are the
 * sums of their length entries.  *postings gets the postings read.  Reads
 * the whole index: for tests and repair tools.  Returns 0, STRATA_CORRUPT
 * naming the first fault, STRATA_TXN_FAILED, STRATA_STORE, STRATA_NOMEM. */
int store_text_check(struct store_txn *txn, int doctype, uint64_t *postings,
                     struct strata_error *err);

/* ---- nearest-neighbour graphs ---------------------------------------------------
 *
 * A tensor field with hnsw_metric set has an HNSW graph (hierarchical
 * navigable small world, Malkov and Yashunin) over the documents that have a
 * value, kept in the store and changed by every put, update and remove in
 * the same transaction as the document: after a crash the graph and the
 * documents agree, and opening the store never rebuilds it (only adding a
 * graph to a field, or changing its metric or settings, does, in
 * store_doctype_add).  Node ids are local ids; a document's level is drawn
 * from a hash of its local id, so the same feed builds the same graph.
 * Searching reads the neighbour lists and vectors straight from the memory
 * map.
 *
 * A multi-vector field (store_field.vec_decode) has a node per vector of
 * each document, numbered in the order vectors are inserted (node ids are
 * never reused); its search returns documents, each at the distance of its
 * nearest vector, exploring until it has k distinct documents. */

/* One result of store_hnsw_search(). */
struct store_hit {
	uint32_t lid;
	double distance; /* in the metric's own order: euclidean gives the square of the
	                    distance, angular 1 - cos; others are the distance itself
	                    (dotproduct -a.b, prenormalized-angular 1 - a.b, hamming,
	                    geodegrees km) */
};

/* The k documents (at most) nearest to query (n cells, the field's cell
 * count) in field's graph, approximately: the search keeps the ef best
 * candidates (ef < k counts as k).  filter (NULL: none) is a bitmap of
 * local ids, bit lid % 64 of word lid / 64, nbits bits: only documents
 * whose bit is set are returned, and the search explores further until it
 * has k of them or the graph is exhausted.  out[k] receives the hits,
 * nearest first, *nout their number.  Returns 0, STRATA_INVALID_ARGUMENT
 * (no graph on the field, a wrong cell count, a bad handle),
 * STRATA_CORRUPT, STRATA_TXN_FAILED, STRATA_STORE, STRATA_NOMEM.  Reads
 * only; any number of threads, each with its own read transaction. */
int store_hnsw_search(struct store_txn *txn, int doctype, int field, const double *query,
                      size_t n, uint32_t k, uint32_t ef, const uint64_t *filter, size_t nbits,
                      struct store_hit *out, size_t *nout, struct strata_error *err);

/* A search of store_hnsw_search_with: k, ef, filter and nbits as in
 * store_hnsw_search, and how far it explores (Vespa's adaptive beam search
 * and filter-first search, all 0 for plain HNSW):
 * - slack: candidates are followed while their distance is below the
 *   worst of the ef kept plus slack times its magnitude (0: below it);
 * - filter_first (with a filter): a node the filter drops gets no
 *   distance; the search looks instead at the neighbours of the nodes it
 *   expands two hops away (three when fewer than exploration * links^2
 *   nodes lie within two), keeping those the filter passes, up to a
 *   neighbour list's length; when that finds fewer than k, the plain
 *   search runs instead. */
struct store_hnsw_params {
	uint32_t k, ef;
	const uint64_t *filter;
	size_t nbits;
	double slack;
	int filter_first;
	double exploration;
};
/* store_hnsw_search with every parameter: the same results and errors. */
int store_hnsw_search_with(struct store_txn *txn, int doctype, int field, const double *query,
                           size_t n, const struct store_hnsw_params *sp, struct store_hit *out,
                           size_t *nout, struct strata_error *err);

/* Check field's graph against the documents: a node for exactly the
 * documents with a value, records of the right size, links to nodes only
 * of the levels they are on, never to themselves, the entry point on the
 * top level, the node count.  *nodes (may be NULL) receives the number of
 * nodes.  Returns 0, STRATA_CORRUPT naming the first fault,
 * STRATA_INVALID_ARGUMENT (no graph), STRATA_STORE, STRATA_NOMEM. */
int store_hnsw_check(struct store_txn *txn, int doctype, int field, uint64_t *nodes,
                     struct strata_error *err);

/* Bytes the field's graph takes in the store (keys and records, without
 * LMDB's page overhead); 0 without a graph. */
uint64_t store_hnsw_bytes(struct store_txn *txn, int doctype, int field);

/* ---- value dictionaries (fast-search) -------------------------------------------
 *
 * A field with store_field.fast_search (a STRING field, or a column
 * attribute of type INT, LONG, FLOAT, DOUBLE or BOOL) has a dictionary from
 * value to the local ids of the documents holding it, so that the documents
 * with a value, or with a number in a range, are found without reading
 * every document.  Every put, update and remove changes it in the same
 * transaction as the document: after a crash the dictionary and the
 * documents agree.  store_doctype_add builds the dictionary of a field that
 * gains the flag (or of a store written before dictionaries) from the
 * documents, once, and drops the dictionary of a field that loses it.
 *
 *     uint32_t *lids;
 *     size_t n;
 *     if (store_dict_range(r, dt, PRICE, 10.0, 20.0, &lids, &n, &err) == 0) {
 *         for (size_t i = 0; i < n; i++)      // increasing local ids
 *             ... lids[i] ...
 *         store_dict_free(lids, n);
 *     }
 *     store_dict_string(r, dt, BRAND, "acme", 4, &lids, &n, &err);
 *
 * Numbers are compared as the double the column's value converts to
 * exactly (an INT, FLOAT or BOOL: the value itself; a BOOL is 0 or 1), so
 * a LONG beyond 2^53 in magnitude is compared rounded to a double and may
 * match a range its exact value lies just outside: check the column when
 * that matters.  -0.0 and 0.0 are one value.  A NaN is in the dictionary
 * but never in a range (no comparison with NaN holds).
 *
 * Strings are compared as bytes.  An LMDB key is short, so the dictionary
 * keeps at most STORE_DICT_STRING_MAX bytes of a value (a NUL byte counts
 * twice): a longer value is kept under its first bytes, and a lookup of a
 * longer value gives every document whose value is longer too and begins
 * with the same STORE_DICT_STRING_MAX bytes.  So the dictionary never gives
 * fewer documents than hold the exact value, but may give more: compare
 * the stored value when an exact answer for such long values matters.
 * Lookups of values up to STORE_DICT_STRING_MAX bytes (without NUL) are
 * exact.
 *
 * Results are read in the snapshot of txn (a write transaction sees its own
 * writes).  Reads only; any number of threads, each with its own read
 * transaction.  Field indexes are the caller's. */

/* Bytes of a string value a dictionary key keeps (a NUL byte counts twice). */
#define STORE_DICT_STRING_MAX 480

/* Whether field has a dictionary: 1 or 0 (also for a bad handle). */
int store_dict_has(struct store_txn *txn, int doctype, int field);

/* The local ids of the live documents whose value v of the numeric field
 * has lo <= v <= hi (lo may be -INFINITY, hi INFINITY; a NaN bound, or lo >
 * hi, matches nothing), increasing and each once, in a new array *lids of
 * *n ids (NULL when none), which the caller frees with store_dict_free(*lids,
 * *n) (that is base_free(*lids, *n * sizeof **lids)).  Returns 0,
 * STRATA_INVALID_ARGUMENT (no dictionary on the field, a string field, a
 * bad handle), STRATA_TXN_FAILED, STRATA_CORRUPT, STRATA_STORE,
 * STRATA_NOMEM; on an error *lids is NULL and *n 0. */
int store_dict_range(struct store_txn *txn, int doctype, int field, double lo, double hi,
                     uint32_t **lids, size_t *n, struct strata_error *err);

/* The local ids of the live documents whose value of the string field is
 * s[0..len) (longer values: see above), increasing, in a new array as
 * store_dict_range gives them.  Returns 0, STRATA_INVALID_ARGUMENT (no
 * dictionary on the field, a numeric field, a bad handle),
 * STRATA_TXN_FAILED, STRATA_CORRUPT, STRATA_STORE, STRATA_NOMEM. */
int store_dict_string(struct store_txn *txn, int doctype, int field, const char *s, size_t len,
                      uint32_t **lids, size_t *n, struct strata_error *err);

/* The documents whose value of field is v (a numeric field; s NULL) or
 * s[0..len) (a string field), read in lid order through a cursor into
 * *out, which store_dict_value_seek moves and store_dict_value_close
 * closes (before the transaction ends).  *est: their number when at most
 * 255, else the type's documents (a bound without counting them all).
 * Returns 0, or an error as store_dict_range's. */
struct store_dict_cursor;
int store_dict_value_open(struct store_txn *txn, int doctype, int field, double v, const char *s,
                          size_t len, struct store_dict_cursor **out, uint64_t *est,
                          struct strata_error *err);
/* Move to the first document >= *lid and set *lid: 0, STRATA_NOT_FOUND
 * past the last, STRATA_STORE.  Cheapest with *lid increasing. */
int store_dict_value_seek(struct store_dict_cursor *d, uint32_t *lid);
void store_dict_value_close(struct store_dict_cursor *d); /* NULL: nothing */

/* Free a result of store_dict_range or store_dict_string (NULL: nothing). */
void store_dict_free(uint32_t *lids, size_t n);

/* The exact number of documents store_dict_range would give (not an
 * estimate), without making or sorting the array: a walk over the range's
 * keys in the memory map (some 170 documents to a 4 KiB page of a number's
 * keys) that allocates nothing, so its cost still grows with the count.
 * Returns store_dict_range's codes but STRATA_NOMEM. */
int store_dict_count(struct store_txn *txn, int doctype, int field, double lo, double hi,
                     uint64_t *n, struct strata_error *err);
/* The same for store_dict_string. */
int store_dict_string_count(struct store_txn *txn, int doctype, int field, const char *s,
                            size_t len, uint64_t *n, struct strata_error *err);

/* Check field's dictionary against the documents: one entry for each
 * document with a value, under that value, and no other entry.  Reads
 * every document: for tests and repair tools.  Returns 0, STRATA_CORRUPT
 * naming the first disagreement, STRATA_INVALID_ARGUMENT (no dictionary),
 * STRATA_TXN_FAILED, STRATA_STORE. */
int store_dict_check(struct store_txn *txn, int doctype, int field, struct strata_error *err);

/* Whether ptr lies inside the store's memory map (for zero-copy checks). */
int store_in_map(const struct store_env *env, const void *ptr);

#endif
