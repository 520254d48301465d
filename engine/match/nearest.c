/*
 * nearest.c: the document set of a nearestNeighbor item (query.c step 2):
 * the targetHits documents nearest to the query tensor among those that
 * pass the filter (the other operands of a top-level AND).
 *
 * Exact search computes every candidate's distance.  Approximate search
 * (approximate: true, the default, on a field with an HNSW graph) walks the
 * store's graph keeping targetHits + hnsw.exploreAdditionalHits candidates.
 * With a filter it follows Vespa: the filter is evaluated first into a
 * bitmap, and when the share of documents passing it is below the
 * approximate threshold (approximate-threshold, 5% unless the profile or
 * the query says otherwise) exact search over those documents is cheaper
 * and exact; otherwise the graph search skips the documents the filter
 * drops and explores on until it has targetHits that pass, checking the
 * filter before a distance when the share is below filter-first-threshold.
 * exploration-slack widens every graph search.  The settings are resolved
 * per query by eng_nn_tuning.
 *
 * Exact results are ordered by distance, then document id, so that ties
 * keep a stable set (ids are read only for the distance at the cut);
 * approximate results by the graph's distance.  The set is returned
 * sorted by local id (query.c tests membership).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine_int.h"

#define MAX_CANDIDATES ((size_t)1 << 31)

struct cand {
	double dist;
	uint32_t lid;
	const char *docid;
};

/* By distance; equal distances by local id until their document ids are
 * read (only those of the distance the k-th candidate has, see exact()). */
static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->dist != y->dist)
		return x->dist < y->dist ? -1 : 1;
	if (x->docid && y->docid)
		return strcmp(x->docid, y->docid);
	return x->lid < y->lid ? -1 : x->lid > y->lid;
}

static int lid_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int filter_err(const struct eng_nn *r, int rc, struct strata_error *err)
{
	(void)r;
	return rc == STRATA_NOMEM ? base_nomem(err, "matching a collection value") : rc;
}

/* Exact: every live document (or those whose bit is set in bits), nearest
 * first; the first k lids go to out. */
static int exact(const struct eng_nn *r, const uint64_t *bits, size_t nbits, uint32_t *out,
                 size_t *nout, struct strata_error *err)
{
	struct cand *c = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	for (uint32_t lid = 0; store_next(r->txn, r->doctype, &lid) == 0; lid++) {
		if (bits && (lid >= nbits || !((bits[lid >> 6] >> (lid & 63)) & 1)))
			goto next;
		if (!bits && r->filter) {
			int pass = r->filter(r->ud, lid);
			if (pass < 0) {
				rc = filter_err(r, pass, err);
				break;
			}
			if (!pass)
				goto next;
		}
		double d = r->distance(r->ud, lid);
		if (isnan(d) || isinf(d))
			goto next;
		if (n == cap && (rc = base_grow((void **)&c, &cap, n + 1, sizeof *c, MAX_CANDIDATES))) {
			rc = rc == STRATA_NOMEM ? base_nomem(err, "nearestNeighbor candidates")
			                        : base_err(err, rc, "nearestNeighbor: too many candidates");
			break;
		}
		c[n].dist = d;
		c[n].lid = lid;
		c[n].docid = NULL;
		n++;
	next:
		if (lid == UINT32_MAX)
			break;
	}
	if (!rc) {
		if (n)
			qsort(c, n, sizeof *c, cand_cmp);
		*nout = n < r->target_hits ? n : r->target_hits;
		if (*nout && *nout < n && c[*nout - 1].dist == c[*nout].dist) {
			/* the candidates at the k-th one's distance straddle the cut:
			 * among them the lower document ids are kept */
			size_t lo = *nout - 1, hi = *nout + 1;
			while (lo && c[lo - 1].dist == c[*nout].dist)
				lo--;
			while (hi < n && c[hi].dist == c[*nout].dist)
				hi++;
			for (size_t i = lo; i < hi; i++) {
				c[i].docid = store_docid(r->txn, r->doctype, c[i].lid);
				if (!c[i].docid)
					c[i].docid = "";
			}
			qsort(c + lo, hi - lo, sizeof *c, cand_cmp);
		}
		for (size_t i = 0; i < *nout; i++)
			out[i] = c[i].lid;
	}
	if (c)
		base_free(c, cap * sizeof *c);
	return rc;
}

/* The filter as a bitmap over local ids; *pass and *live count. */
static int filter_bits(const struct eng_nn *r, uint64_t **bits, size_t *nwords, uint64_t *pass,
                       uint64_t *live, struct strata_error *err)
{
	*bits = NULL;
	*nwords = 0;
	*pass = *live = 0;
	for (uint32_t lid = 0; store_next(r->txn, r->doctype, &lid) == 0; lid++) {
		(*live)++;
		int p = r->filter(r->ud, lid);
		if (p < 0)
			return filter_err(r, p, err);
		if (p) {
			size_t w = lid >> 6;
			if (w >= *nwords) {
				size_t ncap = *nwords ? *nwords : 64;
				while (ncap <= w)
					ncap *= 2;
				uint64_t *nb = base_calloc(ncap, sizeof *nb);
				if (!nb)
					return base_nomem(err, "nearestNeighbor filter");
				if (*bits)
					memcpy(nb, *bits, *nwords * sizeof *nb);
				base_free(*bits, *nwords * sizeof **bits);
				*bits = nb;
				*nwords = ncap;
			}
			(*bits)[w] |= (uint64_t)1 << (lid & 63);
			(*pass)++;
		}
		if (lid == UINT32_MAX)
			break;
	}
	return 0;
}

/* The graph search; filter_first: check the filter before distances. */
static int approximate(const struct eng_nn *r, const uint64_t *bits, size_t nbits,
                       int filter_first, uint32_t *out, size_t *nout, struct strata_error *err)
{
	struct store_hit *hits = base_alloc(r->target_hits * sizeof *hits);
	if (!hits)
		return base_nomem(err, "nearestNeighbor");
	uint64_t ef = (uint64_t)r->target_hits + r->explore;
	struct store_hnsw_params sp = {
		.k = r->target_hits, .ef = ef > UINT32_MAX ? UINT32_MAX : (uint32_t)ef,
		.filter = bits, .nbits = nbits, .slack = r->tune[RANK_NN_EXPLORATION_SLACK],
		.filter_first = filter_first,
		.exploration = r->tune[RANK_NN_FILTER_FIRST_EXPLORATION],
	};
	int rc = store_hnsw_search_with(r->txn, r->doctype, r->field, r->query, r->ncells, &sp,
	                                hits, nout, err);
	for (size_t i = 0; !rc && i < *nout; i++)
		out[i] = hits[i].lid;
	base_free(hits, r->target_hits * sizeof *hits);
	return rc;
}

int eng_nn_set(const struct eng_nn *r, uint32_t **set, size_t *n, struct strata_error *err)
{
	*set = NULL;
	*n = 0;
	uint64_t live = store_count(r->txn, r->doctype);
	size_t k = r->target_hits < live ? r->target_hits : (size_t)live;
	if (k == 0)
		return 0;
	uint32_t *out = base_alloc(k * sizeof *out);
	if (!out)
		return base_nomem(err, "nearestNeighbor");
	struct eng_nn rk = *r;
	rk.target_hits = (uint32_t)k;
	size_t got = 0;
	int rc;
	if (!r->approximate || !r->graph) {
		rc = exact(&rk, NULL, 0, out, &got, err);
	} else if (!r->filter) {
		rc = approximate(&rk, NULL, 0, 0, out, &got, err);
	} else {
		uint64_t *bits, pass, all;
		size_t nwords;
		rc = filter_bits(&rk, &bits, &nwords, &pass, &all, err);
		double ratio = all ? (double)pass / (double)all : 0;
		if (!rc && pass == 0)
			got = 0;
		else if (!rc && ratio < r->tune[RANK_NN_APPROXIMATE_THRESHOLD])
			rc = exact(&rk, bits, nwords * 64, out, &got, err);
		else if (!rc)
			rc = approximate(&rk, bits, nwords * 64,
			                 ratio < r->tune[RANK_NN_FILTER_FIRST_THRESHOLD], out, &got, err);
		base_free(bits, nwords * sizeof *bits);
	}
	if (rc || got == 0) {
		base_free(out, k * sizeof *out);
		return rc;
	}
	qsort(out, got, sizeof *out, lid_cmp);
	if (got < k) { /* the set is freed by its length */
		uint32_t *shrunk = base_realloc(out, k * sizeof *out, got * sizeof *out);
		if (!shrunk) {
			base_free(out, k * sizeof *out);
			return base_nomem(err, "nearestNeighbor");
		}
		out = shrunk;
	}
	*set = out;
	*n = got;
	return 0;
}

/* The request's value of ranking.matching.<name>: NULL when not given. */
static const json_t *matching_param(const json_t *req, const char *name)
{
	char key[96];
	snprintf(key, sizeof key, "ranking.matching.%s", name);
	return eng_request_param(req, key);
}

int eng_nn_tuning(const struct rank_profile *prof, const json_t *req, double *tune,
                  struct strata_error *err)
{
	for (int i = 0; i < RANK_NN_NSETTINGS; i++) {
		const struct rank_nn_setting_info *s = rank_nn_setting_info(i);
		const json_t *v = req ? matching_param(req, s->query_name) : NULL;
		double x = rank_profile_nn_setting(prof, i);
		if (v && json_is_string(v)) { /* the form a URL's parameters take */
			char *end;
			x = strtod(json_string_value(v), &end);
			if (end == json_string_value(v) || *end)
				x = NAN;
		} else if (v) {
			x = json_is_number(v) ? json_number_value(v) : NAN;
		}
		if (!(x >= s->lo && x <= s->hi) && isinf(s->hi))
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "ranking.matching.%s must be a number of %g or more", s->query_name,
			                s->lo);
		if (!(x >= s->lo && x <= s->hi))
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "ranking.matching.%s must be a number from %g to %g", s->query_name,
			                s->lo, s->hi);
		tune[i] = x;
	}
	return 0;
}

/* ---- the nearestNeighbor operator -------------------------------------------------- */

static int nn_check(const struct eng_doctype *dt, const struct yql_node *n,
                    struct strata_error *err)
{
	const struct rank_field *rf = rank_schema_field(dt->schema, n->fidx);
	int mv = rank_field_multivec(rf);
	if (eng_field_mapped(rf) && !mv)
		return base_err(err, STRATA_NOT_IMPLEMENTED,
		                "yql:1:%d: nearestNeighbor on '%s', a tensor with mapped dimensions "
		                "other than one mapped and some indexed, is not supported", n->col,
		                n->field);
	if ((dt->fields[n->fidx].type != STORE_T_TENSOR && !mv) || !rf->attribute)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "yql:1:%d: nearestNeighbor needs a tensor attribute; '%s' is not one",
		                n->col, n->field);
	return 0;
}

/* In the set found before matching (nn_set in query.c), or any document
 * while the set's filter is tested. */
static const struct eng_nnset *set_of(const struct eng_match *m, const struct yql_node *n)
{
	for (int i = 0; i < m->nnn; i++)
		if (m->nn[i].node == n)
			return &m->nn[i];
	return NULL;
}

static int nn_match(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	const struct eng_nnset *s = set_of(m, n);
	return m->nn_true || (s && eng_lid_find(s->lids, s->n, lid) < s->n);
}

static int nn_open(struct eng_match *m, const struct yql_node *n, struct eng_iter **out)
{
	*out = NULL;
	if (m->nn_true)
		return 0;
	const struct eng_nnset *s = set_of(m, n);
	return eng_iter_give(m, eng_iter_array(s ? s->lids : NULL, s ? s->n : 0, NULL, 0), out);
}

const struct eng_op eng_op_nn = { "nearestNeighbor", 0, nn_check, nn_match, nn_open };
