/*
 * test_summary.c: summaries made from the query and the field settings
 * beside them.  The schema side: weight, sorting, bolding, linguistics and
 * the other field settings, accepted or refused with their position; the
 * summary settings dynamic, bolding, matched-elements-only, the documentid
 * source, a schema's own document-summary default, and their errors.  The
 * engine side: snippets and highlighting checked byte for byte (stems,
 * accents, several fragments, short fields, no match), matched elements of
 * arrays, weighted sets and maps, weight's effect on nativeFieldMatch against
 * its formula, order by with sorting settings, and allocation failures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>
#include <jansson.h>

#include "../rank/rank_int.h"
#include "dbtest.h"

/* ---- the schema side -------------------------------------------------------- */

static void parse_fails(const char *text, int code, const char *msg)
{
	struct strata_error err = {0};
	struct rank_sd *sd = NULL;
	int rc = rank_sd_parse("t.sd", text, strlen(text), &sd, &err);
	if (rc != code || !strstr(err.msg, msg))
		fail_msg("%s\n  got %d '%s'\n  wanted %d '%s'", text, rc, err.msg, code, msg);
	assert_null(sd);
}

static void test_field_settings(void **state)
{
	(void)state;
	static const char ok[] =
		"schema s { document s {\n"
		" field a type string { indexing: summary | index\n weight: 300\n bolding: on\n"
		"  linguistics { profile: soundex }\n id: 7\n body\n rank-type: about }\n"
		" field b type string { indexing: summary | index\n"
		"  linguistics { profile { index: x  search: y } }\n header }\n"
		" field c type string { indexing: attribute\n dictionary { hash  uncased }\n"
		"  sorting { order: descending\n function: uca\n strength: primary\n locale: en_US } }\n"
		" field d type int { indexing: attribute\n sorting: descending\n dictionary: btree }\n"
		"} }\n";
	struct strata_error err = {0};
	struct rank_sd *sd = NULL;
	if (rank_sd_parse("t.sd", ok, strlen(ok), &sd, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(sd->fields[0].weight, 300);
	assert_int_equal(sd->fields[0].summary_transform, RANK_SUMMARY_BOLDING);
	assert_int_equal(sd->fields[1].weight, 0); /* weighs RANK_FIELD_WEIGHT */
	assert_int_equal(sd->fields[2].sort_desc, 1);
	assert_int_equal(sd->fields[2].sort_function, RANK_SORT_UCA);
	assert_int_equal(sd->fields[2].sort_primary, 1);
	assert_int_equal(sd->fields[3].sort_desc, 1);
	assert_int_equal(sd->fields[3].sort_function, RANK_SORT_RAW);
	rank_sd_free(sd);

#define FIELD(x) "schema s { document s { field f type string { indexing: summary | index\n" x \
	" } } }"
	parse_fails(FIELD(" weight: 0"), STRATA_TYPE,
	            "t.sd:2:10: 'weight' must be a whole number from 1 to 1000000, found '0'");
	parse_fails(FIELD(" weight: high"), STRATA_PARSE,
	            "t.sd:2:10: expected a number after 'weight', found 'high'");
	parse_fails(FIELD(" alias: t"), STRATA_NOT_IMPLEMENTED,
	            "t.sd:2:2: field setting 'alias' is not supported");
	parse_fails(FIELD(" query-command: \"x\""), STRATA_NOT_IMPLEMENTED,
	            "t.sd:2:2: field setting 'query-command' is not supported");
	parse_fails(FIELD(" literal-boost: 20"), STRATA_NOT_IMPLEMENTED,
	            "t.sd:2:2: field setting 'literal-boost' is not supported");
	parse_fails(FIELD(" summary-to: a"), STRATA_NOT_IMPLEMENTED,
	            "t.sd:2:2: field setting 'summary-to' is not supported; name the field in a "
	            "document-summary instead");
	parse_fails(FIELD(" rank-type: identity"), STRATA_NOT_IMPLEMENTED,
	            "t.sd:2:13: rank-type 'identity' is not supported");
	parse_fails(FIELD(" dictionary { hash cased }"), STRATA_NOT_IMPLEMENTED,
	            "t.sd:2:20: dictionary: cased is not supported");
	parse_fails(FIELD(" sorting { locale: nb_NO }"), STRATA_NOT_IMPLEMENTED,
	            "t.sd:2:20: sorting locale 'nb_NO' is not supported");
	parse_fails(FIELD(" sorting { function: natural }"), STRATA_PARSE,
	            "t.sd:2:22: expected uca, lowercase or raw, found 'natural'");
	parse_fails(FIELD(" sorting: sideways"), STRATA_PARSE,
	            "t.sd:2:11: expected order, function, strength, locale, ascending or descending");
	parse_fails(FIELD(" linguistics { analyzer: x }"), STRATA_PARSE,
	            "t.sd:2:16: expected 'profile' or '}' in linguistics, found 'analyzer'");
	parse_fails(FIELD(" bolding: maybe"), STRATA_PARSE, "t.sd:2:11: expected on or off");
	parse_fails(FIELD(" indexing-rewrite: none"), STRATA_NOT_IMPLEMENTED,
	            "t.sd:2:2: field setting 'indexing-rewrite' is not supported");
	parse_fails("schema s { document s { field f type int { indexing: summary\n bolding: on } } }",
	            STRATA_NOT_IMPLEMENTED, "t.sd:2:2: bolding on field 'f' is not supported");
	parse_fails("schema s { document s { field f type array<int> { indexing: summary\n"
	            " sorting: descending } } }",
	            STRATA_TYPE, "t.sd:2:2: sorting on field 'f', which holds no single number");
	parse_fails("schema s { document s { field f type array<string> { indexing: summary } }\n"
	            " document-summary x { summary y { source: f\n select-elements-by: } } }",
	            STRATA_PARSE, "t.sd:3:22: expected a summary-feature's name");
	parse_fails("schema s { document s { field f type array<string> { indexing: summary\n"
	            " summary: select-elements-by } } }",
	            STRATA_NOT_IMPLEMENTED, "t.sd:2:11: summary setting 'select-elements-by' on a "
	            "field is not supported");
	parse_fails("schema s { document s { }\n document-summary default inherits x { } }",
	            STRATA_TYPE, "t.sd:2:27: the document-summary 'default' cannot inherit another");
#undef FIELD
}

/* ---- applications --------------------------------------------------------------- */

/* Open an application of the one schema text, expecting code and a message
 * that contains msg. */
static void open_fails(const char *sd, int code, const char *msg)
{
	dbtest_expect_open_error(dbtest_app("strata-summary", "doc.sd", sd), code, msg, NULL);
}

static void test_summary_errors(void **state)
{
	(void)state;
	open_fails("schema doc { document doc {\n field n type int { indexing: summary\n"
	           " summary: dynamic } } }", STRATA_NOT_IMPLEMENTED,
	           "doc.sd:2:8: summary field 'n': dynamic on 'n', which is not a string or an array "
	           "of strings, is not supported");
	open_fails("schema doc { document doc {\n field s type string { indexing: summary\n"
	           " summary: matched-elements-only } } }", STRATA_TYPE,
	           "doc.sd:2:8: summary field 's': matched-elements-only on 's', which is not an array, "
	           "weighted set or map");
	open_fails("schema doc { document doc {\n field n type int { indexing: summary } }\n"
	           " document-summary d {\n summary b { source: n\n bolding: on } } }",
	           STRATA_NOT_IMPLEMENTED, "doc.sd:4:10: summary field 'b': bolding: on on 'n'");
	open_fails("schema doc { document doc {\n field s type string { indexing: index } }\n"
	           " document-summary d {\n summary b { source: s\n tokens dynamic } } }",
	           STRATA_NOT_IMPLEMENTED,
	           "doc.sd:4:10: summary field 'b': tokens with another summary setting");
	open_fails("schema doc { document doc {\n field s type string { indexing: index } }\n"
	           " document-summary default {\n summary b { source: nope } } }", STRATA_TYPE,
	           "doc.sd:4:10: summary field 'b' shows 'nope', which is not a field of 'doc'");
	open_fails("schema doc { document doc {\n field s type string { indexing: summary } }\n"
	           " document-summary d {\n summary b { source: s\n select-elements-by: f } } }",
	           STRATA_NOT_IMPLEMENTED, "doc.sd:4:10: summary field 'b': select-elements-by on 's', "
	           "which is not an array, is not supported");
	open_fails("schema doc { document doc {\n field s type array<string> { indexing: index } }\n"
	           " document-summary d {\n summary b { source: s\n dynamic select-elements-by: f } } }",
	           STRATA_NOT_IMPLEMENTED,
	           "doc.sd:4:10: summary field 'b': select-elements-by with another summary setting");
	open_fails("schema doc { document doc {\n field s type array<string> { indexing: index } }\n"
	           " document-summary d {\n summary b { source: s\n select-elements-by: f\n"
	           " select-elements-by: g } } }",
	           STRATA_TYPE, "doc.sd:6:2: select-elements-by is given twice");
}

/* Long texts of words "bird", one in five bytes, "frog" at the given words. */
static void birds(char *buf, int nwords, const int *frogs, int nfrogs, int hi, int from, int to)
{
	size_t len = 0;
	buf[0] = 0;
	for (int i = from; i < to && i < nwords; i++) {
		int frog = 0;
		for (int k = 0; k < nfrogs; k++)
			frog |= frogs[k] == i;
		len += (size_t)sprintf(buf + len, "%s%s", i > from ? " " : "",
		                       frog ? (hi ? "<hi>frog</hi>" : "frog") : "bird");
	}
}

/* The snippet of the 120 words with frogs at 10 and 100 that two matches
 * give: 64 bytes of context each side (256 / 4), cut inside at token
 * boundaries: words 0..22 and 88..112, a separator between and after. */
static void two_frogs(char *want)
{
	static const int frogs[] = {10, 100};
	char part[1024];
	birds(want, 120, frogs, 2, 1, 0, 23);
	strcat(want, "<sep />");
	birds(part, 120, frogs, 2, 1, 88, 113);
	strcat(want, part);
	strcat(want, "<sep />");
}

static const char *const APP_SD =
	"schema doc {\n"
	"  document doc {\n"
	"    field title type string {\n"
	"      indexing: summary | index\n"
	"      bolding: on\n"
	"      weight: 300\n"
	"    }\n"
	"    field body type string {\n"
	"      indexing: summary | index\n"
	"      summary: dynamic\n"
	"    }\n"
	"    field prose type string { indexing: summary | index\n match: prefix }\n"
	"    field tags type array<string> {\n"
	"      indexing: summary | attribute\n"
	"      summary: matched-elements-only\n"
	"    }\n"
	"    field nums type array<int> { indexing: summary | attribute\n"
	"      summary: matched-elements-only }\n"
	"    field ws type weightedset<string> { indexing: summary | attribute\n"
	"      summary: matched-elements-only }\n"
	"    field m type map<string, int> { indexing: summary\n"
	"      summary: matched-elements-only }\n"
	"    field lines type array<string> { indexing: summary | attribute\n"
	"      bolding: on }\n"
	"    field name type string { indexing: summary | attribute\n"
	"      sorting { function: lowercase } }\n"
	"    field uname type string { indexing: summary | attribute\n"
	"      sorting { function: uca } }\n"
	"    field rank type int { indexing: summary | attribute\n sorting: descending }\n"
	"  }\n"
	"  document-summary default {\n"
	"    summary snippet { source: prose\n dynamic }\n"
	"  }\n"
	"  document-summary ids {\n"
	"    summary documentid { }\n"
	"    summary title { }\n"
	"    summary plain { source: body }\n"
	"    summary bold_body { source: body\n bolding: on }\n"
	"    omit-summary-features\n"
	"  }\n"
	"  rank-profile native {\n"
	"    first-phase { expression: nativeFieldMatch(title, body) }\n"
	"  }\n"
	"}\n";

static int setup(void **state)
{
	struct dbtest *fx = calloc(1, sizeof *fx);
	fx->dir = dbtest_open("strata-summary", "doc.sd", APP_SD, &fx->db);
	*state = fx;
	return 0;
}

/* The first hit's fields, or NULL: the query's JSON result (json_decref). */
static json_t *query(struct dbtest *fx, const char *request, json_t **first)
{
	json_t *j = dbtest_query(fx->db, request);
	*first = json_object_get(json_array_get(dbtest_hits(j), 0), "fields");
	return j;
}

static void expect_str(const json_t *fields, const char *name, const char *want)
{
	const json_t *v = json_object_get(fields, name);
	if (!json_is_string(v) || strcmp(json_string_value(v), want) != 0)
		fail_msg("%s: got '%s'\n  wanted '%s'", name, json_is_string(v) ? json_string_value(v)
		                                                               : "(none)", want);
}

static void expect_json(const json_t *fields, const char *name, const char *want)
{
	char *s = json_dumps(json_object_get(fields, name), JSON_COMPACT | JSON_SORT_KEYS |
	                     JSON_ENCODE_ANY);
	if (strcmp(s ? s : "(none)", want) != 0)
		fail_msg("%s: got %s, wanted %s", name, s ? s : "(none)", want);
	dbtest_json_free(s);
}

static void test_snippets(void **state)
{
	struct dbtest *fx = *state;
	char body[1024], op[4096], want[2048];
	const int frogs[] = {10, 100};
	birds(body, 120, frogs, 2, 0, 0, 120); /* 599 bytes */
	snprintf(op, sizeof op, "{\"put\": \"id:t:doc::1\", \"fields\": {\"title\": \"Running "
	         "shoes, running far\", \"body\": \"%s\", \"prose\": \"%s\"}}", body, body);
	dbtest_feed_json(fx->db, op);
	dbtest_feed_json(fx->db, "{\"put\": \"id:t:doc::2\", \"fields\": {\"title\": \"Café crème\","
	                         " \"body\": \"A short body of a café.\"}}");
	json_t *f, *r;

	/* several fragments */
	r = query(fx, "{\"yql\": \"select * from doc where body contains 'frogs'\"}", &f);
	two_frogs(want);
	expect_str(f, "body", want);
	/* stems: "Running" and "running" for "runs" */
	expect_str(f, "title", "Running shoes, running far");
	json_decref(r);
	r = query(fx, "{\"yql\": \"select * from doc where title contains 'runs'\"}", &f);
	expect_str(f, "title", "<hi>Running</hi> shoes, <hi>running</hi> far");
	/* no match in a long text: its first 256 bytes cut at a token's end */
	birds(want, 120, frogs, 2, 0, 0, 51);
	strcat(want, "<sep />");
	expect_str(f, "body", want);
	json_decref(r);

	/* shorter than a snippet: whole, the accented word found without its accent */
	char mid[300];
	birds(mid, 57, frogs, 2, 0, 0, 57); /* 284 bytes: still whole */
	snprintf(op, sizeof op, "{\"put\": \"id:t:doc::4\", \"fields\": {\"body\": \"%s\"}}", mid);
	dbtest_feed_json(fx->db, op);
	r = query(fx, "{\"yql\": \"select * from doc where body contains 'frog' and "
	              "!(title contains 'shoes')\"}", &f);
	birds(want, 57, frogs, 2, 1, 0, 57);
	expect_str(f, "body", want);
	json_decref(r);
	dbtest_feed_json(fx->db, "{\"remove\": \"id:t:doc::4\"}");
	r = query(fx, "{\"yql\": \"select * from doc where body contains 'cafe' or "
	              "title contains 'CAFE'\"}", &f);
	expect_str(f, "body", "A short body of a <hi>café</hi>.");
	expect_str(f, "title", "<hi>Café</hi> crème");
	json_decref(r);

	/* a negated word is not highlighted; one match in a long text: 128 bytes
	 * each side (words 0..35), then a separator */
	r = query(fx, "{\"yql\": \"select * from doc where body contains 'frog' and "
	              "!(title contains 'shoes')\"}", &f);
	assert_null(f);
	json_decref(r);
	const int one[] = {10};
	snprintf(op, sizeof op, "{\"put\": \"id:t:doc::3\", \"fields\": {\"body\": \"%s\"}}",
	         (birds(body, 120, one, 1, 0, 0, 120), body));
	dbtest_feed_json(fx->db, op);
	r = query(fx, "{\"yql\": \"select * from doc where body contains 'frog' and "
	              "!(body contains 'bird' and title contains 'shoes')\"}", &f);
	birds(want, 120, one, 1, 1, 0, 36); /* 54 + 128 = 182: words up to 5i+4 <= 182 */
	strcat(want, "<sep />");
	expect_str(f, "body", want);
	json_decref(r);

	/* a schema's own default summary: snippet from a match: prefix field,
	 * each word beginning with the query's */
	r = query(fx, "{\"yql\": \"select * from doc where prose contains 'fro'\"}", &f);
	two_frogs(want);
	expect_str(f, "snippet", want);
	json_decref(r);

	/* a document-summary class: documentid, a plain copy and a bolded one */
	r = query(fx, "{\"yql\": \"select * from doc where body contains 'body'\","
	              " \"presentation.summary\": \"ids\"}", &f);
	expect_str(f, "documentid", "id:t:doc::2");
	expect_str(f, "plain", "A short body of a café.");
	expect_str(f, "bold_body", "A short <hi>body</hi> of a café.");
	expect_str(f, "title", "Café crème");
	assert_null(json_object_get(f, "body"));
	json_decref(r);
	/* select names a part of the class */
	r = query(fx, "{\"yql\": \"select bold_body from doc where body contains 'short'\","
	              " \"presentation.summary\": \"ids\"}", &f);
	expect_str(f, "bold_body", "A <hi>short</hi> body of a café.");
	assert_int_equal(json_object_size(f), 1);
	json_decref(r);
}

static void test_matched_elements(void **state)
{
	struct dbtest *fx = *state;
	dbtest_feed_json(fx->db, "{\"put\": \"id:t:doc::1\", \"fields\": {\"tags\": [\"red\", "
	                         "\"blue\", \"red\", \"green\"], \"nums\": [3, 9, 12, 1], \"ws\": {\"a\": 1, "
	                         "\"b\": 5, \"c\": 2}, \"m\": {\"x\": 1, \"y\": 7, \"z\": 9}}}");
	json_t *f, *r;
	r = query(fx, "{\"yql\": \"select * from doc where tags contains 'red' or "
	              "tags contains 'green' or nums > 8 or ws contains 'c' or m.key contains 'x' "
	              "or m.value > 8\"}", &f);
	expect_json(f, "tags", "[\"red\",\"red\",\"green\"]");
	expect_json(f, "nums", "[9,12]");
	expect_json(f, "ws", "{\"c\":2}");
	expect_json(f, "m", "{\"x\":1,\"z\":9}");
	json_decref(r);
	/* bolding on an array of strings: each element highlighted */
	dbtest_feed_json(fx->db, "{\"put\": \"id:t:doc::2\", \"fields\": {\"lines\": [\"red fox\", "
	                         "\"a blue fox\", \"cat\"]}}");
	r = query(fx, "{\"yql\": \"select * from doc where lines contains 'red fox'\"}", &f);
	expect_json(f, "lines", "[\"<hi>red</hi> <hi>fox</hi>\",\"a blue <hi>fox</hi>\",\"cat\"]");
	json_decref(r);
	/* range; a negated condition selects nothing; no element matched:
	 * the field is left out */
	r = query(fx, "{\"yql\": \"select * from doc where tags contains 'blue' and "
	              "range(nums, 1, 3) and !(ws contains 'q')\"}", &f);
	expect_json(f, "tags", "[\"blue\"]");
	expect_json(f, "nums", "[3,1]");
	expect_json(f, "ws", "(none)");
	expect_json(f, "m", "(none)");
	json_decref(r);
}

/* nativeFieldMatch's score of a word met once at position pos (Vespa's
 * default tables, as the README gives them). */
static double native_once(int pos)
{
	double max = 0.5 * 8000 + 0.5 * (1500 + 4000 * log(1 + 255 / 19.0));
	return (0.5 * 8000 * exp(-pos / 12.5) + 0.5 * (1500 + 4000 * log(1 + 1 / 19.0))) / max;
}

static void test_weight(void **state)
{
	struct dbtest *fx = *state;
	dbtest_feed_json(fx->db, "{\"put\": \"id:t:doc::1\", \"fields\": {\"title\": \"frog\","
	                         " \"body\": \"a b c d frog\"}}");
	json_t *f, *r = query(fx, "{\"yql\": \"select * from doc where title contains 'frog' or "
	                          "body contains 'frog'\", \"ranking.profile\": \"native\"}", &f);
	double rel = json_real_value(json_object_get(json_array_get(dbtest_hits(r), 0), "relevance"));
	/* title weighs 300, body 100: (300 * S(0) + 100 * S(4)) / 400 */
	double want = (300 * native_once(0) + 100 * native_once(4)) / 400;
	assert_true(fabs(rel - want) < 1e-9);
	assert_true(fabs(rel - (native_once(0) + native_once(4)) / 2) > 1e-3);
	json_decref(r);
}

static void expect_order(struct dbtest *fx, const char *yql, const char *field, const char *want)
{
	char req[512], got[512] = "";
	snprintf(req, sizeof req, "{\"yql\": \"%s\"}", yql);
	json_t *f, *r = query(fx, req, &f);
	json_t *c = dbtest_hits(r);
	for (size_t i = 0; i < json_array_size(c); i++) {
		json_t *v = json_object_get(json_object_get(json_array_get(c, i), "fields"), field);
		char one[64];
		if (json_is_string(v))
			snprintf(one, sizeof one, "%s", json_string_value(v));
		else
			snprintf(one, sizeof one, "%lld", (long long)json_integer_value(v));
		strcat(got, i ? "," : "");
		strcat(got, one);
	}
	json_decref(r);
	if (strcmp(got, want) != 0)
		fail_msg("%s: got %s, wanted %s", yql, got, want);
}

static void test_sorting(void **state)
{
	struct dbtest *fx = *state;
	static const char *const docs[][3] = {
		{"Bob", "Zed", "2"}, {"carl", "eagle", "9"}, {"alice", "\\u00c9mile", "5"},
		{"Al", "Eve", "7"},
	};
	for (int i = 0; i < 4; i++) {
		char op[256];
		snprintf(op, sizeof op, "{\"put\": \"id:t:doc::%d\", \"fields\": {\"name\": \"%s\","
		         " \"uname\": \"%s\", \"rank\": %s}}", i, docs[i][0], docs[i][1], docs[i][2]);
		dbtest_feed_json(fx->db, op);
	}
	/* lowercase: "Al" < "alice" < "Bob" < "carl" (by the bytes: B, a, c) */
	expect_order(fx, "select * from doc where true order by name", "name", "Al,alice,Bob,carl");
	expect_order(fx, "select * from doc where true order by name desc", "name",
	             "carl,Bob,alice,Al");
	/* uca: without case and accents, eagle < Émile < Eve < Zed */
	expect_order(fx, "select * from doc where true order by uname", "uname",
	             "eagle,\xc3\x89mile,Eve,Zed");
	/* sorting: descending is the field's order when the query gives none */
	expect_order(fx, "select * from doc where true order by rank", "rank", "9,7,5,2");
	expect_order(fx, "select * from doc where true order by rank asc", "rank", "2,5,7,9");
}

/* Every allocation of a query with snippets, highlighting and matched
 * elements fails in turn: STRATA_NOMEM, nothing kept (once a first run
 * filled the pools queries keep); then the right answer. */
static void test_alloc_failures(void **state)
{
	struct dbtest *fx = *state;
	char body[1024], op[4096];
	const int frogs[] = {10, 100};
	birds(body, 120, frogs, 2, 0, 0, 120);
	snprintf(op, sizeof op, "{\"put\": \"id:t:doc::1\", \"fields\": {\"title\": \"a frog\","
	         " \"body\": \"%s\", \"tags\": [\"x\", \"y\"], \"m\": {\"k\": 1}}}", body);
	dbtest_feed_json(fx->db, op);
	const char *req = "{\"yql\": \"select * from doc where body contains 'frog' or "
	                  "title contains 'frog' or tags contains 'y' or m.key contains 'k'\"}";
	json_t *f, *warm = query(fx, req, &f); /* the pools the query keeps are made */
	json_decref(warm);
	long failures;
	char *out = dbtest_query_failing(fx->db, req, &failures);
	json_t *j = json_loads(out, 0, NULL);
	strata_free(out);
	f = json_object_get(json_array_get(dbtest_hits(j), 0), "fields");
	expect_str(f, "title", "a <hi>frog</hi>");
	expect_json(f, "tags", "[\"y\"]");
	json_decref(j);
	assert_true(failures > 10);
}

/* omit-summary-features, in a class and in the schema's own default. */
static void test_omit_features(void **state)
{
	(void)state;
	struct dbtest fx;
	fx.dir = dbtest_open("strata-summary", "doc.sd", "schema doc { document doc {\n"
	                     " field n type int { indexing: summary | attribute } }\n"
	                     " document-summary default { omit-summary-features }\n"
	                     " document-summary plain { summary n { } }\n"
	                     " rank-profile default { summary-features: attribute(n) } }\n", &fx.db);
	dbtest_feed_json(fx.db, "{\"put\": \"id:t:doc::1\", \"fields\": {\"n\": 4}}");
	json_t *f, *r = query(&fx, "{\"yql\": \"select * from doc where true\"}", &f);
	assert_null(json_object_get(f, "summaryfeatures"));
	json_decref(r);
	r = query(&fx, "{\"yql\": \"select * from doc where true\", \"presentation.summary\": "
	               "\"plain\"}", &f);
	expect_json(json_object_get(f, "summaryfeatures"), "attribute(n)", "4.0");
	json_decref(r);
	strata_close(fx.db);
	apptest_remove(fx.dir);
}

/* select-elements-by: the elements of an array whose indexes are labels of
 * a summary-feature's mapped dimension (read here from a tensor field, so
 * each document picks its own), in array order; and its query-time errors. */
static void test_select_elements(void **state)
{
	(void)state;
	struct dbtest fx;
	fx.dir = dbtest_open("strata-summary", "doc.sd", "schema doc { document doc {\n"
	                     " field chunks type array<string> { indexing: summary }\n"
	                     " field w type tensor<float>(chunk{}) { indexing: attribute }\n"
	                     " field m type tensor<float>(a{}, b{}) { indexing: attribute } }\n"
	                     " document-summary picked { summary top { source: chunks\n"
	                     "  select-elements-by: picks } }\n"
	                     " rank-profile p { function picks() { expression: attribute(w) }\n"
	                     "  summary-features: picks }\n"
	                     " rank-profile scalar { function picks() { expression: 2 }\n"
	                     "  summary-features: picks }\n"
	                     " rank-profile two { function picks() { expression: attribute(m) }\n"
	                     "  summary-features: picks } }\n", &fx.db);
	dbtest_feed_json(fx.db, "{\"put\": \"id:t:doc::1\", \"fields\": {\"chunks\": [\"a\", \"b\", "
	                        "\"c\", \"d\"], \"w\": {\"cells\": {\"3\": 0.9, \"x\": 0.8, \"1\": 0.5, "
	                        "\"17\": 0.4, \"-1\": 0.3}}}}");
	const char *req = "{\"yql\": \"select * from doc where true\", \"ranking\": \"p\", "
	                  "\"presentation.summary\": \"picked\"}";
	json_t *f, *r = query(&fx, req, &f);
	expect_json(f, "top", "[\"b\",\"d\"]");
	json_decref(r);
	/* no labels that are indexes: nothing is shown */
	dbtest_feed_json(fx.db, "{\"put\": \"id:t:doc::1\", \"fields\": {\"chunks\": [\"a\"], "
	                        "\"w\": {\"cells\": {\"1\": 1}}}}");
	r = query(&fx, req, &f);
	expect_json(f, "top", "[]");
	json_decref(r);
	static const struct { const char *profile; int code; const char *msg; } bad[] = {
		{ "default", STRATA_NOT_FOUND, "select-elements-by: 'picks' is not a summary-feature "
		                               "of rank profile 'default'" },
		{ "scalar", STRATA_TYPE, "summary-feature 'picks' has 0 mapped dimensions, not one" },
		{ "two", STRATA_TYPE, "summary-feature 'picks' has 2 mapped dimensions, not one" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char rq[256];
		snprintf(rq, sizeof rq, "{\"yql\": \"select * from doc where true\", \"ranking\": "
		         "\"%s\", \"presentation.summary\": \"picked\"}", bad[i].profile);
		dbtest_query_fails(fx.db, rq, bad[i].code, bad[i].msg);
	}
	strata_close(fx.db);
	apptest_remove(fx.dir);
}

/* select-elements-by before an imported field in one summary class: the
 * summary-feature it evaluates reads the document too, and the imported
 * value (read from the parent) is still shown after it. */
static void test_select_elements_imported(void **state)
{
	(void)state;
	struct dbtest fx;
	fx.dir = dbtest_app("strata-summary", "parent.sd",
	                    "schema parent { document parent {\n"
	                    " field pop type int { indexing: attribute | summary } } }\n");
	apptest_write(fx.dir, "schemas/doc.sd",
	              "schema doc { document doc {\n"
	              " field chunks type array<string> { indexing: summary }\n"
	              " field w type tensor<float>(chunk{}) { indexing: attribute }\n"
	              " field ref type reference<parent> { indexing: attribute } }\n"
	              " import field ref.pop as ppop {}\n"
	              " document-summary picked { summary top { source: chunks\n"
	              "  select-elements-by: picks }\n summary ppop {} }\n"
	              " rank-profile p { function picks() { expression: attribute(w) }\n"
	              "  summary-features: picks } }\n");
	dbtest_open_dir(fx.dir, &fx.db);
	dbtest_feed_json(fx.db, "{\"put\": \"id:t:parent::p\", \"fields\": {\"pop\": 7}}");
	dbtest_feed_json(fx.db, "{\"put\": \"id:t:doc::1\", \"fields\": {\"chunks\": [\"a\", \"b\"], "
	                        "\"w\": {\"cells\": {\"1\": 0.5}}, \"ref\": \"id:t:parent::p\"}}");
	json_t *f, *r = query(&fx, "{\"yql\": \"select * from doc where true\", \"ranking\": "
	                           "\"p\", \"presentation.summary\": \"picked\"}", &f);
	expect_json(f, "top", "[\"b\"]");
	expect_json(f, "ppop", "7");
	json_decref(r);
	strata_close(fx.db);
	apptest_remove(fx.dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_field_settings),
		cmocka_unit_test(test_summary_errors),
		cmocka_unit_test_setup_teardown(test_snippets, setup, dbtest_teardown),
		cmocka_unit_test_setup_teardown(test_matched_elements, setup, dbtest_teardown),
		cmocka_unit_test_setup_teardown(test_weight, setup, dbtest_teardown),
		cmocka_unit_test_setup_teardown(test_sorting, setup, dbtest_teardown),
		cmocka_unit_test_setup_teardown(test_alloc_failures, setup, dbtest_teardown),
		cmocka_unit_test(test_omit_features),
		cmocka_unit_test(test_select_elements),
		cmocka_unit_test(test_select_elements_imported),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
