/*
 * text_blocks.c: a term's postings in blocks (keys in store_int.h).
 *
 * A block is one LMDB value under the key F term 0 first-lid; it holds up
 * to STORE_BLOCK_MAX postings in lid order:
 *
 *     varint n          its postings
 *     varint max_tf     the most occurrences of the term in one of them
 *     varint min_dl     the shortest field length among them
 *     varint lbytes     bytes of the lids that follow
 *     byte widths       bits 0-1, 2-3, 4-5: log2 of the width in bytes (1, 2
 *                       or 4) of the three columns below
 *     n - 1 varints     each lid minus the one before (the first is the key's)
 *     n numbers         the occurrences of the term in each document
 *     n numbers         the field's length in each document (dl)
 *     n numbers         where each posting's positions end, in bytes from
 *                       the first's start
 *     the positions     posting after posting, varint deltas
 *
 * The columns are little-endian numbers of one width each, the least that
 * holds the block's largest, so that a posting's occurrences and length
 * are read straight by its number.
 *
 * The header bounds every score of the term in the block that grows with
 * its occurrences and falls with the length (bm25), so a query can pass
 * over a block none of whose documents can enter its top hits; the lids
 * apart from the payloads make a step or a seek read only them.  Adding
 * postings (a transaction's, at its commit) or removing one reads each
 * block that holds (or would hold) their lids, merges and writes it back,
 * cut greedily into blocks of at most STORE_BLOCK_MAX postings and
 * POST_BLOCK_BYTES bytes (a block with one posting may be larger), each
 * with its header made afresh from its postings; a block whose first lid
 * changes moves to its new key, an empty one is deleted.  Documents get
 * increasing lids, so adding is mostly appending to a term's last block.
 */
#include <string.h>

#include "store_int.h"

#define POST_BLOCK_BYTES 2048
#define REWRITE_STACK 16384 /* rewrite's scratch on the stack when it fits */
#define MERGE_STACK 256     /* postings store_post_merge merges on the stack */

void store_be32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

uint32_t store_be32_get(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int varint_get(const uint8_t *b, size_t n, size_t *off, uint32_t *out)
{
	uint32_t v = 0;
	for (int shift = 0; *off < n && shift < 35; shift += 7) {
		uint8_t c = b[(*off)++];
		v |= (uint32_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

uint8_t *store_varint_put(uint8_t *p, uint32_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

int store_block_open(const uint8_t *b, size_t size, struct store_block *h)
{
	size_t off = 0;
	uint32_t lbytes;
	if (varint_get(b, size, &off, &h->n) || varint_get(b, size, &off, &h->max_tf) ||
	    varint_get(b, size, &off, &h->min_dl) || varint_get(b, size, &off, &lbytes) ||
	    h->n == 0 || h->n > STORE_BLOCK_MAX || off >= size)
		return -1;
	uint8_t wb = b[off++];
	h->wtf = 1 << (wb & 3);
	h->wdl = 1 << (wb >> 2 & 3);
	h->woff = 1 << (wb >> 4 & 3);
	size_t cols = (size_t)h->n * (size_t)(h->wtf + h->wdl + h->woff);
	if ((wb & 3) == 3 || (wb >> 2 & 3) == 3 || (wb >> 4 & 3) == 3 || wb >> 6 ||
	    lbytes > size - off || cols > size - off - lbytes)
		return -1;
	h->lids = b + off;
	h->tf = h->lids + lbytes;
	h->dl = h->tf + (size_t)h->n * (size_t)h->wtf;
	h->off = h->dl + (size_t)h->n * (size_t)h->wdl;
	h->pos = h->off + (size_t)h->n * (size_t)h->woff;
	h->end = b + size;
	/* the last posting's positions end where the block does */
	if (store_block_num(h->off, h->woff, h->n - 1) != (size_t)(h->end - h->pos))
		return -1;
	return 0;
}

int store_block_lids(const struct store_block *h, uint32_t first, uint32_t *lids)
{
	size_t off = 0, n = (size_t)(h->tf - h->lids);
	const uint8_t *b = h->lids;
	lids[0] = first;
	if (n == h->n - 1 && first <= UINT32_MAX - 127 * STORE_BLOCK_MAX) {
		/* every gap one byte (a frequent term's): no branch but the loop's */
		uint32_t cur = first, cnt = h->n; /* in registers: lids may alias h */
		uint8_t bad = 0;
		for (uint32_t i = 1; i < cnt; i++) {
			uint8_t g = b[i - 1];
			bad |= (uint8_t)(g | (g == 0) << 7); /* not a gap of 1..127 */
			cur += g;
			lids[i] = cur;
		}
		return bad & 0x80 ? -1 : 0;
	}
	for (uint32_t i = 1; i < h->n; i++) {
		uint32_t d;
		if (off < n && b[off] < 0x80 && b[off]) { /* the common one-byte gap */
			d = b[off++];
		} else if (varint_get(b, n, &off, &d) || d == 0) {
			return -1;
		}
		if (lids[i - 1] > UINT32_MAX - d)
			return -1;
		lids[i] = lids[i - 1] + d;
	}
	return off == n ? 0 : -1;
}

int store_block_pos(const struct store_block *h, uint32_t i, const uint8_t **pos, size_t *npos)
{
	uint32_t from = i ? store_block_num(h->off, h->woff, i - 1) : 0;
	uint32_t to = store_block_num(h->off, h->woff, i);
	if (from > to || to > (size_t)(h->end - h->pos))
		return -1;
	*pos = h->pos + from;
	*npos = to - from;
	return 0;
}

uint32_t store_pos_count(const uint8_t *pos, size_t n)
{
	uint32_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += !(pos[i] & 0x80);
	return c;
}

/* Position c on the block that holds lid or would: the last block whose
 * first lid is <= lid, else the term's first block.  key[0..plen) is
 * F term 0.  Returns 1 with the block in *k and *v, 0 when the term has no
 * block, or an LMDB error code (negative in LMDB's convention, so kept). */
static int locate(MDB_cursor *c, uint8_t *key, size_t plen, uint32_t lid, MDB_val *k, MDB_val *v)
{
	store_be32_put(key + plen, lid);
	k->mv_size = plen + 4;
	k->mv_data = key;
	int rc = mdb_cursor_get(c, k, v, MDB_SET_RANGE);
	int here = rc == 0 && k->mv_size == plen + 4 && memcmp(k->mv_data, key, plen) == 0;
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	if (here && store_be32_get((const uint8_t *)k->mv_data + plen) == lid)
		return 1;
	/* the block before, when it is this term's */
	MDB_val pk, pv;
	rc = rc == MDB_NOTFOUND ? mdb_cursor_get(c, &pk, &pv, MDB_LAST)
	                        : mdb_cursor_get(c, &pk, &pv, MDB_PREV);
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	if (rc == 0 && pk.mv_size == plen + 4 && memcmp(pk.mv_data, key, plen) == 0) {
		*k = pk;
		*v = pv;
		return 1;
	}
	return here; /* the term's first block, after lid */
}

int store_post_decode(const MDB_val *v, uint32_t first, struct store_post *e, size_t *ne,
                      struct strata_error *err)
{
	struct store_block h;
	uint32_t lids[STORE_BLOCK_MAX];
	if (store_block_open(v->mv_data, v->mv_size, &h) || store_block_lids(&h, first, lids))
		return base_err(err, STRATA_CORRUPT, "text index: bad posting block");
	uint32_t max_tf = 0, min_dl = UINT32_MAX;
	for (uint32_t i = 0; i < h.n; i++) {
		e[i].lid = lids[i];
		e[i].dl = store_block_dl(&h, i);
		if (store_block_pos(&h, i, &e[i].pos, &e[i].n))
			return base_err(err, STRATA_CORRUPT, "text index: bad posting block");
		uint32_t tf = e[i].tf = store_block_tf(&h, i);
		max_tf = tf > max_tf ? tf : max_tf;
		min_dl = e[i].dl < min_dl ? e[i].dl : min_dl;
	}
	if (max_tf != h.max_tf || min_dl != h.min_dl)
		return base_err(err, STRATA_CORRUPT, "text index: a posting block's bounds disagree");
	*ne = h.n;
	return 0;
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

/* The width code (0: 1 byte, 1: 2, 2: 4) of a column whose largest is v. */
static int width_code(uint32_t v)
{
	return v < 0x100 ? 0 : v < 0x10000 ? 1 : 2;
}

static uint8_t *put_num(uint8_t *p, uint32_t v, int code)
{
	for (int k = 0; k < 1 << code; k++)
		*p++ = (uint8_t)(v >> 8 * k);
	return p;
}

/* Posting i's bytes in a block but its lid's, about (the columns' widths
 * are the block's): what cutting blocks by size counts. */
static size_t payload_size(const struct store_post *e)
{
	return 5 + e->n;
}

/* Encode the block of e[0..n) at p; returns the byte after it. */
static uint8_t *encode(uint8_t *p, const struct store_post *e, size_t n)
{
	uint32_t max_tf = 0, min_dl = UINT32_MAX, max_dl = 0, lbytes = 0, pbytes = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t tf = e[i].tf;
		max_tf = tf > max_tf ? tf : max_tf;
		min_dl = e[i].dl < min_dl ? e[i].dl : min_dl;
		max_dl = e[i].dl > max_dl ? e[i].dl : max_dl;
		pbytes += (uint32_t)e[i].n;
		if (i)
			lbytes += (uint32_t)varint_size(e[i].lid - e[i - 1].lid);
	}
	int ctf = width_code(max_tf), cdl = width_code(max_dl), coff = width_code(pbytes);
	p = store_varint_put(p, (uint32_t)n);
	p = store_varint_put(p, max_tf);
	p = store_varint_put(p, min_dl);
	p = store_varint_put(p, lbytes);
	*p++ = (uint8_t)(ctf | cdl << 2 | coff << 4);
	for (size_t i = 1; i < n; i++)
		p = store_varint_put(p, e[i].lid - e[i - 1].lid);
	for (size_t i = 0; i < n; i++)
		p = put_num(p, e[i].tf, ctf);
	for (size_t i = 0; i < n; i++)
		p = put_num(p, e[i].dl, cdl);
	uint32_t at = 0;
	for (size_t i = 0; i < n; i++)
		p = put_num(p, at += (uint32_t)e[i].n, coff);
	for (size_t i = 0; i < n; i++) {
		memcpy(p, e[i].pos, e[i].n);
		p += e[i].n;
	}
	return p;
}

/* Replace the block first lid old (has_old) by e[0..n), cut into blocks. */
static int rewrite(MDB_txn *t, MDB_dbi dbi, uint8_t *key, size_t plen, int has_old, uint32_t old,
                   const struct store_post *e, size_t n, struct strata_error *err)
{
	size_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += 40 + e[i].n; /* a header's, a posting's lid and columns */
	/* block j is buf[at[j], at[j + 1]) and begins with posting cut[j] */
	size_t mem = bytes + 2 * (n + 1) * sizeof(size_t);
	size_t stack[REWRITE_STACK / sizeof(size_t)];
	size_t *cut = mem <= sizeof stack ? stack : base_alloc(mem);
	if (!cut)
		return base_nomem(err, "indexing text");
	size_t *at = cut + n + 1, nb = 0, sz = 0;
	uint8_t *buf = (uint8_t *)(at + n + 1);
	for (size_t i = 0; i < n; i++) {
		size_t s = payload_size(&e[i]) + (i ? varint_size(e[i].lid - e[i - 1].lid) : 0);
		if (!nb || i - cut[nb - 1] == STORE_BLOCK_MAX || sz + s > POST_BLOCK_BYTES) {
			cut[nb++] = i;
			s = payload_size(&e[i]);
			sz = 0;
		}
		sz += s;
	}
	cut[nb] = n;
	/* encode everything first: e may point into the old block's page */
	size_t o = 0;
	for (size_t j = 0; j < nb; j++) {
		at[j] = o;
		o = (size_t)(encode(buf + o, e + cut[j], cut[j + 1] - cut[j]) - buf);
	}
	at[nb] = o;
	int rc = 0;
	if (has_old && (!n || e[0].lid != old)) {
		store_be32_put(key + plen, old);
		MDB_val k = {plen + 4, key};
		if ((rc = mdb_del(t, dbi, &k, NULL)) != 0)
			rc = store_mdb_err(err, rc, "updating the text index");
	}
	for (size_t j = 0; j < nb && !rc; j++) {
		store_be32_put(key + plen, e[cut[j]].lid);
		MDB_val k = {plen + 4, key}, v = {at[j + 1] - at[j], buf + at[j]};
		if ((rc = mdb_put(t, dbi, &k, &v, 0)) != 0)
			rc = store_mdb_err(err, rc, "writing the text index");
	}
	if (cut != stack)
		base_free(cut, mem);
	return rc;
}

int store_post_del(MDB_txn *t, MDB_dbi dbi, uint8_t *key, size_t plen, uint32_t lid,
                   struct strata_error *err)
{
	MDB_cursor *c;
	int rc = mdb_cursor_open(t, dbi, &c);
	if (rc)
		return store_mdb_err(err, rc, "updating the text index");
	MDB_val k, v = {0, NULL};
	struct store_post e[STORE_BLOCK_MAX];
	size_t n = 0, at = 0;
	uint32_t first = 0;
	int has = locate(c, key, plen, lid, &k, &v);
	if (has < 0 || has > 1) {
		rc = store_mdb_err(err, has, "reading the text index");
		goto out;
	}
	if (has) {
		first = store_be32_get((const uint8_t *)k.mv_data + plen);
		if ((rc = store_post_decode(&v, first, e, &n, err)) != 0)
			goto out;
	}
	while (at < n && e[at].lid < lid)
		at++;
	if (at == n || e[at].lid != lid) {
		rc = STRATA_NOT_FOUND;
		goto out;
	}
	memmove(e + at, e + at + 1, (n - at - 1) * sizeof *e);
	rc = rewrite(t, dbi, key, plen, has, first, e, n - 1, err);
out:
	mdb_cursor_close(c);
	return rc;
}

int store_post_merge(MDB_txn *t, MDB_dbi dbi, uint8_t *key, size_t plen,
                     const struct store_post *add, size_t n, struct strata_error *err)
{
	MDB_cursor *c;
	int rc = mdb_cursor_open(t, dbi, &c);
	if (rc)
		return store_mdb_err(err, rc, "updating the text index");
	struct store_post mstack[MERGE_STACK], *m = mstack;
	size_t mcap = MERGE_STACK;
	for (size_t i = 0; i < n && !rc;) {
		/* the block for add[i], and the lids it covers: up to the next
		 * block's first */
		MDB_val k, v = {0, NULL};
		struct store_post e[STORE_BLOCK_MAX];
		size_t ne = 0, j = n;
		uint32_t first = 0;
		int has = locate(c, key, plen, add[i].lid, &k, &v);
		if (has < 0 || has > 1) {
			rc = store_mdb_err(err, has, "reading the text index");
			break;
		}
		if (has) {
			first = store_be32_get((const uint8_t *)k.mv_data + plen);
			if ((rc = store_post_decode(&v, first, e, &ne, err)) != 0)
				break;
			MDB_val nk, nv;
			uint32_t upto = e[ne - 1].lid > add[i].lid ? e[ne - 1].lid : add[i].lid;
			if (upto < UINT32_MAX) {
				store_be32_put(key + plen, upto + 1);
				nk = (MDB_val){plen + 4, key};
				int nrc = mdb_cursor_get(c, &nk, &nv, MDB_SET_RANGE);
				if (nrc && nrc != MDB_NOTFOUND) {
					rc = store_mdb_err(err, nrc, "reading the text index");
					break;
				}
				if (!nrc && nk.mv_size == plen + 4 && memcmp(nk.mv_data, key, plen) == 0) {
					uint32_t next = store_be32_get((const uint8_t *)nk.mv_data + plen);
					for (j = i; j < n && add[j].lid < next; j++)
						;
				}
			}
		}
		/* merge the block's postings with add[i, j): an added lid
		 * replaces a kept one */
		size_t need = ne + (j - i);
		if (need > mcap) {
			struct store_post *p = base_alloc(need * sizeof *m);
			if (!p) {
				rc = base_nomem(err, "indexing text");
				break;
			}
			if (m != mstack)
				base_free(m, mcap * sizeof *m);
			m = p;
			mcap = need;
		}
		size_t a = 0, nm = 0, q = i;
		while (a < ne || q < j) {
			if (q == j || (a < ne && e[a].lid < add[q].lid))
				m[nm++] = e[a++];
			else {
				if (a < ne && e[a].lid == add[q].lid)
					a++;
				m[nm++] = add[q++];
			}
		}
		rc = rewrite(t, dbi, key, plen, has, first, m, nm, err);
		i = j;
	}
	if (m != mstack)
		base_free(m, mcap * sizeof *m);
	mdb_cursor_close(c);
	return rc;
}
