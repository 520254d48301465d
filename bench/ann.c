/*
 * ann.c: the approximate nearest-neighbour benchmark (make bench-ann, and
 * the ANN case of make bench).
 *
 *   build/bench/ann [--n N] [--dim D] [--queries Q] [--m M] [--efc E]
 *                   [--explore 0,10,...] [--dir DIR] [--peer PROGRAM]
 *
 * Generates N clustered float vectors of D cells and Q queries near the
 * same clusters (fixed seed, tests/vecgen.h) into DIR as raw float32 files,
 * and the exact 10 nearest of each query (brute force, in double).  Then
 * Strata: the documents are put through the library (store_put, batches of
 * 1000 per transaction, the graph kept in the same transactions), timed;
 * the store is closed and opened again, timed (it reads the graph, so the
 * time does not grow with N); each query runs single-threaded through
 * store_hnsw_search with ef = 10 + explore, giving recall@10 and queries
 * per second; the graph's bytes are store_hnsw_bytes.  With --peer, the
 * program (bench/ann_peer.cc) runs hnswlib and then FAISS's HNSW on the
 * same files with the same M, ef construction and ef, one thread, in the
 * same run, from C++, timing their searches alone; each is printed beside
 * Strata, then the ratios Strata / peer of the build times and of the
 * queries per second at each setting, per wall second and per CPU second,
 * and the queries per second of each at recall@10 0.95 (interpolated
 * between the settings around it), with the load average before and after
 * (the machine may be shared: the CPU ratios are the steadier ones).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../store/store.h"
#include "../tests/vecgen.h"
#include "common.h"

#define K 10
#define CLUSTERS 100
#define MAX_EXPLORE 16

struct opts {
	long n, dim, nq, m, efc;
	int nexp;
	long explore[MAX_EXPLORE];
	const char *dir, *peer;
};

/* One side's figures: build seconds (wall, CPU), then per setting recall
 * and queries per wall and per CPU second. */
struct side {
	double build, build_cpu;
	double recall[MAX_EXPLORE], qps[MAX_EXPLORE], qps_cpu[MAX_EXPLORE];
	int nset;
};

static void print_load(const char *when)
{
	double l[3];
	if (getloadavg(l, 3) == 3)
		printf("ann: load average %s: %.2f, %.2f, %.2f\n", when, l[0], l[1], l[2]);
}

/* Vector k of set seed: a cluster centre (k % CLUSTERS) plus noise. */
static void gen(uint64_t seed, long k, long dim, float *out)
{
	uint64_t cs = 1000 + (uint64_t)(k % CLUSTERS), ps = seed * 0x1000003 + (uint64_t)k;
	for (long i = 0; i < dim; i++)
		out[i] = (float)(vg_gauss(&cs) + 0.35 * vg_gauss(&ps));
}

static int write_file(const char *dir, const char *name, const void *p, size_t n)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return bench_write_file(path, p, n);
}

struct ref {
	double d;
	uint32_t i;
};

/* The exact K nearest of each query (indexes into base). */
static void truth(const struct opts *o, const float *base, const float *q, uint32_t *gt)
{
	for (long j = 0; j < o->nq; j++) {
		struct ref best[K];
		int nb = 0;
		for (long i = 0; i < o->n; i++) {
			double s = 0;
			const float *a = base + i * o->dim, *b = q + j * o->dim;
			for (long c = 0; c < o->dim; c++)
				s += ((double)a[c] - b[c]) * ((double)a[c] - b[c]);
			if (nb == K && s >= best[K - 1].d)
				continue;
			int at = nb < K ? nb++ : K - 1;
			while (at > 0 && best[at - 1].d > s) {
				best[at] = best[at - 1];
				at--;
			}
			best[at] = (struct ref){s, (uint32_t)i};
		}
		for (int r = 0; r < K; r++)
			gt[j * K + r] = best[r].i;
	}
}

static int open_store(const struct opts *o, struct store_env **env, int *dt, struct strata_error *err)
{
	char path[512];
	snprintf(path, sizeof path, "%s/strata", o->dir);
	struct store_field f = {.name = "emb", .type = STORE_T_TENSOR, .attribute = 1,
	                        .cell = BASE_DT_FLOAT, .rank = 1, .dims = {o->dim},
	                        .hnsw_metric = STORE_METRIC_EUCLIDEAN, .hnsw_m = (int)o->m,
	                        .hnsw_ef = (int)o->efc};
	struct store_doctype t = {"vec", 1, &f};
	int rc = store_open(path, env, err);
	if (!rc && (rc = store_doctype_add(*env, &t, dt, err)) != 0)
		store_close(*env);
	return rc;
}

static int strata_side(const struct opts *o, const float *base, const float *q, const uint32_t *gt,
                       struct side *out)
{
	struct strata_error err = {0};
	struct store_env *env;
	int dt, rc;
	char path[512];
	snprintf(path, sizeof path, "%s/strata", o->dir);
	if (bench_remove_tree(path) != 0 && errno != ENOENT) {
		bench_fail("cannot remove %s: %s", path, strerror(errno));
		return -1;
	}
	if ((rc = open_store(o, &env, &dt, &err)) != 0)
		goto fail;
	double t0 = base_now(), c0 = bench_cpu_now();
	struct store_txn *w = NULL;
	for (long i = 0; i < o->n; i++) {
		if (!w && (rc = store_txn_begin(env, 1, &w, &err)) != 0)
			goto fail;
		char id[32];
		snprintf(id, sizeof id, "id:b:vec::%ld", i);
		struct store_value v = {.set = 1, .n = (size_t)o->dim, .cells = base + i * o->dim};
		if ((rc = store_put(w, dt, id, &v, &err)) != 0)
			goto fail;
		if ((i + 1) % 1000 == 0 || i + 1 == o->n) {
			rc = store_txn_commit(w, &err);
			w = NULL;
			if (rc)
				goto fail;
		}
	}
	double build = base_now() - t0, build_cpu = bench_cpu_now() - c0;
	out->build = build;
	out->build_cpu = build_cpu;
	store_close(env);
	t0 = base_now();
	if ((rc = open_store(o, &env, &dt, &err)) != 0)
		goto fail;
	double open = base_now() - t0;
	struct store_txn *r;
	if ((rc = store_txn_begin(env, 0, &r, &err)) != 0)
		goto fail;
	uint64_t bytes = store_hnsw_bytes(r, dt, 0);
	printf("strata  build %.2f s (cpu %.2f s)  open %.4f s  graph %.1f MiB\n", build, build_cpu,
	       open, (double)bytes / (1 << 20));
	double *qd = malloc((size_t)o->dim * sizeof *qd);
	for (int e = 0; e < o->nexp; e++) {
		long hits = 0;
		double t1 = base_now(), c1 = bench_cpu_now();
		for (long j = 0; j < o->nq; j++) {
			for (long c = 0; c < o->dim; c++)
				qd[c] = q[j * o->dim + c];
			struct store_hit h[K];
			size_t nh;
			if ((rc = store_hnsw_search(r, dt, 0, qd, (size_t)o->dim, K,
			                            (uint32_t)(K + o->explore[e]), NULL, 0, h, &nh,
			                            &err)) != 0)
				goto fail;
			for (size_t a = 0; a < nh; a++) /* local ids are the feed order */
				for (int b = 0; b < K; b++)
					hits += h[a].lid == gt[j * K + b];
		}
		double secs = base_now() - t1, csecs = bench_cpu_now() - c1;
		out->recall[e] = (double)hits / (double)(o->nq * K);
		out->qps[e] = (double)o->nq / secs;
		out->qps_cpu[e] = (double)o->nq / csecs;
		out->nset = e + 1;
		printf("strata  explore %4ld ef %4ld  recall@10 %.4f  qps %8.0f (per cpu s %8.0f)\n",
		       o->explore[e], K + o->explore[e], (double)hits / (double)(o->nq * K),
		       (double)o->nq / secs, (double)o->nq / csecs);
	}
	free(qd);
	store_txn_abort(r);
	store_close(env);
	return 0;
fail:
	fprintf(stderr, "ann: strata: %s\n", err.msg);
	return -1;
}

/* Run the peer program for library lib, echoing its lines and reading its
 * figures. */
static int peer_side(const struct opts *o, const char *lib, struct side *out)
{
	char cmd[1024], list[256] = "", line[512];
	for (int e = 0; e < o->nexp; e++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%ld", e ? "," : "",
		         o->explore[e]);
	snprintf(cmd, sizeof cmd, "'%s' --lib %s --dir '%s' --n %ld --dim %ld --queries %ld --m %ld "
	         "--efc %ld --explore %s", o->peer, lib, o->dir, o->n, o->dim, o->nq, o->m, o->efc,
	         list);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t nl = strlen(lib);
	while (fgets(line, sizeof line, p)) {
		fputs(line, stdout);
		long ex, ef;
		double r, qw, qc;
		if (strncmp(line, lib, nl) || line[nl] != ' ')
			continue;
		if (sscanf(line + nl + 1, "build %lf s (cpu %lf s)", &out->build, &out->build_cpu) == 2)
			continue;
		if (sscanf(line + nl + 1, "explore %ld ef %ld recall@10 %lf qps %lf (per cpu s %lf)", &ex,
		           &ef, &r, &qw, &qc) == 5 && out->nset < MAX_EXPLORE) {
			out->recall[out->nset] = r;
			out->qps[out->nset] = qw;
			out->qps_cpu[out->nset++] = qc;
		}
	}
	return pclose(p) == 0 && out->nset ? 0 : -1;
}

/* Queries per (wall, or CPU) second at recall@10 `at`, interpolated on the
 * settings' recalls (assumed rising with ef); 0 when no setting reaches it. */
static double qps_at(const struct side *s, double at, int cpu)
{
	const double *q = cpu ? s->qps_cpu : s->qps;
	for (int i = 0; i < s->nset; i++) {
		if (s->recall[i] < at)
			continue;
		if (i == 0 || s->recall[i] == s->recall[i - 1])
			return q[i];
		double f = (at - s->recall[i - 1]) / (s->recall[i] - s->recall[i - 1]);
		return q[i - 1] + f * (q[i] - q[i - 1]);
	}
	return 0;
}

#define RECALL_AT 0.95

static void print_ratios(const struct opts *o, const char *lib, const struct side *a,
                         const struct side *b)
{
	printf("ratio   build strata/%s  wall %.2f  cpu %.2f\n", lib, a->build / b->build,
	       a->build_cpu / b->build_cpu);
	for (int e = 0; e < o->nexp && e < a->nset && e < b->nset; e++)
		printf("ratio   explore %4ld  recall@10 %.4f vs %.4f  qps strata/%s  wall %.2f  "
		       "cpu %.2f\n", o->explore[e], a->recall[e], b->recall[e], lib, a->qps[e] / b->qps[e],
		       a->qps_cpu[e] / b->qps_cpu[e]);
	double sw = qps_at(a, RECALL_AT, 0), sc = qps_at(a, RECALL_AT, 1);
	double pw = qps_at(b, RECALL_AT, 0), pc = qps_at(b, RECALL_AT, 1);
	if (sw > 0 && pw > 0)
		printf("at recall@10 %.2f  qps strata %.0f  %s %.0f  strata/%s wall %.2f  cpu %.2f\n",
		       RECALL_AT, sw, lib, pw, lib, sw / pw, sc / pc);
	else
		printf("at recall@10 %.2f  %s does not reach it with these settings (--explore)\n",
		       RECALL_AT, sw > 0 ? lib : "strata");
}

static int parse_list(const char *s, struct opts *o)
{
	o->nexp = 0;
	while (*s && o->nexp < MAX_EXPLORE) {
		char *end;
		o->explore[o->nexp++] = strtol(s, &end, 10);
		if (end == s)
			return -1;
		s = *end == ',' ? end + 1 : end;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.n = 100000, .dim = 128, .nq = 1000, .m = 16, .efc = 200,
	                 .dir = "build/bench/ann", .peer = NULL};
	parse_list("0,10,30,90,190,390", &o);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v) {
			fprintf(stderr, "ann: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--n"))
			o.n = atol(v);
		else if (!strcmp(a, "--dim"))
			o.dim = atol(v);
		else if (!strcmp(a, "--queries"))
			o.nq = atol(v);
		else if (!strcmp(a, "--m"))
			o.m = atol(v);
		else if (!strcmp(a, "--efc"))
			o.efc = atol(v);
		else if (!strcmp(a, "--dir"))
			o.dir = v;
		else if (!strcmp(a, "--peer"))
			o.peer = v;
		else if (!strcmp(a, "--explore")) {
			if (parse_list(v, &o) != 0) {
				fprintf(stderr, "ann: bad --explore list '%s'\n", v);
				return 2;
			}
		} else {
			fprintf(stderr, "ann: unknown option %s\n", a);
			return 2;
		}
	}
	if (o.n < K || o.dim < 1 || o.nq < 1) {
		fprintf(stderr, "ann: need --n >= %d, --dim >= 1, --queries >= 1\n", K);
		return 2;
	}
	mkdir(o.dir, 0755);
	float *base = malloc((size_t)o.n * (size_t)o.dim * sizeof *base);
	float *q = malloc((size_t)o.nq * (size_t)o.dim * sizeof *q);
	uint32_t *gt = malloc((size_t)o.nq * K * sizeof *gt);
	if (!base || !q || !gt)
		return 1;
	for (long i = 0; i < o.n; i++)
		gen(1, i, o.dim, base + i * o.dim);
	for (long j = 0; j < o.nq; j++)
		gen(2, j * 7 + 3, o.dim, q + j * o.dim);
	double t0 = base_now();
	truth(&o, base, q, gt);
	printf("ann: %ld x %ld float vectors in %d clusters, %ld queries, M %ld, ef construction %ld "
	       "(exact top 10 in %.1f s)\n", o.n, o.dim, CLUSTERS, o.nq, o.m, o.efc, base_now() - t0);
	if (write_file(o.dir, "base.f32", base, (size_t)o.n * (size_t)o.dim * 4) ||
	    write_file(o.dir, "query.f32", q, (size_t)o.nq * (size_t)o.dim * 4) ||
	    write_file(o.dir, "truth.u32", gt, (size_t)o.nq * K * 4))
		return 1;
	print_load("before");
	fflush(stdout);
	struct side st = {0};
	int rc = strata_side(&o, base, q, gt, &st);
	fflush(stdout);
	static const char *const libs[] = { "hnswlib", "faiss" };
	for (int l = 0; !rc && o.peer && l < 2; l++) {
		struct side ps = {0};
		rc = peer_side(&o, libs[l], &ps);
		if (rc)
			fprintf(stderr, "ann: the %s side failed (make deps-bench installs it)\n", libs[l]);
		else
			print_ratios(&o, libs[l], &st, &ps);
		fflush(stdout);
	}
	print_load("after");
	free(base);
	free(q);
	free(gt);
	return rc ? 1 : 0;
}
