/*
 * test_firstphase.c: the first phase at memory speed and over threads.
 *
 * - dot.c's kernels (AVX-512 where the machine has it, and AVX2) give the
 *   bits of rank_tensor_dot for float, double, bfloat16 and int8 rows of
 *   every length from 1 to 41 (the tail past the last group of eight
 *   included), checked against a sum written out here as the eight running
 *   sums that function documents;
 * - the dot-product shape (firstdot.c, rows read a block at a time through
 *   store_attr_rows) ranks as the same sum plus attribute(n) * 0, which the
 *   VM runs document by document: the same result text;
 * - a search split over 2, 3 and 4 threads returns the bytes one thread
 *   returns: for the dot-product shape (firstdot.c), for an expression the
 *   VM runs (also split) and for one that reads text features (not split),
 *   with ties (documents with the same vector), documents without the
 *   field, and every hit of the store (hits 400) so the whole order shows;
 *   and so do searches from three threads at once on a handle with two
 *   search threads (one splits, the others score alone meanwhile);
 * - the search threads: each worker joins a run while the caller's share
 *   lasts, and a run started while another holds the pool runs on its
 *   caller alone;
 * - the second phase split over 2, 3 and 4 threads, its candidates in
 *   chunks: the bytes one thread returns, for a model over an attribute and
 *   for an expression; one that reads a text feature is not split;
 * - num-threads-per-search and min-hits-per-thread are read, inherited and
 *   refused when not positive integers (file:line:col); search_threads out
 *   of range is refused.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "../engine/engine_int.h"
#include "../rank/rank_eval.h"
#include "apptest.h"
#include "modelbuild.h"
#include "vecgen.h"

/* ---- the kernels ----------------------------------------------------------- */

/* rank_tensor_dot's sum, written out: eight sums, i mod 8, combined
 * pairwise. */
static double eight_sums(int cell, const void *row, const double *q, size_t n)
{
	double p[8] = { 0 };
	for (size_t i = 0; i < n; i++)
		p[i % 8] += rank_cell(cell, row, i) * q[i];
	return ((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7]));
}

static void fill_cells(int cell, void *row, size_t n, uint64_t *s)
{
	for (size_t i = 0; i < n; i++) {
		double x = 8.0 * vg_unit(s) - 4.0;
		switch (cell) {
		case BASE_DT_FLOAT: ((float *)row)[i] = (float)x; break;
		case BASE_DT_DOUBLE: ((double *)row)[i] = x; break;
		case BASE_DT_BFLOAT16: ((uint16_t *)row)[i] = base_f32_to_bf16((float)x); break;
		default: ((int8_t *)row)[i] = (int8_t)(x * 30); break;
		}
	}
}

static void test_kernels_exact(void **state)
{
	(void)state;
	static const int cells[] = { BASE_DT_FLOAT, BASE_DT_DOUBLE, BASE_DT_BFLOAT16, BASE_DT_INT8 };
	enum { NROWS = 11, MAXN = 41 };
	uint64_t s = 42;
	double q[MAXN], out[NROWS];
	for (int c = 0; c < 4; c++) {
		int cell = cells[c];
		assert_true(rank_dot_cell_ok(cell));
		size_t sz = base_dtype_size(cell);
		for (size_t n = 1; n <= MAXN; n++) {
			/* rows one cell into the buffer and n cells apart: the
			 * kernels read them at every alignment a cell allows */
			char *buf = malloc((NROWS * MAXN + 1) * sz);
			const void *rows[NROWS];
			for (int r = 0; r < NROWS; r++) {
				rows[r] = buf + sz + (size_t)r * n * sz;
				fill_cells(cell, (void *)rows[r], n, &s);
			}
			for (size_t i = 0; i < n; i++)
				q[i] = 2.0 * vg_unit(&s) - 1.0;
			for (int avx512 = 0; avx512 <= rank_dot_avx512(); avx512++) {
				rank_dot_rows(avx512, cell, rows, NROWS, q, n, out);
				for (int r = 0; r < NROWS; r++) {
					double want = eight_sums(cell, rows[r], q, n);
					double vm = rank_tensor_dot(cell, rows[r], BASE_DT_DOUBLE, q, n);
					double vm2 = rank_tensor_dot(BASE_DT_DOUBLE, q, cell, rows[r], n);
					assert_memory_equal(&out[r], &want, sizeof want);
					assert_memory_equal(&vm, &want, sizeof want);
					assert_memory_equal(&vm2, &want, sizeof want);
				}
			}
			free(buf);
		}
	}
}

/* ---- searches over threads ------------------------------------------------ */

#define DIM 19
#define NDOCS 1500

static const char *schema =
	"schema fp {\n"
	"    document fp {\n"
	"        field emb type tensor<float>(x[19]) {\n"
	"            indexing: attribute\n"
	"        }\n"
	"        field bf type tensor<bfloat16>(x[19]) {\n"
	"            indexing: attribute\n"
	"        }\n"
	"        field i8 type tensor<int8>(x[19]) {\n"
	"            indexing: attribute\n"
	"        }\n"
	"        field n type int {\n"
	"            indexing: attribute\n"
	"        }\n"
	"        field body type string {\n"
	"            indexing: index | summary\n"
	"        }\n"
	"    }\n"
	"    rank-profile split {\n"
	"        num-threads-per-search: 8\n"
	"        min-hits-per-thread: 1\n"
	"        inputs {\n"
	"            query(q) tensor<float>(x[19])\n"
	"        }\n"
	"        first-phase {\n"
	"            expression: sum(query(q) * attribute(emb))\n"
	"        }\n"
	"    }\n"
	"    rank-profile bf inherits split {\n"
	"        first-phase {\n"
	"            expression: sum(attribute(bf) * query(q))\n"
	"        }\n"
	"    }\n"
	"    rank-profile i8 inherits split {\n"
	"        first-phase {\n"
	"            expression: sum(query(q) * attribute(i8))\n"
	"        }\n"
	"    }\n"
	"    rank-profile vm inherits split {\n"
	"        first-phase {\n"
	"            expression: sum(query(q) * attribute(emb)) * 2 + attribute(n) - "
	"reduce(attribute(bf), max)\n"
	"        }\n"
	"    }\n"
	"    rank-profile plain inherits split {\n"
	"        first-phase {\n"
	"            expression: sum(query(q) * attribute(emb)) + attribute(n) * 0\n"
	"        }\n"
	"    }\n"
	"    rank-profile i8plain inherits split {\n"
	"        first-phase {\n"
	"            expression: sum(query(q) * attribute(i8)) + attribute(n) * 0\n"
	"        }\n"
	"    }\n"
	"    rank-profile text inherits split {\n"
	"        first-phase {\n"
	"            expression: sum(query(q) * attribute(emb)) + fieldLength(body)\n"
	"        }\n"
	"    }\n"
	"    rank-profile rerank inherits split {\n"
	"        onnx-model mlp {\n"
	"            file: models/mlp.onnx\n"
	"            input \"x\": attribute(emb)\n"
	"            output \"y\": out\n"
	"        }\n"
	"        second-phase {\n"
	"            rerank-count: 333\n"
	"            expression: sum(onnx(mlp).out) + attribute(n) + firstPhase\n"
	"        }\n"
	"    }\n"
	"    rank-profile rerank_expr inherits split {\n"
	"        second-phase {\n"
	"            rerank-count: 1000\n"
	"            expression: sum(attribute(bf) * query(q)) * 3 - reduce(attribute(i8), min)\n"
	"        }\n"
	"    }\n"
	"    rank-profile rerank_text inherits rerank {\n"
	"        second-phase {\n"
	"            rerank-count: 333\n"
	"            expression: sum(onnx(mlp).out) + fieldLength(body)\n"
	"        }\n"
	"    }\n"
	"    rank-profile global_expr inherits split {\n"
	"        global-phase {\n"
	"            rerank-count: 700\n"
	"            expression: normalize_linear(attribute(n)) + reciprocal_rank(firstPhase, 10) + "
	"sum(attribute(bf) * query(q))\n"
	"        }\n"
	"    }\n"
	"    rank-profile global_model inherits rerank {\n"
	"        global-phase {\n"
	"            rerank-count: 250\n"
	"            expression: sum(onnx(mlp).out) * 2 + normalize_linear(firstPhase)\n"
	"        }\n"
	"    }\n"
	"    rank-profile global_text inherits split {\n"
	"        global-phase {\n"
	"            expression: reciprocal_rank(fieldLength(body)) + firstPhase\n"
	"        }\n"
	"    }\n"
	"}\n";

/* NDOCS documents: every fifth has no emb, every seventh the vector of the
 * one before it (a tie broken by document id). */
static char *write_feed(const char *dir)
{
	char *path = malloc(strlen(dir) + 16);
	sprintf(path, "%s/feed.jsonl", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	uint64_t s = 7;
	double v[DIM] = { 0 };
	for (int d = 0; d < NDOCS; d++) {
		if (d % 7 != 6)
			for (int i = 0; i < DIM; i++)
				v[i] = 2.0 * vg_unit(&s) - 1.0;
		fprintf(f, "{\"put\": \"id:fp:fp::%d\", \"fields\": {\"n\": %d, \"body\": \"%s\"", d,
		        d % 13, d % 2 ? "a b c" : "a");
		const char *names[] = { "emb", "bf", "i8" };
		for (int k = 0; k < 3; k++) {
			if (k == 0 && d % 5 == 4)
				continue;
			fprintf(f, ", \"%s\": [", names[k]);
			for (int i = 0; i < DIM; i++)
				fprintf(f, "%s%.9g", i ? ", " : "", k == 2 ? round(v[i] * 100) : v[i]);
			fprintf(f, "]");
		}
		fprintf(f, "}}\n");
	}
	fclose(f);
	return path;
}

/* The second phase's model: y = relu(x W1) W2, x of 19 floats, in batches. */
static void write_mlp(const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/models", dir);
	mkdir(path, 0777);
	snprintf(path, sizeof path, "%s/models/mlp.onnx", dir);
	float w1[DIM * 8], w2[8];
	uint64_t s = 11;
	for (int i = 0; i < DIM * 8; i++)
		w1[i] = (float)(2.0 * vg_unit(&s) - 1.0);
	for (int i = 0; i < 8; i++)
		w2[i] = (float)(2.0 * vg_unit(&s) - 1.0);
	struct mb_model *m = mb_new("mlp", 17);
	mb_input(m, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, DIM }, (const char *[]){ "batch", "" });
	mb_init(m, "w1", BASE_DT_FLOAT, 2, (int64_t[]){ DIM, 8 }, w1);
	mb_init(m, "w2", BASE_DT_FLOAT, 2, (int64_t[]){ 8, 1 }, w2);
	mb_node(m, "MatMul", "x,w1", "h");
	mb_node(m, "Relu", "h", "r");
	mb_node(m, "MatMul", "r,w2", "y");
	mb_output(m, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 1 }, (const char *[]){ "batch", "" });
	assert_int_equal(mb_save(m, path), 0);
	mb_free(m);
}

/* The request of every search here: all documents, ranked by profile. */
static void request(char *req, size_t size, const char *profile)
{
	int n = snprintf(req, size,
	                 "{\"yql\": \"select * from sources * where true\", \"hits\": 400, "
	                 "\"ranking.profile\": \"%s\", \"input.query(q)\": [", profile);
	for (int i = 0; i < DIM; i++)
		n += snprintf(req + n, size - (size_t)n, "%s%g", i ? ", " : "", 0.25 * (i % 5) - 0.5);
	snprintf(req + n, size - (size_t)n, "]}");
}

static char *search(struct strata *db, const char *profile)
{
	char req[2048];
	request(req, sizeof req, profile);
	char *out = NULL;
	struct strata_error err = { 0 };
	int rc = strata_query_json(db, req, &out, &err);
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	assert_int_equal(rc, 0);
	return out;
}

/* An application (name) with the schema, the model and the feed (*feed,
 * its path), fed and closed. */
static char *fed_app(const char *name, char **feed)
{
	char *dir = apptest_new(name);
	char sub[512];
	snprintf(sub, sizeof sub, "%s/schemas", dir);
	apptest_write(sub, "fp.sd", schema);
	write_mlp(dir);
	*feed = write_feed(dir);
	struct strata *db;
	struct strata_error err = { 0 };
	struct strata_feed_stats st;
	assert_int_equal(strata_open(dir, NULL, &db, &err), 0);
	assert_int_equal(strata_feed_file(db, *feed, NULL, NULL, &st, &err), 0);
	strata_close(db);
	return dir;
}

/* Searches from several threads at once on one handle: the one that holds
 * the search threads splits, the others score alone meanwhile. */
#define NSEARCHERS 3
#define NROUNDS 4
struct searcher {
	struct strata *db;
	const char *const *profiles; /* 5 of them, from profiles[first] on in turn */
	int first;
	char *got[NROUNDS];
};

static void *searcher_run(void *arg)
{
	struct searcher *s = arg;
	for (int i = 0; i < NROUNDS; i++) {
		char req[2048];
		request(req, sizeof req, s->profiles[(s->first + i) % 5]);
		struct strata_error err = { 0 };
		if (strata_query_json(s->db, req, &s->got[i], &err) != 0)
			s->got[i] = NULL;
	}
	return NULL;
}

static void test_threads_same_results(void **state)
{
	(void)state;
	char *feed, *dir = fed_app("strata_firstphase", &feed);
	struct strata *db;
	struct strata_error err = { 0 };
	static const char *profiles[] = { "split", "bf", "i8", "vm", "text" };
	char *one[5];
	assert_int_equal(strata_open(dir, NULL, &db, &err), 0);
	for (int p = 0; p < 5; p++) {
		one[p] = search(db, profiles[p]);
		assert_non_null(strstr(one[p], "\"totalCount\":1500"));
	}
	/* the dot products (firstdot.c) score as the VM does, to the bit */
	char *plain = search(db, "plain"), *i8plain = search(db, "i8plain");
	assert_string_equal(plain, one[0]);
	assert_string_equal(i8plain, one[2]);
	strata_free(plain);
	strata_free(i8plain);
	strata_close(db);
	for (int t = 2; t <= 4; t++) {
		struct strata_options o = { .search_threads = t };
		assert_int_equal(strata_open(dir, &o, &db, &err), 0);
		for (int p = 0; p < 5; p++) {
			struct strata_stats a, b;
			strata_stats(db, &a);
			char *r = search(db, profiles[p]);
			strata_stats(db, &b);
			assert_string_equal(r, one[p]);
			strata_free(r);
			/* split, except the profile that reads a text feature: the
			 * searching thread and the workers that joined in time */
			int split = strcmp(profiles[p], "text") != 0;
			assert_int_equal(b.split_first_phases - a.split_first_phases, split);
			assert_true(b.split_parts - a.split_parts >= (unsigned)split);
			assert_true(b.split_parts - a.split_parts <= (unsigned)(split ? t : 0));
		}
		strata_close(db);
	}
	struct strata_options o = { .search_threads = 2 };
	assert_int_equal(strata_open(dir, &o, &db, &err), 0);
	struct searcher s[NSEARCHERS];
	pthread_t th[NSEARCHERS];
	for (int i = 0; i < NSEARCHERS; i++) {
		s[i] = (struct searcher){ .db = db, .profiles = profiles, .first = i };
		assert_int_equal(pthread_create(&th[i], NULL, searcher_run, &s[i]), 0);
	}
	for (int i = 0; i < NSEARCHERS; i++) {
		pthread_join(th[i], NULL);
		for (int k = 0; k < NROUNDS; k++) {
			assert_non_null(s[i].got[k]);
			assert_string_equal(s[i].got[k], one[(i + k) % 5]);
			strata_free(s[i].got[k]);
		}
	}
	strata_close(db);
	for (int p = 0; p < 5; p++)
		strata_free(one[p]);
	free(feed);
	apptest_remove(dir);
}

/* The second and global phases split over 2, 3 and 4 threads: their
 * candidates' scores and the hits' order are one thread's, to the byte,
 * for a model over an attribute and for expressions (the global phase's
 * with normalizers, whose arguments are split and normalized over all the
 * candidates); a phase that reads a text feature is not split. */
static void test_rerank_threads(void **state)
{
	(void)state;
	char *feed, *dir = fed_app("strata_secondphase", &feed);
	struct strata *db;
	struct strata_error err = { 0 };
	assert_int_equal(strata_open(dir, NULL, &db, &err), 0);
	enum { NP = 6 };
	static const char *profiles[NP] = { "rerank",      "rerank_expr",  "rerank_text",
		                            "global_expr", "global_model", "global_text" };
	char *one[NP];
	for (int p = 0; p < NP; p++)
		one[p] = search(db, profiles[p]);
	strata_close(db);
	for (int t = 2; t <= 4; t++) {
		struct strata_options o = { .search_threads = t };
		assert_int_equal(strata_open(dir, &o, &db, &err), 0);
		for (int p = 0; p < NP; p++) {
			struct strata_stats a, b;
			strata_stats(db, &a);
			char *r = search(db, profiles[p]);
			strata_stats(db, &b);
			assert_string_equal(r, one[p]);
			strata_free(r);
			/* second phases split: rerank, rerank_expr, and global_model's
			 * (inherited from rerank); global phases: the first two */
			unsigned long long second = p < 2 || p == 4, global = p == 3 || p == 4;
			assert_int_equal(b.split_second_phases - a.split_second_phases, second);
			assert_true(b.split_second_parts - a.split_second_parts >= second);
			assert_true(b.split_second_parts - a.split_second_parts <= second * (unsigned)t);
			assert_int_equal(b.split_global_phases - a.split_global_phases, global);
			assert_true(b.split_global_parts - a.split_global_parts >= 2 * global);
			assert_true(b.split_global_parts - a.split_global_parts <=
			            2 * global * (unsigned)t);
		}
		strata_close(db);
	}
	for (int p = 0; p < NP; p++)
		strata_free(one[p]);
	free(feed);
	apptest_remove(dir);
}

/* ---- the search threads (searchpool.c) ------------------------------------ */

struct joins {
	struct eng_pool *p;
	atomic_int ran[3];
	int inner;       /* what a run started inside a worker's call returned */
};

static void mark_ran(void *ud, int slot)
{
	atomic_store(&((struct joins *)ud)->ran[slot], 1);
}

/* Slot 0 waits (30 s at most) until both workers have joined; slot 1
 * starts a run of its own meanwhile, which finds the pool taken. */
static void wait_for_all(void *ud, int slot)
{
	struct joins *j = ud;
	atomic_store(&j->ran[slot], 1);
	if (slot == 1) {
		struct joins other = { 0 };
		j->inner = eng_pool_run(j->p, 3, mark_ran, &other);
		if (atomic_load(&other.ran[0]) != 1 || atomic_load(&other.ran[1]) != 0)
			j->inner = -1;
	}
	double t0 = base_now();
	while (slot == 0 && !(atomic_load(&j->ran[1]) && atomic_load(&j->ran[2])) &&
	       base_now() - t0 < 30)
		sched_yield();
}

static void test_pool(void **state)
{
	(void)state;
	struct strata_error err = { 0 };
	struct eng_pool *p;
	assert_int_equal(eng_pool_new(2, &p, &err), 0);
	assert_int_equal(eng_pool_size(p), 3);
	assert_int_equal(eng_pool_size(NULL), 1);
	for (int round = 0; round < 3; round++) {
		struct joins j = { .p = p };
		/* every slot once, the workers' while the caller's call lasts */
		assert_int_equal(eng_pool_run(p, 3, wait_for_all, &j), 3);
		for (int i = 0; i < 3; i++)
			assert_int_equal(atomic_load(&j.ran[i]), 1);
		assert_int_equal(j.inner, 1); /* the pool was taken: the caller alone */
	}
	struct joins alone = { 0 };
	assert_int_equal(eng_pool_run(NULL, 3, mark_ran, &alone), 1);
	assert_int_equal(atomic_load(&alone.ran[0]), 1);
	assert_int_equal(atomic_load(&alone.ran[1]), 0);
	eng_pool_free(p);
}

static void test_settings(void **state)
{
	(void)state;
	static const struct { const char *setting, *where, *what; } bad[] = {
		{ "num-threads-per-search: 0", "fp.sd:5:33", "must be a positive integer" },
		{ "num-threads-per-search: 65", "fp.sd:5:33",
		  "must be a positive integer of at most 64" },
		{ "min-hits-per-thread: x", "fp.sd:5:30", "expected a number" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *dir = apptest_new("strata_firstphase");
		char sub[512], sd[512];
		snprintf(sub, sizeof sub, "%s/schemas", dir);
		snprintf(sd, sizeof sd,
		         "schema fp {\n    document fp {\n    }\n    rank-profile p {\n        %s\n"
		         "    }\n}\n", bad[i].setting);
		apptest_write(sub, "fp.sd", sd);
		apptest_expect_load_error(dir, bad[i].what[0] == 'e' ? STRATA_PARSE : STRATA_TYPE,
		                          bad[i].where, bad[i].what);
	}
	char *dir = apptest_new("strata_firstphase"), sub[512];
	snprintf(sub, sizeof sub, "%s/schemas", dir);
	apptest_write(sub, "fp.sd", "schema fp {\n    document fp {\n    }\n"
	                            "    rank-profile p {\n        num-threads-per-search: 3\n"
	                            "        min-hits-per-thread: 500\n    }\n"
	                            "    rank-profile c inherits p {\n    }\n}\n");
	struct rank_app *app = apptest_load(dir);
	const struct rank_schema *s = rank_app_schema_find(app, "fp");
	const struct rank_profile *c = rank_profile_find(s, "c");
	assert_int_equal(rank_profile_threads_per_search(c), 3);
	assert_int_equal(rank_profile_min_hits_per_thread(c), 500);
	assert_int_equal(rank_profile_threads_per_search(rank_profile_find(s, "default")), 0);
	rank_app_free(app);
	struct strata *db;
	struct strata_error err = { 0 };
	struct strata_options o = { .search_threads = 65 };
	assert_int_equal(strata_open(dir, &o, &db, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "search_threads is 65"));
	apptest_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernels_exact),
		cmocka_unit_test(test_threads_same_results),
		cmocka_unit_test(test_rerank_threads),
		cmocka_unit_test(test_pool),
		cmocka_unit_test(test_settings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
