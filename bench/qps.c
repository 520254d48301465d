/*
 * qps.c: queries per second of a two-phase rank profile through the whole
 * engine, with the evaluation-state pools on and off.
 *
 *     qps [--docs N] [--rounds R] [--queries K] [--warmup W] [--threads T] MLP_RANKER DIR
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
 * Measurement: first one core's read bandwidth: a sum of floats over 512
 * MiB (far beyond the last cache level), 7 passes after one that faults the
 * pages in, the median pass by wall time and by CPU time; and the same sum
 * over the store's file, read in place through a read-only map as the
 * first phase reads it (its pages are the file cache's, placed wherever the
 * kernel put them: this can be well below the bandwidth of fresh anonymous
 * memory, and bounds what the first phase can read).  Then R rounds
 * (5); in each, the application is opened once per mode (pool_generations 1,
 * "on", and -1, "off": strata.h, on one thread; then "on" with
 * search_threads T, 2 by default), the mode going first rotating from round
 * to round, then W warm-up queries (3) and K timed queries (10) run one
 * after the other on this thread, and the application is closed.  A round's
 * figure is K over the wall time of its K queries; qps is the median over
 * the rounds, cpu_ms_per_query the median of the process's CPU time per
 * query (all threads).  gb_per_s is what the first phase must read per
 * query (N x 384 x 4 bytes of cells) times qps, of_bandwidth that over the
 * wall-time bandwidth.  allocs_per_query is strata_stats' rank_allocs
 * (allocations in the rank VM, its query states and the model runtime) over
 * the timed queries, divided by their number; pool_hits and pool_misses are
 * the model run contexts taken back from the runtime's pool and made anew
 * over the timed queries (R x K of them).  The results of every mode must be
 * the same bytes; a difference is an error.
 *
 * Output: the bandwidth, a table and one JSON line per mode, e.g.
 *     {"pool": "on", "threads": 1, "qps": 120, "cpu_ms_per_query": 8.2, "gb_per_s": 18.4,
 *      "of_bandwidth": 0.61, "allocs_per_query": 0, "pool_hits": 50, "pool_misses": 0}
 * then one line with the bandwidth, the bytes and the speed-up of T threads,
 * and the goals (one thread at 70% of the bandwidth or more, T threads at
 * 1.8 times one thread or more), reported, not enforced.
 */
#include <errno.h>
#include <fcntl.h>
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/mman.h>

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
	snprintf(buf, size, "qps store 2: %ld documents of tensor<float>(x[%d]), seed %llx\n", n,
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

/* ---- the machine's read bandwidth --------------------------------------------------------- */

#define BW_BYTES ((size_t)512 << 20) /* 16x the L3 of the machines this runs on */
#define BW_REPS 7

/* The calling thread's CPU time in seconds. */
static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The sum of n floats (n a multiple of 64) in eight AVX sums: enough
 * independent additions that the loop waits on memory, not on them. */
static float sum_floats(const float *p, size_t n)
{
	__m256 s[8];
	for (int k = 0; k < 8; k++)
		s[k] = _mm256_setzero_ps();
	for (size_t i = 0; i < n; i += 64)
		for (int k = 0; k < 8; k++)
			s[k] = _mm256_add_ps(s[k], _mm256_load_ps(p + i + 8 * k));
	for (int k = 1; k < 8; k++)
		s[0] = _mm256_add_ps(s[0], s[k]);
	float v[8];
	_mm256_storeu_ps(v, s[0]);
	return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}

/* One core's read bandwidth, GB/s: a sum over BW_BYTES (far beyond the
 * last cache level, so every pass comes from memory), BW_REPS passes after
 * one that faults the pages in; the median pass, by wall time (*wall) and
 * by this thread's CPU time (*cpu). */
static int read_bandwidth(double *wall, double *cpu)
{
	float *p = base_alloc(BW_BYTES);
	if (!p)
		return bench_fail("out of memory for the bandwidth buffer");
	size_t n = BW_BYTES / sizeof *p;
	for (size_t i = 0; i < n; i++)
		p[i] = (float)(i & 1023);
	double w[BW_REPS], c[BW_REPS];
	volatile float sink = 0;
	for (int r = 0; r < BW_REPS; r++) {
		double t0 = base_now(), c0 = cpu_now();
		sink += sum_floats(p, n);
		c[r] = (double)BW_BYTES / (cpu_now() - c0) / 1e9;
		w[r] = (double)BW_BYTES / (base_now() - t0) / 1e9;
	}
	(void)sink;
	base_free(p, BW_BYTES);
	*wall = bench_median(w, BW_REPS);
	*cpu = bench_median(c, BW_REPS);
	return 0;
}

/* The read bandwidth of the store's own pages, GB/s: sum_floats over the
 * map of DIR/.strata/data.mdb, read in place as the first phase reads it
 * (pages of the file's cache, mapped read-only), BW_REPS passes after one
 * that maps them in, the median by wall time; *mb its size.  The first
 * phase can read its cells no faster than this. */
static int map_bandwidth(const char *dir, double *gbs, double *mb)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/.strata/data.mdb", dir);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return bench_fail("%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size < 256) {
		close(fd);
		return bench_fail("%s: cannot read its size", path);
	}
	size_t bytes = (size_t)st.st_size / 256 * 256;
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return bench_fail("%s: mmap: %s", path, strerror(errno));
	double w[BW_REPS];
	volatile float sink = sum_floats(m, bytes / sizeof(float));
	for (int r = 0; r < BW_REPS; r++) {
		double t0 = base_now();
		sink += sum_floats(m, bytes / sizeof(float));
		w[r] = (double)bytes / (base_now() - t0) / 1e9;
	}
	(void)sink;
	munmap(m, (size_t)st.st_size);
	*gbs = bench_median(w, BW_REPS);
	*mb = (double)bytes / 1e6;
	return 0;
}

/* The read bandwidth of T cores together, GB/s: T threads each summing its
 * T-th of a buffer of BW_BYTES, BW_REPS passes after one that faults the
 * pages in, the median by wall time.  What T threads of a first phase that
 * reads from memory can do at most. */
struct bw_part {
	const float *p;
	size_t n;
	volatile float sink;
};

static void *bw_thread(void *arg)
{
	struct bw_part *b = arg;
	b->sink += sum_floats(b->p, b->n);
	return NULL;
}

static int read_bandwidth_together(int t, double *wall)
{
	float *p = base_alloc(BW_BYTES);
	struct bw_part parts[64];
	pthread_t th[64];
	if (!p)
		return bench_fail("out of memory for the bandwidth buffer");
	size_t n = BW_BYTES / sizeof *p, each = n / (size_t)t / 64 * 64;
	for (size_t i = 0; i < n; i++)
		p[i] = (float)(i & 1023);
	double w[BW_REPS + 1];
	for (int r = 0; r <= BW_REPS; r++) {
		double t0 = base_now();
		int started = 1;
		for (int k = 0; k < t; k++)
			parts[k] = (struct bw_part){ p + (size_t)k * each, each, 0 };
		for (int k = 1; k < t; k++)
			started += pthread_create(&th[k], NULL, bw_thread, &parts[k]) == 0;
		bw_thread(&parts[0]);
		for (int k = 1; k < started; k++)
			pthread_join(th[k], NULL);
		if (started < t) {
			base_free(p, BW_BYTES);
			return bench_fail("could not start %d threads", t);
		}
		w[r] = (double)each * (size_t)t * sizeof *p / (base_now() - t0) / 1e9;
	}
	base_free(p, BW_BYTES);
	*wall = bench_median(w + 1, BW_REPS);
	return 0;
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
	int threads;                 /* strata_options.search_threads */
	double qps[MAX_ROUNDS];
	double cpu_ms[MAX_ROUNDS];   /* process CPU time per query, all threads */
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
	struct strata_options o = { .pool_generations = m->generations,
		                    .search_threads = m->threads };
	struct strata *db;
	struct strata_error err = { 0 };
	if (strata_open(dir, &o, &db, &err) != 0)
		return bench_fail("%s", err.msg);
	int rc = 0;
	for (int i = 0; i < warmup && rc == 0; i++)
		rc = query(db, i, round == 0 && i == 0 ? &m->answer : NULL);
	struct strata_stats a, b;
	strata_stats(db, &a);
	struct timespec c0, c1;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	double t0 = base_now();
	for (int i = 0; i < k && rc == 0; i++)
		rc = query(db, warmup + i, NULL);
	double t = base_now() - t0;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	strata_stats(db, &b);
	strata_close(db);
	if (rc)
		return rc;
	m->qps[round] = k / t;
	m->cpu_ms[round] = 1e3 * ((double)(c1.tv_sec - c0.tv_sec) +
	                          1e-9 * (double)(c1.tv_nsec - c0.tv_nsec)) / k;
	m->queries += b.queries - a.queries;
	m->allocs += b.rank_allocs - a.rank_allocs;
	m->hits += b.pool_hits - a.pool_hits;
	m->misses += b.pool_misses - a.pool_misses;
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: qps [--docs N] [--rounds R] [--queries K] [--warmup W] "
	                "[--threads T] MLP_RANKER.onnx DIR\n");
	return 2;
}

#define NMODES 3

int main(int argc, char **argv)
{
	long docs = 100000, rounds = 5, k = 10, warmup = 3, threads = 2;
	int i;
	for (i = 1; i < argc && argv[i][0] == '-'; i += 2) {
		long *p = !strcmp(argv[i], "--docs") ? &docs : !strcmp(argv[i], "--rounds") ? &rounds :
		          !strcmp(argv[i], "--queries") ? &k : !strcmp(argv[i], "--warmup") ? &warmup :
		          !strcmp(argv[i], "--threads") ? &threads : NULL;
		char *end;
		if (!p || i + 1 >= argc)
			return usage();
		*p = strtol(argv[i + 1], &end, 10);
		if (*end || end == argv[i + 1] || *p < 0)
			return usage();
	}
	if (argc - i != 2 || docs < 1 || rounds < 1 || rounds > MAX_ROUNDS || k < 1 || warmup < 1 ||
	    threads < 2 || threads > 64)
		return usage();
	const char *model = argv[i], *dir = argv[i + 1];
	if (write_app(dir, model) || prepare_store(dir, docs) || make_requests())
		return 1;
	double bw = 0, bw_cpu = 0, bw_all = 0, bw_map = 0, map_mb = 0;
	if (read_bandwidth(&bw, &bw_cpu) || read_bandwidth_together((int)threads, &bw_all) ||
	    map_bandwidth(dir, &bw_map, &map_mb))
		return 1;

	struct mode modes[NMODES] = { { .name = "on", .generations = 1, .threads = 1 },
		                      { .name = "off", .generations = -1, .threads = 1 },
		                      { .name = "on", .generations = 1, .threads = (int)threads } };
	fprintf(stderr, "qps: %ld rounds of %ld queries per mode after %ld warm-up queries\n",
	        rounds, k, warmup);
	int rc = 0;
	for (int r = 0; r < rounds && rc == 0; r++)
		for (int j = 0; j < NMODES && rc == 0; j++)
			rc = round_of(dir, &modes[(r + j) % NMODES], r, (int)warmup, (int)k);
	for (int j = 1; j < NMODES && rc == 0; j++)
		if (strcmp(modes[0].answer, modes[j].answer) != 0)
			rc = bench_fail("pool %s with %d threads gave another result than pool on with "
			                "one thread for the same request", modes[j].name,
			                modes[j].threads);
	if (rc)
		return rc;

	/* What the first phase must read of each document: its cells. */
	double bytes = (double)docs * DIM * sizeof(float);
	printf("two-phase profile: first phase sum(query(q) * attribute(emb)) over %ld documents "
	       "of tensor<float>(x[%d]),\nsecond phase mlp_ranker over the best %d; "
	       "median of %ld rounds of %ld queries\n\n", docs, DIM, RERANK, rounds, k);
	printf("read bandwidth of one core (sum over %zu MiB, median of %d): %.2f GB/s "
	       "(%.2f GB/s by CPU time)\n", BW_BYTES >> 20, BW_REPS, bw, bw_cpu);
	printf("read bandwidth of %ld cores together: %.2f GB/s, %.2fx one core's\n", threads,
	       bw_all, bw_all / bw);
	printf("read bandwidth of the store's map in place (sum over its %.0f MB, median of %d): "
	       "%.2f GB/s, %.1f%% of one core's\n", map_mb, BW_REPS, bw_map, 100 * bw_map / bw);
	printf("the first phase reads %.1f MB per query\n\n", bytes / 1e6);
	printf("%-5s %7s %9s %9s %9s %8s %8s %12s %9s %11s\n", "pool", "threads", "qps",
	       "ms/query", "cpu ms/q", "GB/s", "of bw", "allocs/query", "pool hits", "pool misses");
	double q[NMODES], apq[NMODES], cpu[NMODES];
	for (int j = 0; j < NMODES; j++) {
		struct mode *m = &modes[j];
		q[j] = bench_median(m->qps, (size_t)rounds);
		cpu[j] = bench_median(m->cpu_ms, (size_t)rounds);
		apq[j] = m->queries ? (double)m->allocs / (double)m->queries : 0;
		printf("%-5s %7d %9.2f %9.2f %9.2f %8.2f %7.1f%% %12.2f %9llu %11llu\n", m->name,
		       m->threads, q[j], 1000 / q[j], cpu[j], bytes * q[j] / 1e9,
		       100 * bytes * q[j] / 1e9 / bw, apq[j], m->hits, m->misses);
	}
	printf("\n");
	for (int j = 0; j < NMODES; j++)
		printf("{\"pool\": \"%s\", \"threads\": %d, \"qps\": %.6g, \"cpu_ms_per_query\": %.6g, "
		       "\"gb_per_s\": %.6g, \"of_bandwidth\": %.4f, \"allocs_per_query\": %.6g, "
		       "\"pool_hits\": %llu, \"pool_misses\": %llu}\n", modes[j].name,
		       modes[j].threads, q[j], cpu[j], bytes * q[j] / 1e9, bytes * q[j] / 1e9 / bw,
		       apq[j], modes[j].hits, modes[j].misses);
	/* by CPU time too: on a shared machine the steadier pair */
	double frac = bytes * q[0] / 1e9 / bw, ratio = q[2] / q[0];
	double frac_cpu = bytes / (cpu[0] / 1e3) / 1e9 / bw_cpu;
	printf("{\"bandwidth_gb_per_s\": %.6g, \"bandwidth_cpu_gb_per_s\": %.6g, "
	       "\"bandwidth_together_gb_per_s\": %.6g, "
	       "\"map_bandwidth_gb_per_s\": %.6g, "
	       "\"first_phase_bytes\": %.0f, \"of_bandwidth_cpu\": %.4f, \"threads\": %ld, "
	       "\"speedup\": %.4f}\n\n", bw, bw_cpu, bw_all, bw_map, bytes, frac_cpu, threads, ratio);
	printf("goal: one thread reads at >= 70%% of the bandwidth: %.1f%% (%.1f%% by CPU time), "
	       "%s", 100 * frac, 100 * frac_cpu, frac >= 0.7 ? "met" : "NOT MET");
	/* The cells come from the store's map: a plain sum reads it at bw_map. */
	printf(" (a plain sum over the store's map reads it at %.1f%% of the bandwidth; the "
	       "first phase reads at %.1f%% of that)\n", 100 * bw_map / bw,
	       100 * bytes * q[0] / 1e9 / bw_map);
	printf("goal: %ld threads >= 1.8x one: %.2fx, %s", threads, ratio,
	       ratio >= 1.8 ? "met" : "NOT MET");
	/* The first phase reads memory: T threads read at most bw_all. */
	printf(" (%ld threads' first phases can read at most %.2fx what one thread's reads here: "
	       "%.2f GB/s together over %.2f GB/s)\n", threads, bw_all / (bytes * q[0] / 1e9),
	       bw_all, bytes * q[0] / 1e9);
	for (int j = 0; j < NMODES; j++)
		strata_free(modes[j].answer);
	for (int j = 0; j < NQVEC; j++)
		base_free(requests[j], REQ_CAP);
	return 0;
}
