/*
 * summary.c: the summaries of a search request's hits: the fields of the
 * summary class the request picks (presentation.summary, the select list),
 * with the transforms their settings ask for (snippet.c), match- and
 * summary-features, made for the page of hits the result shows.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "query_int.h"

struct feat_ud {
	json_t *obj;
	uint64_t own;   /* allocations of the callback itself, not rank's */
};

static int feature_cb(void *ud, const struct rank_feature *f)
{
	struct feat_ud *u = ud;
	uint64_t a = mark();
	json_t *v = eng_feature_json(f);
	int rc = !v || json_object_set_new(u->obj, f->name, v) ? STRATA_NOMEM : 0;
	u->own += base_alloc_thread_count() - a;
	return rc;
}

static json_t *relevance_json(double r)
{
	/* JSON has no infinities: the lowest double stands for -inf and NaN. */
	if (isnan(r) || r == -INFINITY)
		r = -1.7976931348623157e308;
	else if (r == INFINITY)
		r = 1.7976931348623157e308;
	return json_real(r);
}

/* The hit's match-features, as "matchfeatures" (its summary-features are
 * select_elements.c's eng_hit_features). */
static int add_features(struct qstate *qs, const struct hit *h, json_t *fields)
{
	struct feat_ud u = { json_object(), 0 };
	if (!u.obj)
		return base_nomem(qs->err, "features");
	uint64_t a = mark();
	int rc = rank_query_features(h->ds->rq, &h->ds->docs, h->lid, h->first,
	                             RANK_MATCH_FEATURES, feature_cb, &u, qs->err);
	qs->rank_allocs += base_alloc_thread_count() - a - u.own;
	if (rc == STRATA_NOMEM)
		base_nomem(qs->err, "features of '%s'", eng_hit_docid(h));
	if (!rc && json_object_size(u.obj) && json_object_set(fields, "matchfeatures", u.obj))
		rc = base_nomem(qs->err, "features");
	json_decref(u.obj);
	return rc;
}

/* The fields select names: each a field or a field of the summary class
 * (presentation.summary's, else "default") of some document type, or
 * sddocname or documentid. */
int eng_check_selected(struct qstate *qs)
{
	for (int k = 0; !qs->yql->all_fields && k < qs->yql->nfields; k++) {
		const char *name = qs->yql->fields[k];
		int found = !strcmp(name, "sddocname") || !strcmp(name, "documentid");
		for (int i = 0; i < qs->nds && !found; i++) {
			const struct rank_schema *s = qs->ds[i].dt->schema;
			const struct rank_summary_class *c =
				qs->ds[i].summary ? qs->ds[i].summary : rank_schema_summary(s, "default");
			found = rank_schema_field_index(s, name) >= 0;
			for (int f = 0; f < c->nfields && !found; f++)
				found = !strcmp(c->fields[f].name, name);
		}
		if (!found && qs->nds)
			return base_err(qs->err, STRATA_NOT_FOUND, "yql: selected field '%s' not found",
			                name);
	}
	return 0;
}

/* presentation.summary (or "presentation": {"summary": ...}): the
 * document-summary class of every type, which must have it. */
int eng_pick_summary(struct qstate *qs, const struct eng_request *req)
{
	const char *name = req->summary;
	if (!name)
		return 0;
	for (int i = 0; i < qs->nds; i++) {
		struct dtstate *ds = &qs->ds[i];
		ds->summary = rank_schema_summary(ds->dt->schema, name);
		if (!ds->summary)
			return base_err(qs->err, STRATA_NOT_FOUND,
			                "document-summary '%s' not found in schema '%s'", name,
			                ds->dt->name);
	}
	return 0;
}

/* Show summary field sf of the loaded document: the field's value, its
 * tokens, a value made from the query (snippet.c) or the document id. */
static int summary_value(struct qstate *qs, const struct hit *h, struct eng_hit_features *hf,
                         json_t *fields, const struct rank_summary_field *sf)
{
	struct eng_doctype *dt = h->ds->dt;
	int fi = sf->field, rc;
	json_t *v;
	if (sf->transform == RANK_SUMMARY_DOCUMENTID) {
		v = json_string(eng_hit_docid(h));
	} else if (!qs->vals[fi].set) {
		return 0;
	} else if (sf->tokens) {
		if (!(v = eng_tokens_json(&dt->fields[fi], &qs->vals[fi], qs->err)))
			return qs->err->code;
	} else if (sf->transform) {
		if ((rc = eng_summary_transform(dt, qs->yql->where, fi, sf->transform, &qs->vals[fi], &v,
		                                qs->err)) != 0)
			return rc;
		if (!v)
			return 0; /* nothing to show (no matched element) */
	} else {
		v = eng_field_json(dt, fi, &qs->vals[fi]);
		if (v && sf->select_by &&
		    (rc = eng_select_elements(qs, h, hf, sf->select_by, &v)) != 0) {
			json_decref(v);
			return rc;
		}
	}
	if (json_object_set_new(fields, sf->name, v))
		return base_nomem(qs->err, "summary of '%s'", eng_hit_docid(h));
	return 0;
}

static int selected(const struct qstate *qs, const char *name)
{
	int want = qs->yql->all_fields;
	for (int i = 0; i < qs->yql->nfields && !want; i++)
		want = !strcmp(qs->yql->fields[i], name);
	return want;
}

/* The fields a hit of ds shows: those of its summary class (the one
 * presentation.summary chose, else "default") that the select names (all
 * with select *); a selected field outside the default class shows its
 * value. */
static int summary_fields(struct qstate *qs, const struct hit *h, struct eng_hit_features *hf,
                          json_t *fields)
{
	struct eng_doctype *dt = h->ds->dt;
	int rc;
	const struct rank_summary_class *c = hf->c;
	int chosen = h->ds->summary != NULL;
	for (int k = 0; k < c->nfields; k++)
		if (selected(qs, c->fields[k].name) &&
		    (rc = summary_value(qs, h, hf, fields, &c->fields[k])))
			return rc;
	for (int i = 0; !chosen && !qs->yql->all_fields && i < dt->nfields; i++) {
		const struct rank_field *rf = rank_schema_field(dt->schema, i);
		int in_class = 0;
		for (int k = 0; k < c->nfields && !in_class; k++)
			in_class = !strcmp(c->fields[k].name, rf->name);
		struct rank_summary_field sf = {rf->name, i, 0, 0, NULL};
		if (!in_class && selected(qs, rf->name) &&
		    (rc = summary_value(qs, h, hf, fields, &sf)))
			return rc;
	}
	return 0;
}

int eng_summary(struct qstate *qs, const struct hit *h, json_t **out)
{
	struct eng_doctype *dt = h->ds->dt;
	struct eng_hit_features hf = {
		.c = h->ds->summary ? h->ds->summary : rank_schema_summary(dt->schema, "default")
	};
	json_t *child = json_object();
	json_t *fields = json_object();
	int rc = 0;
	if (!child || !fields)
		goto nomem;
	if (json_object_set_new(child, "id", json_string(eng_hit_docid(h))) ||
	    json_object_set_new(child, "relevance", relevance_json(h->score)) ||
	    json_object_set_new(child, "source", json_string(dt->name)))
		goto nomem;
	/* loaded once: the features below read the same values (doc_value) */
	memset(qs->vals, 0, qs->vals_size);
	qs->vals_ds = NULL;
	rc = store_get(qs->txn, dt->store_id, h->lid, qs->vals, qs->err);
	if (rc)
		goto fail;
	qs->vals_ds = h->ds;
	qs->vals_lid = h->lid;
	if (eng_imports_fill(qs->db, qs->txn, dt, -1, qs->vals, &h->ds->sparse))
		goto nomem;
	/* select * shows them, as a select list naming them does */
	if ((selected(qs, "sddocname") &&
	     json_object_set_new(fields, "sddocname", json_string(dt->name))) ||
	    (selected(qs, "documentid") &&
	     json_object_set_new(fields, "documentid", json_string(eng_hit_docid(h)))))
		goto nomem;
	if ((rc = summary_fields(qs, h, &hf, fields)) != 0 ||
	    (rc = add_features(qs, h, fields)) != 0 ||
	    (!hf.c->omit_summary_features && (rc = eng_hit_features(qs, h, &hf)) != 0))
		goto fail;
	if (!hf.c->omit_summary_features && json_object_size(hf.json) &&
	    json_object_set(fields, "summaryfeatures", hf.json))
		goto nomem;
	if (json_object_set(child, "fields", fields))
		goto nomem;
	json_decref(fields);
	eng_hit_features_free(&hf);
	*out = child;
	return 0;
nomem:
	rc = base_nomem(qs->err, "summary of '%s'", eng_hit_docid(h));
fail:
	json_decref(fields);
	json_decref(child);
	eng_hit_features_free(&hf);
	return rc;
}
