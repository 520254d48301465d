/*
 * test_grouping.c: Vespa's grouping language end to end on a small
 * application: expressions in group() and in aggregators, stddev,
 * avg(relevance()), precision, hits per group (summary()), continuations,
 * the "select" request parameter, and the parts refused by name.  The
 * expected values are worked out by hand from the six documents below;
 * relevance is the price.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <math.h>

#include <cmocka.h>

#include "../engine/grouping.h"

static const char *sd =
	"schema item {\n"
	"    document item {\n"
	"        field name type string {\n"
	"            indexing: summary | attribute\n"
	"        }\n"
	"        field price type int {\n"
	"            indexing: summary | attribute\n"
	"        }\n"
	"        field w type double {\n"
	"            indexing: summary | attribute\n"
	"        }\n"
	"        field t type long {\n"
	"            indexing: summary | attribute\n"
	"        }\n"
	"        field tags type array<string> {\n"
	"            indexing: summary | attribute\n"
	"        }\n"
	"        field m type map<string, string> {\n"
	"            indexing: summary\n"
	"            struct-field key { indexing: attribute }\n"
	"            struct-field value { indexing: attribute }\n"
	"        }\n"
	"    }\n"
	"    document-summary short {\n"
	"        summary name { }\n"
	"    }\n"
	"    rank-profile default {\n"
	"        first-phase {\n"
	"            expression: attribute(price)\n"
	"        }\n"
	"    }\n"
	"}\n";

/* key k (1..6): name, price 10k, w, t (seconds, UTC): 1970-01-01 Thu,
 * 1970-02-01 Sun, 2010-01-01 Fri 00:00:00 and 01:01:01, 2023-11-14 Tue
 * 22:13:20 twice. */
#define NDOC 6
static const char *names[NDOC] = { "lamp", "desk", "lamp", "chair", "sofa", "rug" };
static const double ws[NDOC] = { 0.5, 3.0, 1.0, 2.0, 0.25, 1.5 };
static const long ts[NDOC] = { 0, 2678400, 1262304000, 1262307661, 1700000000, 1700000000 };

struct fixture {
	char dir[64];
	char app[128];
	struct strata *db;
};

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof *fx);
	snprintf(fx->dir, sizeof fx->dir, "/tmp/strata-grouping.XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	char path[256];
	snprintf(fx->app, sizeof fx->app, "%s/app", fx->dir);
	mkdir(fx->app, 0777);
	snprintf(path, sizeof path, "%s/schemas", fx->app);
	mkdir(path, 0777);
	snprintf(path, sizeof path, "%s/schemas/item.sd", fx->app);
	write_file(path, sd);
	struct strata_error err = { 0 };
	if (strata_open(fx->app, NULL, &fx->db, &err) != 0) {
		fprintf(stderr, "open: %s\n", err.msg);
		return -1;
	}
	for (int i = 0; i < NDOC; i++) {
		char op[400];
		/* tags: "all" and "odd" or "even"; m: colour c0..c2, and size s on the first 3 */
		snprintf(op, sizeof op, "{\"put\": \"id:test:item::%d\", \"fields\": {\"name\": \"%s\", "
		         "\"price\": %d, \"w\": %g, \"t\": %ld, \"tags\": [\"all\", \"%s\"], "
		         "\"m\": {\"colour\": \"c%d\"%s}}}", i + 1, names[i], 10 * (i + 1), ws[i], ts[i],
		         i % 2 ? "even" : "odd", i % 3, i < 3 ? ", \"size\": \"s\"" : "");
		if (strata_feed_json(fx->db, op, &err) != 0) {
			fprintf(stderr, "feed: %s\n", err.msg);
			return -1;
		}
	}
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	strata_close(fx->db);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", fx->dir);
	free(fx);
	return 0;
}

/* The result of request req (JSON), asserting success. */
static json_t *query(struct fixture *fx, const char *req)
{
	char *out = NULL;
	struct strata_error err = { 0 };
	int rc = strata_query_json(fx->db, req, &out, &err);
	if (rc)
		fail_msg("query %s: %s", req, err.msg);
	json_t *j = json_loads(out, 0, NULL);
	assert_non_null(j);
	strata_free(out);
	return j;
}

/* The grouping root of "select * from sources * where true limit 0 | G". */
static json_t *grouping(struct fixture *fx, const char *g, json_t **r)
{
	char req[1024];
	snprintf(req, sizeof req, "{\"yql\": \"select * from sources * where true limit 0 | %s\"}", g);
	*r = query(fx, req);
	return json_array_get(json_object_get(json_object_get(*r, "root"), "children"), 0);
}

/* "id=field,..." of the groups of the first grouplist under root: each
 * group's id and its field (an integer or a real), or its count(). */
static void groups(json_t *root, const char *field, char *buf, size_t n)
{
	json_t *list = json_array_get(json_object_get(root, "children"), 0), *gr;
	size_t i, at = 0;
	buf[0] = 0;
	json_array_foreach(json_object_get(list, "children"), i, gr) {
		json_t *v = json_object_get(json_object_get(gr, "fields"), field);
		char num[40];
		if (json_is_integer(v))
			snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
		else if (v)
			snprintf(num, sizeof num, "%g", json_real_value(v));
		else
			snprintf(num, sizeof num, "-");
		at += (size_t)snprintf(buf + at, n - at, "%s%s=%s", i ? "," : "",
		                       json_string_value(json_object_get(gr, "id")), num);
	}
}

static void expect_groups(struct fixture *fx, const char *g, const char *field, const char *want)
{
	json_t *r, *root = grouping(fx, g, &r);
	char got[1024];
	groups(root, field, got, sizeof got);
	if (strcmp(got, want))
		fail_msg("%s:\n got  %s\n want %s", g, got, want);
	json_decref(r);
}

static void expect_error(struct fixture *fx, const char *req, int code, const char *msg)
{
	char *out = NULL;
	struct strata_error err = { 0 };
	int rc = strata_query_json(fx->db, req, &out, &err);
	if (rc != code || strcmp(err.msg, msg))
		fail_msg("%s: got %d '%s', want %d '%s'", req, rc, err.msg, code, msg);
	assert_null(out);
}

static void expect_gerror(struct fixture *fx, const char *g, int code, const char *msg)
{
	char req[1024];
	snprintf(req, sizeof req, "{\"yql\": \"select * from sources * where true | %s\"}", g);
	expect_error(fx, req, code, msg);
}

static void test_expressions(void **state)
{
	struct fixture *fx = *state;
	/* price / 20 on longs divides as integers: 0 {10}, 1 {20, 30}, 2 {40, 50}, 3 {60};
	 * groups by their best relevance (price) */
	expect_groups(fx, "all(group(price / 20) each(output(sum(price * 2))))",
	              "sum(mul(price, 2))",
	              "group:long:3=120,group:long:2=180,group:long:1=100,group:long:0=20");
	json_t *r, *root = grouping(fx, "all(group(price / 20) each(output(count())))", &r);
	json_t *list = json_array_get(json_object_get(root, "children"), 0);
	assert_string_equal(json_string_value(json_object_get(list, "id")),
	                    "grouplist:div(price, 20)");
	assert_string_equal(json_string_value(json_object_get(list, "label")), "div(price, 20)");
	json_decref(r);
	/* mod and the function forms: price % 3 = 1 2 0 1 2 0 */
	expect_groups(fx, "all(group(mod(price, 3)) each(output(count())))", "count()",
	              "group:long:0=2,group:long:2=2,group:long:1=2");
	expect_groups(fx, "all(group(sub(price, add(5, 5)) - neg(10)) max(2) each(output(count())))",
	              "count()", "group:long:60=1,group:long:50=1");
	/* doubles: w * 2 = 1 6 2 4 0.5 3; div on a double divides exactly */
	expect_groups(fx, "all(group(div(price, 4.0)) max(2) each(output(count())))", "count()",
	              "group:double:15.0=1,group:double:12.5=1");
	/* strings: strcat, strlen, tostring, tolong, todouble */
	expect_groups(fx, "all(group(strcat(name, '-', tostring(price / 30))) max(3) "
	                  "each(output(count())))", "count()",
	              "group:string:rug-2=1,group:string:sofa-1=1,group:string:chair-1=1");
	expect_groups(fx, "all(group(strlen(name)) each(output(sum(price))))", "sum(price)",
	              "group:long:3=60,group:long:4=110,group:long:5=40");
	expect_groups(fx, "all(group(tolong(w)) each(output(count())))", "count()",
	              "group:long:1=2,group:long:0=2,group:long:2=1,group:long:3=1");
	expect_groups(fx, "all(group(todouble(price / 30)) each(output(count())))", "count()",
	              "group:double:2.0=1,group:double:1.0=3,group:double:0.0=2");
	/* math: floor(sqrt(price)) = 3 4 5 6 7 7; pow, hypot, ceil, log10 */
	expect_groups(fx, "all(group(math.floor(math.sqrt(price))) max(2) each(output(count())))",
	              "count()", "group:double:7.0=2,group:double:6.0=1");
	root = grouping(fx, "all(output(max(math.pow(w, 2)), min(math.log10(price)), "
	                    "sum(math.ceil(w)), max(math.hypot(3, 4)), avg(math.exp(0))))", &r);
	json_t *f = json_object_get(root, "fields");
	assert_true(json_real_value(json_object_get(f, "max(math.pow(w, 2))")) == 9.0);
	assert_true(json_real_value(json_object_get(f, "min(math.log10(price))")) == 1.0);
	assert_true(json_real_value(json_object_get(f, "sum(math.ceil(w))")) == 10.0); /* 1 3 1 2 1 2 */
	assert_true(json_real_value(json_object_get(f, "max(math.hypot(3, 4))")) == 5.0);
	assert_true(json_real_value(json_object_get(f, "avg(math.exp(0))")) == 1.0);
	json_decref(r);
	/* time, in UTC */
	expect_groups(fx, "all(group(time.year(t)) each(output(count())))", "count()",
	              "group:long:2023=2,group:long:2010=2,group:long:1970=2");
	expect_groups(fx, "all(group(time.dayofweek(t)) each(output(sum(price))))", "sum(price)",
	              "group:long:1=110,group:long:4=70,group:long:6=20,group:long:3=10");
	expect_groups(fx, "all(group(time.date(t)) each(output(count())))", "count()",
	              "group:string:2023-11-14=2,group:string:2010-01-01=2,"
	              "group:string:1970-02-01=1,group:string:1970-01-01=1");
	root = grouping(fx, "all(output(max(time.hourofday(t)), sum(time.minuteofhour(t)), "
	                    "sum(time.secondofminute(t)), sum(time.monthofyear(t)), "
	                    "sum(time.dayofmonth(t)), sum(time.dayofyear(t))))", &r);
	f = json_object_get(root, "fields");
	assert_int_equal(json_integer_value(json_object_get(f, "max(time.hourofday(t))")), 22);
	assert_int_equal(json_integer_value(json_object_get(f, "sum(time.minuteofhour(t))")), 27);
	assert_int_equal(json_integer_value(json_object_get(f, "sum(time.secondofminute(t))")), 41);
	assert_int_equal(json_integer_value(json_object_get(f, "sum(time.monthofyear(t))")), 27);
	assert_int_equal(json_integer_value(json_object_get(f, "sum(time.dayofmonth(t))")), 32);
	assert_int_equal(json_integer_value(json_object_get(f, "sum(time.dayofyear(t))")), 665);
	json_decref(r);
	/* fixedwidth: buckets [0, 25), [25, 50), [50, 75) */
	root = grouping(fx, "all(group(fixedwidth(price, 25)) each(output(count())))", &r);
	list = json_array_get(json_object_get(root, "children"), 0);
	json_t *b = json_array_get(json_object_get(list, "children"), 0);
	assert_string_equal(json_string_value(json_object_get(b, "id")), "group:long_bucket:50:75");
	assert_string_equal(json_string_value(json_object_get(json_object_get(b, "limits"), "from")),
	                    "50");
	assert_string_equal(json_string_value(json_object_get(json_object_get(b, "limits"), "to")),
	                    "75");
	assert_null(json_object_get(b, "value"));
	json_decref(r);
	expect_groups(fx, "all(group(fixedwidth(price, 25)) each(output(count())))", "count()",
	              "group:long_bucket:50:75=2,group:long_bucket:25:50=2,group:long_bucket:0:25=2");
}

static void test_aggregators(void **state)
{
	struct fixture *fx = *state;
	/* lamp: prices 10 30 -> stddev 10; avg(relevance()) 20; max(relevance()) 30 */
	json_t *r, *root = grouping(fx, "all(group(name) order(-count()) max(1) each(output("
	                                "stddev(price), avg(relevance()), max(relevance()), "
	                                "count() as(n), sum(w * 4))))", &r);
	json_t *lamp = json_array_get(json_object_get(json_array_get(json_object_get(root,
	                                                             "children"), 0), "children"), 0);
	json_t *f = json_object_get(lamp, "fields");
	assert_string_equal(json_string_value(json_object_get(lamp, "value")), "lamp");
	assert_true(json_real_value(json_object_get(f, "stddev(price)")) == 10.0);
	assert_true(json_real_value(json_object_get(f, "avg(relevance())")) == 20.0);
	assert_true(json_real_value(json_object_get(f, "max(relevance())")) == 30.0);
	assert_int_equal(json_integer_value(json_object_get(f, "n")), 2);
	assert_true(json_real_value(json_object_get(f, "sum(mul(w, 4))")) == 6.0);
	json_decref(r);
	/* order by an aggregate over an expression: sum(w) = lamp 1.5, desk 3, chair 2,
	 * sofa 0.25, rug 1.5 (equal sums come by value) */
	expect_groups(fx, "all(group(name) order(-sum(w)) each(output(avg(relevance()))))",
	              "avg(relevance())",
	              "group:string:desk=20,group:string:chair=40,group:string:lamp=20,"
	              "group:string:rug=60,group:string:sofa=50");
	/* precision(N): one node merges nothing, the groups are exact */
	expect_groups(fx, "all(group(name) max(2) precision(1) order(-count()) each(output("
	                  "count())))", "count()", "group:string:lamp=2,group:string:chair=1");
	/* all(output(stddev(...))) over every hit: prices 10..60 */
	root = grouping(fx, "all(output(stddev(price), avg(relevance())))", &r);
	f = json_object_get(root, "fields");
	assert_true(fabs(json_real_value(json_object_get(f, "stddev(price)")) - sqrt(9100.0 / 6 -
	                                                                          35.0 * 35.0)) < 1e-9);
	assert_true(json_real_value(json_object_get(f, "avg(relevance())")) == 35.0);
	json_decref(r);
}

static void test_summary_hits(void **state)
{
	struct fixture *fx = *state;
	/* the two best hits of each name, in the class short */
	json_t *r, *root = grouping(fx, "all(group(name) max(1) order(-count()) each(max(1) "
	                                "each(output(summary(short)))))", &r);
	json_t *lamp = json_array_get(json_object_get(json_array_get(json_object_get(root,
	                                                             "children"), 0), "children"), 0);
	json_t *hl = json_array_get(json_object_get(lamp, "children"), 0);
	assert_string_equal(json_string_value(json_object_get(hl, "id")), "hitlist:hits");
	assert_string_equal(json_string_value(json_object_get(hl, "label")), "hits");
	json_t *hits = json_object_get(hl, "children");
	assert_int_equal(json_array_size(hits), 1);
	json_t *h = json_array_get(hits, 0);
	assert_string_equal(json_string_value(json_object_get(h, "id")), "id:test:item::3");
	assert_true(json_real_value(json_object_get(h, "relevance")) == 30);
	json_t *f = json_object_get(h, "fields");
	assert_string_equal(json_string_value(json_object_get(f, "name")), "lamp");
	assert_null(json_object_get(f, "price")); /* class short has name only */
	/* the hit list pages on: the next continuation shows the other lamp */
	const char *next = json_string_value(json_object_get(json_object_get(hl, "continuation"),
	                                                     "next"));
	assert_non_null(next);
	assert_null(json_object_get(json_object_get(hl, "continuation"), "prev"));
	char g[512];
	snprintf(g, sizeof g, "{continuations: ['%s']}all(group(name) max(1) order(-count()) "
	         "each(max(1) each(output(summary()))))", next);
	json_t *r2, *root2 = grouping(fx, g, &r2);
	lamp = json_array_get(json_object_get(json_array_get(json_object_get(root2, "children"), 0),
	                                      "children"), 0);
	hl = json_array_get(json_object_get(lamp, "children"), 0);
	h = json_array_get(json_object_get(hl, "children"), 0);
	assert_string_equal(json_string_value(json_object_get(h, "id")), "id:test:item::1");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(h, "fields"), "price")),
	                 10);
	assert_non_null(json_object_get(json_object_get(hl, "continuation"), "prev"));
	assert_null(json_object_get(json_object_get(hl, "continuation"), "next"));
	json_decref(r2);
	json_decref(r);
	/* an unknown summary class fails the query */
	expect_gerror(fx, "all(group(name) each(each(output(summary(nope)))))", STRATA_NOT_FOUND,
	              "summary(nope): document-summary 'nope' not found in schema 'item'");
}

/* The continuation tokens of the first grouplist of root. */
static const char *cont(json_t *root, const char *which)
{
	json_t *list = json_array_get(json_object_get(root, "children"), 0);
	return json_string_value(json_object_get(json_object_get(list, "continuation"), which));
}

static void test_continuations(void **state)
{
	struct fixture *fx = *state;
	const char *g = "all(group(price / 20) max(2) each(output(count())))";
	json_t *r, *root = grouping(fx, g, &r);
	assert_string_equal(json_string_value(json_object_get(json_object_get(root, "continuation"),
	                                                      "this")), "");
	char got[512], q[1024];
	groups(root, "count()", got, sizeof got);
	assert_string_equal(got, "group:long:3=1,group:long:2=2");
	assert_null(cont(root, "prev"));
	char next[256];
	snprintf(next, sizeof next, "%s", cont(root, "next"));
	json_decref(r);
	/* the next page; its this-continuation gives the same page again */
	snprintf(q, sizeof q, "{continuations: ['%s']}%s", next, g);
	root = grouping(fx, q, &r);
	groups(root, "count()", got, sizeof got);
	assert_string_equal(got, "group:long:1=2,group:long:0=1");
	assert_null(cont(root, "next"));
	char prev[256], self[256];
	snprintf(prev, sizeof prev, "%s", cont(root, "prev"));
	snprintf(self, sizeof self, "%s",
	         json_string_value(json_object_get(json_object_get(root, "continuation"), "this")));
	assert_string_equal(self, next);
	json_decref(r);
	snprintf(q, sizeof q, "{\\\"continuations\\\": ['%s', '%s']}%s", self, prev, g);
	root = grouping(fx, q, &r);
	groups(root, "count()", got, sizeof got);
	assert_string_equal(got, "group:long:3=1,group:long:2=2"); /* later replaces earlier */
	json_decref(r);
	expect_gerror(fx, "{continuations: ['xyz']}all(group(name) each(output(count())))",
	              STRATA_INVALID_ARGUMENT,
	              "bad continuation 'xyz': not one a grouping result gave");
	expect_gerror(fx, "{continuations: ['ST7P0000000000000000O2']}all(group(name) each(output("
	                  "count())))", STRATA_INVALID_ARGUMENT, "continuation "
	              "'ST7P0000000000000000O2' names a list this grouping does not have");
	expect_gerror(fx, "{timeout: 5}all(group(name) each(output(count())))",
	              STRATA_NOT_IMPLEMENTED, "yql:1:39: this grouping annotation (only "
	              "continuations) is not supported");
}

static void test_select_parameter(void **state)
{
	struct fixture *fx = *state;
	json_t *r = query(fx, "{\"yql\": \"select * from sources * where price > 20 limit 0\", "
	                      "\"select\": \"all(group(name) order(-count()) max(1) "
	                      "each(output(count())))\"}");
	json_t *root = json_array_get(json_object_get(json_object_get(r, "root"), "children"), 0);
	char got[256];
	groups(root, "count()", got, sizeof got);
	assert_string_equal(got, "group:string:chair=1"); /* 30..60: all once; ties by value */
	json_decref(r);
	/* beside a grouping in the YQL: a request of its own, the second root */
	r = query(fx, "{\"yql\": \"select * from sources * where true limit 0 | all(output(count()))\","
	              " \"select\": \"all(output(sum(price)))\"}");
	json_t *kids = json_object_get(json_object_get(r, "root"), "children");
	assert_int_equal(json_array_size(kids), 2);
	json_t *f = json_object_get(json_array_get(kids, 0), "fields");
	assert_string_equal(json_string_value(json_object_get(json_array_get(kids, 0), "id")),
	                    "group:root:0");
	assert_int_equal(json_integer_value(json_object_get(f, "count()")), 6);
	assert_null(json_object_get(f, "sum(price)"));
	f = json_object_get(json_array_get(kids, 1), "fields");
	assert_string_equal(json_string_value(json_object_get(json_array_get(kids, 1), "id")),
	                    "group:root:1");
	assert_int_equal(json_integer_value(json_object_get(f, "sum(price)")), 210);
	json_decref(r);
	expect_error(fx, "{\"yql\": \"select * from sources * where true\", \"select\": "
	                 "\"all(group(name) each(output(count()))) x\"}", STRATA_PARSE,
	             "select:1:40: expected the end of the grouping, found 'x'");
	expect_error(fx, "{\"yql\": \"select * from sources * where true\", \"select\": "
	                 "\"all(group(nope) each(output(count())))\"}", STRATA_NOT_FOUND,
	             "yql:1:11: field 'nope' not found");
	expect_error(fx, "{\"yql\": \"select * from sources * where true\", \"select\": 3}",
	             STRATA_INVALID_ARGUMENT, "\"select\" must be a string");
}

static void test_refused(void **state)
{
	struct fixture *fx = *state;
	expect_gerror(fx, "all(group(cat(name, name)) each(output(count())))", STRATA_NOT_IMPLEMENTED,
	              "yql:1:48: cat() in a grouping expression is not supported");
	expect_gerror(fx, "all(group(name) each(output(quantiles([0.5], price))))",
	              STRATA_NOT_IMPLEMENTED, "yql:1:66: quantiles() here is not supported");
	expect_gerror(fx, "all(group(name) each(output(xor(md5(cat(name), 64)))))",
	              STRATA_NOT_IMPLEMENTED, "yql:1:66: xor() here is not supported");
	expect_gerror(fx, "all(group(name) each(each(output(summary())) each(output(summary()))))",
	              STRATA_NOT_IMPLEMENTED, "yql:1:83: a second hit list in one group is not "
	              "supported");
	expect_gerror(fx, "all(group(name) all(group(price)) each(output(count())))",
	              STRATA_NOT_IMPLEMENTED, "yql:1:54: 'all' in a grouping is not supported");
	expect_gerror(fx, "all(group(name) each(output(count()) order(-count())))",
	              STRATA_NOT_IMPLEMENTED,
	              "yql:1:75: order() of hits (they come by relevance) is not supported");
	expect_gerror(fx, "all(group(name) alias(x, count()) each(output(count())))",
	              STRATA_NOT_IMPLEMENTED, "yql:1:54: 'alias' in a grouping is not supported");
	expect_gerror(fx, "all(group(frob(name)) each(output(count())))", STRATA_NOT_IMPLEMENTED,
	              "yql:1:48: the grouping function 'frob' is not supported");
	expect_gerror(fx, "all(group(math.pow(price)) each(output(count())))", STRATA_PARSE,
	              "yql:1:48: math.pow() takes 2 arguments");
	expect_gerror(fx, "all(group(fixedwidth(price, 0)) each(output(count())))", STRATA_PARSE,
	              "yql:1:48: fixedwidth() takes a positive number as its width");
	expect_gerror(fx, "all(group(name) each(max(2) output(count())))", STRATA_PARSE,
	              "yql:1:54: max() of hits needs each(output(summary()))");
	expect_gerror(fx, "all(group(name) each(output(sum(nope))))", STRATA_NOT_FOUND,
	              "yql:1:70: field 'nope' not found");
	expect_gerror(fx, "all(group(name) each(output(sum(w + nope))))", STRATA_NOT_FOUND,
	              "yql:1:74: field 'nope' not found");
}

static void test_filter(void **state)
{
	struct fixture *fx = *state;
	/* regex matches the whole value: "l.*" keeps lamp, "am" keeps nothing */
	expect_groups(fx, "all(group(name) filter(regex('l.*', name)) each(output(count())))",
	              "count()", "group:string:lamp=2");
	expect_groups(fx, "all(group(name) filter(regex('am', name)) each(output(count())))",
	              "count()", "");
	/* range: [20, 40) by default, (20, 40] with false, true */
	expect_groups(fx, "all(group(name) filter(range(20, 40, price)) each(output(count())))",
	              "count()", "group:string:lamp=1,group:string:desk=1");
	expect_groups(fx, "all(group(name) filter(range(20, 40, price, false, true)) "
	                  "each(output(sum(price))))", "sum(price)",
	              "group:string:chair=40,group:string:lamp=30");
	/* not before and before or, parentheses; istrue of a number: not 0 (price / 60: rug) */
	expect_groups(fx, "all(group(name) filter(not regex('lamp', name) and (range(0, 30, price) "
	                  "or istrue(price / 60))) each(output(count())))", "count()",
	              "group:string:rug=1,group:string:desk=1");
	expect_groups(fx, "all(group(name) filter(not istrue(price / 30) or regex('r.*', name)) "
	                  "each(output(count())))", "count()",
	              "group:string:rug=1,group:string:desk=1,group:string:lamp=1");
	/* the filter of a level inside each() works on the group's hits */
	expect_groups(fx, "all(group(1) each(all(group(name) filter(regex('lamp', name)) "
	                  "output(count(), sum(price)) each(output(count())))))", "sum(price)",
	              "group:long:1=40");
	expect_gerror(fx, "all(group(name) filter(price) each(output(count())))", STRATA_PARSE,
	              "yql:1:61: expected regex(), range(), istrue(), not or '(', found 'price'");
	expect_gerror(fx, "all(group(name) filter(range(1, 2, price, yes, no)) each(output(count())))",
	              STRATA_PARSE, "yql:1:80: expected true or false, found 'yes'");
	expect_gerror(fx, "all(group(name) filter(regex('x', nope)) each(output(count())))",
	              STRATA_NOT_FOUND, "yql:1:72: field 'nope' not found");
}

/* The id, limits.from and limits.to of group k of the first grouplist. */
static void expect_bucket(json_t *root, size_t k, const char *id, const char *from, const char *to)
{
	json_t *list = json_array_get(json_object_get(root, "children"), 0);
	json_t *b = json_array_get(json_object_get(list, "children"), k);
	assert_string_equal(json_string_value(json_object_get(b, "id")), id);
	json_t *lim = json_object_get(b, "limits");
	assert_string_equal(json_string_value(json_object_get(lim, "from")), from);
	assert_string_equal(json_string_value(json_object_get(lim, "to")), to);
	assert_null(json_object_get(b, "value"));
}

static void test_predefined(void **state)
{
	struct fixture *fx = *state;
	/* long buckets [-inf, 20), [20, 41), [41, inf): 1, 3 and 2 hits */
	const char *g = "all(group(predefined(price, bucket(-inf, 20), bucket[20, 40], "
	                "bucket<40, inf>)) order(-count()) each(output(count())))";
	expect_groups(fx, g, "count()", "group:long_bucket:20:41=3,"
	              "group:long_bucket:41:9223372036854775807=2,"
	              "group:long_bucket:-9223372036854775808:20=1");
	json_t *r, *root = grouping(fx, g, &r);
	expect_bucket(root, 2, "group:long_bucket:-9223372036854775808:20", "-9223372036854775808",
	              "20");
	json_t *list = json_array_get(json_object_get(root, "children"), 0);
	assert_string_equal(json_string_value(json_object_get(list, "label")),
	                    "predefined(price, bucket[-inf, 20>, bucket[20, 41>, bucket[41, inf>)");
	json_decref(r);
	/* one value: bucket[3] and bucket(5) are [3, 4> and [5, 6>; price / 10 = 1..6 */
	expect_groups(fx, "all(group(predefined(price / 10, bucket[3], bucket(5))) "
	                  "each(output(sum(price))))", "sum(price)",
	              "group:long_bucket:5:6=50,group:long_bucket:3:4=30");
	/* strings: chair < desk, lamp alone (["lamp", "lamp ">), the rest after; desk in none */
	g = "all(group(predefined(name, bucket(-inf, 'desk'), bucket['lamp'], bucket<'lamp', inf>)) "
	    "order(-count()) each(output(count())))";
	expect_groups(fx, g, "count()", "group:string_bucket:lamp:lamp =2,"
	              "group:string_bucket:lamp :inf=2,group:string_bucket:-inf:desk=1");
	root = grouping(fx, g, &r);
	expect_bucket(root, 2, "group:string_bucket:-inf:desk", "-inf", "desk");
	json_decref(r);
	/* doubles: w = 0.5 3 1 2 0.25 1.5; a long value meets double buckets as a double */
	root = grouping(fx, "all(group(predefined(w, bucket(0.0, 1.0), bucket(1.0, inf))) "
	                    "each(output(count())))", &r);
	expect_bucket(root, 0, "group:double_bucket:1.0:Infinity", "1.0", "Infinity");
	expect_bucket(root, 1, "group:double_bucket:0.0:1.0", "0.0", "1.0");
	json_decref(r);
	/* a double meets long buckets rounded: 0.25 to 0 (price 50), 0.5 and 1 to 1 (prices 10
	 * and 30), 1.5 and 2 to 2 (in none) */
	expect_groups(fx, "all(group(predefined(w, bucket(0, 1), bucket(1, 2))) "
	                  "each(output(count())))", "count()",
	              "group:long_bucket:0:1=1,group:long_bucket:1:2=2");
	expect_gerror(fx, "all(group(predefined(price, bucket(0, 20), bucket(10, 30))) "
	                  "each(output(count())))", STRATA_PARSE,
	              "yql:1:48: predefined() buckets must ascend without overlapping");
	expect_gerror(fx, "all(group(predefined(price, bucket(0, 'a'))) each(output(count())))",
	              STRATA_PARSE, "yql:1:48: predefined() buckets mix strings and numbers");
	expect_gerror(fx, "all(group(predefined(price, range(0, 1))) each(output(count())))",
	              STRATA_PARSE, "yql:1:66: expected bucket(...), found 'range'");
}

static void test_levels(void **state)
{
	struct fixture *fx = *state;
	/* all() side by side inside each(): a hit list of one, then a grouplist */
	json_t *r, *root = grouping(fx, "all(group(name) max(1) order(-count()) each(output(count()) "
	                                "all(max(1) each(output(summary()))) "
	                                "all(group(price) each(output(count())))))", &r);
	json_t *lamp = json_array_get(json_object_get(json_array_get(json_object_get(root,
	                                                             "children"), 0), "children"), 0);
	assert_string_equal(json_string_value(json_object_get(lamp, "id")), "group:string:lamp");
	json_t *kids = json_object_get(lamp, "children");
	assert_int_equal(json_array_size(kids), 2);
	json_t *hl = json_array_get(kids, 0);
	assert_string_equal(json_string_value(json_object_get(hl, "id")), "hitlist:hits");
	assert_int_equal(json_array_size(json_object_get(hl, "children")), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(hl,
	                    "children"), 0), "id")), "id:test:item::3");
	json_t *pl = json_array_get(kids, 1);
	assert_string_equal(json_string_value(json_object_get(pl, "id")), "grouplist:price");
	assert_int_equal(json_array_size(json_object_get(pl, "children")), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(pl,
	                    "children"), 0), "id")), "group:long:30");
	json_decref(r);
	/* two each() at one level add up: the hits, then a grouping of them */
	root = grouping(fx, "all(group(name) max(1) order(-count()) each(max(1) "
	                    "each(output(summary()))) each(group(price / 20) each(output(count()))))",
	                &r);
	lamp = json_array_get(json_object_get(json_array_get(json_object_get(root, "children"), 0),
	                                      "children"), 0);
	kids = json_object_get(lamp, "children");
	assert_string_equal(json_string_value(json_object_get(json_array_get(kids, 0), "id")),
	                    "hitlist:hits");
	assert_string_equal(json_string_value(json_object_get(json_array_get(kids, 1), "id")),
	                    "grouplist:div(price, 20)");
	json_decref(r);
	/* max(N) of a level without group(): the best N hits go on */
	expect_groups(fx, "all(max(2) all(group(name) each(output(count()))))", "count()",
	              "group:string:rug=1,group:string:sofa=1");
	root = grouping(fx, "all(max(2) output(sum(price), count()))", &r);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(root, "fields"),
	                                                    "sum(price)")), 110);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(root, "fields"),
	                                                    "count()")), 2);
	json_decref(r);
	/* output() beside group(): the root's fields, count() the number of groups */
	root = grouping(fx, "all(group(name) max(2) output(count(), sum(price)) "
	                    "each(output(count())))", &r);
	json_t *f = json_object_get(root, "fields");
	assert_int_equal(json_integer_value(json_object_get(f, "count()")), 5);
	assert_int_equal(json_integer_value(json_object_get(f, "sum(price)")), 210);
	char got[512];
	groups(root, "count()", got, sizeof got);
	assert_string_equal(got, "group:string:rug=1,group:string:sofa=1");
	json_decref(r);
	/* ... inside each(): the group's fields (6 hits, 5 names) */
	expect_groups(fx, "all(group(1) each(group(name) output(count())))", "count()",
	              "group:long:1=5");
	/* a second grouping after '|': a request of its own, with its own root */
	root = grouping(fx, "all(group(name) max(1) each(output(count()))) | all(output(count()))",
	                &r);
	assert_null(json_object_get(root, "fields"));
	groups(root, "count()", got, sizeof got);
	assert_string_equal(got, "group:string:rug=1");
	json_t *second = json_array_get(json_object_get(json_object_get(r, "root"), "children"), 1);
	assert_string_equal(json_string_value(json_object_get(second, "id")), "group:root:1");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(second, "fields"),
	                                                    "count()")), 6);
	json_decref(r);
}

static void test_order_exprs(void **state)
{
	struct fixture *fx = *state;
	/* max(price) * count(): lamp 60, desk 20, chair 40, sofa 50, rug 60 */
	expect_groups(fx, "all(group(name) order(-max(price) * count()) each(output(count())))",
	              "count()", "group:string:lamp=2,group:string:rug=1,group:string:sofa=1,"
	              "group:string:chair=1,group:string:desk=1");
	/* avg(relevance()) * count() ascending: desk 20, chair 40, lamp 40, sofa 50, rug 60 */
	expect_groups(fx, "all(group(name) order(avg(relevance()) * count()) each(output(sum(price))))",
	              "sum(price)", "group:string:desk=20,group:string:chair=40,group:string:lamp=40,"
	              "group:string:sofa=50,group:string:rug=60");
	/* max() of a string: alphabetical */
	json_t *r, *root = grouping(fx, "all(group(name) order(-max(name)) max(2) "
	                                "each(output(max(name), min(name))))", &r);
	char got[256];
	groups(root, "count()", got, sizeof got);
	assert_string_equal(got, "group:string:sofa=-,group:string:rug=-");
	json_t *sofa = json_array_get(json_object_get(json_array_get(json_object_get(root,
	                                                             "children"), 0), "children"), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(sofa, "fields"),
	                                                      "max(name)")), "sofa");
	json_decref(r);
	expect_gerror(fx, "all(group(name) order(-price) each(output(count())))", STRATA_PARSE,
	              "yql:1:61: order() cannot read 'price' outside an aggregator: it orders groups "
	              "by their aggregates, not by their hits' values (write it inside one, e.g. "
	              "max(...))");
	expect_gerror(fx, "all(group(name) order(relevance() * count()) each(output(count())))",
	              STRATA_PARSE, "yql:1:60: order() cannot read 'relevance()' outside an "
	              "aggregator: it orders groups by their aggregates, not by their hits' values "
	              "(write it inside one, e.g. max(...))");
	expect_gerror(fx, "all(group(name) order(sum(nope) * count()) each(output(count())))",
	              STRATA_NOT_FOUND, "yql:1:64: field 'nope' not found");
}

/* A hit without a value for an attribute groups under Vespa's undefined
 * value: "" for a string, the type's smallest for an int or a long, NaN for
 * a double; aggregates take those values too, as Vespa's do. */
static void test_undefined_values(void **state)
{
	struct fixture *fx = *state;
	struct strata_error err = { 0 };
	assert_int_equal(strata_feed_json(fx->db, "{\"put\": \"id:test:item::98\", \"fields\": "
	                                          "{\"t\": 5}}", &err), 0);
	assert_int_equal(strata_feed_json(fx->db, "{\"put\": \"id:test:item::99\", \"fields\": "
	                                          "{\"name\": \"zzz\"}}", &err), 0);
	static const struct { const char *where, *g, *field, *want; } cases[] = {
		{ "t = 5", "all(group(name) each(output(count())))", "count()", "group:string:=1" },
		{ "t = 5", "all(group(price) each(output(count())))", "count()",
		  "group:long:-2147483648=1" },
		{ "t = 5", "all(group(w) each(output(count())))", "count()", "group:double:NaN=1" },
		{ "name contains \\\"zzz\\\"", "all(group(t) each(output(count())))", "count()",
		  "group:long:-9223372036854775808=1" },
		{ "t = 5", "all(group(1) each(output(sum(price))))", "sum(price)",
		  "group:long:1=-2147483648" },
	};
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		char req[512], got[256];
		snprintf(req, sizeof req, "{\"yql\": \"select * from sources * where %s limit 0 | %s\"}",
		         cases[k].where, cases[k].g);
		json_t *r = query(fx, req);
		groups(json_array_get(json_object_get(json_object_get(r, "root"), "children"), 0),
		       cases[k].field, got, sizeof got);
		if (strcmp(got, cases[k].want))
			fail_msg("%s:\n got  %s\n want %s", req, got, cases[k].want);
		json_decref(r);
	}
	/* NaN among numbers: its own group, first; an avg over it is "NaN" */
	json_t *r = query(fx, "{\"yql\": \"select * from sources * where t = 5 or t = 0 limit 0 | "
	              "all(group(w) order(-count()) each(output(avg(w))))\"}");
	char *text = json_dumps(r, JSON_COMPACT);
	assert_non_null(strstr(text, "\"id\":\"group:double:NaN\",\"relevance\":"));
	assert_non_null(strstr(text, "\"avg(w)\":\"NaN\""));
	assert_non_null(strstr(text, "\"avg(w)\":0.5"));
	json_free_t release;
	json_get_alloc_funcs(NULL, &release); /* jansson's text goes back to its allocator */
	release(text);
	json_decref(r);
	assert_int_equal(strata_remove(fx->db, "id:test:item::98", &err), 0);
	assert_int_equal(strata_remove(fx->db, "id:test:item::99", &err), 0);
}

/* group(f) of a collection: a hit joins the group of each of its values
 * (an array's elements, a map's keys or values); elsewhere a collection
 * is refused. */
static void test_collections(void **state)
{
	struct fixture *fx = *state;
	/* relevance is the price: the groups by their best hit, 60 (doc 6) first */
	expect_groups(fx, "all(group(tags) each(output(count(), sum(price))))", "sum(price)",
	              "group:string:all=210,group:string:even=120,group:string:odd=90");
	expect_groups(fx, "all(group(m.key) each(output(count())))", "count()",
	              "group:string:colour=6,group:string:size=3");
	expect_groups(fx, "all(group(m.value) order(-count()) each(output(count())))", "count()",
	              "group:string:s=3,group:string:c0=2,group:string:c1=2,group:string:c2=2");
	/* nested: the values of the hits of each key, not only that key's */
	json_t *r, *root = grouping(fx, "all(group(m.key) each(group(tags) each(output(count()))))",
	                            &r);
	json_t *size = json_array_get(json_object_get(json_array_get(json_object_get(root, "children"),
	                                                             0), "children"), 1);
	assert_string_equal(json_string_value(json_object_get(size, "id")), "group:string:size");
	char got[256];
	groups(size, "count()", got, sizeof got);
	assert_string_equal(got, "group:string:all=3,group:string:odd=2,group:string:even=1");
	json_decref(r);
	expect_gerror(fx, "all(group(strlen(tags)) each(output(count())))", STRATA_NOT_IMPLEMENTED,
	              "yql:1:55: a group() expression of 'tags', a collection, is not supported: "
	              "Strata reads a collection's values only as the key of group(tags)");
	expect_gerror(fx, "all(group(name) each(output(max(m.value))))", STRATA_NOT_IMPLEMENTED,
	              "yql:1:70: max(m.value) of 'm.value', a collection, is not supported: Strata "
	              "reads a collection's values only as the key of group(m.value)");
	expect_gerror(fx, "all(group(m.nokey) each(output(count())))", STRATA_NOT_FOUND,
	              "yql:1:48: field 'm.nokey' not found");
	/* m{"key"}: the value at key */
	expect_groups(fx, "all(group(m{\\\"colour\\\"}) each(output(count())))", "count()",
	              "group:string:c2=2,group:string:c1=2,group:string:c0=2");
	expect_groups(fx, "all(group(m{size}) each(output(count())))", "count()", "group:string:s=3");
	expect_groups(fx, "all(group(name) filter(regex(\\\"c1\\\", m{\\\"colour\\\"})) "
	                  "each(output(count())))", "count()",
	              "group:string:sofa=1,group:string:desk=1");
	expect_gerror(fx, "all(group(name{\\\"x\\\"}) each(output(count())))",
	              STRATA_INVALID_ARGUMENT,
	              "yql:1:48: a map lookup needs a map field; 'name' is not one");
}

/* now(): the query's time, ranking.properties.vespa.now when given. */
static void test_now(void **state)
{
	struct fixture *fx = *state;
	json_t *r = query(fx, "{\"yql\": \"select * from sources * where true limit 0 | "
	                      "all(group(1) each(output(max(now() - t), min(now() - t))))\", "
	                      "\"ranking.properties.vespa.now\": 1800000000.5}");
	json_t *gr = json_array_get(json_object_get(json_array_get(json_object_get(
		json_array_get(json_object_get(json_object_get(r, "root"), "children"), 0),
		"children"), 0), "children"), 0);
	json_t *f = json_object_get(gr, "fields");
	assert_int_equal(json_integer_value(json_object_get(f, "max(sub(now(), t))")), 1800000000);
	assert_int_equal(json_integer_value(json_object_get(f, "min(sub(now(), t))")), 100000000);
	json_decref(r);
	/* without it, the clock's: some time after this was written */
	r = query(fx, "{\"yql\": \"select * from sources * where true limit 0 | "
	              "all(group(1) each(output(min(now()))))\"}");
	gr = json_array_get(json_object_get(json_array_get(json_object_get(
		json_array_get(json_object_get(json_object_get(r, "root"), "children"), 0),
		"children"), 0), "children"), 0);
	assert_true(json_integer_value(json_object_get(json_object_get(gr, "fields"), "min(now())")) >
	            1700000000);
	json_decref(r);
}

/* The hits of request req as their document numbers in order, "6 5 4". */
static void hit_order(struct fixture *fx, const char *req, char *out, size_t n)
{
	json_t *r = query(fx, req), *hit;
	size_t i, at = 0;
	out[0] = 0;
	json_array_foreach(json_object_get(json_object_get(r, "root"), "children"), i, hit) {
		const char *id = json_string_value(json_object_get(hit, "id"));
		at += (size_t)snprintf(out + at, n - at, "%s%s", i ? " " : "", strrchr(id, ':') + 1);
	}
	json_decref(r);
}

/* The sorting parameter: Vespa's sorting language, as order by; and the
 * missing policies, Vespa's default (first when ascending) in order by too. */
static void test_sorting(void **state)
{
	struct fixture *fx = *state;
	struct strata_error err = { 0 };
	assert_int_equal(strata_feed_json(fx->db, "{\"put\": \"id:test:item::9\", \"fields\": "
	                                          "{\"name\": \"Zed\"}}", &err), 0);
	static const struct { const char *params, *want; } cases[] = {
		{ "\"sorting\": \"-price\"", "6 5 4 3 2 1 9" },
		{ "\"sorting\": \"+price\"", "9 1 2 3 4 5 6" },
		{ "\"sorting\": \"price\"", "9 1 2 3 4 5 6" },
		{ "\"sorting\": \"+missing(price,last)\"", "1 2 3 4 5 6 9" },
		{ "\"sorting\": \"-missing(price,first)\"", "9 6 5 4 3 2 1" },
		{ "\"sorting\": \"+name -price\"", "9 4 2 3 1 6 5" },
		{ "\"sorting\": \"lowercase(name) -price\"", "4 2 3 1 6 5 9" },
		{ "\"sorting\": \"uca(name,en_US,PRIMARY) price\"", "4 2 1 3 6 5 9" },
		{ "\"ranking\": {\"sorting\": \"[relevance]\"}", "6 5 4 3 2 1 9" },
		{ "\"ranking.sorting\": \"+[rank]\"", "9 1 2 3 4 5 6" },
		{ "\"sorting\": \"-w\", \"hits\": 2, \"offset\": 1", "4 6" },
	};
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		char req[300], got[64];
		snprintf(req, sizeof req, "{\"yql\": \"select * from sources * where true\", %s}",
		         cases[k].params);
		hit_order(fx, req, got, sizeof got);
		if (strcmp(got, cases[k].want))
			fail_msg("%s: got '%s', want '%s'", req, got, cases[k].want);
	}
	char got[64];
	hit_order(fx, "{\"yql\": \"select * from sources * where true order by price\"}", got,
	          sizeof got);
	assert_string_equal(got, "9 1 2 3 4 5 6");
	hit_order(fx, "{\"yql\": \"select * from sources * where true order by price desc\"}", got,
	          sizeof got);
	assert_string_equal(got, "6 5 4 3 2 1 9");
	static const struct { const char *spec; int code; const char *msg; } bad[] = {
		{ "-price,name", STRATA_PARSE, "sorting:1:7: expected a space between sort expressions" },
		{ "upper(name)", STRATA_PARSE, "sorting:1:1: unknown sort function upper" },
		{ "uca(name,de)", STRATA_NOT_IMPLEMENTED, "sorting:1:10: uca() in locale de is not supported" },
		{ "uca(name,en,LOUD)", STRATA_PARSE, "sorting:1:13: expected PRIMARY, SECONDARY, TERTIARY, "
		  "QUATERNARY or IDENTICAL" },
		{ "missing(price,as,3)", STRATA_NOT_IMPLEMENTED,
		  "sorting:1:15: missing(..., as, VALUE) is not supported" },
		{ "[docid]", STRATA_NOT_IMPLEMENTED, "sorting:1:1: sorting by [docid] is not supported" },
		{ "lowercase(name", STRATA_PARSE, "sorting:1:15: expected ')' after lowercase" },
		{ "+nope", STRATA_NOT_FOUND, "sorting:1:1: field 'nope' not found" },
		{ "  ", STRATA_INVALID_ARGUMENT, "sorting: no sort expression" },
	};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		char req[300];
		snprintf(req, sizeof req, "{\"yql\": \"select * from sources * where true\", "
		         "\"sorting\": \"%s\"}", bad[k].spec);
		expect_error(fx, req, bad[k].code, bad[k].msg);
	}
	expect_error(fx, "{\"yql\": \"select * from sources * where true order by price\", "
	                 "\"sorting\": \"-price\"}", STRATA_INVALID_ARGUMENT,
	             "sorting: the YQL has an order by: give one of them");
	assert_int_equal(strata_remove(fx->db, "id:test:item::9", &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expressions),
		cmocka_unit_test(test_aggregators),
		cmocka_unit_test(test_summary_hits),
		cmocka_unit_test(test_continuations),
		cmocka_unit_test(test_select_parameter),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_predefined),
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_order_exprs),
		cmocka_unit_test(test_undefined_values),
		cmocka_unit_test(test_collections),
		cmocka_unit_test(test_sorting),
		cmocka_unit_test(test_now),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
