/*
 * qps.c: queries per second of a two-phase rank profile through the whole
 * engine, with the evaluation-state pools on and off.
 *
 *     qps [--docs N] [--rounds R] [--queries K] [--warmup W] MLP_RANKER DIR
 *
 * MLP_RANKER is mlp_ranker.onnx (query_emb [batch, 384] and doc_emb [batch,
 * 384] in, score [batch, 1] out: mkbench writes one, the peer's mkmodels.js
 * another).  DIR becomes an application: schemas/qps.sd (below), a copy of
 * the model in models/, and the store in DIR/.strata holding N documents
 * (100,000 by default), each a tensor<float>(x[384]) attribute drawn from a
 * fixed generator.  The documents go in through the store in one write
 * transaction (JSON would cost more than the queries); once the transaction
 * committed, DIR/.strata/qps-complete records what was fed, and a later run
 * that finds the same record and the same count reuses the store.
 *
 * The profile: the first phase is sum(query(q) * attribute(emb)), a dot
 * product read in place from the store's map, over every document; the
 * second phase runs mlp_ranker once over the best 100 (doc_emb rows stacked,
 * query_emb repeated).  A request asks for 10 hits; its query(q) is one of 8
 * fixed vectors, in turn, so every query has the same shape.
 *
 * Measurement: R rounds (5); in each, the application is opened once per
 * mode (pool_generations 1, "on", then -1, "off": strata.h), the mode going
 * first alternating from round to round, then W warm-up queries (3) and K
 * timed queries (10) run one after the other on this thread, and the
 * application is closed.  A round's figure is K over the wall time of its K
 * queries; qps is the median over the rounds.  allocs_per_query is
 * strata_stats' rank_allocs (allocations in the rank VM, its query state and
 * the model runtime) over the timed queries, divided by their number;
 * pool_hits and pool_misses are the model run contexts taken back from the
 * runtime's pool and made anew over the timed queries (R x K of them).  The
 * results of both modes must be the same bytes; a difference is an error.
 *
 * Output: a table and one JSON line per mode, e.g.
 *     {"pool": "on", "qps": 21.5, "allocs_per_query": 0, "pool_hits": 50, "pool_misses": 0}
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../engine/engine_int.h"
#include "../tests/vecgen.h"
#include "common.h"

#define DIM 384
#define RERANK 100
#define NQVEC 8
#define SEED 0x9e3779b97f4a7c15ull
#define MAX_ROUNDS 100
#define REQ_CAP (256 + (size_t)DIM * 24) /* a request's text: 24 bytes a cell at most */

static const char *schema_text =
	"# Written by bench/qps.c: a two-phase profile over a 384-float embedding.\n"
	"schema vec {\n"
	"    document vec {\n"
	"        field emb type tensor<float>(x[384]) {\n"
	"            indexing: attribute\n"
	"        }\n"
	"    }\n"
	"    rank-profile twophase {\n"
	"        inputs {\n"
	"            query(q) tensor<float>(x[384])\n"
	"        }\n"
	"        onnx-model mlp {\n"
	"            file: models/mlp_ranker.onnx\n"
	"            input \"query_emb\": query(q)\n"
	"            input \"doc_emb\": attribute(emb)\n"
	"            output \"score\": score\n"
	"        }\n"
	"        first-phase {\n"
	"            expression: sum(query(q) * attribute(emb))\n"
	"        }\n"
	"        second-phase {\n"
	"            rerank-count: 100\n"
	"            expression: sum(onnx(mlp).score)\n"
	"        }\n"
	"    }\n"
	"}\n";

/* ---- the data ------------------------------------------------------------------------ */

/* DIM cells uniform in +-sqrt(3 / DIM): about unit length.  The draws are
 * splitmix64's (tests/vecgen.h): the same stream on every machine. */
static void draw(uint64_t *s, float *v)
{
	double scale = sqrt(3.0 / DIM);
	for (int i = 0; i < DIM; i++)
		v[i] = (float)(scale * (2.0 * vg_unit(s) - 1.0));
}

/* ---- the application folder --------------------------------------------------------------- */

/* The folder, the schema and a copy of the model (rewritten every run: a
 * new mkbench may have changed it; the store does not depend on it). */
static int write_app(const char *dir, const char *model)
{
	char path[4096];
	struct base_map m;
	struct strata_error err;
	if (bench_write_schema(dir, "qps", schema_text))
		return 1;
	snprintf(path, sizeof path, "%s/models", dir);
	if (bench_make_dir(path))
		return 1;
	if (base_map_file(model, &m, &err) != 0)
		return bench_fail("%s", err.msg);
	snprintf(path, sizeof path, "%s/models/mlp_ranker.onnx", dir);
	int rc = bench_write_file(path, m.data, m.size);
	base_unmap(&m);
	return rc;
}

/* What qps-complete holds for n documents. */
static void record_text(char *buf, size_t size, long n)
{
	snprintf(buf, size, "qps store 1: %ld documents of tensor<float>(x[%d]), seed %llx\n", n,
	         DIM, (unsigned long long)SEED);
}

static int store_complete(const char *dir, long n)
{
	char path[4096], want[256], got[256] = "";
	snprintf(path, sizeof path, "%s/.strata/qps-complete", dir);
	record_text(want, sizeof want, n);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t k = fread(got, 1, sizeof got - 1, f);
	fclose(f);
	got[k] = 0;
	return strcmp(got, want) == 0;
}

/* Feed n documents in one write transaction, then write qps-complete. */
static int feed(struct strata *db, const char *dir, long n)
{
	struct strata_error err = { 0 };
	struct eng_doctype *dt = eng_doctype_find(db, "vec");
	if (!dt || dt->nfields != 1)
		return bench_fail("the application has no document type 'vec' of one field");
	float cells[DIM];
	struct store_value v = { .set = 1, .n = DIM, .cells = cells };
	struct store_txn *w;
	uint64_t s = SEED;
	double t0 = base_now();
	if (store_txn_begin(db->env, 1, &w, &err) != 0)
		return bench_fail("%s", err.msg);
	for (long d = 0; d < n; d++) {
		char id[64];
		snprintf(id, sizeof id, "id:qps:vec::%ld", d);
		draw(&s, cells);
		if (store_put(w, dt->store_id, id, &v, &err) != 0) {
			store_txn_abort(w);
			return bench_fail("document %ld: %s", d, err.msg);
		}
	}
	if (store_txn_commit(w, &err) != 0)
		return bench_fail("commit: %s", err.msg);
	char path[4096], text[256];
	snprintf(path, sizeof path, "%s/.strata/qps-complete", dir);
	record_text(text, sizeof text, n);
	if (bench_write_file(path, text, strlen(text)))
		return 1;
	fprintf(stderr, "qps: fed %ld documents in %.1f s\n", n, base_now() - t0);
	return 0;
}

/* The store, reused when a run completed it, else fed anew. */
static int prepare_store(const char *dir, long n)
{
	char data[4096];
	snprintf(data, sizeof data, "%s/.strata", dir);
	struct strata *db;
	struct strata_error err = { 0 };
	if (store_complete(dir, n)) {
		if (strata_open(dir, NULL, &db, &err) != 0)
			return bench_fail("%s", err.msg);
		struct store_txn *r;
		uint64_t count = 0;
		struct eng_doctype *dt = eng_doctype_find(db, "vec");
		if (dt && store_txn_begin(db->env, 0, &r, &err) == 0) {
			count = store_count(r, dt->store_id);
			store_txn_abort(r);
		}
		strata_close(db);
		if (count == (uint64_t)n) {
			fprintf(stderr, "qps: reusing the store in %s (%ld documents)\n", data, n);
			return 0;
		}
	}
	if (bench_remove_tree(data) != 0 && errno != ENOENT)
		return bench_fail("cannot remove %s: %s", data, strerror(errno));
	fprintf(stderr, "qps: feeding %ld documents into %s\n", n, data);
	if (strata_open(dir, NULL, &db, &err) != 0)
		return bench_fail("%s", err.msg);
	int rc = feed(db, dir, n);
	strata_close(db);
	return rc;
}

/* ---- the queries ------------------------------------------------------------------------- */

/* NQVEC requests: the same profile and page, query(q) drawn after the
 * documents' stream. */
static char *requests[NQVEC];

static int make_requests(void)
{
	uint64_t s = SEED ^ 0x5151u;
	float q[DIM];
	for (int k = 0; k < NQVEC; k++) {
		size_t cap = REQ_CAP, n;
		char *r = base_alloc(cap);
		if (!r)
			return bench_fail("out of memory");
		draw(&s, q);
		n = (size_t)snprintf(r, cap, "{\"yql\": \"select * from sources * where true\", "
		                             "\"ranking.profile\": \"twophase\", \"hits\": 10, "
		                             "\"input.query(q)\": [");
		for (int i = 0; i < DIM; i++)
			n += (size_t)snprintf(r + n, cap - n, "%s%.9g", i ? "," : "", (double)q[i]);
		snprintf(r + n, cap - n, "]}");
		requests[k] = r;
	}
	return 0;
}

struct mode {
	const char *name;
	int generations;
	double qps[MAX_ROUNDS];
	unsigned long long queries, allocs, hits, misses;
	char *answer;                /* the result of request 0, first round */
};

static int query(struct strata *db, int k, char **out)
{
	struct strata_error err = { 0 };
	char *result = NULL;
	if (strata_query_json(db, requests[k % NQVEC], &result, &err) != 0)
		return bench_fail("query: %s", err.msg);
	if (out)
		*out = result;
	else
		strata_free(result);
	return 0;
}

/* One round of one mode: open, warm up, time K queries, close. */
static int round_of(const char *dir, struct mode *m, int round, int warmup, int k)
{
	struct strata_options o = { .pool_generations = m->generations };
	struct strata *db;
	struct strata_error err = { 0 };
	if (strata_open(dir, &o, &db, &err) != 0)
		return bench_fail("%s", err.msg);
	int rc = 0;
	for (int i = 0; i < warmup && rc == 0; i++)
		rc = query(db, i, round == 0 && i == 0 ? &m->answer : NULL);
	struct strata_stats a, b;
	strata_stats(db, &a);
	double t0 = base_now();
	for (int i = 0; i < k && rc == 0; i++)
		rc = query(db, warmup + i, NULL);
	double t = base_now() - t0;
	strata_stats(db, &b);
	strata_close(db);
	if (rc)
		return rc;
	m->qps[round] = k / t;
	m->queries += b.queries - a.queries;
	m->allocs += b.rank_allocs - a.rank_allocs;
	m->hits += b.pool_hits - a.pool_hits;
	m->misses += b.pool_misses - a.pool_misses;
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: qps [--docs N] [--rounds R] [--queries K] [--warmup W] "
	                "MLP_RANKER.onnx DIR\n");
	return 2;
}

int main(int argc, char **argv)
{
	long docs = 100000, rounds = 5, k = 10, warmup = 3;
	int i;
	for (i = 1; i < argc && argv[i][0] == '-'; i += 2) {
		long *p = !strcmp(argv[i], "--docs") ? &docs : !strcmp(argv[i], "--rounds") ? &rounds :
		          !strcmp(argv[i], "--queries") ? &k : !strcmp(argv[i], "--warmup") ? &warmup :
		          NULL;
		char *end;
		if (!p || i + 1 >= argc)
			return usage();
		*p = strtol(argv[i + 1], &end, 10);
		if (*end || end == argv[i + 1] || *p < 0)
			return usage();
	}
	if (argc - i != 2 || docs < 1 || rounds < 1 || rounds > MAX_ROUNDS || k < 1 || warmup < 1)
		return usage();
	const char *model = argv[i], *dir = argv[i + 1];
	if (write_app(dir, model) || prepare_store(dir, docs) || make_requests())
		return 1;

	struct mode modes[2] = { { .name = "on", .generations = 1 },
		                 { .name = "off", .generations = -1 } };
	fprintf(stderr, "qps: %ld rounds of %ld queries per mode after %ld warm-up queries\n",
	        rounds, k, warmup);
	int rc = 0;
	for (int r = 0; r < rounds && rc == 0; r++)
		for (int j = 0; j < 2 && rc == 0; j++)
			rc = round_of(dir, &modes[(r + j) % 2], r, (int)warmup, (int)k);
	if (rc == 0 && strcmp(modes[0].answer, modes[1].answer) != 0)
		rc = bench_fail("the two modes gave different results for the same request");
	if (rc)
		return rc;

	printf("two-phase profile: first phase sum(query(q) * attribute(emb)) over %ld documents "
	       "of tensor<float>(x[%d]),\nsecond phase mlp_ranker over the best %d; "
	       "median of %ld rounds of %ld queries, one thread\n\n", docs, DIM, RERANK, rounds, k);
	printf("%-5s %10s %10s %14s %10s %12s\n", "pool", "qps", "ms/query", "allocs/query",
	       "pool hits", "pool misses");
	double q[2], apq[2];
	for (int j = 0; j < 2; j++) {
		struct mode *m = &modes[j];
		q[j] = bench_median(m->qps, (size_t)rounds);
		apq[j] = m->queries ? (double)m->allocs / (double)m->queries : 0;
		printf("%-5s %10.2f %10.2f %14.2f %10llu %12llu\n", m->name, q[j], 1000 / q[j], apq[j],
		       m->hits, m->misses);
	}
	printf("\n");
	for (int j = 0; j < 2; j++)
		printf("{\"pool\": \"%s\", \"qps\": %.6g, \"allocs_per_query\": %.6g, "
		       "\"pool_hits\": %llu, \"pool_misses\": %llu}\n", modes[j].name, q[j], apq[j],
		       modes[j].hits, modes[j].misses);
	for (int j = 0; j < 2; j++)
		strata_free(modes[j].answer);
	for (int j = 0; j < NQVEC; j++)
		base_free(requests[j], REQ_CAP);
	return 0;
}
