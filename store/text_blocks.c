/*
 * text_blocks.c: a term's postings in blocks (layout in store_int.h).
 *
 * A block is one LMDB value under the key F term 0 first-lid; it holds up
 * to POST_BLOCK_MAX postings in lid order, each as varint(lid minus the
 * previous lid, the first minus the key's lid, so 0), varint(bytes of its
 * positions), the positions (varint deltas).  Adding postings (a
 * transaction's, at its commit) or removing one reads each block that holds
 * (or would hold) their lids, merges and writes it back, cut greedily into blocks of at most POST_BLOCK_MAX postings and
 * POST_BLOCK_BYTES bytes (a block with one posting may be larger); a block
 * whose first lid changes moves to its new key, an empty one is deleted.
 * Documents get increasing lids, so adding is mostly appending to a term's
 * last block.
 */
#include <string.h>

#include "store_int.h"

#define POST_BLOCK_MAX 128
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

int store_post_entry(const uint8_t *b, size_t n, size_t *off, uint32_t *lid, const uint8_t **pos,
                     size_t *npos)
{
	uint32_t d, len;
	if (varint_get(b, n, off, &d) || varint_get(b, n, off, &len) || len > n - *off ||
	    *lid + (uint64_t)d > UINT32_MAX)
		return -1;
	*lid += d;
	*pos = b + *off;
	*npos = len;
	*off += len;
	return 0;
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

/* Decode block (first lid first) into e (room for POST_BLOCK_MAX). */
static int decode(const MDB_val *v, uint32_t first, struct store_post *e, size_t *ne,
                  struct strata_error *err)
{
	size_t off = 0, n = 0;
	uint32_t lid = first;
	while (off < v->mv_size) {
		if (n == POST_BLOCK_MAX ||
		    store_post_entry(v->mv_data, v->mv_size, &off, &lid, &e[n].pos, &e[n].n) ||
		    (n && lid <= e[n - 1].lid) || (!n && lid != first))
			return base_err(err, STRATA_CORRUPT, "text index: bad posting block");
		e[n++].lid = lid;
	}
	if (!n)
		return base_err(err, STRATA_CORRUPT, "text index: empty posting block");
	*ne = n;
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

/* Replace the block first lid old (has_old) by e[0..n), cut into blocks. */
static int rewrite(MDB_txn *t, MDB_dbi dbi, uint8_t *key, size_t plen, int has_old, uint32_t old,
                   const struct store_post *e, size_t n, struct strata_error *err)
{
	size_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += 10 + e[i].n;
	/* block j is buf[at[j], at[j + 1]) and begins with posting cut[j] */
	size_t mem = bytes + 2 * (n + 1) * sizeof(size_t);
	size_t stack[REWRITE_STACK / sizeof(size_t)];
	size_t *cut = mem <= sizeof stack ? stack : base_alloc(mem);
	if (!cut)
		return base_nomem(err, "indexing text");
	size_t *at = cut + n + 1, nb = 0, o = 0;
	uint8_t *buf = (uint8_t *)(at + n + 1);
	/* encode everything first: e may point into the old block's page */
	uint32_t last = 0;
	for (size_t i = 0; i < n; i++) {
		size_t sz = varint_size(e[i].lid - last) + varint_size((uint32_t)e[i].n) + e[i].n;
		if (!nb || i - cut[nb - 1] == POST_BLOCK_MAX || o - at[nb - 1] + sz > POST_BLOCK_BYTES) {
			cut[nb] = i;
			at[nb++] = o;
			last = e[i].lid;
		}
		uint8_t *p = store_varint_put(buf + o, e[i].lid - last);
		p = store_varint_put(p, (uint32_t)e[i].n);
		memcpy(p, e[i].pos, e[i].n);
		o = (size_t)(p - buf) + e[i].n;
		last = e[i].lid;
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
	struct store_post e[POST_BLOCK_MAX];
	size_t n = 0, at = 0;
	uint32_t first = 0;
	int has = locate(c, key, plen, lid, &k, &v);
	if (has < 0 || has > 1) {
		rc = store_mdb_err(err, has, "reading the text index");
		goto out;
	}
	if (has) {
		first = store_be32_get((const uint8_t *)k.mv_data + plen);
		if ((rc = decode(&v, first, e, &n, err)) != 0)
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
		struct store_post e[POST_BLOCK_MAX];
		size_t ne = 0, j = n;
		uint32_t first = 0;
		int has = locate(c, key, plen, add[i].lid, &k, &v);
		if (has < 0 || has > 1) {
			rc = store_mdb_err(err, has, "reading the text index");
			break;
		}
		if (has) {
			first = store_be32_get((const uint8_t *)k.mv_data + plen);
			if ((rc = decode(&v, first, e, &ne, err)) != 0)
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
