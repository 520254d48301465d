/*
 * text.c: the text index, in the same LMDB environment as the documents
 * (layout in store_int.h).  doc.c calls store_text_reindex() inside the
 * write transaction that writes, updates or removes a document, so the
 * index can never disagree with the documents: a crash loses or keeps both
 * together.  A term's postings are one key per document (field, term, lid),
 * kept in lid order by LMDB, so a posting list is a key range that a cursor
 * walks and skips in with MDB_SET_RANGE.  The positions of the term in the
 * field are the value; the field's length and the totals bm25 needs are
 * kept beside them.
 *
 * Invariants: for every live document and text field with a value, there is
 * exactly one length entry and one posting per distinct term of the value
 * as the tokenizer splits it today; the totals entry is the sum of those
 * lengths and their count.  Changing a field's text settings rebuilds the
 * index (store_text_sync).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define KEY_MAX (2 + BASE_TOKEN_MAX + 1 + 4)
#define TBUF_MAX ((size_t)1 << 31) /* scratch bytes of one document's tokens */
#define LEN_TAG 0xFF
#define SUM_TAG 0xFE

static size_t key_field(uint8_t *k, int sf)
{
	k[0] = (uint8_t)(sf >> 8);
	k[1] = (uint8_t)sf;
	return 2;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* F term 0 lid */
static size_t posting_key(uint8_t *k, int sf, const char *term, size_t n, uint32_t lid)
{
	size_t o = key_field(k, sf);
	memcpy(k + o, term, n);
	o += n;
	k[o++] = 0;
	put_be32(k + o, lid);
	return o + 4;
}

static size_t length_key(uint8_t *k, int sf, uint32_t lid)
{
	size_t o = key_field(k, sf);
	k[o++] = LEN_TAG;
	put_be32(k + o, lid);
	return o + 4;
}

static int tgrow(struct store_txn *w, size_t need, struct strata_error *err)
{
	if (need <= w->tbuf_cap)
		return 0;
	if (need > TBUF_MAX)
		return base_err(err, STRATA_LIMIT, "a document's text has too many tokens to index");
	size_t cap = w->tbuf_cap ? w->tbuf_cap : 4096;
	while (cap < need)
		cap *= 2;
	uint8_t *p = base_realloc(w->tbuf, w->tbuf_cap, cap);
	if (!p)
		return base_nomem(err, "indexing text");
	w->tbuf = p;
	w->tbuf_cap = cap;
	return 0;
}

/* A token as kept in tbuf: its position, its length, its bytes. */
struct tok_rec {
	uint32_t pos;
	uint16_t n;
	char s[];
};

static size_t rec_size(size_t n)
{
	return (sizeof(struct tok_rec) + n + 7) & ~(size_t)7;
}

/* Tokenize s[0..n) (field f's settings) into tbuf from *used on; *count
 * gets the number of tokens. */
static int collect(struct store_txn *w, int flags, const char *s, size_t n, size_t *used,
                   uint32_t *count, struct strata_error *err)
{
	if (!w->tok) {
		int rc = base_tokenizer_new(&w->tok, err);
		if (rc)
			return rc;
	}
	size_t off = 0, tn;
	const char *t;
	int pos;
	*count = 0;
	while (base_token_next(w->tok, s, n, &off, flags & ~STORE_TEXT_ON, &t, &tn, &pos) > 0) {
		(*count)++;
		if (tn == 0)
			continue;
		size_t sz = rec_size(tn);
		int rc = tgrow(w, *used + sz, err);
		if (rc)
			return rc;
		struct tok_rec *r = (struct tok_rec *)(w->tbuf + *used);
		r->pos = (uint32_t)pos;
		r->n = (uint16_t)tn;
		memcpy(r->s, t, tn);
		*used += sz;
	}
	return 0;
}

/* The totals entry of field sf: s[0] documents, s[1] tokens (0, 0 when
 * there is none).  Returns 0, STRATA_CORRUPT or an LMDB error reported. */
static int sums_read(MDB_txn *t, MDB_dbi dbi, int sf, uint8_t kb[3], uint64_t s[2],
                     struct strata_error *err)
{
	key_field(kb, sf);
	kb[2] = SUM_TAG;
	MDB_val k = {3, kb}, v;
	s[0] = s[1] = 0;
	int rc = mdb_get(t, dbi, &k, &v);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return store_mdb_err(err, rc, "reading the text index");
	if (v.mv_size != 2 * sizeof *s)
		return base_err(err, STRATA_CORRUPT, "text index: bad totals entry");
	memcpy(s, v.mv_data, 2 * sizeof *s);
	return 0;
}

static int sum_update(struct store_txn *w, struct doctype *dt, int sf, int64_t docs,
                      int64_t tokens, struct strata_error *err)
{
	uint8_t kb[3];
	uint64_t s[2];
	int rc = sums_read(w->txn, dt->text, sf, kb, s, err);
	if (rc)
		return rc;
	s[0] += (uint64_t)docs;
	s[1] += (uint64_t)tokens;
	MDB_val k = {3, kb}, v = {sizeof s, s};
	if ((rc = mdb_put(w->txn, dt->text, &k, &v, 0)) != 0)
		return store_mdb_err(err, rc, "updating the text index");
	return 0;
}

/* Remove lid's entries for field sf: its tokens are tbuf[from, to). */
static int drop_field(struct store_txn *w, struct doctype *dt, int sf, uint32_t lid, size_t from,
                      size_t to, uint32_t len, struct strata_error *err)
{
	uint8_t kb[KEY_MAX];
	int rc;
	for (size_t o = from; o < to;) {
		const struct tok_rec *r = (const struct tok_rec *)(w->tbuf + o);
		MDB_val k = {posting_key(kb, sf, r->s, r->n, lid), kb};
		rc = mdb_del(w->txn, dt->text, &k, NULL);
		if (rc && rc != MDB_NOTFOUND) /* a repeated term is gone already */
			return store_mdb_err(err, rc, "updating the text index");
		o += rec_size(r->n);
	}
	MDB_val k = {length_key(kb, sf, lid), kb};
	if ((rc = mdb_del(w->txn, dt->text, &k, NULL)) != 0)
		return rc == MDB_NOTFOUND ? base_err(err, STRATA_CORRUPT,
		                                     "text index: no length entry for local id %u", lid)
		                          : store_mdb_err(err, rc, "updating the text index");
	return sum_update(w, dt, sf, -1, -(int64_t)len, err);
}

static int cmp_tok(const void *a, const void *b)
{
	const struct tok_rec *x = *(const struct tok_rec *const *)a;
	const struct tok_rec *y = *(const struct tok_rec *const *)b;
	size_t n = x->n < y->n ? x->n : y->n;
	int c = memcmp(x->s, y->s, n);
	if (c)
		return c;
	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static size_t varint_size(uint32_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint8_t *varint_put(uint8_t *p, uint32_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Add lid's entries for field sf from s[0..n). */
static int add_field(struct store_txn *w, struct doctype *dt, int sf, uint32_t lid,
                     const char *s, size_t n, struct strata_error *err)
{
	size_t used = 0;
	uint32_t len;
	int rc = collect(w, dt->stored[sf].text, s, n, &used, &len, err);
	if (rc)
		return rc;
	size_t ntok = 0;
	for (size_t o = 0; o < used; o += rec_size(((struct tok_rec *)(w->tbuf + o))->n))
		ntok++;
	struct tok_rec **order = NULL;
	if (ntok && !(order = base_alloc(ntok * sizeof *order)))
		return base_nomem(err, "indexing text");
	size_t i = 0;
	for (size_t o = 0; o < used; o += rec_size(order[i - 1]->n))
		order[i++] = (struct tok_rec *)(w->tbuf + o);
	if (ntok) /* a value without a word has no order to sort (and no array) */
		qsort(order, ntok, sizeof *order, cmp_tok);
	uint8_t kb[KEY_MAX];
	for (i = 0; i < ntok && !rc;) {
		size_t j = i, bytes = 0;
		uint32_t last = 0;
		for (; j < ntok && order[j]->n == order[i]->n &&
		       memcmp(order[j]->s, order[i]->s, order[i]->n) == 0; j++) {
			bytes += varint_size(order[j]->pos - last);
			last = order[j]->pos;
		}
		MDB_val k = {posting_key(kb, sf, order[i]->s, order[i]->n, lid), kb}, v = {bytes, NULL};
		if ((rc = mdb_put(w->txn, dt->text, &k, &v, MDB_RESERVE)) != 0) {
			rc = store_mdb_err(err, rc, "writing the text index");
			break;
		}
		uint8_t *p = v.mv_data;
		last = 0;
		for (size_t q = i; q < j; q++) {
			p = varint_put(p, order[q]->pos - last);
			last = order[q]->pos;
		}
		i = j;
	}
	base_free(order, ntok * sizeof *order);
	if (rc)
		return rc;
	MDB_val k = {length_key(kb, sf, lid), kb}, v = {sizeof len, &len};
	if ((rc = mdb_put(w->txn, dt->text, &k, &v, 0)) != 0)
		return store_mdb_err(err, rc, "writing the text index");
	return sum_update(w, dt, sf, 1, len, err);
}

int store_text_reindex(struct store_txn *w, struct doctype *dt, uint32_t lid,
                       const struct store_text_vals *old, const struct store_text_vals *rec,
                       struct strata_error *err)
{
	/* Phase 1: the old values' tokens, copied, before anything is written
	 * (a write may move the pages old points into). */
	const struct store_text_vals *fl = old ? old : rec;
	if (!fl)
		return 0;
	size_t from[STORE_MAX_TEXT_FIELDS + 1];
	uint32_t lens[STORE_MAX_TEXT_FIELDS];
	size_t used = 0;
	int rc;
	for (int i = 0; i < fl->n; i++) {
		from[i] = used;
		lens[i] = 0;
		if (old && old->set[i] &&
		    (rc = collect(w, dt->stored[old->sf[i]].text, old->s[i], old->len[i], &used, &lens[i],
		                  err)) != 0)
			return rc;
	}
	from[fl->n] = used;
	/* Phase 2: remove the old entries. */
	for (int i = 0; old && i < old->n; i++)
		if (old->set[i] && (rc = drop_field(w, dt, old->sf[i], lid, from[i], from[i + 1], lens[i],
		                                    err)) != 0)
			return rc;
	/* Phase 3: add the new ones. */
	for (int i = 0; rec && i < rec->n; i++)
		if (rec->set[i] && (rc = add_field(w, dt, rec->sf[i], lid, rec->s[i], rec->len[i], err)) != 0)
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
	char key[STORE_MAX_NAME + 8];
	snprintf(key, sizeof key, "x/%s", dt->name);
	MDB_val k = {strlen(key), key}, v;
	int rc;
	if (record) {
		v.mv_size = nsig * 4;
		v.mv_data = sig;
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
	                   : !(v.mv_size == nsig * 4 && memcmp(v.mv_data, sig, v.mv_size) == 0);
	return 0;
}

/* ---- reading --------------------------------------------------------------------------- */

struct store_postings {
	MDB_cursor *c;
	uint8_t key[KEY_MAX];
	size_t plen;           /* bytes of F term 0 */
	uint32_t lid;
	const uint8_t *val;
	size_t vlen;
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

/* Move the cursor (op MDB_SET_RANGE: to the first posting with lid >=
 * want; MDB_NEXT: one on) and take the posting it lands on. */
static int step(struct store_postings *p, MDB_cursor_op op, uint32_t want)
{
	put_be32(p->key + p->plen, want);
	MDB_val k = {p->plen + 4, p->key}, v;
	int rc = mdb_cursor_get(p->c, &k, &v, op);
	p->valid = 0;
	if (rc)
		return rc == MDB_NOTFOUND ? STRATA_NOT_FOUND : STRATA_STORE;
	if (k.mv_size != p->plen + 4 || memcmp(k.mv_data, p->key, p->plen) != 0)
		return STRATA_NOT_FOUND;
	p->lid = get_be32((const uint8_t *)k.mv_data + p->plen);
	p->val = v.mv_data;
	p->vlen = v.mv_size;
	p->valid = 1;
	return 0;
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
	/* the document frequency: one walk over the range */
	for (rc = step(p, MDB_SET_RANGE, 0); rc == 0; rc = step(p, MDB_NEXT, 0))
		p->df++;
	step(p, MDB_SET_RANGE, 0);
	*out = p;
	return 0;
}

uint64_t store_postings_df(const struct store_postings *p)
{
	return p->df;
}

int store_postings_seek(struct store_postings *p, uint32_t *lid)
{
	if (p->valid && p->lid == *lid) {
		*lid = p->lid;
		return 0;
	}
	int rc = step(p, p->valid && p->lid + 1 == *lid ? MDB_NEXT : MDB_SET_RANGE, *lid);
	if (!rc)
		*lid = p->lid;
	return rc;
}

uint32_t store_postings_positions(const struct store_postings *p, uint32_t *pos, uint32_t max)
{
	if (!p->valid)
		return 0;
	uint32_t n = 0, cur = 0, v = 0;
	int shift = 0;
	for (size_t i = 0; i < p->vlen; i++) {
		v |= (uint32_t)(p->val[i] & 0x7f) << shift;
		shift += 7;
		if (p->val[i] & 0x80)
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

void store_postings_close(struct store_postings *p)
{
	if (!p)
		return;
	mdb_cursor_close(p->c);
	base_free(p, sizeof *p);
}

int store_text_length(struct store_txn *txn, int doctype, int field, uint32_t lid, uint32_t *len,
                      struct strata_error *err)
{
	struct doctype *dt;
	int sf = text_field(txn, doctype, field, &dt, err);
	if (sf < 0)
		return sf;
	uint8_t kb[KEY_MAX];
	MDB_val k = {length_key(kb, sf, lid), kb}, v;
	int rc = mdb_get(txn->txn, dt->text, &k, &v);
	if (rc == MDB_NOTFOUND)
		return STRATA_NOT_FOUND;
	if (rc)
		return store_mdb_err(err, rc, "reading the text index");
	if (v.mv_size != 4)
		return base_err(err, STRATA_CORRUPT, "text index: bad length entry");
	memcpy(len, v.mv_data, 4);
	return 0;
}

int store_text_stats(struct store_txn *txn, int doctype, int field, uint64_t *docs,
                     uint64_t *tokens, struct strata_error *err)
{
	struct doctype *dt;
	int sf = text_field(txn, doctype, field, &dt, err);
	if (sf < 0)
		return sf;
	uint8_t kb[3];
	uint64_t s[2];
	int rc = sums_read(txn->txn, dt->text, sf, kb, s, err);
	if (rc)
		return rc;
	*docs = s[0];
	*tokens = s[1];
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
	uint8_t kb[KEY_MAX];
	size_t o = key_field(kb, sf);
	memcpy(kb + o, prefix, n);
	MDB_val k = {o + n, kb}, v;
	int stop = 0;
	while (!stop && (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE)) == 0) {
		const uint8_t *key = k.mv_data;
		/* F term 0 lid; the length and totals tags sort after every term */
		if (k.mv_size < o + n + 5 || memcmp(key, kb, o + n) != 0 || key[o] >= SUM_TAG)
			break;
		size_t tl = k.mv_size - o - 5;
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
