/*
 * doc.c: documents: put, update, remove, lookup, iteration and reads.
 *
 * A document has a local id (lid, u32) handed out by a per-type counter in
 * the meta DB and never reused, so a new lid has no column data anywhere.  The
 * "ids" DB maps the document id to its lid; the "docs" DB maps the lid to the
 * document record; column attributes live in attr.c's blocks.  Each write
 * also brings the text index (text.c), the graphs (hnsw_sync.c) and the
 * value dictionaries (dict.c) in line with the document.
 *
 * Record format, version 1 (native byte order, every part 8-byte aligned
 * from the record's start so tensor payloads are aligned whenever LMDB hands
 * the record out aligned):
 *     u8 version (1), u8[3] zero, u32 id length, id bytes, NUL, pad to 8
 *     u32 value count, u32 zero
 *     per value, in increasing stored-field order:
 *         u32 stored field, u8 type, u8 cell type, u16 zero, u64 payload bytes,
 *         payload, pad to 8
 *     payloads: string bytes; int/long/bool as int64; float/double as
 *     double; tensor cells.
 * Column attribute fields never appear in records.  Readers check every
 * length and type against the layout: a record that does not fit is
 * STRATA_CORRUPT, never a crash.
 *
 * Every operation validates its input and reads what it needs before its
 * first write: a rejected operation writes nothing and leaves the
 * transaction usable; a failure after the first write fails the transaction.
 * Debug builds check at each write that the "ids" map and the records
 * agree on the document's lid, and that a new lid has no record yet.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "store_int.h"

#define REC_VERSION 1
#define MAX_RECORD ((size_t)256 << 20)

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* ---- records ------------------------------------------------------------ */

struct rec_iter {
	const uint8_t *p, *end, *base;
	uint32_t left;
	int last;        /* last stored field seen, for the order check */
};

struct rec_entry {
	int field;       /* stored field index */
	const uint8_t *payload;
	size_t len;
};

static int corrupt(const struct doctype *dt, uint32_t lid, const char *why,
                   struct strata_error *err)
{
	return base_err(err, STRATA_CORRUPT, "document type '%s': record of local id %u: %s",
	                dt->name, lid, why);
}

/* Check the header; *id gets the NUL-terminated id. */
static int rec_open(const struct doctype *dt, uint32_t lid, const MDB_val *v, const char **id,
                    size_t *idlen, struct rec_iter *it, struct strata_error *err)
{
	const uint8_t *p = v->mv_data;
	size_t n = v->mv_size;
	uint32_t len, count;
	if (n < 8 || p[0] != REC_VERSION)
		return corrupt(dt, lid, n < 8 ? "too short" : "unknown version", err);
	memcpy(&len, p + 4, 4);
	size_t off = pad8(8 + (size_t)len + 1);
	if (len == 0 || off + 8 > n || p[8 + len] != 0 || memchr(p + 8, 0, len))
		return corrupt(dt, lid, "bad document id", err);
	memcpy(&count, p + off, 4);
	*id = (const char *)p + 8;
	*idlen = len;
	it->base = p;
	it->p = p + off + 8;
	it->end = p + n;
	it->left = count;
	it->last = -1;
	return 0;
}

/* Next value: 1 and *e filled, 0 at the end, or a negative error. */
static int rec_next(const struct doctype *dt, uint32_t lid, struct rec_iter *it,
                    struct rec_entry *e, struct strata_error *err)
{
	if (it->left == 0)
		return it->p == it->end ? 0 : corrupt(dt, lid, "trailing bytes", err);
	uint32_t field;
	uint64_t len;
	if ((size_t)(it->end - it->p) < 16)
		return corrupt(dt, lid, "truncated value header", err);
	memcpy(&field, it->p, 4);
	memcpy(&len, it->p + 8, 8);
	uint8_t type = it->p[4], cell = it->p[5];
	it->p += 16;
	if ((int64_t)field <= it->last || field >= (uint32_t)dt->nstored)
		return corrupt(dt, lid, "bad field number", err);
	const struct sfield *f = &dt->stored[field];
	if (type != f->type || cell != f->cell || f->column)
		return corrupt(dt, lid, "value type differs from the layout", err);
	if (len > (uint64_t)(it->end - it->p))
		return corrupt(dt, lid, "value runs past the end", err);
	if ((f->type == STORE_T_TENSOR && len != f->cell_bytes) ||
	    (f->type != STORE_T_TENSOR && !STORE_IS_BYTES(f->type) && len != 8))
		return corrupt(dt, lid, "value has the wrong size", err);
	e->field = (int)field;
	e->payload = it->p;
	e->len = (size_t)len;
	size_t step = pad8((size_t)len);
	it->p += step <= (size_t)(it->end - it->p) ? step : (size_t)(it->end - it->p);
	it->last = (int)field;
	it->left--;
	return 1;
}

/* Payload bytes of a (non-column) value. */
static size_t value_bytes(const struct sfield *f, const struct store_value *v)
{
	if (STORE_IS_BYTES(f->type))
		return v->n;
	if (f->type == STORE_T_TENSOR)
		return f->cell_bytes;
	return 8;
}

static uint8_t *rec_value(uint8_t *p, int field, const struct sfield *f, const void *payload,
                          size_t len)
{
	uint32_t fn = (uint32_t)field;
	uint64_t l = len;
	memset(p, 0, 16);
	memcpy(p, &fn, 4);
	p[4] = (uint8_t)f->type;
	p[5] = (uint8_t)f->cell;
	memcpy(p + 8, &l, 8);
	if (len)
		memcpy(p + 16, payload, len);
	memset(p + 16 + len, 0, pad8(len) - len);
	return p + 16 + pad8(len);
}

/* Encode a number value's payload (8 bytes). */
static void number_payload(const struct sfield *f, const struct store_value *v, uint8_t out[8])
{
	if (f->type == STORE_T_FLOAT || f->type == STORE_T_DOUBLE) {
		double d = f->type == STORE_T_FLOAT ? (double)(float)v->d : v->d;
		memcpy(out, &d, 8);
	} else {
		int64_t i = f->type == STORE_T_BOOL ? (v->i != 0) : v->i;
		memcpy(out, &i, 8);
	}
}

/* The payload of value v of stored field f, for a record. */
static const void *payload_of(const struct sfield *f, const struct store_value *v, uint8_t num[8])
{
	if (STORE_IS_BYTES(f->type))
		return v->s;
	if (f->type == STORE_T_TENSOR)
		return v->cells;
	number_payload(f, v, num);
	return num;
}

/* The caller's value for stored field sf, or NULL when not set. */
static const struct store_value *given(const struct doctype *dt, const struct store_value *values,
                                       int sf)
{
	int u = dt->stored[sf].user;
	return u >= 0 && values[u].set ? &values[u] : NULL;
}

static int buf_reserve(struct store_txn *w, size_t n, struct strata_error *err)
{
	if (n > MAX_RECORD)
		return base_err(err, STRATA_LIMIT, "a document of %zu bytes is larger than %zu", n,
		                MAX_RECORD);
	if (n <= w->buf_cap)
		return 0;
	size_t cap = w->buf_cap ? w->buf_cap : 4096;
	while (cap < n)
		cap *= 2;
	uint8_t *b = base_alloc(cap);
	if (!b)
		return base_nomem(err, "a document of %zu bytes", n);
	base_free(w->buf, w->buf_cap);
	w->buf = b;
	w->buf_cap = cap;
	return 0;
}

static size_t rec_header(uint8_t *p, const char *id, size_t idlen)
{
	uint32_t l = (uint32_t)idlen;
	size_t off = pad8(8 + idlen + 1);
	memset(p, 0, off + 8);
	p[0] = REC_VERSION;
	memcpy(p + 4, &l, 4);
	memcpy(p + 8, id, idlen);
	return off;
}

/* Build the record of a put into w->buf; *n gets its size. */
static int build_put(struct store_txn *w, const struct doctype *dt, const char *id, size_t idlen,
                     const struct store_value *values, size_t *n, struct strata_error *err)
{
	size_t size = pad8(8 + idlen + 1) + 8;
	uint32_t count = 0;
	for (int sf = 0; sf < dt->nstored; sf++) {
		const struct store_value *v = given(dt, values, sf);
		if (v && !dt->stored[sf].column) {
			size += 16 + pad8(value_bytes(&dt->stored[sf], v));
			count++;
		}
	}
	int rc = buf_reserve(w, size, err);
	if (rc)
		return rc;
	size_t off = rec_header(w->buf, id, idlen);
	memcpy(w->buf + off, &count, 4);
	uint8_t *p = w->buf + off + 8;
	for (int sf = 0; sf < dt->nstored; sf++) {
		const struct sfield *f = &dt->stored[sf];
		const struct store_value *v = given(dt, values, sf);
		if (!v || f->column)
			continue;
		uint8_t num[8];
		p = rec_value(p, sf, f, payload_of(f, v, num), value_bytes(f, v));
	}
	*n = (size_t)(p - w->buf);
	return 0;
}

/* Build an update's record: the old record's values, with the given ones in
 * their place.  Both walks go in stored-field order. */
static int build_update(struct store_txn *w, const struct doctype *dt, uint32_t lid,
                        const MDB_val *old, const struct store_value *values, size_t *n,
                        struct strata_error *err)
{
	const char *id;
	size_t idlen;
	struct rec_iter it;
	struct rec_entry e;
	int rc = rec_open(dt, lid, old, &id, &idlen, &it, err);
	if (rc)
		return rc;
	/* First pass: size, and a full check of the old record. */
	size_t size = pad8(8 + idlen + 1) + 8;
	uint32_t count = 0;
	struct rec_iter it2 = it;
	int sf = 0;
	while ((rc = rec_next(dt, lid, &it2, &e, err)) == 1) {
		for (; sf < e.field; sf++) {
			const struct store_value *v = given(dt, values, sf);
			if (v && !dt->stored[sf].column) {
				size += 16 + pad8(value_bytes(&dt->stored[sf], v));
				count++;
			}
		}
		const struct store_value *v = given(dt, values, sf);
		size += 16 + pad8(v ? value_bytes(&dt->stored[sf], v) : e.len);
		count++;
		sf++;
	}
	if (rc < 0)
		return rc;
	for (; sf < dt->nstored; sf++) {
		const struct store_value *v = given(dt, values, sf);
		if (v && !dt->stored[sf].column) {
			size += 16 + pad8(value_bytes(&dt->stored[sf], v));
			count++;
		}
	}
	if ((rc = buf_reserve(w, size, err)) != 0)
		return rc;
	/* Second pass: write.  The old record lives in LMDB's memory, which no
	 * write has touched yet. */
	size_t off = rec_header(w->buf, id, idlen);
	memcpy(w->buf + off, &count, 4);
	uint8_t *p = w->buf + off + 8;
	int have = rec_next(dt, lid, &it, &e, err);
	for (sf = 0; sf < dt->nstored; sf++) {
		const struct sfield *f = &dt->stored[sf];
		const struct store_value *v = given(dt, values, sf);
		int in_old = have == 1 && e.field == sf;
		if (v && !f->column) {
			uint8_t num[8];
			p = rec_value(p, sf, f, payload_of(f, v, num), value_bytes(f, v));
		} else if (in_old) {
			p = rec_value(p, sf, f, e.payload, e.len);
		}
		if (in_old)
			have = rec_next(dt, lid, &it, &e, err);
	}
	*n = (size_t)(p - w->buf);
	return 0;
}

/* ---- validation ------------------------------------------------------------ */

static int check_id(const struct store_env *env, const char *id, size_t *len,
                    struct strata_error *err)
{
	if (!id || !*id)
		return base_err(err, STRATA_INVALID_ARGUMENT, "empty document id");
	*len = strlen(id);
	if (*len > env->maxkey)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "document id of %zu bytes is longer than the store's limit of %u bytes",
		                *len, env->maxkey);
	return 0;
}

static int check_values(const struct doctype *dt, const struct store_value *values,
                        struct strata_error *err)
{
	if (dt->nuser && !values)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no field values given");
	for (int u = 0; u < dt->nuser; u++) {
		const struct store_value *v = &values[u];
		const struct sfield *f = &dt->stored[dt->ufield[u]];
		if (!v->set)
			continue;
		switch (f->type) {
		case STORE_T_STRING:
		case STORE_T_JSON:
			if (v->n > STORE_MAX_STRING)
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "field '%s': a string of %zu bytes is longer than %u",
				                f->name, v->n, STORE_MAX_STRING);
			if (v->n && !v->s)
				return base_err(err, STRATA_INVALID_ARGUMENT, "field '%s': no string bytes",
				                f->name);
			break;
		case STORE_T_INT:
			if (v->i < INT32_MIN || v->i > INT32_MAX)
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "field '%s': %lld does not fit an int", f->name,
				                (long long)v->i);
			break;
		case STORE_T_TENSOR:
			if (v->n != f->ncells)
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "field '%s': %zu cells, expected %llu", f->name, v->n,
				                (unsigned long long)f->ncells);
			if (!v->cells)
				return base_err(err, STRATA_INVALID_ARGUMENT, "field '%s': no cells",
				                f->name);
			break;
		}
	}
	return 0;
}

/* The column cell bytes of a value (scalars converted to their width). */
static const void *column_cell(const struct sfield *f, const struct store_value *v,
                               uint8_t tmp[8])
{
	switch (f->type) {
	case STORE_T_INT: {
		int32_t x = (int32_t)v->i;
		memcpy(tmp, &x, 4);
		return tmp;
	}
	case STORE_T_LONG:
		memcpy(tmp, &v->i, 8);
		return tmp;
	case STORE_T_FLOAT: {
		float x = (float)v->d;
		memcpy(tmp, &x, 4);
		return tmp;
	}
	case STORE_T_DOUBLE:
		memcpy(tmp, &v->d, 8);
		return tmp;
	case STORE_T_BOOL:
		tmp[0] = v->i != 0;
		return tmp;
	}
	return v->cells;
}

/* The lid of id: 0, MDB_NOTFOUND, or an error already reported. */
static int find_lid(struct store_txn *txn, const struct doctype *dt, const char *id, size_t len,
                    uint32_t *lid, struct strata_error *err)
{
	MDB_val k = {len, (void *)id}, v;
	int rc = mdb_get(txn->txn, dt->ids, &k, &v);
	if (rc == MDB_NOTFOUND)
		return rc;
	if (rc)
		return store_mdb_err(err, rc, "looking up a document");
	if (v.mv_size != 4)
		return base_err(err, STRATA_CORRUPT, "document type '%s': bad id entry for '%s'",
		                dt->name, id);
	memcpy(lid, v.mv_data, 4);
	return 0;
}

/* ---- debug checks -------------------------------------------------------------- */

#ifdef STRATA_DEBUG
/* The "ids" map and the records agree on lid: its record, when there is a
 * readable one, carries the id that maps to it.  (A damaged record is
 * reported as STRATA_CORRUPT where it is read, not asserted on.) */
static int record_is(struct store_txn *txn, const struct doctype *dt, uint32_t lid,
                     const char *id, size_t idlen)
{
	MDB_val k = {sizeof lid, &lid}, v;
	const char *rid;
	size_t rlen;
	struct rec_iter it;
	if (mdb_get(txn->txn, dt->docs, &k, &v) != 0 ||
	    rec_open(dt, lid, &v, &rid, &rlen, &it, NULL) != 0)
		return 1;
	return rlen == idlen && memcmp(rid, id, idlen) == 0;
}

/* A local id is never reused: a new one has no record yet. */
static int lid_unused(struct store_txn *txn, const struct doctype *dt, uint32_t lid)
{
	MDB_val k = {sizeof lid, &lid}, v;
	return mdb_get(txn->txn, dt->docs, &k, &v) == MDB_NOTFOUND;
}
#endif

/* ---- the text index ---------------------------------------------------------- */

/* The text fields' values of record rec into tv (only: when not NULL, just
 * the fields it marks).  Returns 0 or STRATA_CORRUPT. */
static int rec_text(const struct doctype *dt, uint32_t lid, const MDB_val *rec,
                    const unsigned char *only, struct store_text_vals *tv,
                    struct strata_error *err)
{
	tv->n = 0;
	for (int sf = 0; sf < dt->nstored; sf++) {
		if (!dt->stored[sf].text || (only && !only[sf]))
			continue;
		if (tv->n == STORE_MAX_TEXT_FIELDS)
			return base_err(err, STRATA_LIMIT, "more than %d text-indexed fields",
			                STORE_MAX_TEXT_FIELDS);
		tv->sf[tv->n] = sf;
		tv->set[tv->n++] = 0;
	}
	if (!tv->n || !rec)
		return 0;
	const char *id;
	size_t idlen;
	struct rec_iter it;
	struct rec_entry e;
	int rc = rec_open(dt, lid, rec, &id, &idlen, &it, err);
	if (rc)
		return rc;
	int i = 0;
	while ((rc = rec_next(dt, lid, &it, &e, err)) == 1) {
		while (i < tv->n && tv->sf[i] < e.field)
			i++;
		if (i < tv->n && tv->sf[i] == e.field) {
			tv->s[i] = (const char *)e.payload;
			tv->len[i] = e.len;
			tv->set[i] = 1;
		}
	}
	return rc;
}

/* Reindex lid from record old (NULL: none) to record rec (NULL: removed). */
static int text_update(struct store_txn *w, struct doctype *dt, uint32_t lid, const MDB_val *old,
                       const MDB_val *rec, const unsigned char *only, struct strata_error *err)
{
	struct store_text_vals a, b;
	int rc;
	if ((rc = rec_text(dt, lid, old, only, &a, err)) != 0 ||
	    (rc = rec_text(dt, lid, rec, only, &b, err)) != 0)
		return rc;
	if (!a.n)
		return 0;
	return store_text_reindex(w, dt, lid, old ? &a : NULL, rec ? &b : NULL, err);
}

int store_doc_text_sync(MDB_txn *t, MDB_dbi meta, struct doctype *dt, struct strata_error *err)
{
	int changed, rc = store_text_settings(t, meta, dt, 0, &changed, err);
	if (rc || !changed)
		return rc;
	/* Rebuild: empty the index, then index every document again. */
	if ((rc = mdb_drop(t, dt->text, 0)) != 0)
		return store_mdb_err(err, rc, "rebuilding the text index");
	struct store_txn w = {.txn = t, .write = 1};
	MDB_cursor *c;
	if ((rc = mdb_cursor_open(t, dt->docs, &c)) != 0)
		return store_mdb_err(err, rc, "rebuilding the text index");
	uint8_t *copy = NULL;
	size_t copy_cap = 0;
	MDB_val dk, dv;
	int mrc;
	for (mrc = mdb_cursor_get(c, &dk, &dv, MDB_FIRST); mrc == 0 && rc == 0;
	     mrc = mdb_cursor_get(c, &dk, &dv, MDB_NEXT)) {
		uint32_t lid;
		memcpy(&lid, dk.mv_data, 4);
		if (dv.mv_size > copy_cap) { /* the record, stable while the index is written */
			uint8_t *p = base_realloc(copy, copy_cap, dv.mv_size);
			if (!p) {
				rc = base_nomem(err, "rebuilding the text index");
				break;
			}
			copy = p;
			copy_cap = dv.mv_size;
		}
		memcpy(copy, dv.mv_data, dv.mv_size);
		MDB_val rec = {dv.mv_size, copy};
		rc = text_update(&w, dt, lid, NULL, &rec, NULL, err);
	}
	mdb_cursor_close(c);
	base_free(copy, copy_cap);
	store_tokbuf_free(&w.tb);
	if (!rc && mrc == MDB_NOTFOUND)
		rc = store_text_flush(&w, err);
	store_text_df_free(&w);
	base_free(w.ebuf, w.ebuf_cap);
	if (rc)
		return rc;
	if (mrc != MDB_NOTFOUND)
		return store_mdb_err(err, mrc, "rebuilding the text index");
	return store_text_settings(t, meta, dt, 1, &changed, err);
}

/* ---- writes ------------------------------------------------------------------- */

static int write_put(struct store_txn *w, int t, const char *id,
                     const struct store_value *values, int update, struct strata_error *err)
{
	int rc = store_txn_check(w, 1, t, err);
	if (rc)
		return rc;
	struct doctype *dt = w->env->types[t];
	size_t idlen;
	if ((rc = check_id(w->env, id, &idlen, err)) != 0 ||
	    (rc = check_values(dt, values, err)) != 0)
		return rc;
	uint32_t lid = 0, next = 0;
	int fresh = 0;
	char nkey[STORE_MAX_NAME + 8];
	MDB_val nk = {0, nkey}, v;
	rc = find_lid(w, dt, id, idlen, &lid, err);
	if (rc == MDB_NOTFOUND) {
		if (update)
			return base_err(err, STRATA_NOT_FOUND, "no document '%s' to update", id);
		fresh = 1;
		nk.mv_size = (size_t)snprintf(nkey, sizeof nkey, "n/%s", dt->name);
		if ((rc = mdb_get(w->txn, w->env->meta, &nk, &v)) != 0)
			return store_mdb_err(err, rc, "reading the next local id");
		if (v.mv_size != 4)
			return base_err(err, STRATA_CORRUPT, "document type '%s': bad local id counter",
			                dt->name);
		memcpy(&lid, v.mv_data, 4);
		if (lid == UINT32_MAX)
			return base_err(err, STRATA_LIMIT, "document type '%s': local ids are used up",
			                dt->name);
		next = lid + 1;
		BASE_DEBUG_ASSERT(lid_unused(w, dt, lid));
	} else if (rc) {
		return rc;
	} else {
		BASE_DEBUG_ASSERT(record_is(w, dt, lid, id, idlen));
	}
	size_t n;
	MDB_val old = {0, NULL};
	if (!fresh) {
		MDB_val k = {sizeof lid, &lid};
		if ((rc = mdb_get(w->txn, dt->docs, &k, &old)) != 0)
			return rc == MDB_NOTFOUND
			               ? base_err(err, STRATA_CORRUPT,
			                          "document '%s' has an id entry but no record", id)
			               : store_mdb_err(err, rc, "reading a document");
	}
	if (update)
		rc = build_update(w, dt, lid, &old, values, &n, err);
	else
		rc = build_put(w, dt, id, idlen, values, &n, err);
	if (rc)
		return rc;
	unsigned char only[STORE_MAX_FIELDS];
	if (update) {
		memset(only, 0, (size_t)dt->nstored);
		for (int sf = 0; sf < dt->nstored; sf++)
			only[sf] = given(dt, values, sf) != NULL;
	}
	/* The dictionary keys of the values the write replaces. */
	if ((rc = store_dict_before(w, dt, lid, fresh, update ? only : NULL, err)) != 0)
		return rc;

	/* Writes from here on: a failure fails the transaction.  The text
	 * index first, while old is still valid. */
	store_attr_reset(w);
	const char *what = "writing a document";
	MDB_val rec = {n, w->buf};
	if ((rc = text_update(w, dt, lid, fresh ? NULL : &old, &rec, update ? only : NULL,
	                      err)) != 0) {
		w->failed = 1;
		return rc;
	}
	if (fresh) {
		MDB_val k = {idlen, (void *)id}, lv = {sizeof lid, &lid}, nv = {sizeof next, &next};
		if ((rc = mdb_put(w->txn, dt->ids, &k, &lv, 0)) != 0 ||
		    (rc = mdb_put(w->txn, w->env->meta, &nk, &nv, 0)) != 0)
			return store_txn_fail(w, rc, what, err);
	}
	MDB_val k = {sizeof lid, &lid}, rv = {n, w->buf};
	if ((rc = mdb_put(w->txn, dt->docs, &k, &rv, 0)) != 0)
		return store_txn_fail(w, rc, what, err);
	for (int sf = 0; sf < dt->nstored; sf++) {
		const struct sfield *f = &dt->stored[sf];
		if (!f->column)
			continue;
		const struct store_value *val = given(dt, values, sf);
		uint8_t tmp[8];
		if (val)
			rc = store_col_write(w, dt, sf, lid, column_cell(f, val, tmp), err);
		else if (!update && !fresh)
			rc = store_col_write(w, dt, sf, lid, NULL, err);
		if (rc) {
			w->failed = 1;
			return rc;
		}
	}
	if ((rc = store_hnsw_sync_doc(w, dt, lid, update ? only : NULL, err)) != 0 ||
	    (rc = store_dict_after(w, dt, lid, 0, update ? only : NULL, err)) != 0) {
		w->failed = 1;
		return rc;
	}
	BASE_DEBUG_ASSERT(!w->failed);
	return 0;
}

int store_put(struct store_txn *w, int doctype, const char *docid,
              const struct store_value *values, struct strata_error *err)
{
	return write_put(w, doctype, docid, values, 0, err);
}

int store_update(struct store_txn *w, int doctype, const char *docid,
                 const struct store_value *values, struct strata_error *err)
{
	return write_put(w, doctype, docid, values, 1, err);
}

int store_remove(struct store_txn *w, int doctype, const char *docid, struct strata_error *err)
{
	int rc = store_txn_check(w, 1, doctype, err);
	if (rc)
		return rc;
	struct doctype *dt = w->env->types[doctype];
	size_t idlen;
	uint32_t lid;
	if ((rc = check_id(w->env, docid, &idlen, err)) != 0)
		return rc;
	rc = find_lid(w, dt, docid, idlen, &lid, err);
	if (rc == MDB_NOTFOUND)
		return base_err(err, STRATA_NOT_FOUND, "no document '%s' to remove", docid);
	if (rc)
		return rc;
	BASE_DEBUG_ASSERT(record_is(w, dt, lid, docid, idlen));
	if ((rc = store_dict_before(w, dt, lid, 0, NULL, err)) != 0)
		return rc;
	store_attr_reset(w);
	MDB_val k = {idlen, (void *)docid}, lk = {sizeof lid, &lid}, old;
	rc = mdb_get(w->txn, dt->docs, &lk, &old);
	if (rc && rc != MDB_NOTFOUND)
		return store_txn_fail(w, rc, "removing a document", err);
	if (!rc && (rc = text_update(w, dt, lid, &old, NULL, NULL, err)) != 0) {
		w->failed = 1;
		return rc;
	}
	if ((rc = mdb_del(w->txn, dt->ids, &k, NULL)) != 0)
		return store_txn_fail(w, rc, "removing a document", err);
	rc = mdb_del(w->txn, dt->docs, &lk, NULL);
	if (rc && rc != MDB_NOTFOUND)
		return store_txn_fail(w, rc, "removing a document", err);
	for (int sf = 0; sf < dt->nstored; sf++) {
		if (!dt->stored[sf].column)
			continue;
		if ((rc = store_col_write(w, dt, sf, lid, NULL, err)) != 0) {
			w->failed = 1;
			return rc;
		}
	}
	if ((rc = store_hnsw_sync_doc(w, dt, lid, NULL, err)) != 0 ||
	    (rc = store_dict_after(w, dt, lid, 1, NULL, err)) != 0) {
		w->failed = 1;
		return rc;
	}
	return 0;
}

/* ---- reads -------------------------------------------------------------------- */

int store_lookup(struct store_txn *txn, int doctype, const char *docid, uint32_t *lid,
                 struct strata_error *err)
{
	int rc = store_txn_check(txn, 0, doctype, err);
	size_t len;
	if (rc || (rc = check_id(txn->env, docid, &len, err)) != 0)
		return rc;
	rc = find_lid(txn, txn->env->types[doctype], docid, len, lid, err);
	if (rc == MDB_NOTFOUND)
		return base_err(err, STRATA_NOT_FOUND, "no document '%s'", docid);
	return rc;
}

/* Open txn's cursor on the documents of doctype, once. */
static int doc_cursor(struct store_txn *txn, int doctype)
{
	MDB_cursor **c = &txn->cursors[doctype];
	if (*c)
		return 0;
	int rc = mdb_cursor_open(txn->txn, txn->env->types[doctype]->docs, c);
	if (rc) {
		*c = NULL;
		return store_mdb_err(NULL, rc, "");
	}
	txn->cursor_ok[doctype] = 0;
	return 0;
}

int store_next(struct store_txn *txn, int doctype, uint32_t *lid)
{
	int rc = store_txn_check(txn, 0, doctype, NULL);
	if (rc)
		return rc;
	MDB_cursor **c = &txn->cursors[doctype];
	if ((rc = doc_cursor(txn, doctype)) != 0)
		return rc;
	uint32_t want = *lid;
	MDB_val k = {sizeof want, &want}, v;
	/* Scans ask for the id after the last one found: step instead of
	 * searching.  Not in write txns, whose writes may move the cursor. */
	if (!txn->write && txn->cursor_ok[doctype] && want == txn->cursor_lid[doctype] + 1 &&
	    want != 0)
		rc = mdb_cursor_get(*c, &k, &v, MDB_NEXT);
	else
		rc = mdb_cursor_get(*c, &k, &v, MDB_SET_RANGE);
	if (rc == MDB_NOTFOUND) {
		txn->cursor_ok[doctype] = 0;
		return STRATA_NOT_FOUND;
	}
	if (rc) {
		txn->cursor_ok[doctype] = 0;
		return store_mdb_err(NULL, rc, "");
	}
	if (k.mv_size != 4) {
		txn->cursor_ok[doctype] = 0;
		return STRATA_CORRUPT;
	}
	memcpy(lid, k.mv_data, 4);
	txn->cursor_lid[doctype] = *lid;
	txn->cursor_ok[doctype] = 1;
	return 0;
}

int store_dense(struct store_txn *txn, int doctype, uint32_t *n)
{
	*n = 0;
	uint64_t count = store_count(txn, doctype);
	if (!count)
		return store_txn_check(txn, 0, doctype, NULL) == 0;
	/* count distinct ids, the highest count - 1: they are 0 .. count - 1 */
	uint32_t last;
	MDB_val k, v;
	if (doc_cursor(txn, doctype) != 0 ||
	    mdb_cursor_get(txn->cursors[doctype], &k, &v, MDB_LAST) != 0 || k.mv_size != 4) {
		txn->cursor_ok[doctype] = 0;
		return 0;
	}
	memcpy(&last, k.mv_data, 4);
	txn->cursor_lid[doctype] = last;
	txn->cursor_ok[doctype] = 1;
	if ((uint64_t)last + 1 != count)
		return 0;
	*n = (uint32_t)count;
	return 1;
}

uint64_t store_count(struct store_txn *txn, int doctype)
{
	if (store_txn_check(txn, 0, doctype, NULL))
		return 0;
	MDB_stat st;
	if (mdb_stat(txn->txn, txn->env->types[doctype]->docs, &st) != 0)
		return 0;
	return st.ms_entries;
}

const char *store_docid(struct store_txn *txn, int doctype, uint32_t lid)
{
	if (store_txn_check(txn, 0, doctype, NULL))
		return NULL;
	struct doctype *dt = txn->env->types[doctype];
	MDB_val k = {sizeof lid, &lid}, v;
	if (mdb_get(txn->txn, dt->docs, &k, &v) != 0)
		return NULL;
	const char *id;
	size_t len;
	struct rec_iter it;
	return rec_open(dt, lid, &v, &id, &len, &it, NULL) ? NULL : id;
}

/* lid's record, opened: 0, MDB_NOTFOUND (no such document; err
 * untouched), or an error. */
static int rec_load(struct store_txn *txn, const struct doctype *dt, uint32_t lid,
                    struct rec_iter *it, struct strata_error *err)
{
	MDB_val k = {sizeof lid, &lid}, v;
	int rc = mdb_get(txn->txn, dt->docs, &k, &v);
	if (rc)
		return rc == MDB_NOTFOUND ? rc : store_mdb_err(err, rc, "reading a document");
	const char *id;
	size_t idlen;
	return rec_open(dt, lid, &v, &id, &idlen, it, err);
}

int store_doc_bytes(struct store_txn *txn, const struct doctype *dt, uint32_t lid, int sf,
                    const char **s, size_t *n, struct strata_error *err)
{
	*s = NULL;
	*n = 0;
	struct rec_iter it;
	struct rec_entry e;
	int rc = rec_load(txn, dt, lid, &it, err);
	if (rc)
		return rc == MDB_NOTFOUND ? 0 : rc;
	while ((rc = rec_next(dt, lid, &it, &e, err)) == 1) {
		if (e.field != sf)
			continue;
		*s = (const char *)e.payload;
		*n = e.len;
		return 0;
	}
	return rc;
}

/* Tensor payloads keep their record alignment; when LMDB handed the record
 * out at an address that breaks the cell alignment, copy it to the txn's
 * arena so the view can be read as cells. */
static const void *aligned_cells(struct store_txn *txn, const struct sfield *f, const uint8_t *p)
{
	size_t a = base_dtype_size(f->cell);
	if (((uintptr_t)p & (a - 1)) == 0)
		return p;
	if (!txn->arena_used) {
		base_arena_init(&txn->arena, 1 << 16);
		txn->arena_used = 1;
	}
	void *q = base_arena_alloc(&txn->arena, f->cell_bytes, 64);
	if (q)
		memcpy(q, p, f->cell_bytes);
	return q;
}

int store_get(struct store_txn *txn, int doctype, uint32_t lid, struct store_value *values,
              struct strata_error *err)
{
	int rc = store_txn_check(txn, 0, doctype, err);
	if (rc)
		return rc;
	struct doctype *dt = txn->env->types[doctype];
	if (dt->nuser && !values)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no values array given");
	memset(values, 0, (size_t)dt->nuser * sizeof *values);
	struct rec_iter it;
	struct rec_entry e;
	if ((rc = rec_load(txn, dt, lid, &it, err)) != 0)
		return rc == MDB_NOTFOUND
		               ? base_err(err, STRATA_NOT_FOUND, "no document with local id %u", lid)
		               : rc;
	while ((rc = rec_next(dt, lid, &it, &e, err)) == 1) {
		const struct sfield *f = &dt->stored[e.field];
		if (f->user < 0)
			continue;
		struct store_value *out = &values[f->user];
		out->set = 1;
		switch (f->type) {
		case STORE_T_STRING:
		case STORE_T_JSON:
			out->s = (const char *)e.payload;
			out->n = e.len;
			break;
		case STORE_T_FLOAT:
		case STORE_T_DOUBLE:
			memcpy(&out->d, e.payload, 8);
			break;
		case STORE_T_TENSOR:
			out->n = f->ncells;
			out->cells = aligned_cells(txn, f, e.payload);
			if (!out->cells) {
				memset(values, 0, (size_t)dt->nuser * sizeof *values);
				return base_nomem(err, "field '%s'", f->name);
			}
			break;
		default:
			memcpy(&out->i, e.payload, 8);
			break;
		}
	}
	if (rc < 0) {
		memset(values, 0, (size_t)dt->nuser * sizeof *values);
		return rc;
	}
	for (int sf = 0; sf < dt->nstored; sf++) {
		const struct sfield *f = &dt->stored[sf];
		if (!f->column || f->user < 0)
			continue;
		const void *c = store_col_get(txn, dt, sf, lid);
		if (!c)
			continue;
		struct store_value *out = &values[f->user];
		out->set = 1;
		switch (f->type) {
		case STORE_T_INT: out->i = *(const int32_t *)c; break;
		case STORE_T_LONG: out->i = *(const int64_t *)c; break;
		case STORE_T_FLOAT: out->d = *(const float *)c; break;
		case STORE_T_DOUBLE: out->d = *(const double *)c; break;
		case STORE_T_BOOL: out->i = *(const uint8_t *)c; break;
		default:
			out->n = f->ncells;
			out->cells = c;
			break;
		}
	}
	return 0;
}

