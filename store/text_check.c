/*
 * text_check.c: the text index checked against itself and the documents
 * (store_text_check), for tests and for `strata check`.
 *
 * One pass over the doctype's text index in key order (store_int.h): for
 * each term its frequency entry, then its blocks.  Every block decodes
 * and its header's bounds are those of its postings (store_post_decode),
 * each posting's occurrences the count of its positions;
 * blocks of a term follow one another without overlap; every posting is
 * of a live document and carries that document's length entry; a term's
 * frequency is its number of postings.  Every length entry is of a live
 * document, and the field's totals are the count and the sum of its
 * length entries.
 */
#include <string.h>

#include "store_int.h"

struct field_sum {
	uint64_t docs, tokens;   /* from the length entries */
	uint64_t tdocs, ttokens; /* the totals entry */
	uint64_t elems, telems;  /* elements: of the length entries, of the totals */
	int has_totals;
};

/* Whether lid is a live document of doctype. */
static int live(struct store_txn *txn, int doctype, uint32_t lid)
{
	uint32_t at = lid;
	return store_next(txn, doctype, &at) == 0 && at == lid;
}

/* The term being walked: its frequency entry's key and what its blocks hold. */
struct term {
	uint8_t key[STORE_TEXT_KEY_MAX];
	size_t len;             /* 0: none */
	uint64_t df, seen;
	uint64_t next;          /* the least lid its next block may hold */
};

static int term_end(const struct term *t, struct strata_error *err)
{
	if (t->len && t->df != t->seen)
		return base_err(err, STRATA_CORRUPT,
		                "text index: a term's frequency is %llu, it has %llu postings",
		                (unsigned long long)t->df, (unsigned long long)t->seen);
	return 0;
}

static int block(struct store_txn *txn, int doctype, struct doctype *dt, struct term *t,
                 const MDB_val *k, const MDB_val *v, uint64_t *postings, struct strata_error *err)
{
	size_t plen = k->mv_size - 4;
	if (!t->len || t->len != plen || memcmp(t->key, k->mv_data, plen) != 0)
		return base_err(err, STRATA_CORRUPT, "text index: a block without its term's frequency");
	uint32_t first = store_be32_get((const uint8_t *)k->mv_data + plen);
	struct store_post e[STORE_BLOCK_MAX];
	size_t n;
	int rc = store_post_decode(v, first, e, &n, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		if (e[i].tf != store_pos_count(e[i].pos, e[i].n))
			return base_err(err, STRATA_CORRUPT,
			                "text index: local id %u: occurrences %u, positions %u", e[i].lid,
			                e[i].tf, store_pos_count(e[i].pos, e[i].n));
	if (first < t->next)
		return base_err(err, STRATA_CORRUPT, "text index: blocks of a term overlap at %u", first);
	for (size_t i = 0; i < n; i++) {
		if (!live(txn, doctype, e[i].lid))
			return base_err(err, STRATA_CORRUPT,
			                "text index: a posting of local id %u, no document", e[i].lid);
		uint8_t lk[STORE_TEXT_KEY_MAX];
		const uint8_t *kb = k->mv_data;
		MDB_val key = {store_text_length_key(lk, kb[0] << 8 | kb[1], e[i].lid), lk}, val;
		uint32_t len;
		rc = mdb_get(txn->txn, dt->text, &key, &val);
		if (rc == MDB_NOTFOUND || (!rc && val.mv_size < 4))
			return base_err(err, STRATA_CORRUPT,
			                "text index: a posting of local id %u, no length entry", e[i].lid);
		if (rc)
			return store_mdb_err(err, rc, "reading the text index");
		memcpy(&len, val.mv_data, 4);
		if (len != e[i].dl)
			return base_err(err, STRATA_CORRUPT,
			                "text index: a posting of local id %u says length %u, the "
			                "document's is %u", e[i].lid, e[i].dl, len);
	}
	t->seen += n;
	t->next = (uint64_t)e[n - 1].lid + 1;
	*postings += n;
	return 0;
}

int store_text_check(struct store_txn *txn, int doctype, uint64_t *postings,
                     struct strata_error *err)
{
	int rc = store_txn_check(txn, 0, doctype, err);
	if (rc)
		return rc;
	struct doctype *dt = txn->env->types[doctype];
	*postings = 0;
	int any = 0;
	for (int sf = 0; sf < dt->nstored; sf++)
		any |= dt->stored[sf].text != 0;
	if (!any)
		return 0;
	struct field_sum *fs = base_calloc((size_t)dt->nstored, sizeof *fs);
	struct term *t = base_calloc(1, sizeof *t);
	MDB_cursor *c = NULL;
	if (!fs || !t) {
		rc = base_nomem(err, "checking the text index");
		goto out;
	}
	if ((rc = mdb_cursor_open(txn->txn, dt->text, &c)) != 0) {
		rc = store_mdb_err(err, rc, "reading the text index");
		goto out;
	}
	MDB_val k, v;
	for (int op = MDB_FIRST; (rc = mdb_cursor_get(c, &k, &v, op)) == 0; op = MDB_NEXT) {
		const uint8_t *kb = k.mv_data;
		int sf = k.mv_size >= 3 ? kb[0] << 8 | kb[1] : -1;
		if (sf < 0 || sf >= dt->nstored || !dt->stored[sf].text) {
			rc = base_err(err, STRATA_CORRUPT, "text index: a key of no text field");
			goto out;
		}
		if (kb[2] == STORE_TEXT_LEN_TAG || kb[2] == STORE_TEXT_SUM_TAG) {
			if ((rc = term_end(t, err)) != 0)
				goto out;
			t->len = 0;
			uint32_t len;
			if (kb[2] == STORE_TEXT_SUM_TAG && k.mv_size == 3 && v.mv_size == 24) {
				memcpy(&fs[sf].tdocs, v.mv_data, 8);
				memcpy(&fs[sf].ttokens, (const uint8_t *)v.mv_data + 8, 8);
				memcpy(&fs[sf].telems, (const uint8_t *)v.mv_data + 16, 8);
				fs[sf].has_totals = 1;
			} else if (kb[2] == STORE_TEXT_LEN_TAG && k.mv_size == 7 && v.mv_size >= 4 &&
			           live(txn, doctype, store_be32_get(kb + 3))) {
				memcpy(&len, v.mv_data, 4);
				fs[sf].docs++;
				fs[sf].tokens += len;
				fs[sf].elems += dt->stored[sf].text & (STORE_TEXT_ARRAY | STORE_TEXT_WSET)
				                ? (v.mv_size - 4) / 12 : 1; /* text.c's element table */
			} else {
				rc = base_err(err, STRATA_CORRUPT, "text index: a bad length or totals entry");
				goto out;
			}
			continue;
		}
		const uint8_t *z = memchr(kb + 2, 0, k.mv_size - 2);
		size_t zi = z ? (size_t)(z - kb) : 0;
		if (z && k.mv_size == zi + 1 && v.mv_size == 4) { /* a term's frequency */
			if ((rc = term_end(t, err)) != 0)
				goto out;
			uint32_t df;
			memcpy(&df, v.mv_data, 4);
			memcpy(t->key, kb, k.mv_size);
			t->len = k.mv_size;
			t->df = df;
			t->seen = 0;
			t->next = 0;
		} else if (z && k.mv_size == zi + 5) {
			if ((rc = block(txn, doctype, dt, t, &k, &v, postings, err)) != 0)
				goto out;
		} else {
			rc = base_err(err, STRATA_CORRUPT, "text index: a key of no known kind");
			goto out;
		}
	}
	if (rc != MDB_NOTFOUND) {
		rc = store_mdb_err(err, rc, "reading the text index");
		goto out;
	}
	if ((rc = term_end(t, err)) != 0)
		goto out;
	for (int sf = 0; sf < dt->nstored; sf++)
		if (fs[sf].docs && (!fs[sf].has_totals || fs[sf].docs != fs[sf].tdocs ||
		                    fs[sf].tokens != fs[sf].ttokens || fs[sf].elems != fs[sf].telems)) {
			rc = base_err(err, STRATA_CORRUPT,
			              "text index: field totals of %llu documents, %llu tokens, %llu "
			              "elements; the length entries %llu, %llu, %llu",
			              (unsigned long long)fs[sf].tdocs, (unsigned long long)fs[sf].ttokens,
			              (unsigned long long)fs[sf].telems, (unsigned long long)fs[sf].docs,
			              (unsigned long long)fs[sf].tokens, (unsigned long long)fs[sf].elems);
			goto out;
		}
out:
	if (c)
		mdb_cursor_close(c);
	base_free(t, sizeof *t);
	if (fs)
		base_free(fs, (size_t)dt->nstored * sizeof *fs);
	return rc;
}
