/*
 * rerank.c: a two-phase query whose second phase is a MiniLM cross-encoder
 * over the best 100 hits, on one search thread and on T.
 *
 *     rerank [--docs N] [--seq S] [--rerank R] [--queries K] [--rounds R]
 *            [--threads T] CROSS_ENCODER DIR
 *
 * CROSS_ENCODER is minilm_l6_cross.onnx (input_ids, attention_mask and
 * token_type_ids [batch, seq] in, logits [batch, 1] out: mkbench writes one,
 * the peer's mkmodels.js another).  DIR becomes an application: its schema
 * (below), a copy of the model, and N documents (1,000), each holding the
 * token ids of a query and passage pair of S tokens (128) as a tensor
 * attribute, with its mask and token types, drawn from a fixed generator.
 * The profile's first phase is attribute(n), its second phase the model
 * over the best R (100), batched, as `sum(onnx(cross).logits)`.
 *
 * Each round opens the application with search_threads 1 and with T (2),
 * the first going first in turn, runs one warm-up query and K (3) timed
 * ones; a round's figure is K over their wall time, qps the median over the
 * rounds (3), cpu_s_per_query the median of the process's CPU seconds per
 * query.  The results of both must be the same bytes (an error if not); the
 * last line is the speed-up of T threads against the goal of 1.8 times one
 * thread, reported, not enforced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/base.h"
#include "../include/strata.h"
#include "../tests/vecgen.h"
#include "common.h"

#define MAX_ROUNDS 16
#define VOCAB 30522

static int write_app(const char *dir, const char *model, long docs, long seq, long rerank)
{
	char sd[2048], path[1024];
	snprintf(sd, sizeof sd,
	         "schema rr {\n"
	         "    document rr {\n"
	         "        field n type int { indexing: attribute }\n"
	         "        field ids type tensor<float>(s[%ld]) { indexing: attribute }\n"
	         "        field mask type tensor<float>(s[%ld]) { indexing: attribute }\n"
	         "        field types type tensor<float>(s[%ld]) { indexing: attribute }\n"
	         "    }\n"
	         "    rank-profile cross {\n"
	         "        onnx-model cross {\n"
	         "            file: models/cross.onnx\n"
	         "            input \"input_ids\": attribute(ids)\n"
	         "            input \"attention_mask\": attribute(mask)\n"
	         "            input \"token_type_ids\": attribute(types)\n"
	         "            output \"logits\": logits\n"
	         "        }\n"
	         "        first-phase { expression: attribute(n) }\n"
	         "        second-phase {\n"
	         "            rerank-count: %ld\n"
	         "            expression: sum(onnx(cross).logits)\n"
	         "        }\n"
	         "    }\n"
	         "}\n", seq, seq, seq, rerank);
	if (bench_write_schema(dir, "rr", sd))
		return 1;
	snprintf(path, sizeof path, "%s/models", dir);
	if (bench_make_dir(path))
		return 1;
	size_t n;
	char *m;
	struct strata_error rerr = { 0 };
	if (base_read_file(model, &m, &n, &rerr))
		return bench_fail("%s", rerr.msg);
	snprintf(path, sizeof path, "%s/models/cross.onnx", dir);
	int rc = bench_write_file(path, m, n);
	base_free(m, n + 1);
	if (rc)
		return 1;
	struct strata *db;
	struct strata_error err = { 0 };
	if (strata_open(dir, NULL, &db, &err))
		return bench_fail("%s", err.msg);
	size_t cap = (size_t)seq * 40 + 256;
	char *op = malloc(cap);
	uint64_t s = 42;
	for (long d = 0; d < docs && op; d++) {
		/* [CLS] query [SEP] passage [SEP], then padding: a pair of lengths */
		long len = seq / 2 + (long)(vg_unit(&s) * (double)(seq / 2));
		long qlen = 4 + (long)(vg_unit(&s) * 12);
		size_t at = (size_t)snprintf(op, cap, "{\"put\": \"id:rr:rr::%ld\", \"fields\": {\"n\": %ld, "
		                             "\"ids\": [", d, (d * 7919) % 1009);
		for (long i = 0; i < seq; i++) {
			long id = i >= len ? 0 : i == 0 ? 101 : i == qlen || i == len - 1 ? 102
			          : 1000 + (long)(vg_unit(&s) * (VOCAB - 1000));
			at += (size_t)snprintf(op + at, cap - at, "%s%ld", i ? "," : "", id);
		}
		at += (size_t)snprintf(op + at, cap - at, "], \"mask\": [");
		for (long i = 0; i < seq; i++)
			at += (size_t)snprintf(op + at, cap - at, "%s%d", i ? "," : "", i < len);
		at += (size_t)snprintf(op + at, cap - at, "], \"types\": [");
		for (long i = 0; i < seq; i++)
			at += (size_t)snprintf(op + at, cap - at, "%s%d", i ? "," : "", i > qlen && i < len);
		snprintf(op + at, cap - at, "]}}");
		if (strata_feed_json(db, op, &err)) {
			free(op);
			strata_close(db);
			return bench_fail("feed: %s", err.msg);
		}
	}
	free(op);
	strata_close(db);
	return 0;
}

struct mode {
	int threads;
	double qps[MAX_ROUNDS], cpu[MAX_ROUNDS];
	char *result;
};

static const char *request = "{\"yql\": \"select * from sources * where true\", \"hits\": 10, "
                             "\"ranking.profile\": \"cross\"}";

static int run_mode(const char *dir, struct mode *m, int round, long k)
{
	struct strata_options o = { .search_threads = m->threads };
	struct strata *db;
	struct strata_error err = { 0 };
	if (strata_open(dir, &o, &db, &err))
		return bench_fail("%s", err.msg);
	char *out = NULL;
	int rc = strata_query_json(db, request, &out, &err); /* warm-up */
	strata_free(out);
	double t0 = base_now(), c0 = bench_cpu_now();
	for (long i = 0; !rc && i < k; i++) {
		out = NULL;
		rc = strata_query_json(db, request, &out, &err);
		if (!rc && !m->result)
			m->result = out;
		else if (!rc && strcmp(out, m->result)) {
			strata_free(out);
			strata_close(db);
			return bench_fail("%d threads: a result differs from the first", m->threads);
		} else
			strata_free(out);
	}
	double t = base_now() - t0, c = bench_cpu_now() - c0;
	strata_close(db);
	if (rc)
		return bench_fail("query: %s", err.msg);
	m->qps[round] = (double)k / t;
	m->cpu[round] = c / (double)k;
	return 0;
}

int main(int argc, char **argv)
{
	long docs = 1000, seq = 128, rerank = 100, k = 3, rounds = 3, threads = 2;
	int i = 1;
	for (; i + 1 < argc && argv[i][0] == '-' && argv[i][1] == '-'; i += 2) {
		long *v = !strcmp(argv[i], "--docs") ? &docs : !strcmp(argv[i], "--seq") ? &seq
		          : !strcmp(argv[i], "--rerank") ? &rerank : !strcmp(argv[i], "--queries") ? &k
		          : !strcmp(argv[i], "--rounds") ? &rounds : !strcmp(argv[i], "--threads")
		          ? &threads : NULL;
		if (!v)
			return bench_fail("unknown option %s", argv[i]);
		*v = atol(argv[i + 1]);
	}
	if (argc - i != 2 || docs < 1 || seq < 8 || seq > 512 || rerank < 1 || k < 1 ||
	    rounds < 1 || rounds > MAX_ROUNDS || threads < 2 || threads > 64)
		return bench_fail("usage: rerank [--docs N] [--seq S] [--rerank R] [--queries K] "
		                  "[--rounds R] [--threads T] CROSS_ENCODER DIR");
	const char *model = argv[i], *dir = argv[i + 1];
	bench_remove_tree(dir);
	if (write_app(dir, model, docs, seq, rerank))
		return 1;
	struct mode modes[2] = { { .threads = 1 }, { .threads = (int)threads } };
	for (long r = 0; r < rounds; r++)
		for (int j = 0; j < 2; j++) {
			struct mode *m = &modes[(j + r) % 2];
			if (run_mode(dir, m, (int)r, k))
				return 1;
		}
	if (strcmp(modes[0].result, modes[1].result))
		return bench_fail("%ld threads' results differ from one thread's", threads);
	double q[2], c[2];
	for (int j = 0; j < 2; j++) {
		q[j] = bench_median(modes[j].qps, (size_t)rounds);
		c[j] = bench_median(modes[j].cpu, (size_t)rounds);
		printf("{\"case\": \"rerank\", \"model\": \"minilm_l6_cross\", \"seq\": %ld, "
		       "\"rerank\": %ld, \"threads\": %d, \"qps\": %.3f, \"cpu_s_per_query\": %.3f}\n",
		       seq, rerank, modes[j].threads, q[j], c[j]);
	}
	double up = q[1] / q[0];
	printf("rerank: %ld candidates of %ld tokens, %ld threads: %.2fx one thread's queries per "
	       "second (same results)\n", rerank, seq, threads, up);
	int tally[3] = { 0 };
	char line[160];
	snprintf(line, sizeof line, "%ld search threads at 1.8x one thread's qps or more: %.2fx",
	         threads, up);
	bench_goal(tally, 1, up >= 1.8, line);
	strata_free(modes[0].result);
	strata_free(modes[1].result);
	return 0;
}
