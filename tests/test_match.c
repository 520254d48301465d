/*
 * test_match.c: matching through iterators against matching by a scan.
 * A random corpus (words from a small vocabulary, a fast-search int f, a
 * plain int g, a fast-search string s, a vector e; some documents removed,
 * some replaced) and random where trees of and / or / ! over words,
 * phrases, comparisons, ranges, in, contains on s and weightedSet on f, a
 * quarter of them ANDed with a nearestNeighbor on e.  Each query runs as written
 * (its iterators drive the match) and again OR-ed with a condition no
 * document passes and no iterator can give (g < -1), which makes the
 * engine test every document: the two results must be the same hits with
 * the same scores in the same order (with a nearestNeighbor, the OR goes
 * under its AND, so that its filter is the same); and the hits must be
 * those a plain evaluation of the tree over the corpus finds (without a
 * nearestNeighbor, whose set the engine chooses).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dbtest.h"
#include "rng.h"

#define NDOCS 1200
#define NWORDS 24
#define LEN 8
#define NS 5

static const char *SD =
	"schema doc {\n"
	"  document doc {\n"
	"    field body type string { indexing: index | summary\n index: enable-bm25 }\n"
	"    field f type int { indexing: attribute | summary\n attribute: fast-search }\n"
	"    field g type int { indexing: attribute | summary }\n"
	"    field s type string { indexing: attribute | summary\n attribute: fast-search }\n"
	"    field k type int { indexing: attribute | summary }\n"
	"    field e type tensor<float>(x[2]) { indexing: attribute\n"
	"      attribute { distance-metric: euclidean } }\n"
	"  }\n"
	"  rank-profile bm {\n"
	"    inputs { query(q) tensor<float>(x[2]) }\n"
	"    first-phase { expression: bm25(body) + attribute(k) * 0.0001 }\n"
	"  }\n"
	"}\n";

struct doc {
	int live;
	int words[LEN];
	int f, g, s;
};
static struct doc docs[NDOCS];

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
	return test_rng_below(&rs, n);
}

/* Words skewed towards the first ones: some common, some rare. */
static int word(void)
{
	uint32_t r = rnd(1000);
	return r < 500 ? (int)rnd(4) : r < 850 ? 4 + (int)rnd(8) : 12 + (int)rnd(NWORDS - 12);
}

static void put(struct strata *db, int i)
{
	struct doc *d = &docs[i];
	char body[256] = "", op[512];
	for (int w = 0; w < LEN; w++) {
		d->words[w] = word();
		snprintf(body + strlen(body), sizeof body - strlen(body), "%sw%d", w ? " " : "",
		         d->words[w]);
	}
	d->f = (int)rnd(20);
	d->g = (int)rnd(20);
	d->s = (int)rnd(NS);
	d->live = 1;
	snprintf(op, sizeof op,
	         "{\"put\": \"id:t:doc::%d\", \"fields\": {\"body\": \"%s\", \"f\": %d, \"g\": %d, "
	         "\"s\": \"s%d\", \"k\": %d, \"e\": [%u, %u]}}", i, body, d->f, d->g, d->s, i,
	         rnd(1000), rnd(1000));
	dbtest_feed_json(db, op);
}

/* ---- random where trees, as YQL text and as a test of one document ---------------------- */

enum { T_WORD, T_PHRASE, T_F, T_RANGE, T_G, T_IN, T_S, T_WSET, T_AND, T_OR, T_ANDNOT };
struct node {
	int kind, a, b;
	struct node *l, *r;
};
static struct node pool[256];
static int npool;

static struct node *gen(int depth)
{
	struct node *n = &pool[npool++];
	int leaf = depth == 0 || rnd(3) == 0;
	n->kind = leaf ? (int)rnd(8) : T_AND + (int)rnd(3);
	n->a = n->kind == T_WORD || n->kind == T_PHRASE ? word() : (int)rnd(20);
	n->b = n->kind == T_PHRASE ? word() : n->kind == T_S ? (int)rnd(NS) : (int)rnd(20);
	if (n->kind == T_S)
		n->a = n->b;
	if (!leaf) {
		n->l = gen(depth - 1);
		n->r = gen(depth - 1);
	}
	return n;
}

static void yql(const struct node *n, char *out, size_t cap)
{
	char l[2048], r[2048];
	switch (n->kind) {
	case T_WORD: snprintf(out, cap, "body contains \\\"w%d\\\"", n->a); return;
	case T_PHRASE: snprintf(out, cap, "body contains \\\"w%d w%d\\\"", n->a, n->b); return;
	case T_F: snprintf(out, cap, "f = %d", n->a); return;
	case T_RANGE: snprintf(out, cap, "range(f, %d, %d)", n->a < n->b ? n->a : n->b,
	                       n->a < n->b ? n->b : n->a); return;
	case T_G: snprintf(out, cap, "g < %d", n->a); return;
	case T_IN: snprintf(out, cap, "f in (%d, %d)", n->a, n->b); return;
	case T_S: snprintf(out, cap, "s contains \\\"s%d\\\"", n->a); return;
	case T_WSET: snprintf(out, cap, "weightedSet(f, {\\\"%d\\\": 1, \\\"%d\\\": 2})", n->a, n->b);
		return;
	}
	yql(n->l, l, sizeof l);
	yql(n->r, r, sizeof r);
	snprintf(out, cap, n->kind == T_AND ? "(%s and %s)" : n->kind == T_OR ? "(%s or %s)"
	                                                                     : "(%s and !(%s))",
	         l, r);
}

static int has(const struct doc *d, int w)
{
	for (int i = 0; i < LEN; i++)
		if (d->words[i] == w)
			return 1;
	return 0;
}

static int test(const struct node *n, const struct doc *d)
{
	switch (n->kind) {
	case T_WORD: return has(d, n->a);
	case T_PHRASE:
		for (int i = 0; i + 1 < LEN; i++)
			if (d->words[i] == n->a && d->words[i + 1] == n->b)
				return 1;
		return 0;
	case T_F: return d->f == n->a;
	case T_RANGE: return d->f >= (n->a < n->b ? n->a : n->b) && d->f <= (n->a < n->b ? n->b : n->a);
	case T_G: return d->g < n->a;
	case T_IN: return d->f == n->a || d->f == n->b;
	case T_S: return d->s == n->a;
	case T_WSET: return d->f == n->a || d->f == n->b;
	case T_AND: return test(n->l, d) && test(n->r, d);
	case T_OR: return test(n->l, d) || test(n->r, d);
	}
	return test(n->l, d) && !test(n->r, d);
}

static json_t *run(struct strata *db, const char *where)
{
	char req[8192];
	snprintf(req, sizeof req,
	         "{\"yql\": \"select * from sources * where %s\", \"ranking.profile\": \"bm\", "
	         "\"hits\": 400, \"input.query(q)\": [500, 500]}", where);
	return dbtest_query(db, req);
}

static void test_iterators_agree_with_scan(void **state)
{
	struct strata *db;
	char *app = dbtest_open("match", "doc.sd", SD, &db);
	for (int i = 0; i < NDOCS; i++)
		put(db, i);
	for (int k = 0; k < NDOCS / 10; k++) { /* replace some, remove some */
		int i = (int)rnd(NDOCS);
		char id[64];
		snprintf(id, sizeof id, "id:t:doc::%d", i);
		if (rnd(2)) {
			put(db, i);
		} else if (docs[i].live) {
			struct strata_error err = {0};
			assert_int_equal(strata_remove(db, id, &err), 0);
			docs[i].live = 0;
		}
	}
	int driven = 0, with_nn = 0;
	for (int q = 0; q < 300; q++) {
		npool = 0;
		struct node *tree = gen(3);
		char where[4096 + 128], scan[4096 + 128 + 16], t[4096], nn[128] = "";
		int nnn = rnd(4) == 0;
		yql(tree, t, sizeof t);
		if (nnn)
			snprintf(nn, sizeof nn, "{targetHits: %u, approximate: false}nearestNeighbor(e, q) and ",
			         5 + rnd(200));
		snprintf(where, sizeof where, "%s%s", nn, t);
		snprintf(scan, sizeof scan, "%s(%s or g < -1)", nn, t);
		long want = 0;
		for (int i = 0; i < NDOCS; i++)
			want += docs[i].live && test(tree, &docs[i]);
		json_t *a = run(db, where), *b = run(db, scan);
		long got = (long)json_integer_value(
			json_object_get(json_object_get(json_object_get(a, "root"), "fields"), "totalCount"));
		if (got != want && !nnn)
			fail_msg("%s: %ld hits, the corpus has %ld", where, got, want);
		json_t *ha = dbtest_hits(a), *hb = dbtest_hits(b);
		if ((ha || hb) && !json_equal(ha, hb)) {
			char *x = json_dumps(ha, JSON_COMPACT), *y = json_dumps(hb, JSON_COMPACT);
			fail_msg("%s: iterated %.300s\n  scanned %.300s", where, x, y);
		}
		size_t i;
		json_t *h;
		json_array_foreach(ha, i, h) { /* each hit matches */
			int key = dbtest_hit_key(h);
			assert_true(key >= 0 && key < NDOCS && docs[key].live &&
			            (nnn || test(tree, &docs[key])));
		}
		driven += want < NDOCS / 4 && !nnn;
		with_nn += nnn;
		json_decref(a);
		json_decref(b);
	}
	assert_true(driven > 50); /* the trees were selective often enough to drive */
	assert_true(with_nn > 20);
	strata_close(db);
	apptest_remove(app);
}

/* ---- exact top k (topk.c) against scoring every match ---------------------------------- */

static const char *SD2 =
	"schema doc {\n"
	"  document doc {\n"
	"    field body type string { indexing: index | summary\n index: enable-bm25 }\n"
	"    field title type string { indexing: index | summary\n index: enable-bm25 }\n"
	"    field g type int { indexing: attribute | summary }\n"
	"  }\n"
	"  rank-profile plain { first-phase { expression: bm25(body) } }\n"
	"  rank-profile sum {\n"
	"    first-phase { expression: 2 * bm25(body) + bm25(title) / 4 - 1 }\n"
	"    rank-properties { bm25(title).k1: 0.5\n bm25(title).b: 1.0 }\n"
	"  }\n"
	"}\n";
#define NDOCS2 2000

/* Word w as letters only (the tokenizer cuts "w12" into two words). */
static const char *letters(int w)
{
	static char s[4][4];
	static int turn;
	char *o = s[turn++ % 4];
	o[0] = 'w';
	o[1] = (char)('a' + w / 26);
	o[2] = (char)('a' + w % 26);
	o[3] = 0;
	return o;
}

/* A body of 1 to 40 words: lengths vary, so do the block bounds. */
static void put2(struct strata *db, int i)
{
	char body[1024] = "", title[128] = "", op[1400];
	int len = 1 + (int)rnd(40);
	for (int w = 0; w < len; w++)
		snprintf(body + strlen(body), sizeof body - strlen(body), "%s%s", w ? " " : "",
		         letters(word()));
	for (int w = 0; w < 3; w++)
		snprintf(title + strlen(title), sizeof title - strlen(title), "%s%s", w ? " " : "",
		         letters(word()));
	snprintf(op, sizeof op,
	         "{\"put\": \"id:t:doc::%d\", \"fields\": {\"body\": \"%s\", \"title\": \"%s\", "
	         "\"g\": %d}}", i, body, title, i % 7);
	dbtest_feed_json(db, op);
}

/* Random ORs of words on body and title, under both profiles and many page
 * sizes: the top k found with block bounds (the query as written) and by
 * scoring every match (OR-ed with g < -1, which no bound covers) give the
 * same hits, scores, order and totalCount. */
static void test_topk_agrees_with_exhaustive(void **state)
{
	struct strata *db;
	char *app = dbtest_open("topk", "doc.sd", SD2, &db);
	for (int i = 0; i < NDOCS2; i++)
		put2(db, i);
	for (int k = 0; k < NDOCS2 / 10; k++) { /* some fed again, some removed */
		int i = (int)rnd(NDOCS2);
		char id[64];
		snprintf(id, sizeof id, "id:t:doc::%d", i);
		struct strata_error err = {0};
		if (rnd(2))
			put2(db, i);
		else
			strata_remove(db, id, &err);
	}
	static const int pages[] = {0, 1, 3, 10, 50, 400};
	for (int q = 0; q < 250; q++) {
		char where[2048] = "", scan[2200], req[2600];
		int nt = 1 + (int)rnd(8);
		for (int t = 0; t < nt; t++)
			snprintf(where + strlen(where), sizeof where - strlen(where),
			         "%s%s contains \\\"%s\\\"", t ? " or " : "", rnd(4) ? "body" : "title",
			         letters(word()));
		snprintf(scan, sizeof scan, "(%s) or g < -1", where);
		const char *prof = rnd(2) ? "plain" : "sum";
		int hits = pages[rnd(6)], offset = (int)rnd(3) * (int)rnd(4);
		json_t *r[2];
		for (int v = 0; v < 2; v++) {
			snprintf(req, sizeof req,
			         "{\"yql\": \"select * from sources * where %s\", \"ranking.profile\": "
			         "\"%s\", \"hits\": %d, \"offset\": %d}", v ? scan : where, prof, hits, offset);
			r[v] = dbtest_query(db, req);
		}
		json_t *ta = json_object_get(json_object_get(json_object_get(r[0], "root"), "fields"),
		                             "totalCount"),
		       *tb = json_object_get(json_object_get(json_object_get(r[1], "root"), "fields"),
		                             "totalCount");
		if (!json_equal(ta, tb))
			fail_msg("%s: totalCount %lld, scoring every match %lld", where,
			         (long long)json_integer_value(ta), (long long)json_integer_value(tb));
		json_t *ha = dbtest_hits(r[0]), *hb = dbtest_hits(r[1]);
		if ((ha || hb) && !json_equal(ha, hb)) {
			char *x = json_dumps(ha, JSON_COMPACT), *y = json_dumps(hb, JSON_COMPACT);
			fail_msg("%s (%s, hits %d offset %d): pruned %.400s\n  every match %.400s", where,
			         prof, hits, offset, x, y);
		}
		json_decref(r[0]);
		json_decref(r[1]);
	}
	strata_close(db);
	apptest_remove(app);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_iterators_agree_with_scan),
		cmocka_unit_test(test_topk_agrees_with_exhaustive),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
