/*
 * fieldtypes.c: the values of the field types of rank/types.c between
 * document JSON and the store, and imported fields.
 *
 *   byte       an int of -128 to 127 (kept as an int; feed checks the range)
 *   raw        bytes, fed as base64 and shown as base64 (Vespa's
 *              raw-as-base64-in-summary, its default); kept as the bytes
 *   reference  a document id of the referenced type, kept as a string
 *   predicate  kept in its canonical text (predicate.c)
 *   position   kept as a long (position.c)
 *   imported   never fed nor stored: its value is the attribute of the
 *              document the reference field names, read when a query
 *              ranks, matches or summarises (the parent may be fed before
 *              or after the child; no parent, or none of that id, reads as
 *              no value, which ranking takes as the type's default)
 *
 * Every other type goes through feed.c and result.c as before.
 */
#include <stdio.h>
#include <string.h>

#include "engine_int.h"

/* ---- base64 ------------------------------------------------------------------------ */

/* The base64 text of the n bytes at p as a JSON string; NULL when memory
 * runs out. */
static json_t *b64_json(const unsigned char *p, size_t n)
{
	size_t m = (n + 2) / 3 * 4;
	char *t = base_alloc(m + 1);
	if (!t)
		return NULL;
	base_b64_encode(p, n, t);
	json_t *j = json_stringn(t, m);
	base_free(t, m + 1);
	return j;
}

/* ---- feeding ------------------------------------------------------------------------- */

int eng_typed_field(const struct rank_field *rf)
{
	return rf->byte || rf->imported || rf->type == RANK_FT_RAW ||
	       rf->type == RANK_FT_REFERENCE || rf->type == RANK_FT_PREDICATE ||
	       rf->type == RANK_FT_POSITION;
}

static int raw_value(const json_t *j, struct base_arena *a, struct store_value *v,
                     const char *what, struct strata_error *err)
{
	if (!json_is_string(j))
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s: expected raw bytes as a base64 string",
		                what);
	size_t n = json_string_length(j), len = 0;
	unsigned char *out = base_arena_alloc(a, n / 4 * 3 + 1, 1);
	if (!out)
		return base_nomem(err, "%s", what);
	long bad = base_b64_decode(json_string_value(j), n, out, &len);
	if (bad >= 0)
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s: not base64: %s at character %ld",
		                what, (size_t)bad >= n ? "the length is not a multiple of 4"
		                                       : "a bad character", bad + 1);
	v->s = (const char *)out;
	v->n = len;
	v->set = 1;
	return 0;
}

static int reference_value(const struct rank_field *rf, const json_t *j, struct store_value *v,
                           const char *what, struct strata_error *err)
{
	const char *type;
	size_t tl;
	if (!json_is_string(j))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: expected the id of a '%s' document as a string", what,
		                rf->ref_doctype);
	int rc = eng_docid_type(json_string_value(j), &type, &tl, err);
	if (rc)
		return base_err_prefix(err, rc, "%s", what);
	if (strlen(rf->ref_doctype) != tl || memcmp(type, rf->ref_doctype, tl) != 0)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: '%s' is a document of type '%.*s'; the field references '%s'", what,
		                json_string_value(j), (int)tl, type, rf->ref_doctype);
	v->s = json_string_value(j);
	v->n = json_string_length(j);
	v->set = 1;
	return 0;
}

int eng_typed_value(const struct rank_field *rf, const json_t *j, struct base_arena *a,
                    struct store_value *v, const char *what, struct strata_error *err)
{
	memset(v, 0, sizeof *v);
	if (rf->imported)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s is imported (from field '%s' of the referenced document): it cannot "
		                "be fed", what, rf->import_field);
	if (rf->byte) {
		if (!json_is_integer(j) && !(json_is_real(j) && json_real_value(j) ==
		                             (double)(json_int_t)json_real_value(j)))
			return base_err(err, STRATA_INVALID_ARGUMENT, "%s: expected an integer (byte)",
			                what);
		json_int_t x = json_is_integer(j) ? json_integer_value(j)
		                                  : (json_int_t)json_real_value(j);
		if (x < -128 || x > 127)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: %lld is out of range for byte (-128 to 127)", what,
			                (long long)x);
		v->i = x;
		v->set = 1;
		return 0;
	}
	switch (rf->type) {
	case RANK_FT_RAW:
		return raw_value(j, a, v, what, err);
	case RANK_FT_REFERENCE:
		return reference_value(rf, j, v, what, err);
	case RANK_FT_POSITION:
		return eng_position_value(j, v, what, err);
	}
	return eng_predicate_text(j, a, v, what, err);
}

json_t *eng_field_json(const struct eng_doctype *dt, int fi, const struct store_value *v)
{
	const struct rank_field *rf = rank_schema_field(dt->schema, fi);
	if (rf->type == RANK_FT_RAW)
		return b64_json((const unsigned char *)v->s, v->s ? v->n : 0);
	if (rf->type == RANK_FT_POSITION)
		return eng_position_json(v->i);
	return eng_value_json(&dt->fields[fi], rf->dim_names, v);
}

/* ---- queries ---------------------------------------------------------------------- */

int eng_typed_check(const struct rank_field *rf, const struct yql_node *n,
                    struct strata_error *err)
{
	if (n->kind == YQL_PREDICATE)
		return eng_predicate_check(rf, n, err);
	if (n->kind == YQL_GEO && rf->type != RANK_FT_POSITION)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "yql:1:%d: geoLocation() needs a position field; '%s' is not one", n->col,
		                n->field);
	if (n->kind != YQL_GEO)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "yql:1:%d: '%s' is a position: search it with geoLocation()", n->col,
		                n->field);
	return 0;
}

int eng_typed_match(const struct yql_node *n, const struct store_value *v)
{
	if (n->kind == YQL_GEO)
		return eng_geo_match(n, v->i);
	return eng_predicate_match(v->s, v->n, n) != 0;
}

double eng_typed_feature(const struct yql_node *where, const struct rank_field *rf, int feature,
                         const struct store_value *v)
{
	int pred = feature == RANK_TF_SUBQUERIES_LSB || feature == RANK_TF_SUBQUERIES_MSB;
	const struct yql_node *n = where ? yql_find(where, pred ? YQL_PREDICATE : YQL_GEO, rf->name)
	                                 : NULL;
	if (!pred)
		return eng_geo_feature(n, feature, v ? &v->i : NULL);
	uint64_t bits = n && v ? eng_predicate_match(v->s, v->n, n) : 0;
	return (double)(feature == RANK_TF_SUBQUERIES_MSB ? bits >> 32 : bits & 0xffffffffu);
}

/* ---- imported fields ----------------------------------------------------------------- */

/* The referenced document of the reference value ref: its doctype and
 * local id; NULL when there is none (no value, not fed, removed). */
static const struct eng_doctype *parent_of(struct strata *db, struct store_txn *txn,
                                           const struct store_value *ref, uint32_t *lid)
{
	char id[512];
	struct eng_doctype *pdt;
	if (!ref || !ref->set || ref->n >= sizeof id)
		return NULL;
	memcpy(id, ref->s, ref->n);
	id[ref->n] = 0;
	if (eng_docid_parse(db, id, &pdt, NULL) != 0 ||
	    store_lookup(txn, pdt->store_id, id, lid, NULL) != 0)
		return NULL;
	return pdt;
}

const void *eng_import_attr(struct strata *db, struct store_txn *txn, const struct rank_field *rf,
                            const struct store_value *ref, struct base_arena *a)
{
	uint32_t lid;
	const struct eng_doctype *pdt = parent_of(db, txn, ref, &lid);
	int pf = pdt ? rank_schema_field_index(pdt->schema, rf->import_field) : -1;
	if (pf < 0)
		return NULL;
	const struct rank_field *prf = rank_schema_field(pdt->schema, pf);
	if (!eng_field_mapped(prf))
		return store_attr(txn, pdt->store_id, pf, lid);
	size_t sz = (size_t)(pdt->nfields + 1) * sizeof(struct store_value);
	struct store_value *vals = base_arena_alloc(a, sz, 8);
	if (!vals)
		return NULL;
	memset(vals, 0, sz);
	if (store_get(txn, pdt->store_id, lid, vals, NULL) != 0 || !vals[pf].set)
		return NULL;
	return eng_sparse_from_text(prf, vals[pf].s, vals[pf].n, a);
}

int eng_imports_fill(struct strata *db, struct store_txn *txn, const struct eng_doctype *dt,
                     int only, struct store_value *vals, struct base_arena *a)
{
	for (int i = 0; i < dt->nfields; i++) {
		const struct rank_field *rf = rank_schema_field(dt->schema, i);
		uint32_t lid;
		if (!rf->imported || (only >= 0 && i != only))
			continue;
		memset(&vals[i], 0, sizeof vals[i]);
		const struct eng_doctype *pdt = parent_of(db, txn, &vals[rf->import_ref], &lid);
		int pf = pdt ? rank_schema_field_index(pdt->schema, rf->import_field) : -1;
		if (pf < 0)
			continue;
		size_t sz = (size_t)(pdt->nfields + 1) * sizeof(struct store_value);
		struct store_value *pv = base_arena_alloc(a, sz, 8);
		if (!pv)
			return STRATA_NOMEM;
		memset(pv, 0, sz);
		if (store_get(txn, pdt->store_id, lid, pv, NULL) == 0)
			vals[i] = pv[pf];
	}
	return 0;
}
