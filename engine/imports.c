/*
 * imports.c: imported fields (Vespa's import field ... as ...): a field of
 * a referenced document, read through the reference field's document id
 * when a rank feature or a summary asks for it.  Nothing is copied at feed
 * time; a parent's update is seen by the next query.
 */
#include <stdio.h>
#include <string.h>

#include "engine_int.h"

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
