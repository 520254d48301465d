/*
 * test_mvgraph.c: the nearest-neighbour graphs of multi-vector fields
 * (store/hnsw_multi.c): a node per vector of each document, searched for
 * the documents nearest by their nearest vector.  Recall against a brute
 * force over every document's vectors computed here in double precision,
 * with and without filters (plain and filter-first); updates that change
 * the number of vectors and removes; searches on an older snapshot and in
 * a write transaction after its own uncommitted writes; reopening (read,
 * not rebuilt); a settings change (rebuilt from the stored values); kill -9
 * in the middle of a feed; a value the decoder refuses; allocation
 * failures.
 *
 * The field's stored value is the test's own format, read by the decoder
 * given to the store: the vectors' numbers as raw doubles, one vector
 * after another.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/store.h"
#include "killwriter.h"
#include "storetest.h"
#include "vecgen.h"

#define DIM 16
#define NDOC 1200
#define MAXV 4
#define NQ 30
#define K 10

/* store_field.vec_decode: raw doubles, DIM a vector. */
static int decode(const void *ud, const char *text, size_t n, struct base_arena *a,
                  const double **cells, size_t *nvec)
{
	(void)ud;
	if (n % (DIM * sizeof(double)))
		return STRATA_CORRUPT;
	double *c = base_arena_alloc(a, n ? n : 1, 8);
	if (!c)
		return STRATA_NOMEM;
	memcpy(c, text, n);
	*cells = c;
	*nvec = n / (DIM * sizeof(double));
	return 0;
}

struct fx {
	char dir[64];
	struct store_env *env;
	int dt;
	struct strata_error err;
	struct store_field fields[2]; /* vecs (graph), tag */
	struct store_doctype type;
	/* the documents as fed: nv[k] vectors (0: no value), removed ones -1 */
	int nv[NDOC];
	double v[NDOC][MAXV][DIM];
};

enum { F_VECS, F_TAG };

static void fx_type(struct fx *fx, int metric, int m)
{
	memset(fx->fields, 0, sizeof fx->fields);
	fx->fields[F_VECS] = (struct store_field){
		.name = "vecs", .type = STORE_T_JSON, .hnsw_metric = metric, .hnsw_m = m,
		.hnsw_ef = 64, .vec_cell = BASE_DT_FLOAT, .vec_size = DIM, .vec_decode = decode};
	fx->fields[F_TAG] = (struct store_field){.name = "tag", .type = STORE_T_INT, .attribute = 1};
	fx->type = (struct store_doctype){"item", 2, fx->fields};
}

static int fx_open(struct fx *fx)
{
	return storetest_open(fx->dir, &fx->type, &fx->env, &fx->dt, &fx->err);
}

static struct fx *fx_new(int metric)
{
	struct fx *fx = calloc(1, sizeof *fx);
	strcpy(fx->dir, "/tmp/strata_mvgraph_XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	fx_type(fx, metric, 8);
	if (fx_open(fx) != 0)
		fail_msg("open: %s", fx->err.msg);
	return fx;
}

static void fx_free(struct fx *fx)
{
	if (fx->env)
		store_close(fx->env);
	storetest_rmdir(fx->dir);
	free(fx);
}

/* Vector j of document k in round r: near centre (k + j) % 25; cells are
 * kept as float, so they are rounded to float here. */
static void gen(int r, int k, int j, double *out)
{
	uint64_t cs = 1000 + (uint64_t)((k + j) % 25), ps = (uint64_t)r * 1000003 + (uint64_t)k * 37 +
	                                                     (uint64_t)j + 1;
	for (int i = 0; i < DIM; i++)
		out[i] = (float)(vg_gauss(&cs) * 3 + vg_gauss(&ps));
}

static void doc_id(char *buf, size_t n, int k)
{
	snprintf(buf, n, "id:t:item::%d", k);
}

/* Put document k with nv vectors of round r (nv 0: no value) in w. */
static void put_doc(struct fx *fx, struct store_txn *w, int r, int k, int nv)
{
	fx->nv[k] = nv;
	for (int j = 0; j < nv; j++)
		gen(r, k, j, fx->v[k][j]);
	struct store_value vals[2] = {{0}};
	vals[F_VECS] = (struct store_value){.set = nv > 0, .s = (const char *)fx->v[k],
	                                    .n = (size_t)nv * DIM * sizeof(double)};
	vals[F_TAG] = (struct store_value){.set = 1, .i = k % 100};
	char id[64];
	doc_id(id, sizeof id, k);
	if (store_put(w, fx->dt, id, vals, &fx->err) != 0)
		fail_msg("put %d: %s", k, fx->err.msg);
}

static void feed(struct fx *fx, int r, int batch)
{
	struct store_txn *w = NULL;
	for (int k = 0; k < NDOC; k++) {
		if (!w)
			assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
		put_doc(fx, w, r, k, (k * 7 + r) % (MAXV + 1));
		if ((k + 1) % batch == 0 || k + 1 == NDOC) {
			assert_int_equal(store_txn_commit(w, &fx->err), 0);
			w = NULL;
		}
	}
}

static uint64_t vectors(const struct fx *fx)
{
	uint64_t n = 0;
	for (int k = 0; k < NDOC; k++)
		n += fx->nv[k] > 0 ? (uint64_t)fx->nv[k] : 0;
	return n;
}

static void check_graph(struct fx *fx)
{
	struct store_txn *r;
	uint64_t nodes = 0;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	if (store_hnsw_check(r, fx->dt, F_VECS, &nodes, &fx->err) != 0)
		fail_msg("check: %s", fx->err.msg);
	store_txn_abort(r);
	assert_int_equal(nodes, vectors(fx));
}

/* The brute force: squared euclidean distance of document k (its nearest
 * vector's) to q; INFINITY without vectors. */
static double doc_dist(const struct fx *fx, int k, const double *q)
{
	double best = INFINITY;
	for (int j = 0; j < fx->nv[k]; j++) {
		double s = 0;
		for (int i = 0; i < DIM; i++)
			s += (fx->v[k][j][i] - q[i]) * (fx->v[k][j][i] - q[i]);
		best = s < best ? s : best;
	}
	return best;
}

/* Recall at K over NQ queries; documents with tag < below only (100: no
 * filter).  Every hit is a distinct document that passes, at its nearest
 * vector's distance or (a vector the search missed) farther. */
static double recall_with(struct fx *fx, int below, uint32_t ef, int filter_first)
{
	uint64_t bits[(NDOC + 63) / 64] = {0};
	for (int k = 0; k < NDOC; k++)
		if (k % 100 < below)
			bits[k / 64] |= 1ull << (k % 64);
	struct store_txn *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	uint32_t lid_of[NDOC];
	for (int k = 0; k < NDOC; k++) {
		char id[64];
		doc_id(id, sizeof id, k);
		lid_of[k] = UINT32_MAX;
		if (fx->nv[k] >= 0 && store_lookup(r, fx->dt, id, &lid_of[k], &fx->err) != 0)
			fail_msg("lookup %d: %s", k, fx->err.msg);
	}
	/* the filter is over local ids: map the tags' bits */
	uint64_t lbits[4 * ((NDOC + 63) / 64)] = {0};
	size_t nbits = sizeof lbits * 8;
	for (int k = 0; k < NDOC; k++)
		if (lid_of[k] != UINT32_MAX && (bits[k / 64] >> (k % 64) & 1)) {
			assert_true(lid_of[k] < nbits);
			lbits[lid_of[k] / 64] |= 1ull << (lid_of[k] % 64);
		}
	int found = 0, want = 0;
	for (int qi = 0; qi < NQ; qi++) {
		double q[DIM];
		gen(77, qi, 0, q);
		struct vg_ref ref[NDOC];
		int n = 0;
		for (int k = 0; k < NDOC; k++)
			if (fx->nv[k] > 0 && k % 100 < below)
				ref[n++] = (struct vg_ref){doc_dist(fx, k, q), k};
		qsort(ref, (size_t)n, sizeof *ref, vg_ref_cmp);
		struct store_hit hits[K];
		size_t got;
		struct store_hnsw_params sp = {.k = K, .ef = ef, .filter = below < 100 ? lbits : NULL,
		                               .nbits = nbits, .filter_first = filter_first};
		if (store_hnsw_search_with(r, fx->dt, F_VECS, q, DIM, &sp, hits, &got, &fx->err) != 0)
			fail_msg("search: %s", fx->err.msg);
		assert_int_equal(got, n < K ? n : K);
		for (size_t i = 0; i < got; i++) {
			int k = -1;
			for (int x = 0; x < NDOC && k < 0; x++)
				if (lid_of[x] == hits[i].lid)
					k = x;
			assert_true(k >= 0 && fx->nv[k] > 0 && k % 100 < below);
			for (size_t j = 0; j < i; j++)
				assert_true(hits[j].lid != hits[i].lid && hits[j].distance <= hits[i].distance);
			double d = doc_dist(fx, k, q);
			assert_true(hits[i].distance >= d - 1e-3 * (1 + d));
			for (int j = 0; j < (n < K ? n : K); j++)
				found += ref[j].k == k;
		}
		want += n < K ? n : K;
	}
	store_txn_abort(r);
	return want ? (double)found / want : 1.0;
}

static double recall(struct fx *fx, int below, uint32_t ef)
{
	return recall_with(fx, below, ef, 0);
}

static void test_recall(void **state)
{
	(void)state;
	struct fx *fx = fx_new(STORE_METRIC_EUCLIDEAN);
	feed(fx, 1, 100);
	check_graph(fx);
	double r = recall(fx, 100, 64);
	if (r < 0.95)
		fail_msg("recall %.3f", r);
	/* the smallest ef still finds k distinct documents */
	r = recall(fx, 100, 1);
	if (r < 0.5)
		fail_msg("recall at ef 1: %.3f", r);
	fx_free(fx);
}

static void test_filters(void **state)
{
	(void)state;
	struct fx *fx = fx_new(STORE_METRIC_EUCLIDEAN);
	feed(fx, 2, 300);
	static const int below[] = {50, 10, 2, 1};
	for (size_t i = 0; i < sizeof below / sizeof below[0]; i++)
		for (int ff = 0; ff < 2; ff++) {
			double r = recall_with(fx, below[i], 64, ff);
			if (r < 0.9)
				fail_msg("filter tag < %d, filter-first %d: recall %.3f", below[i], ff, r);
		}
	fx_free(fx);
}

/* Updates that change the number of vectors (to none too), and removes. */
static void test_update_remove(void **state)
{
	(void)state;
	struct fx *fx = fx_new(STORE_METRIC_EUCLIDEAN);
	feed(fx, 3, 400);
	struct store_txn *w;
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	for (int k = 0; k < NDOC; k += 3)
		put_doc(fx, w, 4, k, (fx->nv[k] + 1 + k % 3) % (MAXV + 1));
	for (int k = 1; k < NDOC; k += 5) {
		char id[64];
		doc_id(id, sizeof id, k);
		assert_int_equal(store_remove(w, fx->dt, id, &fx->err), 0);
		fx->nv[k] = -1;
	}
	/* an update of the tag alone keeps the vectors */
	struct store_value vals[2] = {{0}};
	vals[F_TAG] = (struct store_value){.set = 1, .i = 7};
	assert_int_equal(store_update(w, fx->dt, "id:t:item::2", vals, &fx->err), 0);
	assert_int_equal(store_txn_commit(w, &fx->err), 0);
	check_graph(fx);
	double r = recall(fx, 100, 64);
	if (r < 0.95)
		fail_msg("recall after updates %.3f", r);
	/* everything removed: an empty graph */
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	for (int k = 0; k < NDOC; k++) {
		char id[64];
		doc_id(id, sizeof id, k);
		if (fx->nv[k] >= 0)
			assert_int_equal(store_remove(w, fx->dt, id, &fx->err), 0);
		fx->nv[k] = -1;
	}
	assert_int_equal(store_txn_commit(w, &fx->err), 0);
	check_graph(fx);
	assert_int_equal(recall(fx, 100, 64) == 1.0, 1);
	fx_free(fx);
}

static void search_all(struct fx *fx, uint32_t *out)
{
	struct store_txn *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	for (int qi = 0; qi < 5; qi++) {
		double q[DIM];
		gen(78, qi, 0, q);
		struct store_hit hits[K];
		size_t got;
		assert_int_equal(store_hnsw_search(r, fx->dt, F_VECS, q, DIM, K, 16, NULL, 0, hits,
		                                   &got, &fx->err), 0);
		assert_int_equal(got, K);
		for (int i = 0; i < K; i++)
			out[qi * K + i] = hits[i].lid;
	}
	store_txn_abort(r);
}

/* The nearest document to q in t (got 0 or 1 hits). */
static size_t nearest_in(struct fx *fx, struct store_txn *t, const double *q,
                         struct store_hit *hit)
{
	size_t got;
	if (store_hnsw_search(t, fx->dt, F_VECS, q, DIM, 1, 32, NULL, 0, hit, &got, &fx->err) != 0)
		fail_msg("search: %s", fx->err.msg);
	return got;
}

/* Searches on an older snapshot (its table of node records, filled before
 * the commit that added nodes past its counter) keep that snapshot's
 * answers; a write transaction's own search sees its uncommitted nodes
 * (kept by its graph cache until then); a new snapshot sees the committed
 * ones. */
static void test_snapshots_and_cache(void **state)
{
	(void)state;
	struct fx *fx = fx_new(STORE_METRIC_EUCLIDEAN);
	feed(fx, 1, 400);
	struct store_txn *old, *w, *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &old, &fx->err), 0);
	struct store_hit before[NQ], hit;
	for (int qi = 0; qi < NQ; qi++) {
		double q[DIM];
		gen(79, qi, 0, q);
		assert_int_equal(nearest_in(fx, old, q, &before[qi]), 1);
	}
	/* every third document: MAXV new vectors, new node ids */
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	for (int k = 0; k < NDOC; k += 3)
		put_doc(fx, w, 9, k, MAXV);
	for (int pass = 0; pass < 2; pass++) {
		struct store_txn *t = w;
		if (pass == 1) {
			assert_int_equal(store_txn_commit(w, &fx->err), 0);
			assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
			t = r;
		}
		for (int k = 0; k < NDOC; k += 39) {
			char id[64];
			uint32_t lid;
			doc_id(id, sizeof id, k);
			assert_int_equal(store_lookup(t, fx->dt, id, &lid, &fx->err), 0);
			assert_int_equal(nearest_in(fx, t, fx->v[k][MAXV - 1], &hit), 1);
			assert_int_equal(hit.lid, lid);
			assert_true(hit.distance < 1e-9);
		}
	}
	store_txn_abort(r);
	for (int qi = 0; qi < NQ; qi++) {
		double q[DIM];
		gen(79, qi, 0, q);
		assert_int_equal(nearest_in(fx, old, q, &hit), 1);
		assert_int_equal(hit.lid, before[qi].lid);
		assert_true(hit.distance == before[qi].distance);
	}
	store_txn_abort(old);
	check_graph(fx);
	fx_free(fx);
}

/* Reopening reads the graph (the same answers, the same bytes); another M
 * rebuilds it from the stored values. */
static void test_reopen_and_settings(void **state)
{
	(void)state;
	struct fx *fx = fx_new(STORE_METRIC_EUCLIDEAN);
	feed(fx, 5, 500);
	uint32_t a[5 * K], b[5 * K];
	search_all(fx, a);
	struct store_txn *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	uint64_t bytes = store_hnsw_bytes(r, fx->dt, F_VECS);
	store_txn_abort(r);
	assert_true(bytes > 0);
	store_close(fx->env);
	assert_int_equal(fx_open(fx), 0);
	search_all(fx, b);
	assert_memory_equal(a, b, sizeof a);
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	assert_int_equal(store_hnsw_bytes(r, fx->dt, F_VECS), bytes);
	store_txn_abort(r);
	check_graph(fx);
	store_close(fx->env);
	fx_type(fx, STORE_METRIC_EUCLIDEAN, 12);
	assert_int_equal(fx_open(fx), 0);
	check_graph(fx);
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	assert_true(store_hnsw_bytes(r, fx->dt, F_VECS) > bytes); /* more links per node */
	store_txn_abort(r);
	double rc = recall(fx, 100, 64);
	if (rc < 0.95)
		fail_msg("recall after the rebuild %.3f", rc);
	/* the field without a graph, then with one again: rebuilt */
	store_close(fx->env);
	fx_type(fx, STORE_METRIC_NONE, 8);
	assert_int_equal(fx_open(fx), 0);
	store_close(fx->env);
	fx_type(fx, STORE_METRIC_EUCLIDEAN, 8);
	assert_int_equal(fx_open(fx), 0);
	check_graph(fx);
	fx_free(fx);
}

/* A value the decoder refuses fails the put and its transaction, naming
 * the field; nothing of it is stored. */
static void test_bad_value(void **state)
{
	(void)state;
	struct fx *fx = fx_new(STORE_METRIC_EUCLIDEAN);
	struct store_txn *w;
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	put_doc(fx, w, 6, 0, 2);
	assert_int_equal(store_txn_commit(w, &fx->err), 0);
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	struct store_value vals[2] = {{0}};
	vals[F_VECS] = (struct store_value){.set = 1, .s = "short", .n = 5};
	assert_int_equal(store_put(w, fx->dt, "id:t:item::9", vals, &fx->err), STRATA_CORRUPT);
	assert_string_equal(fx->err.msg, "document type 'item', field 'vecs': the value of local id "
	                                 "1 is not a multi-vector tensor of 16 cells");
	assert_int_equal(store_txn_commit(w, &fx->err), STRATA_TXN_FAILED);
	check_graph(fx);
	fx_free(fx);
}

/* A put under allocation failures, the n-th failing for each n: it fails
 * cleanly (nothing of it stays) or succeeds, and the graph always agrees
 * with the documents. */
static void test_alloc_failures(void **state)
{
	(void)state;
	struct fx *fx = fx_new(STORE_METRIC_EUCLIDEAN);
	feed(fx, 7, 600);
	int ok = 0, failed = 0;
	for (long n = 1; n <= 120; n++) {
		struct store_txn *w;
		assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
		struct store_value vals[2] = {{0}};
		double v[3][DIM];
		for (int j = 0; j < 3; j++)
			gen(8 + (int)n, 5, j, v[j]);
		vals[F_VECS] = (struct store_value){.set = 1, .s = (const char *)v, .n = sizeof v};
		base_alloc_fail_after(n);
		int rc = store_put(w, fx->dt, "id:t:item::5", vals, &fx->err);
		if (rc == 0)
			rc = store_txn_commit(w, &fx->err);
		else
			store_txn_abort(w);
		base_alloc_fail_after(0);
		if (rc == 0) {
			ok++;
			fx->nv[5] = 3;
			memcpy(fx->v[5], v, sizeof v);
		} else {
			assert_int_equal(rc, STRATA_NOMEM);
			failed++;
		}
		check_graph(fx);
	}
	assert_true(ok > 0 && failed > 0);
	fx_free(fx);
}

/* test_kill9's writer: puts of 0 to MAXV vectors, and removes. */
static int kill9_write(void *ud, struct store_txn *w, int dt, long k, int j)
{
	struct fx *fx = ud;
	int d = (int)((k * 20 + j) % 800), nv = (int)((k + j) % (MAXV + 1));
	double v[MAXV][DIM];
	for (int x = 0; x < nv; x++)
		gen((int)k, d, x, v[x]);
	struct store_value vals[2] = {{0}};
	vals[F_VECS] = (struct store_value){.set = nv > 0, .s = (const char *)v,
	                                    .n = (size_t)nv * DIM * sizeof(double)};
	char id[64];
	doc_id(id, sizeof id, d);
	if ((k + j) % 7 == 0)
		return store_remove(w, dt, id, &fx->err), 0;
	return store_put(w, dt, id, vals, &fx->err);
}

/* A writer killed with SIGKILL between or inside commits: reopening finds
 * a graph that agrees with the committed documents (store_hnsw_check
 * decodes every document's vectors and compares them with its nodes). */
static void test_kill9(void **state)
{
	(void)state;
	struct fx *fx = fx_new(STORE_METRIC_EUCLIDEAN);
	store_close(fx->env);
	fx->env = NULL;
	for (int round = 0; round < 3; round++) {
		struct kill_feed kf = {fx->dir, &fx->type, kill9_write, 20, round * 100000L, fx};
		kill_writer(15 + round * 10, &kf);
		assert_int_equal(fx_open(fx), 0);
		struct store_txn *r;
		assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
		uint64_t nodes = 0;
		if (store_hnsw_check(r, fx->dt, F_VECS, &nodes, &fx->err) != 0)
			fail_msg("round %d: %s", round, fx->err.msg);
		assert_true(store_count(r, fx->dt) > 0 && nodes > 0);
		store_txn_abort(r);
		store_close(fx->env);
		fx->env = NULL;
	}
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recall),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_update_remove),
		cmocka_unit_test(test_reopen_and_settings),
		cmocka_unit_test(test_snapshots_and_cache),
		cmocka_unit_test(test_bad_value),
		cmocka_unit_test(test_alloc_failures),
		cmocka_unit_test(test_kill9),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
