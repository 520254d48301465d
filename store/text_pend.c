/*
 * text_pend.c: the text-index changes a write transaction collects, written
 * when it commits (store_text_flush) or earlier, once they pass PEND_MAX
 * bytes.
 *
 * Every term the transaction touches (its key F term 0 in one field's
 * index) has a record, found through an open-addressing table of record
 * numbers.  A record keeps the change to the term's document frequency and
 * the postings added for it, already encoded (lid and the document's field
 * length as native u32s, the positions' byte count as a varint, the
 * positions as varint deltas) in a chain of chunks in the slab, each chunk twice the size of the one before
 * up to CHUNK_MAX, so that a frequent term's postings lie in a few long
 * runs and a rare term's take little room; the record keeps how full its
 * last chunk is, so an append touches only the bytes it writes (fetched
 * ahead for all of a document's terms).  The slab is a list of segments of
 * SEG_BYTES (or one chunk, when larger), so that it grows without copying
 * what it holds; a chunk's offset is its segment's number in the high 32
 * bits and its place there in the low.  A posting taken back before the
 * commit (its document removed or fed again) gets lid UINT32_MAX.
 *
 * A document field's tokens are grouped by term without sorting strings:
 * each token's term record is stamped with the field's turn, which numbers
 * the distinct terms in order of first use; a counting pass by that number
 * puts each term's positions together, in the order the tokens came.
 *
 * The commit writes the terms in key order, so that LMDB visits its pages
 * once each and in order, and each term's postings with one merge into its
 * blocks (text_blocks.c) and its frequency with one read and one write.
 */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define PEND_MAX ((size_t)256 << 20) /* bytes of pending postings written before the commit */
#define TERMS_MAX ((size_t)1 << 26)  /* distinct terms one transaction may change */
#define CHUNK_MIN 48
#define CHUNK_MAX ((size_t)64 << 10)
#define SEG_BYTES ((size_t)4 << 20)

struct pterm {
	uint64_t hash;
	size_t koff;          /* the key's bytes in keys */
	size_t head, tail;    /* first and last chunk: offsets in slab, 0: none */
	uint32_t klen;
	MDB_dbi dbi;
	int32_t delta;        /* change to the frequency */
	uint32_t stamp, slot; /* grouping one field's tokens (store_pend_doc) */
	uint32_t tused, tcap; /* the last chunk's bytes used and room: its header's
	                       * used is brought up to date only when read */
};

/* A chunk's header in slab, followed by cap bytes of postings. */
struct chunk {
	size_t next;          /* offset of the term's next chunk, 0: none */
	uint32_t used, cap;
};

struct store_text_df {
	uint64_t *table;       /* hash's high half << 32 | record number + 1, 0: empty;
	                        * cap a power of two, at most half full */
	size_t cap;
	struct pterm *term;
	size_t nterm, tcap;
	uint8_t *keys;
	size_t kused, kcap;
	struct segment {
		uint8_t *p;
		size_t len;
	} *seg;                /* the slab: chunks, 8-byte aligned; offset 0 is never one */
	size_t nseg, segcap;
	size_t segused;        /* bytes used in the last segment */
	size_t sused;          /* bytes of chunks in all */
	uint32_t stamp;
	/* scratch of store_pend_terms, store_pend_doc and the flush */
	uint32_t *s32;
	size_t s32cap;
	uint64_t *hash;
	size_t hcap;
	uint8_t *kbuf;
	size_t kbcap;
	uint8_t *enc;
	size_t enccap;
	struct store_post *post;
	size_t postcap;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem, size_t first,
                struct strata_error *err)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : first;
	while (c < need)
		c *= 2;
	void *q = base_realloc(*p, *cap * elem, c * elem);
	if (!q)
		return base_nomem(err, "indexing text");
	*p = q;
	*cap = c;
	return 0;
}

static struct store_text_df *pend(struct store_txn *w, struct strata_error *err)
{
	if (w->df)
		return w->df;
	struct store_text_df *d = base_calloc(1, sizeof *d);
	if (!d) {
		base_nomem(err, "indexing text");
		return NULL;
	}
	w->df = d;
	w->df_flush = store_text_flush;
	w->df_free = store_text_df_free;
	return d;
}

static uint64_t key_hash(MDB_dbi dbi, const uint8_t *k, size_t n)
{
	return base_hash64(k, n, dbi);
}

/* Whether the n bytes at a and b are the same: a key of 4 to 16 bytes (most
 * terms) in two overlapping loads a side instead of a call. */
static int same_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
	if (n >= 8 && n <= 16) {
		uint64_t x, y, u, v;
		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		memcpy(&u, a + n - 8, 8);
		memcpy(&v, b + n - 8, 8);
		return ((x ^ y) | (u ^ v)) == 0;
	}
	if (n >= 4 && n < 8) {
		uint32_t x, y, u, v;
		memcpy(&x, a, 4);
		memcpy(&y, b, 4);
		memcpy(&u, a + n - 4, 4);
		memcpy(&v, b + n - 4, 4);
		return ((x ^ y) | (u ^ v)) == 0;
	}
	return memcmp(a, b, n) == 0;
}

/* The table slot of the term (dbi, k[0..n)) with hash h: holds its tag
 * and record number + 1, or 0 where it would go.  The tag (the hash's
 * high half) spares most probes a look at the record. */
static uint64_t *find(const struct store_text_df *d, uint64_t h, MDB_dbi dbi, const uint8_t *k,
                      size_t n)
{
	uint64_t tag = h & ~(uint64_t)UINT32_MAX;
	for (size_t i = h & (d->cap - 1);; i = (i + 1) & (d->cap - 1)) {
		uint64_t *s = &d->table[i];
		if (!*s)
			return s;
		if ((*s & ~(uint64_t)UINT32_MAX) != tag)
			continue;
		const struct pterm *t = &d->term[(uint32_t)*s - 1];
		if (t->dbi == dbi && t->klen == n && same_bytes(d->keys + t->koff, k, n))
			return s;
	}
}

static int rehash(struct store_text_df *d, struct strata_error *err)
{
	size_t cap = d->cap ? d->cap * 2 : 4096;
	uint64_t *table = base_calloc(cap, sizeof *table);
	if (!table)
		return base_nomem(err, "indexing text");
	base_free(d->table, d->cap * sizeof *d->table);
	d->table = table;
	d->cap = cap;
	for (size_t r = 0; r < d->nterm; r++) {
		uint64_t h = d->term[r].hash;
		size_t i = h & (cap - 1);
		while (table[i])
			i = (i + 1) & (cap - 1);
		table[i] = (h & ~(uint64_t)UINT32_MAX) | (r + 1);
	}
	return 0;
}

/* The record of the term (dbi, k[0..n)) with hash h into *id, made when new. */
static int term_get(struct store_text_df *d, uint64_t h, MDB_dbi dbi, const uint8_t *k, size_t n,
                    uint32_t *id, struct strata_error *err)
{
	int rc;
	if ((d->nterm + 1) * 2 > d->cap) {
		if (d->nterm >= TERMS_MAX)
			return base_err(err, STRATA_LIMIT,
			                "more than %zu distinct terms in one transaction", TERMS_MAX);
		if ((rc = rehash(d, err)) != 0)
			return rc;
	}
	uint64_t *s = find(d, h, dbi, k, n);
	if (!*s) {
		if ((rc = grow((void **)&d->term, &d->tcap, d->nterm + 1, sizeof *d->term, 1024, err)) ||
		    (rc = grow((void **)&d->keys, &d->kcap, d->kused + n, 1, 65536, err)))
			return rc;
		memcpy(d->keys + d->kused, k, n);
		d->term[d->nterm] = (struct pterm){.hash = h, .koff = d->kused, .klen = (uint32_t)n,
		                                   .dbi = dbi};
		d->kused += n;
		*s = (h & ~(uint64_t)UINT32_MAX) | ++d->nterm;
	}
	*id = (uint32_t)*s - 1;
	return 0;
}

int store_pend_terms(struct store_txn *w, MDB_dbi dbi, size_t n, struct strata_error *err)
{
	struct store_text_df *d = w->df;
	const uint32_t *koff = d->s32 + 2 * n;
	uint32_t *term = d->s32;
	int rc = grow((void **)&d->hash, &d->hcap, n, sizeof *d->hash, 1024, err);
	if (rc)
		return rc;
	if (!d->cap && (rc = rehash(d, err)) != 0)
		return rc;
	/* Most lookups miss the caches (a rare term's slot, record and key):
	 * fetch the slots, then the records of the tags that match, for all
	 * tokens before comparing any, so that the misses overlap. */
	size_t mask = d->cap - 1;
	for (size_t i = 0; i < n; i++) {
		d->hash[i] = key_hash(dbi, d->kbuf + koff[i], koff[i + 1] - koff[i]);
		__builtin_prefetch(&d->table[d->hash[i] & mask]);
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t e = d->table[d->hash[i] & mask];
		if (e && (e & ~(uint64_t)UINT32_MAX) == (d->hash[i] & ~(uint64_t)UINT32_MAX))
			__builtin_prefetch(&d->term[(uint32_t)e - 1]);
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t e = d->table[d->hash[i] & mask];
		if (e && (e & ~(uint64_t)UINT32_MAX) == (d->hash[i] & ~(uint64_t)UINT32_MAX))
			__builtin_prefetch(d->keys + d->term[(uint32_t)e - 1].koff);
	}
	for (size_t i = 0; i < n; i++)
		if ((rc = term_get(d, d->hash[i], dbi, d->kbuf + koff[i], koff[i + 1] - koff[i],
		                   &term[i], err)) != 0)
			return rc;
	return 0;
}

int store_pend_df(struct store_txn *w, MDB_dbi dbi, const uint8_t *k, size_t n, int delta,
                  struct strata_error *err)
{
	struct store_text_df *d = pend(w, err);
	if (!d)
		return STRATA_NOMEM;
	int rc = d->cap ? 0 : rehash(d, err);
	uint32_t id;
	if (!rc && (rc = term_get(d, key_hash(dbi, k, n), dbi, k, n, &id, err)) == 0)
		d->term[id].delta += delta;
	return rc;
}

static struct chunk *chunk_at(const struct store_text_df *d, size_t off)
{
	return (struct chunk *)(d->seg[off >> 32].p + (uint32_t)off);
}

/* Bring the header of t's last chunk up to date. */
static void sync_tail(struct store_text_df *d, const struct pterm *t)
{
	if (t->tail)
		chunk_at(d, t->tail)->used = t->tused;
}

/* Where term t's last chunk takes its next bytes. */
static uint8_t *tail_end(const struct store_text_df *d, const struct pterm *t)
{
	return (uint8_t *)(chunk_at(d, t->tail) + 1) + t->tused;
}

/* Append a posting of `bytes` bytes to term t; *out gets where to write it. */
static int append(struct store_text_df *d, struct pterm *t, size_t bytes, uint8_t **out,
                  struct strata_error *err)
{
	if (!t->tail || t->tcap - t->tused < bytes) {
		size_t cap = t->tail ? (size_t)t->tcap * 2 : CHUNK_MIN;
		if (cap > CHUNK_MAX)
			cap = CHUNK_MAX;
		if (cap < bytes)
			cap = bytes;
		if (cap > UINT32_MAX)
			return base_err(err, STRATA_LIMIT, "a posting too large to index");
		size_t sz = (sizeof(struct chunk) + cap + 7) & ~(size_t)7;
		if (!d->nseg || d->seg[d->nseg - 1].len - d->segused < sz) {
			size_t len = sz + 8 > SEG_BYTES ? sz + 8 : SEG_BYTES;
			int rc = grow((void **)&d->seg, &d->segcap, d->nseg + 1, sizeof *d->seg, 16, err);
			if (rc)
				return rc;
			uint8_t *p = base_alloc(len);
			if (!p)
				return base_nomem(err, "indexing text");
			d->seg[d->nseg++] = (struct segment){p, len};
			d->segused = d->nseg == 1 ? 8 : 0;
		}
		size_t off = (d->nseg - 1) << 32 | d->segused;
		d->segused += sz;
		d->sused += sz;
		*chunk_at(d, off) = (struct chunk){0, 0, (uint32_t)cap};
		if (t->tail) {
			sync_tail(d, t);
			chunk_at(d, t->tail)->next = off;
		} else {
			t->head = off;
		}
		t->tail = off;
		t->tused = 0;
		t->tcap = (uint32_t)cap;
	}
	*out = tail_end(d, t);
	t->tused += (uint32_t)bytes;
	return 0;
}

static size_t varint_size(uint32_t v)
{
	size_t n = 1;
	for (; v >= 0x80; v >>= 7)
		n++;
	return n;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

int store_pend_scratch(struct store_txn *w, size_t n, size_t keybytes, uint32_t **pos,
                       uint32_t **koff, uint8_t **keys, struct strata_error *err)
{
	struct store_text_df *d = pend(w, err);
	if (!d)
		return STRATA_NOMEM;
	if (n > SIZE_MAX / 64)
		return base_err(err, STRATA_LIMIT, "a document's text has too many tokens to index");
	/* term, pos, koff (n + 1), then store_pend_doc's four arrays */
	int rc = grow((void **)&d->s32, &d->s32cap, 7 * n + 1, sizeof *d->s32, 1024, err);
	if (!rc)
		rc = grow((void **)&d->kbuf, &d->kbcap, keybytes, 1, 4096, err);
	if (rc)
		return rc;
	*pos = d->s32 + n;
	*koff = d->s32 + 2 * n;
	*keys = d->kbuf;
	return 0;
}

int store_pend_doc(struct store_txn *w, uint32_t lid, uint32_t dl, size_t n,
                   struct strata_error *err)
{
	struct store_text_df *d = w->df;
	if (!n)
		return 0;
	uint32_t *term = d->s32, *pos = term + n, *tslot = pos + 2 * n + 1, *cnt = tslot + n,
	         *sterm = cnt + n, *sorted = sterm + n;
	if (++d->stamp == 0) { /* wrapped: no record may look stamped */
		for (size_t i = 0; i < d->nterm; i++)
			d->term[i].stamp = 0;
		d->stamp = 1;
	}
	uint32_t nslot = 0;
	for (size_t i = 0; i < n; i++) {
		struct pterm *t = &d->term[term[i]];
		if (t->stamp != d->stamp) {
			t->stamp = d->stamp;
			t->slot = nslot;
			sterm[nslot] = term[i];
			cnt[nslot++] = 0;
		}
		tslot[i] = t->slot;
		cnt[t->slot]++;
	}
	/* cnt becomes each slot's start in sorted, then its end */
	uint32_t at = 0;
	for (uint32_t s = 0; s < nslot; s++) {
		uint32_t c = cnt[s];
		cnt[s] = at;
		at += c;
	}
	for (size_t i = 0; i < n; i++)
		sorted[cnt[tslot[i]]++] = pos[i];
	int rc = grow((void **)&d->enc, &d->enccap, 5 * n, 1, 4096, err);
	if (rc)
		return rc;
	for (uint32_t s = 0; s < nslot; s++)
		if (d->term[sterm[s]].tail)
			__builtin_prefetch(tail_end(d, &d->term[sterm[s]]), 1);
	uint32_t from = 0;
	for (uint32_t s = 0; s < nslot; s++) {
		uint32_t to = cnt[s], last = 0;
		for (uint32_t j = from + 1; j < to; j++)
			if (sorted[j] < sorted[j - 1]) {
				qsort(sorted + from, to - from, sizeof *sorted, cmp_u32);
				break;
			}
		uint8_t *o = NULL;
		struct pterm *t = &d->term[sterm[s]];
		if (5 * (to - from) < 128) {
			/* Their bytes' count fits one byte whatever they are: the
			 * positions go straight into the chunk, room for the
			 * longest kept, what they did not take given back. */
			size_t most = 5 * (size_t)(to - from);
			if ((rc = append(d, t, 9 + most, &o, err)) != 0)
				return rc;
			memcpy(o, &lid, 4);
			memcpy(o + 4, &dl, 4);
			uint8_t *p = o + 9;
			for (uint32_t j = from; j < to; j++) {
				p = store_varint_put(p, sorted[j] - last);
				last = sorted[j];
			}
			o[8] = (uint8_t)(p - (o + 9));
			t->tused -= (uint32_t)(most - (size_t)(p - (o + 9)));
		} else {
			uint8_t *p = d->enc;
			for (uint32_t j = from; j < to; j++) {
				p = store_varint_put(p, sorted[j] - last);
				last = sorted[j];
			}
			size_t nb = (size_t)(p - d->enc);
			if ((rc = append(d, t, 8 + varint_size((uint32_t)nb) + nb, &o, err)) != 0)
				return rc;
			memcpy(o, &lid, 4);
			memcpy(o + 4, &dl, 4);
			o = store_varint_put(o + 8, (uint32_t)nb);
			memcpy(o, d->enc, nb);
		}
		t->delta++;
		from = to;
	}
	return d->sused > PEND_MAX ? store_text_flush(w, err) : 0;
}

/* Walk a chunk's postings: the one at p (lid, field length, positions);
 * returns the next. */
static const uint8_t *next_posting(const uint8_t *p, uint32_t *lid, uint32_t *dl,
                                   const uint8_t **pos, size_t *npos)
{
	memcpy(lid, p, 4);
	memcpy(dl, p + 4, 4);
	p += 8;
	uint32_t v = 0;
	for (int shift = 0;; shift += 7) {
		uint8_t c = *p++;
		v |= (uint32_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
	}
	*pos = p;
	*npos = v;
	return p + v;
}

int store_pend_drop(struct store_txn *w, MDB_dbi dbi, const uint8_t *k, size_t n, uint32_t lid)
{
	struct store_text_df *d = w->df;
	if (!d || !d->cap)
		return 0;
	uint64_t *s = find(d, key_hash(dbi, k, n), dbi, k, n);
	if (!*s)
		return 0;
	struct pterm *t = &d->term[(uint32_t)*s - 1];
	sync_tail(d, t);
	for (size_t off = t->head; off; off = chunk_at(d, off)->next) {
		struct chunk *c = chunk_at(d, off);
		uint8_t *p = (uint8_t *)(c + 1), *end = p + c->used;
		while (p < end) {
			uint32_t l, dl;
			const uint8_t *pos;
			size_t np;
			uint8_t *next = (uint8_t *)next_posting(p, &l, &dl, &pos, &np);
			if (l == lid) {
				const uint32_t dead = UINT32_MAX;
				memcpy(p, &dead, 4);
				t->delta--;
				return 1;
			}
			p = next;
		}
	}
	return 0;
}

static int cmp_post(const void *a, const void *b)
{
	uint32_t x = ((const struct store_post *)a)->lid, y = ((const struct store_post *)b)->lid;
	return x < y ? -1 : x > y;
}

/* Term t's live postings into d->post, in lid order; their number. */
static int gather(struct store_text_df *d, const struct pterm *t, size_t *n,
                  struct strata_error *err)
{
	size_t m = 0;
	int sorted = 1;
	sync_tail(d, t);
	for (size_t off = t->head; off; off = chunk_at(d, off)->next) {
		const struct chunk *c = chunk_at(d, off);
		const uint8_t *p = (const uint8_t *)(c + 1), *end = p + c->used;
		while (p < end) {
			struct store_post e;
			p = next_posting(p, &e.lid, &e.dl, &e.pos, &e.n);
			if (e.lid == UINT32_MAX)
				continue;
			e.tf = store_pos_count(e.pos, e.n);
			int rc = grow((void **)&d->post, &d->postcap, m + 1, sizeof *d->post, 1024, err);
			if (rc)
				return rc;
			if (m && e.lid <= d->post[m - 1].lid)
				sorted = 0;
			d->post[m++] = e;
		}
	}
	if (!sorted)
		qsort(d->post, m, sizeof *d->post, cmp_post);
	*n = m;
	return 0;
}

/* Terms in the order their keys sort, as LMDB keeps them; head is the
 * key's first 8 bytes as a big-endian number (zeros after a shorter key),
 * which decides most comparisons. */
struct order {
	uint64_t head;
	const uint8_t *key;
	uint32_t klen;
	MDB_dbi dbi;
	uint32_t id;
};

static uint64_t key_head(const uint8_t *k, size_t n)
{
	uint64_t h = 0;
	for (size_t i = 0; i < 8; i++)
		h = h << 8 | (i < n ? k[i] : 0);
	return h;
}

static int cmp_order(const void *a, const void *b)
{
	const struct order *x = a, *y = b;
	if (x->dbi != y->dbi)
		return x->dbi < y->dbi ? -1 : 1;
	if (x->head != y->head)
		return x->head < y->head ? -1 : 1;
	/* The first min(8, lengths) bytes are the same. */
	size_t n = x->klen < y->klen ? x->klen : y->klen;
	int c = n > 8 ? memcmp(x->key + 8, y->key + 8, n - 8) : 0;
	if (c)
		return c;
	return x->klen < y->klen ? -1 : x->klen > y->klen;
}

/* Add t's delta to its frequency entry. */
static int df_write(MDB_txn *txn, const struct store_text_df *d, const struct pterm *t,
                    struct strata_error *err)
{
	MDB_val k = {t->klen, d->keys + t->koff}, v;
	uint32_t df = 0;
	int rc = mdb_get(txn, t->dbi, &k, &v);
	if (rc == 0 && v.mv_size == sizeof df)
		memcpy(&df, v.mv_data, sizeof df);
	else if (rc == 0)
		return base_err(err, STRATA_CORRUPT, "text index: bad frequency entry");
	else if (rc != MDB_NOTFOUND)
		return store_mdb_err(err, rc, "updating the text index");
	int64_t n = (int64_t)df + t->delta;
	if (n < 0 || n > UINT32_MAX)
		return base_err(err, STRATA_CORRUPT, "text index: bad frequency entry");
	df = (uint32_t)n;
	v.mv_size = sizeof df;
	v.mv_data = &df;
	rc = df ? mdb_put(txn, t->dbi, &k, &v, 0) : mdb_del(txn, t->dbi, &k, NULL);
	if (rc && rc != MDB_NOTFOUND)
		return store_mdb_err(err, rc, "updating the text index");
	return 0;
}

int store_text_flush(struct store_txn *w, struct strata_error *err)
{
	struct store_text_df *d = w->df;
	if (!d)
		return 0;
	struct order *o = d->nterm ? base_alloc(d->nterm * sizeof *o) : NULL;
	if (d->nterm && !o)
		return base_nomem(err, "indexing text");
	size_t no = 0;
	for (size_t i = 0; i < d->nterm; i++) {
		const struct pterm *t = &d->term[i];
		if (t->head || t->delta)
			o[no++] = (struct order){key_head(d->keys + t->koff, t->klen), d->keys + t->koff,
			                         t->klen, t->dbi, (uint32_t)i};
	}
	if (no)
		qsort(o, no, sizeof *o, cmp_order);
	int rc = 0;
	for (size_t i = 0; i < no && !rc; i++) {
		const struct pterm *t = &d->term[o[i].id];
		size_t m = 0;
		if (t->head && (rc = gather(d, t, &m, err)) != 0)
			break;
		if (m) {
			uint8_t kb[STORE_TEXT_KEY_MAX];
			memcpy(kb, d->keys + t->koff, t->klen);
			rc = store_post_merge(w->txn, t->dbi, kb, t->klen, d->post, m, err);
		}
		if (!rc && t->delta)
			rc = df_write(w->txn, d, t, err);
	}
	base_free(o, d->nterm * sizeof *o);
	store_text_df_free(w);
	return rc;
}

void store_text_df_free(struct store_txn *w)
{
	struct store_text_df *d = w->df;
	if (!d)
		return;
	base_free(d->table, d->cap * sizeof *d->table);
	base_free(d->term, d->tcap * sizeof *d->term);
	base_free(d->keys, d->kcap);
	for (size_t i = 0; i < d->nseg; i++)
		base_free(d->seg[i].p, d->seg[i].len);
	base_free(d->seg, d->segcap * sizeof *d->seg);
	base_free(d->s32, d->s32cap * sizeof *d->s32);
	base_free(d->hash, d->hcap * sizeof *d->hash);
	base_free(d->kbuf, d->kbcap);
	base_free(d->enc, d->enccap);
	base_free(d->post, d->postcap * sizeof *d->post);
	base_free(d, sizeof *d);
	w->df = NULL;
}
