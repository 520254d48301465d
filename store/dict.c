/*
 * dict.c: the value dictionaries of fast-search fields.  A dictionary maps
 * a field's value to the documents that hold it, as one key per document
 * with a value, (field, value, lid), in the doctype's "dict" DB (the byte
 * layout is in store_int.h).  Keys sort by value and then by lid, so the
 * documents holding one value are one key range in lid order, and those
 * with a number in a range are one key range too, sorted by value: a range
 * query collects its lids and sorts them once.  Nothing is kept beside the
 * entries (no counts), so a write changes at most two keys per field.
 *
 * doc.c calls store_dict_before and store_dict_after around every put,
 * update and remove, inside the write transaction: a crash loses or keeps
 * a document and its entries together.  store_dict_sync, at
 * store_doctype_add, builds the dictionary of a field that gained the flag
 * from the documents, drops the entries of one that lost it, and records
 * which fields have one, so an open builds nothing that is already there.
 *
 * Invariants: for every live document and field with a dictionary there is
 * exactly one entry, under the key of the value its column (a number) or
 * its record (a string) holds; the field has no other entry; a field
 * without a dictionary has no entry at all.  store_dict_check verifies the
 * first two for a field.
 *
 * One value's documents are also read through a cursor
 * (store_dict_value_open), which seeks to a lid inside the value's key
 * range: an AND that another operand drives reads only the entries it
 * lands on, not the whole value.
 */
#include <stdio.h>
#include <string.h>

#include "store_int.h"

#define DICT_FORMAT 0x31544344u /* "DCT1": recorded after the fields that have a dictionary */
#define FIELD_BYTES 2
#define LID_BYTES 4
#define NUM_BYTES 8
#define NUM_KEY (FIELD_BYTES + NUM_BYTES + LID_BYTES)
/* A string's escapes and terminators: 0x00 0x01 is a NUL byte of the value,
 * 0x00 0x00 ends a whole value, 0x00 0x02 one cut short. */
#define STR_ESC 0x00
#define STR_NUL 0x01
#define STR_WHOLE 0x00
#define STR_CUT 0x02
/* The longest key: field, escaped string, terminator, lid. */
#define KEY_MAX (FIELD_BYTES + STORE_DICT_STRING_MAX + 2 + LID_BYTES)
#define MAX_LIDS ((size_t)1 << 32)
#define EST_WALK 256 /* entries a value's cursor counts for its estimate */

/* ---- keys ---------------------------------------------------------------------- */

static size_t put_field(uint8_t *k, int sf)
{
	k[0] = (uint8_t)(sf >> 8);
	k[1] = (uint8_t)sf;
	return FIELD_BYTES;
}

/* The 8 bytes at p that sort as d does among doubles: the bits, all flipped
 * for a negative number, the sign bit set for a positive one.  -0.0 is
 * written as 0.0 and every NaN as one quiet NaN, which sorts above
 * infinity (where no range reaches). */
static void num_bytes(uint8_t *p, double d)
{
	uint64_t b;
	if (d != d) {
		b = 0x7ff8000000000000ull;
	} else {
		if (d == 0)
			d = 0.0;
		memcpy(&b, &d, sizeof b);
	}
	b = (b >> 63) ? ~b : b | (1ull << 63);
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(b >> (56 - 8 * i));
}

/* The escaped bytes of s[0..n) and a terminator at p (at most
 * STORE_DICT_STRING_MAX + 2 bytes); returns their count.  A value whose
 * escaped bytes do not fit is cut after the last byte that does, and ends
 * with the terminator that says so. */
static size_t str_bytes(uint8_t *p, const char *s, size_t n)
{
	size_t o = 0;
	int cut = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = (uint8_t)s[i];
		if (o + (c ? 1 : 2) > STORE_DICT_STRING_MAX) {
			cut = 1;
			break;
		}
		p[o++] = c;
		if (c == STR_ESC)
			p[o++] = STR_NUL;
	}
	p[o++] = STR_ESC;
	p[o++] = cut ? STR_CUT : STR_WHOLE;
	return o;
}

/* A number or bool column cell as the double the dictionary keeps. */
static double cell_double(const struct sfield *f, const void *c)
{
	switch (f->type) {
	case STORE_T_INT: {
		int32_t v;
		memcpy(&v, c, sizeof v);
		return v;
	}
	case STORE_T_LONG: {
		int64_t v;
		memcpy(&v, c, sizeof v);
		return (double)v;
	}
	case STORE_T_FLOAT: {
		float v;
		memcpy(&v, c, sizeof v);
		return v;
	}
	case STORE_T_DOUBLE: {
		double v;
		memcpy(&v, c, sizeof v);
		return v;
	}
	}
	return *(const uint8_t *)c != 0; /* BOOL */
}

/* The entry key of lid's value of field sf (at most KEY_MAX bytes) at k, *n
 * its bytes, 0 when the document has no value.  Reads the column or the
 * record as txn sees them now.  Returns 0, STRATA_CORRUPT or STRATA_STORE. */
static int doc_key(struct store_txn *txn, struct doctype *dt, int sf, uint32_t lid, uint8_t *k,
                   size_t *n, struct strata_error *err)
{
	const struct sfield *f = &dt->stored[sf];
	size_t o = put_field(k, sf);
	*n = 0;
	if (f->type == STORE_T_STRING) {
		const char *s;
		size_t len;
		int rc = dt->doc_bytes(txn, dt, lid, sf, &s, &len, err); /* doc.c's, which calls us */
		if (rc || !s)
			return rc;
		o += str_bytes(k + o, s, len);
	} else {
		const void *c = store_col_get(txn, dt, sf, lid);
		if (!c)
			return 0;
		num_bytes(k + o, cell_double(f, c));
		o += NUM_BYTES;
	}
	store_be32_put(k + o, lid);
	*n = o + LID_BYTES;
	return 0;
}

/* ---- keeping them with the documents --------------------------------------------- */

static int watched(const struct sfield *f, int sf, const unsigned char *only)
{
	return f->dict && (!only || only[sf]);
}

int store_dict_before(struct store_txn *w, struct doctype *dt, uint32_t lid, int none,
                      const unsigned char *only, struct strata_error *err)
{
	w->dkeys_used = 0;
	if (!dt->ndict)
		return 0;
	for (int sf = 0; sf < dt->nstored; sf++) {
		if (!watched(&dt->stored[sf], sf, only))
			continue;
		size_t need = w->dkeys_used + 2 + KEY_MAX;
		if (base_grow((void **)&w->dkeys, &w->dkeys_cap, need, 1,
		              (size_t)STORE_MAX_FIELDS * (2 + KEY_MAX)) != 0)
			return base_nomem(err, "the dictionary keys of a document");
		uint8_t *p = w->dkeys + w->dkeys_used;
		size_t n = 0;
		int rc = none ? 0 : doc_key(w, dt, sf, lid, p + 2, &n, err);
		if (rc)
			return rc;
		p[0] = (uint8_t)(n >> 8);
		p[1] = (uint8_t)n;
		w->dkeys_used += 2 + n;
	}
	return 0;
}

int store_dict_after(struct store_txn *w, struct doctype *dt, uint32_t lid, int removed,
                     const unsigned char *only, struct strata_error *err)
{
	if (!dt->ndict)
		return 0;
	size_t at = 0;
	uint8_t nk[KEY_MAX];
	for (int sf = 0; sf < dt->nstored; sf++) {
		if (!watched(&dt->stored[sf], sf, only))
			continue;
		BASE_ASSERT(at + 2 <= w->dkeys_used); /* store_dict_before saw the same fields */
		size_t on = (size_t)w->dkeys[at] << 8 | w->dkeys[at + 1];
		uint8_t *old = w->dkeys + at + 2;
		at += 2 + on;
		size_t nn = 0;
		int rc = removed ? 0 : doc_key(w, dt, sf, lid, nk, &nn, err);
		if (rc)
			return rc;
		if (on == nn && memcmp(old, nk, on) == 0)
			continue;
		if (on) {
			MDB_val k = {on, old};
			/* (missing, the dictionary disagreed already: it is gone all the same) */
			rc = mdb_del(w->txn, dt->dict, &k, NULL);
			if (rc && rc != MDB_NOTFOUND)
				return store_mdb_err(err, rc, "updating a dictionary");
		}
		if (nn) {
			MDB_val k = {nn, nk}, v = {0, NULL};
			if ((rc = mdb_put(w->txn, dt->dict, &k, &v, 0)) != 0)
				return store_mdb_err(err, rc, "updating a dictionary");
		}
	}
	BASE_ASSERT(at == w->dkeys_used);
	return 0;
}

/* ---- building and dropping, at store_doctype_add ------------------------------------- */

/* Delete every entry of stored field sf. */
static int drop_field(MDB_txn *t, struct doctype *dt, int sf, struct strata_error *err)
{
	MDB_cursor *c;
	int rc = mdb_cursor_open(t, dt->dict, &c);
	if (rc)
		return store_mdb_err(err, rc, "dropping a dictionary");
	uint8_t key[FIELD_BYTES];
	put_field(key, sf);
	MDB_val k = {sizeof key, key}, v;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (k.mv_size < FIELD_BYTES || memcmp(k.mv_data, key, FIELD_BYTES) != 0)
			break;
		if ((rc = mdb_cursor_del(c, 0)) != 0)
			break;
	}
	mdb_cursor_close(c);
	return rc == 0 || rc == MDB_NOTFOUND ? 0 : store_mdb_err(err, rc, "dropping a dictionary");
}

/* An entry for every document with a value in field sf.  The cursor on the
 * documents is not disturbed by the puts, which go to another DB. */
static int build_field(struct store_env *env, MDB_txn *t, struct doctype *dt, int sf,
                       struct strata_error *err)
{
	struct store_txn w = {.env = env, .txn = t, .write = 1};
	MDB_cursor *c;
	int rc = mdb_cursor_open(t, dt->docs, &c);
	if (rc)
		return store_mdb_err(err, rc, "building a dictionary");
	MDB_val dk, dv;
	int mrc;
	for (mrc = mdb_cursor_get(c, &dk, &dv, MDB_FIRST); mrc == 0 && rc == 0;
	     mrc = mdb_cursor_get(c, &dk, &dv, MDB_NEXT)) {
		uint32_t lid;
		if (dk.mv_size != sizeof lid) {
			rc = base_err(err, STRATA_CORRUPT, "document type '%s': a bad local id key",
			              dt->name);
			break;
		}
		memcpy(&lid, dk.mv_data, sizeof lid);
		uint8_t key[KEY_MAX];
		size_t n;
		if ((rc = doc_key(&w, dt, sf, lid, key, &n, err)) != 0)
			break;
		if (!n)
			continue; /* no value */
		MDB_val k = {n, key}, v = {0, NULL};
		if ((rc = mdb_put(t, dt->dict, &k, &v, 0)) != 0)
			rc = store_mdb_err(err, rc, "building a dictionary");
	}
	mdb_cursor_close(c);
	if (!rc && mrc != MDB_NOTFOUND)
		rc = store_mdb_err(err, mrc, "building a dictionary");
	if (rc)
		base_err_prefix(err, rc, "document type '%s', field '%s'", dt->name,
		                dt->stored[sf].name);
	return rc;
}

int store_dict_sync(struct store_env *env, MDB_txn *t, struct doctype *dt,
                    struct strata_error *err)
{
	uint32_t want[STORE_MAX_FIELDS + 1];
	size_t nwant = 0;
	for (int sf = 0; sf < dt->nstored; sf++)
		if (dt->stored[sf].dict)
			want[nwant++] = (uint32_t)sf;
	dt->ndict = (int)nwant;
	if (nwant && env->maxkey < KEY_MAX)
		return base_err(err, STRATA_LIMIT,
		                "document type '%s': LMDB keys of %u bytes are too short for a "
		                "dictionary (%d needed)", dt->name, env->maxkey, KEY_MAX);
	if (nwant)
		want[nwant++] = DICT_FORMAT;
	char key[STORE_MAX_NAME + 8];
	MDB_val k = {(size_t)snprintf(key, sizeof key, "d/%s", dt->name), key}, v;
	int rc = mdb_get(t, env->meta, &k, &v);
	if (rc && rc != MDB_NOTFOUND)
		return store_mdb_err(err, rc, "reading the dictionary settings");
	unsigned char had[STORE_MAX_FIELDS] = {0};
	int changed = 0;
	if (rc == 0) {
		size_t nv = v.mv_size / 4;
		const uint8_t *p = v.mv_data;
		uint32_t format = 0;
		if (nv)
			memcpy(&format, p + 4 * (nv - 1), 4);
		if (v.mv_size % 4 || nv < 2 || format != DICT_FORMAT) {
			/* another format (or none we know): every entry goes */
			if ((rc = mdb_drop(t, dt->dict, 0)) != 0)
				return store_mdb_err(err, rc, "dropping the dictionaries");
			changed = 1;
		} else {
			for (size_t i = 0; i + 1 < nv; i++) {
				uint32_t sf;
				memcpy(&sf, p + 4 * i, 4);
				if (sf >= (uint32_t)dt->nstored)
					return base_err(err, STRATA_CORRUPT,
					                "document type '%s': a bad dictionary record", dt->name);
				had[sf] = 1;
			}
		}
	}
	for (int sf = 0; sf < dt->nstored; sf++) {
		if (had[sf] == dt->stored[sf].dict)
			continue;
		changed = 1;
		/* a new one starts from nothing, whatever an older writer left */
		if ((rc = drop_field(t, dt, sf, err)) != 0 ||
		    (dt->stored[sf].dict && (rc = build_field(env, t, dt, sf, err)) != 0))
			return rc;
	}
	if (!changed)
		return 0;
	MDB_val nv = {nwant * sizeof *want, want};
	rc = nwant ? mdb_put(t, env->meta, &k, &nv, 0) : mdb_del(t, env->meta, &k, NULL);
	return rc && rc != MDB_NOTFOUND ? store_mdb_err(err, rc, "recording the dictionary settings")
	                                : 0;
}

/* ---- reading ------------------------------------------------------------------------ */

enum { ANY, NUMBER, STRING };

/* The stored field of caller field with a dictionary of the kind asked. */
static int dict_field(struct store_txn *txn, int doctype, int field, int kind,
                      struct doctype **dtp, int *sfp, struct strata_error *err)
{
	int rc = store_txn_check(txn, 0, doctype, err);
	if (rc)
		return rc;
	struct doctype *dt = txn->env->types[doctype];
	if (field < 0 || field >= dt->nuser)
		return base_err(err, STRATA_INVALID_ARGUMENT, "document type '%s': no field %d",
		                dt->name, field);
	int sf = dt->ufield[field];
	const struct sfield *f = &dt->stored[sf];
	if (!f->dict)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "document type '%s': field '%s' has no dictionary (attribute: "
		                "fast-search)", dt->name, f->name);
	int is_string = f->type == STORE_T_STRING;
	if ((kind == NUMBER && is_string) || (kind == STRING && !is_string))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "document type '%s': field '%s' holds %s, not %s", dt->name, f->name,
		                is_string ? "strings" : "numbers", is_string ? "numbers" : "strings");
	*dtp = dt;
	*sfp = sf;
	return 0;
}

/* Local ids found, growing; sorted says whether they came in order. */
struct lidvec {
	uint32_t *v;
	size_t n, cap;
	int sorted;
};

/* Visit the entries from start[0..nstart) on whose first nend bytes are at
 * most end[0..nend): into out, or only counted into *count when out is
 * NULL.  Every such entry is nend bytes and a lid. */
static int walk(struct store_txn *txn, struct doctype *dt, const uint8_t *start, size_t nstart,
                const uint8_t *end, size_t nend, struct lidvec *out, uint64_t *count,
                struct strata_error *err)
{
	MDB_cursor *c;
	int rc = mdb_cursor_open(txn->txn, dt->dict, &c);
	if (rc)
		return store_mdb_err(err, rc, "reading a dictionary");
	MDB_val k = {nstart, (void *)start}, v;
	uint64_t seen = 0;
	int mrc;
	for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); mrc == 0 && !rc;
	     mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		const uint8_t *kb = k.mv_data;
		size_t m = k.mv_size < nend ? k.mv_size : nend;
		if (memcmp(kb, end, m) > 0)
			break;
		if (k.mv_size != nend + LID_BYTES) {
			rc = base_err(err, STRATA_CORRUPT, "document type '%s': a dictionary entry "
			              "of %zu bytes, expected %zu", dt->name, k.mv_size, nend + LID_BYTES);
			break;
		}
		seen++;
		if (!out)
			continue;
		uint32_t lid = store_be32_get(kb + nend);
		if (out->n == out->cap &&
		    base_grow((void **)&out->v, &out->cap, out->n + 1, sizeof *out->v, MAX_LIDS) != 0) {
			rc = base_nomem(err, "%zu local ids", out->n + 1);
			break;
		}
		if (out->n && lid <= out->v[out->n - 1])
			out->sorted = 0;
		out->v[out->n++] = lid;
	}
	mdb_cursor_close(c);
	if (!rc && mrc && mrc != MDB_NOTFOUND)
		rc = store_mdb_err(err, mrc, "reading a dictionary");
	*count = seen;
	return rc;
}

/* Sort a[0..n) into b by 11 bits at a time (a is scratch). */
static void radix_sort(uint32_t *a, uint32_t *b, size_t n)
{
	size_t cnt[2048];
	uint32_t *src = a, *dst = b;
	for (int pass = 0; pass < 3; pass++) {
		int shift = 11 * pass;
		memset(cnt, 0, sizeof cnt);
		for (size_t i = 0; i < n; i++)
			cnt[(src[i] >> shift) & 2047]++;
		size_t sum = 0;
		for (int j = 0; j < 2048; j++) {
			size_t c = cnt[j];
			cnt[j] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[cnt[(src[i] >> shift) & 2047]++] = src[i];
		uint32_t *t = src;
		src = dst;
		dst = t;
	}
	/* three passes: a -> b -> a -> b */
}

static int increasing(const uint32_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (v[i] <= v[i - 1])
			return 0;
	return 1;
}

/* Hand lv over as an array of exactly n ids, sorted.  A document is in one
 * entry of a field, so an id found twice is a damaged dictionary. */
static int finish(struct doctype *dt, struct lidvec *lv, uint32_t **lids, size_t *n,
                  struct strata_error *err)
{
	if (!lv->n) {
		base_free(lv->v, lv->cap * sizeof *lv->v);
		return 0;
	}
	uint32_t *out = lv->v;
	if (!lv->sorted || lv->cap != lv->n) {
		if (!(out = base_alloc(lv->n * sizeof *out))) {
			base_free(lv->v, lv->cap * sizeof *lv->v);
			return base_nomem(err, "%zu local ids", lv->n);
		}
		if (lv->sorted)
			memcpy(out, lv->v, lv->n * sizeof *out);
		else
			radix_sort(lv->v, out, lv->n);
		base_free(lv->v, lv->cap * sizeof *lv->v);
	}
	if (!lv->sorted && !increasing(out, lv->n)) {
		base_free(out, lv->n * sizeof *out);
		return base_err(err, STRATA_CORRUPT,
		                "document type '%s': a document under two values of a dictionary",
		                dt->name);
	}
	*lids = out;
	*n = lv->n;
	return 0;
}

/* The first and last key prefixes of [lo, hi] in field sf: 0 when the
 * range is empty. */
static int range_keys(int sf, double lo, double hi, uint8_t *start, uint8_t *end)
{
	if (lo != lo || hi != hi || lo > hi)
		return 0;
	num_bytes(start + put_field(start, sf), lo);
	num_bytes(end + put_field(end, sf), hi);
	return 1;
}

int store_dict_range(struct store_txn *txn, int doctype, int field, double lo, double hi,
                     uint32_t **lids, size_t *n, struct strata_error *err)
{
	*lids = NULL;
	*n = 0;
	struct doctype *dt;
	int sf, rc = dict_field(txn, doctype, field, NUMBER, &dt, &sf, err);
	uint8_t start[FIELD_BYTES + NUM_BYTES], end[FIELD_BYTES + NUM_BYTES];
	if (rc || !range_keys(sf, lo, hi, start, end))
		return rc;
	struct lidvec lv = {.sorted = 1};
	uint64_t count;
	if ((rc = walk(txn, dt, start, sizeof start, end, sizeof end, &lv, &count, err)) != 0) {
		base_free(lv.v, lv.cap * sizeof *lv.v);
		return rc;
	}
	return finish(dt, &lv, lids, n, err);
}

int store_dict_count(struct store_txn *txn, int doctype, int field, double lo, double hi,
                     uint64_t *n, struct strata_error *err)
{
	*n = 0;
	struct doctype *dt;
	int sf, rc = dict_field(txn, doctype, field, NUMBER, &dt, &sf, err);
	uint8_t start[FIELD_BYTES + NUM_BYTES], end[FIELD_BYTES + NUM_BYTES];
	if (rc || !range_keys(sf, lo, hi, start, end))
		return rc;
	return walk(txn, dt, start, sizeof start, end, sizeof end, NULL, n, err);
}

/* The key prefix of value s[0..len) in field sf at k; returns its bytes. */
static size_t string_prefix(int sf, const char *s, size_t len, uint8_t *k)
{
	size_t o = put_field(k, sf);
	return o + str_bytes(k + o, s, len);
}

int store_dict_string(struct store_txn *txn, int doctype, int field, const char *s, size_t len,
                      uint32_t **lids, size_t *n, struct strata_error *err)
{
	*lids = NULL;
	*n = 0;
	struct doctype *dt;
	int sf, rc = dict_field(txn, doctype, field, STRING, &dt, &sf, err);
	if (rc)
		return rc;
	if (len && !s)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no string bytes");
	uint8_t key[KEY_MAX];
	size_t kn = string_prefix(sf, s, len, key);
	struct lidvec lv = {.sorted = 1};
	uint64_t count;
	if ((rc = walk(txn, dt, key, kn, key, kn, &lv, &count, err)) != 0) {
		base_free(lv.v, lv.cap * sizeof *lv.v);
		return rc;
	}
	return finish(dt, &lv, lids, n, err);
}

int store_dict_string_count(struct store_txn *txn, int doctype, int field, const char *s,
                            size_t len, uint64_t *n, struct strata_error *err)
{
	*n = 0;
	struct doctype *dt;
	int sf, rc = dict_field(txn, doctype, field, STRING, &dt, &sf, err);
	if (rc)
		return rc;
	if (len && !s)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no string bytes");
	uint8_t key[KEY_MAX];
	size_t kn = string_prefix(sf, s, len, key);
	return walk(txn, dt, key, kn, key, kn, NULL, n, err);
}

void store_dict_free(uint32_t *lids, size_t n)
{
	base_free(lids, n * sizeof *lids);
}

int store_dict_has(struct store_txn *txn, int doctype, int field)
{
	if (!txn || doctype < 0 || doctype >= txn->env->ntypes)
		return 0;
	const struct doctype *dt = txn->env->types[doctype];
	return field >= 0 && field < dt->nuser && dt->stored[dt->ufield[field]].dict;
}

/* ---- checking --------------------------------------------------------------------- */

int store_dict_check(struct store_txn *txn, int doctype, int field, struct strata_error *err)
{
	struct doctype *dt;
	int sf, rc = dict_field(txn, doctype, field, ANY, &dt, &sf, err);
	if (rc)
		return rc;
	const char *name = dt->stored[sf].name;
	uint8_t key[KEY_MAX];
	size_t n;
	/* Every entry is the key of its document's value. */
	MDB_cursor *c;
	if ((rc = mdb_cursor_open(txn->txn, dt->dict, &c)) != 0)
		return store_mdb_err(err, rc, "checking a dictionary");
	uint8_t prefix[FIELD_BYTES];
	put_field(prefix, sf);
	MDB_val k = {sizeof prefix, prefix}, v;
	uint64_t entries = 0, values = 0;
	int mrc;
	for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); mrc == 0 && !rc;
	     mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		const uint8_t *kb = k.mv_data;
		if (k.mv_size < FIELD_BYTES || memcmp(kb, prefix, FIELD_BYTES) != 0)
			break;
		if (k.mv_size < FIELD_BYTES + LID_BYTES + 2 || k.mv_size > KEY_MAX) {
			rc = base_err(err, STRATA_CORRUPT, "field '%s': a dictionary entry of %zu bytes",
			              name, k.mv_size);
			break;
		}
		uint32_t lid = store_be32_get(kb + k.mv_size - LID_BYTES);
		if ((rc = doc_key(txn, dt, sf, lid, key, &n, err)) != 0)
			break;
		if (n != k.mv_size || memcmp(key, kb, n) != 0)
			rc = base_err(err, STRATA_CORRUPT,
			              "field '%s': the dictionary entry of local id %u is not its value "
			              "(%s)", name, lid, n ? "the value differs" : "no value");
		entries++;
	}
	mdb_cursor_close(c);
	if (!rc && mrc && mrc != MDB_NOTFOUND)
		rc = store_mdb_err(err, mrc, "checking a dictionary");
	if (rc)
		return rc;
	/* ... and there is one for every document with a value. */
	if ((rc = mdb_cursor_open(txn->txn, dt->docs, &c)) != 0)
		return store_mdb_err(err, rc, "checking a dictionary");
	for (mrc = mdb_cursor_get(c, &k, &v, MDB_FIRST); mrc == 0 && !rc;
	     mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		uint32_t lid;
		if (k.mv_size != sizeof lid) {
			rc = base_err(err, STRATA_CORRUPT, "a bad local id key");
			break;
		}
		memcpy(&lid, k.mv_data, sizeof lid);
		if ((rc = doc_key(txn, dt, sf, lid, key, &n, err)) == 0)
			values += n != 0;
	}
	mdb_cursor_close(c);
	if (!rc && mrc != MDB_NOTFOUND)
		rc = store_mdb_err(err, mrc, "checking a dictionary");
	if (!rc && values != entries)
		rc = base_err(err, STRATA_CORRUPT,
		              "field '%s': %llu documents have a value, its dictionary has %llu "
		              "entries", name, (unsigned long long)values,
		              (unsigned long long)entries);
	return rc;
}

/* ---- one value's documents through a cursor ------------------------------------------- */

struct store_dict_cursor {
	MDB_cursor *c;
	uint8_t key[KEY_MAX];
	size_t plen;          /* bytes of field and value; a key is those and a lid */
	uint32_t lid;
	int valid;            /* on an entry of the value */
};

/* Take the entry the cursor landed on (rc from mdb_cursor_get). */
static int cursor_take(struct store_dict_cursor *d, int rc, const MDB_val *k)
{
	d->valid = 0;
	if (rc)
		return rc == MDB_NOTFOUND ? STRATA_NOT_FOUND : STRATA_STORE;
	if (k->mv_size != d->plen + LID_BYTES || memcmp(k->mv_data, d->key, d->plen) != 0)
		return STRATA_NOT_FOUND;
	d->lid = store_be32_get((const uint8_t *)k->mv_data + d->plen);
	d->valid = 1;
	return 0;
}

int store_dict_value_open(struct store_txn *txn, int doctype, int field, double v, const char *s,
                          size_t len, struct store_dict_cursor **out, uint64_t *est,
                          struct strata_error *err)
{
	*out = NULL;
	struct doctype *dt;
	int sf, rc = dict_field(txn, doctype, field, s ? STRING : NUMBER, &dt, &sf, err);
	if (rc)
		return rc;
	struct store_dict_cursor *d = base_calloc(1, sizeof *d);
	if (!d)
		return base_nomem(err, "a dictionary cursor");
	if (s) {
		d->plen = string_prefix(sf, s, len, d->key);
	} else {
		d->plen = put_field(d->key, sf);
		num_bytes(d->key + d->plen, v);
		d->plen += NUM_BYTES;
	}
	if ((rc = mdb_cursor_open(txn->txn, dt->dict, &d->c)) != 0) {
		base_free(d, sizeof *d);
		return store_mdb_err(err, rc, "reading a dictionary");
	}
	/* the estimate: the entries counted up to EST_WALK, else every document */
	memset(d->key + d->plen, 0, LID_BYTES);
	MDB_val k = {d->plen + LID_BYTES, d->key}, val;
	uint64_t n = 0;
	for (rc = mdb_cursor_get(d->c, &k, &val, MDB_SET_RANGE); cursor_take(d, rc, &k) == 0;
	     rc = mdb_cursor_get(d->c, &k, &val, MDB_NEXT))
		if (++n == EST_WALK) { /* the type's documents: the docs DB's entries */
			MDB_stat st;
			n = mdb_stat(txn->txn, dt->docs, &st) == 0 ? st.ms_entries : UINT32_MAX;
			break;
		}
	if (rc && rc != MDB_NOTFOUND) {
		store_dict_value_close(d);
		return store_mdb_err(err, rc, "reading a dictionary");
	}
	d->valid = 0; /* the first seek searches */
	*est = n;
	*out = d;
	return 0;
}

int store_dict_value_seek(struct store_dict_cursor *d, uint32_t *lid)
{
	MDB_val k, v;
	if (d->valid && d->lid >= *lid) {
		*lid = d->lid;
		return 0;
	}
	int rc = 0;
	if (d->valid) { /* the next entry is often the one */
		rc = cursor_take(d, mdb_cursor_get(d->c, &k, &v, MDB_NEXT), &k);
		if (rc || d->lid >= *lid) {
			*lid = d->lid;
			return rc;
		}
	}
	store_be32_put(d->key + d->plen, *lid);
	k = (MDB_val){d->plen + LID_BYTES, d->key};
	rc = cursor_take(d, mdb_cursor_get(d->c, &k, &v, MDB_SET_RANGE), &k);
	*lid = d->lid;
	return rc;
}

void store_dict_value_close(struct store_dict_cursor *d)
{
	if (!d)
		return;
	mdb_cursor_close(d->c);
	base_free(d, sizeof *d);
}
