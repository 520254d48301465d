/*
 * test_rank_features.c: Vespa's rank features of query terms, time and
 * iteration (rank/compile_feature.c): foreach over terms, fields and
 * attributes with each condition and operation, term(n), queryTermCount,
 * fieldTermMatch, matchCount, averageFieldLength, num_docs_indexed, now,
 * age and freshness with their rank properties, elementwise(bm25(f)),
 * elementSimilarity, fieldTermMatch(f, n).weight, rank f { element-gap },
 * and the errors of each, with positions.  Documents and query terms come from a fake store whose
 * values the tests compute again by hand.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../rank/rank_eval.h"
#include "apptest.h"

/* ---- the fake store ---------------------------------------------------------- */
#define NDOCS 3
static int64_t fts[NDOCS] = { 1000, 1900, 1990 };
static int32_t fn[NDOCS] = { 1, 7, 9 };

static float fv[NDOCS][2] = { { 0, 0 }, { 3, 4 }, { 1, 0 } };
static const char *const fname[NDOCS] = { "ann", "bo", "ann" };
static double fname_hash[NDOCS];

static const void *fake_attr(void *ud, int field, uint32_t lid)
{
	const char *name = rank_schema_field(ud, field)->name;
	if (strcmp(name, "ts") == 0)
		return &fts[lid];
	if (strcmp(name, "v") == 0)
		return fv[lid];
	if (strcmp(name, "name") == 0) {
		fname_hash[lid] = rank_string_hash(fname[lid], strlen(fname[lid]));
		return &fname_hash[lid];
	}
	return &fn[lid];
}

/* Term values the tests can compute: every argument shows in the value. */
#define NTERMS 3
static double occ(int field, int term, uint32_t lid)
{
	return term < NTERMS ? (double)((term + 1) * (int)(lid + 1) + field) : 0;
}

static double fake_term(void *ud, int feature, int field, int term, uint32_t lid)
{
	(void)ud;
	switch (feature) {
	case RANK_TT_COUNT: return NTERMS;
	case RANK_TT_SIGNIFICANCE: return term < NTERMS ? 0.5 + term / 10.0 : 0;
	case RANK_TT_WEIGHT: return term < NTERMS ? 100 : 0;
	case RANK_TT_CONNECTEDNESS: return term < NTERMS ? 0.1 : 0;
	case RANK_TT_OCCURRENCES: return occ(field, term, lid);
	case RANK_TT_FIRST_POSITION: return term < NTERMS ? term + 10 * field : 1000000;
	case RANK_TT_MATCH_COUNT: return lid + 100 * field;
	case RANK_TT_AVG_LENGTH: return 2.5 + field;
	case RANK_TT_NUM_DOCS: return 42;
	case RANK_TT_DOC_FREQ: return term == 1 || term >= NTERMS ? NAN : 10 + term + field;
	/* elements 0 to 3 but 1 scored, each 0.1 + element + 10 * field + 100 * lid */
	case RANK_TT_ELEM_BM25: return term < 0 ? 4 : term == 1 ? NAN : 0.1 + term + 10 * field + 100.0 * lid;
	case RANK_TT_ELEM_SIMILARITY: return 0.25 + field + lid;
	case RANK_TT_TERM_WEIGHT: return term < NTERMS ? 7 * (term + 1) + field : 0;
	}
	return NAN;
}

#define NEAR(x, y) assert_true(fabs((double)(x) - (double)(y)) < 1e-9 * (1 + fabs((double)(y))))

#define DOC \
	"schema doc {\n" \
	"  document doc {\n" \
	"    field title type string { indexing: index }\n" \
	"    field body type string { indexing: index }\n" \
	"    field ts type long { indexing: attribute }\n" \
	"    field n type int { indexing: attribute }\n" \
	"    field name type string { indexing: attribute }\n" \
	"  }\n"

static struct rank_app *load(const char *sd)
{
	char *dir = apptest_new("strata_rank_features");
	char sub[512];
	snprintf(sub, sizeof sub, "%s/schemas", dir);
	apptest_write(sub, "doc.sd", sd);
	struct rank_app *app = apptest_load(dir);
	apptest_remove(dir);
	return app;
}

static void load_fails(const char *sd, int code, const char *where, const char *what)
{
	char *dir = apptest_new("strata_rank_features");
	char sub[512];
	snprintf(sub, sizeof sub, "%s/schemas", dir);
	apptest_write(sub, "doc.sd", sd);
	apptest_expect_load_error(dir, code, where, what);
}

struct run {
	struct rank_app *app;
	const struct rank_schema *s;
	struct rank_docs docs;
	struct rank_query *q;
	const struct rank_profile *p;
};

static void open_profile(struct run *r, const char *sd, const char *profile)
{
	struct strata_error err = { 0 };
	memset(r, 0, sizeof *r); /* no text callback: text features are 0 */
	r->app = load(sd);
	r->s = rank_app_schema_find(r->app, "doc");
	r->docs.ud = (void *)r->s;
	r->docs.attr = fake_attr;
	r->docs.term = fake_term;
	r->p = rank_profile_find(r->s, profile);
	assert_non_null(r->p);
	assert_int_equal(rank_query_new(r->p, &r->q, &err), 0);
}

static void close_run(struct run *r)
{
	rank_query_free(r->q);
	rank_app_free(r->app);
}

/* The match features of lid, in order, into v (at most n). */
struct feats {
	int n;
	double v[32];
};

static int collect(void *ud, const struct rank_feature *f)
{
	struct feats *fs = ud;
	if (f->sparse) {
		/* a tensor(term{}): each cell, its label then its value */
		assert_int_equal(f->rank, 1);
		assert_int_equal(f->dims[0], -1);
		assert_string_equal(f->dim_names[0], "term");
		for (size_t b = 0; b < f->sparse->nblocks; b++) {
			fs->v[fs->n++] = atof(f->sparse->labels[b]);
			fs->v[fs->n++] = f->sparse->cells[b];
		}
		return 0;
	}
	assert_int_equal(f->rank, 0);
	fs->v[fs->n++] = f->cells ? f->cells[0] : NAN;
	return 0;
}

/* Any feature: counted only. */
static int collect_any(void *ud, const struct rank_feature *f)
{
	(void)f;
	((struct feats *)ud)->n++;
	return 0;
}

static void features(struct run *r, uint32_t lid, struct feats *fs)
{
	struct strata_error err = { 0 };
	double score;
	fs->n = 0;
	assert_int_equal(rank_query_first_phase(r->q, &r->docs, &lid, 1, &score, &err), 0);
	int rc = rank_query_features(r->q, &r->docs, lid, score, RANK_MATCH_FEATURES, collect, fs,
	                             &err);
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	assert_int_equal(rc, 0);
}

/* ---- foreach ------------------------------------------------------------------ */

static void test_foreach(void **state)
{
	(void)state;
	static const char *sd =
		DOC
		"  rank-profile p {\n"
		"    function two() { expression: 1 }\n"
		"    first-phase { expression: foreach(terms, x, fieldTermMatch(body, x).occurrences, true, sum) }\n"
		"    match-features {\n"
		"      foreach(terms, x, fieldTermMatch(body, x).occurrences, true, average)\n"
		"      foreach(terms, x, fieldTermMatch(body, x).occurrences, \">0\", average)\n"
		"      foreach(terms, x, fieldTermMatch(body, x).occurrences, \">3\", count)\n"
		"      foreach(terms, x, fieldTermMatch(body, x).occurrences, \"<4\", max)\n"
		"      foreach(terms, x, term(x).significance, \">0.5\", min)\n"
		"      foreach(terms, x, term(x).significance, \">0\", product)\n"
		"      foreach(terms, x, term(x).significance, \">9\", max)\n"
		"      foreach(terms, x, term(x).significance, \"<0\", min)\n"
		"      foreach(fields, F, matchCount(F), true, sum)\n"
		"      foreach(attributes, A, attribute(A), \">5\", count)\n"
		"      foreach(terms, N, two, true, sum)\n"
		"    }\n"
		"  }\n"
		"  rank-profile q inherits p {\n"
		"    function two() { expression: 2 }\n"
		"  }\n"
		"}\n";
	struct run r;
	open_profile(&r, sd, "q");
	int body = rank_schema_field_index(r.s, "body");
	for (uint32_t lid = 0; lid < NDOCS; lid++) {
		/* by hand: the three terms' occurrences, then 13 terms of 0 */
		double o[NTERMS], sum = 0, pos = 0;
		int npos = 0, big = 0;
		double below4 = -DBL_MAX;
		for (int t = 0; t < NTERMS; t++) {
			o[t] = occ(body, t, lid);
			sum += o[t];
			if (o[t] > 0)
				pos += o[t], npos++;
			big += o[t] > 3;
		}
		below4 = 0; /* the terms past the last are 0, below 4 */
		for (int t = 0; t < NTERMS; t++)
			if (o[t] < 4 && o[t] > below4)
				below4 = o[t];
		struct feats f;
		features(&r, lid, &f);
		assert_int_equal(f.n, 11);
		NEAR(f.v[0], sum / 16);
		NEAR(f.v[1], pos / npos);
		NEAR(f.v[2], big);
		NEAR(f.v[3], below4);
		NEAR(f.v[4], 0.6);               /* 0.6 and 0.7 pass > 0.5 */
		NEAR(f.v[5], 0.5 * 0.6 * 0.7);   /* the 13 zeros do not pass > 0 */
		NEAR(f.v[6], -DBL_MAX);          /* nothing passed: Vespa's start */
		NEAR(f.v[7], DBL_MAX);
		/* fields with a text index: title (0) and body (1) */
		NEAR(f.v[8], (lid + 100 * 0) + (lid + 100 * 1));
		/* a string attribute is its hash, a whole number past 5 */
		NEAR(f.v[9], (fts[lid] > 5) + (fn[lid] > 5) + 1);
		NEAR(f.v[10], 16 * 2);          /* a function the variable does not appear in */
		double score;
		assert_int_equal(rank_query_first_phase(r.q, &r.docs, &lid, 1, &score, NULL), 0);
		NEAR(score, sum);
	}
	close_run(&r);

	/* the errors, at the argument */
	load_fails(DOC "  rank-profile p { first-phase { expression: foreach(terms, x, 1, true) } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:46:", "takes five arguments");
	load_fails(DOC "  rank-profile p { first-phase { expression: foreach(docs, x, 1, true, sum) } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:54:", "terms, fields or attributes");
	load_fails(DOC "  rank-profile p { first-phase { expression: foreach(terms, x, 1, \">a\", sum) } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:67:", "the condition is true");
	load_fails(DOC "  rank-profile p { first-phase { expression: foreach(terms, x, 1, true, mean) } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:73:", "the operation is sum");
	load_fails(DOC "  rank-profile p { first-phase { expression: foreach(terms, 1, 1, true, sum) } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:61:", "the variable must be a name");
	load_fails(DOC "  rank-profile p { first-phase { expression: foreach(terms, x, term(y).weight, true, sum) } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:69:", "a term number");
}

/* ---- elementwise, elementSimilarity, element-gap --------------------------------- */

/* An elementwise tensor's cells in order of their labels: "label=value,". */
struct cells {
	char dim[16];
	char text[512];
	int n;
};

static int collect_cells(void *ud, const struct rank_feature *f)
{
	struct cells *c = &((struct cells *)ud)[((struct cells *)ud)->n++];
	if (!f->sparse) {
		snprintf(c->text, sizeof c->text, "%.17g", f->cells ? f->cells[0] : NAN);
		return 0;
	}
	assert_int_equal(f->rank, 1);
	snprintf(c->dim, sizeof c->dim, "%s", f->dim_names[0]);
	size_t o = 0;
	for (int want = 0; want < 8; want++) /* the labels are 0..7: print in order */
		for (size_t b = 0; b < f->sparse->nblocks; b++)
			if (atoi(f->sparse->labels[b]) == want)
				o += (size_t)snprintf(c->text + o, sizeof c->text - o, "%s=%.17g,",
				                      f->sparse->labels[b], f->sparse->cells[b]);
	return 0;
}

static void test_elements(void **state)
{
	(void)state;
	static const char *sd =
		DOC
		"  rank-profile p {\n"
		"    rank title { element-gap: 2 }\n"
		"    match-features {\n"
		"      elementwise(bm25(body), e, float)\n"
		"      elementwise(bm25(title),x)\n"
		"      elementSimilarity(body)\n"
		"      elementSimilarity(title).default\n"
		"      fieldTermMatch(body, 1).weight\n"
		"    }\n"
		"    rank-features { nativeRank elementSimilarity(title)\n"
		"                    fieldTermMatch(title, 4).weight }\n"
		"  }\n"
		"  rank-profile q inherits p {\n"
		"    rank body {\n"
		"      element-gap: 0\n"
		"    }\n"
		"  }\n"
		"  rank-profile r inherits q { rank title { element-gap: infinity } }\n"
		"}\n";
	struct run r;
	open_profile(&r, sd, "p");
	int title = rank_schema_field_index(r.s, "title"), body = rank_schema_field_index(r.s, "body");
	struct cells c[8] = { 0 };
	struct strata_error err = { 0 };
	double score;
	uint32_t lid = 2;
	assert_int_equal(rank_query_first_phase(r.q, &r.docs, &lid, 1, &score, &err), 0);
	assert_int_equal(rank_query_features(r.q, &r.docs, lid, score, RANK_MATCH_FEATURES,
	                                     collect_cells, c, &err), 0);
	assert_int_equal(c[0].n, 5);
	/* float cells hold the float nearest; element 1 has no cell */
	char want[512];
	snprintf(want, sizeof want, "0=%.17g,2=%.17g,3=%.17g,", (double)(float)(0.1 + 10 * body + 200),
	         (double)(float)(2.1 + 10 * body + 200), (double)(float)(3.1 + 10 * body + 200));
	assert_string_equal(c[0].dim, "e");
	assert_string_equal(c[0].text, want);
	snprintf(want, sizeof want, "0=%.17g,2=%.17g,3=%.17g,", 0.1 + 10 * title + 200,
	         2.1 + 10 * title + 200, 3.1 + 10 * title + 200);
	assert_string_equal(c[1].dim, "x");
	assert_string_equal(c[1].text, want);
	NEAR(atof(c[2].text), 0.25 + body + 2);
	NEAR(atof(c[3].text), 0.25 + title + 2);
	NEAR(atof(c[4].text), 14 + body);
	/* the element gaps, per field, inherited and overridden */
	assert_int_equal(rank_profile_element_gap(r.p, title), 2);
	assert_int_equal(rank_profile_element_gap(r.p, body), -1);
	const struct rank_profile *q = rank_profile_find(r.s, "q"), *rr = rank_profile_find(r.s, "r");
	assert_int_equal(rank_profile_element_gap(q, title), 2);
	assert_int_equal(rank_profile_element_gap(q, body), 0);
	assert_int_equal(rank_profile_element_gap(rr, title), -1);
	assert_int_equal(rank_profile_element_gap(rr, body), 0);
	assert_int_equal(rank_profile_element_gap(NULL, body), -1);
	close_run(&r);

	/* a query without text conditions: no cells */
	open_profile(&r, sd, "p");
	struct rank_docs none = r.docs;
	none.term = NULL;
	memset(c, 0, sizeof c);
	assert_int_equal(rank_query_first_phase(r.q, &none, &lid, 1, &score, &err), 0);
	assert_int_equal(rank_query_features(r.q, &none, lid, score, RANK_MATCH_FEATURES,
	                                     collect_cells, c, &err), 0);
	assert_string_equal(c[0].text, "");
	close_run(&r);

	/* the errors */
	load_fails(DOC "  rank-profile p { first-phase { expression: sum(elementwise(nativeRank(body), x)) } }\n}\n",
	           STRATA_NOT_IMPLEMENTED, "doc.sd:9:62:", "not a feature with elementwise support");
	load_fails(DOC "  rank-profile p { first-phase { expression: sum(elementwise(bm25(ts), x)) } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:67:", "'ts' is not a field with a text index");
	load_fails(DOC "  rank-profile p { first-phase { expression: sum(elementwise(bm25(body), x, half)) } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:77:", "'half' is not a cell type");
	load_fails(DOC "  rank-profile p { first-phase { expression: sum(elementwise(bm25(body))) } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:50:", "elementwise(feature, dimension, cell_type) is expected");
	load_fails(DOC "  rank-profile p { first-phase { expression: elementSimilarity(body).sumWeight } }\n}\n",
	           STRATA_NOT_IMPLEMENTED, "doc.sd:9:46:", "only the default output");
	load_fails(DOC "  rank-profile p { first-phase { expression: elementSimilarity(n) } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:64:", "'n' is not a field with a text index");
	load_fails(DOC "  rank-profile p { rank body { element-gap: -1 } }\n}\n",
	           STRATA_PARSE, "doc.sd:9:45:", "expected a whole number or infinity");
	load_fails(DOC "  rank-profile p { rank body { element-gap: 1.5 } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:45:", "element-gap must be a whole number from 0");
	load_fails(DOC "  rank-profile p { rank body { gap: 1 } }\n}\n",
	           STRATA_PARSE, "doc.sd:9:32:", "expected element-gap or '}'");
	load_fails(DOC "  rank-profile p { rank body { filter-threshold: 0.1 } }\n}\n",
	           STRATA_NOT_IMPLEMENTED, "doc.sd:9:32:", "filter-threshold in 'rank body'");
	load_fails(DOC "  rank-profile p { rank body: filter }\n}\n",
	           STRATA_NOT_IMPLEMENTED, "doc.sd:9:31:", "rank body: filter");
	load_fails(DOC "  rank-profile p { rank body { element-gap: 1  element-gap: 2 } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:48:", "element-gap of 'body' is given twice");
	load_fails(DOC "  rank-profile p { rank nosuch { element-gap: 1 } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:25:", "'nosuch' is no field of the schema");
	load_fails(DOC "  rank-profile p { rank n { element-gap: 1 } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:25:", "'n' is a field without a text index");
	load_fails(DOC "  rank-profile p { rank-features: nosuchfeature(1 }\n}\n",
	           STRATA_PARSE, "doc.sd:9", "");
}

/* ---- term features ------------------------------------------------------------ */

static void test_terms(void **state)
{
	(void)state;
	static const char *sd =
		DOC
		"  rank-profile p {\n"
		"    match-features {\n"
		"      queryTermCount\n"
		"      term(1).significance\n"
		"      term(2).weight\n"
		"      term(0).connectedness\n"
		"      term(0)\n"
		"      term(7).weight\n"
		"      fieldTermMatch(title, 1).occurrences\n"
		"      fieldTermMatch(body, 2).firstPosition\n"
		"      fieldTermMatch(body, 2)\n"
		"      matchCount(body)\n"
		"      averageFieldLength(title)\n"
		"      num_docs_indexed\n"
		"    }\n"
		"  }\n"
		"}\n";
	struct run r;
	open_profile(&r, sd, "p");
	int title = rank_schema_field_index(r.s, "title"), body = rank_schema_field_index(r.s, "body");
	struct feats f;
	features(&r, 2, &f);
	assert_int_equal(f.n, 12);
	NEAR(f.v[0], 3);
	NEAR(f.v[1], 0.6);
	NEAR(f.v[2], 100);
	NEAR(f.v[3], 0.1);
	NEAR(f.v[4], 0.1);          /* term(n) is its connectedness */
	NEAR(f.v[5], 0);            /* past the last term */
	NEAR(f.v[6], occ(title, 1, 2));
	NEAR(f.v[7], 2 + 10 * body);
	NEAR(f.v[8], 2 + 10 * body); /* fieldTermMatch(f, n) is its firstPosition */
	NEAR(f.v[9], 2 + 100 * body);
	NEAR(f.v[10], 2.5 + title);
	NEAR(f.v[11], 42);
	/* without term callback: every term feature is 0 */
	r.docs.term = NULL;
	features(&r, 2, &f);
	for (int i = 0; i < f.n; i++)
		NEAR(f.v[i], 0);
	close_run(&r);

	/* queryTermDocumentFrequency(f): a cell per term searching f (term 1 does
	 * not), as a match feature, through rankingExpression(), and reduced */
	static const char *df_sd =
		DOC
		"  rank-profile p {\n"
		"    function df() { expression: queryTermDocumentFrequency(body) }\n"
		"    first-phase { expression: reduce(df * 2, sum, term) }\n"
		"    match-features: queryTermDocumentFrequency(body) rankingExpression(df) rankingExpression(\"df\")\n"
		"  }\n"
		"}\n";
	open_profile(&r, df_sd, "p");
	features(&r, 0, &f);
	assert_int_equal(f.n, 12);
	for (int k = 0; k < 3; k++) {
		NEAR(f.v[4 * k + 0], 0);
		NEAR(f.v[4 * k + 1], 10 + 0 + body);
		NEAR(f.v[4 * k + 2], 2);
		NEAR(f.v[4 * k + 3], 10 + 2 + body);
	}
	double score;
	uint32_t lid = 0;
	assert_int_equal(rank_query_first_phase(r.q, &r.docs, &lid, 1, &score, NULL), 0);
	NEAR(score, 2 * (10 + body + 12 + body));
	close_run(&r);
	load_fails(DOC "  rank-profile p { first-phase { expression: rankingExpression(nope) } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:64:", "rankingExpression(nope): no function 'nope'");

	load_fails(DOC "  rank-profile p { first-phase { expression: term(0).size } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:46:", "term() has no output 'size'");
	load_fails(DOC "  rank-profile p { first-phase { expression: term(-1) } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:51:", "a term number");
	load_fails(DOC "  rank-profile p { first-phase { expression: fieldTermMatch(n, 0) } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:61:", "'n' is not a field with a text index");
	load_fails(DOC "  rank-profile p { first-phase { expression: matchCount(body, 1) } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:46:", "matchCount(field) takes one field");
	load_fails(DOC "  rank-profile p { first-phase { expression: queryTermCount(1) } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:46:", "queryTermCount takes no arguments");
}

/* ---- now, age, freshness -------------------------------------------------------- */

static void test_freshness(void **state)
{
	(void)state;
	static const char *sd =
		DOC
		"  rank-profile p {\n"
		"    match-features: now age(ts) freshness(ts) freshness(ts).logscale\n"
		"  }\n"
		"  rank-profile tuned inherits p {\n"
		"    rank-properties {\n"
		"      freshness(ts).maxAge: 1000\n"
		"      freshness(ts).halfResponse: 100\n"
		"    }\n"
		"  }\n"
		"  rank-profile child inherits tuned {\n"
		"    rank-properties { freshness(ts).halfResponse: 600 }\n"
		"  }\n"
		"}\n";
	struct run r;
	struct feats f;
	open_profile(&r, sd, "p");
	/* defaults: maxAge 90 days, halfResponse 7 days */
	double m = 90.0 * 86400, h = 7.0 * 86400, s = h * h / (m - 2 * h);
	rank_query_set_now(r.q, 1000 + 86400.0 * 7);
	features(&r, 0, &f);
	NEAR(f.v[0], 1000 + 86400.0 * 7);
	NEAR(f.v[1], 86400.0 * 7);
	NEAR(f.v[2], 1 - 7.0 / 90);
	NEAR(f.v[3], 0.5);
	NEAR(f.v[3], (log(m + s) - log(h + s)) / (log(m + s) - log(s)));
	/* a document newer than now has age 0 */
	rank_query_set_now(r.q, 1500);
	features(&r, 2, &f);
	NEAR(f.v[1], 0);
	NEAR(f.v[2], 1);
	NEAR(f.v[3], 1);
	close_run(&r);

	open_profile(&r, sd, "tuned");
	rank_query_set_now(r.q, 2000);
	static const double age[NDOCS] = { 1000, 100, 10 };
	m = 1000, h = 100, s = h * h / (m - 2 * h);
	for (uint32_t lid = 0; lid < NDOCS; lid++) {
		features(&r, lid, &f);
		NEAR(f.v[1], age[lid]);
		NEAR(f.v[2], 1 - age[lid] / 1000);
		NEAR(f.v[3], (log(m + s) - log(age[lid] + s)) / (log(m + s) - log(s)));
	}
	NEAR(f.v[3], 0.8662433801794819);
	close_run(&r);

	/* halfResponse 600 >= maxAge / 2 is brought to 1000 / 2 - 1, as Vespa does */
	open_profile(&r, sd, "child");
	rank_query_set_now(r.q, 2000);
	features(&r, 2, &f);
	h = 499, s = h * h / (m - 2 * h);
	NEAR(f.v[3], (log(m + s) - log(10 + s)) / (log(m + s) - log(s)));
	close_run(&r);

	load_fails(DOC "  rank-profile p { first-phase { expression: freshness(name) } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:56:", "'name' is not a number attribute");
	load_fails(DOC "  rank-profile p { first-phase { expression: age(ts).old } }\n}\n",
	           STRATA_TYPE, "doc.sd:9:46:", "age() has no output 'old'");
	load_fails(DOC "  rank-profile p { rank-properties { freshness(ts).maxAge: soon } }\n}\n",
	           STRATA_NOT_IMPLEMENTED, "doc.sd:9:60:", "only a number is supported");
	load_fails(DOC "  rank-profile p { rank-properties { fieldMatch(body).maxOccurrences: 3 } }\n}\n",
	           STRATA_NOT_IMPLEMENTED, "doc.sd:9:38:",
	           "rank property 'fieldMatch(body).maxOccurrences' is not supported");
	load_fails(DOC "  rank-profile p { rank-properties {\n freshness(ts).maxAge: 3\n freshness(ts).maxAge: 4 } }\n}\n",
	           STRATA_TYPE, "doc.sd:11:2:", "given twice");
}

/* ---- closeness(label, l) ------------------------------------------------------ */

static void test_close_label(void **state)
{
	(void)state;
	static const char *sd =
		"schema doc {\n"
		"  document doc {\n"
		"    field v type tensor<float>(x[2]) { indexing: attribute }\n"
		"  }\n"
		"  rank-profile p {\n"
		"    inputs { query(q) tensor<float>(x[2]): [0, 0] }\n"
		"    match-features: closeness(label, a) distance(label, a) closeness(label, b)\n"
		"  }\n"
		"}\n";
	struct run r;
	struct strata_error err = { 0 };
	struct feats f;
	open_profile(&r, sd, "p");
	/* no item yet: no label to give */
	assert_int_equal(rank_query_set_nn_label(r.q, "v", "a", &err), STRATA_NOT_FOUND);
	assert_non_null(strstr(err.msg, "no nearestNeighbor item on 'v'"));
	features(&r, 1, &f);
	NEAR(f.v[0], 0);
	assert_true(isinf(f.v[1]));
	assert_int_equal(rank_query_set_nn(r.q, "v", "q", &err), 0);
	assert_int_equal(rank_query_set_nn_label(r.q, "v", "a", &err), 0);
	features(&r, 1, &f);
	NEAR(f.v[0], 1.0 / 6); /* euclidean distance 5 */
	NEAR(f.v[1], 5);
	NEAR(f.v[2], 0);       /* label b names no item */
	char *ex = rank_profile_explain(r.p);
	assert_non_null(strstr(ex, "CLOSE   label b closeness"));
	base_strfree(ex);
	close_run(&r);
}

/* ---- allocation failures ---------------------------------------------------------- */

/* Loading an application with every construct of this file, each allocation
 * made to fail in turn: each failure is reported as such and leaves nothing
 * allocated; then each allocation of evaluating its features. */
static void test_alloc_failures(void **state)
{
	(void)state;
	static const char *sd =
		DOC
		"  rank-profile p {\n"
		"    rank-properties { freshness(ts).maxAge: 100 }\n"
		"    constants {\n"
		"      w tensor(k{}): {x: 2, y: 3}\n"
		"      m tensor(k{}, i[2]): {x: [1, 2]}\n"
		"      v tensor(k{}, j{}): {{k: a, j: b}: 1}\n"
		"    }\n"
		"    inputs { query(where) string: \"oslo\" }\n"
		"    function df() { expression: queryTermDocumentFrequency(body) }\n"
		"    first-phase { expression: foreach(terms, t, term(t).weight, \">0\", sum) + sum(constant(w)) }\n"
		"    match-features: freshness(ts).logscale df constant(m) constant(v) attributeMatch(name) "
		"fieldMatch(body) nativeRank nativeProximity(title) closeness(label, a) now\n"
		"  }\n"
		"  rank-profile q inherits p { }\n"
		"}\n";
	struct base_alloc_stats before, after;
	base_alloc_stats(&before);
	char *dir = apptest_new("strata_rank_features");
	char sub[512];
	snprintf(sub, sizeof sub, "%s/schemas", dir);
	apptest_write(sub, "doc.sd", sd);
	assert_true(apptest_load_failures(dir) > 50);
	struct rank_app *app = apptest_load(dir);
	apptest_remove(dir);
	const struct rank_schema *s = rank_app_schema_find(app, "doc");
	struct strata_error err = { 0 };
	assert_int_equal(rank_app_set_query_pool(app, 0, &err), 0);
	struct rank_docs docs = { .ud = (void *)s, .attr = fake_attr, .term = fake_term };
	long failures = 0;
	for (long k = 1; k < 100000; k++) {
		struct rank_query *q = NULL;
		struct feats f;
		uint32_t lid = 1;
		double score;
		base_alloc_fail_after(k);
		int rc = rank_query_new(rank_profile_find(s, "q"), &q, &err);
		if (!rc)
			rc = rank_query_first_phase(q, &docs, &lid, 1, &score, &err);
		f.n = 0;
		if (!rc)
			rc = rank_query_features(q, &docs, lid, score, RANK_MATCH_FEATURES, collect_any, &f,
			                         &err);
		base_alloc_fail_after(0);
		rank_query_free(q);
		if (rc == 0)
			break;
		assert_int_equal(rc, STRATA_NOMEM);
		failures++;
	}
	assert_true(failures > 0);
	rank_app_free(app);
	base_alloc_stats(&after);
	assert_int_equal(after.live_bytes, before.live_bytes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_foreach),
		cmocka_unit_test(test_terms),
		cmocka_unit_test(test_freshness),
		cmocka_unit_test(test_close_label),
		cmocka_unit_test(test_elements),
		cmocka_unit_test(test_alloc_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
