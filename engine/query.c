/*
 * query.c: running a search request.
 *
 * A request (Vespa search JSON: yql, ranking.profile, input.query(name),
 * hits, offset) runs in one read transaction, over every document type its
 * sources name, in these steps per type:
 *   1. resolve: field names of the where tree to field indexes, the rank
 *      profile, the query inputs (JSON -> cells, via tensor_json.c);
 *   2. nearestNeighbor: the targetHits documents closest to the query tensor
 *      among those passing the rest of a top-level AND, exactly or through
 *      the field's HNSW graph (nearest.c);
 *   3. match: every live document is tested against the where tree, reading
 *      attributes straight from the store's memory map (strings and
 *      non-attribute fields through store_get);
 *   4. first phase over every match, in blocks; the hits at or below the
 *      profile's rank-score-drop-limit leave; the best rerank-count by
 *      first-phase score get the second phase;
 *   5. the global phase, over the best global-phase rerank-count of what the
 *      second phase left, all at once (its normalizers compare them).
 *   After the second and the global phase, the hits each re-ranked and
 *   scored at or below its rank-score-drop-limit leave.
 * Then the hits of all types are ordered by score: re-ranked hits by their
 * second-phase score; the others keep their first-phase order, shifted to
 * score no higher than the lowest re-ranked hit of their type (Vespa's
 * rule, after each phase that re-ranks); ties go to re-ranked hits, then
 * to the lower document id, so that equal scores give a stable order.  Summaries (fields, matchfeatures, summaryfeatures; summary.c) are
 * made for the requested page only, and the result is Vespa's result JSON.
 *
 * Invariant: every pointer into the store (attributes, document ids) is used
 * before the read transaction ends, at the end of strata_query_json().
 *
 * Ranking's allocations are counted apart (strata_stats' rank_allocs): every
 * call into rank_query_* is bracketed by base_alloc_thread_count(), which
 * counts this thread's allocations only, and what the engine's own feature
 * callback allocates inside such a call is taken back out.  rank/ and the
 * runtime run on the calling thread, so the count is theirs exactly.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grouping.h"
#include "query_int.h"

#define MAX_MATCHES ((size_t)1 << 31)
#define BLOCK ENG_RANK_BLOCK



static const struct store_value *doc_value(struct qstate *qs, struct dtstate *ds, uint32_t lid,
                                           int fidx);

/* A field whose value for ranking is its column attribute in the store. */
static int in_column(const struct rank_field *rf)
{
	return !rf->imported && rf->type != RANK_FT_ARRAY && rf->type != RANK_FT_WSET &&
	       rf->type != RANK_FT_STRING && !eng_field_mapped(rf);
}

static const void *attr_cb(void *ud, int field, uint32_t lid)
{
	struct dtstate *ds = ud;
	const struct rank_field *rf = rank_schema_field(ds->dt->schema, field);
	if (in_column(rf))
		return store_attr(ds->txn, ds->dt->store_id, field, lid);
	if (rf->imported) /* the referenced document's (fieldtypes.c) */
		return eng_import_attr(ds->qs->db, ds->txn, rf,
		                       doc_value(ds->qs, ds, lid, rf->import_ref), &ds->sparse);
	if (rf->type == RANK_FT_ARRAY || rf->type == RANK_FT_WSET || rf->type == RANK_FT_STRING)
		return eng_rank_value(rf, doc_value(ds->qs, ds, lid, field), &ds->sparse);
	/* Read from the document; the value lives until the query ends.  A
	 * value that cannot be read (memory) reads as the empty tensor. */
	const struct store_value *sv = doc_value(ds->qs, ds, lid, field);
	if (!sv || !sv->set)
		return NULL;
	return eng_sparse_from_text(rf, sv->s, sv->n, &ds->sparse);
}

static void attr_rows_cb(void *ud, int field, const uint32_t *lids, size_t n, const void **out)
{
	struct dtstate *ds = ud;
	if (in_column(rank_schema_field(ds->dt->schema, field))) {
		store_attr_rows(ds->txn, ds->dt->store_id, field, lids, n, out);
		return;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = attr_cb(ud, field, lids[i]);
}

static const struct store_value *wset_value(void *ud, int field, uint32_t lid)
{
	struct dtstate *ds = ud;
	return doc_value(ds->qs, ds, lid, field);
}

static double text_cb(void *ud, int feature, int field, uint32_t lid)
{
	struct dtstate *ds = ud;
	if (feature == RANK_TF_RAW_SCORE || feature == RANK_TF_ITEM_RAW_SCORE) {
		int nomem = 0;
		double v = eng_wset_feature(ds->m.wset, feature, field, feature == RANK_TF_ITEM_RAW_SCORE
		                            ? rank_profile_item_label(ds->prof, field) : NULL, lid,
		                            wset_value, ds, &nomem);
		ds->qs->match_nomem |= nomem; /* the query fails at its end */
		return v;
	}
	if (feature == RANK_TF_NATIVE_PROX_SUM || feature == RANK_TF_NATIVE_PROX_WEIGHT)
		return eng_native_proximity(ds->txn, ds->dt, ds->prof, ds->m.text, feature, field, lid);
	if (feature >= RANK_TF_SUBQUERIES_LSB) /* of predicate and position fields */
		return eng_typed_feature(ds->qs->yql->where, rank_schema_field(ds->dt->schema, field),
		                         feature, doc_value(ds->qs, ds, lid, field));
	return eng_text_feature(ds->txn, ds->dt, ds->prof, ds->m.text, feature, field, lid);
}

static double term_cb(void *ud, int feature, int field, int term, uint32_t lid)
{
	struct dtstate *ds = ud;
	if (feature == RANK_TT_ATTR_MATCH)
		return eng_attr_match(ds->qs->yql->where, ds->dt, field,
		                      doc_value(ds->qs, ds, lid, field), term);
	if (feature == RANK_TT_FIELD_MATCH)
		return eng_field_match(ds->txn, ds->dt, ds->m.text, field, lid, term);
	if (feature == RANK_TT_TEXT_SIMILARITY)
		return eng_text_similarity(ds->txn, ds->dt, ds->m.text, field, lid, term);
	if (feature == RANK_TT_ELEM_BM25)
		return eng_text_elementwise(ds->txn, ds->dt, ds->prof, ds->m.text, field, term, lid);
	if (feature == RANK_TT_ELEM_SIMILARITY)
		return ds->m.text ? eng_element_similarity(ds->txn, ds->dt, ds->m.text, field, lid) : 0;
	return eng_text_term(ds->txn, ds->dt, ds->m.text, feature, field, term, lid);
}

/* ---- the request's inputs -------------------------------------------------------------- */

/* The value of input name ("q" of query(q)) in the request, or NULL. */
static const json_t *find_input(const json_t *req, const char *name)
{
	char key[300];
	snprintf(key, sizeof key, "input.query(%s)", name);
	const json_t *v = eng_request_param(req, key);
	if (v)
		return v;
	snprintf(key, sizeof key, "ranking.features.query(%s)", name);
	return json_object_get(req, key);
}

/* Input names given in the request: each key "input.query(X)" etc. */
static int input_name(const char *key, char *name, size_t n)
{
	static const char *prefixes[] = { "input.query(", "query(", "ranking.features.query(" };
	for (size_t i = 0; i < 3; i++) {
		size_t pl = strlen(prefixes[i]);
		size_t kl = strlen(key);
		if (kl > pl + 1 && !strncmp(key, prefixes[i], pl) && key[kl - 1] == ')') {
			if (kl - pl - 1 >= n)
				return 0;
			memcpy(name, key + pl, kl - pl - 1);
			name[kl - pl - 1] = 0;
			return 1;
		}
	}
	return 0;
}

static int check_inputs_declared(struct qstate *qs, const json_t *obj, const char *profile)
{
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)obj, key, v) {
		char name[256];
		if (!input_name(key, name, sizeof name))
			continue;
		int found = 0;
		for (int i = 0; i < qs->nds && !found; i++)
			found = rank_profile_input_index(qs->ds[i].prof, name) >= 0;
		if (!found)
			return base_err(qs->err, STRATA_NOT_FOUND,
			                "query input 'query(%s)' is not declared in rank profile '%s'",
			                name, profile);
	}
	return 0;
}

/* ---- resolving the where tree for one document type ------------------------------------- */

/* The index of field name in dt; or, for "f.path" (field names have no
 * '.'), of the collection or struct field f, with *path the rest.  -1 when
 * none. */
static int field_path(const struct eng_doctype *dt, const char *name, const char **path)
{
	const char *dot = strchr(name, '.');
	*path = NULL;
	if (!dot)
		return rank_schema_field_index(dt->schema, name);
	for (int i = 0; i < dt->nfields; i++) {
		const char *f = rank_schema_field(dt->schema, i)->name;
		if (dt->fields[i].type == STORE_T_JSON && strlen(f) == (size_t)(dot - name) &&
		    strncmp(f, name, (size_t)(dot - name)) == 0) {
			*path = dot + 1;
			return i;
		}
	}
	return -1;
}

/* A condition on a value inside a collection or struct field (f.path). */
static int resolve_path(struct qstate *qs, const struct yql_node *n, const struct eng_doctype *dt,
                        const char *path)
{
	const struct rank_field *rf = rank_schema_field(dt->schema, n->fidx);
	int leaf = eng_cvalue_path_type(rf, path);
	const char *want = n->kind == YQL_CONTAINS ? "a string" : "a number";
	if (leaf && (n->kind == YQL_CONTAINS ? leaf == RANK_FT_STRING
	                                     : n->kind != YQL_NN && leaf >= RANK_FT_INT &&
	                                       leaf <= RANK_FT_DOUBLE))
		return 0;
	if (!leaf)
		return base_err(qs->err, STRATA_INVALID_ARGUMENT,
		                "yql:1:%d: '%s' names no value inside field '%s'", n->col, n->field,
		                rf->name);
	return base_err(qs->err, STRATA_INVALID_ARGUMENT, "yql:1:%d: '%s' is not %s", n->col,
	                n->field, n->kind == YQL_NN ? "a tensor attribute" : want);
}

/* Set fidx on every node for dt (-1: the type lacks the field, so the
 * condition is false there); check that each field suits its condition
 * (its row of eng_ops). */
static int resolve(struct qstate *qs, struct yql_node *n, struct eng_doctype *dt, int *nn_count)
{
	const struct eng_op *op = eng_ops[n->kind];
	if (op->connective) {
		for (int i = 0; i < n->nkids; i++) {
			int rc = resolve(qs, n->kids[i], dt, nn_count);
			if (rc)
				return rc;
		}
		return 0;
	}
	if (!n->field)
		return 0;
	const char *path;
	n->fidx = field_path(dt, n->field, &path);
	if (n->fidx < 0)
		return 0;
	if (path)
		return resolve_path(qs, n, dt, path);
	int rc = 0;
	if (rank_schema_field(dt->schema, n->fidx)->type == RANK_FT_POSITION)
		rc = eng_typed_check(rank_schema_field(dt->schema, n->fidx), n, qs->err);
	else if (op->check)
		rc = op->check(dt, n, qs->err);
	*nn_count += !rc && n->kind == YQL_NN;
	return rc;
}

/* Every field named in the tree must exist in at least one document type. */
static int check_fields(struct qstate *qs, const struct yql_node *n)
{
	if (eng_ops[n->kind]->connective) {
		for (int i = 0; i < n->nkids; i++) {
			int rc = check_fields(qs, n->kids[i]);
			if (rc)
				return rc;
		}
		return 0;
	}
	if (!n->field)
		return 0;
	const char *path;
	for (int i = 0; i < qs->nds; i++)
		if (field_path(qs->ds[i].dt, n->field, &path) >= 0)
			return 0;
	return base_err(qs->err, STRATA_NOT_FOUND, "yql:1:%d: field '%s' not found", n->col,
	                n->field);
}

/* The nearestNeighbor items of the tree n into v (*k of them, at most max). */
static void find_nn(struct yql_node *n, struct yql_node **v, int *k, int max)
{
	if (n->kind == YQL_NN && *k < max)
		v[(*k)++] = n;
	for (int i = 0; i < n->nkids; i++)
		find_nn(n->kids[i], v, k, max);
}

/* ---- the documents' values, for the operators ------------------------------------------- */

static const struct store_value *doc_value(struct qstate *qs, struct dtstate *ds, uint32_t lid,
                                           int fidx)
{
	if (qs->vals_ds != ds || qs->vals_lid != lid) {
		memset(qs->vals, 0, qs->vals_size);
		qs->vals_ds = NULL;
		if (store_get(qs->txn, ds->dt->store_id, lid, qs->vals, NULL) != 0)
			return NULL;
		qs->vals_ds = ds;
		qs->vals_lid = lid;
	}
	if (rank_schema_field(ds->dt->schema, fidx)->imported && !qs->vals[fidx].set &&
	    eng_imports_fill(qs->db, qs->txn, ds->dt, fidx, qs->vals, &ds->sparse))
		qs->match_nomem = 1; /* read from the referenced document when asked for */
	return qs->vals[fidx].set ? &qs->vals[fidx] : NULL;
}

/* struct eng_match's reader. */
static const struct store_value *match_value(void *ud, uint32_t lid, int fidx)
{
	struct dtstate *ds = ud;
	return doc_value(ds->qs, ds, lid, fidx);
}

static int eval(struct qstate *qs, struct dtstate *ds, const struct yql_node *n, uint32_t lid)
{
	int m = eng_match_node(&ds->m, n, lid);
	qs->match_nomem |= ds->m.nomem;
	return m;
}

/* ---- nearest neighbours (nearest.c) ---------------------------------------------------- */

/* struct eng_nn's callbacks: the filter is the rest of the top-level AND. */
static int nn_filter(void *ud, uint32_t lid)
{
	struct dtstate *ds = ud;
	ds->m.nn_true = 1;
	int m = eval(ds->qs, ds, ds->qs->yql->where, lid);
	ds->m.nn_true = 0;
	return ds->qs->match_nomem ? STRATA_NOMEM : m;
}

static double nn_distance(void *ud, uint32_t lid)
{
	struct dtstate *ds = ud;
	uint64_t a = mark();
	double d = rank_query_nn_distance(ds->rq, &ds->docs, ds->nn_field, lid);
	charge(ds->qs, a);
	return d;
}

/* The NN set of ds: the target_hits closest documents among those that pass
 * the filter (the other operands of a top-level AND). */
static int nn_set(struct qstate *qs, struct dtstate *ds, struct yql_node *nn)
{
	struct yql_node *root = qs->yql->where;
	int filtered = 0;
	for (int i = 0; root->kind == YQL_AND && i < root->nkids; i++)
		filtered |= root->kids[i] == nn;
	struct eng_nn r = {
		.txn = qs->txn, .doctype = ds->dt->store_id, .field = nn->fidx,
		.graph = ds->dt->fields[nn->fidx].hnsw_metric != 0,
		.approximate = nn->approximate,
		.target_hits = (uint32_t)nn->target_hits, .explore = (uint32_t)nn->explore,
		.tune = ds->nn_tune, .filter = filtered ? nn_filter : NULL, .distance = nn_distance, .ud = ds,
	};
	ds->nn_field = nn->fidx;
	r.query = rank_query_nn_cells(ds->rq, nn->fidx, &r.ncells);
	struct eng_nnset *s = &ds->nn[ds->nnn];
	int rc = eng_nn_set(&r, &s->lids, &s->n, qs->err);
	if (!rc) {
		s->node = nn;
		ds->nnn++;
	}
	ds->m.nn = ds->nn;
	ds->m.nnn = ds->nnn;
	return rc;
}

/* At most RANK_MAX_NN nearestNeighbor items, on as many fields (the rank
 * features name an item by its field). */
static int check_nns(struct qstate *qs, struct dtstate *ds, int count)
{
	struct yql_node *nns[RANK_MAX_NN];
	int n = 0;
	if (count > RANK_MAX_NN)
		return base_err(qs->err, STRATA_LIMIT, "yql: more than %d nearestNeighbor items",
		                RANK_MAX_NN);
	find_nn(qs->yql->where, nns, &n, RANK_MAX_NN);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			if (nns[i]->fidx >= 0 && nns[i]->fidx == nns[j]->fidx)
				return base_err(qs->err, STRATA_NOT_IMPLEMENTED,
				                "yql:1:%d: a second nearestNeighbor on '%s' (at column %d) "
				                "is not supported: one item per field", nns[i]->col,
				                nns[i]->field, nns[j]->col);
	(void)ds;
	return 0;
}

/* ---- per document type ---------------------------------------------------------------- */

/* A new hit of document lid, field by field (memset or a compound literal
 * of the struct compiles to rep stos, several times slower per hit). */
static inline void hit_init(struct hit *h, struct dtstate *ds, uint32_t lid, double first)
{
	h->ds = ds;
	h->lid = lid;
	h->tier = 0;
	h->first = first;
	h->score = 0;
	h->docid = NULL; /* read when a tie or the result needs it (eng_hit_docid) */
}

static int add_hit(struct qstate *qs, struct dtstate *ds, uint32_t lid)
{
	if (qs->nhits == qs->cap) {
		int rc = base_grow((void **)&qs->hits, &qs->cap, qs->nhits + 1, sizeof *qs->hits,
		                   MAX_MATCHES);
		if (rc)
			return rc == STRATA_NOMEM ? base_nomem(qs->err, "matches")
			                          : base_err(qs->err, rc, "too many matches");
	}
	hit_init(&qs->hits[qs->nhits++], ds, lid, 0);
	return 0;
}


static int score_cmp(double a, double b)
{
	/* NaN sorts last */
	if (isnan(a) || isnan(b))
		return isnan(a) - isnan(b);
	return a > b ? -1 : a < b ? 1 : 0;
}

static int first_cmp(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;
	int c = score_cmp(x->first, y->first);
	return c ? c : strcmp(eng_hit_docid(x), eng_hit_docid(y));
}

static int final_cmp(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;
	int c = score_cmp(x->score, y->score);
	if (c)
		return c;
	if (x->tier != y->tier)
		return y->tier - x->tier;
	return strcmp(eng_hit_docid(x), eng_hit_docid(y));
}

/* The score cmp (first_cmp or final_cmp) orders by before anything else:
 * a hit whose key is below another's comes after it, whatever the rest
 * (a NaN compares false with everything, so cmp decides). */
static double cmp_key(int (*cmp)(const void *, const void *), const struct hit *h)
{
	return cmp == first_cmp ? h->first : h->score;
}

/* Make h[i] sink below its children in a heap of the k kept hits whose top
 * is the worst of them (cmp orders best first). */
static void sift(struct hit *h, size_t k, size_t i, int (*cmp)(const void *, const void *))
{
	for (;;) {
		size_t w = i, l = 2 * i + 1, r = l + 1;
		if (l < k && cmp(&h[l], &h[w]) > 0)
			w = l;
		if (r < k && cmp(&h[r], &h[w]) > 0)
			w = r;
		if (w == i)
			return;
		struct hit t = h[i];
		h[i] = h[w];
		h[w] = t;
		i = w;
	}
}

/* Put the k best of h[0..n) first, in cmp's order, the others after them in
 * no particular order.  cmp is a total order (ties go by document id), so
 * the k come out exactly as a full sort would place them; keeping them in
 * a heap costs O(n log k) where the full sort of every hit, for the page
 * or the re-ranked few, cost O(n log n). */
static void sort_top(struct hit *h, size_t n, size_t k, int (*cmp)(const void *, const void *))
{
	if (n == 0 || k == 0)
		return;
	if (k >= n / 4) {
		qsort(h, n, sizeof *h, cmp);
		return;
	}
	for (size_t i = k / 2; i-- > 0;)
		sift(h, k, i, cmp);
	double worst = cmp_key(cmp, &h[0]);
	for (size_t i = k; i < n; i++) {
		if (cmp_key(cmp, &h[i]) < worst)
			continue; /* plainly worse than the worst kept */
		if (cmp(&h[i], &h[0]) < 0) {
			struct hit t = h[i];
			h[i] = h[0];
			h[0] = t;
			sift(h, k, 0, cmp);
			worst = cmp_key(cmp, &h[0]);
		}
	}
	qsort(h, k, sizeof *h, cmp);
}

/* The hits base+nre.. base+n that a phase did not re-rank keep their order
 * but are shifted to score no higher than the lowest re-ranked hit, as
 * Vespa does, so that relevance never increases down the result.  The
 * re-ranked come first; their order before the phase was by cmp. */
static void shift_rest(struct qstate *qs, size_t base, size_t nre, size_t n,
                       int (*cmp)(const void *, const void *), int by_first)
{
	if (!nre || nre >= n)
		return;
	size_t best = base + nre; /* the best hit not re-ranked */
	double top = cmp_key(cmp, &qs->hits[best]);
	for (size_t i = base + nre + 1; i < base + n; i++)
		if (!(cmp_key(cmp, &qs->hits[i]) < top) && cmp(&qs->hits[i], &qs->hits[best]) < 0) {
			best = i;
			top = cmp_key(cmp, &qs->hits[best]);
		}
	double low = INFINITY;
	double high = by_first ? qs->hits[best].first : qs->hits[best].score;
	for (size_t i = 0; i < nre; i++)
		if (qs->hits[base + i].score < low)
			low = qs->hits[base + i].score;
	double shift = isfinite(low) && isfinite(high) && high > low ? low - high : 0;
	for (size_t i = nre; i < n; i++)
		qs->hits[base + i].score = (by_first ? qs->hits[base + i].first
		                                     : qs->hits[base + i].score) + shift;
}

/* The rank-score-drop-limit of phase (2 or 3), which re-ranked the first
 * *nre of the *n hits at base (the last of the query's hits): those it
 * scored the limit or less, or NaN, go; both counts shrink. */
static void drop_reranked(struct qstate *qs, struct dtstate *ds, int phase, size_t base,
                          size_t *nre, size_t *n)
{
	double limit;
	if (!rank_profile_phase_drop_limit(ds->prof, phase, &limit))
		return;
	size_t kept = 0, gone = 0;
	for (size_t i = 0; i < *n; i++) {
		if (i < *nre && !(qs->hits[base + i].score > limit)) {
			gone++;
			continue;
		}
		qs->hits[base + kept++] = qs->hits[base + i];
	}
	*nre -= gone;
	*n = kept;
	qs->nhits = base + kept;
}

/* Second phase over the best rerank-count of the *n hits at base (fewer
 * after its rank-score-drop-limit). */
static int second_phase(struct qstate *qs, struct dtstate *ds, size_t base, size_t *np)
{
	size_t n = *np;
	if (!rank_profile_has_second_phase(ds->prof) || !n)
		return 0;
	uint32_t lids[BLOCK];
	double scores[BLOCK], firsts[BLOCK];
	int rr = rank_profile_rerank_count(ds->prof);
	size_t nre = rr < 0 ? 0 : ((size_t)rr < n ? (size_t)rr : n);
	sort_top(qs->hits + base, n, nre, first_cmp);
	for (size_t i = nre; i < n; i++)
		qs->hits[base + i].tier = 0;
	int split = eng_second_phase_split(qs, ds, base, nre);
	if (split < 0)
		return split;
	for (size_t off = 0; !split && off < nre; off += BLOCK) {
		int stop = off ? eng_deadline_check(&qs->dl, qs->err) : 0;
		if (stop < 0)
			return stop;
		if (stop) { /* the candidates not re-ranked keep their first-phase order */
			for (size_t i = off; i < nre; i++)
				qs->hits[base + i].tier = 0;
			nre = off;
			break;
		}
		size_t k = nre - off < BLOCK ? nre - off : BLOCK;
		for (size_t i = 0; i < k; i++) {
			lids[i] = qs->hits[base + off + i].lid;
			firsts[i] = qs->hits[base + off + i].first;
		}
		uint64_t a = mark();
		int rc = rank_query_second_phase(ds->rq, &ds->docs, lids, firsts, k, scores, qs->err);
		charge(qs, a);
		if (rc)
			return rc;
		for (size_t i = 0; i < k; i++)
			qs->hits[base + off + i].score = scores[i];
	}
	drop_reranked(qs, ds, 2, base, &nre, np);
	shift_rest(qs, base, nre, *np, first_cmp, 1);
	return 0;
}

/* Global phase over the best global rerank-count of the n hits at base, by
 * their score after the second phase, all in one call (its normalizers
 * compare the candidates with each other).  They get tier 2. */
static int global_phase(struct qstate *qs, struct dtstate *ds, size_t base, size_t n)
{
	if (!rank_profile_has_global_phase(ds->prof) || !n)
		return 0;
	int gr = rank_profile_global_rerank_count(ds->prof);
	size_t ng = gr < 0 ? 0 : ((size_t)gr < n ? (size_t)gr : n);
	if (!ng)
		return 0;
	sort_top(qs->hits + base, n, ng, final_cmp);
	size_t nv = (size_t)rank_profile_global_norms(ds->prof) * ng;
	size_t bytes = ng * (sizeof(uint32_t) + 2 * sizeof(double)) + nv * sizeof(double);
	double *firsts = base_alloc(bytes);
	if (!firsts)
		return base_nomem(qs->err, "global phase of %zu hits", ng);
	double *scores = firsts + ng, *vals = scores + ng;
	uint32_t *lids = (uint32_t *)(vals + nv);
	for (size_t i = 0; i < ng; i++) {
		lids[i] = qs->hits[base + i].lid;
		firsts[i] = qs->hits[base + i].first;
	}
	int rc = eng_global_phase_split(qs, ds, lids, firsts, ng, vals, scores);
	if (rc == 0) {
		uint64_t a = mark();
		rc = rank_query_global_phase(ds->rq, &ds->docs, lids, firsts, ng, scores, qs->err);
		charge(qs, a);
	}
	rc = rc < 0 ? rc : 0;
	if (!rc) {
		for (size_t i = 0; i < ng; i++) {
			qs->hits[base + i].score = scores[i];
			qs->hits[base + i].tier = 2;
		}
		drop_reranked(qs, ds, 3, base, &ng, &n);
		shift_rest(qs, base, ng, n, final_cmp, 0);
	}
	base_free(firsts, bytes);
	return rc;
}

/* Every one of the documents 0 .. nlive - 1 matches (where true, no
 * gaps): their hits in one loop, as the general one makes them, up to
 * the room the hit array has; *next gets the first document left for
 * the general loop.  Returns 0, or 1 when the deadline stopped the match
 * (the first phase then scores what was matched), or an error. */
static int match_all(struct qstate *qs, struct dtstate *ds, uint32_t nlive, uint32_t *next)
{
	size_t room = qs->cap - qs->nhits;
	uint32_t n = nlive < room ? nlive : (uint32_t)room, lid = 0;
	*next = 0;
	if (!n)
		return 0; /* no room (and perhaps no array yet): the general loop */
	struct hit *h = qs->hits + qs->nhits;
	while (lid < n) {
		if (ds->covered && ds->covered % BLOCK == 0) {
			int stop = eng_deadline_check(&qs->dl, qs->err);
			if (stop < 0)
				return stop;
			if (stop) {
				*next = nlive; /* nothing left */
				qs->nhits += lid;
				return 1;
			}
		}
		uint32_t end = (uint32_t)(BLOCK - ds->covered % BLOCK);
		end = end < n - lid ? lid + end : n;
		for (; lid < end; lid++)
			hit_init(&h[lid], ds, lid, (double)ds->covered++);
	}
	qs->nhits += n;
	*next = n;
	return 0;
}

/* Test the documents of ds against the where tree, adding the matches:
 * those iterator it gives (NULL: every live document in turn; when the
 * live ids are 0 .. nlive - 1, by counting instead of stepping a cursor
 * through the documents).  Returns 0, 1 when the deadline stopped it, or
 * an error. */
static int match_docs(struct qstate *qs, struct dtstate *ds, struct eng_iter *it)
{
	uint32_t nlive = 0, lid = 0;
	int dense = store_dense(qs->txn, ds->dt->store_id, &nlive), rc;
	if (!it && dense && qs->yql->where->kind == YQL_TRUE && (rc = match_all(qs, ds, nlive, &lid)))
		return rc;
	for (;; lid++) {
		if (it) {
			if ((rc = it->seek(it, &lid)) != 0)
				return rc == STRATA_NOT_FOUND ? 0 : rc;
			if (dense && lid >= nlive)
				return 0; /* no live document after nlive */
			uint32_t live = lid;
			if (!dense && store_next(qs->txn, ds->dt->store_id, &live) != 0)
				return 0;
			if (live != lid) { /* removed: on from the next live one */
				lid = live - 1;
				continue;
			}
		} else if (dense ? lid >= nlive : store_next(qs->txn, ds->dt->store_id, &lid) != 0) {
			return 0;
		}
		int stop = ds->covered && ds->covered % BLOCK == 0 ? eng_deadline_check(&qs->dl, qs->err)
		                                                   : 0;
		if (stop)
			return stop;
		if (eval(qs, ds, qs->yql->where, lid)) {
			if ((rc = add_hit(qs, ds, lid)) != 0)
				return rc;
			/* until the first phase scores it: how many documents came before it */
			qs->hits[qs->nhits - 1].first = (double)ds->covered;
		}
		ds->covered++;
		if (qs->match_nomem)
			return base_nomem(qs->err, "matching a collection value");
		if (lid == UINT32_MAX)
			return 0;
	}
}

/* Rank ds's matches, the hits from base on: the phases, the drop limit. */
static int ranked(struct qstate *qs, struct dtstate *ds, size_t base)
{
	int rc;
	size_t n = qs->nhits - base;
	if (!n)
		return 0;
	if ((rc = eng_first_phase(qs, ds, base, n)) != 0)
		return rc;
	n = qs->nhits - base; /* fewer when the deadline stopped the first phase */
	double limit;
	if (rank_profile_drop_limit(ds->prof, &limit)) {
		/* rank-score-drop-limit: hits scoring the limit or less go (NaN too). */
		size_t kept = 0;
		for (size_t i = 0; i < n; i++)
			if (qs->hits[base + i].first > limit)
				qs->hits[base + kept++] = qs->hits[base + i];
		qs->nhits = base + kept;
		n = kept;
	}
	if ((rc = second_phase(qs, ds, base, &n)) != 0)
		return rc;
	return global_phase(qs, ds, base, n);
}

/* Whether ds's matches need no more than the page's best by the first
 * phase, and topk.c can find those (eng_topk_fits). */
static int topk_fits(struct qstate *qs, struct dtstate *ds)
{
	double limit;
	return !qs->yql->norder && !qs->yql->ngroupings && !qs->collapse &&
	       qs->yql->where->kind != YQL_TRUE &&
	       !rank_profile_has_second_phase(ds->prof) && !rank_profile_has_global_phase(ds->prof) &&
	       !rank_profile_drop_limit(ds->prof, &limit) &&
	       eng_topk_fits(&ds->m, qs->yql->where, ds->prof);
}

/* eng_topk_run's keep: a hit of lid, numbered in order for the deadline. */
static int keep_hit(void *ud, uint32_t lid)
{
	struct dtstate *ds = ud;
	int rc = add_hit(ds->qs, ds, lid);
	if (!rc)
		ds->qs->hits[ds->qs->nhits - 1].first = (double)ds->covered++;
	return rc;
}

static int run_doctype(struct qstate *qs, struct dtstate *ds)
{
	struct yql_node *nns[RANK_MAX_NN];
	int nnn = 0, rc;
	find_nn(qs->yql->where, nns, &nnn, RANK_MAX_NN);
	/* open until the query ends: rank features and summaries read it (and
	 * a nearestNeighbor's filter matches with it) */
	if ((rc = eng_text_open(qs->txn, ds->dt, qs->yql->where, &ds->m.text, qs->err)) != 0 ||
	    (rc = eng_wset_open(qs->txn, ds->dt, qs->yql->where, &ds->m.wset, qs->err)) != 0 ||
	    (rc = eng_same_open(qs->txn, ds->dt, qs->yql->where, &ds->m.same, qs->err)) != 0 ||
	    (rc = eng_wand_open(qs->txn, ds->dt, ds->m.text, qs->yql->where, &ds->m.wand,
	                        qs->err)) != 0)
		return rc;
	/* every item's query tensor first: a filter may hold the others */
	for (int i = 0; i < nnn; i++) {
		struct yql_node *nn = nns[i];
		if (nn->fidx < 0)
			continue;
		uint64_t a = mark();
		rc = rank_query_set_nn(ds->rq, nn->field, nn->input, qs->err);
		if (!rc && nn->label)
			rc = rank_query_set_nn_label(ds->rq, nn->field, nn->label, qs->err);
		charge(qs, a);
		if (rc)
			return rc;
	}
	for (int i = 0; i < nnn; i++)
		if (nns[i]->fidx >= 0 && (rc = nn_set(qs, ds, nns[i])) != 0)
			return rc;
	size_t base = qs->nhits;
	if (topk_fits(qs, ds)) {
		/* the candidates of the page's hits only, the others counted */
		uint64_t matched;
		rc = eng_topk_run(&ds->m, qs->yql->where, ds->prof, qs->want, &qs->dl, keep_hit, ds,
		                  &matched);
		if (rc < 0)
			return rc;
		ds->covered = matched;
		qs->counted += matched - (qs->nhits - base);
		return ranked(qs, ds, base);
	}
	/* The documents the where tree's iterator gives (a superset of its
	 * matches: each is tested), else every document. */
	struct eng_iter *it = NULL;
	if (qs->yql->where->kind != YQL_TRUE && (rc = eng_iter_open(&ds->m, qs->yql->where, &it)))
		return rc;
	uint64_t all = store_count(qs->txn, ds->dt->store_id);
	ds->span = it ? (it->est < all ? it->est : all) : 0;
	if (!it && qs->yql->where->kind == YQL_TRUE && all < MAX_MATCHES &&
	    base_grow((void **)&qs->hits, &qs->cap, qs->nhits + all, sizeof *qs->hits,
	              MAX_MATCHES) != 0) /* all match: room for all at once */
		return base_nomem(qs->err, "matches");
	rc = match_docs(qs, ds, it);
	eng_iter_close(it);
	if (rc < 0)
		return rc;
	return ranked(qs, ds, base);
}

/* An input with mapped dimensions, from the request's JSON value v. */
static int set_sparse_input(struct qstate *qs, struct dtstate *ds,
                            const struct rank_input_info *in, const json_t *v)
{
	struct eng_ttype t = { in->cell, in->rank, in->dims, in->dim_names };
	struct eng_sparse s;
	char what[300];
	snprintf(what, sizeof what, "query input 'query(%s)'", in->name);
	int rc = json_is_string(v) ? eng_sparse_from_literal(json_string_value(v), &t, &s, what, qs->err)
	                           : eng_sparse_from_json(v, &t, &s, what, qs->err);
	if (rc)
		return rc;
	uint64_t a = mark();
	rc = rank_query_set_input_sparse(ds->rq, in->name, s.nblocks, (const char *const *)s.labels,
	                                 s.cells, qs->err);
	charge(qs, a);
	eng_sparse_free(&s);
	return rc;
}

static int set_inputs(struct qstate *qs, struct dtstate *ds, const struct eng_request *rq)
{
	const json_t *req = rq->json;
	/* the `now` feature, as Vespa's rank property vespa.now sets it */
	if (rq->now)
		rank_query_set_now(ds->rq, json_number_value(rq->now));
	int ni = rank_profile_ninputs(ds->prof);
	for (int i = 0; i < ni; i++) {
		const struct rank_input_info *in = rank_profile_input(ds->prof, i);
		const json_t *v = find_input(req, in->name);
		if (!v)
			continue;
		int erc = eng_query_embed(qs->db, req, in, &v, &qs->embedded, qs->err);
		if (erc)
			return erc;
		int mapped = 0;
		for (int k = 0; k < in->rank; k++)
			mapped |= in->dims[k] < 0;
		if (mapped) {
			int rc = set_sparse_input(qs, ds, in, v);
			if (rc)
				return rc;
			continue;
		}
		if (in->implicit && !json_is_number(v))
			return base_err(qs->err, STRATA_INVALID_ARGUMENT,
			                "query input 'query(%s)': expected a number (rank profile '%s' "
			                "reads it without declaring it in its inputs)",
			                in->name, rank_profile_name(ds->prof));
		if (in->string && json_is_string(v)) {
			double h = rank_string_hash(json_string_value(v), json_string_length(v));
			int rc = rank_query_set_input(ds->rq, in->name, &h, 1, qs->err);
			if (rc)
				return rc;
			continue;
		}
		double *cells = base_alloc((in->ncells ? in->ncells : 1) * sizeof *cells);
		if (!cells)
			return base_nomem(qs->err, "query(%s)", in->name);
		struct eng_ttype t = { BASE_DT_DOUBLE, in->rank, in->dims, in->dim_names };
		char what[300];
		snprintf(what, sizeof what, "query input 'query(%s)'", in->name);
		int rc = eng_tensor_from_json(v, &t, 1, cells, what, qs->err);
		if (!rc) {
			uint64_t a = mark();
			rc = rank_query_set_input(ds->rq, in->name, cells, eng_ttype_cells(&t), qs->err);
			charge(qs, a);
		}
		base_free(cells, (in->ncells ? in->ncells : 1) * sizeof *cells);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- the whole request ------------------------------------------------------------------ */

static int pick_doctypes(struct qstate *qs)
{
	struct strata *db = qs->db;
	int n = qs->yql->all_sources ? db->ndoctypes : qs->yql->nsources;
	if (n == 0)
		return 0;
	qs->ds = base_calloc((size_t)n, sizeof *qs->ds);
	if (!qs->ds)
		return base_nomem(qs->err, "query");
	qs->ds_cap = n;
	for (int i = 0; i < n; i++) {
		struct eng_doctype *dt;
		if (qs->yql->all_sources) {
			dt = &db->doctypes[i];
		} else {
			dt = eng_doctype_find(db, qs->yql->sources[i]);
			if (!dt)
				return base_err(qs->err, STRATA_NOT_FOUND,
				                "yql: unknown source '%s': no such document type",
				                qs->yql->sources[i]);
			for (int k = 0; k < qs->nds; k++)
				if (qs->ds[k].dt == dt)
					dt = NULL;
			if (!dt)
				continue;
		}
		qs->ds[qs->nds++].dt = dt;
	}
	return 0;
}

/* ---- order by and grouping (grouping.c reads the hits through these) ---------------- */

static double hit_relevance(void *ud, size_t i)
{
	return ((struct qstate *)ud)->hits[i].score;
}

static void hit_value(void *ud, size_t i, const char *field, struct eng_hitval *v)
{
	struct qstate *qs = ud;
	const struct hit *h = &qs->hits[i];
	memset(v, 0, sizeof *v);
	int fi = rank_schema_field_index(h->ds->dt->schema, field);
	if (fi < 0)
		return;
	int t = h->ds->dt->fields[fi].type;
	const struct rank_field *rf = rank_schema_field(h->ds->dt->schema, fi);
	v->sort_desc = rf->sort_desc;
	v->sort_function = rf->sort_function;
	v->sort_primary = rf->sort_primary;
	v->store_type = rf->attribute || t == STORE_T_STRING ? t : 0;
	v->byte = rf->byte;
	if (t == STORE_T_STRING) {
		const struct store_value *sv = doc_value(qs, h->ds, h->lid, fi);
		if (sv) {
			v->kind = 2;
			v->s = sv->s;
			v->n = sv->n;
		}
	} else if (eng_numeric_type(t) && eng_num_value(&h->ds->m, h->lid, fi, &v->num)) {
		v->kind = 1;
		v->integral = t == STORE_T_INT || t == STORE_T_LONG || t == STORE_T_BOOL;
	}
}

/* A collection field, or a path into one ("attributes.key"), with simple
 * values: its index in dt and *path, what follows the field's name; -1
 * when name is none. */
static int collection_path(const struct eng_doctype *dt, const char *name, const char **path)
{
	size_t n = strcspn(name, ".");
	char base[256];
	if (n >= sizeof base)
		return -1;
	memcpy(base, name, n);
	base[n] = 0;
	int fi = rank_schema_field_index(dt->schema, base);
	if (fi < 0 || dt->fields[fi].type != STORE_T_JSON)
		return -1;
	const struct rank_field *rf = rank_schema_field(dt->schema, fi);
	*path = name[n] ? name + n + 1 : "";
	return !eng_field_mapped(rf) && eng_cvalue_path_simple(rf, *path) ? fi : -1;
}

struct collected {
	struct base_arena *a;
	struct eng_hitval *v;
	size_t n, cap;
};

static int collect_value(void *ud, const json_t *leaf)
{
	struct collected *c = ud;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 8;
		struct eng_hitval *v = base_arena_alloc(c->a, cap * sizeof *v, 8);
		if (!v)
			return -1;
		if (c->n)
			memcpy(v, c->v, c->n * sizeof *v);
		c->v = v;
		c->cap = cap;
	}
	struct eng_hitval *v = &c->v[c->n];
	memset(v, 0, sizeof *v);
	if (json_is_string(leaf)) {
		v->n = json_string_length(leaf);
		char *s = base_arena_alloc(c->a, v->n + 1, 1);
		if (!s)
			return -1;
		memcpy(s, json_string_value(leaf), v->n + 1);
		v->s = s;
		v->kind = 2;
	} else if (json_is_number(leaf) || json_is_boolean(leaf)) {
		v->kind = 1;
		v->integral = !json_is_real(leaf);
		v->num = json_is_boolean(leaf) ? json_is_true(leaf) : json_number_value(leaf);
	} else {
		return 0;
	}
	c->n++;
	return 0;
}

/* grouping's key of a collection: the values of field in hit i. */
static int hit_values(void *ud, size_t i, const char *field, struct base_arena *a,
                      struct eng_hitval **out, size_t *n)
{
	struct qstate *qs = ud;
	const struct hit *h = &qs->hits[i];
	const char *path;
	*out = NULL;
	*n = 0;
	int fi = collection_path(h->ds->dt, field, &path);
	if (fi < 0)
		return 0;
	const struct store_value *sv = doc_value(qs, h->ds, h->lid, fi);
	if (!sv)
		return 1;
	struct collected c = { a, NULL, 0, 0 };
	if (eng_cvalue_path_each(rank_schema_field(h->ds->dt->schema, fi), sv->s, sv->n, path,
	                         collect_value, &c) < 0)
		return -1;
	*out = c.v;
	*n = c.n;
	return 1;
}

/* grouping's summary(CLASS): hit i in that class (NULL: the request's). */
static int hit_json(void *ud, size_t i, const char *cls, json_t **out, struct strata_error *err)
{
	struct qstate *qs = ud;
	struct hit *h = &qs->hits[i];
	const struct rank_summary_class *keep = h->ds->summary;
	if (cls && !(h->ds->summary = rank_schema_summary(h->ds->dt->schema, cls))) {
		h->ds->summary = keep;
		return base_err(err, STRATA_NOT_FOUND, "summary(%s): document-summary '%s' not found "
		                "in schema '%s'", cls, cls, h->ds->dt->name);
	}
	int rc = eng_summary(qs, h, out);
	h->ds->summary = keep;
	return rc;
}

static int hit_tiebreak(void *ud, size_t i, size_t j)
{
	struct qstate *qs = ud;
	return final_cmp(&qs->hits[i], &qs->hits[j]);
}

/* order by: every hit in the order of its field values. */
static int order_hits(struct qstate *qs)
{
	struct eng_hits eh = { qs->nhits, qs, hit_relevance, hit_value, hit_json, hit_values,
	                       qs->now };
	size_t n = qs->nhits ? qs->nhits : 1;
	size_t *perm = base_alloc(n * sizeof *perm);
	struct hit *sorted = base_alloc(n * sizeof *sorted);
	int rc = !perm || !sorted ? base_nomem(qs->err, "order by")
	                          : eng_order_hits(qs->yql, &eh, hit_tiebreak, perm, qs->err);
	for (size_t i = 0; !rc && i < qs->nhits; i++)
		sorted[i] = qs->hits[perm[i]];
	if (!rc)
		memcpy(qs->hits, sorted, qs->nhits * sizeof *sorted);
	base_free(perm, n * sizeof *perm);
	base_free(sorted, n * sizeof *sorted);
	return rc;
}

/* The fields order by and grouping name: each an attribute (number or
 * string) of some document type of the query. */
static int check_attr(struct qstate *qs, const char *name, int col, const char *what)
{
	const char *src = strcmp(what, "sorting") ? "yql" : "sorting"; /* the text's name */
	int found = 0;
	for (int i = 0; i < qs->nds; i++) {
		struct eng_doctype *dt = qs->ds[i].dt;
		int fi = rank_schema_field_index(dt->schema, name);
		const char *path;
		if ((fi < 0 || dt->fields[fi].type == STORE_T_JSON) &&
		    collection_path(dt, name, &path) >= 0) {
			/* a collection: its values as group(field)'s keys, nowhere else */
			if (strcmp(what, "group()") != 0 && strcmp(what, "a map lookup") != 0)
				return base_err(qs->err, STRATA_NOT_IMPLEMENTED,
				                "%s:1:%d: %s of '%s', a collection, is not supported: "
				                "Strata reads a collection's values only as the key of "
				                "group(%s)", src, col, what, name, name);
			found = 1;
			continue;
		}
		if (!strcmp(what, "a map lookup")) /* NAME.value: NAME is no map */
			return base_err(qs->err, STRATA_INVALID_ARGUMENT,
			                "%s:1:%d: a map lookup needs a map field; '%.*s' is not one", src,
			                col, (int)strcspn(name, "."), name);
		if (fi < 0)
			continue;
		const struct store_field *f = &dt->fields[fi];
		if (!f->attribute || (f->type != STORE_T_STRING && !eng_numeric_type(f->type)))
			return base_err(qs->err, STRATA_INVALID_ARGUMENT,
			                "%s:1:%d: %s needs a number or string attribute; '%s' is not one",
			                src, col, what, name);
		found = 1;
	}
	if (!found && qs->nds)
		return base_err(qs->err, STRATA_NOT_FOUND, "%s:1:%d: field '%s' not found", src,
		                col, name);
	return 0;
}

static int grouping_attr(void *ud, const char *name, int col, const char *what)
{
	return check_attr(ud, name, col, what);
}

static int check_order_grouping(struct qstate *qs)
{
	const struct yql_query *q = qs->yql;
	int rc = 0;
	for (int i = 0; !rc && i < q->norder; i++)
		if (q->order[i].field) /* else [relevance] */
			rc = check_attr(qs, q->order[i].field, q->order[i].col,
			                q->order[i].from_sorting ? "sorting" : "order by");
	return rc ? rc : eng_grouping_fields(q, grouping_attr, qs);
}

/* presentation.format.tensors short-value: a tensor {"type": T, "values" |
 * "cells" | "blocks": V} in a hit's fields becomes V. */
static void short_values(json_t *fields)
{
	const char *k;
	json_t *v;
	json_object_foreach(fields, k, v) {
		if (!strcmp(k, "summaryfeatures") || !strcmp(k, "matchfeatures")) {
			short_values(v);
			continue;
		}
		const json_t *t = json_object_get(v, "type");
		if (json_object_size(v) != 2 || !json_is_string(t) ||
		    strncmp(json_string_value(t), "tensor", 6))
			continue;
		static const char *const forms[] = { "values", "cells", "blocks" };
		for (int i = 0; i < 3; i++) {
			json_t *inner = json_object_get(v, forms[i]);
			if (inner) {
				json_object_set(fields, k, inner); /* v's last reference goes */
				break;
			}
		}
	}
}

static int build_result(struct qstate *qs, size_t offset, size_t nhits, char **result)
{
	json_t *top = json_object(), *root = json_object(), *fields = json_object();
	json_t *children = json_array();
	int rc = 0;
	double t_fetch = base_now();
	/* presentation.timing: Vespa's "timing" before "root", its times set below */
	int no_timing = qs->timing && top && json_object_set_new(top, "timing", json_object());
	uint64_t docs = 0, covered = 0;
	for (int i = 0; i < qs->nds; i++) {
		const struct dtstate *ds = &qs->ds[i];
		uint64_t n = store_count(qs->txn, ds->dt->store_id);
		docs += n;
		/* a weakAnd's matches only were visited: their share of the documents */
		covered += !qs->dl.passed ? n : ds->span ? n * ds->covered / ds->span : ds->covered;
	}
	json_t *cov = eng_coverage_json(docs, covered, qs->dl.passed);
	if (!top || !root || !fields || !cov || !children || no_timing ||
	    json_object_set_new(root, "id", json_string("toplevel")) ||
	    json_object_set_new(root, "relevance", json_real(1.0)) ||
	    json_object_set_new(fields, "totalCount",
	                        json_integer((json_int_t)(qs->nhits + qs->counted))) ||
	    json_object_set(root, "fields", fields) ||
	    json_object_set(root, "coverage", cov) || json_object_set(top, "root", root)) {
		rc = base_nomem(qs->err, "result");
		goto out;
	}
	/* Vespa's grouping result: a "group:root:N" hit for each grouping
	 * request, before the others */
	for (int req = 0; req < eng_grouping_requests(qs->yql); req++) {
		struct eng_hits eh = { qs->nhits, qs, hit_relevance, hit_value, hit_json, hit_values,
	                       qs->now };
		json_t *g = NULL;
		if ((rc = eng_grouping_json(qs->yql, req, &eh, &g, qs->err)))
			goto out;
		if (json_array_append_new(children, g)) {
			rc = base_nomem(qs->err, "result");
			goto out;
		}
	}
	for (size_t i = offset; i < qs->nshown && i < offset + nhits; i++) {
		json_t *child = NULL;
		rc = eng_summary(qs, &qs->hits[i], &child);
		if (rc)
			goto out;
		if (qs->short_value)
			short_values(json_object_get(child, "fields"));
		if (json_array_append_new(children, child)) {
			rc = base_nomem(qs->err, "result");
			goto out;
		}
	}
	if (qs->timing) { /* seconds, as Vespa's */
		double end = base_now();
		json_t *t = json_pack("{s:f, s:f, s:f}", "querytime", t_fetch - qs->t0,
		                      "summaryfetchtime", end - t_fetch, "searchtime", end - qs->t0);
		int bad = !t || json_object_update(json_object_get(top, "timing"), t);
		json_decref(t);
		if (bad) {
			rc = base_nomem(qs->err, "result");
			goto out;
		}
	}
	/* Vespa leaves "children" out of a result without hits. */
	if (json_array_size(children) && json_object_set(root, "children", children)) {
		rc = base_nomem(qs->err, "result");
		goto out;
	}
	*result = eng_json_dump(top, 0);
	if (!*result)
		rc = base_nomem(qs->err, "result");
out:
	json_decref(children);
	json_decref(cov);
	json_decref(fields);
	json_decref(root);
	json_decref(top);
	return rc;
}

static int run_request(struct qstate *qs, const struct eng_request *req, char **result)
{
	struct strata_error *err = qs->err;
	const json_t *json = req->json;
	int rc;
	qs->t0 = base_now();
	qs->timing = req->timing;
	qs->short_value = req->short_value;
	const json_t *sel = eng_request_param(json, "select");
	if ((rc = yql_parse(req->yql, &qs->yql, err)) != 0 ||
	    (sel && (rc = json_is_string(sel) ? eng_grouping_select(qs->yql, json_string_value(sel),
	                                                            err)
	                                      : base_err(err, STRATA_INVALID_ARGUMENT,
	                                                 "\"select\" must be a string")) != 0) ||
	    (req->sorting && (rc = yql_sorting(qs->yql, req->sorting, err)) != 0) ||
	    (rc = eng_deadline_init(&qs->dl, req, qs->yql->timeout_ms, err)) != 0)
		return rc;
	long hits = req->hits >= 0 ? req->hits : ENG_DEFAULT_HITS;
	long offset = req->offset >= 0 ? req->offset : 0;
	/* YQL's limit is the end of the page, not its size (limit 15 offset 5: 10 hits). */
	if (qs->yql->offset >= 0)
		offset = qs->yql->offset;
	if (qs->yql->limit >= 0)
		hits = qs->yql->limit > offset ? qs->yql->limit - offset : 0;
	if (hits > ENG_MAX_HITS)
		return base_err(err, STRATA_INVALID_ARGUMENT, "%ld hits requested, the maximum is %d",
		                hits, ENG_MAX_HITS);
	if (offset > ENG_MAX_OFFSET)
		return base_err(err, STRATA_INVALID_ARGUMENT, "offset %ld, the maximum is %d", offset,
		                ENG_MAX_OFFSET);
	qs->want = (size_t)offset + (size_t)hits;
	qs->collapse = req->collapse_field != NULL;
	qs->now = req->now ? floor(json_number_value(req->now)) : (double)time(NULL);
	if ((rc = pick_doctypes(qs)) != 0)
		return rc;
	if (qs->nds && (rc = eng_text_expand(qs->yql, req, qs->ds[0].dt->schema, err)) != 0)
		return rc;
	if ((rc = check_fields(qs, qs->yql->where)) != 0 || (rc = check_order_grouping(qs)) != 0)
		return rc;
	const char *pname = req->profile;
	int maxf = 0;
	for (int i = 0; i < qs->nds; i++) {
		struct dtstate *ds = &qs->ds[i];
		ds->prof = rank_profile_find(ds->dt->schema, pname);
		if (!ds->prof)
			return base_err(err, STRATA_NOT_FOUND,
			                "rank profile '%s' not found in schema '%s'", pname, ds->dt->name);
		if ((rc = eng_nn_tuning(ds->prof, json, ds->nn_tune, err)) != 0)
			return rc;
		if (ds->dt->nfields > maxf)
			maxf = ds->dt->nfields;
	}
	if ((rc = eng_pick_summary(qs, req)) != 0 || (rc = eng_check_selected(qs)) != 0)
		return rc;
	if ((rc = check_inputs_declared(qs, json, pname)) != 0)
		return rc;
	qs->vals_size = (size_t)(maxf + 1) * sizeof *qs->vals;
	qs->vals = base_calloc(1, qs->vals_size);
	if (!qs->vals)
		return base_nomem(err, "query");
	if ((rc = store_txn_begin(qs->db->env, 0, &qs->txn, err)) != 0)
		return rc;
	for (int i = 0; i < qs->nds; i++) {
		struct dtstate *ds = &qs->ds[i];
		int nn_count = 0;
		ds->txn = qs->txn;
		ds->qs = qs;
		ds->m.txn = qs->txn;
		ds->m.dt = ds->dt;
		ds->m.value = match_value;
		ds->m.ud = ds;
		ds->m.err = err;
		base_arena_init(&ds->sparse, 1 << 12);
		ds->docs.ud = ds;
		ds->docs.attr = attr_cb;
		ds->docs.text = text_cb;
		ds->docs.term = term_cb;
		ds->docs.attr_rows = attr_rows_cb;
		if ((rc = resolve(qs, qs->yql->where, ds->dt, &nn_count)) != 0)
			return rc;
		if ((rc = check_nns(qs, ds, nn_count)) != 0)
			return rc;
		uint64_t a = mark();
		rc = rank_query_new(ds->prof, &ds->rq, err);
		charge(qs, a);
		if (rc)
			return rc;
		if ((rc = set_inputs(qs, ds, req)) != 0)
			return rc;
		if ((rc = run_doctype(qs, ds)) != 0)
			return rc;
	}
	if (!qs->dl.soft && (rc = eng_deadline_check(&qs->dl, err)) < 0)
		return rc; /* a hard timeout holds at the end too */
	/* Only the page is shown: the hits before it and on it are ordered
	 * (all of them when collapsing may leave some out). */
	size_t page = !qs->collapse && (size_t)offset < qs->nhits &&
	                      (size_t)hits < qs->nhits - (size_t)offset
	                      ? (size_t)offset + (size_t)hits
	                      : qs->nhits;
	if (qs->yql->norder && (rc = order_hits(qs)) != 0)
		return rc;
	if (!qs->yql->norder)
		sort_top(qs->hits, qs->nhits, page, final_cmp);
	qs->nshown = qs->nhits;
	if (qs->collapse && (rc = eng_collapse(qs, req, hit_value)) != 0)
		return rc;
	/* rawScore of a value that could not be read (memory) fails the query */
	if (!qs->match_nomem && (rc = build_result(qs, (size_t)offset, (size_t)hits, result)) != 0)
		return rc;
	if (qs->match_nomem) {
		base_strfree(*result);
		*result = NULL;
		return base_nomem(err, "reading a collection value for a rank feature");
	}
	return 0;
}

static int run(struct qstate *qs, const json_t *json, char **result)
{
	struct eng_request req;
	int rc = eng_request_read(json, &req, qs->err);
	if (!rc)
		rc = run_request(qs, &req, result);
	eng_request_done(&req);
	return rc;
}

int strata_query_json(struct strata *db, const char *request, char **result,
                      struct strata_error *err)
{
	*result = NULL;
	if (!request)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no request given");
	json_error_t je;
	int oom;
	json_t *req = eng_json_parse(request, strlen(request), 0, &je, &oom);
	if (oom)
		return base_nomem(err, "request");
	if (!req)
		return base_err(err, STRATA_PARSE, "request: invalid JSON at line %d, column %d: %s",
		                je.line, je.column, je.text);
	if (!json_is_object(req)) {
		json_decref(req);
		return base_err(err, STRATA_INVALID_ARGUMENT, "the request must be a JSON object");
	}
	struct qstate qs = { .db = db, .err = err };
	int rc = eng_qprofiles_apply(db->qprofiles, req, err);
	if (!rc)
		rc = run(&qs, req, result);
	for (int i = 0; i < qs.nds; i++) {
		if (qs.ds[i].rq) {
			uint64_t a = mark();
			rank_query_free(qs.ds[i].rq);
			charge(&qs, a);
		}
		for (int k = 0; k < qs.ds[i].nnn; k++)
			if (qs.ds[i].nn[k].lids)
				base_free(qs.ds[i].nn[k].lids, qs.ds[i].nn[k].n * sizeof(uint32_t));
		eng_wand_close(qs.ds[i].m.wand);
		eng_text_close(qs.ds[i].m.text);
		eng_wset_close(qs.ds[i].m.wset);
		eng_same_close(qs.ds[i].m.same);
		base_arena_free(&qs.ds[i].sparse);
	}
	if (qs.ds)
		base_free(qs.ds, (size_t)qs.ds_cap * sizeof *qs.ds);
	if (qs.hits)
		base_free(qs.hits, qs.cap * sizeof *qs.hits);
	if (qs.vals)
		base_free(qs.vals, qs.vals_size);
	if (qs.txn)
		store_txn_abort(qs.txn);
	yql_free(qs.yql);
	json_decref(qs.embedded);
	json_decref(req);
	atomic_fetch_add(&db->n_rank_allocs, qs.rank_allocs);
	if (rc == 0)
		atomic_fetch_add(&db->n_queries, 1);
	if (rc == 0 && qs.dl.passed)
		atomic_fetch_add(&db->n_degraded, 1);
	return rc;
}
