/*
 * test_hnsw.c: the nearest-neighbour graphs of the store (store/hnsw*.c):
 * recall against exact search on generated clustered data for each metric
 * and cell type, filters from every document down to 0.1% of them, updates
 * and removes, reopening (the graph is read, not rebuilt), a settings
 * change (rebuilt), kill -9 in the middle of a feed, the distance kernels
 * (AVX2 and AVX-512 paths against a double computation), refused settings,
 * and the new distance metrics of rank (hamming, geodegrees).  Expected
 * neighbours are computed here by brute force in double precision.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../store/store.h"
#include "../store/store_int.h" /* the distance kernels */
#include "../rank/rank.h"
#include "../rank/rank_eval.h"
#include "killwriter.h"
#include "storetest.h"
#include "vecgen.h"

#define DIM 24
#define NDOC 3000
#define NQ 40
#define K 10

struct fx {
	char dir[64];
	struct store_env *env;
	int dt;
	struct strata_error err;
	struct store_field fields[3]; /* vec (graph), tag (int), raw (no graph) */
	struct store_doctype type;
};

enum { F_VEC, F_TAG, F_RAW };

static void fx_type(struct fx *fx, int metric, int cell, int dim, int m, int ef)
{
	memset(fx->fields, 0, sizeof fx->fields);
	fx->fields[F_VEC] = (struct store_field){.name = "vec", .type = STORE_T_TENSOR, .attribute = 1,
	                                         .cell = cell, .rank = 1, .dims = {dim}};
	fx->fields[F_VEC].hnsw_metric = metric;
	fx->fields[F_VEC].hnsw_m = m;
	fx->fields[F_VEC].hnsw_ef = ef;
	fx->fields[F_TAG] = (struct store_field){.name = "tag", .type = STORE_T_INT, .attribute = 1};
	fx->fields[F_RAW] = (struct store_field){.name = "raw", .type = STORE_T_TENSOR, .attribute = 1,
	                                         .cell = cell, .rank = 1, .dims = {dim}};
	fx->type = (struct store_doctype){"item", 3, fx->fields};
}

/* Open the store and add the type: 0 or the error code. */
static int fx_open(struct fx *fx)
{
	return storetest_open(fx->dir, &fx->type, &fx->env, &fx->dt, &fx->err);
}

static struct fx *fx_new(int metric, int cell, int dim)
{
	struct fx *fx = calloc(1, sizeof *fx);
	strcpy(fx->dir, "/tmp/strata_hnsw_XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	fx_type(fx, metric, cell, dim, 8, 64);
	if (fx_open(fx) != 0)
		fail_msg("open: %s", fx->err.msg);
	return fx;
}

static void fx_free(struct fx *fx)
{
	store_close(fx->env);
	storetest_rmdir(fx->dir);
	free(fx);
}

/* ---- data: clusters around random centres, fixed seed ------------------------------ */

/* Vector k of a data set: near centre k % 20.  Values as doubles. */
static void gen(uint64_t seed, int k, int dim, int metric, double *out)
{
	uint64_t cs = seed * 1000 + (uint64_t)(k % 20), ps = seed * 7919 + (uint64_t)k * 31 + 1;
	double norm = 0;
	for (int i = 0; i < dim; i++) {
		out[i] = vg_gauss(&cs) * 3 + vg_gauss(&ps);
		norm += out[i] * out[i];
	}
	if (metric == STORE_METRIC_PRENORMALIZED_ANGULAR)
		for (int i = 0; i < dim; i++)
			out[i] /= sqrt(norm);
	if (metric == STORE_METRIC_HAMMING)
		for (int i = 0; i < dim; i++)
			out[i] = (double)(int8_t)(vg_next(&cs) & 0xff) * (k % 3 == 0) +
			         (double)(int8_t)(vg_next(&ps) & 0xff) * (k % 3 != 0);
	if (metric == STORE_METRIC_GEODEGREES) {
		out[0] = fmod(fabs(out[0]) * 9, 90.0) * (k % 2 ? 1 : -1);
		out[1] = fmod(out[1] * 30, 180.0);
	}
}

/* Cells of the field's type from doubles (rounded the way the store keeps them). */
static void to_cells(int cell, const double *v, int dim, void *out)
{
	for (int i = 0; i < dim; i++) {
		switch (cell) {
		case BASE_DT_FLOAT: ((float *)out)[i] = (float)v[i]; break;
		case BASE_DT_DOUBLE: ((double *)out)[i] = v[i]; break;
		case BASE_DT_BFLOAT16: ((uint16_t *)out)[i] = base_f32_to_bf16((float)v[i]); break;
		case BASE_DT_INT8: ((int8_t *)out)[i] = (int8_t)fmax(-128, fmin(127, trunc(v[i]))); break;
		}
	}
}

static double cell_d(int cell, const void *p, int i)
{
	switch (cell) {
	case BASE_DT_FLOAT: return ((const float *)p)[i];
	case BASE_DT_DOUBLE: return ((const double *)p)[i];
	case BASE_DT_BFLOAT16: return base_bf16_to_f32(((const uint16_t *)p)[i]);
	case BASE_DT_INT8: return ((const int8_t *)p)[i];
	}
	return 0;
}

/* The reference distance, in double, in the store's order (see store.h). */
static double ref_dist(int metric, int cell, const void *a, const void *b, int dim)
{
	double s = 0, aa = 0, bb = 0;
	switch (metric) {
	case STORE_METRIC_EUCLIDEAN:
		for (int i = 0; i < dim; i++)
			s += (cell_d(cell, a, i) - cell_d(cell, b, i)) * (cell_d(cell, a, i) - cell_d(cell, b, i));
		return s;
	case STORE_METRIC_ANGULAR:
		for (int i = 0; i < dim; i++) {
			s += cell_d(cell, a, i) * cell_d(cell, b, i);
			aa += cell_d(cell, a, i) * cell_d(cell, a, i);
			bb += cell_d(cell, b, i) * cell_d(cell, b, i);
		}
		return aa == 0 || bb == 0 ? 1.0 : 1.0 - s / sqrt(aa * bb);
	case STORE_METRIC_DOTPRODUCT:
	case STORE_METRIC_PRENORMALIZED_ANGULAR:
		for (int i = 0; i < dim; i++)
			s += cell_d(cell, a, i) * cell_d(cell, b, i);
		return metric == STORE_METRIC_DOTPRODUCT ? -s : 1.0 - s;
	case STORE_METRIC_HAMMING:
		for (int i = 0; i < dim; i++) {
			if (cell == BASE_DT_INT8)
				s += __builtin_popcount((uint8_t)((const int8_t *)a)[i] ^
				                        (uint8_t)((const int8_t *)b)[i]);
			else
				s += cell_d(cell, a, i) != cell_d(cell, b, i);
		}
		return s;
	case STORE_METRIC_GEODEGREES: {
		double r = M_PI / 180, la1 = cell_d(cell, a, 0) * r, la2 = cell_d(cell, b, 0) * r;
		double dla = la2 - la1, dlo = (cell_d(cell, b, 1) - cell_d(cell, a, 1)) * r;
		double h = sin(dla / 2) * sin(dla / 2) + cos(la1) * cos(la2) * sin(dlo / 2) * sin(dlo / 2);
		return 2 * 6371.0088 * asin(sqrt(fmin(1.0, h)));
	}
	}
	return 0;
}

/* ---- feeding and measuring -------------------------------------------------------- */

static void doc_id(char *buf, size_t n, int k)
{
	snprintf(buf, n, "id:t:item::%d", k);
}

/* Put documents [from, to) of data set seed (vector k, tag k % 1000), batch per txn. */
static void feed(struct fx *fx, uint64_t seed, int from, int to, int metric, int batch)
{
	int dim = (int)fx->fields[F_VEC].dims[0], cell = fx->fields[F_VEC].cell;
	double v[256];
	uint8_t cells[256 * 8];
	struct store_txn *w = NULL;
	for (int k = from; k < to; k++) {
		if (!w)
			assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
		gen(seed, k, dim, metric, v);
		to_cells(cell, v, dim, cells);
		struct store_value vals[3] = {{0}};
		vals[F_VEC] = (struct store_value){.set = 1, .n = (size_t)dim, .cells = cells};
		vals[F_TAG] = (struct store_value){.set = 1, .i = k % 1000};
		char id[64];
		doc_id(id, sizeof id, k);
		if (store_put(w, fx->dt, id, vals, &fx->err) != 0)
			fail_msg("put %d: %s", k, fx->err.msg);
		if ((k + 1 - from) % batch == 0 || k + 1 == to) {
			assert_int_equal(store_txn_commit(w, &fx->err), 0);
			w = NULL;
		}
	}
}

static void check_graph(struct fx *fx, uint64_t want_nodes)
{
	struct store_txn *r;
	uint64_t nodes = 0;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	if (store_hnsw_check(r, fx->dt, F_VEC, &nodes, &fx->err) != 0)
		fail_msg("check: %s", fx->err.msg);
	store_txn_abort(r);
	assert_int_equal(nodes, want_nodes);
}

struct ref {
	double d;
	uint32_t lid;
};

static int ref_cmp(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;
	return x->d < y->d ? -1 : x->d > y->d ? 1 : (x->lid > y->lid) - (x->lid < y->lid);
}

/* Mean recall@K of the graph over NQ queries (data set seed, vectors near
 * the clusters), against brute force over the documents that pass the
 * filter.  Also checks each returned distance and the order. */
static double recall(struct fx *fx, int metric, uint32_t ef, const uint64_t *filter, size_t nbits)
{
	int dim = (int)fx->fields[F_VEC].dims[0], cell = fx->fields[F_VEC].cell;
	struct store_txn *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	size_t cap = store_count(r, fx->dt) + 1, found = 0, wanted = 0;
	struct ref *all = malloc(cap * sizeof *all);
	for (int qi = 0; qi < NQ; qi++) {
		double q[256];
		uint8_t qc[256 * 8];
		gen(99, qi * 7 + 3, dim, metric, q);
		to_cells(cell, q, dim, qc);
		for (int i = 0; i < dim; i++)
			q[i] = cell_d(cell, qc, i);
		size_t n = 0;
		for (uint32_t lid = 0; store_next(r, fx->dt, &lid) == 0; lid++) {
			if (filter && (lid >= nbits || !((filter[lid / 64] >> (lid % 64)) & 1)))
				continue;
			const void *v = store_attr(r, fx->dt, F_VEC, lid);
			if (!v)
				continue;
			all[n].d = ref_dist(metric, cell, qc, v, dim);
			all[n++].lid = lid;
		}
		qsort(all, n, sizeof *all, ref_cmp);
		struct store_hit hits[K];
		size_t nh;
		if (store_hnsw_search(r, fx->dt, F_VEC, q, (size_t)dim, K, ef, filter, nbits, hits, &nh,
		                      &fx->err) != 0)
			fail_msg("search: %s", fx->err.msg);
		size_t want = n < K ? n : K;
		assert_int_equal(nh, want);
		for (size_t i = 0; i < nh; i++) {
			const void *v = store_attr(r, fx->dt, F_VEC, hits[i].lid);
			assert_non_null(v);
			assert_true(!filter || ((filter[hits[i].lid / 64] >> (hits[i].lid % 64)) & 1));
			double d = ref_dist(metric, cell, qc, v, dim);
			assert_true(fabs(d - hits[i].distance) <= 1e-3 * (1 + fabs(d)));
			if (i)
				assert_true(hits[i].distance >= hits[i - 1].distance);
			/* a hit counts when it is as near as the K-th true neighbour */
			if (d <= all[want - 1].d + 1e-6 * (1 + fabs(all[want - 1].d)))
				found++;
		}
		wanted += want;
	}
	free(all);
	store_txn_abort(r);
	return wanted ? (double)found / (double)wanted : 1.0;
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_recall_metrics(void **state)
{
	(void)state;
	static const struct {
		int metric, cell, dim;
	} cases[] = {
		{STORE_METRIC_EUCLIDEAN, BASE_DT_FLOAT, DIM},
		{STORE_METRIC_ANGULAR, BASE_DT_FLOAT, DIM},
		{STORE_METRIC_DOTPRODUCT, BASE_DT_FLOAT, DIM},
		{STORE_METRIC_PRENORMALIZED_ANGULAR, BASE_DT_FLOAT, DIM},
		{STORE_METRIC_EUCLIDEAN, BASE_DT_BFLOAT16, DIM},
		{STORE_METRIC_ANGULAR, BASE_DT_DOUBLE, 13},
		{STORE_METRIC_EUCLIDEAN, BASE_DT_INT8, DIM},
		{STORE_METRIC_HAMMING, BASE_DT_INT8, 16},
		{STORE_METRIC_GEODEGREES, BASE_DT_DOUBLE, 2},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct fx *fx = fx_new(cases[c].metric, cases[c].cell, cases[c].dim);
		int n = NDOC / 2;
		feed(fx, 1 + c, 0, n, cases[c].metric, 500);
		check_graph(fx, (uint64_t)n);
		/* inner products are no metric: the graph needs a wider search */
		uint32_t ef = cases[c].metric == STORE_METRIC_DOTPRODUCT ? 200 : 100;
		double rc = recall(fx, cases[c].metric, ef, NULL, 0);
		if (rc < 0.95)
			fail_msg("case %zu: recall@%d %.3f", c, K, rc);
		fx_free(fx);
	}
}

static void test_recall_ef(void **state)
{
	(void)state;
	struct fx *fx = fx_new(STORE_METRIC_EUCLIDEAN, BASE_DT_FLOAT, DIM);
	feed(fx, 7, 0, NDOC, STORE_METRIC_EUCLIDEAN, 1000);
	check_graph(fx, NDOC);
	double lo = recall(fx, STORE_METRIC_EUCLIDEAN, K, NULL, 0);
	double hi = recall(fx, STORE_METRIC_EUCLIDEAN, 200, NULL, 0);
	assert_true(hi >= 0.98);
	assert_true(hi >= lo);
	fx_free(fx);
}

static void test_filters(void **state)
{
	(void)state;
	struct fx *fx = fx_new(STORE_METRIC_EUCLIDEAN, BASE_DT_FLOAT, DIM);
	feed(fx, 3, 0, NDOC, STORE_METRIC_EUCLIDEAN, 1000);
	/* filters keeping 100%, 50%, 10%, 1% and 0.1% of the documents */
	static const int every[] = {1, 2, 10, 100, 1000};
	size_t words = (NDOC + 63) / 64;
	uint64_t *bits = calloc(words, sizeof *bits);
	for (size_t f = 0; f < sizeof every / sizeof every[0]; f++) {
		memset(bits, 0, words * sizeof *bits);
		for (int lid = 0; lid < NDOC; lid++)
			if (lid % every[f] == 0)
				bits[lid / 64] |= (uint64_t)1 << (lid % 64);
		double rc = recall(fx, STORE_METRIC_EUCLIDEAN, 100, bits, (size_t)NDOC);
		if (rc < 0.95)
			fail_msg("filter 1/%d: recall %.3f", every[f], rc);
	}
	/* an empty filter finds nothing */
	memset(bits, 0, words * sizeof *bits);
	struct store_txn *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	double q[DIM] = {0};
	struct store_hit hits[K];
	size_t nh = 99;
	assert_int_equal(store_hnsw_search(r, fx->dt, F_VEC, q, DIM, K, 50, bits, NDOC, hits, &nh,
	                                   &fx->err), 0);
	assert_int_equal(nh, 0);
	store_txn_abort(r);
	free(bits);
	fx_free(fx);
}

static void test_update_remove(void **state)
{
	(void)state;
	struct fx *fx = fx_new(STORE_METRIC_EUCLIDEAN, BASE_DT_FLOAT, DIM);
	feed(fx, 5, 0, NDOC, STORE_METRIC_EUCLIDEAN, 1000);
	/* new vectors for a fifth (another data set), by put and by update */
	struct store_txn *w;
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	for (int k = 0; k < NDOC; k += 5) {
		double v[DIM];
		float c[DIM];
		gen(55, k, DIM, STORE_METRIC_EUCLIDEAN, v);
		to_cells(BASE_DT_FLOAT, v, DIM, c);
		struct store_value vals[3] = {{0}};
		vals[F_VEC] = (struct store_value){.set = 1, .n = DIM, .cells = c};
		char id[64];
		doc_id(id, sizeof id, k);
		int rc = (k / 5) % 2 ? store_update(w, fx->dt, id, vals, &fx->err)
		                     : store_put(w, fx->dt, id, vals, &fx->err);
		assert_int_equal(rc, 0);
	}
	/* remove another fifth, and clear the vector of some by a put without it */
	int removed = 0, cleared = 0;
	for (int k = 1; k < NDOC; k += 5) {
		char id[64];
		doc_id(id, sizeof id, k);
		if (k % 3 == 0) {
			struct store_value vals[3] = {{0}};
			vals[F_TAG] = (struct store_value){.set = 1, .i = 1};
			assert_int_equal(store_put(w, fx->dt, id, vals, &fx->err), 0);
			cleared++;
		} else {
			assert_int_equal(store_remove(w, fx->dt, id, &fx->err), 0);
			removed++;
		}
	}
	assert_int_equal(store_txn_commit(w, &fx->err), 0);
	check_graph(fx, (uint64_t)(NDOC - removed - cleared));
	double rc = recall(fx, STORE_METRIC_EUCLIDEAN, 100, NULL, 0);
	if (rc < 0.95)
		fail_msg("after updates: recall %.3f", rc);
	/* remove everything: the graph empties, searching finds nothing */
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	for (int k = 0; k < NDOC; k++) {
		char id[64];
		doc_id(id, sizeof id, k);
		int r = store_remove(w, fx->dt, id, &fx->err);
		assert_true(r == 0 || r == STRATA_NOT_FOUND);
	}
	assert_int_equal(store_txn_commit(w, &fx->err), 0);
	check_graph(fx, 0);
	struct store_txn *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	double q[DIM] = {0};
	struct store_hit hits[K];
	size_t nh = 99;
	assert_int_equal(store_hnsw_search(r, fx->dt, F_VEC, q, DIM, K, 50, NULL, 0, hits, &nh,
	                                   &fx->err), 0);
	assert_int_equal(nh, 0);
	store_txn_abort(r);
	uint64_t bytes;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	bytes = store_hnsw_bytes(r, fx->dt, F_VEC);
	store_txn_abort(r);
	assert_int_equal(bytes, 0);
	/* and fills again */
	feed(fx, 6, NDOC, NDOC + 500, STORE_METRIC_EUCLIDEAN, 100);
	check_graph(fx, 500);
	fx_free(fx);
}

/* The results of NQ searches, as lids, for comparing two states. */
static void results(struct fx *fx, uint32_t *out)
{
	struct store_txn *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	for (int qi = 0; qi < NQ; qi++) {
		double q[DIM];
		gen(99, qi, DIM, STORE_METRIC_EUCLIDEAN, q);
		struct store_hit hits[K];
		size_t nh;
		assert_int_equal(store_hnsw_search(r, fx->dt, F_VEC, q, DIM, K, 20, NULL, 0, hits, &nh,
		                                   &fx->err), 0);
		assert_int_equal(nh, K);
		for (int i = 0; i < K; i++)
			out[qi * K + i] = hits[i].lid;
	}
	store_txn_abort(r);
}

static void test_reopen_and_settings(void **state)
{
	(void)state;
	struct fx *fx = fx_new(STORE_METRIC_EUCLIDEAN, BASE_DT_FLOAT, DIM);
	feed(fx, 9, 0, NDOC, STORE_METRIC_EUCLIDEAN, 700);
	uint32_t a[NQ * K], b[NQ * K];
	results(fx, a);
	struct store_txn *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	uint64_t bytes = store_hnsw_bytes(r, fx->dt, F_VEC);
	store_txn_abort(r);
	assert_true(bytes > (uint64_t)NDOC * 4 * 17);
	/* reopened: the same graph, not a rebuilt one (no allocations of a rebuild) */
	store_close(fx->env);
	struct base_alloc_stats s0, s1;
	base_alloc_stats(&s0);
	assert_int_equal(fx_open(fx), 0);
	base_alloc_stats(&s1);
	assert_true(s1.allocs - s0.allocs < 50);
	results(fx, b);
	assert_memory_equal(a, b, sizeof a);
	/* the same documents fed again in the same order build the same graph */
	struct fx *fx2 = fx_new(STORE_METRIC_EUCLIDEAN, BASE_DT_FLOAT, DIM);
	feed(fx2, 9, 0, NDOC, STORE_METRIC_EUCLIDEAN, 300);
	results(fx2, b);
	assert_memory_equal(a, b, sizeof a);
	fx_free(fx2);
	/* other settings rebuild the graph; so does another metric */
	store_close(fx->env);
	fx_type(fx, STORE_METRIC_EUCLIDEAN, BASE_DT_FLOAT, DIM, 12, 100);
	assert_int_equal(fx_open(fx), 0);
	check_graph(fx, NDOC);
	assert_true(recall(fx, STORE_METRIC_EUCLIDEAN, 100, NULL, 0) >= 0.95);
	store_close(fx->env);
	fx_type(fx, STORE_METRIC_ANGULAR, BASE_DT_FLOAT, DIM, 12, 100);
	assert_int_equal(fx_open(fx), 0);
	check_graph(fx, NDOC);
	assert_true(recall(fx, STORE_METRIC_ANGULAR, 100, NULL, 0) >= 0.95);
	/* and no graph any more: searching is refused, the raw field never had one */
	store_close(fx->env);
	fx_type(fx, STORE_METRIC_NONE, BASE_DT_FLOAT, DIM, 0, 0);
	assert_int_equal(fx_open(fx), 0);
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	double q[DIM] = {0};
	struct store_hit hits[K];
	size_t nh;
	assert_int_equal(store_hnsw_search(r, fx->dt, F_VEC, q, DIM, K, 50, NULL, 0, hits, &nh,
	                                   &fx->err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(fx->err.msg, "field 'vec' of document type 'item' has no "
	                                    "nearest-neighbour graph"));
	assert_int_equal(store_hnsw_search(r, fx->dt, F_RAW, q, DIM, K, 50, NULL, 0, hits, &nh,
	                                   &fx->err), STRATA_INVALID_ARGUMENT);
	assert_int_equal(store_hnsw_bytes(r, fx->dt, F_VEC), 0);
	store_txn_abort(r);
	fx_free(fx);
}

static void test_refused(void **state)
{
	(void)state;
	struct fx *fx = calloc(1, sizeof *fx);
	strcpy(fx->dir, "/tmp/strata_hnsw_XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	fx_type(fx, STORE_METRIC_EUCLIDEAN, BASE_DT_INT32, 4, 0, 0);
	assert_int_equal(fx_open(fx), STRATA_NOT_IMPLEMENTED);
	assert_non_null(strstr(fx->err.msg, "nearest-neighbour graphs on int32 cells are not "
	                                    "supported"));
	fx_type(fx, STORE_METRIC_EUCLIDEAN, BASE_DT_FLOAT, 4, 1, 0);
	assert_int_equal(fx_open(fx), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(fx->err.msg, "max-links-per-node must be 2-256"));
	fx_type(fx, STORE_METRIC_GEODEGREES, BASE_DT_FLOAT, 3, 0, 0);
	assert_int_equal(fx_open(fx), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(fx->err.msg, "geodegrees needs two cells"));
	fx_type(fx, STORE_METRIC_EUCLIDEAN, BASE_DT_FLOAT, 4, 0, 0);
	fx->fields[F_VEC].type = STORE_T_FLOAT;
	fx->fields[F_VEC].rank = 0;
	assert_int_equal(fx_open(fx), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(fx->err.msg, "field 'vec' cannot have a nearest-neighbour graph"));
	/* a query of the wrong size */
	fx_type(fx, STORE_METRIC_EUCLIDEAN, BASE_DT_FLOAT, 4, 0, 0);
	assert_int_equal(fx_open(fx), 0);
	struct store_txn *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	double q[5] = {0};
	struct store_hit hits[2];
	size_t nh;
	assert_int_equal(store_hnsw_search(r, fx->dt, F_VEC, q, 5, 2, 2, NULL, 0, hits, &nh, &fx->err),
	                 STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(fx->err.msg, "of 5 cells on field 'vec' of 4"));
	store_txn_abort(r);
	fx_free(fx);
}

/* Allocation failures while feeding fail the write cleanly; what was
 * committed before keeps a sound graph. */
static void test_alloc_failures(void **state)
{
	(void)state;
	struct fx *fx = fx_new(STORE_METRIC_EUCLIDEAN, BASE_DT_FLOAT, DIM);
	feed(fx, 11, 0, 300, STORE_METRIC_EUCLIDEAN, 300);
	for (int n = 1; n <= 40; n++) {
		struct store_txn *w;
		assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
		base_alloc_fail_after(n);
		int rc = 0;
		for (int k = 300; k < 320 && !rc; k++) {
			double v[DIM];
			float c[DIM];
			gen(11, k, DIM, STORE_METRIC_EUCLIDEAN, v);
			to_cells(BASE_DT_FLOAT, v, DIM, c);
			struct store_value vals[3] = {{0}};
			vals[F_VEC] = (struct store_value){.set = 1, .n = DIM, .cells = c};
			char id[64];
			doc_id(id, sizeof id, k);
			rc = store_put(w, fx->dt, id, vals, &fx->err);
		}
		base_alloc_fail_after(-1);
		if (rc) {
			assert_int_equal(rc, STRATA_NOMEM);
			store_txn_abort(w);
		} else {
			store_txn_abort(w); /* nothing of it kept either way */
		}
		check_graph(fx, 300);
	}
	fx_free(fx);
}

/* test_kill9's writer: puts and removes of data set 13. */
static int kill9_write(void *ud, struct store_txn *w, int dt, long k, int j)
{
	struct fx *fx = ud;
	int d = (int)(k * 25 + j);
	double v[DIM];
	float c[DIM];
	gen(13, d, DIM, STORE_METRIC_EUCLIDEAN, v);
	to_cells(BASE_DT_FLOAT, v, DIM, c);
	struct store_value vals[3] = {{0}};
	vals[F_VEC] = (struct store_value){.set = 1, .n = DIM, .cells = c};
	char id[64];
	doc_id(id, sizeof id, d % 2000);
	if ((k + j) % 7 == 0)
		return store_remove(w, dt, id, &fx->err), 0;
	return store_put(w, dt, id, vals, &fx->err);
}

/* A writer killed with SIGKILL between or inside commits: reopening finds
 * a graph that agrees with the committed documents. */
static void test_kill9(void **state)
{
	(void)state;
	struct fx *fx = fx_new(STORE_METRIC_EUCLIDEAN, BASE_DT_FLOAT, DIM);
	store_close(fx->env);
	fx->env = NULL;
	for (int round = 0; round < 3; round++) {
		struct kill_feed kf = {fx->dir, &fx->type, kill9_write, 25, round * 100000L, fx};
		kill_writer(20 + round * 15, &kf);
		assert_int_equal(fx_open(fx), 0);
		struct store_txn *r;
		assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
		uint64_t docs = store_count(r, fx->dt), nodes = 0;
		if (store_hnsw_check(r, fx->dt, F_VEC, &nodes, &fx->err) != 0)
			fail_msg("round %d: %s", round, fx->err.msg);
		store_txn_abort(r);
		assert_true(docs > 0);
		assert_int_equal(nodes, docs);
		store_close(fx->env);
		fx->env = NULL;
	}
	assert_int_equal(fx_open(fx), 0);
	fx_free(fx);
}

/* The kernels against a double computation, for lengths around the
 * vector widths, on the AVX2 path and (where the machine has it) the
 * AVX-512 one. */
static void test_kernels(void **state)
{
	(void)state;
	static const int metrics[] = {STORE_METRIC_EUCLIDEAN, STORE_METRIC_ANGULAR,
	                              STORE_METRIC_DOTPRODUCT, STORE_METRIC_PRENORMALIZED_ANGULAR,
	                              STORE_METRIC_HAMMING};
	static const int cells[] = {BASE_DT_FLOAT, BASE_DT_DOUBLE, BASE_DT_BFLOAT16, BASE_DT_INT8};
	uint64_t s = 42;
	int wide = store_cpu_avx512();
	for (int avx512 = 0; avx512 <= wide; avx512++)
		for (size_t m = 0; m < sizeof metrics / sizeof metrics[0]; m++)
			for (size_t c = 0; c < sizeof cells / sizeof cells[0]; c++)
				for (int n = 1; n <= 70; n++) {
					double a[70], b[70];
					uint8_t ca[70 * 8], cb[70 * 8];
					for (int i = 0; i < n; i++) {
						a[i] = vg_gauss(&s) * 20;
						b[i] = i % 5 ? vg_gauss(&s) * 20 : a[i];
					}
					to_cells(cells[c], a, n, ca);
					to_cells(cells[c], b, n, cb);
					store_dist_fn f = store_dist_kernel(metrics[m], cells[c], avx512);
					assert_non_null(f);
					double want = ref_dist(metrics[m], cells[c], ca, cb, n);
					double got = f(ca, cb, (size_t)n);
					if (fabs(got - want) > 1e-4 * (1 + fabs(want)))
						fail_msg("metric %d cell %d n %d avx512 %d: %g, want %g",
						         metrics[m], cells[c], n, avx512, got, want);
				}
	/* STRATA_CPU=avx2 turns the AVX-512 path off */
	setenv("STRATA_CPU", "avx2", 1);
	assert_int_equal(store_cpu_avx512(), 0);
	unsetenv("STRATA_CPU");
	/* int32 cells have no kernel */
	assert_null(store_dist_kernel(STORE_METRIC_EUCLIDEAN, BASE_DT_INT32, 0));
}

/* rank's distances of the metrics Vespa adds: hamming, geodegrees. */
static void test_rank_metrics(void **state)
{
	(void)state;
	int8_t a[3] = {0, -1, 5}, b[3] = {1, 1, 5};
	double bq[3] = {1, 1, 5};
	/* 0^1: 1 bit; 0xff ^ 0x01: 7 bits; 5 ^ 5: 0 */
	assert_true(fabs(rank_tensor_distance(RANK_DIST_HAMMING, BASE_DT_INT8, a, BASE_DT_INT8, b, 3) -
	                 8) < 1e-12);
	assert_true(fabs(rank_tensor_distance(RANK_DIST_HAMMING, BASE_DT_INT8, a, BASE_DT_DOUBLE, bq,
	                                      3) - 8) < 1e-12);
	float fa[3] = {1, 2, 3}, fb[3] = {1, 2.5f, 4};
	assert_true(fabs(rank_tensor_distance(RANK_DIST_HAMMING, BASE_DT_FLOAT, fa, BASE_DT_FLOAT, fb,
	                                      3) - 2) < 1e-12);
	assert_true(fabs(rank_closeness_of(RANK_DIST_HAMMING, 8) - 1.0 / 9) < 1e-12);
	/* Oslo (59.91, 10.75) to Trondheim (63.43, 10.40): about 392 km */
	double oslo[2] = {59.91, 10.75}, trd[2] = {63.43, 10.40};
	double km = rank_tensor_distance(RANK_DIST_GEODEGREES, BASE_DT_DOUBLE, oslo, BASE_DT_DOUBLE,
	                                 trd, 2);
	assert_true(km > 388 && km < 396);
	assert_true(fabs(km - store_geo_km(59.91, 10.75, 63.43, 10.40)) < 1e-9);
	/* antipodes: half the circumference */
	double p1[2] = {0, 0}, p2[2] = {0, 180};
	km = rank_tensor_distance(RANK_DIST_GEODEGREES, BASE_DT_DOUBLE, p1, BASE_DT_DOUBLE, p2, 2);
	assert_true(fabs(km - M_PI * 6371.0088) < 1e-6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernels),
		cmocka_unit_test(test_rank_metrics),
		cmocka_unit_test(test_recall_metrics),
		cmocka_unit_test(test_recall_ef),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_update_remove),
		cmocka_unit_test(test_reopen_and_settings),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_alloc_failures),
		cmocka_unit_test(test_kill9),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
