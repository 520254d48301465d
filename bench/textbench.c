/*
 * textbench.c: lexical search through Strata beside Xapian and SQLite FTS5,
 * on the same generated corpus in the same run.
 *
 *     textbench [--docs N] [--queries Q] [--rounds R] [--feeds F] [--xapian PROG] DIR
 *
 * DIR is a scratch folder.  The corpus (textgen.c: N documents, 100,000 by
 * default, of Zipf-distributed words and log-normal lengths, fixed seed) is
 * written there twice: corpus.jsonl, Vespa document operations, and
 * docs.txt, one document a line.  Then each engine indexes it, timed:
 *
 *   - Strata: the application DIR/app (schemas/text.sd below: one field
 *     body with a text index and bm25, no stemming) is deployed afresh and
 *     corpus.jsonl goes through strata_feed_file, the path `strata feed`
 *     takes (JSON parsing, checks, documents, text index, batched
 *     transactions, each synced);
 *   - Xapian (PROG, text_xapian.cc, a process of its own): a TermGenerator
 *     without stemmer, positions kept, one commit;
 *   - SQLite FTS5: a table fts5(body) (the unicode61 tokenizer, positions
 *     kept), every row inserted in one transaction.
 *
 * Strata and SQLite index it F times (3), each from nothing, and their
 * figures are the medians (wall and CPU apart); Xapian, which takes some
 * twenty times longer, indexes it once.
 *
 * Queries: Q (50) for each of 1, 3 and 8 terms, the terms drawn by
 * frequency; each asks for the top 10.  Strata runs each as an OR of
 * 'body contains' ranked by bm25(body), and as weakAnd with targetHits 100
 * (Vespa's default) and 10, also ranked by bm25(body); Xapian runs the OR
 * with BM25Weight (k1 1.2, b 0.75, as Strata's bm25); SQLite the MATCH of
 * the OR ordered by its bm25().  Xapian and SQLite have no weakAnd: their
 * exact OR is what a weakAnd row is compared with.  R rounds (5): in each,
 * every engine runs every query once, the engine going first rotating from
 * round to round.  A figure is the median over all R x Q runs of a case.
 * Strata's time is strata_query_json's (parsing the request, matching,
 * ranking, the result JSON), Xapian's that of building the query,
 * get_mset(0, 10) and reading the ids (inside its process, so the pipe
 * does not count), SQLite's that of preparing, stepping and finalizing the
 * statement.  recall@10 is how many of the exact top 10 (Strata's OR) a
 * weakAnd returns, averaged over the queries.
 *
 * Output: a table, one JSON line per case, then the goals: weakAnd top-10
 * median latency at most Xapian's, and a feed with text of at least 50,000
 * documents a second.  Progress goes to stderr.  Exit status 1 when an
 * engine failed.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "../base/base.h"
#include "../include/strata.h"
#include "common.h"
#include "textbench.h"

#define SEED 0x7e57c0de5eedull
#define DOC_CAP 16384
#define MAX_Q 1000
#define MAX_ROUNDS 50
#define MAX_FEEDS 9
#define NT 3
static const int nterms[NT] = {1, 3, 8};
/* Strata's query forms: OR, weakAnd (targetHits 100), weakAnd (10). */
#define NMODE 3
static const char *const mode_name[NMODE] = {"or", "weakAnd", "weakAnd10"};
static const long mode_target[NMODE] = {0, 100, 10};
enum { E_STRATA, E_XAPIAN, E_SQLITE, NENG };

static const char *const schema_text =
	"# Written by bench/textbench.c: one text field ranked by bm25.\n"
	"schema text {\n"
	"    document text {\n"
	"        field body type string {\n"
	"            indexing: index\n"
	"            index: enable-bm25\n"
	"            stemming: none\n"
	"        }\n"
	"    }\n"
	"    rank-profile bm25 {\n"
	"        first-phase { expression: bm25(body) }\n"
	"    }\n"
	"}\n";

struct opts {
	long docs;
	int queries;
	int rounds;
	int feeds;
	const char *xapian;
	const char *dir;
};

struct peer {
	pid_t pid;
	FILE *to, *from;
};

/* Timings in microseconds: [case][mode][round * Q + q]; Xapian and SQLite
 * have one mode (the OR). */
struct results {
	double *t[NENG][NT][NMODE];
	double recall[NT][NMODE]; /* summed over the queries */
	double feed_s[NENG];
	double feed_cpu[NENG]; /* CPU seconds of the feed (the machine may be shared) */
	long fed[NENG];
};

/* ---- the corpus ------------------------------------------------------------------------ */

static int write_corpus(const struct textgen *g, const struct opts *o)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/corpus.jsonl", o->dir);
	FILE *js = fopen(path, "w");
	snprintf(path, sizeof path, "%s/docs.txt", o->dir);
	FILE *txt = fopen(path, "w");
	if (!js || !txt) {
		if (js)
			fclose(js);
		if (txt)
			fclose(txt);
		return bench_fail("cannot write the corpus in %s: %s", o->dir, strerror(errno));
	}
	static char buf[DOC_CAP];
	double words = 0;
	for (long i = 0; i < o->docs; i++) {
		size_t n = tg_doc(g, i, buf, sizeof buf);
		fprintf(js, "{\"put\": \"id:text:text::%ld\", \"fields\": {\"body\": \"%s\"}}\n", i, buf);
		fprintf(txt, "%s\n", buf);
		for (size_t k = 0; k < n; k++)
			words += buf[k] == ' ';
		words++;
	}
	int bad = ferror(js) || ferror(txt);
	bad |= fclose(js) != 0;
	bad |= fclose(txt) != 0;
	if (bad)
		return bench_fail("cannot write the corpus in %s", o->dir);
	fprintf(stderr, "textbench: %ld documents, %.1f words each on average\n", o->docs,
	        words / (double)o->docs);
	return 0;
}

/* ---- Strata ---------------------------------------------------------------------------- */

/* Feed k of F took secs and cpu: keep them; after the last, the medians. */
static void feed_time(const struct opts *o, struct results *r, int e, int k, double secs,
                      double cpu)
{
	static double s[NENG][MAX_FEEDS], c[NENG][MAX_FEEDS];
	static const char *const name[NENG] = {"strata", "xapian", "sqlite"};
	s[e][k] = secs;
	c[e][k] = cpu;
	fprintf(stderr, "textbench: %s feed %d of %d: %.0f docs/s, %.2f s CPU\n", name[e], k + 1,
	        o->feeds, (double)o->docs / secs, cpu);
	if (k == o->feeds - 1) {
		r->feed_s[e] = bench_median(s[e], (size_t)o->feeds);
		r->feed_cpu[e] = bench_median(c[e], (size_t)o->feeds);
	}
}

static int strata_setup(const struct opts *o, struct strata **db, struct results *r)
{
	char app[4096], path[4200];
	snprintf(app, sizeof app, "%s/app", o->dir);
	snprintf(path, sizeof path, "%s/corpus.jsonl", o->dir);
	for (int k = 0; k < o->feeds; k++) {
		strata_close(*db);
		*db = NULL;
		bench_remove_tree(app);
		if (bench_write_schema(app, "text", schema_text))
			return 1;
		struct strata_error err = {0};
		if (strata_open(app, NULL, db, &err) != 0)
			return bench_fail("strata: %s", err.msg);
		struct strata_feed_stats st = {0};
		double t0 = base_now(), c0 = bench_cpu_now();
		int rc = strata_feed_file(*db, path, NULL, NULL, &st, &err);
		feed_time(o, r, E_STRATA, k, base_now() - t0, bench_cpu_now() - c0);
		r->fed[E_STRATA] = st.ok;
		if (rc)
			return bench_fail("strata feed: %s", err.msg);
	}
	return 0;
}

/* The request of query terms in mode m. */
static void strata_request(char *req, size_t cap, const uint32_t *terms, int nt, int m)
{
	size_t o = 0;
	o += (size_t)snprintf(req + o, cap - o, "{\"yql\": \"select * from sources * where ");
	if (mode_target[m])
		o += (size_t)snprintf(req + o, cap - o, "{targetHits: %ld}weakAnd(", mode_target[m]);
	for (int i = 0; i < nt; i++) {
		char w[WORD_MAX];
		tg_word(terms[i], w);
		o += (size_t)snprintf(req + o, cap - o, "%sbody contains \\\"%s\\\"",
		                      i ? (mode_target[m] ? ", " : " or ") : "", w);
	}
	snprintf(req + o, cap - o, "%s\", \"hits\": 10, \"ranking.profile\": \"bm25\"}",
	         mode_target[m] ? ")" : "");
}

/* The document numbers of a result's hits into ids; their count. */
static int result_ids(const char *out, long *ids)
{
	json_t *r = json_loads(out, 0, NULL);
	json_t *kids = json_object_get(json_object_get(r, "root"), "children");
	size_t i;
	json_t *h;
	int n = 0;
	json_array_foreach(kids, i, h) {
		const char *id = json_string_value(json_object_get(h, "id"));
		if (id && n < 10)
			ids[n++] = atol(strrchr(id, ':') + 1);
	}
	json_decref(r);
	return n;
}

static int strata_query(struct strata *db, const uint32_t *terms, int nt, int m, double *us,
                        long *ids, int *nids)
{
	char req[2048];
	strata_request(req, sizeof req, terms, nt, m);
	char *out = NULL;
	struct strata_error err = {0};
	double t0 = base_now();
	int rc = strata_query_json(db, req, &out, &err);
	*us = (base_now() - t0) * 1e6;
	if (rc)
		return bench_fail("strata query %s: %s", req, err.msg);
	*nids = result_ids(out, ids);
	strata_free(out);
	return 0;
}

/* ---- Xapian ---------------------------------------------------------------------------- */

static int xapian_start(const struct opts *o, struct peer *p, struct results *r)
{
	int in[2], out[2];
	if (pipe(in) || pipe(out))
		return bench_fail("pipe: %s", strerror(errno));
	char db[4096], docs[4096];
	snprintf(db, sizeof db, "%s/xapian", o->dir);
	snprintf(docs, sizeof docs, "%s/docs.txt", o->dir);
	p->pid = fork();
	if (p->pid < 0)
		return bench_fail("fork: %s", strerror(errno));
	if (p->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(o->xapian, o->xapian, db, docs, (char *)NULL);
		fprintf(stderr, "textbench: cannot run %s: %s\n", o->xapian, strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	p->to = fdopen(in[1], "w");
	p->from = fdopen(out[0], "r");
	char line[256];
	double secs, cpu;
	if (!fgets(line, sizeof line, p->from) ||
	    sscanf(line, "indexed %ld %lf %lf", &r->fed[E_XAPIAN], &secs, &cpu) != 3)
		return bench_fail("xapian: no index built");
	r->feed_s[E_XAPIAN] = secs;
	r->feed_cpu[E_XAPIAN] = cpu;
	return 0;
}

static int xapian_query(struct peer *p, const uint32_t *terms, int nt, double *us)
{
	fputs("q", p->to);
	for (int i = 0; i < nt; i++) {
		char w[WORD_MAX];
		tg_word(terms[i], w);
		fprintf(p->to, " %s", w);
	}
	fputc('\n', p->to);
	fflush(p->to);
	char line[1024];
	if (!fgets(line, sizeof line, p->from) || sscanf(line, "%lf", us) != 1)
		return bench_fail("xapian: no answer");
	return 0;
}

static void xapian_stop(struct peer *p)
{
	if (p->to) {
		fputs("quit\n", p->to);
		fclose(p->to);
	}
	if (p->from)
		fclose(p->from);
	if (p->pid > 0)
		waitpid(p->pid, NULL, 0);
}

/* ---- SQLite FTS5 ------------------------------------------------------------------------ */

static int sqlite_index(const struct opts *o, sqlite3 **db, struct results *r, int k)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/fts.db", o->dir);
	remove(path);
	if (sqlite3_open(path, db) != SQLITE_OK)
		return bench_fail("sqlite: %s", sqlite3_errmsg(*db));
	snprintf(path, sizeof path, "%s/docs.txt", o->dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return bench_fail("cannot read %s", path);
	static char buf[DOC_CAP];
	sqlite3_stmt *ins = NULL;
	double t0 = base_now(), c0 = bench_cpu_now();
	int rc = sqlite3_exec(*db, "CREATE VIRTUAL TABLE t USING fts5(body); BEGIN", NULL, NULL,
	                      NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(*db, "INSERT INTO t(rowid, body) VALUES (?, ?)", -1, &ins, NULL);
	long n = 0;
	while (rc == SQLITE_OK && fgets(buf, sizeof buf, f)) {
		size_t len = strcspn(buf, "\n");
		sqlite3_bind_int64(ins, 1, n);
		sqlite3_bind_text(ins, 2, buf, (int)len, SQLITE_STATIC);
		rc = sqlite3_step(ins) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
		sqlite3_reset(ins);
		n++;
	}
	sqlite3_finalize(ins);
	fclose(f);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(*db, "COMMIT", NULL, NULL, NULL);
	feed_time(o, r, E_SQLITE, k, base_now() - t0, bench_cpu_now() - c0);
	r->fed[E_SQLITE] = n;
	if (rc != SQLITE_OK)
		return bench_fail("sqlite: %s", sqlite3_errmsg(*db));
	return 0;
}

static int sqlite_setup(const struct opts *o, sqlite3 **db, struct results *r)
{
	for (int k = 0; k < o->feeds; k++) {
		if (*db)
			sqlite3_close(*db);
		*db = NULL;
		int rc = sqlite_index(o, db, r, k);
		if (rc)
			return rc;
	}
	return 0;
}

static int sqlite_query(sqlite3 *db, const uint32_t *terms, int nt, double *us)
{
	char sql[1024];
	size_t o = (size_t)snprintf(sql, sizeof sql, "SELECT rowid FROM t WHERE t MATCH '");
	for (int i = 0; i < nt; i++) {
		char w[WORD_MAX];
		tg_word(terms[i], w);
		o += (size_t)snprintf(sql + o, sizeof sql - o, "%s%s", i ? " OR " : "", w);
	}
	snprintf(sql + o, sizeof sql - o, "' ORDER BY bm25(t) LIMIT 10");
	double t0 = base_now();
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	int n = 0;
	while (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		n += sqlite3_column_int64(st, 0) >= 0;
	sqlite3_finalize(st);
	*us = (base_now() - t0) * 1e6;
	if (rc != SQLITE_OK)
		return bench_fail("sqlite: %s", sqlite3_errmsg(db));
	return 0;
}

/* ---- the rounds ------------------------------------------------------------------------- */

static int one_round(const struct opts *o, int round, const struct textgen *g, struct strata *sdb,
                     struct peer *xp, sqlite3 *qdb, struct results *r)
{
	for (int k = 0; k < NENG; k++) {
		int e = (round + k) % NENG;
		for (int c = 0; c < NT; c++)
			for (int q = 0; q < o->queries; q++) {
				uint32_t terms[8];
				tg_query(g, nterms[c], q, terms);
				size_t at = (size_t)round * (size_t)o->queries + (size_t)q;
				if (e == E_XAPIAN && xapian_query(xp, terms, nterms[c], &r->t[e][c][0][at]))
					return 1;
				if (e == E_SQLITE && sqlite_query(qdb, terms, nterms[c], &r->t[e][c][0][at]))
					return 1;
				if (e != E_STRATA)
					continue;
				long exact[10];
				int nexact = 0;
				for (int m = 0; m < NMODE; m++) {
					long ids[10];
					int n;
					if (strata_query(sdb, terms, nterms[c], m, &r->t[e][c][m][at], ids, &n))
						return 1;
					if (m == 0) {
						memcpy(exact, ids, sizeof ids);
						nexact = n;
					}
					if (round == 0) {
						int hit = 0;
						for (int i = 0; i < n; i++)
							for (int j = 0; j < nexact; j++)
								hit += ids[i] == exact[j];
						r->recall[c][m] += nexact ? (double)hit / nexact : 1;
					}
				}
			}
	}
	return 0;
}

static void report(const struct opts *o, struct results *r)
{
	size_t n = (size_t)o->rounds * (size_t)o->queries;
	double rate[NENG], crate[NENG];
	for (int e = 0; e < NENG; e++) {
		rate[e] = r->feed_s[e] > 0 ? (double)r->fed[e] / r->feed_s[e] : 0;
		crate[e] = r->feed_cpu[e] > 0 ? (double)r->fed[e] / r->feed_cpu[e] : 0;
	}
	printf("\ntext search: %ld documents, %d queries per case, %d rounds, top 10\n\n", o->docs,
	       o->queries, o->rounds);
	printf("%-6s %-10s %11s %11s %11s %9s %9s %10s\n", "terms", "query", "strata_ms",
	       "xapian_ms", "sqlite_ms", "vs_xapian", "vs_sqlite", "recall@10");
	double worst_ratio = 0;
	char json[NT * NMODE][512];
	for (int c = 0; c < NT; c++) {
		double xm = bench_median(r->t[E_XAPIAN][c][0], n) / 1000;
		double qm = bench_median(r->t[E_SQLITE][c][0], n) / 1000;
		for (int m = 0; m < NMODE; m++) {
			double sm = bench_median(r->t[E_STRATA][c][m], n) / 1000;
			double rec = r->recall[c][m] / o->queries;
			if (m && sm / xm > worst_ratio)
				worst_ratio = sm / xm;
			printf("%-6d %-10s %11.3f %11.3f %11.3f %9.2f %9.2f %10.3f\n", nterms[c],
			       mode_name[m], sm, xm, qm, sm / xm, sm / qm, rec);
			snprintf(json[c * NMODE + m], sizeof json[0],
			         "{\"terms\": %d, \"query\": \"%s\", \"strata_ms\": %g, \"xapian_ms\": %g, "
			         "\"sqlite_ms\": %g, \"vs_xapian\": %g, \"vs_sqlite\": %g, \"recall10\": %g}",
			         nterms[c], mode_name[m], sm, xm, qm, sm / xm, sm / qm, rec);
		}
	}
	printf("\nfeed (docs/s):            strata %6.0f   xapian %6.0f   sqlite %6.0f\n", rate[E_STRATA],
	       rate[E_XAPIAN], rate[E_SQLITE]);
	printf("feed (docs/CPU second):   strata %6.0f   xapian %6.0f   sqlite %6.0f\n\n",
	       crate[E_STRATA], crate[E_XAPIAN], crate[E_SQLITE]);
	for (int i = 0; i < NT * NMODE; i++)
		puts(json[i]);
	printf("{\"feed_docs_per_s\": {\"strata\": %g, \"xapian\": %g, \"sqlite\": %g}, "
	       "\"feed_docs_per_cpu_s\": {\"strata\": %g, \"xapian\": %g, \"sqlite\": %g}, "
	       "\"docs\": %ld}\n", rate[E_STRATA], rate[E_XAPIAN], rate[E_SQLITE], crate[E_STRATA],
	       crate[E_XAPIAN], crate[E_SQLITE], o->docs);
	printf("\ngoals:\n");
	printf("  weakAnd top-10 median <= Xapian's, every case (worst ratio %.2f): %s\n",
	       worst_ratio, worst_ratio <= 1 ? "met" : "NOT MET");
	printf("  feed with text >= 50000 docs/s (%.0f): %s\n", rate[E_STRATA],
	       rate[E_STRATA] >= 50000 ? "met" : "NOT MET");
}

static int usage(void)
{
	fprintf(stderr, "usage: textbench [--docs N] [--queries Q] [--rounds R] [--feeds F] "
	        "[--xapian PROG] DIR\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct opts o = {100000, 50, 5, 3, "build/bench/text_xapian", NULL};
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--docs") && i + 1 < argc)
			o.docs = atol(argv[++i]);
		else if (!strcmp(argv[i], "--queries") && i + 1 < argc)
			o.queries = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			o.rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--feeds") && i + 1 < argc)
			o.feeds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--xapian") && i + 1 < argc)
			o.xapian = argv[++i];
		else if (argv[i][0] == '-' || o.dir)
			return usage();
		else
			o.dir = argv[i];
	}
	if (!o.dir || o.docs < 1 || o.queries < 1 || o.queries > MAX_Q || o.rounds < 1 ||
	    o.rounds > MAX_ROUNDS || o.feeds < 1 || o.feeds > MAX_FEEDS)
		return usage();
	signal(SIGPIPE, SIG_IGN);
	if (bench_make_dir(o.dir))
		return 1;
	struct textgen g;
	if (tg_init(&g, SEED))
		return bench_fail("out of memory");
	static struct results r;
	size_t n = (size_t)o.rounds * (size_t)o.queries;
	for (int e = 0; e < NENG; e++)
		for (int c = 0; c < NT; c++)
			for (int m = 0; m < NMODE; m++)
				if (!(r.t[e][c][m] = calloc(n, sizeof(double))))
					return bench_fail("out of memory");
	struct strata *sdb = NULL;
	sqlite3 *qdb = NULL;
	struct peer xp = {0};
	int rc = write_corpus(&g, &o);
	if (!rc) {
		fprintf(stderr, "textbench: feeding Strata\n");
		rc = strata_setup(&o, &sdb, &r);
	}
	if (!rc) {
		fprintf(stderr, "textbench: indexing with Xapian\n");
		rc = xapian_start(&o, &xp, &r);
	}
	if (!rc) {
		fprintf(stderr, "textbench: indexing with SQLite FTS5\n");
		rc = sqlite_setup(&o, &qdb, &r);
	}
	for (int round = 0; !rc && round < o.rounds; round++) {
		fprintf(stderr, "textbench: round %d of %d\n", round + 1, o.rounds);
		rc = one_round(&o, round, &g, sdb, &xp, qdb, &r);
	}
	if (!rc)
		report(&o, &r);
	xapian_stop(&xp);
	if (qdb)
		sqlite3_close(qdb);
	strata_close(sdb);
	tg_free(&g);
	for (int e = 0; e < NENG; e++)
		for (int c = 0; c < NT; c++)
			for (int m = 0; m < NMODE; m++)
				free(r.t[e][c][m]);
	return rc;
}
