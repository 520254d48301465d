/*
 * doctype.c: document types.  store_doctype_add() records a type's field
 * layout in the meta DB the first time and checks it against the recorded
 * one afterwards, so data written under one layout is never read under an
 * incompatible one; it opens the type's tables and brings the text index,
 * the graphs and the value dictionaries in line with the fields' settings
 * (doc.c, hnsw_sync.c and dict.c rebuild what changed).
 *
 * Invariants: a doctype's stored field list is append-only across the
 * store's life; the caller's field list and the stored one map to each
 * other (checked in debug builds after each store_doctype_add).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define LAYOUT_MAGIC 0x314c5453u /* "STL1": layout record, version 1 */

/* ---- field layouts -------------------------------------------------------- */

static int cell_allowed(int cell)
{
	return cell == BASE_DT_FLOAT || cell == BASE_DT_DOUBLE || cell == BASE_DT_INT8 ||
	       cell == BASE_DT_BFLOAT16 || cell == BASE_DT_INT32 || cell == BASE_DT_INT64;
}

static uint32_t scalar_bytes(int type)
{
	switch (type) {
	case STORE_T_INT: return 4;
	case STORE_T_LONG: return 8;
	case STORE_T_FLOAT: return 4;
	case STORE_T_DOUBLE: return 8;
	case STORE_T_BOOL: return 1;
	}
	return 0;
}

const char *store_type_desc(const struct sfield *f, char *buf, size_t n)
{
	static const char *names[] = {"?", "string", "int", "long", "float", "double", "bool",
	                              "tensor", "json"};
	const char *attr = f->attribute ? "attribute " : "";
	if (f->type != STORE_T_TENSOR) {
		int t = f->type >= STORE_T_STRING && f->type <= STORE_T_JSON ? f->type : 0;
		snprintf(buf, n, "%s%s", attr, names[t]);
		return buf;
	}
	size_t len = (size_t)snprintf(buf, n, "%stensor<%s>(", attr, base_dtype_name(f->cell));
	for (int i = 0; i < f->rank && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? "," : "",
		                        (long long)f->dims[i]);
	if (len < n)
		snprintf(buf + len, n - len, ")");
	return buf;
}

/* Fill the derived members of f.  A column's block_shift is kept when
 * already set (a recorded field), else chosen (store_col_geometry). */
static void derive(struct sfield *f, unsigned psize, int new_field)
{
	f->ncells = 0;
	f->cell_bytes = 0;
	if (f->type == STORE_T_TENSOR) {
		f->ncells = 1;
		for (int i = 0; i < f->rank; i++)
			f->ncells *= (uint64_t)f->dims[i];
		f->cell_bytes = (uint32_t)(f->ncells * base_dtype_size(f->cell));
	} else {
		f->cell_bytes = scalar_bytes(f->type);
	}
	f->column = f->attribute && !STORE_IS_BYTES(f->type);
	if (f->column)
		store_col_geometry(f, psize, new_field);
}

static int name_ok(const char *s, int doctype)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > STORE_MAX_NAME)
		return 0;
	if (!doctype)
		return 1;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return 0;
	}
	return 1;
}

/* Check a caller's doctype before anything is recorded. */
static int validate_doctype(const struct store_doctype *dt, struct strata_error *err)
{
	if (!dt || !name_ok(dt->name, 1))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "document type name '%s' must be 1-%d letters, digits, '_', '-' or '.'",
		                dt && dt->name ? dt->name : "", STORE_MAX_NAME);
	if (dt->nfields < 0 || dt->nfields > STORE_MAX_FIELDS || (dt->nfields && !dt->fields))
		return base_err(err, STRATA_INVALID_ARGUMENT, "document type '%s': bad field count %d",
		                dt->name, dt->nfields);
	for (int i = 0; i < dt->nfields; i++) {
		const struct store_field *f = &dt->fields[i];
		if (!name_ok(f->name, 0))
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "document type '%s': field %d needs a name of 1-%d bytes",
			                dt->name, i, STORE_MAX_NAME);
		for (int j = 0; j < i; j++)
			if (strcmp(dt->fields[j].name, f->name) == 0)
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "document type '%s': field '%s' is declared twice",
				                dt->name, f->name);
		if (f->type < STORE_T_STRING || f->type > STORE_T_JSON)
			return base_err(err, STRATA_INVALID_ARGUMENT, "field '%s': unknown type %d",
			                f->name, f->type);
		if (f->type != STORE_T_TENSOR)
			continue;
		if (!cell_allowed(f->cell))
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "field '%s': tensor cell type %s is not supported", f->name,
			                base_dtype_name(f->cell));
		if (f->rank < 1 || f->rank > STORE_MAX_RANK)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "field '%s': tensor rank %d is not in 1..%d", f->name, f->rank,
			                STORE_MAX_RANK);
		uint64_t bytes = base_dtype_size(f->cell);
		for (int d = 0; d < f->rank; d++) {
			if (f->dims[d] < 1 || (uint64_t)f->dims[d] > STORE_MAX_CELL_BYTES)
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "field '%s': dimension %d has size %lld", f->name, d,
				                (long long)f->dims[d]);
			bytes *= (uint64_t)f->dims[d];
			if (bytes > STORE_MAX_CELL_BYTES)
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "field '%s': a tensor of more than %u bytes per document",
				                f->name, STORE_MAX_CELL_BYTES);
		}
	}
	return 0;
}

/* Serialized layout: u32 magic, u32 nfields, then per field: u16 name length,
 * name, u8 type, u8 attribute, u8 cell, u8 rank, u32 block shift, i64
 * dims[rank].  Native byte order, like LMDB itself. */
static size_t layout_size(const struct doctype *dt)
{
	size_t n = 8;
	for (int i = 0; i < dt->nstored; i++)
		n += 2 + strlen(dt->stored[i].name) + 8 + 8 * (size_t)dt->stored[i].rank;
	return n;
}

static void put_bytes(uint8_t **p, const void *v, size_t n)
{
	memcpy(*p, v, n);
	*p += n;
}

static void layout_encode(const struct doctype *dt, uint8_t *out)
{
	uint8_t *p = out;
	uint32_t magic = LAYOUT_MAGIC, nf = (uint32_t)dt->nstored;
	put_bytes(&p, &magic, 4);
	put_bytes(&p, &nf, 4);
	for (int i = 0; i < dt->nstored; i++) {
		const struct sfield *f = &dt->stored[i];
		uint16_t len = (uint16_t)strlen(f->name);
		uint8_t b[4] = {(uint8_t)f->type, (uint8_t)f->attribute, (uint8_t)f->cell,
		                (uint8_t)f->rank};
		put_bytes(&p, &len, 2);
		put_bytes(&p, f->name, len);
		put_bytes(&p, b, 4);
		uint32_t shift = f->column ? f->block_shift : 0; /* a graph's vectors: derived */
		put_bytes(&p, &shift, 4);
		put_bytes(&p, f->dims, 8 * (size_t)f->rank);
	}
}

static int take(const uint8_t **p, const uint8_t *end, void *v, size_t n)
{
	if ((size_t)(end - *p) < n)
		return -1;
	memcpy(v, *p, n);
	*p += n;
	return 0;
}

/* Parse a recorded layout into dt->stored.  Anything out of place is
 * STRATA_CORRUPT: the record is ours and was written whole. */
static int layout_decode(struct doctype *dt, const MDB_val *v, unsigned psize,
                         struct strata_error *err)
{
	const uint8_t *p = v->mv_data, *end = p + v->mv_size;
	uint32_t magic, nf;
	if (take(&p, end, &magic, 4) || take(&p, end, &nf, 4) || magic != LAYOUT_MAGIC ||
	    nf > STORE_MAX_FIELDS)
		return base_err(err, STRATA_CORRUPT, "document type '%s': bad layout record header",
		                dt->name);
	if (nf) {
		dt->stored = base_calloc(nf, sizeof *dt->stored);
		if (!dt->stored)
			return base_nomem(err, "layout of '%s'", dt->name);
		dt->stored_cap = (int)nf;
	}
	for (uint32_t i = 0; i < nf; i++) {
		struct sfield *f = &dt->stored[i];
		uint16_t len;
		uint8_t b[4];
		if (take(&p, end, &len, 2) || len == 0 || len > STORE_MAX_NAME ||
		    (size_t)(end - p) < len)
			goto corrupt;
		f->name = base_strndup((const char *)p, len);
		if (!f->name)
			return base_nomem(err, "layout of '%s'", dt->name);
		p += len;
		if (take(&p, end, b, 4) || take(&p, end, &f->block_shift, 4))
			goto corrupt;
		f->type = b[0];
		f->attribute = b[1];
		f->cell = b[2];
		f->rank = b[3];
		if (f->type < STORE_T_STRING || f->type > STORE_T_JSON || f->attribute > 1 ||
		    f->block_shift > 24 || (STORE_IS_BYTES(f->type) && f->attribute))
			goto corrupt;
		if (f->type == STORE_T_TENSOR) {
			if (f->rank < 1 || f->rank > STORE_MAX_RANK || !cell_allowed(f->cell))
				goto corrupt;
			uint64_t bytes = base_dtype_size(f->cell);
			for (int d = 0; d < f->rank; d++) {
				if (take(&p, end, &f->dims[d], 8) || f->dims[d] < 1 ||
				    (uint64_t)f->dims[d] > STORE_MAX_CELL_BYTES)
					goto corrupt;
				bytes *= (uint64_t)f->dims[d];
				if (bytes > STORE_MAX_CELL_BYTES)
					goto corrupt;
			}
		} else if (f->rank != 0 || f->cell != 0) {
			goto corrupt;
		}
		derive(f, psize, 0);
		f->user = -1;
	}
	if (p != end)
		goto corrupt;
	dt->nstored = (int)nf;
	return 0;
corrupt:
	return base_err(err, STRATA_CORRUPT, "document type '%s': bad layout record", dt->name);
}

static int same_layout(const struct sfield *a, const struct sfield *b)
{
	if (a->type != b->type || a->attribute != b->attribute || a->cell != b->cell ||
	    a->rank != b->rank)
		return 0;
	for (int d = 0; d < a->rank; d++)
		if (a->dims[d] != b->dims[d])
			return 0;
	return 1;
}

/* Merge the caller's fields into dt's stored layout: match by name, refuse a
 * changed field, append new ones.  Sets *changed when something was added. */
static int merge_fields(struct doctype *dt, const struct store_doctype *udt, unsigned psize,
                        int *changed, struct strata_error *err)
{
	int add = 0;
	for (int i = 0; i < udt->nfields; i++) {
		int found = 0;
		for (int j = 0; j < dt->nstored && !found; j++)
			found = strcmp(dt->stored[j].name, udt->fields[i].name) == 0;
		add += !found;
	}
	size_t old_n = (size_t)dt->nstored, new_n = old_n + (size_t)add;
	if (new_n > STORE_MAX_FIELDS)
		return base_err(err, STRATA_LIMIT, "document type '%s': more than %d fields",
		                dt->name, STORE_MAX_FIELDS);
	if (add) {
		struct sfield *ns = base_realloc(dt->stored, old_n * sizeof *ns, new_n * sizeof *ns);
		if (!ns)
			return base_nomem(err, "layout of '%s'", dt->name);
		memset(ns + old_n, 0, (size_t)add * sizeof *ns);
		dt->stored = ns;
		dt->stored_cap = (int)new_n;
	}
	dt->ufield = base_alloc((size_t)(udt->nfields ? udt->nfields : 1) * sizeof *dt->ufield);
	if (!dt->ufield)
		return base_nomem(err, "layout of '%s'", dt->name);
	dt->nuser = udt->nfields;
	for (int i = 0; i < udt->nfields; i++) {
		const struct store_field *uf = &udt->fields[i];
		struct sfield want = {0};
		want.type = uf->type;
		want.attribute = STORE_IS_BYTES(uf->type) ? 0 : !!uf->attribute;
		if (uf->type == STORE_T_TENSOR) {
			want.cell = uf->cell;
			want.rank = uf->rank;
			memcpy(want.dims, uf->dims, sizeof want.dims);
		}
		int j;
		for (j = 0; j < dt->nstored; j++)
			if (strcmp(dt->stored[j].name, uf->name) == 0)
				break;
		if (j < dt->nstored) {
			if (!same_layout(&dt->stored[j], &want)) {
				char a[128], b[128];
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "document type '%s': field '%s' is %s in the store and %s "
				                "in the new definition; a field's type cannot change",
				                dt->name, uf->name, store_type_desc(&dt->stored[j], a, sizeof a),
				                store_type_desc(&want, b, sizeof b));
			}
		} else {
			want.name = base_strdup(uf->name);
			if (!want.name)
				return base_nomem(err, "layout of '%s'", dt->name);
			derive(&want, psize, 1);
			dt->stored[dt->nstored++] = want;
			*changed = 1;
		}
		dt->ufield[i] = j;
		dt->stored[j].user = i;
		int coll = uf->text & (STORE_TEXT_ARRAY | STORE_TEXT_WSET);
		dt->stored[j].text = (uf->text & STORE_TEXT_ON) &&
		                     (coll ? uf->type == STORE_T_JSON : uf->type == STORE_T_STRING)
		                             ? uf->text : 0;
		/* a dictionary on a string or a single number: others ignore the flag */
		dt->stored[j].dict = uf->fast_search &&
		                     (uf->type == STORE_T_STRING ||
		                      (dt->stored[j].column && uf->type != STORE_T_TENSOR));
		dt->stored[j].hnsw_metric = uf->hnsw_metric;
		dt->stored[j].hnsw_m = uf->hnsw_m;
		dt->stored[j].hnsw_ef = uf->hnsw_ef;
		dt->stored[j].multi = uf->type == STORE_T_JSON && uf->hnsw_metric && uf->vec_decode;
		dt->stored[j].vec_cell = uf->vec_cell;
		dt->stored[j].vec_decode = uf->vec_decode;
		dt->stored[j].vec_ud = uf->vec_ud;
		if (dt->stored[j].multi)
			dt->stored[j].ncells = (uint64_t)uf->vec_size;
	}
	return 0;
}

#ifdef STRATA_DEBUG
/* The two field lists of dt agree: every caller field maps to a stored
 * field that maps back to it, and no other stored field claims a caller
 * field.  Debug builds check it after each merge. */
static int fields_consistent(const struct doctype *dt)
{
	if (dt->nstored > dt->stored_cap)
		return 0;
	for (int u = 0; u < dt->nuser; u++) {
		int sf = dt->ufield[u];
		if (sf < 0 || sf >= dt->nstored || dt->stored[sf].user != u)
			return 0;
	}
	for (int sf = 0; sf < dt->nstored; sf++) {
		int u = dt->stored[sf].user;
		if (u >= dt->nuser || (u >= 0 && dt->ufield[u] != sf))
			return 0;
	}
	return 1;
}
#endif

/* Open (creating) one of a doctype's named DBs. */
static int open_db(MDB_txn *t, const char *type, const char *what, unsigned flags, MDB_dbi *dbi)
{
	char name[STORE_MAX_NAME + 16];
	snprintf(name, sizeof name, "%s/%s", type, what);
	return mdb_dbi_open(t, name, flags | MDB_CREATE, dbi);
}

int store_doctype_add(struct store_env *env, const struct store_doctype *udt, int *id,
                      struct strata_error *err)
{
	if (!env || !id)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no store or no id given");
	int rc = validate_doctype(udt, err);
	if (rc)
		return rc;
	for (int i = 0; i < env->ntypes; i++)
		if (strcmp(env->types[i]->name, udt->name) == 0)
			return base_err(err, STRATA_EXISTS, "document type '%s' was already added",
			                udt->name);
	if (env->ntypes == STORE_MAX_DOCTYPES)
		return base_err(err, STRATA_LIMIT, "more than %d document types",
		                STORE_MAX_DOCTYPES);
	struct doctype *dt = base_calloc(1, sizeof *dt);
	if (!dt || !(dt->name = base_strdup(udt->name))) {
		base_free(dt, sizeof *dt);
		return base_nomem(err, "document type '%s'", udt->name);
	}
	dt->doc_bytes = store_doc_bytes;
	char key[STORE_MAX_NAME + 8];
	snprintf(key, sizeof key, "t/%s", udt->name);
	MDB_val k = {strlen(key), key}, v;
	MDB_txn *t;
	if ((rc = mdb_txn_begin(env->env, NULL, 0, &t)) != 0) {
		store_doctype_free(dt);
		return store_mdb_err(err, rc, "document type");
	}
	int changed = 0, fresh = 0;
	rc = mdb_get(t, env->meta, &k, &v);
	if (rc == MDB_NOTFOUND) {
		fresh = changed = 1;
		rc = 0;
	} else if (rc) {
		rc = store_mdb_err(err, rc, "reading the layout");
		goto out;
	} else if ((rc = layout_decode(dt, &v, env->psize, err)) != 0) {
		goto out;
	}
	if ((rc = merge_fields(dt, udt, env->psize, &changed, err)) != 0)
		goto out;
	BASE_DEBUG_ASSERT(fields_consistent(dt));
	if (changed) {
		size_t n = layout_size(dt);
		v.mv_size = n;
		if ((rc = mdb_put(t, env->meta, &k, &v, MDB_RESERVE)) != 0) {
			rc = store_mdb_err(err, rc, "recording the layout");
			goto out;
		}
		layout_encode(dt, v.mv_data);
	}
	if (fresh) {
		uint32_t next = 0;
		key[0] = 'n';
		MDB_val nv = {sizeof next, &next};
		if ((rc = mdb_put(t, env->meta, &k, &nv, 0)) != 0) {
			rc = store_mdb_err(err, rc, "recording the layout");
			goto out;
		}
	}
	if ((rc = open_db(t, dt->name, "ids", 0, &dt->ids)) != 0 ||
	    (rc = open_db(t, dt->name, "docs", MDB_INTEGERKEY, &dt->docs)) != 0 ||
	    (rc = open_db(t, dt->name, "cols", MDB_INTEGERKEY, &dt->cols)) != 0 ||
	    (rc = open_db(t, dt->name, "text", 0, &dt->text)) != 0 ||
	    (rc = open_db(t, dt->name, "hnsw", 0, &dt->hnsw)) != 0 ||
	    (rc = open_db(t, dt->name, "dict", 0, &dt->dict)) != 0) {
		rc = store_mdb_err(err, rc, "opening the document tables");
		goto out;
	}
	if ((rc = store_doc_text_sync(t, env->meta, dt, err)) != 0 ||
	    (rc = store_hnsw_sync(env, t, dt, err)) != 0 ||
	    (rc = store_dict_sync(env, t, dt, err)) != 0)
		goto out;
	rc = mdb_txn_commit(t);
	t = NULL;
	if (rc) {
		rc = store_mdb_err(err, rc, "recording the layout");
		goto out;
	}
	*id = env->ntypes;
	env->types[env->ntypes++] = dt;
	return 0;
out:
	if (t)
		mdb_txn_abort(t);
	store_doctype_free(dt);
	return rc;
}

