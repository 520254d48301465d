/*
 * test_hnsw_snap.c: what searches share across read transactions and what
 * a write transaction keeps until commit (store/hnsw_snap.c,
 * store/hnsw_cache.c).  Two read transactions on different snapshots
 * searched in turn each see their own documents, with the results a search
 * without the shared tables (in a write transaction) gives; searches on
 * threads while another thread commits changes only return documents of
 * their own snapshot, at the distances their own values give; the tables
 * do not pile up as snapshots come and go; a search, a check and the byte
 * count inside a write transaction see the changes it made so far.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/store.h"
#include "vecgen.h"

#define DIM 16
#define NDOC 2000
#define NQ 30
#define K 10

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

struct fx {
	char dir[64];
	struct store_env *env;
	int dt;
	struct strata_error err;
	struct store_field field;
};

static struct fx *fx_new(void)
{
	struct fx *fx = calloc(1, sizeof *fx);
	strcpy(fx->dir, "/tmp/strata_hsnap_XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	fx->field = (struct store_field){.name = "vec", .type = STORE_T_TENSOR, .attribute = 1,
	                                 .cell = BASE_DT_FLOAT, .rank = 1, .dims = {DIM},
	                                 .hnsw_metric = STORE_METRIC_EUCLIDEAN, .hnsw_m = 8,
	                                 .hnsw_ef = 64};
	struct store_doctype t = {"item", 1, &fx->field};
	if (store_open(fx->dir, &fx->env, &fx->err) != 0 ||
	    store_doctype_add(fx->env, &t, &fx->dt, &fx->err) != 0)
		fail_msg("open: %s", fx->err.msg);
	return fx;
}

static void fx_free(struct fx *fx)
{
	store_close(fx->env);
	nftw(fx->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(fx);
}

/* Vector k of version ver: near centre k % 10, moved by the version. */
static void gen(int k, int ver, float *out)
{
	uint64_t cs = 500 + (uint64_t)(k % 10), ps = (uint64_t)k * 131 + (uint64_t)ver * 7 + 1;
	for (int i = 0; i < DIM; i++)
		out[i] = (float)(vg_gauss(&cs) * 3 + vg_gauss(&ps) + ver);
}

static void put(struct fx *fx, struct store_txn *w, int k, int ver)
{
	float v[DIM];
	gen(k, ver, v);
	struct store_value val = {.set = 1, .n = DIM, .cells = v};
	char id[64];
	snprintf(id, sizeof id, "id:t:item::%d", k);
	if (store_put(w, fx->dt, id, &val, &fx->err) != 0)
		fail_msg("put %d: %s", k, fx->err.msg);
}

static void del(struct fx *fx, struct store_txn *w, int k)
{
	char id[64];
	snprintf(id, sizeof id, "id:t:item::%d", k);
	if (store_remove(w, fx->dt, id, &fx->err) != 0)
		fail_msg("remove %d: %s", k, fx->err.msg);
}

static void feed(struct fx *fx, int from, int to, int ver, int batch)
{
	struct store_txn *w = NULL;
	for (int k = from; k < to; k++) {
		if (!w)
			assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
		put(fx, w, k, ver);
		if ((k + 1 - from) % batch == 0 || k + 1 == to) {
			assert_int_equal(store_txn_commit(w, &fx->err), 0);
			w = NULL;
		}
	}
}

static void query(int qi, double *q)
{
	float v[DIM];
	gen(qi * 7 + 3, qi % 2, v);
	for (int i = 0; i < DIM; i++)
		q[i] = v[i];
}

/* The K hits of query qi in txn; each hit has a value in txn at the
 * distance given (checked here against the value). */
static void search(struct fx *fx, struct store_txn *txn, int qi, uint32_t *lids)
{
	double q[DIM];
	query(qi, q);
	struct store_hit hits[K];
	size_t nh;
	if (store_hnsw_search(txn, fx->dt, 0, q, DIM, K, 40, NULL, 0, hits, &nh, &fx->err) != 0)
		fail_msg("search: %s", fx->err.msg);
	assert_int_equal(nh, K);
	for (int i = 0; i < K; i++) {
		const float *v = store_attr(txn, fx->dt, 0, hits[i].lid);
		assert_non_null(v);
		double d = 0;
		for (int c = 0; c < DIM; c++)
			d += (v[c] - q[c]) * (v[c] - q[c]);
		assert_true(fabs(d - hits[i].distance) <= 1e-3 * (1 + d));
		lids[i] = hits[i].lid;
	}
}

/* The results of every query in a write txn, which keeps no shared table. */
static void expected(struct fx *fx, uint32_t *out)
{
	struct store_txn *w;
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	for (int qi = 0; qi < NQ; qi++)
		search(fx, w, qi, out + qi * K);
	store_txn_abort(w);
}

static void test_two_snapshots(void **state)
{
	(void)state;
	struct fx *fx = fx_new();
	feed(fx, 0, NDOC, 0, 500);
	static uint32_t old_want[NQ * K], new_want[NQ * K], got[K];
	expected(fx, old_want);
	struct store_txn *a, *b, *w;
	assert_int_equal(store_txn_begin(fx->env, 0, &a, &fx->err), 0);
	for (int qi = 0; qi < NQ; qi += 2) { /* half the table filled on the old snapshot */
		search(fx, a, qi, got);
		assert_memory_equal(got, old_want + qi * K, sizeof got);
	}
	/* a third of the documents move (lids kept), a tenth go, 300 come */
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	for (int k = 0; k < NDOC; k += 3)
		put(fx, w, k, 1);
	for (int k = 1; k < NDOC; k += 10)
		del(fx, w, k);
	for (int k = NDOC; k < NDOC + 300; k++)
		put(fx, w, k, 1);
	assert_int_equal(store_txn_commit(w, &fx->err), 0);
	expected(fx, new_want);
	assert_memory_not_equal(old_want, new_want, sizeof old_want);
	assert_int_equal(store_txn_begin(fx->env, 0, &b, &fx->err), 0);
	for (int round = 0; round < 2; round++)
		for (int qi = 0; qi < NQ; qi++) { /* in turn: each sees its own snapshot */
			search(fx, a, qi, got);
			assert_memory_equal(got, old_want + qi * K, sizeof got);
			search(fx, b, qi, got);
			assert_memory_equal(got, new_want + qi * K, sizeof got);
		}
	store_txn_abort(a);
	store_txn_abort(b);
	fx_free(fx);
}

static void test_tables_bounded(void **state)
{
	(void)state;
	struct fx *fx = fx_new();
	feed(fx, 0, NDOC, 0, 1000);
	struct base_alloc_stats s0, s1;
	uint32_t got[K];
	for (int round = 0; round < 12; round++) {
		/* a new snapshot each round, searched with a txn per query */
		struct store_txn *w;
		assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
		put(fx, w, round * 13 % NDOC, round);
		assert_int_equal(store_txn_commit(w, &fx->err), 0);
		for (int qi = 0; qi < NQ; qi++) {
			struct store_txn *r;
			assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
			search(fx, r, qi, got);
			store_txn_abort(r);
		}
		if (round == 1)
			base_alloc_stats(&s0);
	}
	base_alloc_stats(&s1);
	assert_int_equal(s1.live_bytes, s0.live_bytes);
	fx_free(fx);
}

struct reader {
	struct fx *fx;
	int bad;
	char msg[200];
};

/* Searches in fresh read txns; every hit must have a value in the txn at
 * the distance returned. */
static void *read_loop(void *arg)
{
	struct reader *rd = arg;
	struct strata_error err = {0};
	for (int i = 0; i < 300 && !rd->bad; i++) {
		struct store_txn *r;
		if (store_txn_begin(rd->fx->env, 0, &r, &err) != 0) {
			rd->bad = 1;
			snprintf(rd->msg, sizeof rd->msg, "begin: %.150s", err.msg);
			break;
		}
		double q[DIM];
		query(i % NQ, q);
		struct store_hit hits[K];
		size_t nh;
		if (store_hnsw_search(r, rd->fx->dt, 0, q, DIM, K, 40, NULL, 0, hits, &nh, &err) != 0) {
			rd->bad = 1;
			snprintf(rd->msg, sizeof rd->msg, "search: %.150s", err.msg);
		}
		for (size_t j = 0; j < nh && !rd->bad; j++) {
			const float *v = store_attr(r, rd->fx->dt, 0, hits[j].lid);
			double d = 0;
			for (int c = 0; v && c < DIM; c++)
				d += (v[c] - q[c]) * (v[c] - q[c]);
			if (!v || fabs(d - hits[j].distance) > 1e-3 * (1 + d)) {
				rd->bad = 1;
				snprintf(rd->msg, sizeof rd->msg, "hit %u: %s", hits[j].lid,
				         v ? "wrong distance" : "no value");
			}
		}
		store_txn_abort(r);
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	struct fx *fx = fx_new();
	feed(fx, 0, NDOC, 0, 1000);
	struct reader rd[3];
	pthread_t th[3];
	for (int i = 0; i < 3; i++) {
		rd[i] = (struct reader){.fx = fx};
		assert_int_equal(pthread_create(&th[i], NULL, read_loop, &rd[i]), 0);
	}
	/* meanwhile: documents move and go, in small commits */
	for (int round = 0; round < 30; round++) {
		struct store_txn *w;
		assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
		for (int k = round; k < NDOC; k += 97)
			put(fx, w, k, round + 1);
		del(fx, w, (round * 61 + 5) % NDOC);
		assert_int_equal(store_txn_commit(w, &fx->err), 0);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		if (rd[i].bad)
			fail_msg("reader %d: %s", i, rd[i].msg);
	}
	fx_free(fx);
}

/* Inside a write txn, reads of the graph see what the txn changed. */
static void test_write_txn_reads(void **state)
{
	(void)state;
	struct fx *fx = fx_new();
	feed(fx, 0, 500, 0, 500);
	struct store_txn *w;
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	uint64_t before = store_hnsw_bytes(w, fx->dt, 0), nodes = 0;
	for (int k = 500; k < 800; k++)
		put(fx, w, k, 0);
	for (int k = 0; k < 100; k++)
		del(fx, w, k);
	assert_int_equal(store_hnsw_check(w, fx->dt, 0, &nodes, &fx->err), 0);
	assert_int_equal(nodes, 700);
	assert_true(store_hnsw_bytes(w, fx->dt, 0) > before);
	uint32_t got[K];
	for (int qi = 0; qi < NQ; qi++) {
		search(fx, w, qi, got);
		for (int i = 0; i < K; i++)
			assert_true(got[i] >= 100);
	}
	/* and the txn goes on writing after those reads */
	for (int k = 800; k < 900; k++)
		put(fx, w, k, 0);
	assert_int_equal(store_txn_commit(w, &fx->err), 0);
	struct store_txn *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	assert_int_equal(store_hnsw_check(r, fx->dt, 0, &nodes, &fx->err), 0);
	assert_int_equal(nodes, 800);
	store_txn_abort(r);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_snapshots),
		cmocka_unit_test(test_tables_bounded),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_write_txn_reads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
