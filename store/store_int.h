/*
 * store_int.h: what the files of the store share (env.c, doc.c, attr.c).
 *
 * On disk (one LMDB environment per store):
 *   "meta"        named DB: "t/<doctype>" -> the recorded field layout,
 *                 "n/<doctype>" -> the next local id (u32)
 *   "<dt>/ids"    document id string -> local id (u32)
 *   "<dt>/docs"   local id (u32, MDB_INTEGERKEY) -> document record (doc.c)
 *   "<dt>/cols"   (column number << 32 | block number) as a 64-bit
 *                 MDB_INTEGERKEY -> a column block (attr.c)
 *   "<dt>/text"   the text index of the fields with one (text.c), keys
 *                 starting with the stored field number (u16, big-endian):
 *                 F term 0x00 lid(u32 BE) -> a block of the term's
 *                 postings from lid on, each its lid, the term's
 *                 occurrences and positions and the field's length, with
 *                 the block's bounds on them (text_blocks.c);
 *                 F term 0x00 -> the number of those postings (u32); F 0xFF lid(u32 BE) -> the field's
 *                 length in tokens (u32), for an array or weighted set
 *                 followed by (first position, length, weight) per element
 *                 (u32 each); F 0xFE -> documents with the field
 *                 and their total length (two u64).  Written in the same
 *                 transaction as the document, so they always agree.
 *   "meta" "x/<doctype>" -> the text settings the index was built with.
 *   "<dt>/hnsw"   the nearest-neighbour graphs (hnsw.c): key field (u16 BE)
 *                 -> the graph's head (entry point, top level, node count);
 *                 field (u16 BE) lid (u32 BE) -> the node's neighbour lists.
 *                 A multi-vector field's graph (hnsw_multi.c) numbers its
 *                 nodes apart from local ids: field node (u32 BE) -> the
 *                 node's lists and its document's lid; field lid (u32 BE)
 *                 'd' -> the document's nodes (u32 each); field 'n' -> the
 *                 next node id (u32).  Its vectors are in "cols" under the
 *                 field's column number, one cell per node: the vector,
 *                 then the document's lid (u32).
 *   "meta" "g/<doctype>" -> the graph settings the graphs were built with
 *                 (an older "h/<doctype>" is replaced, its graphs rebuilt).
 *   "<dt>/dict"   the value dictionaries of fast-search fields (dict.c), one
 *                 entry per document with a value, the data empty: key
 *                 field (u16 BE) value lid (u32 BE), the value of a number
 *                 8 bytes (the double's bits, flipped so that bytes sort as
 *                 numbers: all of them when negative, the sign bit when
 *                 not; -0.0 as 0.0, every NaN as one), of a string its bytes
 *                 with each 0x00 as 0x00 0x01, then 0x00 0x00 (0x00 0x02 after
 *                 a value cut at STORE_DICT_STRING_MAX bytes), so a value's
 *                 entries are one key range in lid order.
 *   "meta" "d/<doctype>" -> the stored fields that have a dictionary (u32
 *                 each) and the dictionaries' format (u32), so an open
 *                 builds only a new one and drops one whose flag went.
 *
 * A doctype has two field lists.  The stored layout (struct sfield) is every
 * field ever recorded for the type, in the order first recorded: a stored
 * field's index is its column number and its number in document records, so
 * it never changes.  The caller's layout is the struct store_doctype passed to
 * store_doctype_add() in this process; field indexes in the API are the
 * caller's, mapped through ufield[] to stored fields.
 */
#ifndef STORE_INT_H
#define STORE_INT_H

#include <lmdb.h>
#include <pthread.h>

#include "store.h"

#define STORE_MAX_DOCTYPES 40      /* 6 named DBs each + meta must fit maxdbs */
#define STORE_MAX_DBS 256         /* 6 named DBs per doctype + meta */
#define STORE_MAX_FIELDS 4096
#define STORE_MAX_NAME 200         /* doctype and field names, bytes */
#define STORE_MAX_STRING (16u << 20)
#define STORE_MAX_CELL_BYTES (16u << 20) /* one document's tensor */
/* Minimum cell bytes of a new column's block: a block is one run in the map,
 * which a scan reads at memory speed; with blocks of 8 KB (8 rows of 384
 * floats) the first phase over them took 1.6 times as long.  A store keeps
 * the size it was made with. */
#define STORE_BLOCK_TARGET 65536
#define STORE_BITMAP_ALIGN 64      /* the presence bitmap is padded to this */

/* Types whose values are bytes in the record (strings, JSON text). */
#define STORE_IS_BYTES(t) ((t) == STORE_T_STRING || (t) == STORE_T_JSON)

/* A distance kernel: a and b are n cells of the field's cell type. */
typedef double (*store_dist_fn)(const void *a, const void *b, size_t n);

/* A field of the stored layout. */
struct sfield {
	char *name;        /* base_strdup */
	int type;          /* enum store_type */
	int attribute;     /* normalized: 0 for strings */
	int cell;          /* BASE_DT_* for tensors, 0 otherwise */
	int rank;
	int64_t dims[STORE_MAX_RANK];
	/* Derived. */
	int column;        /* 1: values live in column blocks, not in records */
	uint64_t ncells;   /* tensors: product of dims */
	uint32_t cell_bytes;    /* column: bytes of one document's value */
	uint32_t block_shift;   /* column: log2 of documents per block */
	uint32_t bitmap_bytes;  /* column: presence bitmap, padded */
	size_t block_bytes;     /* column: bitmap + cells */
	int user;          /* caller's field index, -1 when the caller omits it */
	int text;          /* store_field.text for a string or collection field with a text
	                      index (STORE_TEXT_ON set), 0 without one */
	int hnsw_metric;   /* enum store_metric: a graph (hnsw.c), 0 without */
	int hnsw_m, hnsw_ef;
	int dict;          /* 1: a value dictionary (dict.c): store_field.fast_search on a
	                      string field or a number or bool column */
	store_dist_fn dist; /* the graph's distance kernel (hnsw_dist.c) */
	/* A JSON field of a multi-vector tensor with a graph (store_field's
	 * vec_*): multi is 1 and the graph's vectors live in a column of this
	 * field's number indexed by node id, not local id (hnsw_multi.c), whose
	 * geometry (cell_bytes, block_shift, ...) hnsw_sync.c fills in;
	 * ncells is vec_size. */
	int multi;
	int vec_cell;
	int (*vec_decode)(const void *vec_ud, const char *text, size_t n, struct base_arena *a,
	                  const double **cells, size_t *nvec);
	const void *vec_ud;
};

struct doctype {
	char *name;
	MDB_dbi ids, docs, cols, text, hnsw, dict;
	int ndict;               /* stored fields with a dictionary */
	int nstored;
	int stored_cap;          /* allocated entries; unused ones are zero */
	struct sfield *stored;
	int nuser;
	int *ufield;             /* nuser: caller index -> stored index */
	/* store_doc_bytes, set by doctype.c, for hnsw_multi.c and dict.c (which
	 * read the records they are called from the writes of, so cannot name
	 * doc.c) */
	int (*doc_bytes)(struct store_txn *txn, const struct doctype *dt, uint32_t lid, int sf,
	                 const char **s, size_t *n, struct strata_error *err);
};

struct store_env {
	MDB_env *env;
	MDB_dbi meta;
	unsigned maxkey;         /* longest key LMDB accepts */
	unsigned psize;          /* database page size */
	const char *map_lo;      /* the memory map, for store_in_map */
	size_t map_size;
	int ntypes;
	struct doctype *types[STORE_MAX_DOCTYPES];
	/* The graphs' tables of pointers per snapshot (hnsw_snap.c), shared by
	 * the read transactions of every thread: under snap_lock. */
	pthread_mutex_t snap_lock;
	struct hnsw_snap *snaps;
	void (*snaps_free)(struct store_env *env); /* set with the first table */
};

/* One store_attr cache slot: the block last looked up for a field. */
struct attr_slot {
	const uint8_t *p;       /* block bytes, NULL when the block is missing */
	uint32_t block;
	int valid;
};

/* text_tokens.c: a value's tokens as the text index is built from them:
 * records of a position, a length and the token's bytes, each
 * store_tok_rec_size(n) bytes from the one before. */
struct store_tokbuf {
	struct base_tokenizer *tok; /* made on first use */
	uint8_t *buf;
	size_t cap;
};
struct store_tok_rec {
	uint32_t pos;
	uint16_t n;
	char s[];
};
size_t store_tok_rec_size(size_t n);
/* Tokenize s[0..n) with tokenizer flags into tb from *used on (advanced),
 * the first token at position base; *count gets the number of tokens.
 * Returns 0, STRATA_NOMEM or STRATA_LIMIT. */
int store_tokenize(struct store_tokbuf *tb, int flags, const char *s, size_t n, uint32_t base,
                   size_t *used, uint32_t *count, struct strata_error *err);
void store_tokbuf_free(struct store_tokbuf *tb);
/* The tokens offered to w (store_txn_pretext) for stored field sf of dt
 * whose value is s[0..n): 1 with *toks, *used, *count as store_tokenize
 * leaves them; 0 when none is. */
struct doctype;
int store_pretext_find(const struct store_txn *w, const struct doctype *dt, int sf, const char *s,
                       size_t n, const uint8_t **toks, size_t *used, uint32_t *count);

struct store_txn {
	struct store_env *env;
	MDB_txn *txn;
	int write;
	int failed;
	/* store_attr cache: slots[t] has one slot per caller field of type t,
	 * for the types known when the txn began. */
	int ntypes;
	struct attr_slot *slots[STORE_MAX_DOCTYPES];
	struct attr_slot *slot_mem;
	size_t slot_count;
	/* store_next: a cursor per type, opened on first use. */
	MDB_cursor *cursors[STORE_MAX_DOCTYPES];
	uint32_t cursor_lid[STORE_MAX_DOCTYPES]; /* lid the cursor is on */
	int cursor_ok[STORE_MAX_DOCTYPES];
	/* Scratch buffer for building records (write txns); once a record is
	 * put, attr.c may use it to keep a block aside. */
	uint8_t *buf;
	size_t buf_cap;
	/* Text indexing (write txns, text.c): a value's tokens (its tokenizer
	 * made on first use), and values tokenized ahead that the next write
	 * may take (store_txn_pretext; text_tokens.c). */
	struct store_tokbuf tb;
	struct store_pretext *const *pre;
	int npre;
	uint8_t *ebuf;           /* a collection's element table */
	size_t ebuf_cap;
	/* Changes to term frequencies (text.c), written at commit: text.c sets
	 * the two hooks when it makes df, so that env.c does not depend on it. */
	struct store_text_df *df;
	int (*df_flush)(struct store_txn *w, struct strata_error *err);
	void (*df_free)(struct store_txn *w);
	/* Graph maintenance scratch (write txns, hnsw_sync.c), made on first
	 * use with the function that frees it. */
	struct hnsw_scratch *hnsw;
	void (*hnsw_free)(struct hnsw_scratch *s);
	/* Writes the graph changes it keeps until commit (hnsw_cache.c); also
	 * called before the graph is read from the store in this txn. */
	int (*hnsw_flush)(struct store_txn *w, struct strata_error *err);
	/* A document's dictionary keys read before a write changes it (dict.c:
	 * store_dict_before), for store_dict_after to compare with. */
	uint8_t *dkeys;
	size_t dkeys_cap, dkeys_used;
	/* Aligned copies of record tensors that LMDB left misaligned. */
	struct base_arena arena;
	int arena_used;
};

/* env.c */
int store_mdb_err(struct strata_error *err, int rc, const char *what);
int store_txn_check(struct store_txn *txn, int write, int doctype, struct strata_error *err);
/* After an LMDB write fails: mark the txn failed and report. */
int store_txn_fail(struct store_txn *txn, int rc, const char *what, struct strata_error *err);
const char *store_type_desc(const struct sfield *f, char *buf, size_t n);

/* env.c */
void store_doctype_free(struct doctype *dt);

/* doc.c: at store_doctype_add, inside its txn t: when the text settings
 * differ from the recorded ones (store_text_settings), rebuild dt's whole
 * text index from the documents and record the new settings.  Returns 0 or
 * an error. */
int store_doc_text_sync(MDB_txn *t, MDB_dbi meta, struct doctype *dt, struct strata_error *err);

/* text.c */
#define STORE_MAX_TEXT_FIELDS 64
/* The values of a document's text fields (set = 0: absent), for reindexing. */
struct store_text_vals {
	int n;
	int sf[STORE_MAX_TEXT_FIELDS];       /* stored field numbers */
	const char *s[STORE_MAX_TEXT_FIELDS];
	size_t len[STORE_MAX_TEXT_FIELDS];
	unsigned char set[STORE_MAX_TEXT_FIELDS];
};
/* Bring lid's text index entries of the fields in old/rec (the same fields
 * in both) from values old (NULL: none) to values rec (NULL: removed).
 * Tokenizes old completely before the first write, so old may point into
 * LMDB pages.  Returns 0, or an error; after an error the caller fails the
 * txn. */
int store_text_reindex(struct store_txn *w, struct doctype *dt, uint32_t lid,
                       const struct store_text_vals *old, const struct store_text_vals *rec,
                       struct strata_error *err);
/* text_elems.c: call fn(ud, string, length, weight) for each element of a
 * collection value s[0..n) of kind STORE_TEXT_ARRAY (a JSON array of
 * strings; weight 1) or STORE_TEXT_WSET (a JSON object of int32 weights),
 * the string decoded and valid during the call, until fn returns non-zero,
 * which is returned.  Returns 0, STRATA_CORRUPT (not such a value) or
 * STRATA_NOMEM. */
int store_text_elems(const char *s, size_t n, int kind,
                     int (*fn)(void *ud, const char *str, size_t len, int32_t weight), void *ud,
                     struct strata_error *err);
/* text_pend.c: the text-index changes of write transaction w, kept in
 * memory until it commits.  Key k[0..n) is a term's F term 0 in the index
 * dbi (at most STORE_TEXT_KEY_MAX bytes with a lid after it). */
#define STORE_TEXT_KEY_MAX (2 + BASE_TOKEN_MAX + 1 + 4)
/* Scratch for one document field's n tokens whose keys take keybytes in
 * all: the caller puts token i's key at keys[koff[i]..koff[i + 1]) and its
 * position at pos[i], then calls store_pend_terms and store_pend_doc.
 * Returns 0, STRATA_NOMEM or STRATA_LIMIT. */
int store_pend_scratch(struct store_txn *w, size_t n, size_t keybytes, uint32_t **pos,
                       uint32_t **koff, uint8_t **keys, struct strata_error *err);
/* Find (make when new) the pending term of each of the n keys in the
 * scratch, in the index dbi.  Returns 0, STRATA_NOMEM or STRATA_LIMIT. */
int store_pend_terms(struct store_txn *w, MDB_dbi dbi, size_t n, struct strata_error *err);
/* Add lid's postings from the n tokens in the scratch: one per distinct
 * term, with its positions and dl, the field's length in the document.
 * Returns 0 or an error. */
int store_pend_doc(struct store_txn *w, uint32_t lid, uint32_t dl, size_t n,
                   struct strata_error *err);
/* Add delta to the frequency of the term k[0..n) at the commit. */
int store_pend_df(struct store_txn *w, MDB_dbi dbi, const uint8_t *k, size_t n, int delta,
                  struct strata_error *err);
/* Take back lid's pending posting of the term k[0..n): 1 when there was
 * one (its frequency change goes with it), 0 when none is pending. */
int store_pend_drop(struct store_txn *w, MDB_dbi dbi, const uint8_t *k, size_t n, uint32_t lid);
/* Write w's pending postings and frequency changes (before w commits; the
 * rebuild calls it itself) and forget them.  Returns 0, STRATA_CORRUPT,
 * or an LMDB error reported. */
int store_text_flush(struct store_txn *w, struct strata_error *err);
/* Forget w's pending changes (the transaction is not committed). */
void store_text_df_free(struct store_txn *w);
/* Compare dt's text settings with those recorded in meta: *changed = 1
 * when they differ; record = 1 records them.  Returns 0 or an error. */
int store_text_settings(MDB_txn *t, MDB_dbi meta, const struct doctype *dt, int record,
                        int *changed, struct strata_error *err);

/* text.c: the text index's keys after the field (F): F 0xFF lid, a
 * document's length entry; F 0xFE, the field's totals.  A term's key
 * never begins with those bytes (no UTF-8 does).  The length entry's key
 * of lid in stored field sf at k (STORE_TEXT_KEY_MAX room); its bytes. */
#define STORE_TEXT_LEN_TAG 0xFF
#define STORE_TEXT_SUM_TAG 0xFE
size_t store_text_length_key(uint8_t *k, int sf, uint32_t lid);

/* text_blocks.c: a big-endian u32 at p (keys sort by it). */
void store_be32_put(uint8_t *p, uint32_t v);
uint32_t store_be32_get(const uint8_t *p);
/* text_blocks.c: v as a varint (7 bits a byte, low first) at p, at most 5
 * bytes; returns the byte after it. */
uint8_t *store_varint_put(uint8_t *p, uint32_t v);
/* text_blocks.c: a term's postings in blocks.  key starts with the
 * term's F term 0 (plen bytes) and has room for a lid after it, which the
 * functions use. */
struct store_post {
	uint32_t lid;
	uint32_t dl;           /* the field's length in the document, in tokens */
	uint32_t tf;           /* the term's occurrences there: its positions' count */
	const uint8_t *pos;    /* the term's positions (varint deltas) */
	size_t n;              /* their bytes */
};
/* Merge add[0..n) (increasing lids) into the term's blocks; an added lid
 * replaces a stored one.  Returns 0 or an error; the caller fails the txn. */
int store_post_merge(MDB_txn *t, MDB_dbi dbi, uint8_t *key, size_t plen,
                     const struct store_post *add, size_t n, struct strata_error *err);
/* Remove lid's posting: 0, STRATA_NOT_FOUND (none; err untouched) or an
 * error. */
int store_post_del(MDB_txn *t, MDB_dbi dbi, uint8_t *key, size_t plen, uint32_t lid,
                   struct strata_error *err);
/* A block of postings, as stored (text_blocks.c has the layout). */
#define STORE_BLOCK_MAX 128       /* postings in a block */
struct store_block {
	uint32_t n;                   /* its postings, 1 .. STORE_BLOCK_MAX */
	uint32_t max_tf;              /* the most occurrences of the term in one of them */
	uint32_t min_dl;              /* the shortest field length among them */
	const uint8_t *lids;          /* the lids after the first, varint deltas */
	/* per posting, little-endian numbers of a width (1, 2 or 4 bytes) the
	 * block chose: occurrences, field length, end of its positions */
	const uint8_t *tf, *dl, *off;
	int wtf, wdl, woff;
	const uint8_t *pos;           /* the positions, posting after posting */
	const uint8_t *end;           /* the block's end */
};
/* Read the header of the block b[0..size) into h: 0, or -1 when the bytes
 * are not a block. */
int store_block_open(const uint8_t *b, size_t size, struct store_block *h);
/* The block's n lids into lids, the first being first (its key's):
 * 0, or -1 when they are not increasing or the bytes are bad. */
int store_block_lids(const struct store_block *h, uint32_t first, uint32_t *lids);
/* Posting i's occurrences and field length. */
static inline uint32_t store_block_num(const uint8_t *col, int w, uint32_t i)
{
	const uint8_t *p = col + (size_t)i * (size_t)w;
	return w == 1 ? p[0] : w == 2 ? (uint32_t)(p[0] | p[1] << 8)
	                              : (uint32_t)p[0] | (uint32_t)p[1] << 8 |
	                                    (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint32_t store_block_tf(const struct store_block *h, uint32_t i)
{
	return store_block_num(h->tf, h->wtf, i);
}
static inline uint32_t store_block_dl(const struct store_block *h, uint32_t i)
{
	return store_block_num(h->dl, h->wdl, i);
}
/* Posting i's positions (varint deltas): *pos and their bytes; 0, or -1
 * when the block's offsets are bad. */
int store_block_pos(const struct store_block *h, uint32_t i, const uint8_t **pos, size_t *npos);
/* Decode the block v (its first lid first) into e (room for
 * STORE_BLOCK_MAX), checked against its header: 0, or STRATA_CORRUPT
 * reported. */
int store_post_decode(const MDB_val *v, uint32_t first, struct store_post *e, size_t *ne,
                      struct strata_error *err);
/* The number of positions (varints) in pos[0..n). */
uint32_t store_pos_count(const uint8_t *pos, size_t n);

/* attr.c */
/* The block geometry of f's column from f->cell_bytes (block_shift chosen
 * afresh when new_field, else kept) for page size psize. */
void store_col_geometry(struct sfield *f, unsigned psize, int new_field);
/* Set (cell != NULL) or clear (cell == NULL) lid's value in f's column.
 * Returns 0 or an LMDB/CORRUPT error; the caller fails the txn. */
int store_col_write(struct store_txn *txn, struct doctype *dt, int sf, uint32_t lid,
                    const void *cell, struct strata_error *err);
/* The column block of stored field sf holding ids block << block_shift
 * on (NULL: none), and lid's cell in such a block (NULL: no value); valid
 * until the next write. */
const uint8_t *store_col_block(struct store_txn *txn, const struct doctype *dt, int sf,
                               uint32_t block);
const void *store_col_cell(const struct sfield *f, const uint8_t *b, uint32_t lid);
/* lid's value in stored field sf's column, or NULL. */
const void *store_col_get(struct store_txn *txn, struct doctype *dt, int sf, uint32_t lid);
/* Forget cached block pointers (before a write). */
void store_attr_reset(struct store_txn *txn);

/* hnsw_sync.c */
/* Bring lid's node in every graph of dt in line with its column value
 * (absent: no node), or its nodes with the vectors of its stored value
 * (a multi-vector field).  Call after the record and columns are written.  Only fields
 * with only[sf] set are looked at (only NULL: all).  Returns 0 or an
 * error; the caller fails the txn. */
int store_hnsw_sync_doc(struct store_txn *w, struct doctype *dt, uint32_t lid,
                        const unsigned char *only, struct strata_error *err);
/* At store_doctype_add in its txn t of env: check the graph settings of
 * dt's fields, rebuild the graphs whose settings changed and record them
 * (in env's meta DB). */
int store_hnsw_sync(struct store_env *env, MDB_txn *t, struct doctype *dt,
                    struct strata_error *err);

/* dict.c: the value dictionaries.  Around each write of document lid of dt
 * in w: store_dict_before, before the first write (none: a new document,
 * nothing to read), keeps the dictionary keys of its values now;
 * store_dict_after, once the record and columns are written (removed: the
 * document is gone), moves its entries to its new values.  Only fields with
 * only[sf] set are looked at (only NULL: all).  before returns 0,
 * STRATA_CORRUPT or STRATA_NOMEM, writing nothing; after returns 0 or an
 * error, and the caller fails the txn. */
int store_dict_before(struct store_txn *w, struct doctype *dt, uint32_t lid, int none,
                      const unsigned char *only, struct strata_error *err);
int store_dict_after(struct store_txn *w, struct doctype *dt, uint32_t lid, int removed,
                     const unsigned char *only, struct strata_error *err);
/* At store_doctype_add in its txn t of env: build the dictionaries of the
 * fields that have none recorded, drop those of fields that lost the flag,
 * record which fields have one (in env's meta DB). */
int store_dict_sync(struct store_env *env, MDB_txn *t, struct doctype *dt,
                    struct strata_error *err);

/* doc.c: the bytes of stored field sf (a string or JSON field) in lid's
 * record: *s NULL when the document or its value is absent.  Valid until
 * the next write.  Returns 0, STRATA_CORRUPT, STRATA_STORE. */
int store_doc_bytes(struct store_txn *txn, const struct doctype *dt, uint32_t lid, int sf,
                    const char **s, size_t *n, struct strata_error *err);

/* hnsw_dist.c */
store_dist_fn store_dist_kernel(int metric, int cell, int avx512);
store_dist_fn store_dist_avx512(int metric); /* NULL: none for the metric */
int store_cpu_avx512(void); /* the CPU runs AVX-512 and STRATA_CPU is not "avx2" */
/* 1 - cos from a.b, |a|^2 and |b|^2; 1 when either has no direction. */
static inline double store_angular_of(double ab, double aa, double bb)
{
	if (aa == 0.0 || bb == 0.0)
		return 1.0;
	double c = ab / __builtin_sqrt(aa * bb);
	return 1.0 - (c > 1.0 ? 1.0 : c < -1.0 ? -1.0 : c);
}
double store_geo_km(double lat1, double lon1, double lat2, double lon2);

#endif
