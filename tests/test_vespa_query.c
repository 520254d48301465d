/*
 * test_vespa_query.c: searches that behave as Vespa's: the implicit default
 * profile ranks by nativeRank; userQuery() and userInput() read their text
 * by model.type (all, any, weakAnd, phrase, web, tokenize) or their grammar
 * annotation, with +, -, "phrases", field: and prefix* in the simple
 * syntax; the annotations of userInput() (defaultIndex, grammar,
 * allowEmpty, the [{...}] form, @names with hyphens) and of words (prefix,
 * stem, ranked, filter, weight), on a word or inherited from the condition
 * around it; and the refusals of annotations where they do not belong.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "dbtest.h"

static const char *sd =
	"schema doc {\n"
	"  document doc {\n"
	"    field title type string { indexing: index | summary\n index: enable-bm25 }\n"
	"    field body type string { indexing: index | summary }\n"
	"    field tag type string { indexing: attribute | summary }\n"
	"    field e type tensor<float>(x[2]) { indexing: attribute }\n"
	"    field f type tensor<float>(x[2]) { indexing: attribute }\n"
	"  }\n"
	"  fieldset default { fields: title, body }\n"
	"  rank-profile native { first-phase { expression: nativeRank } }\n"
	"  rank-profile plain { }\n"
	"  rank-profile bm { first-phase { expression: bm25(title) }\n"
	"    summary-features { term(0).weight } }\n"
	"  rank-profile nn { inputs { query(q) tensor<float>(x[2]) }\n"
	"    first-phase { expression: closeness(label, a) + 10 * closeness(label, b) } }\n"
	"}\n";

static const char *docs[] = {
	"{\"put\": \"id:t:doc::1\", \"fields\": {\"title\": \"running shoes\", \"body\": \"fast red\", "
	"\"tag\": \"sports\", \"e\": [0, 0], \"f\": [10, 10]}}",
	"{\"put\": \"id:t:doc::2\", \"fields\": {\"title\": \"red apple\", \"body\": \"fruit\", "
	"\"tag\": \"food\", \"e\": [5, 5], \"f\": [0, 0]}}",
	"{\"put\": \"id:t:doc::3\", \"fields\": {\"title\": \"green apple pie\", \"body\": "
	"\"dessert red\", \"tag\": \"food\", \"e\": [1, 1], \"f\": [9, 9]}}",
	"{\"put\": \"id:t:doc::4\", \"fields\": {\"title\": \"runner guide\", \"body\": \"how to run\", "
	"\"tag\": \"sportswear\", \"e\": [9, 9], \"f\": [5, 5]}}",
};

struct fixture {
	char *app;
	struct strata *db;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	f->app = dbtest_open("vq", "doc.sd", sd, &f->db);
	for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++)
		dbtest_feed_json(f->db, docs[i]);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	strata_close(f->db);
	apptest_remove(f->app);
	free(f);
	return 0;
}

/* The keys of the hits of request req, increasing, as "1 2 3". */
static void keys(struct strata *db, const char *req, char *out, size_t size)
{
	json_t *r = dbtest_query(db, req);
	json_t *hits = dbtest_hits(r);
	int k[16], n = 0;
	for (size_t i = 0; i < json_array_size(hits) && n < 16; i++)
		k[n++] = dbtest_hit_key(json_array_get(hits, i));
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && k[j - 1] > k[j]; j--) {
			int t = k[j];
			k[j] = k[j - 1];
			k[j - 1] = t;
		}
	size_t len = 0;
	out[0] = 0;
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(out + len, size - len, "%s%d", i ? " " : "", k[i]);
	json_decref(r);
}

static void expect(struct strata *db, const char *req, const char *want)
{
	char got[128];
	keys(db, req, got, sizeof got);
	if (strcmp(got, want))
		fail_msg("%s: hits '%s', expected '%s'", req, got, want);
}

/* A profile without a first phase, and the implicit default, rank by
 * nativeRank, as Vespa's do. */
static void test_default_profile(void **state)
{
	struct fixture *f = *state;
	const char *q = "{\"yql\": \"select * from doc where title contains 'apple'\"%s}";
	char a[256], b[256], c[256];
	snprintf(a, sizeof a, q, "");
	snprintf(b, sizeof b, q, ", \"ranking\": \"native\"");
	snprintf(c, sizeof c, q, ", \"ranking\": \"plain\"");
	json_t *ra = dbtest_query(f->db, a), *rb = dbtest_query(f->db, b),
	       *rc = dbtest_query(f->db, c);
	json_t *ha = dbtest_hits(ra), *hb = dbtest_hits(rb), *hc = dbtest_hits(rc);
	assert_int_equal(json_array_size(ha), 2);
	for (size_t i = 0; i < 2; i++) {
		double x = json_number_value(json_object_get(json_array_get(ha, i), "relevance"));
		double y = json_number_value(json_object_get(json_array_get(hb, i), "relevance"));
		double z = json_number_value(json_object_get(json_array_get(hc, i), "relevance"));
		assert_true(x > 0);
		assert_true(x == y && x == z);
	}
	/* the shorter title matches better: 2 before 3 */
	assert_int_equal(dbtest_hit_key(json_array_get(ha, 0)), 2);
	json_decref(ra);
	json_decref(rb);
	json_decref(rc);
}

static void test_query_types(void **state)
{
	struct fixture *f = *state;
	static const struct {
		const char *type, *query, *want;
	} cases[] = {
		{"all", "red apple", "2 3"},
		{"any", "red apple", "1 2 3"},
		{NULL, "red apple", "1 2 3"}, /* weakAnd, Vespa's default */
		{"weakAnd", "red apple", "1 2 3"},
		{"phrase", "red apple", "2"},
		{"tokenize", "red, apple!", "1 2 3"},
		{"all", "\\\"red apple\\\"", "2"},
		{"any", "+apple red", "2 3"},
		{"all", "apple -pie", "2"},
		{"any", "red -title:apple", "1"},
		{"all", "title:red", "2"},
		{"web", "pie OR fruit", "2 3"},
		{"all", "app*", "2 3"},
		{"all", "run* shoes", "1"},
		{"any", "", ""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char req[256];
		if (cases[i].type)
			snprintf(req, sizeof req, "{\"query\": \"%s\", \"type\": \"%s\"}", cases[i].query,
			         cases[i].type);
		else
			snprintf(req, sizeof req, "{\"query\": \"%s\"}", cases[i].query);
		expect(f->db, req, cases[i].want);
	}
	/* model.type's parts, nested as a POST may give them */
	expect(f->db, "{\"query\": \"red apple\", \"model\": {\"type\": {\"composite\": \"or\"}}}",
	       "1 2 3");
	expect(f->db, "{\"query\": \"red apple\", \"model\": {\"type\": {\"composite\": \"phrase\"}}}",
	       "2");
	/* userQuery()'s field: default-index */
	expect(f->db, "{\"query\": \"red\", \"default-index\": \"body\", \"type\": \"all\"}", "1 3");
}

static void test_user_input(void **state)
{
	struct fixture *f = *state;
	/* weakAnd by default, whatever the request's model.type */
	expect(f->db, "{\"yql\": \"select * from doc where userInput(@user-query)\", "
	       "\"user-query\": \"red apple\", \"type\": \"all\"}", "1 2 3");
	expect(f->db, "{\"yql\": \"select * from doc where {grammar: 'all'}userInput(@q)\", "
	       "\"q\": \"red apple\"}", "2 3");
	expect(f->db, "{\"yql\": \"select * from doc where [{\\\"defaultIndex\\\": \\\"body\\\", "
	       "\\\"grammar\\\": \\\"all\\\"}]userInput(@q)\", \"q\": \"fast red\"}", "1");
	expect(f->db, "{\"yql\": \"select * from doc where ({defaultIndex: 'title', grammar: 'raw'}"
	       "userInput(@q))\", \"q\": \"red apple\"}", "2");
	expect(f->db, "{\"yql\": \"select * from doc where {targetHits: 10}userInput('apple')\"}",
	       "2 3");
	expect(f->db, "{\"yql\": \"select * from doc where {allowEmpty: true}userInput(@q)\", "
	       "\"q\": \"\"}", "");
	dbtest_query_fails(f->db, "{\"yql\": \"select * from doc where userInput(@q)\", \"q\": \" \"}",
	                   STRATA_INVALID_ARGUMENT, "has no words to search for");
	dbtest_query_fails(f->db, "{\"yql\": \"select * from doc where userInput(@q)\"}",
	                   STRATA_INVALID_ARGUMENT, "the request has no parameter 'q'");
	dbtest_query_fails(f->db, "{\"yql\": \"select * from doc where {grammar: 'lisp'}"
	                   "userInput(@q)\", \"q\": \"a\"}", STRATA_PARSE,
	                   "grammar 'lisp' is not one of raw");
}

static void test_word_annotations(void **state)
{
	struct fixture *f = *state;
	const char *y = "{\"yql\": \"select * from doc where %s\"%s}";
	static const struct {
		const char *where, *want;
	} cases[] = {
		{"title contains ({prefix: true}'app')", "2 3"},
		{"title contains {prefix: true}'gree'", "3"},
		{"tag contains ({prefix: true}'sport')", "1 4"},
		{"tag contains 'sport'", ""},
		{"title contains 'running'", "1"},          /* stemmed: run */
		{"title contains ({stem: false}'running')", ""}, /* as written: not indexed */
		{"({stem: false}(title contains 'running' or title contains 'pie'))", "3"},
		{"({stem: false}(title contains ({stem: true}'running')))", "1"},
		{"title contains ({filter: true}'apple')", "2 3"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char req[512];
		snprintf(req, sizeof req, y, cases[i].where, "");
		expect(f->db, req, cases[i].want);
	}
	/* ranked: false and filter: true match but feed no text rank feature */
	json_t *r = dbtest_query(f->db, "{\"yql\": \"select * from doc where title contains "
	                                 "({ranked: false}'apple')\", \"ranking\": \"bm\"}");
	json_t *hits = dbtest_hits(r);
	assert_int_equal(json_array_size(hits), 2);
	for (size_t i = 0; i < 2; i++)
		assert_true(json_number_value(json_object_get(json_array_get(hits, i), "relevance")) == 0);
	json_decref(r);
	r = dbtest_query(f->db, "{\"yql\": \"select * from doc where title contains 'apple'\", "
	                        "\"ranking\": \"bm\"}");
	assert_true(json_number_value(json_object_get(json_array_get(dbtest_hits(r), 0),
	                                              "relevance")) > 0);
	json_decref(r);
	/* weight: term(0).weight */
	r = dbtest_query(f->db, "{\"yql\": \"select * from doc where title contains "
	                        "({weight: 250}'apple')\", \"ranking\": \"bm\"}");
	json_t *sf = json_object_get(json_object_get(json_array_get(dbtest_hits(r), 0), "fields"),
	                             "summaryfeatures");
	assert_true(json_number_value(json_object_get(sf, "term(0).weight")) == 250);
	json_decref(r);
	r = dbtest_query(f->db, "{\"yql\": \"select * from doc where title contains 'apple'\", "
	                        "\"ranking\": \"bm\"}");
	sf = json_object_get(json_object_get(json_array_get(dbtest_hits(r), 0), "fields"),
	                     "summaryfeatures");
	assert_true(json_number_value(json_object_get(sf, "term(0).weight")) == 100);
	json_decref(r);
}

static void test_annotation_errors(void **state)
{
	struct fixture *f = *state;
	static const struct {
		const char *where, *says;
		int code;
	} bad[] = {
		{"{defaultIndex: 'title'}weakAnd(title contains 'a')",
		 "yql:1:26: this annotation is for userInput(), not 'weakAnd'", STRATA_PARSE},
		{"title contains ({targetHits: 3}'a')", "a word takes only prefix", STRATA_PARSE},
		{"title contains ({grammar: 'all'}'a')", "a word takes only prefix", STRATA_PARSE},
		{"{label: 'x'}userInput('a')", "userInput takes no such annotation", STRATA_PARSE},
		{"{prefix: true}range(tag, 1, 2)", "this annotation is for words", STRATA_PARSE},
		{"title contains ({colour: 'red'}'a')", "unknown annotation 'colour'", STRATA_PARSE},
		{"title contains ({prefix: 1}'a')", "expected true or false", STRATA_PARSE},
		{"title contains ({weight: -2}'a')", "weight must be a whole number", STRATA_PARSE},
		{"{language: 'de'}userInput('a')", "language 'de' is not supported", STRATA_PARSE},
		{"({targetHits: 3}(title contains 'a'))", "only the words' annotations", STRATA_PARSE},
		{"[{grammar: 'all'}userInput('a')", "expected ']'", STRATA_PARSE},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char req[512];
		snprintf(req, sizeof req, "{\"yql\": \"select * from doc where %s\"}", bad[i].where);
		dbtest_query_fails(f->db, req, bad[i].code, bad[i].says);
	}
}

/* Several nearestNeighbor items, one per field, each its own set and label. */
static void test_nearest_neighbors(void **state)
{
	struct fixture *f = *state;
	const char *req = "{\"yql\": \"select * from doc where ({targetHits: %d, label: 'a'}"
	                  "nearestNeighbor(e, q)) or ({targetHits: %d, label: 'b'}"
	                  "nearestNeighbor(f, q))\", \"ranking\": \"nn\", \"input.query(q)\": [0, 0]}";
	char text[512];
	snprintf(text, sizeof text, req, 1, 1);
	expect(f->db, text, "1 2");
	snprintf(text, sizeof text, req, 2, 1);
	expect(f->db, text, "1 2 3");
	snprintf(text, sizeof text, req, 2, 2);
	expect(f->db, text, "1 2 3 4");
	/* b's closeness weighs ten times a's: its nearest first */
	snprintf(text, sizeof text, req, 1, 1);
	json_t *r = dbtest_query(f->db, text);
	assert_int_equal(dbtest_hit_key(json_array_get(dbtest_hits(r), 0)), 2);
	assert_int_equal(dbtest_hit_key(json_array_get(dbtest_hits(r), 1)), 1);
	json_decref(r);
	dbtest_query_fails(f->db, "{\"yql\": \"select * from doc where ({targetHits: 1}"
	                   "nearestNeighbor(e, q)) or ({targetHits: 2}nearestNeighbor(e, q))\", "
	                   "\"ranking\": \"nn\", \"input.query(q)\": [0, 0]}", STRATA_NOT_IMPLEMENTED,
	                   "a second nearestNeighbor on 'e'");
}

/* The keys of the hits of request req in their order, as "1 2 4", and
 * totalCount. */
static void ordered(struct strata *db, const char *req, char *out, size_t size, long *total)
{
	json_t *r = dbtest_query(db, req);
	json_t *hits = dbtest_hits(r);
	size_t len = 0;
	out[0] = 0;
	for (size_t i = 0; i < json_array_size(hits); i++)
		len += (size_t)snprintf(out + len, size - len, "%s%d", i ? " " : "",
		                        dbtest_hit_key(json_array_get(hits, i)));
	*total = (long)json_integer_value(json_object_get(
		json_object_get(json_object_get(r, "root"), "fields"), "totalCount"));
	json_decref(r);
}

/* collapsefield, as Vespa's: a hit whose value collapsesize better hits
 * showed is left out; the first of a value always shows; the fields in
 * turn; totalCount still counts every match. */
static void test_collapse(void **state)
{
	struct fixture *f = *state;
	static const struct { const char *req, *want; } cases[] = {
		{ "\"collapsefield\": \"tag\"", "1 2 4" },
		{ "\"collapsefield\": \"tag\", \"collapsesize\": 2", "1 2 3 4" },
		{ "\"collapsefield\": \"tag\", \"collapsesize\": 0", "1 2 4" },
		{ "\"collapsefield\": \"tag\", \"collapsesize.tag\": \"2\", \"collapsesize\": 1", "1 2 3 4" },
		{ "\"collapsefield\": \"tag\", \"hits\": 1, \"offset\": 2", "4" },
		{ "\"collapsefield\": \" title , tag\"", "1 2 4" },
		{ "\"collapse\": {\"summary\": \"x\"}, \"collapsefield\": \"tag\"", NULL },
	};
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		char req[512], got[64];
		long total;
		snprintf(req, sizeof req, "{\"yql\": \"select * from doc where true\", %s}", cases[k].req);
		if (!cases[k].want) {
			dbtest_query_fails(f->db, req, STRATA_NOT_IMPLEMENTED,
			                   "request parameter 'collapse.summary' is not supported");
			continue;
		}
		ordered(f->db, req, got, sizeof got, &total);
		if (strcmp(got, cases[k].want) || total != 4)
			fail_msg("%s: hits '%s' of %ld, expected '%s' of 4", req, got, total, cases[k].want);
	}
	/* a search that keeps only the page's best hits without collapsing keeps
	 * every match here: 1 (running), 2 and 3 (apple, both food) */
	char got[64];
	long total;
	ordered(f->db, "{\"yql\": \"select * from doc where title contains \\\"apple\\\" or "
	               "title contains \\\"running\\\"\", \"ranking\": \"bm\", \"hits\": 2, "
	               "\"collapsefield\": \"tag\"}", got, sizeof got, &total);
	assert_string_equal(got, "1 2");
	assert_int_equal(total, 3);
	dbtest_query_fails(f->db, "{\"yql\": \"select * from doc where true\", \"collapsefield\": \"e\"}",
	                   STRATA_INVALID_ARGUMENT,
	                   "collapsefield: 'e' of 'doc' is a tensor; Strata collapses on single strings "
	                   "and numbers");
	dbtest_query_fails(f->db, "{\"yql\": \"select * from doc where true\", \"collapsefield\": \"no\"}",
	                   STRATA_INVALID_ARGUMENT,
	                   "collapsefield: no field 'no' in the document types searched");
	dbtest_query_fails(f->db, "{\"yql\": \"select * from doc where true\", \"collapsefield\": "
	                          "\"tag,,title\"}", STRATA_INVALID_ARGUMENT,
	                   "collapsefield: expected field names separated by commas, got 'tag,,title'");
	dbtest_query_fails(f->db, "{\"yql\": \"select * from doc where true\", \"collapsefield\": "
	                          "\"tag\", \"collapsesize.tag\": -1}", STRATA_INVALID_ARGUMENT,
	                   "collapsesize.tag: expected an integer from 0 to 1000000");
	dbtest_query_fails(f->db, "{\"yql\": \"select * from doc where true\", \"collapsesize\": \"x\"}",
	                   STRATA_INVALID_ARGUMENT, "collapsesize");
}

/* The relevance of the first hit of req. */
static double first_relevance(struct strata *db, const char *req)
{
	json_t *r = dbtest_query(db, req);
	double v = json_real_value(json_object_get(json_array_get(dbtest_hits(r), 0), "relevance"));
	json_decref(r);
	return v;
}

/* model.filter, as Vespa's: +words and phrases filter userQuery()'s
 * matches without ranking them, -words exclude, other words only rank. */
static void test_model_filter(void **state)
{
	struct fixture *f = *state;
	expect(f->db, "{\"query\": \"apple\", \"filter\": \"-pie\"}", "2");
	expect(f->db, "{\"query\": \"apple\", \"filter\": \"+title:red\"}", "2");
	expect(f->db, "{\"query\": \"apple\", \"model\": {\"filter\": \"\\\"apple pie\\\"\"}}", "3");
	expect(f->db, "{\"query\": \"apple\", \"filter\": \"fruit\"}", "2 3");
	/* a filter term does not move the score; a ranking one does */
	double plain = first_relevance(f->db, "{\"query\": \"apple\", \"ranking\": \"native\"}");
	double filtered = first_relevance(f->db, "{\"query\": \"apple\", \"ranking\": \"native\", "
	                                         "\"filter\": \"+tag:food\"}");
	assert_true(plain > 0 && plain == filtered);
	/* pie beside apple in doc 3's title: a filter word adds no proximity */
	assert_true(first_relevance(f->db, "{\"query\": \"apple\", \"ranking\": \"native\", "
	                                   "\"filter\": \"+pie\"}") == plain);
	json_t *r = dbtest_query(f->db, "{\"query\": \"apple\", \"ranking\": \"native\", "
	                                "\"filter\": \"pie\"}");
	assert_int_equal(dbtest_hit_key(json_array_get(dbtest_hits(r), 0)), 3); /* pie ranks it up */
	json_decref(r);
	dbtest_query_fails(f->db, "{\"yql\": \"select * from doc where true\", \"filter\": \"+a\"}",
	                   STRATA_INVALID_ARGUMENT,
	                   "model.filter: it filters userQuery()'s matches, and the YQL has no "
	                   "userQuery()");
	dbtest_query_fails(f->db, "{\"yql\": \"select * from doc where userQuery()\", \"filter\": "
	                          "\"+a\"}", STRATA_INVALID_ARGUMENT,
	                   "the request has no model.queryString (query) to match");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_profile),
		cmocka_unit_test(test_query_types),
		cmocka_unit_test(test_user_input),
		cmocka_unit_test(test_word_annotations),
		cmocka_unit_test(test_annotation_errors),
		cmocka_unit_test(test_nearest_neighbors),
		cmocka_unit_test(test_collapse),
		cmocka_unit_test(test_model_filter),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
