/*
 * matchbench.c: what a query of one hit costs as the corpus grows, through
 * the public API (make bench-match, the match case of make bench).
 *
 *     matchbench [--docs N,M,...] [--queries Q] [--rounds R] DIR
 *
 * The acceptance check of "a query's cost follows its answer, not the
 * corpus": the same queries, each with exactly one hit, are timed on a
 * corpus of 100,000 documents and on one of 1,000,000 (--docs: a list of
 * ascending sizes, at least 1,000 each), and the larger size's figures
 * should be those of the smaller.
 *
 * The corpus of N documents (fixed seed; a document's text depends on its
 * number alone, except for the one-hit words): a body of 20 to 50 words
 * drawn uniformly from 1,024 made-up words of three syllables, plus "kax"
 * in about half the documents; the int bucket = i % 1000, so that a bucket
 * holds N/1000 documents.  500 documents spread evenly over the corpus
 * (document k is floor((2k + 1) N / 1000)) each hold a word of their own,
 * "rare" and k spelled in letters (rareaaa, rareaab, ...: the tokenizer
 * splits letters from digits, so "rare12" would be the phrase "rare" "12"),
 * and all hold kax.  It is written as DIR/N/corpus.jsonl, Vespa put
 * operations, fed through strata_feed_file into the application DIR/N/app
 * (schemas/corpus.sd below, deployed afresh), and then removed.
 *
 * Queries: Q (50) of the one-hit words (k = q * 500 / Q), three cases, each
 * asking for 10 hits ranked by the profile bm25 (bm25(body)):
 *
 *   rare         body contains "rareK"
 *   rare_kax     body contains "rareK" and body contains "kax"
 *   bucket_rare  bucket = B and body contains "rareK"   (B: that document's)
 *
 * Each has one hit: every result is checked (totalCount 1, the hit the
 * word's document) and the bench fails otherwise.  Every query runs once at
 * each size untimed, then R rounds (5): in each, every size runs every
 * query of every case, the size going first rotating from round to round.
 * A figure is the median over the R x Q runs of a case: the wall time of
 * strata_query_json (the request, YQL, matching, ranking, the result JSON).
 *
 * Output: a table (the median at each size, the ratio of the last size's
 * to the first's), one JSON line per case, then the goals: at the last
 * size each case at most 2 times its time at the first and under 0.5 ms,
 * reported, not enforced.  Progress goes to stderr.  Exit status 1 when a
 * feed or a query failed or a result was not its one hit.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../base/base.h"
#include "../include/strata.h"
#include "common.h"

#define SEED 0x6d61746368ull
#define VOCAB 1024
#define MIN_WORDS 20
#define MAX_WORDS 50
#define NRARE 500
#define NBUCKET 1000
#define DOC_CAP 1024
#define MAX_SIZES 4
#define MAX_ROUNDS 50
#define MIN_DOCS (2 * NRARE)
#define MAX_DOCS 100000000L
#define GOAL_RATIO 2.0
#define GOAL_MS 0.5
#define NCASE 3
static const char *const case_name[NCASE] = {"rare", "rare_kax", "bucket_rare"};

static const char *const schema_text =
	"# Written by bench/matchbench.c: a text field ranked by bm25 and a\n"
	"# fast-search int attribute.\n"
	"schema corpus {\n"
	"    document corpus {\n"
	"        field body type string {\n"
	"            indexing: index | summary\n"
	"            index: enable-bm25\n"
	"            stemming: none\n"
	"        }\n"
	"        field bucket type int {\n"
	"            indexing: attribute | summary\n"
	"            attribute: fast-search\n"
	"        }\n"
	"    }\n"
	"    rank-profile bm25 {\n"
	"        first-phase { expression: bm25(body) }\n"
	"    }\n"
	"}\n";

struct opts {
	long docs[MAX_SIZES];
	int nsizes;
	int queries;
	int rounds;
	const char *dir;
};

/* One corpus: its size, its open application, and its timings in
 * milliseconds, [case][round * Q + q]. */
struct size {
	long n;
	struct strata *db;
	double *t[NCASE];
};

/* ---- the corpus ------------------------------------------------------------------------ */

static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Word j of the vocabulary: three consonant-vowel syllables, the first two
 * j's digits in base 60 (so distinct), never "kax" nor "rare...". */
static size_t vocab_word(int j, char *w)
{
	static const char cons[] = "bdfghklmnpst", vow[] = "aeiou";
	int syl[3] = {j % 60, j / 60 % 60, (j * 37 + 11) % 60};
	for (int i = 0; i < 3; i++) {
		w[2 * i] = cons[syl[i] / 5];
		w[2 * i + 1] = vow[syl[i] % 5];
	}
	w[6] = 0;
	return 6;
}

/* The one-hit word k: "rare" and k in three letters. */
static size_t rare_word(int k, char *w)
{
	memcpy(w, "rare", 4);
	w[4] = (char)('a' + k / 676 % 26);
	w[5] = (char)('a' + k / 26 % 26);
	w[6] = (char)('a' + k % 26);
	w[7] = 0;
	return 7;
}

/* The document of word k in a corpus of n: in [k n / NRARE, (k + 1) n / NRARE). */
static long rare_doc(long n, int k)
{
	return (2 * (long)k + 1) * n / (2 * NRARE);
}

/* Document i's body (of a corpus of n) into buf. */
static void doc_body(long n, long i, char *buf)
{
	uint64_t s = SEED ^ ((uint64_t)i * 0xd1342543de82ef95ull);
	int len = MIN_WORDS + (int)(next(&s) % (MAX_WORDS - MIN_WORDS + 1));
	uint64_t coin = next(&s);
	int kpos = (int)(next(&s) % (uint64_t)len), rpos = (int)(next(&s) % (uint64_t)len);
	int k = (int)(i * NRARE / n);
	int rare = rare_doc(n, k) == i;
	int kax = rare || (coin & 1);
	size_t o = 0;
	for (int p = 0; p < len; p++) {
		if (p)
			buf[o++] = ' ';
		o += vocab_word((int)(next(&s) % VOCAB), buf + o);
		if (kax && p == kpos) {
			memcpy(buf + o, " kax", 4);
			o += 4;
		}
		if (rare && p == rpos) {
			buf[o++] = ' ';
			o += rare_word(k, buf + o);
		}
	}
	buf[o] = 0;
}

static int write_corpus(long n, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return bench_fail("cannot write %s: %s", path, strerror(errno));
	static char iobuf[1 << 20];
	setvbuf(f, iobuf, _IOFBF, sizeof iobuf);
	char body[DOC_CAP];
	for (long i = 0; i < n; i++) {
		doc_body(n, i, body);
		fprintf(f, "{\"put\": \"id:corpus:corpus::%ld\", \"fields\": {\"body\": \"%s\", "
		        "\"bucket\": %ld}}\n", i, body, i % NBUCKET);
	}
	int bad = ferror(f);
	bad |= fclose(f) != 0;
	if (bad)
		return bench_fail("cannot write %s", path);
	return 0;
}

/* Write size z's corpus, deploy its application afresh, feed it. */
static int size_build(const struct opts *o, struct size *z)
{
	char dir[4096], app[4200], path[4200];
	snprintf(dir, sizeof dir, "%s/%ld", o->dir, z->n);
	snprintf(app, sizeof app, "%s/app", dir);
	snprintf(path, sizeof path, "%s/corpus.jsonl", dir);
	if (bench_make_dir(dir))
		return 1;
	fprintf(stderr, "matchbench: %ld documents: writing %s\n", z->n, path);
	if (write_corpus(z->n, path))
		return 1;
	if (bench_remove_tree(app) != 0 && errno != ENOENT)
		return bench_fail("cannot remove %s: %s", app, strerror(errno));
	if (bench_write_schema(app, "corpus", schema_text))
		return 1;
	struct strata_error err = {0};
	if (strata_open(app, NULL, &z->db, &err) != 0)
		return bench_fail("strata: %s", err.msg);
	fprintf(stderr, "matchbench: %ld documents: feeding\n", z->n);
	struct strata_feed_stats st = {0};
	double t0 = base_now(), c0 = bench_cpu_now();
	int rc = strata_feed_file(z->db, path, NULL, NULL, &st, &err);
	double secs = base_now() - t0, cpu = bench_cpu_now() - c0;
	if (rc)
		return bench_fail("strata feed: %s", err.msg);
	if (st.ok != z->n)
		return bench_fail("strata feed: %ld of %ld documents written", st.ok, z->n);
	fprintf(stderr, "matchbench: %ld documents fed in %.1f s (%.0f docs/s, %.1f s CPU)\n", z->n,
	        secs, (double)z->n / secs, cpu);
	remove(path);
	return 0;
}

/* ---- the queries ----------------------------------------------------------------------- */

/* The request of case c for word k, whose document is in bucket b. */
static void request(char *req, size_t cap, int c, int k, long b)
{
	char w[16], where[256];
	rare_word(k, w);
	if (c == 0)
		snprintf(where, sizeof where, "body contains \\\"%s\\\"", w);
	else if (c == 1)
		snprintf(where, sizeof where, "body contains \\\"%s\\\" and body contains \\\"kax\\\"", w);
	else
		snprintf(where, sizeof where, "bucket = %ld and body contains \\\"%s\\\"", b, w);
	snprintf(req, cap, "{\"yql\": \"select * from sources * where %s\", \"hits\": 10, "
	         "\"ranking.profile\": \"bm25\"}", where);
}

/* Whether result out is the one hit, document want. */
static int check(const char *req, const char *out, long want)
{
	json_t *r = json_loads(out, 0, NULL);
	json_t *root = json_object_get(r, "root");
	json_t *total = json_object_get(json_object_get(root, "fields"), "totalCount");
	json_t *kids = json_object_get(root, "children");
	const char *id = json_string_value(json_object_get(json_array_get(kids, 0), "id"));
	const char *colon = id ? strrchr(id, ':') : NULL;
	int ok = json_is_integer(total) && json_integer_value(total) == 1 &&
	         json_array_size(kids) == 1 && colon && atol(colon + 1) == want;
	json_decref(r);
	if (!ok)
		return bench_fail("%s: not the one hit (document %ld): %.400s", req, want, out);
	return 0;
}

/* Run query q of case c on z; its time in *ms when ms is not NULL. */
static int run_query(const struct opts *o, struct size *z, int c, int q, double *ms)
{
	int k = q * NRARE / o->queries;
	long d = rare_doc(z->n, k);
	char req[512];
	request(req, sizeof req, c, k, d % NBUCKET);
	char *out = NULL;
	struct strata_error err = {0};
	double t0 = base_now();
	int rc = strata_query_json(z->db, req, &out, &err);
	double t = base_now() - t0;
	if (rc)
		return bench_fail("strata query %s: %s", req, err.msg);
	rc = check(req, out, d);
	strata_free(out);
	if (ms)
		*ms = t * 1e3;
	return rc;
}

/* Round round of every query at every size; round -1 is the untimed one. */
static int one_round(const struct opts *o, struct size *sz, int round)
{
	for (int j = 0; j < o->nsizes; j++) {
		struct size *z = &sz[round < 0 ? j : (round + j) % o->nsizes];
		for (int q = 0; q < o->queries; q++)
			for (int c = 0; c < NCASE; c++) {
				size_t at = (size_t)(round < 0 ? 0 : round) * (size_t)o->queries + (size_t)q;
				if (run_query(o, z, c, q, round < 0 ? NULL : &z->t[c][at]))
					return 1;
			}
	}
	return 0;
}

/* ---- the report ------------------------------------------------------------------------- */

static void size_name(long n, char *buf, size_t cap)
{
	if (n % 1000000 == 0)
		snprintf(buf, cap, "%ldM", n / 1000000);
	else if (n % 1000 == 0)
		snprintf(buf, cap, "%ldk", n / 1000);
	else
		snprintf(buf, cap, "%ld", n);
}

/* The 1-minute load average, or -1. */
static double load_avg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

static void report(const struct opts *o, struct size *sz, double load0, double load1)
{
	size_t n = (size_t)o->rounds * (size_t)o->queries;
	int last = o->nsizes - 1;
	char first_name[32], last_name[32], col[64];
	size_name(sz[0].n, first_name, sizeof first_name);
	size_name(sz[last].n, last_name, sizeof last_name);
	double ms[NCASE][MAX_SIZES];
	for (int c = 0; c < NCASE; c++)
		for (int j = 0; j < o->nsizes; j++)
			ms[c][j] = bench_median(sz[j].t[c], n);

	printf("\nmatch: one-hit queries, %d words x %d rounds per case and size, 10 hits, bm25 "
	       "(load average %.2f before the rounds, %.2f after)\n\n", o->queries, o->rounds, load0,
	       load1);
	printf("%-12s", "case");
	for (int j = 0; j < o->nsizes; j++) {
		char name[32];
		size_name(sz[j].n, name, sizeof name);
		snprintf(col, sizeof col, "%s_ms", name);
		printf(" %10s", col);
	}
	if (last) {
		snprintf(col, sizeof col, "%s/%s", last_name, first_name);
		printf(" %10s", col);
	}
	printf("\n");
	for (int c = 0; c < NCASE; c++) {
		printf("%-12s", case_name[c]);
		for (int j = 0; j < o->nsizes; j++)
			printf(" %10.4f", ms[c][j]);
		if (last)
			printf(" %10.2f", ms[c][last] / ms[c][0]);
		printf("\n");
	}
	printf("\n");
	for (int c = 0; c < NCASE; c++) {
		printf("{\"case\": \"%s\", \"docs\": [", case_name[c]);
		for (int j = 0; j < o->nsizes; j++)
			printf("%s%ld", j ? ", " : "", sz[j].n);
		printf("], \"median_ms\": [");
		for (int j = 0; j < o->nsizes; j++)
			printf("%s%g", j ? ", " : "", ms[c][j]);
		printf("], \"ratio\": %g, \"queries\": %d, \"rounds\": %d}\n",
		       ms[c][last] / ms[c][0], o->queries, o->rounds);
	}

	printf("\ngoals:\n");
	int tally[3] = {0};
	char line[256];
	for (int c = 0; c < NCASE; c++) {
		snprintf(line, sizeof line, "%s at %s: %.2f x its time at %s (at most %.0f x)",
		         case_name[c], last_name, ms[c][last] / ms[c][0], first_name, GOAL_RATIO);
		bench_goal(tally, last > 0, ms[c][last] <= GOAL_RATIO * ms[c][0], line);
		snprintf(line, sizeof line, "%s at %s: %.4f ms (under %.1f ms)", case_name[c],
		         last_name, ms[c][last], GOAL_MS);
		bench_goal(tally, 1, ms[c][last] < GOAL_MS, line);
	}
	printf("match goals: %d met, %d not met, %d not measured\n", tally[0], tally[1], tally[2]);
}

/* ---- the driver ------------------------------------------------------------------------- */

static int usage(int help)
{
	fprintf(help ? stdout : stderr,
	        "usage: matchbench [--docs N,M,...] [--queries Q] [--rounds R] DIR\n"
	        "  --docs     ascending corpus sizes, %ld to %ld each, at most %d "
	        "(100000,1000000)\n"
	        "  --queries  one-hit words queried per case, 1 to %d (50)\n"
	        "  --rounds   rounds of every query, 1 to %d (5)\n"
	        "  DIR        scratch folder: DIR/N/app, the application of N documents\n",
	        (long)MIN_DOCS, MAX_DOCS, MAX_SIZES, NRARE, MAX_ROUNDS);
	return help ? 0 : 2;
}

/* The list "N,M,..." into o->docs; 0, or -1 when it is not one. */
static int parse_sizes(const char *s, struct opts *o)
{
	o->nsizes = 0;
	for (;;) {
		char *end;
		errno = 0;
		long n = strtol(s, &end, 10);
		if (end == s || errno || n < MIN_DOCS || n > MAX_DOCS || o->nsizes == MAX_SIZES ||
		    (o->nsizes && n <= o->docs[o->nsizes - 1]))
			return -1;
		o->docs[o->nsizes++] = n;
		if (!*end)
			return 0;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

int main(int argc, char **argv)
{
	struct opts o = {{100000, 1000000}, 2, 50, 5, NULL};
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return usage(1);
		else if (!strcmp(argv[i], "--docs") && i + 1 < argc) {
			if (parse_sizes(argv[++i], &o))
				return usage(0);
		} else if (!strcmp(argv[i], "--queries") && i + 1 < argc)
			o.queries = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			o.rounds = atoi(argv[++i]);
		else if (argv[i][0] == '-' || o.dir)
			return usage(0);
		else
			o.dir = argv[i];
	}
	if (!o.dir || o.queries < 1 || o.queries > NRARE || o.rounds < 1 || o.rounds > MAX_ROUNDS)
		return usage(0);
	if (bench_make_dir(o.dir))
		return 1;
	struct size sz[MAX_SIZES] = {0};
	size_t n = (size_t)o.rounds * (size_t)o.queries;
	int rc = 0;
	for (int j = 0; j < o.nsizes; j++) {
		sz[j].n = o.docs[j];
		for (int c = 0; c < NCASE; c++)
			if (!(sz[j].t[c] = calloc(n, sizeof(double))))
				rc = bench_fail("out of memory");
	}
	for (int j = 0; !rc && j < o.nsizes; j++)
		rc = size_build(&o, &sz[j]);
	if (!rc) {
		fprintf(stderr, "matchbench: every query once, untimed\n");
		rc = one_round(&o, sz, -1);
	}
	double load0 = load_avg();
	for (int round = 0; !rc && round < o.rounds; round++) {
		fprintf(stderr, "matchbench: round %d of %d\n", round + 1, o.rounds);
		rc = one_round(&o, sz, round);
	}
	if (!rc)
		report(&o, sz, load0, load_avg());
	for (int j = 0; j < o.nsizes; j++) {
		strata_close(sz[j].db);
		for (int c = 0; c < NCASE; c++)
			free(sz[j].t[c]);
	}
	return rc;
}
