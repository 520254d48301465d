/*
 * select_elements.c: select-elements-by of a document summary's field: of
 * an array, only the elements whose index is a label of a summary-feature's
 * one mapped dimension (e.g. top(3, ...) of per-chunk scores), in array
 * order.  The feature is evaluated for the hit by the request's rank
 * profile, which must list it among its summary-features; labels that are
 * not indexes of the array are ignored.
 */
#include <string.h>

#include "query_int.h"

struct pick {
	const char *name;     /* the summary-feature asked for */
	unsigned char *keep;  /* one per element */
	size_t n;
	int found;
	struct strata_error *err;
};

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

static int pick_cb(void *ud, const struct rank_feature *f)
{
	struct pick *p = ud;
	if (p->found || !same_feature(f->name, p->name))
		return 0;
	p->found = 1;
	int mapped = 0;
	for (int i = 0; i < f->rank; i++)
		mapped += f->dims[i] < 0;
	if (mapped != 1)
		return base_err(p->err, STRATA_TYPE,
		                "select-elements-by: summary-feature '%s' has %d mapped dimensions, "
		                "not one", p->name, mapped);
	size_t nblocks = f->sparse ? f->sparse->nblocks : 0;
	for (size_t b = 0; b < nblocks; b++) {
		long long i = label_index(f->sparse->labels[b], p->n);
		if (i >= 0)
			p->keep[i] = 1;
	}
	return 0;
}

int eng_select_elements(struct qstate *qs, const struct hit *h, const char *feature,
                        json_t **v)
{
	size_t n = json_array_size(*v);
	if (!n)
		return 0;
	struct pick p = { feature, base_calloc(n, 1), n, 0, qs->err };
	if (!p.keep)
		return base_nomem(qs->err, "select-elements-by of '%s'", eng_hit_docid(h));
	uint64_t a = mark();
	int rc = rank_query_features(h->ds->rq, &h->ds->docs, h->lid, h->first,
	                             RANK_SUMMARY_FEATURES, pick_cb, &p, qs->err);
	charge(qs, a);
	if (rc == STRATA_NOMEM)
		base_nomem(qs->err, "summary-features of '%s'", eng_hit_docid(h));
	if (!rc && !p.found)
		rc = base_err(qs->err, STRATA_NOT_FOUND,
		              "select-elements-by: '%s' is not a summary-feature of rank profile '%s'",
		              feature, rank_profile_name(h->ds->prof));
	json_t *out = rc ? NULL : json_array();
	if (!rc && !out)
		rc = base_nomem(qs->err, "select-elements-by of '%s'", eng_hit_docid(h));
	for (size_t i = 0; !rc && i < n; i++)
		if (p.keep[i] && json_array_append(out, json_array_get(*v, i)))
			rc = base_nomem(qs->err, "select-elements-by of '%s'", eng_hit_docid(h));
	base_free(p.keep, n);
	if (rc) {
		json_decref(out);
		return rc;
	}
	json_decref(*v);
	*v = out;
	return 0;
}
