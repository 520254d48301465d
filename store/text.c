/*
 * text.c: the text index, in the same LMDB environment as the documents
 * (layout in store_int.h).  doc.c calls store_text_reindex() inside the
 * write transaction that writes, updates or removes a document, so the
 * index can never disagree with the documents: a crash loses or keeps both
 * together.  A term's postings are kept in blocks (text_blocks.c), each
 * under the key (field, term, first lid), so a posting list is a key range
 * that a cursor walks a block at a time; a seek lands on the block that
 * would hold its lid with one MDB_SET_RANGE and scans inside it.  Each
 * posting carries the term's occurrences and positions and the field's
 * length in the document (each block the most occurrences and the least
 * length, bounds of bm25 there: text_blocks.c); the field's lengths and the
 * totals bm25 needs are kept beside them, and so is each term's document frequency (F term 0,
 * just before its postings), so that a query reads it in one lookup instead
 * of counting the postings.  A write transaction collects the postings it
 * adds per term in memory (a removal takes back one of them or rewrites a
 * stored block) and adds up the changes to the frequencies, and writes
 * them when it commits (store_text_flush), or earlier past PEND_MAX bytes:
 * a feed that indexes a frequent term in every document of a batch appends
 * to its last block and writes its frequency once per batch.
 *
 * A collection field (an array or weighted set of strings) indexes each
 * element on its own (text_elems.c reads them from the stored JSON):
 * element k's tokens follow element k-1's after one unused position, so
 * the consecutive positions of a phrase never span two elements, and the
 * length entry carries after the field's length (the sum of its elements')
 * a table of (first position, length, weight) per element, which maps a
 * position back to its element and a weighted set key's weight.  The
 * field's totals count its documents, tokens and elements (a single string
 * is one element).
 *
 * Invariants: for every live document and text field with a value, there is
 * exactly one length entry and one posting per distinct term of the value
 * as the tokenizer splits it today; a term's frequency entry is the number
 * of its postings (no entry: none); the totals entry is the sum of those
 * lengths and their count.  Changing a field's text settings rebuilds the
 * index (store_text_sync); so does opening an index written before the
 * frequency entries or before the posting blocks (TEXT_FORMAT is part of the
 * recorded settings).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define TBUF_MAX ((size_t)1 << 31) /* bytes of a collection's element table */
#define LEN_TAG STORE_TEXT_LEN_TAG
#define SUM_TAG STORE_TEXT_SUM_TAG
#define ELEM_BYTES 12 /* an element in a length entry: start, length, weight (u32 each) */
#define TEXT_FORMAT 0x54584636u /* recorded with the settings: "TXF6", blocks with bounds,
                                   totals with the elements */

static size_t key_field(uint8_t *k, int sf)
{
	k[0] = (uint8_t)(sf >> 8);
	k[1] = (uint8_t)sf;
	return 2;
}

/* F term 0 lid */
static size_t posting_key(uint8_t *k, int sf, const char *term, size_t n, uint32_t lid)
{
	size_t o = key_field(k, sf);
	memcpy(k + o, term, n);
	o += n;
	k[o++] = 0;
	store_be32_put(k + o, lid);
	return o + 4;
}

size_t store_text_length_key(uint8_t *k, int sf, uint32_t lid)
{
	size_t o = key_field(k, sf);
	k[o++] = LEN_TAG;
	store_be32_put(k + o, lid);
	return o + 4;
}

/* The elements of a collection value being collected. */
struct elems {
	struct store_txn *w;
	int flags;             /* the tokenizer's */
	size_t *used;
	uint32_t base;         /* the next element's first position */
	uint32_t total;        /* tokens so far */
	int table;             /* 1: record each element in w->ebuf */
	size_t nelem;
	struct strata_error *err;
};

static int elem_add(void *ud, const char *str, size_t len, int32_t weight)
{
	struct elems *e = ud;
	struct store_txn *w = e->w;
	uint32_t cnt;
	int rc = store_tokenize(&w->tb, e->flags, str, len, e->base, e->used, &cnt, e->err);
	if (rc)
		return rc;
	if (e->table) {
		size_t need = (e->nelem + 1) * ELEM_BYTES;
		if (need > w->ebuf_cap) {
			size_t cap = w->ebuf_cap ? w->ebuf_cap * 2 : 64 * ELEM_BYTES;
			if (need > TBUF_MAX)
				return base_err(e->err, STRATA_LIMIT, "a document's text has too many "
				                "elements to index");
			uint8_t *p = base_realloc(w->ebuf, w->ebuf_cap, cap);
			if (!p)
				return base_nomem(e->err, "indexing text");
			w->ebuf = p;
			w->ebuf_cap = cap;
		}
		uint32_t rec[3] = {e->base, cnt, (uint32_t)weight};
		memcpy(w->ebuf + e->nelem * ELEM_BYTES, rec, ELEM_BYTES);
	}
	e->nelem++;
	e->total += cnt;
	/* one unused position between elements: a phrase never spans two */
	if (e->base > UINT32_MAX - cnt - 1)
		return base_err(e->err, STRATA_LIMIT, "a document's text has too many tokens to index");
	e->base += cnt + 1;
	return 0;
}

/* Tokenize the value s[0..n) of a field with text settings tf into tbuf
 * from *used on; *count gets its length in tokens (a collection's: the sum
 * of its elements').  A collection's elements are tokenized one by one,
 * element k's positions after element k-1's and one unused position; with
 * nelem not NULL, the element table (start, length, weight) goes to
 * w->ebuf and *nelem gets its entries. */
static int collect(struct store_txn *w, int tf, const char *s, size_t n, size_t *used,
                   uint32_t *count, size_t *nelem, struct strata_error *err)
{
	int kind = tf & (STORE_TEXT_ARRAY | STORE_TEXT_WSET);
	if (nelem)
		*nelem = 0;
	if (!kind)
		return store_tokenize(&w->tb, STORE_TEXT_TOKEN_FLAGS(tf), s, n, 0, used, count, err);
	struct elems e = {w, STORE_TEXT_TOKEN_FLAGS(tf), used, 0, 0, nelem != NULL, 0, err};
	int rc = store_text_elems(s, n, kind, elem_add, &e, err);
	*count = e.total;
	if (nelem)
		*nelem = e.nelem;
	return rc;
}

/* The totals entry of field sf: s[0] documents, s[1] tokens, s[2]
 * elements (0 when there is none).  Returns 0, STRATA_CORRUPT or an LMDB
 * error reported. */
static int sums_read(MDB_txn *t, MDB_dbi dbi, int sf, uint8_t kb[3], uint64_t s[3],
                     struct strata_error *err)
{
	key_field(kb, sf);
	kb[2] = SUM_TAG;
	MDB_val k = {3, kb}, v;
	s[0] = s[1] = s[2] = 0;
	int rc = mdb_get(t, dbi, &k, &v);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return store_mdb_err(err, rc, "reading the text index");
	if (v.mv_size != 3 * sizeof *s)
		return base_err(err, STRATA_CORRUPT, "text index: bad totals entry");
	memcpy(s, v.mv_data, 3 * sizeof *s);
	return 0;
}

static int sum_update(struct store_txn *w, struct doctype *dt, int sf, int64_t docs,
                      int64_t tokens, int64_t elems, struct strata_error *err)
{
	uint8_t kb[3];
	uint64_t s[3];
	int rc = sums_read(w->txn, dt->text, sf, kb, s, err);
	if (rc)
		return rc;
	s[0] += (uint64_t)docs;
	s[1] += (uint64_t)tokens;
	s[2] += (uint64_t)elems;
	MDB_val k = {3, kb}, v = {sizeof s, s};
	if ((rc = mdb_put(w->txn, dt->text, &k, &v, 0)) != 0)
		return store_mdb_err(err, rc, "updating the text index");
	return 0;
}

/* Remove lid's entries for field sf: its tokens are tbuf[from, to). */
static int drop_field(struct store_txn *w, struct doctype *dt, int sf, uint32_t lid, size_t from,
                      size_t to, uint32_t len, struct strata_error *err)
{
	uint8_t kb[STORE_TEXT_KEY_MAX];
	int rc;
	for (size_t o = from; o < to;) {
		const struct store_tok_rec *r = (const struct store_tok_rec *)(w->tb.buf + o);
		size_t plen = posting_key(kb, sf, r->s, r->n, lid) - 4;
		if (!store_pend_drop(w, dt->text, kb, plen, lid)) {
			rc = store_post_del(w->txn, dt->text, kb, plen, lid, err);
			if (rc && rc != STRATA_NOT_FOUND) /* a repeated term is gone already */
				return rc;
			if (!rc && (rc = store_pend_df(w, dt->text, kb, plen, -1, err)) != 0)
				return rc;
		}
		o += store_tok_rec_size(r->n);
	}
	MDB_val k = {store_text_length_key(kb, sf, lid), kb}, v;
	/* its elements: a collection's table's entries, else one */
	if ((rc = mdb_get(w->txn, dt->text, &k, &v)) == 0 && v.mv_size < 4)
		return base_err(err, STRATA_CORRUPT, "text index: a bad length entry");
	int64_t nelem = !rc && (dt->stored[sf].text & (STORE_TEXT_ARRAY | STORE_TEXT_WSET))
	                        ? (int64_t)((v.mv_size - 4) / ELEM_BYTES) : 1;
	if (!rc)
		rc = mdb_del(w->txn, dt->text, &k, NULL);
	if (rc)
		return rc == MDB_NOTFOUND ? base_err(err, STRATA_CORRUPT,
		                                     "text index: no length entry for local id %u", lid)
		                          : store_mdb_err(err, rc, "updating the text index");
	return sum_update(w, dt, sf, -1, -(int64_t)len, -nelem, err);
}

/* Add lid's entries for field sf from s[0..n): its tokens offered with
 * the write (text_tokens.c), or tokenized now. */
static int add_field(struct store_txn *w, struct doctype *dt, int sf, uint32_t lid,
                     const char *s, size_t n, struct strata_error *err)
{
	size_t used = 0, nelem = 0;
	uint32_t len;
	const uint8_t *toks;
	int rc;
	if (!store_pretext_find(w, dt, sf, s, n, &toks, &used, &len)) {
		if ((rc = collect(w, dt->stored[sf].text, s, n, &used, &len, &nelem, err)) != 0)
			return rc;
		toks = w->tb.buf;
	}
	size_t ntok = 0, bytes = 0;
	for (size_t o = 0; o < used;) {
		const struct store_tok_rec *r = (const struct store_tok_rec *)(toks + o);
		ntok++;
		bytes += r->n + 3;
		o += store_tok_rec_size(r->n);
	}
	uint32_t *pos, *koff;
	uint8_t *keys;
	if ((rc = store_pend_scratch(w, ntok, bytes + 4, &pos, &koff, &keys, err)) != 0)
		return rc;
	size_t i = 0, at = 0;
	for (size_t o = 0; o < used; i++) {
		const struct store_tok_rec *r = (const struct store_tok_rec *)(toks + o);
		koff[i] = (uint32_t)at;
		at += posting_key(keys + at, sf, r->s, r->n, lid) - 4;
		pos[i] = r->pos;
		o += store_tok_rec_size(r->n);
	}
	koff[ntok] = (uint32_t)at;
	if ((rc = store_pend_terms(w, dt->text, ntok, err)) != 0)
		return rc;
	if ((rc = store_pend_doc(w, lid, len, ntok, err)) != 0)
		return rc;
	/* the length, then a collection's element table */
	uint8_t kb[STORE_TEXT_KEY_MAX];
	MDB_val k = {store_text_length_key(kb, sf, lid), kb}, v = {sizeof len + nelem * ELEM_BYTES, NULL};
	if ((rc = mdb_put(w->txn, dt->text, &k, &v, MDB_RESERVE)) != 0)
		return store_mdb_err(err, rc, "writing the text index");
	memcpy(v.mv_data, &len, sizeof len);
	if (nelem)
		memcpy((uint8_t *)v.mv_data + sizeof len, w->ebuf, nelem * ELEM_BYTES);
	int coll = (dt->stored[sf].text & (STORE_TEXT_ARRAY | STORE_TEXT_WSET)) != 0;
	return sum_update(w, dt, sf, 1, len, coll ? (int64_t)nelem : 1, err);
}

int store_text_reindex(struct store_txn *w, struct doctype *dt, uint32_t lid,
                       const struct store_text_vals *old, const struct store_text_vals *rec,
                       struct strata_error *err)
{
	const struct store_text_vals *fl = old ? old : rec;
	if (!fl)
		return 0;
	/* A field whose value is the same bytes keeps its entries as they are
	 * (a document fed again): nothing to remove or add. */
	unsigned char keep[STORE_MAX_TEXT_FIELDS];
	for (int i = 0; i < fl->n; i++) {
		BASE_DEBUG_ASSERT(!old || !rec || old->sf[i] == rec->sf[i]);
		keep[i] = old && rec && old->set[i] == rec->set[i] &&
		          (!old->set[i] ||
		           (old->len[i] == rec->len[i] && memcmp(old->s[i], rec->s[i], old->len[i]) == 0));
	}
	/* Phase 1: the old values' tokens, copied, before anything is written
	 * (a write may move the pages old points into). */
	size_t from[STORE_MAX_TEXT_FIELDS + 1];
	uint32_t lens[STORE_MAX_TEXT_FIELDS];
	size_t used = 0;
	int rc;
	for (int i = 0; i < fl->n; i++) {
		from[i] = used;
		lens[i] = 0;
		if (old && old->set[i] && !keep[i] &&
		    (rc = collect(w, dt->stored[old->sf[i]].text, old->s[i], old->len[i], &used, &lens[i],
		                  NULL, err)) != 0)
			return rc;
	}
	from[fl->n] = used;
	/* Phase 2: remove the old entries. */
	for (int i = 0; old && i < old->n; i++)
		if (old->set[i] && !keep[i] &&
		    (rc = drop_field(w, dt, old->sf[i], lid, from[i], from[i + 1], lens[i], err)) != 0)
			return rc;
	/* Phase 3: add the new ones. */
	for (int i = 0; rec && i < rec->n; i++)
		if (rec->set[i] && !keep[i] &&
		    (rc = add_field(w, dt, rec->sf[i], lid, rec->s[i], rec->len[i], err)) != 0)
			return rc;
	return 0;
}

/* ---- settings changes -------------------------------------------------------------- */

int store_text_settings(MDB_txn *t, MDB_dbi meta, const struct doctype *dt, int record,
                        int *changed, struct strata_error *err)
{
	uint32_t sig[2 * STORE_MAX_TEXT_FIELDS];
	size_t nsig = 0;
	for (int sf = 0; sf < dt->nstored; sf++)
		if (dt->stored[sf].text) {
			if (nsig == sizeof sig / sizeof sig[0])
				return base_err(err, STRATA_LIMIT, "more than %d text-indexed fields",
				                STORE_MAX_TEXT_FIELDS);
			sig[nsig++] = (uint32_t)sf;
			sig[nsig++] = (uint32_t)dt->stored[sf].text;
		}
	uint32_t sigx[2 * STORE_MAX_TEXT_FIELDS + 1];
	memcpy(sigx, sig, nsig * sizeof *sig);
	if (nsig) /* the index's format: an older one is rebuilt */
		sigx[nsig++] = TEXT_FORMAT;
	char key[STORE_MAX_NAME + 8];
	snprintf(key, sizeof key, "x/%s", dt->name);
	MDB_val k = {strlen(key), key}, v;
	int rc;
	if (record) {
		v.mv_size = nsig * 4;
		v.mv_data = sigx;
		rc = nsig ? mdb_put(t, meta, &k, &v, 0) : mdb_del(t, meta, &k, NULL);
		if (rc && rc != MDB_NOTFOUND)
			return store_mdb_err(err, rc, "recording the text settings");
		return 0;
	}
	rc = mdb_get(t, meta, &k, &v);
	if (rc && rc != MDB_NOTFOUND)
		return store_mdb_err(err, rc, "reading the text settings");
	*changed = rc == MDB_NOTFOUND
	                   ? nsig != 0
	                   : !(v.mv_size == nsig * 4 && memcmp(v.mv_data, sigx, v.mv_size) == 0);
	return 0;
}

/* ---- reading --------------------------------------------------------------------------- */

struct store_postings {
	MDB_cursor *c;
	uint8_t key[STORE_TEXT_KEY_MAX];
	size_t plen;           /* bytes of F term 0 */
	struct store_block b;  /* the block the cursor is on */
	uint32_t lids[STORE_BLOCK_MAX]; /* its lids */
	uint32_t i;            /* the posting: lids[i] */
	uint32_t lid;
	uint32_t lo;           /* valid: no posting in [lo, lid) */
	int valid;             /* on a posting */
	uint64_t df;
};

/* The stored field of caller field, or an error when it has no text index. */
static int text_field(struct store_txn *txn, int doctype, int field, struct doctype **dtp,
                      struct strata_error *err)
{
	int rc = store_txn_check(txn, 0, doctype, err);
	if (rc)
		return rc;
	struct doctype *dt = txn->env->types[doctype];
	if (field < 0 || field >= dt->nuser || !dt->stored[dt->ufield[field]].text)
		return base_err(err, STRATA_INVALID_ARGUMENT, "field %d has no text index", field);
	*dtp = dt;
	return dt->ufield[field];
}

/* Take the block the cursor landed on (rc from mdb_cursor_get) and its
 * first posting. */
static int take_block(struct store_postings *p, int rc, const MDB_val *k, const MDB_val *v)
{
	p->valid = 0;
	if (rc)
		return rc == MDB_NOTFOUND ? STRATA_NOT_FOUND : STRATA_STORE;
	if (k->mv_size != p->plen + 4 || memcmp(k->mv_data, p->key, p->plen) != 0)
		return STRATA_NOT_FOUND;
	if (store_block_open(v->mv_data, v->mv_size, &p->b) ||
	    store_block_lids(&p->b, store_be32_get((const uint8_t *)k->mv_data + p->plen), p->lids))
		return STRATA_CORRUPT;
	p->i = 0;
	p->lid = p->lids[0];
	p->valid = 1;
	return 0;
}

/* The first posting from the current one on with lid >= want, when the
 * block holds one: 1, else 0 (the posting unchanged). */
static int in_block(struct store_postings *p, uint32_t want)
{
	if (p->lids[p->b.n - 1] < want)
		return 0;
	uint32_t i = p->i;
	while (p->lids[i] < want)
		i++;
	p->i = i;
	p->lid = p->lids[i];
	return 1;
}

/* To the next block's first posting. */
static int next_block(struct store_postings *p)
{
	MDB_val k, v;
	return take_block(p, mdb_cursor_get(p->c, &k, &v, MDB_NEXT), &k, &v);
}

/* To the first posting with lid >= want: one search lands on the block
 * that would hold it, then a scan inside the block. */
static int step_seek(struct store_postings *p, uint32_t want)
{
	store_be32_put(p->key + p->plen, want);
	MDB_val k = {p->plen + 4, p->key}, v;
	int rc = mdb_cursor_get(p->c, &k, &v, MDB_SET_RANGE);
	if (rc && rc != MDB_NOTFOUND)
		return take_block(p, rc, &k, &v);
	int exact = rc == 0 && k.mv_size == p->plen + 4 && memcmp(k.mv_data, p->key, p->plen + 4) == 0;
	if (!exact) { /* the block before may hold want */
		MDB_val pk, pv;
		int prc = mdb_cursor_get(p->c, &pk, &pv, rc ? MDB_LAST : MDB_PREV);
		if (prc == 0 && take_block(p, 0, &pk, &pv) == 0) {
			if (in_block(p, want))
				return 0;
			return next_block(p);
		}
		if (prc == 0 && p->valid == 0 && pk.mv_size == p->plen + 4 &&
		    memcmp(pk.mv_data, p->key, p->plen) == 0)
			return STRATA_CORRUPT; /* the term's block, unreadable */
		/* no earlier block of the term: back to where the search landed */
		if (rc)
			return STRATA_NOT_FOUND;
		rc = mdb_cursor_get(p->c, &k, &v, prc == 0 ? MDB_NEXT : MDB_FIRST);
	}
	return take_block(p, rc, &k, &v);
}

int store_postings_open(struct store_txn *txn, int doctype, int field, const char *term, size_t n,
                        struct store_postings **out, struct strata_error *err)
{
	struct doctype *dt;
	int sf = text_field(txn, doctype, field, &dt, err);
	if (sf < 0)
		return sf;
	if (n > BASE_TOKEN_MAX || memchr(term, 0, n))
		return base_err(err, STRATA_INVALID_ARGUMENT, "a term longer than %d bytes or with NUL",
		                BASE_TOKEN_MAX);
	struct store_postings *p = base_calloc(1, sizeof *p);
	if (!p)
		return base_nomem(err, "a posting list");
	p->plen = posting_key(p->key, sf, term, n, 0) - 4;
	int rc = mdb_cursor_open(txn->txn, dt->text, &p->c);
	if (rc) {
		base_free(p, sizeof *p);
		return store_mdb_err(err, rc, "reading the text index");
	}
	/* the document frequency: its entry, the key just before the
	 * postings, so the first block is the next key */
	MDB_val k = {p->plen, p->key}, v;
	rc = mdb_cursor_get(p->c, &k, &v, MDB_SET_RANGE);
	if (rc == 0 && k.mv_size == p->plen && memcmp(k.mv_data, p->key, p->plen) == 0) {
		if (v.mv_size != 4) {
			mdb_cursor_close(p->c);
			base_free(p, sizeof *p);
			return base_err(err, STRATA_CORRUPT, "text index: bad frequency entry");
		}
		uint32_t df;
		memcpy(&df, v.mv_data, 4);
		p->df = df;
		rc = mdb_cursor_get(p->c, &k, &v, MDB_NEXT);
	} else if (rc && rc != MDB_NOTFOUND) {
		mdb_cursor_close(p->c);
		base_free(p, sizeof *p);
		return store_mdb_err(err, rc, "reading the text index");
	}
	take_block(p, rc, &k, &v);
	p->lo = 0;
	*out = p;
	return 0;
}

uint64_t store_postings_df(const struct store_postings *p)
{
	return p->df;
}

int store_postings_seek(struct store_postings *p, uint32_t *lid)
{
	uint32_t want = *lid;
	if (p->valid && p->lid >= want && p->lo <= want) { /* there already */
		*lid = p->lid;
		return 0;
	}
	int rc;
	if (p->valid && p->lid < want) {
		/* within the block, or in the next one, costs less than a search
		 * from the root */
		uint32_t from;
		if (in_block(p, want)) {
			from = p->lids[p->i - 1] + 1; /* i > 0: the posting before was < want */
		} else {
			from = p->lids[p->b.n - 1] + 1;
			if ((rc = next_block(p)) != 0)
				return rc;
			if (!in_block(p, want))
				goto search;
			if (p->i)
				from = p->lids[p->i - 1] + 1;
		}
		p->lo = from;
		*lid = p->lid;
		return 0;
	}
search:
	rc = step_seek(p, want);
	if (!rc) {
		p->lo = want;
		*lid = p->lid;
	}
	return rc;
}

uint32_t store_postings_positions(const struct store_postings *p, uint32_t *pos, uint32_t max)
{
	const uint8_t *val;
	size_t vlen;
	if (!p->valid || store_block_pos(&p->b, p->i, &val, &vlen))
		return 0;
	uint32_t n = 0, cur = 0, v = 0;
	int shift = 0;
	for (size_t i = 0; i < vlen; i++) {
		v |= (uint32_t)(val[i] & 0x7f) << shift;
		shift += 7;
		if (val[i] & 0x80)
			continue;
		cur += v;
		if (pos && n < max)
			pos[n] = cur;
		n++;
		v = 0;
		shift = 0;
	}
	return n;
}

uint32_t store_postings_tf(const struct store_postings *p)
{
	return p->valid ? store_block_tf(&p->b, p->i) : 0;
}

uint32_t store_postings_dl(const struct store_postings *p)
{
	return p->valid ? store_block_dl(&p->b, p->i) : 0;
}

int store_postings_block(const struct store_postings *p, uint32_t *last, uint32_t *max_tf,
                         uint32_t *min_dl)
{
	if (!p->valid)
		return STRATA_NOT_FOUND;
	*last = p->lids[p->b.n - 1];
	*max_tf = p->b.max_tf;
	*min_dl = p->b.min_dl;
	return 0;
}

uint32_t store_postings_rest(const struct store_postings *p, const uint32_t **lids)
{
	if (!p->valid)
		return 0;
	*lids = p->lids + p->i;
	return p->b.n - p->i;
}

void store_postings_close(struct store_postings *p)
{
	if (!p)
		return;
	mdb_cursor_close(p->c);
	base_free(p, sizeof *p);
}

/* lid's length entry of stored field sf: 0 with it in *v, STRATA_NOT_FOUND,
 * or an error reported. */
static int length_get(struct store_txn *txn, struct doctype *dt, int sf, uint32_t lid, MDB_val *v,
                      struct strata_error *err)
{
	uint8_t kb[STORE_TEXT_KEY_MAX];
	MDB_val k = {store_text_length_key(kb, sf, lid), kb};
	int rc = mdb_get(txn->txn, dt->text, &k, v);
	if (rc == MDB_NOTFOUND)
		return STRATA_NOT_FOUND;
	if (rc)
		return store_mdb_err(err, rc, "reading the text index");
	if (v->mv_size < 4 || (v->mv_size - 4) % ELEM_BYTES)
		return base_err(err, STRATA_CORRUPT, "text index: bad length entry");
	return 0;
}

int store_text_length(struct store_txn *txn, int doctype, int field, uint32_t lid, uint32_t *len,
                      struct strata_error *err)
{
	struct doctype *dt;
	int sf = text_field(txn, doctype, field, &dt, err);
	if (sf < 0)
		return sf;
	MDB_val v;
	int rc = length_get(txn, dt, sf, lid, &v, err);
	if (!rc)
		memcpy(len, v.mv_data, 4);
	return rc;
}

/* The element of table tab (nelem entries, starts increasing) that holds
 * position pos: its number and weight, or -1 when none does. */
static long element_at(const uint8_t *tab, size_t nelem, uint32_t pos, int32_t *weight)
{
	size_t lo = 0, hi = nelem;
	uint32_t e[3];
	while (hi - lo > 1) { /* the last element starting at or before pos */
		size_t mid = lo + (hi - lo) / 2;
		memcpy(e, tab + mid * ELEM_BYTES, 4);
		if (e[0] <= pos)
			lo = mid;
		else
			hi = mid;
	}
	if (hi == 0)
		return -1;
	memcpy(e, tab + lo * ELEM_BYTES, ELEM_BYTES);
	if (pos < e[0] || pos - e[0] >= e[1])
		return -1;
	*weight = (int32_t)e[2];
	return (long)lo;
}

int store_text_elements(struct store_txn *txn, int doctype, int field, uint32_t lid,
                        const uint32_t *pos, uint32_t n, uint32_t *elem, int32_t *weight,
                        struct strata_error *err)
{
	struct doctype *dt;
	int sf = text_field(txn, doctype, field, &dt, err);
	if (sf < 0)
		return sf;
	for (uint32_t i = 0; i < n; i++) {
		elem[i] = 0;
		weight[i] = 1;
	}
	if (!(dt->stored[sf].text & (STORE_TEXT_ARRAY | STORE_TEXT_WSET)))
		return 0;
	MDB_val v;
	int rc = length_get(txn, dt, sf, lid, &v, err);
	if (rc)
		return rc;
	const uint8_t *tab = (const uint8_t *)v.mv_data + 4;
	size_t nelem = (v.mv_size - 4) / ELEM_BYTES;
	for (uint32_t i = 0; i < n; i++) {
		long e = element_at(tab, nelem, pos[i], &weight[i]);
		elem[i] = e < 0 ? UINT32_MAX : (uint32_t)e;
	}
	return 0;
}

int store_text_element(struct store_txn *txn, int doctype, int field, uint32_t lid, uint32_t pos,
                       uint32_t *elem, int32_t *weight, struct strata_error *err)
{
	int rc = store_text_elements(txn, doctype, field, lid, &pos, 1, elem, weight, err);
	if (!rc && *elem == UINT32_MAX) {
		*elem = 0;
		*weight = 1;
		return STRATA_NOT_FOUND;
	}
	return rc;
}

int store_text_stats(struct store_txn *txn, int doctype, int field, uint64_t *docs,
                     uint64_t *tokens, struct strata_error *err)
{
	struct doctype *dt;
	int sf = text_field(txn, doctype, field, &dt, err);
	if (sf < 0)
		return sf;
	uint8_t kb[3];
	uint64_t s[3];
	int rc = sums_read(txn->txn, dt->text, sf, kb, s, err);
	if (rc)
		return rc;
	*docs = s[0];
	*tokens = s[1];
	return 0;
}

int store_text_element_total(struct store_txn *txn, int doctype, int field, uint64_t *elements,
                             struct strata_error *err)
{
	struct doctype *dt;
	int sf = text_field(txn, doctype, field, &dt, err);
	if (sf < 0)
		return sf;
	uint8_t kb[3];
	uint64_t s[3];
	int rc = sums_read(txn->txn, dt->text, sf, kb, s, err);
	if (!rc)
		*elements = s[2];
	return rc;
}

int store_text_element_spans(struct store_txn *txn, int doctype, int field, uint32_t lid,
                             const uint32_t *pos, uint32_t n, uint32_t *elem, uint32_t *len,
                             struct strata_error *err)
{
	struct doctype *dt;
	int sf = text_field(txn, doctype, field, &dt, err);
	if (sf < 0)
		return sf;
	MDB_val v;
	int rc = length_get(txn, dt, sf, lid, &v, err);
	if (rc)
		return rc;
	uint32_t whole;
	memcpy(&whole, v.mv_data, 4);
	int coll = (dt->stored[sf].text & (STORE_TEXT_ARRAY | STORE_TEXT_WSET)) != 0;
	const uint8_t *tab = (const uint8_t *)v.mv_data + 4;
	size_t nelem = (v.mv_size - 4) / ELEM_BYTES;
	for (uint32_t i = 0; i < n; i++) {
		int32_t w;
		long e = coll ? element_at(tab, nelem, pos[i], &w) : pos[i] < whole ? 0 : -1;
		elem[i] = e < 0 ? UINT32_MAX : (uint32_t)e;
		len[i] = 0;
		if (e >= 0 && coll)
			memcpy(&len[i], tab + (size_t)e * ELEM_BYTES + 4, 4);
		else if (e >= 0)
			len[i] = whole;
	}
	return 0;
}

int store_text_terms(struct store_txn *txn, int doctype, int field, const char *prefix, size_t n,
                     int (*fn)(void *ud, const char *term, size_t len), void *ud,
                     struct strata_error *err)
{
	struct doctype *dt;
	int sf = text_field(txn, doctype, field, &dt, err);
	if (sf < 0)
		return sf;
	if (n > BASE_TOKEN_MAX)
		return 0;
	MDB_cursor *c;
	int rc = mdb_cursor_open(txn->txn, dt->text, &c);
	if (rc)
		return store_mdb_err(err, rc, "reading the text index");
	uint8_t kb[STORE_TEXT_KEY_MAX];
	size_t o = key_field(kb, sf);
	memcpy(kb + o, prefix, n);
	MDB_val k = {o + n, kb}, v;
	int stop = 0;
	while (!stop && (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE)) == 0) {
		const uint8_t *key = k.mv_data;
		/* F term 0 (the frequency) then F term 0 lid; the length and
		 * totals tags sort after every term */
		if (k.mv_size < o + n + 1 || memcmp(key, kb, o + n) != 0 || key[o] >= SUM_TAG)
			break;
		const uint8_t *z = memchr(key + o, 0, k.mv_size - o);
		if (!z)
			break;
		size_t tl = (size_t)(z - key) - o;
		stop = fn(ud, (const char *)key + o, tl);
		/* on past this term's postings: F term 0x01 */
		memmove(kb + o, key + o, tl);
		kb[o + tl] = 1;
		k.mv_size = o + tl + 1;
		k.mv_data = kb;
	}
	mdb_cursor_close(c);
	if (stop)
		return stop;
	if (rc && rc != MDB_NOTFOUND)
		return store_mdb_err(err, rc, "reading the text index");
	return 0;
}
