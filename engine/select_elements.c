/*
 * select_elements.c: select-elements-by of a document summary's field: of
 * an array, only the elements whose index is a label of a summary-feature's
 * one mapped dimension (e.g. top(3, ...) of per-chunk scores), in array
 * order.  The feature is evaluated for the hit by the request's rank
 * profile, which must list it among its summary-features; labels that are
 * not indexes of the array are ignored.  A hit's summary-features are
 * evaluated once, for every select-elements-by of its summary class and
 * for its "summaryfeatures" (eng_hit_features).
 */
#include <string.h>

#include "query_int.h"

/* The index label names, or -1 when it is no index below n. */
static long long label_index(const char *label, size_t n)
{
	unsigned long long v = 0;
	if (!*label)
		return -1;
	for (const char *c = label; *c; c++) {
		if (*c < '0' || *c > '9' || v > (unsigned long long)n)
			return -1;
		v = v * 10 + (unsigned long long)(*c - '0');
	}
	return v < n ? (long long)v : -1;
}

/* Whether the feature written name is the one asked for: a function's name
 * may be written with "()". */
static int same_feature(const char *name, const char *want)
{
	size_t n = strlen(want);
	return !strncmp(name, want, n) && (!name[n] || !strcmp(name + n, "()"));
}

/* rank_query_features' callback: the feature as JSON, and its labels for
 * the picks that ask for it. */
static int feature_cb(void *ud, const struct rank_feature *f)
{
	struct eng_hit_features *hf = ud;
	uint64_t a = mark();
	int rc = 0;
	json_t *v = eng_feature_json(f);
	if (!v || json_object_set_new(hf->json, f->name, v))
		rc = STRATA_NOMEM;
	for (int k = 0; !rc && k < hf->npicks; k++) {
		struct eng_pick *p = &hf->picks[k];
		if (p->found || !same_feature(f->name, p->feature))
			continue;
		p->found = 1;
		for (int i = 0; i < f->rank; i++)
			p->mapped += f->dims[i] < 0;
		size_t nblocks = p->mapped == 1 && f->sparse ? f->sparse->nblocks : 0;
		if (nblocks && !(p->idx = base_alloc(nblocks * sizeof *p->idx))) {
			rc = STRATA_NOMEM;
			break;
		}
		p->cap = nblocks;
		for (size_t b = 0; b < nblocks; b++) {
			long long i = label_index(f->sparse->labels[b], UINT32_MAX);
			if (i >= 0)
				p->idx[p->n++] = (size_t)i;
		}
	}
	hf->own += base_alloc_thread_count() - a;
	return rc;
}

int eng_hit_features(struct qstate *qs, const struct hit *h, struct eng_hit_features *hf)
{
	if (hf->done)
		return hf->rc;
	hf->done = 1;
	int np = 0;
	for (int k = 0; k < hf->c->nfields; k++)
		np += hf->c->fields[k].select_by != NULL;
	hf->json = json_object();
	hf->picks = np ? base_calloc((size_t)np, sizeof *hf->picks) : NULL;
	if (!hf->json || (np && !hf->picks))
		return hf->rc = base_nomem(qs->err, "summary-features of '%s'", eng_hit_docid(h));
	for (int k = 0; k < hf->c->nfields; k++)
		if (hf->c->fields[k].select_by)
			hf->picks[hf->npicks++].feature = hf->c->fields[k].select_by;
	uint64_t a = mark();
	int rc = rank_query_features(h->ds->rq, &h->ds->docs, h->lid, h->first,
	                             RANK_SUMMARY_FEATURES, feature_cb, hf, qs->err);
	qs->rank_allocs += base_alloc_thread_count() - a - hf->own;
	if (rc == STRATA_NOMEM)
		base_nomem(qs->err, "summary-features of '%s'", eng_hit_docid(h));
	return hf->rc = rc;
}

void eng_hit_features_free(struct eng_hit_features *hf)
{
	for (int k = 0; k < hf->npicks; k++)
		if (hf->picks[k].idx)
			base_free(hf->picks[k].idx, hf->picks[k].cap * sizeof *hf->picks[k].idx);
	if (hf->picks)
		base_free(hf->picks, (size_t)hf->npicks * sizeof *hf->picks);
	json_decref(hf->json);
	memset(hf, 0, sizeof *hf);
}

int eng_select_elements(struct qstate *qs, const struct hit *h, struct eng_hit_features *hf,
                        const char *feature, json_t **v)
{
	size_t n = json_array_size(*v);
	if (!n)
		return 0;
	int rc = eng_hit_features(qs, h, hf);
	if (rc)
		return rc;
	const struct eng_pick *p = NULL;
	for (int k = 0; k < hf->npicks && !p; k++)
		if (!strcmp(hf->picks[k].feature, feature))
			p = &hf->picks[k];
	if (!p || !p->found)
		return base_err(qs->err, STRATA_NOT_FOUND,
		                "select-elements-by: '%s' is not a summary-feature of rank profile '%s'",
		                feature, rank_profile_name(h->ds->prof));
	if (p->mapped != 1)
		return base_err(qs->err, STRATA_TYPE,
		                "select-elements-by: summary-feature '%s' has %d mapped dimensions, "
		                "not one", feature, p->mapped);
	unsigned char *keep = base_calloc(n, 1);
	if (!keep)
		return base_nomem(qs->err, "select-elements-by of '%s'", eng_hit_docid(h));
	for (size_t i = 0; i < p->n; i++)
		if (p->idx[i] < n)
			keep[p->idx[i]] = 1;
	json_t *out = json_array();
	if (!out)
		rc = base_nomem(qs->err, "select-elements-by of '%s'", eng_hit_docid(h));
	for (size_t i = 0; !rc && i < n; i++)
		if (keep[i] && json_array_append(out, json_array_get(*v, i)))
			rc = base_nomem(qs->err, "select-elements-by of '%s'", eng_hit_docid(h));
	base_free(keep, n);
	if (rc) {
		json_decref(out);
		return rc;
	}
	json_decref(*v);
	*v = out;
	return 0;
}
